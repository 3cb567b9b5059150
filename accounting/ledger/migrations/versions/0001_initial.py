"""Initial schema: projects, runs, energy records, gaps, events, sites, intensity series.

Revision ID: 0001
Revises: (none)
Create Date: 2026-12-02 18:05:02.168909
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""

    op.create_table(
        "intensity_point",
        sa.Column("series", sa.String(length=200), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("kg_per_kwh", sa.Float(), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.PrimaryKeyConstraint("series", "hour"),
    )
    op.create_table(
        "project",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "site",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "run",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("site", sa.String(length=200), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["project.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", name="uq_run_name"),
    )
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.create_index("ix_run_project", ["project_id"], unique=False)

    op.create_table(
        "energy_record",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("device", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("resolution", sa.String(length=10), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("energy_j", sa.Float(), nullable=False),
        sa.Column("low_j", sa.Float(), nullable=False),
        sa.Column("high_j", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["run.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("energy_record", schema=None) as batch_op:
        batch_op.create_index("ix_energy_resolution_hour", ["resolution", "hour"], unique=False)
        batch_op.create_index("ix_energy_run_hour", ["run_id", "hour"], unique=False)

    op.create_table(
        "event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("time_s", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("category", sa.String(length=50), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["run.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.create_index("ix_event_run_time", ["run_id", "time_s"], unique=False)

    op.create_table(
        "gap",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("device", sa.String(length=200), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["run.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("gap", schema=None) as batch_op:
        batch_op.create_index("ix_gap_run", ["run_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""

    with op.batch_alter_table("gap", schema=None) as batch_op:
        batch_op.drop_index("ix_gap_run")

    op.drop_table("gap")
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.drop_index("ix_event_run_time")

    op.drop_table("event")
    with op.batch_alter_table("energy_record", schema=None) as batch_op:
        batch_op.drop_index("ix_energy_run_hour")
        batch_op.drop_index("ix_energy_resolution_hour")

    op.drop_table("energy_record")
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_index("ix_run_project")

    op.drop_table("run")
    op.drop_table("site")
    op.drop_table("project")
    op.drop_table("intensity_point")
