"""accounting/ is five rooms, each a layer of its own import contract (issue 39).

lint-imports checks the arrows (tests/test_packaging.py runs it on the checkout and on the
wheel); these tests check that the contract covers every room and module, so a new one cannot
slip past it, and that accounting's top stays small.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ACCOUNTING = ROOT / "accounting"
ROOMS = ("commands", "fleet", "publishing", "carbon", "ledger")


def _rooms_contract() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("containers") == ["wattlog.accounting"]]
    return contract


def _top_modules() -> set[str]:
    return {p.stem for p in ACCOUNTING.glob("*.py") if p.stem != "__init__"}


def test_accounting_keeps_at_most_ten_modules_at_its_top() -> None:
    assert len(_top_modules()) <= 10, sorted(_top_modules())


def test_every_room_is_a_package_of_accounting() -> None:
    packages = {p.parent.name for p in ACCOUNTING.glob("*/__init__.py")}
    assert packages == set(ROOMS)


def test_the_rooms_contract_names_every_room_and_module_of_accounting_once() -> None:
    contract = _rooms_contract()
    assert contract["type"] == "layers"
    assert contract["exhaustive"] is True
    layers = contract["layers"]
    assert isinstance(layers, list)
    named = [name.strip() for layer in layers for name in layer.split("|")]
    assert sorted(named) == sorted({*ROOMS, *_top_modules()})


def test_the_rooms_are_stacked_commands_over_fleet_over_publishing_over_carbon_over_ledger() -> None:
    layers = _rooms_contract()["layers"]
    assert isinstance(layers, list)
    assert layers[: len(ROOMS)] == list(ROOMS)
