"""Band revisions in the ledger: stored beside the rows they revise, with their reason, and in the rollup.

A revision (wattlog.records.BandRevision) says what the agent learned after it
wrote a device's rows (a counter shown to integrate true power, a lock) and
what that adds to each of BAND_TERMS for those rows. The rows stay as stored;
the revision goes to its own table and is added to the device's rollup in the
same transaction, so a run's totals (`wattlog table`, the report, the exports
built on totals) give the band the agent gave. `rebuild_rollup` adds them again.
The hours (`energy_by_hour`) and the windows (`wattlog windows`) add them when read.
Every one of them takes a revision's share through `wattlog.records.revision_shares`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import cast

from sqlalchemy import Table, func, insert, select, update
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import BandRevisionRecord, EnergyRecord, Resolution, stretch_row
from wattlog.accounting.ledger.rollups import SAMPLING_PARTS, EnergyRollup, clamped_sum
from wattlog.records import BAND_TERMS, BandRevision, EnergyInterval, Terms, revision_shares

REVISIONS = cast(Table, BandRevisionRecord.__table__)  # type: ignore[attr-defined]
_ENERGY = cast(Table, EnergyRecord.__table__)  # type: ignore[attr-defined]
_ROLLUP = cast(Table, EnergyRollup.__table__)  # type: ignore[attr-defined]
_SAMPLING = {name for name, _ in SAMPLING_PARTS}
HourKey = tuple[int, str, str]
"""(hour, kind, source): the groups of `energy_by_hour`."""


def store_revisions(session: Session, run_id: int, revisions: Sequence[BandRevision]) -> int:
    """Insert the revisions the run lacks (a retry stores each once) and add them to the rollup."""
    fresh = _new(session, run_id, revisions)
    if not fresh:
        return 0
    session.execute(
        insert(REVISIONS),
        [{**stretch_row(run_id, r), **dict(zip(BAND_TERMS, r.terms, strict=True))} for r in fresh],
    )
    for r in fresh:
        _add_to_rollup(session, run_id, r.host, r.device, r.terms)
    return len(fresh)


def revisions_of(session: Session, run_id: int) -> list[BandRevision]:
    """The run's revisions, in the order they were stored."""
    c = REVISIONS.c
    query = select(c.host, c.device, c.start_s, c.end_s, c.reason, *(c[t] for t in BAND_TERMS))
    query = query.where(c.run_id == run_id).order_by(c.id)
    return [
        BandRevision(host, device, start_s, end_s, reason, (t[0], t[1], t[2], t[3], t[4], t[5]))
        for host, device, start_s, end_s, reason, *t in session.execute(query)
    ]


def add_revisions_to_rollup(session: Session, run_id: int | None) -> None:
    """Add every stored revision of the run (None: of every run) to the rollup, after a rebuild."""
    c = REVISIONS.c
    query = select(c.run_id, c.host, c.device, *(c[t] for t in BAND_TERMS)).order_by(c.id)
    if run_id is not None:
        query = query.where(c.run_id == run_id)
    for rid, host, device, *t in session.execute(query).all():
        _add_to_rollup(session, rid, host, device, (t[0], t[1], t[2], t[3], t[4], t[5]))


def _add_to_rollup(session: Session, run_id: int, host: str, device: str, terms: Terms) -> None:
    """Add `terms` to the device's rollup rows (shared by their energy, if it has several)."""
    r = _ROLLUP.c
    device_rows = (r.run_id == run_id) & (r.host == host) & (r.device == device)
    parts = {
        (kind, source): float(energy_j)
        for kind, source, energy_j in session.execute(select(r.kind, r.source, r.energy_j).where(device_rows))
    }  # none: its rows are not stored (yet): `rebuild_rollup` adds it once they are
    for (kind, source), share in revision_shares(terms, parts).items():
        key = device_rows & (r.kind == kind) & (r.source == source)
        values = {
            t: clamped_sum(r[t], v, r.energy_j) if t in _SAMPLING else r[t] + v
            for t, v in zip(BAND_TERMS, share, strict=True)
        }
        session.execute(update(_ROLLUP).where(key).values(values))


