"""A run's lease: the time until which its agent promised to write (renewed with each flush).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 23:55:00

A running run whose lease has expired lost its agent (killed -9, the node gone): the next reader
or `wattlog runs reap` closes it as `lost`, with a gap from its last row to the lease's end.
Runs written before this revision have no lease (NULL) and are never reaped.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("run") as batch:
        batch.add_column(sa.Column("lease_until_s", sa.Float(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("run") as batch:
        batch.drop_column("lease_until_s")
