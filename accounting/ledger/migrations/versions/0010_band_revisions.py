"""Revisions of the band of energy rows already stored, from evidence the agent learned after them.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 00:30:00

Rows are never rewritten: a revision is stored beside them with its reason and added to the
rollup. Ledgers written before this revision have none (their totals are as before).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_TERMS = ("low_j", "high_j", "random_low_j", "random_high_j", "random_low_sq", "random_high_sq")


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "band_revision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("device", sa.String(length=200), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        *(sa.Column(term, sa.Float(), nullable=False) for term in _TERMS),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_band_revision_run", "band_revision", ["run_id", "host", "device"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_band_revision_run", table_name="band_revision")
    op.drop_table("band_revision")
