"""A command group that imports a command's module only when that command is asked for.

`wattlog table --help` imported every package's commands first, and with them SQLAlchemy, the
ledger's models and the agent: 1.25 s of CPU for a page of text (issue 44). The root group knows
each command only by the function that registers it (``"module:function"``); asking for one
command imports that module alone, and listing them all (``wattlog --help``) imports each
command's module, never what its body uses: the commands' modules import the ledger inside
the commands.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.main import get_group

from wattlog.help_layout import PLAIN_HELP, WholeHelpGroup

if TYPE_CHECKING:  # typer ships its own click: its types, not click's
    from typer._click import Command, Context

__all__ = ["LazyGroup", "lazy_group", "run_imports"]


class LazyGroup(WholeHelpGroup):
    """A group whose commands are registered, on first use, by the function named in `homes`."""

    homes: ClassVar[Mapping[str, str]] = {}
    """Each command's name and the ``"module:function"`` that adds it (with others) to a typer app."""

    def list_commands(self, ctx: Context) -> list[str]:
        """The commands in the order of `homes`, then any added directly."""
        return [*self.homes, *(name for name in super().list_commands(ctx) if name not in self.homes)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        """The command `cmd_name`, its module imported now if it was not yet."""
        if cmd_name not in self.commands and cmd_name in self.homes:
            self.load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def load(self, name: str) -> None:
        """Import `name`'s module and add every command its register function adds."""
        module, function = self.homes[name].split(":")
        app = typer.Typer(**PLAIN_HELP)
        getattr(importlib.import_module(module), function)(app)
        for added, command in get_group(app).commands.items():
            self.commands.setdefault(added, command)


def lazy_group(homes: Mapping[str, str]) -> dict[str, Any]:
    """The typer keywords of a root app whose commands load lazily from `homes` (with :data:`PLAIN_HELP`)."""
    group = type("WattlogCommands", (LazyGroup,), {"homes": dict(homes)})
    return {**PLAIN_HELP, "cls": group}


def run_imports(home: str) -> tuple[str, ...]:
    """The modules the commands of `home` (``"module:function"``, imported) import when they run.

    A command's module may list them as ``RUN_IMPORTS``: a new process then imports them with
    the collector paused, as it does the module itself (wattlog.cli.run).
    """
    module = sys.modules[home.split(":")[0]]
    return tuple(getattr(module, "RUN_IMPORTS", ()))
