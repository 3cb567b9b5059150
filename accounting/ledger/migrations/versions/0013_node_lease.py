"""Per-node liveness and identity: each node of a job holds its own lease, beside its machine id.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 03:30:00

A node whose agent stops renewing its lease while the run goes on elsewhere is a gap on that
node until it comes back (a restart). The machine id beside the host name tells two machines
reporting under one host name apart. Rows written before this revision hold no lease (NULL)
and are never reaped.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("job_node") as batch:
        batch.add_column(sa.Column("lease_until_s", sa.Float(), nullable=True))
        batch.add_column(sa.Column("state", sa.String(length=10), nullable=False, server_default=""))
        batch.add_column(sa.Column("machine_id", sa.String(length=64), nullable=False, server_default=""))
        batch.add_column(sa.Column("agent_id", sa.String(length=64), nullable=False, server_default=""))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("job_node") as batch:
        for name in ("agent_id", "machine_id", "state", "lease_until_s"):
            batch.drop_column(name)
