"""Lazy package __init__s: a light module loads light, and every public name still resolves."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from wattlog.lazy import import_deferring

HEAVY = ("sqlalchemy", "sqlmodel", "alembic", "rich", "torch", "pandas", "streamlit", "grafana_client")
LAZY = ("wattlog.accounting", "wattlog.dashboards", "wattlog.integrations")


def loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running `statement`."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out))


def heavy(modules: set[str]) -> set[str]:
    return {name for name in modules if name.split(".")[0] in HEAVY}


def test_accounting_units_loads_no_database_renderer_or_other_accounting_module() -> None:
    modules = loaded_after("import wattlog.accounting.units")
    assert not heavy(modules)
    accounting = {name for name in modules if name.startswith("wattlog.accounting.")}
    assert accounting <= {"wattlog.accounting.units", "wattlog.accounting.ranges"}


@pytest.mark.parametrize("module", ["wattlog.dashboards.panels", "wattlog.dashboards.siterules"])
def test_light_dashboards_modules_load_no_database_grafana_or_streamlit(module: str) -> None:
    modules = loaded_after(f"import {module}")
    assert not heavy(modules)
    assert "wattlog.accounting.ledger" not in modules
    assert "wattlog.dashboards.webhooks" not in modules


def test_integrations_extras_loads_no_trainer() -> None:
    modules = loaded_after("import wattlog.integrations.extras")
    assert not heavy(modules)
    assert not {name for name in modules if name.startswith("wattlog.trainer")}


@pytest.mark.parametrize("package", LAZY)
def test_every_public_name_resolves_to_its_home(package: str) -> None:
    module = importlib.import_module(package)
    homes = vars(module)["_HOMES"]
    assert sorted(module.__all__) == sorted(homes)
    for name in module.__all__:
        assert getattr(module, name) is getattr(importlib.import_module(homes[name]), name), name
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", LAZY)
def test_an_unknown_name_is_an_attribute_error(package: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        getattr(importlib.import_module(package), "nothing_here")  # noqa: B009


def test_a_submodule_imported_first_does_not_hide_the_public_name_spelled_like_it() -> None:
    """accounting/publishing/render.py holds render().

    The package's `render` is the function whatever loads first.
    """
    modules = loaded_after(
        "import wattlog.accounting.publishing.render\n"
        "import wattlog.accounting\n"
        "from wattlog.accounting import render\n"
        "assert callable(render) and wattlog.accounting.render is render, render"
    )
    assert "wattlog.accounting.publishing.render" in modules


def test_import_deferring_imports_a_class_only_when_it_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "heavy_mod.py").write_text(
        "class Heavy:\n    def __init__(self, n):\n        self.n = n\n"
        "    @classmethod\n    def make(cls):\n        return cls(2)\n"
    )
    (tmp_path / "user_mod.py").write_text(  # an annotation evaluated at import, as typer's are
        "from heavy_mod import Heavy\n\ndef build() -> Heavy | int:\n    return Heavy(1)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("heavy_mod", "user_mod"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    user = import_deferring("user_mod", {"heavy_mod": "Heavy"})
    assert "heavy_mod" not in sys.modules  # the stand-in is gone, the real module not loaded
    built = user.build()
    assert type(built).__module__ == "heavy_mod" and built.n == 1
    assert user.Heavy.make().n == 2  # class attributes forward too
    assert sys.modules["heavy_mod"].Heavy is type(built)
