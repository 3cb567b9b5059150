"""`wattlog --help` lists every command without importing the packages (SQLAlchemy, models, torch)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import typer
from typer.testing import CliRunner

from wattlog.cli import COMMANDS, full_app

HEAVY = ("sqlalchemy", "sqlmodel", "torch", "numpy", "wattlog.accounting.ledger.models")

EVERY_HELP = """
import json, sys, typer
from wattlog.cli import main, full_app
heavy = {heavy}
loaded = {{"": (main(["--help"]), [m for m in heavy if m in sys.modules])}}  # every command's module
root = typer.main.get_command(full_app())
ctx = root.make_context("wattlog", ["--help"], resilient_parsing=True)
paths = []
for name in root.list_commands(ctx):
    command = root.get_command(ctx, name)
    paths.append((name,))
    if hasattr(command, "list_commands"):
        paths += [(name, sub) for sub in command.list_commands(ctx)]
for path in paths:
    code = main([*path, "--help"])
    loaded[" ".join(path)] = (code, [m for m in heavy if m in sys.modules])
    if loaded[" ".join(path)][1]:
        break
print(len(paths), json.dumps(loaded))
"""


def test_every_commands_help_imports_neither_the_ledger_nor_torch_nor_numpy() -> None:
    """`wattlog table --help` cost 1.25 s of CPU: SQLAlchemy and the models, imported for a page of text."""
    done = subprocess.run(
        [sys.executable, "-c", EVERY_HELP.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    count, loaded = done.stdout.splitlines()[-1].split(" ", 1)
    assert int(count) > 30
    helps = json.loads(loaded)
    assert len(helps) == int(count) + 1, helps  # the first command that imported them ends the loop
    assert {path: seen for path, seen in helps.items() if seen != [0, []]} == {}


def test_the_root_help_lists_every_registered_command_with_its_own_one_line_help() -> None:
    root = typer.main.get_command(full_app())
    ctx = root.make_context("wattlog", ["--help"], resilient_parsing=True)
    listed = " ".join(CliRunner().invoke(full_app(), ["--help"], env={"COLUMNS": "120"}).output.split())
    names = root.list_commands(ctx)
    assert names == list(COMMANDS)
    for name in names:
        command = root.get_command(ctx, name)
        assert command is not None
        first = inspect.cleandoc(command.help or "").split("\n\n")[0]
        assert f"{name} {' '.join(first.split())}" in listed, name


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
from wattlog.lazy_group import LazyGroup
paused = []
load = LazyGroup.load
LazyGroup.load = lambda group, name: paused.append(not gc.isenabled()) or load(group, name)
code = cli.main(["table", "--help"], freeze_imports={freeze})
print(code, paused, gc.isenabled(), gc.get_freeze_count() > 1_000)
"""


def test_a_new_process_imports_its_command_with_the_collector_paused_then_frozen() -> None:
    """`run` imports its command's module with no collections, and the command itself runs with
    the collector on; a caller of `main` keeps its collector."""
    for freeze, expected in ((True, "0 [True] True True"), (False, "0 [False] True False")):
        done = subprocess.run(
            [sys.executable, "-c", FROZEN.format(freeze=freeze)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert done.stdout.splitlines()[-1] == expected


RUN_FROZEN = """
import gc, sys
from wattlog import cli
code = cli.main(["table", "--db", "sqlite:///{missing}"], freeze_imports=True)
print(code, "sqlalchemy" in sys.modules, gc.get_freeze_count())
"""


def test_a_command_run_imports_the_ledger_as_it_starts_with_the_collector_paused(tmp_path) -> None:
    """The table's module no longer imports the ledger: its RUN_IMPORTS do, still before the collector
    runs again (the ~240 collections they cost a `wattlog table` were the reason for the pause)."""
    code = RUN_FROZEN.format(missing=tmp_path / "none" / "ledger.db")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    exit_code, imported, frozen = done.stdout.splitlines()[-1].split()
    assert (exit_code, imported) == ("2", "True")  # no such ledger: after the imports
    assert int(frozen) > 100_000  # SQLAlchemy's and the models' objects too (the module alone: ~50,000)
