"""The soak's verdict: the ledger against what the agents measured, each fault's trace, `wattlog check`.

Printed: the faults survived by kind; for each "bmc slow" the stored gap of that node's BMC
device over its stretch; for "provider slow" how long the first node's fetch at close took
against its budget; the joules measured by the agents, stored in the ledger, and lost (the
node meters read over Redfish apart); the agents' and `wattlog check`'s exit codes. Exit 1
when any joule is lost, a device measured has no row, a fault left the wrong trace, or the
check is not clean.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from wattlog.accounting.carbon.intensity.live.at_close import CLOSE_BUDGET_S

if TYPE_CHECKING:
    from bench.soak_services import IntensityProvider
    from wattlog.accounting.ledger.views import GapInfo

_CLOSE = re.compile(r"^soak: the fetch at close took (\S+) s: (.*)$", re.MULTILINE)
CLOSE_SLACK_S = 1.0
"""What the fetch at close may take past its budget (the last request's own cut-off, the log line)."""


@dataclass(frozen=True)
class BmcStretch:
    """A stretch (wall clock, seconds) in which `host`'s BMC answered past the read deadline."""

    host: str
    start_s: float
    end_s: float


@dataclass
class Faults:
    """The faults drawn, in order, and what the report checks them against."""

    provider: IntensityProvider
    kinds: list[str] = field(default_factory=list)
    stretches: list[BmcStretch] = field(default_factory=list)


class Measured(Protocol):
    """An agent as the report reads it (bench.soak.Node)."""

    host: str
    log: Path
    counters: dict[str, float]

    @property
    def exit_code(self) -> int | None:
        """The agent's exit code (None: still running)."""
        ...


def _bmc_gaps(gaps: list[GapInfo], faults: Faults) -> list[str]:
    """One line per slow-BMC stretch: its BMC device's stored gap over it, and no other device's.

    A failure (FAIL in the line): no gap of the BMC device over the stretch (the stretch filled
    in), or a gap of another device of that node over it (the slow BMC held their sampling).
    """
    lines = []
    for stretch in faults.stretches:
        over = [
            g
            for g in gaps
            if g.host == stretch.host and g.start_s < stretch.end_s and g.end_s > stretch.start_s
        ]
        bmc = [g for g in over if "redfish" in g.device]
        others = sorted({g.device for g in over if "redfish" not in g.device})
        if bmc:
            spans = ", ".join(f"{g.end_s - g.start_s:.1f} s ({g.reason})" for g in bmc)
            line = f"  bmc slow on {stretch.host}: stored gap of its BMC device {spans}"
        else:
            line = f"  bmc slow on {stretch.host}: FAIL no gap of its BMC device stored over the stretch"
        held = f"; FAIL gaps of its other devices over it: {', '.join(others)}" if others else ""
        lines.append(line + (held or "; its other devices sampled throughout (no gap)"))
    return lines


def _close_fetch(nodes: Sequence[Measured], faults: Faults) -> list[str]:
    """The first node's fetch at close: how long it took against its budget (a failure if past it)."""
    found = _CLOSE.findall(nodes[0].log.read_text(errors="replace")) if nodes[0].log.exists() else []
    slow = "provider slow" in faults.kinds
    if not found:
        return [f"  fetch at close ({nodes[0].host}): FAIL no line (did the run's close fetch at all?)"]
    took_s, line = float(found[-1][0]), found[-1][1]
    within = took_s <= CLOSE_BUDGET_S + CLOSE_SLACK_S
    verdict = "within" if within else "FAIL past"
    who = "provider slow" if slow else "provider answering"
    return [f"  {who}: fetch at close took {took_s:.1f} s, {verdict} its {CLOSE_BUDGET_S:g} s budget; {line}"]


def wattlog_check(url: str) -> int:
    """`wattlog check`'s exit code on the ledger at `url` (its lines printed)."""
    return subprocess.run([sys.executable, "-m", "wattlog", "check", "--db", url], check=False).returncode


def report(
    url: str, nodes: Sequence[Measured], faults: Faults, check: Callable[[str], int] = wattlog_check
) -> int:
    """Compare the ledger with what the agents measured; run `check`; print the figures; 0 is the pass."""
    from wattlog.accounting.ledger import Ledger, make_engine

    ledger = Ledger(make_engine(url))
    stored = {(t.host, t.device): t.energy_j for t in ledger.energy_totals("soak")}
    measured = {(n.host, d): j for n in nodes for d, j in n.counters.items()}
    trace = _bmc_gaps(ledger.gaps("soak"), faults) + _close_fetch(nodes, faults)
    missing = [f"{h} {d}" for h, d in measured if (h, d) not in stored]
    measured_j, stored_j = sum(measured.values()), sum(stored.get(k, 0.0) for k in measured)
    worst_mj = max((abs(measured[k] - stored.get(k, 0.0)) * 1e3 for k in measured), default=0.0)
    bmc = [k for k in measured if "redfish" in k[1]]
    checked = check(url)
    by_kind = ", ".join(f"{kind} {n}" for kind, n in sorted(Counter(faults.kinds).items())) or "none"
    print(f"faults injected and survived: {len(faults.kinds)} ({by_kind})")
    print("\n".join(trace))
    print(f"joules measured by the agents: {measured_j:.3f} J over {len(measured)} devices")
    print(f"joules stored in the ledger:   {stored_j:.3f} J")
    lost_j = round(measured_j - stored_j, 3) + 0.0  # + 0.0: never "-0.000" (stored beyond measured shows < 0)
    print(f"joules lost: {lost_j:.3f} J (worst device {worst_mj:.3f} mJ)")
    bmc_m, bmc_s = sum(measured[k] for k in bmc), sum(stored.get(k, 0.0) for k in bmc)
    print(f"  of which node meters over Redfish ({len(bmc)}): measured {bmc_m:.3f} J, stored {bmc_s:.3f} J")
    if missing:
        print(f"devices measured with no row stored: {', '.join(missing)}")
    codes = [n.exit_code for n in nodes]
    print(f"agents' exit codes: {codes}; wattlog check: exit {checked}")
    ok = worst_mj <= 1.0 and not missing and checked == 0 and len(bmc) == len(nodes)
    ok = ok and len(measured) >= 3 * len(nodes) and not any("FAIL" in line for line in trace)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
