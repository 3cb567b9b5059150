"""Per-node liveness: each node of a job holds its own lease, so a dead node is a gap on that node.

The run's lease (:mod:`wattlog.accounting.ledger.lease`) ends a run none of whose
agents writes any more. With 64 nodes, one node killed -9 leaves the run alive on
the other 63: without a lease per node its energy after its last flush was missing
with no gap, the table said "64 of 64 nodes measured" and nobody counted a restart.
Each flush of a node's agent renews its node's lease (:func:`renew_node`); once it
has run out while the run goes on, the next reader or `wattlog runs reap` marks the
node ``lost`` with a gap per device from its last row (:func:`reap_lost_nodes`). The
gap lasts until the node comes back (a new agent: a restart, counted with the run's
restarts) or until the run ends. A node whose agent was only cut off from the ledger
(the same agent renews again) is revived and its gap withdrawn: its spool fills it.

The machine id (:func:`machine_id`) is stored beside the host name: two machines, or
two agents of one machine, holding one node's lease at once are said once, as a
``host_collision`` event and a table note, instead of summed silently as one node.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.models import EnergyRecord, Event, GapRecord, JobNode, Run, Status
from wattlog.events import EventCategory, EventKind
from wattlog.gap_reasons import GapReason
from wattlog.telemetry.job import JobIdentity

log = logging.getLogger(__name__)

NODE_LOST_REASON = GapReason.AGENT_DOWN.recorded(
    "the node's lease expired with no flush (its agent killed, or the node lost)"
)
LIVE, LOST, LEFT = "live", "lost", "left"
_MACHINE_ID_FILES = ("etc/machine-id", "var/lib/dbus/machine-id")


def machine_id(root: Path = Path("/")) -> str:
    """This machine's id: systemd's /etc/machine-id (or D-Bus's), else a stable hash of host and MAC.

    The fallback is stable across processes of one machine (what tells two jobs on one node
    apart from two nodes under one name), though not across a change of network card.
    """
    for name in _MACHINE_ID_FILES:
        try:
            text = (root / name).read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            continue
        if text:
            return text[:64]
    seed = f"{socket.gethostname()}|{uuid.getnode():012x}".encode()
    return "h-" + hashlib.sha256(seed).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class NodeHolder:
    """The agent holding a node's lease: the node's place in its job, its machine and its process.

    Attributes:
        job: The node's place in its job (its host names the node's row).
        measured: Whether the node measures energy.
        machine_id: The machine's id (:func:`machine_id`).
        agent_id: Unique per agent process (a new one after a restart): "<pid>-<random>".
    """

    job: JobIdentity
    measured: bool = True
    machine_id: str = ""
    agent_id: str = ""

    @classmethod
    def for_agent(cls, job: JobIdentity, measured: bool, machine: str | None = None) -> NodeHolder:
        """A holder for a new agent process (a fresh agent id; the machine's id unless given)."""
        agent = f"{os.getpid()}-{uuid.uuid4().hex[:16]}"
        return cls(job, measured, machine if machine is not None else machine_id(), agent)

    def sees_dead(self, other: NodeHolder | JobNode) -> bool:
        """Whether `other` is an agent of this machine whose process is gone (a restart, not a 2nd agent)."""
        if other.machine_id != self.machine_id or other.agent_id == self.agent_id:
            return False
        pid = other.agent_id.partition("-")[0]
        if not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except OSError:  # another user's live process
            return False
        return False


@dataclass(frozen=True, slots=True)
class LostNode:
    """A node marked lost: its run, host, its last row's end and its lease's end (Unix seconds)."""

    run: str
    host: str
    last_row_s: float | None
    lease_until_s: float


def renew_node(session: Session, run: Run, holder: NodeHolder, until_s: float, now_s: float) -> None:
    """Hold `holder`'s node lease until `until_s` inside an open transaction (the row made if missing).

    A lost node that renews is back: with the same agent it was only cut off (the gap and
    event are withdrawn, its spool fills them); with a new agent it restarted (the gap ends
    now, one restart counted). Another live agent holding the lease is a host collision.
    """
    run_id = cast(int, run.id)
    host = holder.job.host
    row = session.get(JobNode, (run_id, host))
    if row is None:  # a node that started while the ledger was unreachable joins with its first flush
        row = JobNode(
            run_id=run_id,
            host=host,
            node_index=holder.job.node_index,
            node_count=holder.job.node_count,
            job_id=holder.job.job_id or "",
            measured=holder.measured,
            joined_s=now_s,
        )
        session.add(row)
    elif row.state == LOST:
        _back(session, run, row, holder, now_s)
    elif row.state == LIVE and holder.sees_dead(row):  # killed and restarted before its lease ran out
        for device, end_s in _last_rows(session, run_id, host):
            session.add(_gap(run_id, host, device, end_s, now_s))
        _restart(session, run, host, now_s)
    elif _collides(row, holder, now_s):
        _record_collision(session, run, row, holder, now_s)
    row.lease_until_s = max(until_s, row.lease_until_s or 0.0) if row.agent_id == holder.agent_id else until_s
    row.state, row.machine_id, row.agent_id = LIVE, holder.machine_id, holder.agent_id


def release_node(session: Session, run: Run, holder: NodeHolder, now_s: float | None = None) -> bool:
    """A node's agent closed cleanly: its lease ends with no gap (never reaped).

    Returns:
        Whether this was the job's last node, so the run is now ``finished`` (end_if_every_node_left).
    """
    session.execute(
        update(JobNode)
        .where(
            col(JobNode.run_id) == cast(int, run.id),
            col(JobNode.host) == holder.job.host,
            col(JobNode.agent_id) == holder.agent_id,
        )
        .values(state=LEFT, lease_until_s=None)
    )
    return end_if_every_node_left(session, run, now_s if now_s is not None else run.lease_until_s or 0.0)


def every_node_left(session: Session, run_id: int, *, joined_all: bool = True) -> bool | None:
    """Whether every measuring node of the run ended cleanly (None: the run has no measuring node).

    Nodes sampled out hold no lease and end nothing: they are not waited for. A node of the
    job that never joined is (the run waits for it, and a reaper names it).
    """
    rows = session.execute(
        select(col(JobNode.measured), col(JobNode.state), col(JobNode.node_count)).where(
            col(JobNode.run_id) == run_id
        )
    ).all()
    measuring = [state for measured, state, _ in rows if measured]
    if not measuring:
        return None
    if joined_all and len(rows) < max(count for _, _, count in rows):
        return False
    return all(state == LEFT for state in measuring)


def missing_nodes(session: Session, run_id: int) -> list[str]:
    """The job's nodes that have not ended cleanly: hosts still live or lost, and node places never joined."""
    rows = session.execute(select(JobNode).where(col(JobNode.run_id) == run_id)).scalars().all()
    count = max((row.node_count for row in rows), default=0)
    joined = {row.node_index for row in rows}
    missing = [row.host for row in rows if row.measured and row.state != LEFT]
    return missing + [f"node {i + 1} of {count} (never joined)" for i in range(count) if i not in joined]


def end_if_every_node_left(session: Session, run: Run, end_s: float, *, joined_all: bool = True) -> bool:
    """Close the run ``finished`` once every node's agent ended cleanly (a job of node agents only).

    Before this a run measured only by `wattlog node` agents that all exited 0 stayed
    ``running`` until a reader closed it ``lost`` and NOT VALID. The run ends when its last
    node ends (not earlier than its last lease renewal's start), claimed by a conditional update.
    """
    if run.status != Status.RUNNING.value or not every_node_left(
        session, cast(int, run.id), joined_all=joined_all
    ):
        return False
    last_s = session.execute(
        select(func.max(col(EnergyRecord.end_s))).where(col(EnergyRecord.run_id) == cast(int, run.id))
    ).scalar()
    claimed = session.execute(
        update(Run)
        .where(col(Run.id) == cast(int, run.id), col(Run.status) == Status.RUNNING.value)
        .values(status=Status.FINISHED.value, end_s=float(last_s) if last_s is not None else end_s)
    )
    ended = bool(claimed.rowcount == 1)  # type: ignore[attr-defined]
    if ended:
        log.info("run %r finished: every node's agent ended", run.name)
    return ended


def reap_lost_nodes(session: Session, now_s: float) -> list[LostNode]:
    """Mark every live node of a running run whose lease expired as lost, with a gap per device."""
    due = session.execute(
        select(JobNode, Run)
        .join(Run, col(Run.id) == col(JobNode.run_id))
        .where(
            col(Run.status) == Status.RUNNING.value,
            col(JobNode.state) == LIVE,
            col(JobNode.lease_until_s).is_not(None),
            col(JobNode.lease_until_s) < now_s,
        )
    ).all()
    lost = []
    for node, run in due:
        lease_s = cast(float, node.lease_until_s)
        # the conditional update is the claim: of two readers reaping at once, one changes the row
        claimed = session.execute(
            update(JobNode)
            .where(
                col(JobNode.run_id) == node.run_id,
                col(JobNode.host) == node.host,
                col(JobNode.state) == LIVE,
                col(JobNode.lease_until_s) == lease_s,
            )
            .values(state=LOST)
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            continue
        last = _last_rows(session, node.run_id, node.host)
        for device, end_s in last or [("", node.joined_s)]:
            if end_s < lease_s:
                session.add(_gap(node.run_id, node.host, device, end_s, lease_s))
        last_row_s = max((end_s for _, end_s in last), default=None)
        payload = {"host": node.host, "last_row_s": last_row_s, "lease_until_s": lease_s}
        session.add(_event(node.run_id, lease_s, EventKind.NODE_LOST, payload))
        lost.append(LostNode(run.name, node.host, last_row_s, lease_s))
    return lost


def lost_hosts(session: Session, run_id: int) -> set[str]:
    """Hosts of the run marked lost or gone cleanly: the run's own reaping leaves their gaps alone."""
    query = select(col(JobNode.host), col(JobNode.state)).where(col(JobNode.run_id) == run_id)
    return {host for host, state in session.execute(query).all() if state in (LOST, LEFT)}


def close_node_gaps(session: Session, run_id: int, end_s: float) -> None:
    """The run ended: the gaps of its nodes still lost last to its end."""
    hosts = select(col(JobNode.host)).where(col(JobNode.run_id) == run_id, col(JobNode.state) == LOST)
    session.execute(
        update(GapRecord)
        .where(
            col(GapRecord.run_id) == run_id,
            col(GapRecord.reason) == NODE_LOST_REASON,
            col(GapRecord.host).in_(hosts),
            col(GapRecord.end_s) < end_s,
        )
        .values(end_s=end_s)
    )


def describe_lost_node(node: LostNode) -> str:
    """One line naming a lost node, and the gap recorded."""
    since = "no row stored" if node.last_row_s is None else f"{node.lease_until_s - node.last_row_s:.1f} s"
    return (
        f"node {node.host!r} of run {node.run!r} lost: its agent stopped renewing its lease ({since} "
        "after its last row); a gap on that node until it comes back"
    )


def _back(session: Session, run: Run, row: JobNode, holder: NodeHolder, now_s: float) -> None:
    """A lost node renews: withdraw its gap (the same agent, cut off) or end it now (a restart)."""
    gaps = (
        col(GapRecord.run_id) == row.run_id,
        col(GapRecord.host) == row.host,
        col(GapRecord.reason) == NODE_LOST_REASON,
    )
    if row.agent_id == holder.agent_id:
        session.execute(delete(GapRecord).where(*gaps))
        session.execute(
            delete(Event).where(
                col(Event.run_id) == row.run_id,
                col(Event.kind) == EventKind.NODE_LOST.value,
                col(Event.time_s) == row.lease_until_s,
            )
        )
        log.warning("node %r of run %r was marked lost but its agent renewed its lease", row.host, run.name)
        return
    session.execute(update(GapRecord).where(*gaps, col(GapRecord.end_s) < now_s).values(end_s=now_s))
    _restart(session, run, row.host, now_s)


def _restart(session: Session, run: Run, host: str, now_s: float) -> None:
    """A new agent on a node whose last one died: one more restart of the run, its event naming the node."""
    run.restarts += 1
    payload = {"restarts": run.restarts, "host": host}
    session.add(_event(cast(int, run.id), now_s, EventKind.RESTART, payload))
    log.warning("node %r of run %r is back after its agent died: restart %d", host, run.name, run.restarts)


def _collides(row: JobNode, holder: NodeHolder, now_s: float) -> bool:
    """Whether another agent holds this node's live lease (two machines, or two agents, one name)."""
    return (
        row.state == LIVE
        and bool(row.agent_id)
        and row.agent_id != holder.agent_id
        and (row.lease_until_s or 0.0) >= now_s
    )


def _record_collision(session: Session, run: Run, row: JobNode, holder: NodeHolder, now_s: float) -> None:
    """One ``host_collision`` event per host and pair of machines, and one warning."""
    machines = sorted({row.machine_id, holder.machine_id})
    payload = {"host": row.host, "machines": machines}
    known = session.execute(
        select(col(Event.payload)).where(
            col(Event.run_id) == row.run_id, col(Event.kind) == EventKind.HOST_COLLISION.value
        )
    ).scalars()
    if any(p.get("host") == row.host and p.get("machines") == machines for p in known):
        return
    session.add(_event(row.run_id, now_s, EventKind.HOST_COLLISION, payload))
    log.warning("%s (run %r)", describe_collision(payload), run.name)


def describe_collision(payload: Mapping[str, Any]) -> str:
    """One line: the host reported by two machines, or by two agents of one machine."""
    machines = payload.get("machines")
    host = payload.get("host")
    if isinstance(machines, list) and len(machines) > 1:
        ids = " and ".join(str(m)[:12] for m in machines)
        return f"host {host} reported by two machines ({ids}): their energy is summed under one name"
    return f"host {host} reported by two agents on one machine: its energy may be counted twice"


def _last_rows(session: Session, run_id: int, host: str) -> list[tuple[str, float]]:
    query = (
        select(col(EnergyRecord.device), func.max(col(EnergyRecord.end_s)))
        .where(col(EnergyRecord.run_id) == run_id, col(EnergyRecord.host) == host)
        .group_by(col(EnergyRecord.device))
    )
    return [(device, float(end_s)) for device, end_s in session.execute(query).all()]


def _gap(run_id: int, host: str, device: str, start_s: float, end_s: float) -> GapRecord:
    return GapRecord(
        run_id=run_id, host=host, device=device, start_s=start_s, end_s=end_s, reason=NODE_LOST_REASON
    )


def _event(run_id: int, time_s: float, kind: EventKind, payload: Mapping[str, Any]) -> Event:
    return Event(
        run_id=run_id, time_s=time_s, kind=kind, category=EventCategory.DOWNTIME, payload=dict(payload)
    )
