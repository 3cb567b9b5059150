"""Energy totals rollup: one row per (run, host, device, kind, source), backfilled from the records.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 18:12:55
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BACKFILL = """
INSERT INTO energy_total (run_id, host, device, kind, source, energy_j, low_j, high_j, records)
SELECT run_id, host, device, kind, source, SUM(energy_j), SUM(low_j), SUM(high_j), COUNT(*)
FROM energy_record GROUP BY run_id, host, device, kind, source
"""


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "energy_total",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("device", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("energy_j", sa.Float(), nullable=False),
        sa.Column("low_j", sa.Float(), nullable=False),
        sa.Column("high_j", sa.Float(), nullable=False),
        sa.Column("records", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("run_id", "host", "device", "kind", "source"),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("energy_total")
