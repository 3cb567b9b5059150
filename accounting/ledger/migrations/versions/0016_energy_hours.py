"""An hourly rollup: a run's energy per hour, host, kind and source, backfilled from the rows.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 19:30:00

A table with an hourly intensity summed the run's joules hour by hour from its rows (through
ix_energy_run_hour): 0.36 s for 64 GPUs with 7 days of raw 10 s rows on SQLite, about 6 s for
1,024 GPUs. The rollup is kept with every flush, as energy_total is. Building it reads every
existing row once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_SUMMED = ("energy_j", "low_j", "high_j", "random_low_j", "random_high_j", "random_low_sq", "random_high_sq")
BACKFILL = f"""
INSERT INTO energy_hour (run_id, hour, host, kind, source, {", ".join(_SUMMED)})
SELECT run_id, hour, host, kind, source, {", ".join(f"SUM({c})" for c in _SUMMED)}
FROM energy_record GROUP BY run_id, hour, host, kind, source
"""  # noqa: S608 - column and table names are this migration's constants, never input
# rollups.IMPOSSIBLE_SUMS_SQL as of this revision, character for character (a query uses the index
# only with this exact text)
IMPOSSIBLE_SUMS_SQL = (
    "energy_j < 0 OR energy_j < low_j OR energy_j > high_j OR energy_j <> energy_j"
    " OR energy_j > 1e300 OR high_j > 1e300"
    " OR random_low_j < 0 OR random_high_j < 0 OR random_low_sq < 0 OR random_high_sq < 0"
    " OR random_low_j > energy_j - low_j + 1e-9 * (energy_j + 1.0)"
    " OR random_high_j > high_j - energy_j + 1e-9 * (energy_j + 1.0)"
)


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "energy_hour",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        *(sa.Column(c, sa.Float(), nullable=False, server_default="0") for c in _SUMMED[3:]),
        *(sa.Column(c, sa.Float(), nullable=False) for c in _SUMMED[:3]),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("run_id", "hour", "host", "kind", "source"),
    )
    op.create_index(
        "ix_energy_hour_impossible",
        "energy_hour",
        ["run_id"],
        sqlite_where=sa.text(IMPOSSIBLE_SUMS_SQL),
        postgresql_where=sa.text(IMPOSSIBLE_SUMS_SQL),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_energy_hour_impossible", table_name="energy_hour")
    op.drop_table("energy_hour")
