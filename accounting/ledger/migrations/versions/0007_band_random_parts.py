"""The sampling-error parts of each energy row's band, so sums of rows add them in quadrature.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 16:10:00

Rows written before this revision get 0: their whole band keeps adding up linearly (as wide as
before, never narrower).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TABLES = ("energy_record", "energy_total")
_COLUMNS = ("random_low_j", "random_high_j", "random_low_sq", "random_high_sq")


def upgrade() -> None:
    """Apply this revision."""
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            for column in _COLUMNS:
                batch.add_column(sa.Column(column, sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    """Revert this revision."""
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            for column in _COLUMNS:
                batch.drop_column(column)
