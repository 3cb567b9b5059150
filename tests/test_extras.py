"""A missing extra is one line naming the pip command, for every command and integration."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.integrations.conftest import import_error_without
from wattlog.extras import EXTRA_OF, MissingExtra, installed

ROOT = Path(__file__).resolve().parents[1]


def cli_without(module: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`wattlog ARGS` in a fresh interpreter where `module` cannot be imported."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\nfrom wattlog.cli import main\nsys.exit(main({args!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("module", "args", "line"),
    [
        ("torch", ["demo", "--seconds", "1"], "wattlog demo needs torch: pip install 'wattlog[torch]'"),
        ("torch", ["health-check"], "wattlog health-check needs torch: pip install 'wattlog[torch]'"),
        (
            "grafana_client",
            ["dashboards", "provision", "--url", "http://127.0.0.1:9"],
            "wattlog dashboards needs grafana_client: pip install 'wattlog[dashboards]'",
        ),
        ("streamlit", ["report"], "wattlog report needs streamlit: pip install 'wattlog[dashboards]'"),
    ],
)
def test_a_command_without_its_extra_says_the_pip_command_in_one_line(
    tmp_path: Path, module: str, args: list[str], line: str
) -> None:
    done = cli_without(
        module, [*args, "--db", f"sqlite:///{tmp_path / 'l.db'}"] if args[0] != "dashboards" else args
    )
    assert done.returncode == 2 and done.stderr == f"error: {line}\n"  # was a 41-45 line traceback
    assert "http://" not in done.stdout  # the report printed its URL, then failed


def test_an_integration_without_torch_names_its_extra() -> None:
    message = import_error_without("wattlog.integrations.hf", "torch")  # was a raw ModuleNotFoundError
    assert message == "this wattlog integration needs torch: pip install 'wattlog[hf]'"


def test_every_extra_named_exists_in_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF.values()) <= set(extras)


def test_a_module_that_is_no_extras_is_not_disguised_as_one() -> None:
    assert MissingExtra.of(ModuleNotFoundError("x", name="wattlog.nope"), "wattlog run") is None
    found = MissingExtra.of(ModuleNotFoundError("x", name="pandas.core"), "wattlog report")
    assert (
        found is not None and str(found) == "wattlog report needs pandas: pip install 'wattlog[dashboards]'"
    )


def test_installed_counts_a_blocked_module_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "streamlit", None)
    assert not installed("streamlit") and installed("json") and not installed("wattlog_no_such_module")


def test_the_public_api_without_torch_is_one_line_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "try:\n    from wattlog import Tracker\nexcept ImportError as e:\n    print(type(e).__name__, e)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    # was a bare ModuleNotFoundError: "import of torch halted; None in sys.modules"
    assert (
        done.stdout.strip()
        == "MissingExtra from wattlog import Tracker needs torch: pip install 'wattlog[torch]'"
    )
