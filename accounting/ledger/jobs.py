"""Runs that span nodes: each node joins the run's job, each rank reports its tokens.

Every node of a job calls :func:`join_run` at start (the run is created by
whichever node comes first; the others find it), so the ledger knows how many
nodes the job has and which ones measure energy. Every rank upserts its
cumulative tokens with :func:`report_rank_progress`; :func:`job_nodes` and
:func:`rank_tokens` read them back for the tables.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, or_, select
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.models import JobNode, RankProgress, Run
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.store import Ledger, upsert_into
from wattlog.accounting.ledger.views import JobNodes, RankInfo, RunInfo
from wattlog.errors import LedgerError
from wattlog.telemetry.job import JobIdentity

_JOB_NODE = cast(Table, JobNode.__table__)  # type: ignore[attr-defined]
_RANK = cast(Table, RankProgress.__table__)  # type: ignore[attr-defined]


def join_run(
    ledger: Ledger,
    name: str,
    job: JobIdentity,
    *,
    measured: bool = True,
    project: str = "default",
    role: str = "development",
    model: str = "",
    site: str = "",
    timeout_s: float = 30.0,
    machine_id: str = "",
    site_figures: dict[str, Any] | None = None,
) -> RunInfo:
    """Create the run or find it (whichever node comes first creates it), then record this node in it.

    Args:
        ledger: The shared ledger.
        name: The run's name (the same on every node, e.g. from $SLURM_JOB_ID).
        job: This node's place in the job.
        measured: Whether this node measures energy (False: sampled out, reports steps only).
        project: Project of a new run.
        role: Role of a new run.
        model: Model of a new run.
        site: Site of a new run.
        timeout_s: How long to retry when another node is creating the run at the same moment.
        machine_id: This machine's id, stored beside the host name ("": not recorded).
        site_figures: The site's figures a new run stores (accounting.carbon.run_sites).

    Raises:
        LedgerError: The run could be neither created nor found.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        found = ledger.find_run(name)
        if found is not None:
            run = found
            break
        try:
            spec = RunSpec(
                project=project, role=role, model=model, site=site, host=job.host, site_figures=site_figures
            )
            run = ledger.start_run(name, spec)
            break
        except LedgerError:  # another node created it between our read and our insert: read again
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    record_node(ledger, run.id, job, measured=measured, machine_id=machine_id)
    return run


def record_node(
    ledger: Ledger, run_id: int, job: JobIdentity, *, measured: bool, machine_id: str = ""
) -> None:
    """Insert or update this node's row in the run's job (with its machine's id, when known)."""
    values: dict[str, Any] = {
        "run_id": run_id,
        "host": job.host,
        "node_index": job.node_index,
        "node_count": job.node_count,
        "job_id": job.job_id or "",
        "measured": measured,
        "joined_s": ledger.wall_s(),
    }
    if machine_id:
        values["machine_id"] = machine_id
    with ledger.transaction(f"record node {job.host!r}") as session:
        _upsert(session, _JOB_NODE, values, ("run_id", "host"))


@dataclass(frozen=True, slots=True)
class RankReport:
    """What one rank reports of its progress (stored by :func:`report_rank_progress`).

    Attributes:
        host: The rank's node.
        local_rank: Its rank within the node.
        tokens_total: Tokens it trained on in this attempt, cumulative.
        step: Its latest step.
        start_s: Unix time its attempt started.
        flops_per_token: Training FLOPs per token (for the job's MFU), if known.
        peak_flops: Peak FLOP/s of all ranks together (for the job's MFU), if known.
    """

    host: str
    local_rank: int
    tokens_total: float
    step: int
    start_s: float
    flops_per_token: float | None = None
    peak_flops: float | None = None


def report_rank_progress(ledger: Ledger, run: int | str, rank: int, report: RankReport) -> None:
    """Store one rank's cumulative tokens and latest step (an upsert: one row per rank)."""
    with ledger.transaction(f"record rank {rank} progress") as session:
        run_id = ledger.id_of(session, run)
        values = {
            "run_id": run_id,
            "rank": rank,
            "host": report.host,
            "local_rank": report.local_rank,
            "tokens_total": float(report.tokens_total),
            "step": int(report.step),
            "start_s": report.start_s,
            "updated_s": ledger.wall_s(),
            "flops_per_token": report.flops_per_token,
            "peak_flops": report.peak_flops,
        }
        _upsert(session, _RANK, values, ("run_id", "rank"))


def job_nodes(ledger: Ledger, run: int | str) -> JobNodes:
    """The nodes that joined a run's job (a run no node joined: one node, nothing known)."""
    with ledger.reading(run, "read job nodes") as read:
        return read.job_nodes()


def rank_progress(ledger: Ledger, run: int | str) -> list[RankInfo]:
    """Every rank's latest progress, by rank."""
    with ledger.transaction("read rank progress") as session:
        run_id = ledger.id_of(session, run)
        query = select(RankProgress).where(col(RankProgress.run_id) == run_id)
        return [RankInfo.of(row) for row in session.execute(query.order_by(col(RankProgress.rank))).scalars()]


def created_by_job(ledger: Ledger, run: str, job_id: str | None) -> bool:
    """Whether the run's nodes joined it from the scheduler job `job_id` (so this job may join it too)."""
    if not job_id:
        return False
    with ledger.transaction("read job nodes") as session:
        query = (
            select(col(JobNode.host))
            .join(Run, col(Run.id) == col(JobNode.run_id))
            .where(col(Run.name) == run, col(JobNode.job_id) == job_id)
        )
        return session.execute(query.limit(1)).first() is not None


def _upsert(session: Session, table: Table, values: dict[str, Any], keys: tuple[str, ...]) -> None:
    statement = upsert_into(session, table).values(values)
    # the machine id is set once: the lease's holder updates it, after telling a restart from a collision
    update = {name: statement.excluded[name] for name in values if name not in (*keys, "machine_id")}
    if "measured" in update:  # a node measures if any of its agents does (sidecar + tracker)
        update["measured"] = or_(table.c.measured, statement.excluded.measured)
    session.execute(statement.on_conflict_do_update(index_elements=list(keys), set_=update))
