"""Run leases: an agent renews its run's lease with each flush; a run whose lease ran out is `lost`.

A run killed with -9 (or whose node vanished) can end nothing: without a lease it stayed
`running` forever in the ledger, the table and the report, and the energy after its last flush
was missing with no gap. Each flush of the run's agent pushes ``lease_until_s`` forward (by
:func:`lease_for` its flush interval). The next reader (the table, the report) or
`wattlog runs reap` calls :func:`reap_lost_runs`, which closes every running run whose lease has
expired as ``lost``, at the lease's end, with a gap per device from its last row to that end
(reason "agent down: ...", so the tables count it as the agent being down) and a ``lost`` event.
Runs without a lease (written before revision 0008, or with no agent) are never reaped.
Each node of a job also holds its own lease (:mod:`wattlog.accounting.ledger.node_lease`): a node
that dies while the run goes on elsewhere is reaped first, as a gap on that node.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.models import EnergyRecord, Event, GapRecord, Run, Status
from wattlog.accounting.ledger.node_lease import (
    LostNode,
    NodeHolder,
    close_node_gaps,
    describe_lost_node,
    end_if_every_node_left,
    every_node_left,
    lost_hosts,
    missing_nodes,
    reap_lost_nodes,
    release_node,
    renew_node,
)
from wattlog.accounting.ledger.reader import find_run
from wattlog.accounting.ledger.store import Ledger
from wattlog.errors import LedgerError
from wattlog.events import EventCategory, EventKind
from wattlog.gap_reasons import GapReason

log = logging.getLogger(__name__)

LEASE_S = 60.0
"""The shortest lease: a run is lost no sooner than a minute after its agent's last flush."""
LEASE_FLUSHES = 3
"""A lease covers this many flush intervals, so one slow or failed flush does not lose the run."""
LOST_REASON = GapReason.AGENT_DOWN.recorded(
    "the run's lease expired with no flush (killed, or its node lost)"
)


def lease_for(flush_s: float) -> float:
    """Seconds each renewal holds for an agent flushing every `flush_s`: three flushes, at least LEASE_S."""
    return max(LEASE_S, LEASE_FLUSHES * flush_s)


def renew_lease(ledger: Ledger, run: int | str, lease_s: float, node: NodeHolder | None = None) -> None:
    """Hold `run`'s lease until now + `lease_s` (never shortened; nothing once the run has ended).

    A run reaped as lost while its agent was only cut off from the ledger (its rows spooled) is
    running again: the reaper's gaps and `lost` event are withdrawn, since its rows will fill them.
    With `node`, that node's own lease is renewed too (a node of a multi-node job).

    Raises:
        RunNotFound: No such run.
        LedgerError: The database fails.
    """
    now_s = ledger.clock.wall()
    until_s = now_s + lease_s
    with ledger.transaction(f"renew the lease of run {run!r}") as session:
        row = find_run(session, run)
        if row.status == Status.LOST.value:
            _revive(session, row)
        if row.status == Status.RUNNING.value and (row.lease_until_s is None or row.lease_until_s < until_s):
            row.lease_until_s = until_s
        if node is not None and row.status == Status.RUNNING.value:
            renew_node(session, row, node, until_s, now_s)


def release_lease(ledger: Ledger, run: int | str, node: NodeHolder) -> bool:
    """A node's agent closed cleanly: its node lease ends without a gap; the last node's ends the run.

    Returns:
        Whether the run is now ``finished`` (every node of its job ended cleanly).

    Raises:
        RunNotFound: No such run.
        LedgerError: The database fails.
    """
    now_s = ledger.clock.wall()
    with ledger.transaction(f"release node {node.job.host!r} of run {run!r}") as session:
        return release_node(session, find_run(session, run), node, now_s)


def _revive(session: Session, row: Run) -> None:
    """Undo a reap: the run's agent is alive after all."""
    run_id = cast(int, row.id)
    row.status = Status.RUNNING.value
    row.end_s = None
    session.execute(
        delete(GapRecord).where(col(GapRecord.run_id) == run_id, col(GapRecord.reason) == LOST_REASON)
    )
    session.execute(delete(Event).where(col(Event.run_id) == run_id, col(Event.kind) == EventKind.LOST.value))
    log.warning("run %r was closed as lost but its agent renewed its lease: running again", row.name)


@dataclass(frozen=True, slots=True)
class LostRun:
    """A run closed as lost.

    Attributes:
        name: The run.
        lease_until_s: When its lease ended: the run's end, and the end of its gaps (Unix seconds).
        last_row_s: The end of its last energy row (None: it had none).
        gaps: Gap rows recorded (one per device, from its last row to the lease's end).
    """

    name: str
    lease_until_s: float
    last_row_s: float | None
    gaps: int


