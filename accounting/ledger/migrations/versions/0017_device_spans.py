"""The device totals keep their rows' first start, last end and summed seconds, filled from the rows;
the hour index ends in end_s, not energy_j.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 20:00:00

A table read each device's span from the run's first hour and last hours of rows: a 1,024-GPU run
whose last day is raw at 10 s has a million rows in its last three hours. energy_total now widens
each device's span with every flush (compaction keeps it: a folded row spans what it folds). A
gap's device power and a run's GPU-hours summed the rows' seconds (a gap on gpu0 read gpu0's rows
on every host): the totals add them too. The latest end before a restart read the three hours'
rows before it; with end_s last in the hour index it is one seek per hour (the joules per hour
energy_j served come from energy_hour since 0016). Filling the totals and building the index read
every existing row once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_KEY = ("run_id", "host", "device", "kind", "source")
SPANS = f"""
SELECT {", ".join(_KEY)}, MIN(start_s), MAX(end_s), SUM(end_s - start_s)
FROM energy_record GROUP BY {", ".join(_KEY)}
"""  # noqa: S608 - column and table names are this migration's constants, never input
FILL = f"""
UPDATE energy_total SET first_start_s = :first, last_end_s = :last, seconds = :seconds
WHERE {" AND ".join(f"{k} = :{k}" for k in _KEY)}
"""  # noqa: S608 - column and table names are this migration's constants, never input


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("energy_total") as batch:
        batch.add_column(sa.Column("first_start_s", sa.Float(), nullable=True))
        batch.add_column(sa.Column("last_end_s", sa.Float(), nullable=True))
        batch.add_column(sa.Column("seconds", sa.Float(), nullable=False, server_default="0"))
    connection = op.get_bind()
    spans = [
        {**dict(zip(_KEY, key, strict=True)), "first": first, "last": last, "seconds": seconds}
        for *key, first, last, seconds in connection.execute(sa.text(SPANS))
    ]
    if spans:
        connection.execute(sa.text(FILL), spans)
    op.drop_index("ix_energy_run_hour", table_name="energy_record")
    op.create_index("ix_energy_run_hour_end", "energy_record", ["run_id", "hour", "end_s"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_energy_run_hour_end", table_name="energy_record")
    op.create_index("ix_energy_run_hour", "energy_record", ["run_id", "hour", "energy_j"])
    with op.batch_alter_table("energy_total") as batch:
        batch.drop_column("seconds")
        batch.drop_column("last_end_s")
        batch.drop_column("first_start_s")
