"""The ledger's reads and writes: runs, flushed energy, gaps, events, compaction.

Every write is one transaction: it lands whole or not at all. Energy rows
are bucketed by the hour they *start* in (column ``hour``); compaction folds
the raw rows of one (run, host, device, kind, source, hour) into one hourly
row whose joules are the exact sum of the rows it replaces, so totals and
hour-by-hour emissions are the same before and after compaction. A flush
row that straddles an hour boundary counts wholly in the hour it starts in
(at most one flush interval, 10 s by default, lands an hour early).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, cast

from sqlalchemy import Engine, Table, delete, func, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.models import (
    EnergyRecord,
    EnergyRollup,
    Event,
    GapRecord,
    Phase,
    Project,
    Resolution,
    Role,
    Run,
    Stage,
    Status,
    hour_of,
)
from wattlog.accounting.ledger.views import EnergyRow, EventInfo, GapInfo, RunInfo
from wattlog.clock import Clock, SystemClock
from wattlog.errors import ConfigError, LedgerError, RunNotFound
from wattlog.events import EventCategory, EventKind, Restart
from wattlog.records import BAND_TERMS, EnergyInterval, Gap, band_terms, summed_band

logger = logging.getLogger(__name__)
_E = TypeVar("_E", Role, Status, Phase, Stage)
_ENERGY = cast(Table, EnergyRecord.__table__)  # type: ignore[attr-defined]
_ROLLUP = cast(Table, EnergyRollup.__table__)  # type: ignore[attr-defined]
_KEY = ("run_id", "host", "device", "kind", "source")


@dataclass(frozen=True, slots=True)
class EnergyTotal:
    """IT energy summed over a group of rows (joules), with its uncertainty band and source."""

    run_id: int
    host: str
    device: str
    kind: str
    source: str
    energy_j: float
    low_j: float
    high_j: float
    rows: int


@dataclass(frozen=True, slots=True)
class HourEnergy:
    """IT energy of one run in one hour (hours since the Unix epoch), per kind and source."""

    hour: int
    kind: str
    source: str
    energy_j: float
    low_j: float
    high_j: float


@dataclass(frozen=True, slots=True)
class Compaction:
    """What :meth:`Ledger.compact_hourly` did."""

    raw_rows: int
    hourly_rows: int
    before_hour: int


class Ledger:
    """Runs and their energy in a SQL database (see :func:`wattlog.accounting.ledger.engine.make_engine`).

    Args:
        engine: An engine from make_engine (schema migrated).
        clock: Wall-clock source for run start/end and event times.
    """

    def __init__(self, engine: Engine, clock: Clock | None = None) -> None:
        self.engine = engine
        self._clock = clock or SystemClock()

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
            raise LedgerError(f"could not {what}, nothing was written: {message}") from error
        finally:
            session.close()

    # runs ------------------------------------------------------------------

    def start_run(
        self,
        name: str,
        *,
        project: str = "default",
        role: Role | str = Role.FINAL,
        model: str = "",
        site: str = "",
        config: dict[str, Any] | None = None,
        host: str = "",
        resume: bool = False,
        phase: Phase | str = "",
        stage: Stage | str = "",
        scale_group: str = "",
        device_model: str = "",
    ) -> RunInfo:
        """Create a run, or with `resume` continue the run of that name (same id, a restart event).

        `phase` ("" = from the role: final -> final, else development), `stage` and
        `scale_group` place the run in the project's development tables; `device_model`
        (e.g. "H100") selects its embodied figures and power limit.

        Raises:
            ConfigError: Empty name or unknown role, phase or stage.
            LedgerError: The name exists and `resume` is False, or the database fails.
        """
        if not name.strip():
            raise ConfigError("a run needs a name: pass --name")
        role = _member(Role, role, "role")
        labels = _run_labels(phase, stage, scale_group, device_model)
        now_s = self._clock.wall()
        with self.transaction(f"start run {name!r}") as session:
            run = session.execute(select(Run).where(col(Run.name) == name)).scalars().first()
            if run is not None:
                if not resume:
                    raise LedgerError(
                        f"run {name!r} already exists: pass --resume to continue it, or a new name"
                    )
                run.status = Status.RUNNING.value
                run.end_s = None
                run.restarts += 1
                session.add(
                    Event(
                        run_id=cast(int, run.id),
                        time_s=now_s,
                        kind=EventKind.RESTART,
                        category=EventCategory.DOWNTIME,
                        payload=Restart(run.restarts).to_json(),
                    )
                )
                session.flush()
                return RunInfo.of(run)
            owner = _project(session, project, now_s)
            run = Run(
                name=name,
                project_id=cast(int, owner.id),
                role=role.value,
                model=model,
                site=site,
                host=host,
                start_s=now_s,
                config=dict(config or {}),
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
        status = _member(Status, status, "status")
        with self.transaction(f"end run {run!r}") as session:
            row = self._find(session, run)
            row.status = status.value
            row.end_s = self._clock.wall() if end_s is None else end_s
            session.flush()
            return RunInfo.of(row)

    def get_run(self, run: int | str) -> RunInfo:
        """The run with this id or name.

        Raises:
            RunNotFound: No such run.
            LedgerError: The database fails.
        """
        with self.transaction(f"read run {run!r}") as session:
            return RunInfo.of(self._find(session, run))

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

    @classmethod
    def id_of(cls, session: Session, run: int | str) -> int:
        """The id of the run with this id or name, inside an open transaction."""
        return cls._id(session, run)

    @classmethod
    def _id(cls, session: Session, run: int | str) -> int:
        found = cls._find(session, run).id
        assert found is not None  # rows read back from the database have ids
        return found

    @classmethod
    def run_id(cls, session: Session, run: int | str) -> int:
        """The id of run `run` (id or name) inside a transaction, for modules that add tables.

        Raises:
            LedgerError: No such run.
        """
        return cls._id(session, run)

    @staticmethod
    def _find(session: Session, run: int | str) -> Run:
        """The run with this id (an int) or name (a str; a str of digits may also be an id)."""
        key = str(run)
        row = session.get(Run, run) if isinstance(run, int) else None
        if row is None and not isinstance(run, int):
            row = session.execute(select(Run).where(col(Run.name) == key)).scalars().first()
        if row is None and key.isdigit() and not isinstance(run, int):
            row = session.get(Run, int(key))
        if row is None:
            raise RunNotFound(run)
        return row

    def set_run_figures(
        self, run: int | str, *, gpu_hours: float | None = None, requests: int | None = None
    ) -> RunInfo:
        """Record a run's GPU-hours (when not derived from its rows) or requests served (inference).

        Raises:
            ConfigError: A negative or non-finite figure.
        """
        if gpu_hours is not None and not (math.isfinite(gpu_hours) and gpu_hours >= 0):
            raise ConfigError(f"GPU-hours must be a finite number >= 0, got {gpu_hours}")
        if requests is not None and requests < 0:
            raise ConfigError(f"requests must be >= 0, got {requests}")
        with self.transaction(f"set figures of run {run!r}") as session:
            row = self._find(session, run)
            if gpu_hours is not None:
                row.gpu_hours = gpu_hours
            if requests is not None:
                row.requests = requests
            session.flush()
            return RunInfo.of(row)

    def device_seconds(self, run: int | str, kind: str) -> tuple[float, int]:
        """Device-seconds of a run's rows of one kind (e.g. "gpu") and how many devices recorded any.

        GPU-hours = device-seconds / 3600. Hourly rows count from their first row's
        start to their last row's end (compaction keeps those ends).
        """
        e = _ENERGY.c
        with self.transaction("read device time") as session:
            run_id = self._id(session, run)
            query = select(func.sum(e.end_s - e.start_s), func.count(func.distinct(e.device))).where(
                (e.run_id == run_id) & (e.kind == kind)
            )
            seconds, devices = session.execute(query).one()
            return float(seconds or 0.0), int(devices or 0)

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
        for row in intervals:
            _check_interval(row)
        for gap in gaps:
            if not gap.end_s >= gap.start_s:
                raise ConfigError(f"gap of {gap.device} ends before it starts ({gap.start_s} > {gap.end_s})")
        with self.transaction(f"record {len(intervals)} energy rows") as session:
            run_id = self._id(session, run)
            intervals = _new_intervals(session, run_id, intervals)
            gaps = _new_gaps(session, run_id, gaps)
            if intervals:
                stored = [_energy_row(run_id, row) for row in intervals]
                session.execute(insert(_ENERGY), stored)
                _add_to_rollup(session, stored)
            if gaps:
                session.execute(
                    insert(GapRecord),
                    [
                        {
                            "run_id": run_id,
                            "host": g.host,
                            "device": g.device,
                            "start_s": g.start_s,
                            "end_s": g.end_s,
                            "reason": g.reason[:500],
                        }
                        for g in gaps
                    ],
                )
        return len(intervals)

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
                run_id=self._id(session, run),
                kind=kind,
                step=step,
                category=category,
                time_s=self._clock.wall() if time_s is None else time_s,
                payload=dict(payload or {}),
            )
            session.add(event)
            session.flush()
            return EventInfo.of(event)

    def events(self, run: int | str) -> list[EventInfo]:
        """A run's events in time order."""
        with self.transaction("read events") as session:
            run_id = self._id(session, run)
            query = select(Event).where(col(Event.run_id) == run_id)
            query = query.order_by(col(Event.time_s), col(Event.id))
            return [EventInfo.of(row) for row in session.execute(query).scalars()]

    def gaps(self, run: int | str) -> list[GapInfo]:
        """A run's recorded gaps in time order."""
        with self.transaction("read gaps") as session:
            run_id = self._id(session, run)
            query = select(GapRecord).where(col(GapRecord.run_id) == run_id).order_by(col(GapRecord.start_s))
            return [GapInfo.of(row) for row in session.execute(query).scalars()]

    def energy_rows(self, run: int | str, kinds: Sequence[str] | None = None) -> list[EnergyRow]:
        """A run's energy rows as stored (raw and hourly), of `kinds` (default all), in time order.

        Of one kind (e.g. "gpu") they are the power series of its devices.
        """
        with self.transaction("read energy rows") as session:
            run_id = self._id(session, run)
            query = select(EnergyRecord).where(col(EnergyRecord.run_id) == run_id)
            if kinds is not None:
                query = query.where(col(EnergyRecord.kind).in_(list(kinds)))
            query = query.order_by(col(EnergyRecord.start_s), col(EnergyRecord.id))
            return [EnergyRow.of(row) for row in session.execute(query).scalars()]

    def energy_totals(self, run: int | str) -> list[EnergyTotal]:
        """A run's IT energy per (host, device, kind, source), from the rollup kept with every write."""
        r = _ROLLUP.c
        with self.transaction("read energy") as session:
            run_id = self._id(session, run)
            query = (
                select(r.host, r.device, r.kind, r.source, r.energy_j, r.records, *(r[k] for k in BAND_TERMS))
                .where(r.run_id == run_id)
                .order_by(r.host, r.kind, r.device, r.source)
            )
            return [
                EnergyTotal(run_id, host, device, kind, source, energy_j, *summed_band(*band), records)
                for host, device, kind, source, energy_j, records, *band in session.execute(query)
            ]

    def rebuild_totals(self, run: int | str | None = None) -> int:
        """Recompute the rollup from the energy records (after bulk loads or repairs); returns rows.

        Args:
            run: One run's id or name; None rebuilds every run.
        """
        e = _ENERGY.c
        with self.transaction("rebuild energy totals") as session:
            query = select(
                *(e[k] for k in _KEY),
                func.sum(e.energy_j),
                *(func.sum(e[k]) for k in BAND_TERMS),
                func.count(),
            ).group_by(*(e[k] for k in _KEY))
            wipe = delete(_ROLLUP)
            if run is not None:
                run_id = self._id(session, run)
                query = query.where(e.run_id == run_id)
                wipe = wipe.where(_ROLLUP.c.run_id == run_id)
            session.execute(wipe)
            columns = [*_KEY, "energy_j", *BAND_TERMS, "records"]
            rows = [dict(zip(columns, row, strict=True)) for row in session.execute(query)]
            if rows:
                session.execute(insert(_ROLLUP), rows)
            return len(rows)

    def energy_by_hour(
        self,
        run: int | str,
        *,
        kinds: Sequence[str] | None = None,
        exclude_hosts: Sequence[str] = (),
    ) -> list[HourEnergy]:
        """A run's IT energy per hour it was spent in (by row start), kind and source.

        Args:
            run: The run's id or name.
            kinds: Only these kinds (default all).
            exclude_hosts: Leave these hosts out (e.g. hosts whose node meter is counted instead).
        """
        e = _ENERGY.c
        with self.transaction("read hourly energy") as session:
            run_id = self._id(session, run)
            query = select(
                e.hour, e.kind, e.source, func.sum(e.energy_j), *(func.sum(e[k]) for k in BAND_TERMS)
            )
            query = query.where(e.run_id == run_id)
            if kinds is not None:
                query = query.where(e.kind.in_(list(kinds)))
            if exclude_hosts:
                query = query.where(e.host.not_in(list(exclude_hosts)))
            query = query.group_by(e.hour, e.kind, e.source).order_by(e.hour, e.kind, e.source)
            return [
                HourEnergy(hour, kind, source, energy_j, *summed_band(*band))
                for hour, kind, source, energy_j, *band in session.execute(query)
            ]

    def compact_hourly(self, older_than_s: float, *, now_s: float | None = None) -> Compaction:
        """Fold raw rows of whole hours older than `older_than_s` into hourly rows, totals kept exactly.

        Only hours that ended before ``now - older_than_s`` are folded, so a bucket
        is never split between two compactions.
        """
        if older_than_s < 0:
            raise ConfigError(f"older_than_s must be >= 0, got {older_than_s}")
        before_hour = hour_of((self._clock.wall() if now_s is None else now_s) - older_than_s)
        e = _ENERGY.c
        keys = (e.run_id, e.host, e.device, e.kind, e.source, e.hour)
        old = (e.resolution == Resolution.RAW.value) & (e.hour < before_hour)
        folded = (
            select(
                *keys,
                func.min(e.start_s),
                func.max(e.end_s),
                func.sum(e.energy_j),
                *(func.sum(e[k]) for k in BAND_TERMS),
            )
            .where(old)
            .group_by(*keys)
        )
        with self.transaction("compact the ledger") as session:
            raw_rows = session.execute(select(func.count()).where(old)).scalar_one()
            rows = [
                {
                    "run_id": r[0],
                    "host": r[1],
                    "device": r[2],
                    "kind": r[3],
                    "source": r[4],
                    "hour": r[5],
                    "start_s": r[6],
                    "end_s": r[7],
                    "energy_j": r[8],
                    **dict(zip(BAND_TERMS, r[9:], strict=True)),
                    "resolution": Resolution.HOURLY.value,
                }
                for r in session.execute(folded)
            ]
            if rows:
                session.execute(insert(_ENERGY), rows)
            session.execute(delete(_ENERGY).where(old))
        logger.info("compacted %d raw rows into %d hourly rows", raw_rows, len(rows))
        return Compaction(raw_rows=raw_rows, hourly_rows=len(rows), before_hour=before_hour)


