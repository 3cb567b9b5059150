"""PostgreSQL: the energy table partitioned by day of its hour column, so compaction drops a day.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 13:20:00

Compacting a raw day by DELETE took 38 s per 11 M rows on PostgreSQL and the table kept its size
until VACUUM FULL. Partitioned by RANGE of ``hour`` (one partition per UTC day, 24 hours, named
``energy_record_d<day>``, plus a DEFAULT partition so no insert ever fails), compaction folds a
day and replaces its partition: the raw day's space goes back to the system at once
(:mod:`wattlog.accounting.ledger.partitions`). The primary key becomes (id, hour): a partitioned
table's unique keys must hold the partition key. Existing rows are copied into the new table.
SQLite is untouched (it has no partitions; its compaction stays batched DELETE + VACUUM).
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_TABLE = "energy_record"
_OLD = "energy_record_unpartitioned"
# the indexes of models.EnergyRecord as of this revision (a migration is a snapshot)
_IMPOSSIBLE = (
    "energy_j < 0 OR energy_j < low_j OR energy_j > high_j OR energy_j <> energy_j"
    " OR energy_j > 1e300 OR high_j > 1e300 OR end_s < start_s"
    " OR random_low_j < 0 OR random_high_j < 0 OR random_low_sq < 0 OR random_high_sq < 0"
    " OR random_low_j > energy_j - low_j + 1e-9 * (energy_j + 1.0)"
    " OR random_high_j > high_j - energy_j + 1e-9 * (energy_j + 1.0)"
)
_INDEXES = (
    "CREATE INDEX ix_energy_run_hour ON energy_record (run_id, hour)",
    "CREATE INDEX ix_energy_resolution_hour ON energy_record (resolution, hour)",
    "CREATE INDEX ix_energy_run_host_resolution_hour ON energy_record (run_id, host, resolution, hour)",
    f"CREATE INDEX ix_energy_impossible ON energy_record (run_id) WHERE {_IMPOSSIBLE}",
)


def upgrade() -> None:
    """Apply this revision."""
    if op.get_bind().dialect.name != "postgresql":
        return
    _rename_old()
    op.execute(
        f"CREATE TABLE {_TABLE} (LIKE {_OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        " PARTITION BY RANGE (hour)"
    )
    op.execute(f"ALTER TABLE {_TABLE} ADD PRIMARY KEY (id, hour)")
    op.execute(f"CREATE TABLE {_TABLE}_default PARTITION OF {_TABLE} DEFAULT")
    # one partition per day that holds rows, before the copy, so no row lands in DEFAULT
    op.execute(
        "DO $$ DECLARE d bigint; BEGIN"  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
        f" FOR d IN SELECT DISTINCT floor(hour / 24.0)::bigint FROM {_OLD} LOOP"
        f" EXECUTE format('CREATE TABLE {_TABLE}_d%s PARTITION OF {_TABLE}"
        " FOR VALUES FROM (%s) TO (%s)', d, d * 24, d * 24 + 24);"
        " END LOOP; END $$"
    )
    _move_rows()


def downgrade() -> None:
    """Revert this revision: one plain table again, every row kept."""
    if op.get_bind().dialect.name != "postgresql":
        return
    _rename_old()
    op.execute(f"CREATE TABLE {_TABLE} (LIKE {_OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    op.execute(f"ALTER TABLE {_TABLE} ADD PRIMARY KEY (id)")
    _move_rows()


def _rename_old() -> None:
    """Move the current table (its indexes and keys with it) out of the way of the new one."""
    op.execute(f"ALTER TABLE {_TABLE} RENAME TO {_OLD}")
    op.execute(f"ALTER TABLE {_OLD} RENAME CONSTRAINT {_TABLE}_pkey TO {_OLD}_pkey")


def _move_rows() -> None:
    """Copy every row, hand the id sequence to the new table, drop the old one, rebuild indexes and key."""
    op.execute(f"INSERT INTO {_TABLE} SELECT * FROM {_OLD}")  # noqa: S608 - table and partition names are this module's constants or dates it formats, never input
    op.execute(f"ALTER SEQUENCE {_TABLE}_id_seq OWNED BY {_TABLE}.id")
    op.execute(f"DROP TABLE {_OLD}")
    for statement in _INDEXES:
        op.execute(statement)
    op.execute(
        f"ALTER TABLE {_TABLE} ADD CONSTRAINT {_TABLE}_run_id_fkey FOREIGN KEY (run_id) REFERENCES run (id)"
    )