def hourly_shares(
    session: Session, run_id: int, kinds: Sequence[str] | None, exclude_hosts: Sequence[str]
) -> dict[HourKey, list[Terms]]:
    """The shares of the run's revisions each (hour, kind, source) of `energy_by_hour` adds.

    A revision is shared among the hours of its span by the energy its device spent in each.
    The devices' hours are summed once; only an hour a span's edge cuts is summed row by row.
    """
    c, e = REVISIONS.c, _ENERGY.c
    revisions = session.execute(
        select(c.id, c.host, c.device, c.start_s, c.end_s, *(c[t] for t in BAND_TERMS)).where(
            c.run_id == run_id
        )
    ).all()
    out: dict[HourKey, list[Terms]] = defaultdict(list)
    if not revisions:
        return out
    sums = (func.sum(e.energy_j), func.min(e.start_s), func.max(e.end_s))
    query = select(e.host, e.device, e.hour, e.kind, e.source, *sums).where(e.run_id == run_id)
    query = query.where(e.device.in_(sorted({r.device for r in revisions})))
    if kinds is not None:
        query = query.where(e.kind.in_(list(kinds)))
    if exclude_hosts:
        query = query.where(e.host.not_in(list(exclude_hosts)))
    hours: dict[tuple[str, str], list[tuple[HourKey, float, float, float]]] = defaultdict(list)
    for host, device, hour, kind, source, energy_j, first_s, last_s in session.execute(
        query.group_by(e.host, e.device, e.hour, e.kind, e.source)
    ):
        hours[(host, device)].append(((hour, kind, source), float(energy_j), first_s, last_s))
    for _, host, device, start_s, end_s, *t in revisions:
        parts: dict[HourKey, float] = {}
        for key, energy_j, first_s, last_s in hours.get((host, device), ()):
            if last_s <= start_s or first_s >= end_s:
                continue  # outside the span
            if not (first_s >= start_s and last_s <= end_s):  # an edge cuts the hour: its rows inside
                # every resolution named: the (run, host, resolution, hour) index then finds the hour's rows
                cut = (e.run_id == run_id) & (e.host == host) & e.resolution.in_(list(Resolution))
                cut &= (e.hour == key[0]) & (e.device == device)
                cut &= (e.kind == key[1]) & (e.source == key[2]) & (e.start_s < end_s) & (e.end_s > start_s)
                energy_j = float(session.execute(select(func.sum(e.energy_j)).where(cut)).scalar() or 0.0)
            parts[key] = parts.get(key, 0.0) + energy_j
        for key, share in revision_shares((t[0], t[1], t[2], t[3], t[4], t[5]), parts).items():
            out[key].append(share)
    return out


def window_shares(session: Session, run_id: int, windows: Sequence[EnergyInterval]) -> list[list[Terms]]:
    """The shares of the run's revisions each window adds, in `windows`' order.

    A window's band was taken with the evidence of its close: the revisions of spans that
    contain it (same device, closed by the revision's end) change it by its energy's share
    of the span. Its own sampling part stays as taken (the side that can only be wider).
    """
    c, e = REVISIONS.c, _ENERGY.c
    revisions = session.execute(
        select(c.id, c.host, c.device, c.start_s, c.end_s).where(c.run_id == run_id).order_by(c.id)
    ).all()
    out: list[list[Terms]] = [[] for _ in windows]
    if not revisions:
        return out
    terms = _terms_by_id(session, run_id, [rid for rid, *_ in revisions])
    for rid, host, device, start_s, end_s in revisions:
        inside = [
            i
            for i, w in enumerate(windows)
            if (w.host, w.device) == (host, device) and start_s <= w.start_s and w.end_s <= end_s
        ]
        if not inside:
            continue
        span = (e.run_id == run_id) & (e.host == host) & (e.device == device)
        span &= (e.start_s < end_s) & (e.end_s > start_s)
        whole_j = float(session.execute(select(func.sum(e.energy_j)).where(span)).scalar() or 0.0)
        shares = revision_shares(terms[rid], {i: windows[i].energy_j for i in inside}, whole_j)
        for i, share in shares.items():
            out[i].append(share)
    return out


def _terms_by_id(session: Session, run_id: int, ids: Sequence[int]) -> dict[int, Terms]:
    """The terms of the run's revisions `ids`."""
    c = REVISIONS.c
    query = select(c.id, *(c[t] for t in BAND_TERMS)).where((c.run_id == run_id) & c.id.in_(list(ids)))
    return {rid: (t[0], t[1], t[2], t[3], t[4], t[5]) for rid, *t in session.execute(query)}


def _new(session: Session, run_id: int, revisions: Sequence[BandRevision]) -> list[BandRevision]:
    """The revisions the run does not hold yet: one per device and end (a take revises a device once)."""
    c = REVISIONS.c
    held = {
        (host, device, end_s)
        for host, device, end_s in session.execute(
            select(c.host, c.device, c.end_s).where(c.run_id == run_id)
        )
    }
    fresh = []
    for r in revisions:
        if (r.host, r.device, r.end_s) not in held:
            held.add((r.host, r.device, r.end_s))
            fresh.append(r)
    return fresh
