"""`wattlog --help` lists every command without importing the packages (SQLAlchemy, models, torch)."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from wattlog.cli import full_app, help_app


def test_the_light_help_is_the_full_apps_help() -> None:
    runner = CliRunner()
    light = runner.invoke(help_app(), ["--help"], env={"COLUMNS": "120"})
    full = runner.invoke(full_app(), ["--help"], env={"COLUMNS": "120"})
    assert light.exit_code == full.exit_code == 0
    assert light.output == full.output  # a command added to the app must be added to cli.COMMANDS


def test_help_does_not_import_sqlalchemy_the_models_or_torch() -> None:
    heavy = ("sqlalchemy", "wattlog.accounting.ledger.models", "torch")
    code = (
        "import sys\nfrom wattlog.cli import main\ncode = main(['--help'])\n"
        f"print(code, *(m in sys.modules for m in {heavy}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines()[-1] == "0 False False False"  # SQLAlchemy and the models took ~1 s


def test_help_does_not_import_markdown_or_pygments_and_still_renders() -> None:
    heavy = ("markdown_it", "rich.markdown", "pygments", "rich.traceback")
    code = (
        "import sys\nfrom wattlog.cli import main\ncode = main(['--help'])\n"
        f"print(code, *(m in sys.modules for m in {heavy}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "Usage: wattlog [OPTIONS] COMMAND" in done.stdout and "health-check" in done.stdout
    # typer's formatter imported them for nothing: 0.15 s of the 0.4 s `wattlog --help` took
    assert done.stdout.splitlines()[-1] == "0 False False False False"


FROZEN = """
import gc, sys
from wattlog import cli
paused = []
built = cli.command_app
cli.command_app = lambda command: paused.append(not gc.isenabled()) or built(command)
code = cli.main(["table", "--help"], freeze_imports={freeze})
print(code, paused, gc.isenabled(), gc.get_freeze_count() > 10_000)
"""


def test_a_new_process_imports_its_command_with_the_collector_paused_then_frozen() -> None:
    """`run` imports SQLAlchemy, SQLModel and the models with no collections (0.05-0.08 s of a table),
    and the command itself runs with the collector on; a caller of `main` keeps its collector."""
    for freeze, expected in ((True, "0 [True] True True"), (False, "0 [False] True False")):
        done = subprocess.run(
            [sys.executable, "-c", FROZEN.format(freeze=freeze)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert done.stdout.splitlines()[-1] == expected
