"""Runs carry phase, stage, scale group, device model, GPU-hours and requests served.

Revision ID: 0005
Revises: 0002
Create Date: 2026-12-03 07:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_TEXT = (("phase", 20), ("stage", 20), ("scale_group", 100), ("device_model", 100))


def upgrade() -> None:
    """Apply this revision (additive: defaulted text columns and two nullable numbers)."""
    with op.batch_alter_table("run") as batch:
        for name, length in _TEXT:
            batch.add_column(sa.Column(name, sa.String(length=length), nullable=False, server_default=""))
        batch.add_column(sa.Column("gpu_hours", sa.Float(), nullable=True))
        batch.add_column(sa.Column("requests", sa.Integer(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("run") as batch:
        for name in ("requests", "gpu_hours", *(n for n, _ in reversed(_TEXT))):
            batch.drop_column(name)
