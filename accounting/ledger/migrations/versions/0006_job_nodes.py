"""Multi-node jobs: the nodes of each run's job (measured or sampled out) and each rank's tokens.

Revision ID: 0006
Revises: 0005 (re-chained after 0005_run_phase_stage at the merge)
Create Date: 2026-12-03 06:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "job_node",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("node_index", sa.Integer(), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("measured", sa.Boolean(), nullable=False),
        sa.Column("joined_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("run_id", "host"),
    )
    op.create_table(
        "rank_progress",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("local_rank", sa.Integer(), nullable=False),
        sa.Column("tokens_total", sa.Float(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("updated_s", sa.Float(), nullable=False),
        sa.Column("flops_per_token", sa.Float(), nullable=True),
        sa.Column("peak_flops", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("run_id", "rank"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("rank_progress")
    op.drop_table("job_node")
