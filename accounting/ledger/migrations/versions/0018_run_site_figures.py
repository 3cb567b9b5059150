"""A run keeps the site figures it was accounted with: PUE, WUE on- and off-site, intensity, sources.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 02:30:00

The ledger stored only a site's name, so an edit of sites.toml changed the CO2 and water of runs
finished long before (issue 38). A new run stores its site's figures at its start (JSON: each
figure with its source and year); `wattlog runs resite RUN SITE` changes them on purpose, as an
event. Runs written before this revision have none (NULL): they read the catalog, and say so.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    # a plain ADD COLUMN (both engines): a batch copy of `run` would drop the table other tables'
    # foreign keys point at, which SQLite refuses
    op.add_column("run", sa.Column("site_figures", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    op.drop_column("run", "site_figures")  # SQLite >= 3.35 drops a column in place
