"""K of N nodes measured: the job's figure is their mean x N, labelled extrapolated, with a band."""

from __future__ import annotations

import pytest

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import job_nodes, join_run
from wattlog.accounting.ledger.views import EnergyTotal
from wattlog.accounting.publishing.extrapolate import job_energy
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint, run_row
from wattlog.accounting.ranges import Range
from wattlog.accounting.units import j_to_mwh
from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.job import JobIdentity
from wattlog.telemetry.sensors.traces import TrainingTrace

NODES, GPUS, SECONDS, FLUSH_S, T0 = 16, 8, 600.0, 10.0, 1_767_225_600.0


def _load(node: int) -> float:
    """Unequal nodes: GPU power scaled from 0.5 to 1.0 (e.g. pipeline stages of unequal size)."""
    return 0.5 + 0.5 * node / (NODES - 1)


def _node_rows(node: int) -> list[EnergyInterval]:
    """Ten-second flush rows of one node's 8 simulated GPUs (exact integrals of their traces, +-5 %)."""
    rows = []
    for gpu in range(GPUS):
        load = _load(node)
        trace = TrainingTrace.generate(node * 100 + gpu, SECONDS, compute_w=650 * load, comm_w=350 * load)
        t = 0.0
        while t < SECONDS:
            joules = trace.energy_j(t, t + FLUSH_S)
            rows.append(
                EnergyInterval.of(
                    f"node{node:02d}",
                    f"GPU-{gpu}",
                    Kind.GPU,
                    Source.SIMULATED,
                    T0 + t,
                    T0 + t + FLUSH_S,
                    joules,
                    joules * 0.95,
                    joules * 1.05,
                )
            )
            t += FLUSH_S
    return rows


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    """One job of 16 nodes recorded twice: every node measured ("full"), and 4 of 16 ("sampled")."""
    path = tmp_path_factory.mktemp("extrapolate") / "ledger.db"
    ledger = Ledger(make_engine(f"sqlite:///{path}"))
    for node in range(NODES):
        job = JobIdentity(host=f"node{node:02d}", job_id="77", node_count=NODES, node_index=node)
        rows = _node_rows(node)
        full = join_run(ledger, "full", job, site="jupiter")
        ledger.record_intervals(full.id, rows)
        sampled = join_run(ledger, "sampled", job, measured=job.measured(4), site="jupiter")
        if job.measured(4):
            ledger.record_intervals(sampled.id, rows)
    return ledger


def test_sixteen_unequal_nodes_the_extrapolated_band_holds_the_full_measurement(ledger: Ledger) -> None:
    options = TableOptions(catalog=site_catalog(None))
    full = run_footprint(ledger, ledger.get_run("full"), options)
    sampled = run_footprint(ledger, ledger.get_run("sampled"), options)
    assert full is not None and sampled is not None
    assert full.energy_source == "simulated"
    assert sampled.energy_source == "extrapolated+simulated"  # a simulated figure stays labelled simulated
    truth = full.it_energy_j
    figure = sampled.it_energy_j
    band = sampled.energy_band_j
    assert band.lo <= truth <= band.hi, (band, truth)
    assert band.lo <= figure <= band.hi
    assert figure != pytest.approx(truth, rel=1e-3)  # really extrapolated: 4 nodes, not 16
    assert (band.hi - band.lo) / figure < 0.6  # informative, not "anything goes"


def test_without_the_spread_between_nodes_the_band_would_miss_the_truth(ledger: Ledger) -> None:
    # The nodes sampled (0, 4, 8, 12) run lighter on average than the job: each node's own sensor
    # band, scaled by N / K, does not reach the full measurement; the spread term does.
    sampled = ledger.energy_totals("sampled")
    full_j = sum(t.energy_j for t in ledger.energy_totals("full"))
    scale = NODES / len({t.host for t in sampled})
    sensor_only = Range(scale * sum(t.low_j for t in sampled), scale * sum(t.high_j for t in sampled))
    assert not sensor_only.lo <= full_j <= sensor_only.hi
    energy = job_energy(sampled, NODES)
    assert energy is not None and energy.band_j is not None
    assert energy.band_j.lo <= full_j <= energy.band_j.hi


def test_the_table_says_k_of_n_nodes_measured(ledger: Ledger) -> None:
    options = TableOptions(catalog=site_catalog(None))
    assert "4 of 16 nodes measured" in run_row(ledger, ledger.get_run("sampled"), options).notes
    assert "16 of 16 nodes measured" in run_row(ledger, ledger.get_run("full"), options).notes
    nodes = job_nodes(ledger, "sampled")
    assert nodes.node_count == 16 and len(nodes.joined) == 16
    assert nodes.measuring == ("node00", "node04", "node08", "node12")


def _Device(host: str, kind: str, source: str, energy_j: float, low_j: float, high_j: float) -> EnergyTotal:  # noqa: N802
    """One device's total on `host` (its kind names it)."""
    return EnergyTotal.of(host, kind, kind, source, energy_j, low_j, high_j)


def test_all_nodes_measured_is_the_plain_sum_with_its_own_label() -> None:
    rows = [
        _Device(f"n{i}", "gpu", "counter", 100.0 * (i + 1), 90.0 * (i + 1), 110.0 * (i + 1)) for i in range(3)
    ]
    energy = job_energy(rows, 3)
    assert energy is not None and energy.source == "counter"
    assert energy.it_mwh == pytest.approx(j_to_mwh(600.0))


def test_two_of_four_nodes_mean_times_four_and_the_band_formula() -> None:
    rows = [
        _Device("a", "gpu", "counter", 100.0, 95.0, 105.0),
        _Device("b", "gpu", "counter", 300.0, 285.0, 315.0),
    ]
    energy = job_energy(rows, 4)
    assert energy is not None and energy.source == "extrapolated"
    assert energy.it_mwh == pytest.approx(j_to_mwh(800.0))
    assert energy.band_j.lo == pytest.approx(95 + 285 + 2 * 95)
    assert energy.band_j.hi == pytest.approx(105 + 315 + 2 * 315)


def test_a_node_meter_counts_instead_of_its_components_per_host() -> None:
    rows = [
        _Device("a", "node", "counter", 1000.0, 1000.0, 1000.0),
        _Device("a", "gpu", "counter", 700.0, 700.0, 700.0),
        _Device("b", "node", "counter", 1200.0, 1200.0, 1200.0),
    ]
    energy = job_energy(rows, 4)
    assert energy is not None and energy.it_mwh == pytest.approx(j_to_mwh(2 * 2200.0))


def test_no_rows_is_none_and_a_job_needs_a_node() -> None:
    assert job_energy([], 4) is None
    with pytest.raises(ConfigError):
        job_energy([], 0)
