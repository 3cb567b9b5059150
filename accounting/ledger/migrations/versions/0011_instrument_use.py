"""Uses of a site's contractual instruments by runs, so an instrument is not used twice across calls.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 03:30:00

Ledgers written before this revision have none: their runs' market-based figures were not recorded.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "instrument_use",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("site", sa.String(length=200), nullable=False),
        sa.Column("instrument", sa.String(length=200), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("period", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("mwh", sa.Float(), nullable=False),
        sa.Column("recorded_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("site", "instrument", "method", "period", "run_id", name="uq_instrument_use"),
    )
    op.create_index("ix_instrument_use_run_id", "instrument_use", ["run_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_instrument_use_run_id", table_name="instrument_use")
    op.drop_table("instrument_use")
