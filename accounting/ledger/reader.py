"""Reads of one run inside one open transaction: the run resolved once, every figure from one snapshot.

`Ledger.reading(run)` opens the transaction and hands out a RunReader; the
Ledger's own read methods are each one RunReader call in a transaction of its
own. A Table-19 row reads its energy, hours, job nodes, gaps and events
through one reader, so its figures come from one consistent state of the
ledger (a flush landing between two reads cannot make the total disagree
with its hours) and the run's name is looked up once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, func, select
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.models import (
    EnergyRecord,
    Event,
    GapRecord,
    JobNode,
    RankProgress,
    Run,
    hour_of,
)
from wattlog.accounting.ledger.node_lease import LOST, NODE_LOST_REASON, describe_collision
from wattlog.accounting.ledger.revisions import hourly_shares
from wattlog.accounting.ledger.rollups import EnergyHourRollup, EnergyRollup
from wattlog.accounting.ledger.views import (
    EnergyTotal,
    EventInfo,
    GapInfo,
    JobNodes,
    NodeOutage,
    RankInfo,
    RunInfo,
    interval_of,
)
from wattlog.errors import RunNotFound
from wattlog.events import EventKind
from wattlog.records import BAND_TERMS, EnergyFigure, EnergyInterval, Kind, Source, revised_terms, summed_band

ENERGY = cast(Table, EnergyRecord.__table__)  # type: ignore[attr-defined]
ROLLUP = cast(Table, EnergyRollup.__table__)  # type: ignore[attr-defined]
HOURS = cast(Table, EnergyHourRollup.__table__)  # type: ignore[attr-defined]


def find_run(session: Session, run: int | str) -> Run:
    """The run with this id (an int) or name (a str; a str of digits may also be an id).

    Raises:
        RunNotFound: No such run.
    """
    key = str(run)
    row = session.get(Run, run) if isinstance(run, int) else None
    if row is None and not isinstance(run, int):
        row = session.execute(select(Run).where(col(Run.name) == key)).scalars().first()
    if row is None and key.isdigit() and not isinstance(run, int):
        row = session.get(Run, int(key))
    if row is None:
        raise RunNotFound(run)
    return row


def summed_figure(kind: str, source: str, energy_j: float, band: Sequence[float]) -> EnergyFigure:
    """The figure of a sum of rows from the sums of its energy and BAND_TERMS (in their order)."""
    low_j, high_j = summed_band(*band)
    random_low_j, random_high_j = (math.sqrt(max(square, 0.0)) for square in band[4:6])
    return EnergyFigure(Kind(kind), Source(source), energy_j, low_j, high_j, random_low_j, random_high_j)


class RunReader:
    """One run's reads in an open transaction (see `Ledger.reading`).

    Args:
        session: The open transaction's session.
        run: The run's row, found once.
    """

    def __init__(self, session: Session, run: Run) -> None:
        assert run.id is not None  # rows read back from the database have ids
        self._session = session
        self._run = run
        self.run_id: int = run.id

    def info(self) -> RunInfo:
        """The run as stored."""
        return RunInfo.of(self._run)

    def energy_totals(self) -> list[EnergyTotal]:
        """IT energy per (host, device, kind, source), from the rollup kept with every write."""
        r = ROLLUP.c
        query = (
            select(r.host, r.device, r.kind, r.source, r.energy_j, r.records, *(r[k] for k in BAND_TERMS))
            .where(r.run_id == self.run_id)
            .order_by(r.host, r.kind, r.device, r.source)
        )
        return [
            EnergyTotal(summed_figure(kind, source, energy_j, band), host, device, self.run_id, rows=records)
            for host, device, kind, source, energy_j, records, *band in self._session.execute(query)
        ]

    def energy_by_hour(
        self, kinds: Sequence[str] | None = None, exclude_hosts: Sequence[str] = ()
    ) -> list[EnergyTotal]:
        """IT energy per hour spent in (by row start), kind and source (see `Ledger.energy_by_hour`).

        Each hour's band has its share of the run's band revisions (ledger.revisions.hourly_shares).
        """
        h = HOURS.c
        query = select(
            h.hour, h.kind, h.source, func.sum(h.energy_j), *(func.sum(h[k]) for k in BAND_TERMS)
        ).where(self._hours_of(kinds, exclude_hosts))
        query = query.group_by(h.hour, h.kind, h.source).order_by(h.hour, h.kind, h.source)
        shares = hourly_shares(self._session, self.run_id, kinds, exclude_hosts)  # the band revisions' part
        return [
            EnergyTotal(
                summed_figure(
                    kind, source, energy_j, revised_terms(band, shares.get((hour, kind, source), ()))
                ),
                run_id=self.run_id,
                hour=hour,
            )
            for hour, kind, source, energy_j, *band in self._session.execute(query)
        ]

    def energy_j_by_hour(
        self, kinds: Sequence[str] | None = None, exclude_hosts: Sequence[str] = ()
    ) -> dict[int, float]:
        """Joules per hour spent in (by row start), every kind and source summed: what an hourly
        intensity multiplies (`energy_by_hour`'s filters, without its bands), from the hourly
        rollup: a 1,024-GPU week of raw 10 s rows is 62 M rows, its hours 21,504 rollup rows a kind.
        """
        h = HOURS.c
        query = select(h.hour, func.sum(h.energy_j)).where(self._hours_of(kinds, exclude_hosts))
        query = query.group_by(h.hour).order_by(h.hour)
        return {int(hour): float(joules) for hour, joules in self._session.execute(query)}

    def _hours_of(self, kinds: Sequence[str] | None, exclude_hosts: Sequence[str]) -> ColumnElement[bool]:
        """The run's hourly rollup rows of `kinds` (None: all), `exclude_hosts` left out."""
        h = HOURS.c
        where = h.run_id == self.run_id
        if kinds is not None:
            where &= h.kind.in_(list(kinds))
        if exclude_hosts:
            where &= h.host.not_in(list(exclude_hosts))
        return where

    def energy_rows(self, kinds: Sequence[str] | None = None) -> list[EnergyInterval]:
        """Energy rows as stored (raw and hourly), of `kinds` (default all), in time order."""
        return [row for batch in self.energy_row_batches(kinds) for row in batch]

    def energy_row_batches(
        self, kinds: Sequence[str] | None = None, batch_rows: int = 20_000
    ) -> Iterator[list[EnergyInterval]]:
        """`energy_rows`, `batch_rows` at a time: a run of millions of rows read without holding them all."""
        query = select(EnergyRecord).where(col(EnergyRecord.run_id) == self.run_id)
        if kinds is not None:
            query = query.where(col(EnergyRecord.kind).in_(list(kinds)))
        query = query.order_by(col(EnergyRecord.start_s), col(EnergyRecord.id))
        result = self._session.execute(query.execution_options(yield_per=batch_rows)).scalars()
        for part in result.partitions():
            yield [interval_of(row) for row in part]

    def device_seconds(self, kind: str) -> tuple[float, int]:
        """Device-seconds of rows of one kind and how many devices recorded any, from the device totals."""
        r = ROLLUP.c
        query = select(func.sum(r.seconds), func.count(func.distinct(r.device))).where(
            (r.run_id == self.run_id) & (r.kind == kind)
        )
        seconds, devices = self._session.execute(query).one()
        return float(seconds or 0.0), int(devices or 0)

    def device_power(self, devices: Sequence[str]) -> dict[str, tuple[float, float]]:
        """Joules and device-seconds of each of `devices` (by name, every host's), from the device totals."""
        if not devices:
            return {}
        r = ROLLUP.c
        query = (
            select(r.device, func.sum(r.energy_j), func.sum(r.seconds))
            .where((r.run_id == self.run_id) & r.device.in_(sorted(set(devices))))
            .group_by(r.device)
        )
        return {device: (float(j), float(s)) for device, j, s in self._session.execute(query)}

    def total_j(self) -> float:
        """The run's IT energy, every device summed, from the rollup."""
        r = ROLLUP.c
        return float(
            self._session.execute(select(func.sum(r.energy_j)).where(r.run_id == self.run_id)).scalar() or 0.0
        )

    def span(self) -> tuple[float, float] | None:
        """The first start and last end of the run's energy rows (None: no rows), from the device
        totals (ledger.rollups.EnergyRollup)."""
        r = ROLLUP.c
        query = select(func.min(r.first_start_s), func.max(r.last_end_s)).where(r.run_id == self.run_id)
        first, last = self._session.execute(query).one()
        return None if first is None or last is None else (float(first), float(last))

    def device_spans(self) -> dict[tuple[str, str], tuple[float, float]]:
        """(host, device) -> the first start and last end of its energy rows, from the device totals:
        the rows' own span would be read from the run's last hours of rows (a million for 1,024
        GPUs at 10 s)."""
        r = ROLLUP.c
        query = (
            select(r.host, r.device, func.min(r.first_start_s), func.max(r.last_end_s))
            .where(r.run_id == self.run_id)
            .group_by(r.host, r.device)
        )
        return {
            (host, device): (float(first), float(last))
            for host, device, first, last in self._session.execute(query)
            if first is not None and last is not None
        }

    def last_end_before(self, t_s: float) -> float | None:
        """The latest end of an energy row at or before `t_s` (None: no row ends by then).

        The hour of `t_s` and the two before it are each one seek in ix_energy_run_hour_end (a row
        lasts at most an hour, bar imports); only a run silent for longer is searched further back.
        """
        e = ENERGY.c
        ends = select(func.max(e.end_s)).where((e.run_id == self.run_id) & (e.end_s <= t_s))
        hour = hour_of(t_s)
        found = [self._session.execute(ends.where(e.hour == h)).scalar() for h in range(hour - 2, hour + 1)]
        last = max((end for end in found if end is not None), default=None)
        if last is None:
            last = self._session.execute(ends.where(e.hour < hour - 2)).scalar()
        return None if last is None else float(last)

    def events(self) -> list[EventInfo]:
        """Events in time order."""
        query = select(Event).where(col(Event.run_id) == self.run_id)
        query = query.order_by(col(Event.time_s), col(Event.id))
        return [EventInfo.of(row) for row in self._session.execute(query).scalars()]

    def gaps(self) -> list[GapInfo]:
        """Recorded gaps in time order."""
        query = select(GapRecord).where(col(GapRecord.run_id) == self.run_id)
        return [
            GapInfo.of(row) for row in self._session.execute(query.order_by(col(GapRecord.start_s))).scalars()
        ]

    def job_nodes(self) -> JobNodes:
        """The nodes that joined the run's job (none joined: one node, nothing known)."""
        query = select(JobNode).where(col(JobNode.run_id) == self.run_id).order_by(col(JobNode.node_index))
        rows: list[Any] = list(self._session.execute(query).scalars())
        return JobNodes(
            node_count=max((r.node_count for r in rows), default=1),
            joined=tuple(r.host for r in rows),
            measuring=tuple(r.host for r in rows if r.measured),
            indexes=tuple(r.node_index for r in rows),
            outages=self._outages({r.host: r.state for r in rows}),
            collisions=tuple(
                describe_collision(dict(e.payload))
                for e in self.events()
                if e.kind == EventKind.HOST_COLLISION
            ),
        )

    def _outages(self, states: dict[str, str]) -> tuple[NodeOutage, ...]:
        """Each lost node's gap (earliest start, latest end), and whether it came back."""
        query = (
            select(col(GapRecord.host), func.min(col(GapRecord.start_s)), func.max(col(GapRecord.end_s)))
            .where(col(GapRecord.run_id) == self.run_id, col(GapRecord.reason) == NODE_LOST_REASON)
            .group_by(col(GapRecord.host))
        )
        return tuple(
            NodeOutage(host, float(start_s), float(end_s), states.get(host) != LOST)
            for host, start_s, end_s in sorted(self._session.execute(query).all(), key=lambda r: (r[1], r[0]))
        )

    def ranks(self) -> list[RankInfo]:
        """Every rank's latest progress (cumulative tokens, FLOPs per token), by rank."""
        query = select(RankProgress).where(col(RankProgress.run_id) == self.run_id)
        return [
            RankInfo.of(row)
            for row in self._session.execute(query.order_by(col(RankProgress.rank))).scalars()
        ]
