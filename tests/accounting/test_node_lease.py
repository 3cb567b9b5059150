"""Per-node leases: a dead node of a live run is a gap on that node; one host name on two machines is said."""

from __future__ import annotations

from pathlib import Path

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.jobs import job_nodes, join_run
from wattlog.accounting.ledger.lease import reap_lost, renew_lease
from wattlog.accounting.ledger.node_lease import NODE_LOST_REASON, NodeHolder, machine_id
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.clock import FakeClock
from wattlog.events import EventKind
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.job import JobIdentity

LEASE_S = 5.0


def _ledger(tmp_path: Path) -> tuple[Ledger, FakeClock]:
    clock = FakeClock()
    return Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=clock), clock


def _holder(host: str, index: int, machine: str = "m-1", agent: str = "") -> NodeHolder:
    job = JobIdentity(host, job_id="9", node_count=3, node_index=index)
    return NodeHolder(job, True, machine, agent or f"999999999-{host}")


def _flush(ledger: Ledger, clock: FakeClock, holder: NodeHolder, seconds: float = 1.0) -> None:
    """One second of 100 W on the node's GPU, and its lease renewed (what a node agent's flush does)."""
    end_s = clock.wall()
    row = EnergyInterval.of(
        holder.job.host,
        "GPU-0",
        Kind.GPU,
        Source.SIMULATED,
        end_s - seconds,
        end_s,
        100.0 * seconds,
        100.0 * seconds,
        100.0 * seconds,
    )
    ledger.record_intervals("job", [row])
    renew_lease(ledger, "job", LEASE_S, holder)


def _start(ledger: Ledger, clock: FakeClock, holders: list[NodeHolder]) -> None:
    for holder in holders:
        join_run(ledger, "job", holder.job, site="jupiter", machine_id=holder.machine_id)
        renew_lease(ledger, "job", LEASE_S, holder)
    for _ in range(3):
        clock.advance(1.0)
        for holder in holders:
            _flush(ledger, clock, holder)


def test_a_dead_node_is_a_gap_on_it_until_it_restarts_and_the_table_names_it(tmp_path: Path) -> None:
    ledger, clock = _ledger(tmp_path)
    n1, n2, n3 = _holder("n1", 0), _holder("n2", 1), _holder("n3", 2)
    _start(ledger, clock, [n1, n2, n3])
    died_s = clock.wall()  # n2 and n3 die here: n1 goes on flushing
    for _ in range(8):
        clock.advance(1.0)
        _flush(ledger, clock, n1)
    nodes, runs = reap_lost(ledger)
    assert {node.host for node in nodes} == {"n2", "n3"} and runs == []  # old code: no gap, no event
    assert ledger.get_run("job").status == "running"
    clock.advance(2.0)
    back_s = clock.wall()
    n3_again = _holder("n3", 2, agent="999999998-n3")  # a new agent on n3: a restart
    join_run(ledger, "job", n3_again.job, machine_id=n3_again.machine_id)
    renew_lease(ledger, "job", LEASE_S, n3_again)
    clock.advance(1.0)
    _flush(ledger, clock, n3_again)
    _flush(ledger, clock, n1)
    clock.advance(3.0)
    ledger.end_run("job")
    end_s = clock.wall()

    run = ledger.get_run("job")
    assert run.restarts == 1
    gaps = {g.host: g for g in ledger.gaps("job") if g.reason == NODE_LOST_REASON}
    assert (gaps["n2"].start_s, gaps["n2"].end_s) == (died_s, end_s)  # not back: to the run's end
    assert (gaps["n3"].start_s, gaps["n3"].end_s) == (died_s, back_s)  # to its restart
    kinds = [(e.kind, e.payload.get("host")) for e in ledger.events("job")]
    assert kinds.count((EventKind.NODE_LOST, "n2")) == 1 and (EventKind.RESTART, "n3") in kinds
    assert reap_lost(ledger) == ([], [])  # once
    note = job_nodes(ledger, "job").describe(["n1", "n2", "n3"])
    assert note.startswith("1 of 3 nodes measured throughout; n2 lost "), note
    assert ", not back; n3 lost " in note and note.endswith(", restarted"), note
    row = run_row(ledger, ledger.get_run("job"), TableOptions(site_catalog()))
    assert any("measured throughout" in n for n in row.notes), row.notes


