"""Where a received alert is recorded, and what it says there: its run or its host's runs; stale or not.

- An alert goes to the run its `run` label names when the ledger has it. Otherwise (no `run`
  label, a host's or a scrape's alert, or a run recorded elsewhere) it goes to the ledger's runs
  on its host at its time (started by then, not ended before), else to the last run started on
  that host before it; never to a run made up for it (a phantom `host:vm` run read "running").
- A condition seen after its run stopped measuring is stale, not resolved nor newly firing: a
  killed run's budget alert "resolved" while 12x over budget, a lost GPU "resolved" though it
  never came back, a sampler alert fired minutes after the run had finished. Stopped means ended
  in the ledger before the alert's time, or no energy row for :data:`QUIET_S` before it (a killed
  agent's run reads running until reaped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wattlog.accounting.ledger import Ledger

STALE = "stale"
QUIET_S = 60.0
"""An agent writes a row every flush (10 s by default): a minute without one is an agent that stopped."""


def host_runs(ledger: Ledger, host: str, t_s: float) -> list[str]:
    """The ledger's runs on `host` at `t_s`, else the last one started there before it ([]: none)."""
    started = [r for r in ledger.runs() if r.host == host and r.start_s <= t_s]
    live = [r.name for r in started if r.end_s is None or t_s <= r.end_s]
    if live:
        return live
    last = max(started, key=lambda r: r.start_s, default=None)
    return [] if last is None else [last.name]


def status_in(ledger: Ledger, run: str, status: str, t_s: float) -> str:
    """`status` (firing or resolved) as recorded in `run`: :data:`STALE` when it had stopped measuring."""
    info = ledger.find_run(run)
    if info is None:
        return status
    if info.end_s is not None and t_s > info.end_s:
        return STALE
    with ledger.reading(run) as reader:
        span = reader.span()
    return STALE if span is not None and t_s > span[1] + QUIET_S else status
