"""Alembic environment: runs on the connection make_engine hands over (no alembic.ini, no logging setup)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import wattlog.accounting.ledger.models  # noqa: F401  (registers the tables)

target_metadata = SQLModel.metadata


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:  # `alembic -x url=... revision --autogenerate` by a developer
    url = context.get_x_argument(as_dictionary=True).get("url", "sqlite:///wattlog.db")
    with create_engine(url).begin() as connection:
        _run(connection)