def reap_lost_runs(ledger: Ledger) -> list[LostRun]:
    """Close every running run whose lease has expired as ``lost``; safe when several readers reap at once.

    Nodes whose own lease expired are marked lost first (:func:`reap_lost`, each one a warning).

    Returns:
        The runs closed now (empty when none).

    Raises:
        LedgerError: The database fails.
    """
    nodes, runs = reap_lost(ledger)
    for node in nodes:
        log.warning("%s", describe_lost_node(node))
    return runs


def reap_lost(ledger: Ledger) -> tuple[list[LostNode], list[LostRun]]:
    """Mark the nodes whose lease expired lost, then close the runs whose lease expired.

    Raises:
        LedgerError: The database fails.
    """
    now_s = ledger.clock.wall()
    with ledger.transaction("find nodes whose lease expired") as session:
        nodes = reap_lost_nodes(session, now_s)
    with ledger.transaction("find runs whose lease expired") as session:
        due = session.execute(
            select(col(Run.id)).where(
                col(Run.status) == Status.RUNNING.value,
                col(Run.lease_until_s).is_not(None),
                col(Run.lease_until_s) < now_s,
            )
        ).all()
    lost = []
    for (run_id,) in due:
        with ledger.transaction(f"close run {run_id} as lost") as session:
            closed = _close_lost(session, cast(int, run_id), now_s)
        if closed is not None:
            lost.append(closed)
    return nodes, lost


def _close_lost(session: Session, run_id: int, now_s: float) -> LostRun | None:
    """Close one run as lost, unless another reader (or a late flush) got there first."""
    run = session.get(Run, run_id)
    if run is None or run.lease_until_s is None:
        return None
    lease_s = run.lease_until_s
    if _ended_by_its_nodes(session, run):
        return None
    # the conditional update is the claim: of two readers reaping at once, one changes the row
    claimed = session.execute(
        update(Run)
        .where(col(Run.id) == run_id, col(Run.status) == Status.RUNNING.value, col(Run.lease_until_s) < now_s)
        .values(status=Status.LOST.value, end_s=lease_s)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        return None
    last_rows = session.execute(
        select(col(EnergyRecord.host), col(EnergyRecord.device), func.max(col(EnergyRecord.end_s)))
        .where(col(EnergyRecord.run_id) == run_id)
        .group_by(col(EnergyRecord.host), col(EnergyRecord.device))
    ).all()
    settled = lost_hosts(session, run_id)  # lost nodes have their gap already; nodes gone cleanly need none
    close_node_gaps(session, run_id, lease_s)
    gaps = [
        GapRecord(run_id=run_id, host=host, device=device, start_s=end_s, end_s=lease_s, reason=LOST_REASON)
        for host, device, end_s in last_rows
        if end_s < lease_s and host not in settled
    ]
    if not last_rows:  # nothing was ever flushed: the whole run is the gap
        gaps.append(
            GapRecord(
                run_id=run_id,
                host=run.host,
                device="",
                start_s=run.start_s,
                end_s=lease_s,
                reason=LOST_REASON,
            )
        )
    session.add_all(gaps)
    last_row_s = max((end_s for _, _, end_s in last_rows), default=None)
    session.add(
        Event(
            run_id=run_id,
            time_s=lease_s,
            kind=EventKind.LOST,
            category=EventCategory.DOWNTIME,
            payload={"lease_until_s": lease_s, "last_row_s": last_row_s, "gaps": len(gaps)},
        )
    )
    return LostRun(run.name, lease_s, last_row_s, len(gaps))


def _ended_by_its_nodes(session: Session, run: Run) -> bool:
    """A run whose every joined node's agent ended cleanly is ``finished``, never ``lost``.

    Two last nodes releasing at once may each see the other still live, and a node of the
    job may never have joined: the reaper ends such a run, naming the nodes that never joined.
    """
    run_id = cast(int, run.id)
    if every_node_left(session, run_id, joined_all=False) is not True:
        return False
    missing = missing_nodes(session, run_id)
    ended = end_if_every_node_left(session, run, run.lease_until_s or 0.0, joined_all=False)
    if ended and missing:
        log.warning("run %r finished incomplete: %s", run.name, ", ".join(missing))
    return ended


def reap_before_reading(ledger: Ledger) -> list[LostRun]:
    """What a reader calls first: :func:`reap_lost_runs`, each closed run one warning; a ledger that
    cannot be written (read-only) is one warning too, and the reader goes on with what is stored."""
    try:
        lost = reap_lost_runs(ledger)
    except LedgerError as error:
        log.warning("runs whose agent stopped renewing their lease stay running: %s", error)
        return []
    for run in lost:
        log.warning("%s", describe_lost(run))
    return lost


def describe_lost(run: LostRun) -> str:
    """One line naming a lost run, when its lease ended and the gap recorded."""
    since = (
        "no row stored"
        if run.last_row_s is None
        else f"{run.lease_until_s - run.last_row_s:.1f} s after its last row"
    )
    return (
        f"run {run.name!r} closed as lost: its agent stopped renewing its lease ({since}; recorded as a gap)"
    )
