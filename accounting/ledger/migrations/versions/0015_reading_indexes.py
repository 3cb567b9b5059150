"""Two indexes for reading a run in time proportional to it: rows longer than an hour, joules by hour.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 14:40:00

A table finds each device's last end in the hours the run's longest row reaches back from its
last hour; the longest row was a scan of the run's rows (0.21 s of `wattlog table`'s 0.43 s for a
1,024-GPU month on SQLite). Flushes and hourly rows last at most an hour; the index holds only the
longer ones (none in most ledgers), on SQLite and PostgreSQL alike (on a partitioned table each
day's partition gets it). ix_energy_run_hour gains energy_j, so a run's joules per hour (what an
hourly intensity multiplies) come from the index alone: 0.15-0.24 -> 0.08 s for that month on
SQLite. Building them reads every existing row once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# models.LONG_ROW_SQL as of this revision (a migration is a snapshot), character for character:
# SQLite uses the index only for a query with this exact text
LONG_ROW_SQL = "end_s - start_s > 3600"
revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.drop_index("ix_energy_run_hour", table_name="energy_record")
    op.create_index("ix_energy_run_hour", "energy_record", ["run_id", "hour", "energy_j"])
    op.create_index(
        "ix_energy_long",
        "energy_record",
        ["run_id"],
        sqlite_where=sa.text(LONG_ROW_SQL),
        postgresql_where=sa.text(LONG_ROW_SQL),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_energy_long", table_name="energy_record")
    op.drop_index("ix_energy_run_hour", table_name="energy_record")
    op.create_index("ix_energy_run_hour", "energy_record", ["run_id", "hour"])
