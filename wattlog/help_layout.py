"""How every command's --help is laid out: plain text that wraps at the terminal and never cuts.

typer's rich panels put a word longer than the help column behind "…" (a
ledger path, a CSV header, a DCGM field name) and read ``[sites.NAME]`` as
markup; click's own layout wraps at word boundaries and prints text as
written. Its command lists abridge each command's help to what fits beside
it, with "..."; :class:`WholeHelpGroup` lists the whole first paragraph,
wrapped instead. Each app passes ``rich_markup_mode=None, cls=WholeHelpGroup``
(:data:`PLAIN_HELP`).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from typer.core import TyperGroup

if TYPE_CHECKING:  # typer ships its own click: its types, not click's
    from typer._click import Context, HelpFormatter

__all__ = ["PLAIN_HELP", "WholeHelpGroup"]


class WholeHelpGroup(TyperGroup):
    """A command group whose --help lists each command's first paragraph whole, wrapped, never cut."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """List the commands, each with the first paragraph of its help."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            text = inspect.cleandoc(command.short_help or command.help or "")
            rows.append((name, " ".join(text.split("\n\n")[0].split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


PLAIN_HELP: dict[str, Any] = {"rich_markup_mode": None, "cls": WholeHelpGroup}
"""The keywords every ``typer.Typer(...)`` of wattlog takes, so each --help is laid out the same."""