def _project(session: Session, name: str, now_s: float) -> Project:
    """The project of this name, created if missing; safe when many runs start at once."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert  # type: ignore[assignment]
    table = cast(Table, Project.__table__)  # type: ignore[attr-defined]
    statement = upsert(table).values(name=name, created_s=now_s)
    session.execute(statement.on_conflict_do_nothing(index_elements=["name"]))
    return session.execute(select(Project).where(col(Project.name) == name)).scalars().one()


def _new_intervals(
    session: Session, run_id: int, intervals: Sequence[EnergyInterval]
) -> list[EnergyInterval]:
    """The rows of `intervals` the run does not hold yet (by interval key), each once."""
    if not intervals:
        return []
    e = _ENERGY.c
    hours = {hour_of(row.start_s) for row in intervals}
    held = {
        tuple(key)
        for key in session.execute(
            select(e.host, e.device, e.source, e.start_s).where(
                (e.run_id == run_id)
                & (e.resolution == Resolution.RAW.value)
                & e.hour.between(min(hours), max(hours))
            )
        )
    }
    fresh = []
    for row in intervals:
        key = (row.host, row.device, str(row.source), row.start_s)
        if key not in held:
            held.add(key)
            fresh.append(row)
    return fresh


def _new_gaps(session: Session, run_id: int, gaps: Sequence[Gap]) -> list[Gap]:
    """The gaps the run does not hold yet (same host, device, start and reason), each once."""
    if not gaps:
        return []
    g = cast(Table, GapRecord.__table__).c  # type: ignore[attr-defined]
    lo, hi = min(gap.start_s for gap in gaps), max(gap.start_s for gap in gaps)
    query = select(g.host, g.device, g.start_s, g.reason).where(
        (g.run_id == run_id) & g.start_s.between(lo, hi)
    )
    held = {tuple(key) for key in session.execute(query)}
    fresh = []
    for gap in gaps:
        key = (gap.host, gap.device, gap.start_s, gap.reason[:500])
        if key not in held:
            held.add(key)
            fresh.append(gap)
    return fresh


def _member(enum: type[_E], value: _E | str, what: str) -> _E:
    try:
        return enum(value)
    except ValueError as error:
        allowed = "|".join(member.value for member in enum)
        raise ConfigError(f"unknown {what} {value!r}: use {allowed}") from error


class _RunLabels(TypedDict):
    """A new run's labels, as Run's columns."""

    phase: str
    stage: str
    scale_group: str
    device_model: str


def _run_labels(phase: Phase | str, stage: Stage | str, scale_group: str, device_model: str) -> _RunLabels:
    """The checked phase, stage, scale group and device model of a new run ("" where not given)."""
    if len(scale_group) > 100 or len(device_model) > 100:
        raise ConfigError("scale group and device model must be at most 100 characters")
    return {
        "phase": _member(Phase, phase, "phase").value if phase else "",
        "stage": _member(Stage, str(stage).lower(), "stage").value if stage else "",
        "scale_group": scale_group.strip(),
        "device_model": device_model.strip(),
    }


def _check_interval(row: EnergyInterval) -> None:
    if not (math.isfinite(row.energy_j) and math.isfinite(row.low_j) and math.isfinite(row.high_j)):
        raise ConfigError(f"energy of {row.device} is not finite ({row.energy_j} J)")
    if row.energy_j < 0 or not row.low_j <= row.energy_j <= row.high_j:
        raise ConfigError(
            f"energy of {row.device} must satisfy 0 <= low <= energy <= high, got "
            f"{row.low_j} <= {row.energy_j} <= {row.high_j} J"
        )
    if not row.end_s >= row.start_s:
        raise ConfigError(f"interval of {row.device} ends before it starts ({row.start_s} > {row.end_s})")
    # a sampling-error part lies inside its side of the band (so a sum never narrows past the
    # energy), to rounding: a side that is all sampling error equals its part only to the last bit
    slack_j = 1e-9 * max(row.energy_j, 1.0)
    low_room_j, high_room_j = row.energy_j - row.low_j + slack_j, row.high_j - row.energy_j + slack_j
    if not (0.0 <= row.random_low_j <= low_room_j and 0.0 <= row.random_high_j <= high_room_j):
        raise ConfigError(
            f"band parts of {row.device} must lie inside the band, got {row.random_low_j} J below "
            f"and {row.random_high_j} J above {row.low_j} <= {row.energy_j} <= {row.high_j} J"
        )


def _add_to_rollup(session: Session, stored: Sequence[dict[str, Any]]) -> None:
    """Add a flush's rows (as inserted) to the per-device totals with one upsert (SQLite and PostgreSQL)."""
    added = ("energy_j", *BAND_TERMS)
    sums: dict[tuple[Any, ...], dict[str, float]] = {}
    records: Counter[tuple[Any, ...]] = Counter()
    for row in stored:
        key = tuple(row[k] for k in _KEY)
        acc = sums.setdefault(key, dict.fromkeys(added, 0.0))
        for name in added:
            acc[name] += row[name]
        records[key] += 1
    values = [
        {**dict(zip(_KEY, key, strict=True)), **acc, "records": records[key]} for key, acc in sums.items()
    ]
    statement = upsert_into(session, _ROLLUP).values(values)
    new = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=list(_KEY),
        set_={name: _ROLLUP.c[name] + new[name] for name in ("energy_j", *BAND_TERMS, "records")},
    )
    session.execute(statement)


def upsert_into(session: Session, table: Table) -> Any:
    """An INSERT on `table` that supports ``on_conflict_do_update`` (SQLite and PostgreSQL).

    Raises:
        LedgerError: Another database.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise LedgerError(f"the ledger supports SQLite and PostgreSQL, not {dialect}")


def _energy_row(run_id: int | None, row: EnergyInterval) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "host": row.host,
        "device": row.device,
        "kind": str(row.kind),
        "source": str(row.source),
        "resolution": Resolution.RAW.value,
        "hour": hour_of(row.start_s),
        "start_s": row.start_s,
        "end_s": row.end_s,
        "energy_j": row.energy_j,
        **dict(zip(BAND_TERMS, band_terms(row), strict=True)),
    }
