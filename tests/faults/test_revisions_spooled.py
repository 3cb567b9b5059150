"""Fault: band revisions made while the ledger was down lived only in the agent's memory.

On the old code a revision the ledger refused was held by the agent and retried; a
process that died before the ledger came back took it along, and the table's band kept
the rows' early, wide band (-50 % on a lock a true counter rules out) although the
rows themselves were replayed from the spool. Revisions now go where the rows go: into
the spool, replayed after their rows, each stored once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wattlog.accounting.ledger import Ledger, LedgerSink, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.clock import FakeClock
from wattlog.errors import LedgerUnavailable
from wattlog.records import BandRevision, EnergyInterval, Gap, Kind, Source, band_of_sum
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu, SimulatedSensor
from wattlog.telemetry.sensors.traces import TrainingTrace


class Down(Ledger):
    """The ledger while its database is unreachable: every write refused, nothing written."""

    def record_intervals(  # type: ignore[override]
        self, run: int | str, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap] = ()
    ) -> int:
        raise LedgerUnavailable("could not record energy, nothing was written: connection refused")

    def record_revisions(self, run: int | str, revisions: Sequence[BandRevision]) -> int:
        raise LedgerUnavailable("could not record band revisions, nothing was written: connection refused")


def test_revisions_made_during_an_outage_are_spooled_and_replayed_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("lock").id
    clock = FakeClock()
    gpu = SimulatedGpu("GPU-lock", "H100 (simulated)", TrainingTrace.phase_locked(0.1), SensorModel.h100())
    sensor = SimulatedSensor([gpu])
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    sampler = Sampler([sensor], integ, clock=clock)
    spool = Spool(tmp_path / "spool", describe_url(url), run)
    sink = LedgerSink(Down(ledger.engine), run, spool)  # down from the start to the process's end
    revised = 0
    for k in range(1, 10):
        sampler.run_until(10.0 * k)
        integ.snapshot()  # a scrape runs lock detection, as the live agent's do
        sink.write(*integ.take_intervals())
        revisions = integ.take_revisions()
        revised += len(revisions)
        sink.write_revisions(revisions)  # raised LedgerError before: the agent held them in memory
    agent = integ.snapshot()[0]
    assert revised, "the trace must make the agent revise its early rows"
    assert spool.revisions == revised
    sink.close()  # the ledger is still down: the file stays for `wattlog replay`
    assert spool.path.exists()
    kept = spool.path.read_bytes()
    for _ in range(2):  # `wattlog replay`, then the same file again (a replay interrupted after its commit)
        spool.path.write_bytes(kept)
        assert replay_folder(ledger, tmp_path / "spool", describe_url(url)).files == 1
    assert len(ledger.band_revisions(run)) == revised  # each once
    [total] = ledger.energy_totals(run)
    assert abs(total.figure.low_j - agent.low_j) <= 0.001 * agent.energy_j
    assert abs(total.figure.high_j - agent.high_j) <= 0.001 * agent.energy_j
    stored_low_j, _ = band_of_sum(ledger.energy_rows(run))
    assert agent.low_j - stored_low_j > 0.1 * agent.energy_j  # without the revisions it stays far wider


def test_revisions_wait_behind_spooled_rows_and_go_in_once_the_ledger_is_back(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    spool = Spool(tmp_path / "spool", describe_url(url), run)
    row = EnergyInterval.of("h", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 10.0, 1000.0, 500.0, 1200.0)
    revision = BandRevision("h", "gpu0", 0.0, 10.0, "band revised: test", (400.0, -100.0, 0, 0, 0, 0))
    down = LedgerSink(Down(ledger.engine), run, spool)
    down.write([row], [])
    down.write_revisions([revision])  # behind its row, in the spool: never before it
    assert (spool.rows, spool.revisions) == (1, 1)
    back = LedgerSink(ledger, run, spool)  # the same spool, the ledger back
    back.write([], [])  # the next flush replays the spool: rows, then the revision
    assert (spool.rows, spool.revisions) == (0, 0)
    [total] = ledger.energy_totals(run)
    assert (total.low_j, total.high_j) == (900.0, 1100.0)
    back.write_revisions([revision])  # a retry of one already stored is no second revision
    assert len(ledger.band_revisions(run)) == 1
    back.close()
    assert not spool.path.exists()


def test_a_bad_revision_line_is_kept_aside_and_the_rest_replayed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    spool = Spool(tmp_path / "spool", describe_url(url), run)
    row = EnergyInterval.of("h", "gpu0", Kind.GPU, Source.COUNTER, 0.0, 10.0, 1000.0, 500.0, 1200.0)
    spool.append(run, [row], [])
    spool.append_revisions(run, [BandRevision("h", "gpu0", 0.0, 10.0, "ok", (400.0, -100.0, 0, 0, 0, 0))])
    spool.close()
    bad = f'{{"run": {run}, "type": "revision", "host": "h", "device": "gpu0", "start_s": 0, "end_s": 10, '
    with spool.path.open("a") as handle:  # five terms, and a NaN: neither is a revision
        handle.write(bad + '"reason": "x", "terms": [1, 2, 3, 4, 5]}\n')
        handle.write(bad + '"reason": "x", "terms": [1, 2, 3, 4, 5, NaN]}\n')
    done = replay_folder(ledger, tmp_path / "spool", describe_url(url))
    assert done.files == 1 and "2 more" not in done.rejected[0] and "1 more bad line" in done.rejected[0]
    assert [r.reason for r in ledger.band_revisions(run)] == ["ok"]
