"""The ledger's invariants as a Hypothesis state machine over any sequence of ledger operations.

Operations (rules): flush (rows of two GPUs, each with a band and sampling parts, the lease
renewed, which revives a reaped run), band revision (the agent's new band for a device's rows so
far, taking their sampling terms back), gap (a device not measured), lease reap (the agent stops
renewing; the reader closes the run `lost` with a gap), measurement window, compaction of whole
hours, spool replay (the same spool file replayed twice), rollup rebuild, delete (of another run)
and resume (a restart).

Invariants, checked after every step (here on SQLite; tests/integration/test_ledger_invariants_pg.py
runs the same machine on a real PostgreSQL, a fresh database per sequence):

1. The ledger always reads: totals, hours, windows, the table row, the footprint and the
   impossible-row check (``verify.impossible_rows`` finds nothing).
2. Totals = rows + revisions: each device's energy is its rows' sum, its band is
   ``records.band_of_sum`` of its rows and revisions (compaction and rebuild change neither).
3. low <= energy <= high and every sampling part >= 0 in every reader: device totals, hours,
   windows, the table row, the CSV export.
4. One band per run: the footprint (the report's headline), the table row (Table 19,
   `wattlog table`), the CSV and the audit bundle (its row recomputed from the bundle alone, when a
   sequence publishes one) give the same band; the agent's Prometheus exposition, parsed back with
   prometheus_client's parser, gives each device the ledger's energy, band and sampling parts.
5. No device's mean power exceeds its power limit times its calibration band: the efficiency
   line's mean GPU power is at most 700 W x 1.1 for boards drawing at most 700 W.

Examples: ``max_examples=6`` sequences of up to 8 steps in the suite (about 50 steps, each followed
by a check of every invariant: about 10 s on one core); ``WATTLOG_INVARIANT_EXAMPLES=200`` runs
200 sequences by hand. On 38e5f82 it fails: invariant 5
after a reap (the lease gap taken from GPU-seconds: above 100 % of TDP), invariant 4 after a gap
or a reap (the headline's band not widened), invariant 3 for a window after a revision (its low
side below zero), invariant 1 after a revision (a float residue read as an impossible row).
"""

from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.accounting.invariant_readers import bundle_band, exposition_figures
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.admin import delete_run
from wattlog.accounting.ledger.engine import describe_url
from wattlog.accounting.ledger.lease import reap_lost, renew_lease
from wattlog.accounting.ledger.reader import summed_figure
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.accounting.ledger.verify import impossible_rows
from wattlog.accounting.ledger.windows import record_windows, windows
from wattlog.accounting.publishing.exports import rows_csv
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint, run_row
from wattlog.clock import FakeClock
from wattlog.records import (
    BandRevision,
    EnergyFigure,
    EnergyInterval,
    Gap,
    Kind,
    Source,
    band_of_sum,
    band_terms,
)
from wattlog.telemetry.exporter import BOUNDS
from wattlog.telemetry.types import DeviceInfo

T0 = 1_767_225_600.0  # an hour boundary
GPUS = ("gpu0", "gpu1")
LIMIT_W = 700.0
DEVICES = {
    g: DeviceInfo(g, "NVIDIA H100", Kind.GPU, Source.COUNTER, True, power_limit_w=LIMIT_W) for g in GPUS
}
LEASE_S = 60.0
EPS = 1e-6  # joules: far above float residue of these sums, far below one row


def _within(low: float, energy: float, high: float, what: str) -> None:
    tol = EPS * max(1.0, abs(energy))
    assert low >= -tol and low <= energy + tol and energy <= high + tol, (
        f"{what}: {low} <= {energy} <= {high}"
    )


@functools.cache
def _migrated_sqlite() -> bytes:
    """The bytes of a new SQLite ledger, migrated once per session (a migration took a quarter of the
    machine's time; a copy of its result takes none)."""
    with tempfile.TemporaryDirectory(prefix="wl-inv-template-") as folder:
        make_engine(f"sqlite:///{Path(folder) / 'l.db'}").dispose()
        return (Path(folder) / "l.db").read_bytes()


