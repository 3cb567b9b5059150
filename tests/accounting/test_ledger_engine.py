"""make_engine: URL resolution, Alembic migrations that match the models, clear errors."""

from __future__ import annotations

import socket

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from wattlog.accounting.ledger import default_url, describe_url, make_engine, resolve_url
from wattlog.accounting.ledger.models import TABLES, SQLModel
from wattlog.errors import LedgerError


def schema_diff(engine) -> list:  # type: ignore[no-untyped-def]
    """Differences between the migrated database and the SQLModel tables (ours only)."""
    ours = {table.__tablename__ for table in TABLES}
    with engine.connect() as connection:
        diffs = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    # tables not ours (PostgreSQL's day partitions of energy_record included) and their indexes
    return [d for d in diffs if _table_name(d) in ours or _table_name(d) is None]


def _table_name(diff) -> str | None:  # type: ignore[no-untyped-def]
    """The table a diff is about: the table itself, or an index's table (None for other diffs)."""
    if diff[0] in ("add_table", "remove_table"):
        return str(diff[1].name)
    table = getattr(diff[1], "table", None) if diff[0] in ("add_index", "remove_index") else None
    return None if table is None else str(table.name)


def test_migrated_schema_matches_the_models(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'l.db'}")
    assert schema_diff(engine) == []
    assert "alembic_version" in inspect(engine).get_table_names()


def test_an_unmigrated_database_differs(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'l.db'}", migrate=False)
    assert schema_diff(engine) != []


def test_opening_twice_is_idempotent(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    make_engine(url).dispose()
    assert schema_diff(make_engine(url)) == []


def test_url_comes_from_argument_then_env_then_default(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("WATTLOG_DB", raising=False)
    assert resolve_url(None) == default_url()  # the user's ledger (see test_ledger_location)
    monkeypatch.setenv("WATTLOG_DB", "sqlite:///env.db")
    assert resolve_url(None) == "sqlite:///env.db"
    assert resolve_url("sqlite:///arg.db") == "sqlite:///arg.db"
    monkeypatch.chdir(tmp_path)
    assert describe_url(None) == str(tmp_path / "env.db")
    assert describe_url("postgresql+psycopg://u:secret@db/x") == "postgresql+psycopg://u:***@db/x"


def test_missing_folder_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(LedgerError, match="folder .* does not exist"):
        make_engine(f"sqlite:///{tmp_path / 'nope' / 'l.db'}")
    assert not (tmp_path / "nope").exists()


def test_malformed_url_is_one_clear_error() -> None:
    with pytest.raises(LedgerError, match="malformed"):
        make_engine("not a url")


def test_unreachable_postgres_is_one_clear_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        LedgerError, match=rf"cannot open ledger postgresql\+psycopg://u:\*\*\*@127.0.0.1:{port}/db"
    ):
        make_engine(f"postgresql+psycopg://u:pw@127.0.0.1:{port}/db")


def test_unopenable_sqlite_file_is_one_clear_error(tmp_path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(LedgerError, match="cannot open ledger"):
        make_engine(f"sqlite:///{tmp_path / 'dir.db'}")


def test_read_only_open_of_a_missing_file_creates_nothing(tmp_path) -> None:
    with pytest.raises(LedgerError, match="no ledger at .*missing.db: pass --db"):
        make_engine(f"sqlite:///{tmp_path / 'missing.db'}", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_upgrading_from_0001_backfills_the_totals(tmp_path) -> None:
    from sqlalchemy import text

    from wattlog.accounting.ledger import Ledger
    from wattlog.accounting.ledger.engine import upgrade

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url, migrate=False)
    with engine.begin() as connection:
        upgrade(connection, "0001")
        connection.execute(text("INSERT INTO project (id, name, created_s) VALUES (1, 'p', 0)"))
        connection.execute(
            text(
                "INSERT INTO run (id, name, role, model, site, host, project_id, start_s, status, restarts, "
                "config) VALUES (1, 'r', 'final', '', '', '', 1, 0, 'running', 0, '{}')"
            )
        )
        for energy in (10.0, 32.0):
            connection.execute(
                text(
                    "INSERT INTO energy_record (run_id, host, device, kind, source, resolution, hour, "
                    "start_s, end_s, energy_j, low_j, high_j) VALUES "
                    f"(1, 'n', 'g', 'gpu', 'counter', 'raw', 0, 0, 10, {energy}, {energy}, {energy})"
                )
            )
    engine.dispose()
    [total] = Ledger(make_engine(url)).energy_totals("r")
    assert (total.energy_j, total.rows) == (42.0, 2)


def test_head_revision_constant_is_the_newest_migration() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from wattlog.accounting.ledger.engine import HEAD_REVISION, MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD_REVISION
