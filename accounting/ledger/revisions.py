"""Band revisions in the ledger: stored beside the rows they revise, with their reason, and in the rollup.

A revision (wattlog.records.BandRevision) says what the agent learned after it
wrote a device's rows (a counter shown to integrate true power, a lock) and
what that adds to each of BAND_TERMS for those rows. The rows stay as stored;
the revision goes to its own table and is added to the device's rollup in the
same transaction, so a run's totals (`wattlog table`, the report, the exports
built on totals) give the band the agent gave. `rebuild_rollup` adds them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from sqlalchemy import Table, insert, select, update
from sqlalchemy.orm import Session

from wattlog.accounting.ledger.models import BandRevisionRecord
from wattlog.accounting.ledger.reader import ROLLUP
from wattlog.records import BAND_TERMS, BandRevision

REVISIONS = cast(Table, BandRevisionRecord.__table__)  # type: ignore[attr-defined]


def store_revisions(session: Session, run_id: int, revisions: Sequence[BandRevision]) -> int:
    """Insert the revisions the run lacks (a retry stores each once) and add them to the rollup."""
    fresh = _new(session, run_id, revisions)
    if not fresh:
        return 0
    session.execute(
        insert(REVISIONS),
        [
            {
                "run_id": run_id,
                "host": r.host,
                "device": r.device,
                "start_s": r.start_s,
                "end_s": r.end_s,
                "reason": r.reason[:500],
                **dict(zip(BAND_TERMS, r.terms, strict=True)),
            }
            for r in fresh
        ],
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
    for rid, host, device, *terms in session.execute(query).all():
        _add_to_rollup(session, rid, host, device, terms)


def _add_to_rollup(session: Session, run_id: int, host: str, device: str, terms: Sequence[float]) -> None:
    """Add `terms` to the device's rollup row (the one with the most records, if it has several)."""
    r = ROLLUP.c
    found = session.execute(
        select(r.kind, r.source)
        .where((r.run_id == run_id) & (r.host == host) & (r.device == device))
        .order_by(r.records.desc())
        .limit(1)
    ).first()
    if found is None:  # its rows are not stored (yet): `rebuild_rollup` adds it once they are
        return
    kind, source = found
    key = (
        (r.run_id == run_id)
        & (r.host == host)
        & (r.device == device)
        & (r.kind == kind)
        & (r.source == source)
    )
    session.execute(
        update(ROLLUP).where(key).values({t: r[t] + v for t, v in zip(BAND_TERMS, terms, strict=True)})
    )


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
