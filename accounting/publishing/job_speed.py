"""Tokens per joule and MFU of a whole job: every rank's tokens over every node's energy.

This is the one place where tokens are counted across ranks. Each rank of a
run upserts its own cumulative tokens into the ledger (table ``rank_progress``,
:func:`wattlog.accounting.ledger.jobs.report_rank_progress`); the job's tokens
are the sum of those rows, and its energy is the run's energy from the ledger
(extrapolated to N nodes when only K were measured). Dividing one rank's tokens
by its node's energy, as a per-rank meter does, comes out 1/ranks-per-node too
small on a node with several ranks::

    tokens_per_j = sum over ranks of tokens / job energy (J)
    mfu          = sum over ranks of tokens / elapsed s x FLOPs per token / peak FLOP/s of all ranks

and from them a run's J per token, J per 10^18 FLOP and mean GPU power against its board's
limit (:func:`efficiency_of`, shown beside Table 19).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wattlog.accounting.devices import DeviceCatalog, device_catalog
from wattlog.accounting.ledger.jobs import job_nodes, rank_progress
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RankInfo
from wattlog.accounting.publishing.efficiency import EFLOP, Efficiency
from wattlog.accounting.publishing.extrapolate import job_energy
from wattlog.accounting.publishing.mfu import mfu_of
from wattlog.accounting.ranges import Range

MWH_J = 3.6e9


@dataclass(frozen=True, slots=True)
class JobSpeed:
    """A job's throughput and efficiency so far.

    Attributes:
        ranks: Ranks that reported tokens.
        tokens: Tokens of every rank together.
        elapsed_s: From the first rank's start to the latest report, seconds.
        energy_j: The job's IT energy so far (None: none recorded).
        energy_source: Its source label (counter, simulated, extrapolated, ...).
        tokens_per_s: Tokens of the job per second.
        tokens_per_j: Tokens of the job per joule of its energy (None without energy).
        mfu: Model FLOPs utilisation of the job, 0..1 (None without FLOPs per token and peak FLOP/s).
        flops_per_token: Model FLOPs per token the ranks reported (None: not given).
    """

    ranks: int
    tokens: float
    elapsed_s: float
    energy_j: float | None
    energy_source: str
    tokens_per_s: float | None
    tokens_per_j: float | None
    mfu: float | None
    flops_per_token: float | None = None


def job_speed(ledger: Ledger, run: int | str) -> JobSpeed | None:
    """The job's figures from the ledger (None before any rank reported)."""
    ranks = rank_progress(ledger, run)
    if not ranks:
        return None
    tokens = sum(r.tokens_total for r in ranks)
    elapsed_s = max(r.updated_s for r in ranks) - min(r.start_s for r in ranks)
    energy = job_energy(ledger.energy_totals(run), job_nodes(ledger, run).node_count)
    energy_j = None
    if energy is not None:
        value = energy.it_mwh
        energy_j = (value.mid if isinstance(value, Range) else float(value)) * MWH_J
    tokens_per_s = tokens / elapsed_s if elapsed_s > 0 else None
    flops = next((r.flops_per_token for r in ranks if r.flops_per_token), None)
    peak = next((r.peak_flops for r in ranks if r.peak_flops), None)
    return JobSpeed(
        ranks=len(ranks),
        tokens=tokens,
        elapsed_s=elapsed_s,
        energy_j=energy_j,
        energy_source=energy.source if energy is not None else "none",
        tokens_per_s=tokens_per_s,
        tokens_per_j=tokens / energy_j if energy_j else None,
        mfu=mfu_of(tokens_per_s, flops, peak),
        flops_per_token=flops,
    )


def efficiency_of(
    ranks: Sequence[RankInfo],
    energy_j: float | None,
    gpu: tuple[float, float],
    device_model: str,
    devices: DeviceCatalog | None = None,
) -> Efficiency:
    """A run's J per token, J per 10^18 FLOP and mean GPU power / TDP (see accounting.publishing.efficiency).

    Args:
        ranks: Every rank's latest progress (the job's tokens are their sum).
        energy_j: The job's IT energy (the row's, extrapolated when sampled), J; None if unknown.
        gpu: GPU energy (J) and GPU device-seconds measured.
        device_model: The run's recorded device model ("" = none: no TDP, never an assumed one).
        devices: The device catalog (default: the built-in one).
    """
    tokens = sum(r.tokens_total for r in ranks)
    flops = next((r.flops_per_token for r in ranks if r.flops_per_token), None)
    known = energy_j is not None and energy_j > 0 and tokens > 0
    j_per_token = energy_j / tokens if known and energy_j is not None else None
    j_per_eflop = energy_j / (tokens * flops / EFLOP) if known and energy_j is not None and flops else None
    gpu_j, gpu_s = gpu
    avg_power_w = gpu_j / gpu_s if gpu_s > 0 and gpu_j > 0 else None
    model, assumed = (devices or device_catalog()).get(device_model)
    tdp_w = None if assumed else model.power_limit_w
    if tdp_w is None:
        return Efficiency(j_per_token, j_per_eflop, avg_power_w)
    return Efficiency(
        j_per_token, j_per_eflop, avg_power_w, tdp_w, model.sources.get("power_limit_w", ""), model.name
    )
