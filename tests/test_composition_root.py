"""One composition root: only accounting/fleet/recording.py builds an Agent and its ledger sink.

`wattlog run`, `wattlog node`, `wattlog agent`, the Tracker and the framework callbacks all
measure through a Recording, so they record with the same durability (the spool); an Agent
assembled anywhere else would be a fourth copy with its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.sources import ROOT, product_files

ROOT_MODULE = "accounting/fleet/recording.py"
BUILT_ONCE = ("Agent", "LedgerSink", "Spool")


def constructions(path: Path, names: tuple[str, ...]) -> list[str]:
    """`name(` calls of `names` in `path` (plain or dotted), as "name:line"."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, "id", None) or getattr(func, "attr", "")
            if name in names:
                found.append(f"{name}:{node.lineno}")
    return found


def test_constructions_sees_plain_and_dotted_calls(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("a = Agent(c)\nb = agent.Agent(c)\nc = Agents(c)\n", encoding="utf-8")
    assert constructions(module, ("Agent",)) == ["Agent:1", "Agent:2"]


def test_only_the_recording_builds_an_agent_a_ledger_sink_or_a_spool() -> None:
    built = {
        str(path.relative_to(ROOT)): found
        for path in product_files()
        if (found := constructions(path, BUILT_ONCE))
    }
    assert set(built) == {ROOT_MODULE}, built
    assert {entry.split(":")[0] for entry in built[ROOT_MODULE]} >= {"Agent", "LedgerSink"}
