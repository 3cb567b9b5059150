"""Fault: events written while the ledger is down were lost.

On the old code a checkpoint recorded during an outage was gone (a restart
then redid work it need not have, and overstated lost work), and so was the
`stopped` event of a run the ledger could not reach at its end. Events now
go to the run's spool beside its energy rows and are replayed once.
"""

from __future__ import annotations

from pathlib import Path

from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool, replay_folder
from wattlog.errors import LedgerError
from wattlog.events import EventCategory, EventKind
from wattlog.trainer.recorder import RunRecorder


class Down(Ledger):
    """The ledger while its database is unreachable."""

    def record_event(self, run, kind, **kwargs):  # type: ignore[no-untyped-def]
        raise LedgerError("could not record event, nothing was written: connection refused")


def test_events_during_an_outage_are_spooled_and_replayed_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("r").id
    assert run is not None
    recorder = RunRecorder(Down(ledger.engine), "r")
    recorder.run_id = run
    recorder.spool = Spool(tmp_path / "spool", describe_url(url), run)
    recorder.event(EventKind.CHECKPOINT, step=500, category=EventCategory.NONE, payload={"path": "c.pt"})
    recorder.event(EventKind.STOPPED, payload={"signal": "SIGTERM", "exit_code": 143}, time_s=1234.5)
    recorder.spool.close()  # the process ends with the ledger still down: the file stays
    assert ledger.events(run) == []
    kept = recorder.spool.path.read_bytes()
    for _ in range(2):  # `wattlog replay`, then the same file again (a replay interrupted after its commit)
        recorder.spool.path.write_bytes(kept)
        assert replay_folder(ledger, tmp_path / "spool", describe_url(url)).files == 1
    events = ledger.events(run)
    assert sorted((e.kind, e.step or 0) for e in events) == [("checkpoint", 500), ("stopped", 0)]
    assert {e.kind: e.payload for e in events}["checkpoint"] == {"path": "c.pt"}
