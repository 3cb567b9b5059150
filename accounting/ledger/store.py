"""The ledger's facade: runs and their flushed energy, gaps, events and compaction, one transaction a call.

Every write is one transaction: it lands whole or not at all. Energy rows
are bucketed by the hour they *start* in (column ``hour``); compaction folds
the raw rows of one (run, host, device, kind, source, hour) into one hourly
row whose joules are the exact sum of the rows it replaces, so totals and
hour-by-hour emissions are the same before and after compaction. A flush
row that straddles an hour boundary counts wholly in the hour it starts in
(at most one flush interval, 10 s by default, lands an hour early).

The work is done by one module per job: runs (finding, creating, resuming),
writes (a flush and the rollup), reader (one run's reads in one transaction),
compaction. `Ledger` opens the transactions and is what other packages import.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.compaction import BATCH_ROWS, Compaction, fold_in_batches
from wattlog.accounting.ledger.day_plan import DayPlan, days_of, start_days
from wattlog.accounting.ledger.models import Event, Project, Role, Run, Status, hour_of
from wattlog.accounting.ledger.node_lease import close_node_gaps
from wattlog.accounting.ledger.reader import RunReader, find_run
from wattlog.accounting.ledger.revisions import revisions_of, store_revisions
from wattlog.accounting.ledger.runs import RunSpec, member, project_row, resume_run, run_labels, set_figures
from wattlog.accounting.ledger.views import EnergyTotal, EventInfo, GapInfo, RunInfo
from wattlog.accounting.ledger.writes import (
    check_flush,
    rebuild_rollup,
    store_events_once,
    store_flush,
    upsert_into,
)
from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, LedgerError, LedgerUnavailable, RunNotFound
from wattlog.records import BandRevision, EnergyInterval, Gap

__all__ = ["Compaction", "EnergyTotal", "Ledger", "upsert_into"]

logger = logging.getLogger(__name__)


class Ledger:
    """Runs and their energy in a SQL database (see :func:`wattlog.accounting.ledger.engine.make_engine`).

    Args:
        engine: An engine from make_engine (schema migrated).
        clock: Wall-clock source for run start/end and event times.
    """

    def __init__(self, engine: Engine, clock: Clock | None = None) -> None:
        self.engine = engine
        self._clock = clock or SystemClock()
        self._days = DayPlan(self._clock.wall)  # the day partitions this process knows (PostgreSQL)

    @property
    def clock(self) -> Clock:
        """The wall-clock source of run start/end and event times (leases use it too)."""
        return self._clock

    @contextmanager
    def transaction(self, what: str) -> Iterator[Session]:
        """One session, committed on success, rolled back (nothing written) on any failure."""
        session = Session(self.engine, expire_on_commit=False)
        try:
            with session.begin():
                yield session
        except SQLAlchemyError as error:
            original = getattr(error, "orig", None) or error
            message = (str(original).strip().splitlines() or [type(original).__name__])[0]
            failure = LedgerUnavailable if isinstance(error, OperationalError) else LedgerError
            raise failure(f"could not {what}, nothing was written: {message}") from error
        finally:
            session.close()

    @contextmanager
    def reading(self, run: int | str, what: str = "read a run") -> Iterator[RunReader]:
        """One transaction reading one run, found once by id or name: every read sees the same state.

        Raises:
            RunNotFound: No such run.
            LedgerError: The database fails.
        """
        with self.transaction(what) as session:
            yield RunReader(session, find_run(session, run))

    # runs ------------------------------------------------------------------

    def start_run(
        self, name: str, spec: RunSpec | None = None, *, resume: bool = False, start_s: float | None = None
    ) -> RunInfo:
        """Create a run, or with `resume` continue the run of that name (same id, a restart event).

        Args:
            name: The run's name, unique in the ledger.
            spec: What the run is (project, role, labels; default RunSpec()); a resumed run keeps its own.
            resume: Continue the run of that name instead of refusing it.
            start_s: Its start, Unix seconds (default now; a start spooled while the ledger was down).

        Raises:
            ConfigError: Empty name or unknown role, phase or stage.
            LedgerError: The name exists and `resume` is False, or the database fails.
        """
        if not name.strip():
            raise ConfigError("a run needs a name: pass --name")
        spec = spec or RunSpec()
        role = member(Role, spec.role, "role")
        labels = run_labels(spec.phase, spec.stage, spec.scale_group, spec.device_model)
        now_s = self._clock.wall() if start_s is None else start_s  # given: a start spooled earlier
        self._days.ensure(self.transaction, start_days(hour_of(now_s)))  # its days, made ahead
        with self.transaction(f"start run {name!r}") as session:
            run = session.execute(select(Run).where(col(Run.name) == name)).scalars().first()
            if run is not None:
                if not resume:
                    raise LedgerError(
                        f"run {name!r} already exists: continue it with resume=True (Python) or --resume "
                        "(CLI), or give a new run name"
                    )
                resume_run(session, run, now_s)
                return RunInfo.of(run)
            owner = project_row(session, spec.project, now_s)
            run = Run(
                name=name,
                project_id=_id_of(owner),
                role=role.value,
                model=spec.model,
                site=spec.site,
                host=spec.host,
                start_s=now_s,
                config=dict(spec.config),
                site_figures=spec.site_figures,
                **labels,
            )
            session.add(run)
            session.flush()
            return RunInfo.of(run)

    def end_run(
        self, run: int | str, status: Status | str = Status.FINISHED, *, end_s: float | None = None
    ) -> RunInfo:
        """Mark a run ended with `status`, now or at `end_s` (Unix seconds; a replayed end).

        Raises:
            RunNotFound: No such run.
        """
        status = member(Status, status, "status")
        with self.transaction(f"end run {run!r}") as session:
            row = find_run(session, run)
            row.status = status.value
            row.end_s = self._clock.wall() if end_s is None else end_s
            close_node_gaps(session, _id_of(row), row.end_s)  # a node still lost: its gap to the end
            session.flush()
            return RunInfo.of(row)

    def get_run(self, run: int | str) -> RunInfo:
        """The run with this id or name.

        Raises:
            RunNotFound: No such run.
            LedgerError: The database fails.
        """
        with self.transaction(f"read run {run!r}") as session:
            return RunInfo.of(find_run(session, run))

    def find_run(self, run: int | str) -> RunInfo | None:
        """The run with this id or name, or None when the ledger has none.

        Raises:
            LedgerError: The database fails (an outage is not an absent run).
        """
        try:
            return self.get_run(run)
        except RunNotFound:
            return None

    def runs(self, project: str | None = None) -> list[RunInfo]:
        """Runs, oldest first, of one project or of all."""
        with self.transaction("list runs") as session:
            query = select(Run).order_by(col(Run.start_s), col(Run.id))
            if project is not None:
                owner = session.execute(select(Project).where(col(Project.name) == project)).scalars().first()
                if owner is None:
                    raise LedgerError(f"project {project!r} does not exist: see `wattlog table` for runs")
                query = query.where(col(Run.project_id) == owner.id)
            return [RunInfo.of(row) for row in session.execute(query).scalars()]

    def project_of(self, run: RunInfo) -> str:
        """The name of the project a run belongs to."""
        with self.transaction("read project") as session:
            owner = session.get(Project, run.project_id)
            return owner.name if owner else ""

    def wall_s(self) -> float:
        """Now, by the ledger's wall clock (Unix seconds)."""
        return self._clock.wall()

    @staticmethod
    def id_of(session: Session, run: int | str) -> int:
        """The id of the run with this id or name, inside an open transaction.

        Raises:
            RunNotFound: No such run.
        """
        return _id_of(find_run(session, run))

    @staticmethod
    def run_id(session: Session, run: int | str) -> int:
        """The id of run `run` (id or name) inside a transaction, for modules that add tables.

        Raises:
            RunNotFound: No such run.
        """
        return _id_of(find_run(session, run))

    def set_run_figures(
        self, run: int | str, *, gpu_hours: float | None = None, requests: int | None = None
    ) -> RunInfo:
        """Record a run's GPU-hours (when not derived from its rows) or requests served (inference).

        Raises:
            ConfigError: A negative or non-finite figure.
        """
        with self.transaction(f"set figures of run {run!r}") as session:
            return set_figures(session, run, gpu_hours, requests)

    def device_seconds(self, run: int | str, kind: str) -> tuple[float, int]:
        """Device-seconds of a run's rows of one kind (e.g. "gpu") and how many devices recorded any.

        GPU-hours = device-seconds / 3600. Hourly rows count from their first row's
        start to their last row's end (compaction keeps those ends).
        """
        with self.reading(run, "read device time") as read:
            return read.device_seconds(kind)

    # energy ----------------------------------------------------------------

    def record_intervals(
        self, run: int | str, intervals: Sequence[EnergyInterval], gaps: Sequence[Gap] = ()
    ) -> int:
        """Store one flush interval's energy rows and gaps in one transaction, each at most once.

        A row is keyed by (run, host, device, source, start): a row or gap the
        ledger already holds (a retry whose first commit landed, a spool
        replayed twice) is skipped, so writing the same rows again never
        counts them twice.

        Returns:
            The number of energy rows written (rows already there not counted).

        Raises:
            ConfigError: A row is inconsistent (end before start, negative or non-finite energy).
            LedgerError: The run does not exist or the database fails (nothing written).
        """
        check_flush(intervals, gaps)
        self._days.ensure(self.transaction, days_of(hour_of(r.start_s) for r in intervals))  # before it
        with self.transaction(f"record {len(intervals)} energy rows") as session:
            return store_flush(session, _id_of(find_run(session, run)), intervals, gaps)

    def record_revisions(self, run: int | str, revisions: Sequence[BandRevision]) -> int:
        """Store revisions of the band of rows already written (each once), and add them to the totals.

        The rows stay as stored; totals then give the band the agent gave (ledger.revisions).

        Raises:
            LedgerError: The run does not exist or the database fails (nothing written).
        """
        with self.transaction(f"record {len(revisions)} band revisions") as session:
            return store_revisions(session, _id_of(find_run(session, run)), revisions)

    def band_revisions(self, run: int | str) -> list[BandRevision]:
        """A run's band revisions, with their reasons, in the order they were stored."""
        with self.transaction("read band revisions") as session:
            return revisions_of(session, _id_of(find_run(session, run)))

    def record_event(
        self,
        run: int | str,
        kind: str,
        *,
        time_s: float | None = None,
        step: int | None = None,
        category: str = "",
        payload: dict[str, Any] | None = None,
    ) -> EventInfo:
        """Store an event (restart, health_check, alert, loss_spike, ...) of a run."""
        if not kind:
            raise ConfigError("an event needs a kind (restart, health_check, alert, loss_spike, ...)")
        with self.transaction(f"record event {kind!r}") as session:
            event = Event(
                run_id=_id_of(find_run(session, run)),
                kind=kind,
                step=step,
                category=category,
                time_s=self._clock.wall() if time_s is None else time_s,
                payload=dict(payload or {}),
            )
            session.add(event)
            session.flush()
            return EventInfo.of(event)

    def record_events_once(self, run: int | str, events: Sequence[Mapping[str, Any]]) -> int:
        """Store the spooled events (record_event's keywords) the run lacks, by kind, time and step.

        Raises:
            LedgerError: The run does not exist or the database fails (nothing written).
        """
        with self.transaction(f"record {len(events)} spooled events") as session:
            return store_events_once(session, _id_of(find_run(session, run)), events)

    def events(self, run: int | str) -> list[EventInfo]:
        """A run's events in time order."""
        with self.reading(run, "read events") as read:
            return read.events()

    def gaps(self, run: int | str) -> list[GapInfo]:
        """A run's recorded gaps in time order."""
        with self.reading(run, "read gaps") as read:
            return read.gaps()

    def energy_rows(self, run: int | str, kinds: Sequence[str] | None = None) -> list[EnergyInterval]:
        """A run's energy rows as stored (raw and hourly), of `kinds` (default all), in time order.

        Of one kind (e.g. "gpu") they are the power series of its devices.
        """
        with self.reading(run, "read energy rows") as read:
            return read.energy_rows(kinds)

    def energy_totals(self, run: int | str) -> list[EnergyTotal]:
        """A run's IT energy per (host, device, kind, source), from the rollup kept with every write."""
        with self.reading(run, "read energy") as read:
            return read.energy_totals()

    def rebuild_totals(self, run: int | str | None = None) -> int:
        """Recompute the rollup from the energy records (after bulk loads or repairs); returns rows.

        Args:
            run: One run's id or name; None rebuilds every run.
        """
        with self.transaction("rebuild energy totals") as session:
            return rebuild_rollup(session, None if run is None else _id_of(find_run(session, run)))

    def energy_by_hour(
        self,
        run: int | str,
        *,
        kinds: Sequence[str] | None = None,
        exclude_hosts: Sequence[str] = (),
    ) -> list[EnergyTotal]:
        """A run's IT energy per hour it was spent in (by row start), kind and source.

        Args:
            run: The run's id or name.
            kinds: Only these kinds (default all).
            exclude_hosts: Leave these hosts out (e.g. hosts whose node meter is counted instead).
        """
        with self.reading(run, "read hourly energy") as read:
            return read.energy_by_hour(kinds, exclude_hosts)

    def compact_hourly(
        self, older_than_s: float, *, now_s: float | None = None, batch_rows: int = BATCH_ROWS
    ) -> Compaction:
        """Fold raw rows of whole hours older than `older_than_s` into hourly rows, totals kept exactly.

        Only hours that ended before ``now - older_than_s`` are folded, so a bucket
        is never split between two compactions; about `batch_rows` raw rows (whole
        hours) per transaction, so writers wait for one batch, not the whole fold.
        """
        if older_than_s < 0 or batch_rows < 1:
            raise ConfigError(
                f"older_than_s must be >= 0 and batch_rows >= 1, got {older_than_s}, {batch_rows}"
            )
        before_hour = hour_of((self._clock.wall() if now_s is None else now_s) - older_than_s)
        done = fold_in_batches(self.transaction, before_hour, batch_rows)
        logger.info("compacted %d raw rows into %d hourly rows", done.raw_rows, done.hourly_rows)
        return done


def _id_of(row: Run | Project) -> int:
    assert row.id is not None  # rows read back from the database have ids
    return row.id
