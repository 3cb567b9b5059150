"""Every command's --help at 60, 80 and 120 columns: wrapped, never cut with "…", text shown as written."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from wattlog.cli import full_app

WIDTHS = (60, 80, 120)


def _commands(group: Any, ctx: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        found.append((*path, name))
        if hasattr(command, "list_commands"):  # a group (typer ships its own click)
            found += _commands(command, type(ctx)(command, parent=ctx), (*path, name))
    return found


def _every_command() -> list[tuple[str, ...]]:
    root = typer.main.get_command(full_app())
    return [(), *_commands(root, root.make_context("wattlog", ["--help"], resilient_parsing=True))]


def _help(args: tuple[str, ...], width: int) -> str:
    """The help a terminal of `width` columns shows (CliRunner forces click to 80 columns)."""
    command = typer.main.get_command(full_app())
    ctx = type(command.context_class(command))(command, info_name="wattlog", terminal_width=width)
    for name in args:
        command = command.get_command(ctx, name)
        ctx = type(ctx)(command, parent=ctx, info_name=name, terminal_width=width)
    text = str(command.get_help(ctx))
    assert text.startswith("Usage: wattlog"), (args, text)  # typer's rich help prints, returns ""
    return text


@pytest.mark.parametrize("width", WIDTHS)
def test_no_help_is_cut_or_wider_than_the_terminal(width: int) -> None:
    commands = _every_command()
    assert len(commands) > 30
    for args in commands:
        text = _help(args, width)
        assert "…" not in text, args  # typer's panels cut a long word: "~/.local/share/wattlog-…"
        for line in text.splitlines():
            assert len(line) <= width or len(line.split()) == 1, (args, line)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_command_list_gives_each_commands_help_whole(width: int) -> None:
    listed = " ".join(_help((), width).split())
    root = typer.main.get_command(full_app())
    ctx = root.make_context("wattlog", ["--help"], resilient_parsing=True)
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        assert command is not None and command.help
        text = command.help.split("\n\n")[0]
        assert f"{name} {' '.join(text.split())}" in listed  # click cut them to fit: "List the ..."


def test_square_brackets_in_help_are_text_not_markup() -> None:
    for width in WIDTHS:
        text = " ".join(_help(("table",), width).split())
        assert "TOML file of extra sites ([sites.NAME] tables)" in text  # was "( tables)"
