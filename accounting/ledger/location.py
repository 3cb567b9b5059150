"""Where the ledger is: one per user unless told otherwise, and how to name it for a person.

The URL comes from the caller (``--db``), else ``$WATTLOG_DB``, else the user's
ledger, a SQLite file in the user's data folder (XDG base directories:
``$XDG_DATA_HOME/wattlog-ledger/wattlog.db``, by default
``~/.local/share/wattlog-ledger/wattlog.db``), so runs started from any folder land
in one place. The folder is created private (0700): the ledger names hosts,
commands and projects. It is never a folder named ``wattlog``: run from its parent,
it would shadow the package (the spool's folder follows the same rule).

Older wattlogs wrote ``./wattlog.db`` in whatever folder a run started in. Such a
file is found and named in one notice, but not used: switching silently between a
folder's file and the user's ledger would scatter runs again. ``--db
sqlite:///wattlog.db`` (or ``$WATTLOG_DB``) reads or keeps using it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from wattlog.telemetry.private import hide_password

ENV_VAR = "WATTLOG_DB"
FOLDER_NAME = "wattlog-ledger"
FILE_NAME = "wattlog.db"
LEGACY_FILE = "wattlog.db"
"""The ledger file older wattlogs created in the current folder."""


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """The user's ledger file: $XDG_DATA_HOME/wattlog-ledger/wattlog.db, else under ~/.local/share."""
    env = os.environ if environ is None else environ
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(data) / FOLDER_NAME / FILE_NAME


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """The user's ledger as a SQLite URL."""
    return f"sqlite:///{default_path(environ)}"


def resolve_url(url: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The ledger URL to use: `url`, else $WATTLOG_DB, else the user's ledger."""
    env = os.environ if environ is None else environ
    return url or env.get(ENV_VAR) or default_url(env)


def describe_url(url: str | None = None) -> str:
    """Printable ledger name: the absolute file for SQLite, else the URL without its password."""
    resolved = resolve_url(url)
    try:
        parsed = make_url(resolved)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        return hide_password(resolved)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        return str(Path(database).resolve()) if database and database != ":memory:" else "sqlite (in memory)"
    return parsed.render_as_string(hide_password=True)


def ledger_line(url: str | None = None) -> str:
    """One line naming the ledger a run was stored in, for the end of a run."""
    return f"Ledger: {describe_url(url)} (`wattlog table` shows its final runs, `wattlog runs` all)"


def prepare_default(url: str | None = None, environ: Mapping[str, str] | None = None) -> None:
    """Create the user's ledger folder (0700) when `url` resolves to it; anything else is left alone.

    A folder given explicitly must exist (a typo in --db is an error, never a new folder).
    """
    env = os.environ if environ is None else environ
    if url or env.get(ENV_VAR):
        return
    folder = default_path(env).parent
    if not folder.is_dir():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)  # mkdir's mode is masked by the umask


def legacy_notice(
    url: str | None = None, cwd: Path | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The one-line notice about an older wattlog's ./wattlog.db when the user's ledger is used instead.

    None when a ledger was chosen (--db or $WATTLOG_DB), or no such file is here, or it is the
    user's ledger itself (a run started in the data folder).
    """
    env = os.environ if environ is None else environ
    if url or env.get(ENV_VAR):
        return None
    legacy = (cwd or Path.cwd()) / LEGACY_FILE
    if not legacy.is_file() or legacy.resolve() == default_path(env).resolve():
        return None
    return (
        f"{legacy} (the ledger of an older wattlog, in this folder) is not used; "
        f"the ledger is {default_path(env)}; read the old one with --db sqlite:///{legacy}"
    )