def test_a_node_cut_off_from_the_ledger_is_revived_by_its_own_agent_and_a_clean_end_is_no_gap(
    tmp_path: Path,
) -> None:
    ledger, clock = _ledger(tmp_path)
    n1, n2, n3 = _holder("n1", 0), _holder("n2", 1), _holder("n3", 2)
    _start(ledger, clock, [n1, n2, n3])
    with ledger.transaction("n3 ends cleanly") as session:
        from wattlog.accounting.ledger.node_lease import release_node
        from wattlog.accounting.ledger.reader import find_run

        release_node(session, find_run(session, "job"), n3)
    for _ in range(8):
        clock.advance(1.0)
        _flush(ledger, clock, n1)
    nodes, _ = reap_lost(ledger)
    assert [node.host for node in nodes] == ["n2"]  # n3 left cleanly: never reaped
    _flush(ledger, clock, n2)  # the same agent: it was only cut off, its spool fills the gap
    assert not [g for g in ledger.gaps("job") if g.reason == NODE_LOST_REASON]
    assert ledger.get_run("job").restarts == 0
    assert not [e for e in ledger.events("job") if e.kind == EventKind.NODE_LOST]


def test_a_node_killed_and_restarted_before_its_lease_ran_out_is_one_restart(tmp_path: Path) -> None:
    ledger, clock = _ledger(tmp_path)
    n1 = _holder("n1", 0, agent="999999997-x")  # pid 999999997 does not exist: its agent is dead
    _start(ledger, clock, [n1])
    last_s = clock.wall()
    clock.advance(2.0)
    again = _holder("n1", 0, agent="999999996-y")
    renew_lease(ledger, "job", LEASE_S, again)
    assert ledger.get_run("job").restarts == 1
    [gap] = [g for g in ledger.gaps("job") if g.host == "n1"]
    assert (gap.start_s, gap.end_s) == (last_s, clock.wall())


def test_one_host_name_on_two_machines_is_said_once(tmp_path: Path) -> None:
    ledger, clock = _ledger(tmp_path)
    a = _holder("gpu01", 0, machine="machine-a", agent="1-a")
    b = _holder("gpu01", 0, machine="machine-b", agent="1-b")
    _start(ledger, clock, [a, b])  # both flush under one host name, as `--host gpu01` on two nodes
    collisions = [e for e in ledger.events("job") if e.kind == EventKind.HOST_COLLISION]
    assert len(collisions) == 1 and collisions[0].payload["machines"] == ["machine-a", "machine-b"]
    row = run_row(ledger, ledger.get_run("job"), TableOptions(site_catalog()))
    assert any("host gpu01 reported by two machines" in n for n in row.notes), row.notes  # old: "1 of 1"
    same = _holder("gpu02", 1, machine="machine-a", agent=f"{__import__('os').getpid()}-c")
    other = _holder("gpu02", 1, machine="machine-a", agent="1-d")  # pid 1 lives: two agents, one machine
    renew_lease(ledger, "job", LEASE_S, same)
    renew_lease(ledger, "job", LEASE_S, other)
    note = job_nodes(ledger, "job").describe(["gpu01", "gpu02"])
    assert "host gpu02 reported by two agents on one machine" in note


def test_the_machine_id_is_read_from_the_machine_else_a_stable_fallback(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "machine-id").write_text("0123abcd\n")
    assert machine_id(tmp_path) == "0123abcd"
    empty = tmp_path / "bare"
    empty.mkdir()
    assert machine_id(empty) == machine_id(empty) and machine_id(empty).startswith("h-")
    assert machine_id() != ""
    assert RunSpec  # the ledger's public names stay importable beside the node lease
