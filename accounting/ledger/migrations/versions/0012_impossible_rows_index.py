"""A partial index of impossible energy rows: a table checks its run's rows without reading them.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 03:50:00

`wattlog table` refuses impossible rows (negative, not finite, outside their band) of the runs it
shows; scanning a 1,024-GPU month's 737,280 rows for them cost it 1.4 s on SQLite. The index holds
only such rows (none in a sound ledger), on SQLite and PostgreSQL alike, and stays current through
any write, a hand edit included. Building it reads every existing row once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# models.IMPOSSIBLE_ENERGY_SQL as of this revision (a migration is a snapshot: it does not follow the
# models), character for character: SQLite uses the index only for a query with this exact text
IMPOSSIBLE_ENERGY_SQL = (
    "energy_j < 0 OR energy_j < low_j OR energy_j > high_j OR energy_j <> energy_j"
    " OR energy_j > 1e300 OR high_j > 1e300 OR end_s < start_s"
    " OR random_low_j < 0 OR random_high_j < 0 OR random_low_sq < 0 OR random_high_sq < 0"
    " OR random_low_j > energy_j - low_j + 1e-9 * (energy_j + 1.0)"
    " OR random_high_j > high_j - energy_j + 1e-9 * (energy_j + 1.0)"
)
revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index(
        "ix_energy_impossible",
        "energy_record",
        ["run_id"],
        sqlite_where=sa.text(IMPOSSIBLE_ENERGY_SQL),
        postgresql_where=sa.text(IMPOSSIBLE_ENERGY_SQL),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_energy_impossible", table_name="energy_record")
