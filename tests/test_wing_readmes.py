"""Each wing has a README that maps its modules (telemetry/README.md is the model, issue 39)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("wing", ["telemetry", "accounting", "trainer", "dashboards"])
def test_every_wing_has_a_readme_that_says_what_may_import_what(wing: str) -> None:
    text = (ROOT / wing / "README.md").read_text(encoding="utf-8")
    assert text.startswith(f"# {wing}")
    if wing != "telemetry":
        assert "## What may import what" in text or "imports only the rooms below it" in text
        assert "## Where a new thing goes" in text


@pytest.mark.parametrize("room", ["ledger", "carbon", "publishing", "fleet", "commands"])
def test_the_accounting_readme_names_every_module_of_each_room(room: str) -> None:
    text = (ROOT / "accounting" / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{room}/` |")]
    named = set(re.findall(r"`([a-z_0-9]+)\*?`", row))
    prefixes = {m[:-1] for m in re.findall(r"`([a-z_0-9]+\*)`", row)}
    modules = {p.stem for p in (ROOT / "accounting" / room).glob("*.py") if p.stem != "__init__"}
    missing = {m for m in modules if m not in named and not any(m.startswith(p) for p in prefixes)}
    assert not missing, f"accounting/README.md does not name {sorted(missing)} in {room}/"