def sqlite_ledger(folder: Path) -> str:
    """A fresh SQLite ledger in `folder` (the machine's default database)."""
    (folder / "l.db").write_bytes(_migrated_sqlite())
    return f"sqlite:///{folder / 'l.db'}"


class LedgerMachine(RuleBasedStateMachine):
    """One run on a fresh ledger (`new_ledger(folder)` gives its URL), driven through any sequence of the
    operations above."""

    def __init__(self, new_ledger: Callable[[Path], str] = sqlite_ledger) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="wl-inv-"))
        self.url = new_ledger(self.folder)
        self.clock = FakeClock(wall_offset_s=T0)
        self.ledger = Ledger(make_engine(self.url), clock=self.clock)
        self.run = self.ledger.start_run("main", RunSpec(site="jupiter", device_model="H100", model="m")).id
        self.rows: dict[str, list[EnergyInterval]] = {g: [] for g in GPUS}
        self.revisions: dict[str, list[BandRevision]] = {g: [] for g in GPUS}
        self.spools = 0

    def teardown(self) -> None:
        self.ledger.engine.dispose()
        shutil.rmtree(self.folder, ignore_errors=True)

    # operations ------------------------------------------------------------

    def _flush_rows(self, seconds: float, powers: tuple[float, float], band: float, part: float) -> list:
        start_s = self.clock.wall()
        self.clock.advance(seconds)
        out = []
        for gpu, power_w in zip(GPUS, powers, strict=True):
            energy = power_w * seconds
            side = band * energy
            random = part * side
            out.append(
                EnergyInterval.of(
                    "h", gpu, Kind.GPU, Source.COUNTER, start_s, self.clock.wall(), energy,
                    energy - side, energy + side, random, random,
                )
            )  # fmt: skip
        return out

    @rule(
        seconds=st.floats(1.0, 1800.0),
        powers=st.tuples(st.floats(0.0, LIMIT_W), st.floats(0.0, LIMIT_W)),
        band=st.floats(0.0, 0.1),
        part=st.floats(0.0, 1.0),
    )
    def flush(self, seconds: float, powers: tuple[float, float], band: float, part: float) -> None:
        renew_lease(self.ledger, self.run, LEASE_S)
        rows = self._flush_rows(seconds, powers, band, part)
        self.ledger.record_intervals(self.run, rows)
        for row in rows:
            self.rows[row.device].append(row)

    @rule(gpu=st.sampled_from(GPUS), low=st.floats(0.0, 0.5), high=st.floats(0.0, 0.5))
    def revise(self, gpu: str, low: float, high: float) -> None:
        rows = self.rows[gpu]
        if not rows or any(r.end_s == rows[-1].end_s for r in self.revisions[gpu]):
            return
        current = list(band_of_sum_terms(rows, self.revisions[gpu]))
        energy = sum(r.energy_j for r in rows)
        target = (energy * (1 - low), energy * (1 + high))
        terms = (
            target[0] - current[0], target[1] - current[1],
            -current[2], -current[3], -current[4], -current[5],
        )  # fmt: skip
        revision = BandRevision("h", gpu, rows[0].start_s, rows[-1].end_s, "band revised", terms)
        self.ledger.record_revisions(self.run, [revision])
        self.revisions[gpu].append(revision)

    @rule(gpu=st.sampled_from(GPUS), seconds=st.floats(1.0, 600.0))
    def gap(self, gpu: str, seconds: float) -> None:
        start_s = self.clock.wall()
        self.clock.advance(seconds)
        self.ledger.record_intervals(self.run, [], [Gap("h", gpu, start_s, self.clock.wall(), "agent down")])

    @rule()
    def reap(self) -> None:
        renew_lease(self.ledger, self.run, LEASE_S)
        self.clock.advance(LEASE_S + 1.0)
        reap_lost(self.ledger)

    @rule(gpu=st.sampled_from(GPUS), low=st.floats(0.0, 1.0), high=st.floats(0.0, 1.0))
    def window(self, gpu: str, low: float, high: float) -> None:
        if not self.rows[gpu]:
            return
        last = self.rows[gpu][-1]
        figure = EnergyFigure(
            Kind.GPU, Source.COUNTER, last.energy_j, last.energy_j * (1 - low), last.energy_j * (1 + high)
        )
        record_windows(
            self.ledger, self.run, [EnergyInterval("h", gpu, last.start_s, last.end_s, figure, "w", "")]
        )

    @rule()
    def compact(self) -> None:
        self.ledger.compact_hourly(0.0)

    @rule(seconds=st.floats(1.0, 600.0), power=st.floats(0.0, LIMIT_W))
    def replay_twice(self, seconds: float, power: float) -> None:
        renew_lease(self.ledger, self.run, LEASE_S)
        rows = self._flush_rows(seconds, (power, power), 0.05, 0.5)
        folder = self.folder / f"spool{self.spools}"
        self.spools += 1
        spool = Spool(folder, describe_url(self.url), "main")
        spool.append("main", rows, [])
        spool.close()
        copy = folder / "copy"
        shutil.copytree(folder, copy)
        replay_folder(self.ledger, folder, describe_url(self.url))
        replay_folder(self.ledger, copy, describe_url(self.url))  # the same file again: nothing new
        for row in rows:
            self.rows[row.device].append(row)

    @rule()
    def rebuild(self) -> None:
        self.ledger.rebuild_totals(self.run)

    @rule()
    def delete_another(self) -> None:
        other = self.ledger.start_run(f"other{self.spools}", RunSpec(site="jupiter"))
        self.spools += 1
        self.ledger.record_intervals(other.id, self._flush_rows(5.0, (100.0, 100.0), 0.05, 0.5))
        delete_run(self.ledger, other.id)

    @precondition(lambda self: any(self.rows.values()))
    @rule(seconds=st.floats(0.0, 600.0))
    def resume(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.ledger.start_run("main", resume=True)

    @rule()
    def publish_a_bundle(self) -> None:
        """Invariant 4 for the audit bundle, at any point of a sequence (a rule, not an invariant checked
        after every step: each bundle's verification migrates a ledger of its own, about 0.6 s)."""
        options = TableOptions(catalog=site_catalog())
        row = run_row(self.ledger, self.ledger.get_run(self.run), options)
        bundled = bundle_band(self.ledger, self.run, options, self.folder / "run.tar.gz")
        if row.energy_band_j is None:
            assert bundled is None, f"the audit bundle's row has a band {bundled}, the ledger's none"
            return
        assert bundled is not None, "the audit bundle's row lost its band"
        assert (bundled.lo, bundled.hi) == pytest.approx((row.energy_band_j.lo, row.energy_band_j.hi))

    # invariants ------------------------------------------------------------

    @invariant()
    def totals_are_rows_plus_revisions(self) -> None:
        assert impossible_rows(self.ledger, describe_url(self.url), [self.run]) == []
        totals = {t.device: t.figure for t in self.ledger.energy_totals(self.run)}
        for gpu in GPUS:
            if not self.rows[gpu]:
                assert gpu not in totals
                continue
            figure = totals[gpu]
            energy = sum(r.energy_j for r in self.rows[gpu])
            low, high = band_of_sum(self.rows[gpu], self.revisions[gpu])
            assert figure.energy_j == pytest.approx(energy, rel=1e-9, abs=1e-3)
            assert (figure.low_j, figure.high_j) == pytest.approx((low, high), rel=1e-9, abs=1e-3)
            _within(figure.low_j, figure.energy_j, figure.high_j, f"total of {gpu}")
            assert figure.random_low_j >= 0 and figure.random_high_j >= 0

    @invariant()
    def the_agent_exports_the_ledgers_figures(self) -> None:
        totals = {t.device: t.figure for t in self.ledger.energy_totals(self.run)}
        agent = [(DEVICES[gpu], self._agent_figure(gpu)) for gpu in GPUS if self.rows[gpu]]
        scraped = exposition_figures(agent, "h")
        assert scraped.keys() == totals.keys()
        for gpu, figure in totals.items():
            ledger = dict(zip(("energy", *BOUNDS), (figure.energy_j, *_ends(figure)), strict=True))
            assert scraped[gpu] == pytest.approx(ledger, rel=1e-9, abs=1e-3), f"exposition of {gpu}"
            _within(scraped[gpu]["low"], scraped[gpu]["energy"], scraped[gpu]["high"], f"exposition of {gpu}")

    def _agent_figure(self, gpu: str) -> EnergyFigure:
        """What the agent that wrote `gpu`'s rows and revisions holds for it (its cumulative figure)."""
        energy = sum(r.energy_j for r in self.rows[gpu])
        return summed_figure(
            Kind.GPU, Source.COUNTER, energy, band_of_sum_terms(self.rows[gpu], self.revisions[gpu])
        )

    @invariant()
    def every_reader_holds_its_energy_and_gives_one_band(self) -> None:
        for hour in self.ledger.energy_by_hour(self.run):
            f = hour.figure
            _within(f.low_j, f.energy_j, f.high_j, f"hour {hour.hour}")
            assert f.random_low_j >= 0 and f.random_high_j >= 0
        for w in windows(self.ledger, self.run):
            _within(w.low_j, w.energy_j, w.high_j, f"window of {w.device}")
        run = self.ledger.get_run(self.run)
        options = TableOptions(catalog=site_catalog())
        row = run_row(self.ledger, run, options)
        footprint = run_footprint(self.ledger, run, options)
        if footprint is None:
            assert row.energy_band_j is None
            return
        band = row.energy_band_j
        assert band is not None and row.energy_j is not None
        _within(band.lo, footprint.it_energy_j, band.hi, "table row")
        assert (footprint.energy_band_j.lo, footprint.energy_band_j.hi) == pytest.approx((band.lo, band.hi))
        (exported,) = csv.DictReader(io.StringIO(rows_csv([row])))
        exported_band = (float(exported["energy_band_j_min"]), float(exported["energy_band_j_max"]))
        assert exported_band == pytest.approx((band.lo, band.hi))
        mean_w = row.efficiency.avg_power_w if row.efficiency is not None else None
        assert mean_w is None or mean_w <= LIMIT_W * 1.1, f"mean GPU power {mean_w} W over {LIMIT_W} W x 1.1"


def _ends(figure: EnergyFigure) -> tuple[float, float, float, float]:
    """The figure's band ends and random parts, in the exporter's BOUNDS order."""
    return (figure.low_j, figure.high_j, figure.random_low_j, figure.random_high_j)


def band_of_sum_terms(rows: list[EnergyInterval], revisions: list[BandRevision]) -> tuple[float, ...]:
    """The BAND_TERMS sums of `rows` with `revisions` added (what a new revision revises)."""
    sums = [0.0] * 6
    for terms in [band_terms(r) for r in rows] + [r.terms for r in revisions]:
        for i, term in enumerate(terms):
            sums[i] += term
    return tuple(sums)


LedgerMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("WATTLOG_INVARIANT_EXAMPLES", "6")),  # deeper: e.g. 200 by hand
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestLedgerInvariants = LedgerMachine.TestCase


def test_the_audit_bundle_reads_the_ledgers_band_after_each_kind_of_change() -> None:
    """The bundle's reader on a fixed sequence: random ones publish a bundle after a revision or a reap
    in only some examples."""
    machine = LedgerMachine()
    try:
        machine.flush(100.0, (300.0, 400.0), 0.05, 0.5)
        for change in (
            lambda: machine.revise("gpu0", 0.4, 0.3),
            lambda: machine.gap("gpu1", 100.0),
            machine.reap,
            lambda: machine.replay_twice(50.0, 200.0),
            machine.compact,
        ):
            change()
            machine.publish_a_bundle()
            machine.the_agent_exports_the_ledgers_figures()
    finally:
        machine.teardown()
