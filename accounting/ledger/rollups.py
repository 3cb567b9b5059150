"""The ledger's rollups: sums of a run's energy rows kept in the same transaction as the rows.

A table of a 1,024-GPU month reads its totals and its hours from these, not from the month's
rows (737,280 folded hourly, 62 M more for each week kept raw at 10 s). `Ledger.rebuild_totals`
recomputes both from the rows. Compaction leaves them alone: folding an hour's rows changes
neither a device's total nor the hour's.
"""

from __future__ import annotations

from sqlalchemy import Index, text
from sqlmodel import Field, SQLModel

IMPOSSIBLE_ENERGY_SQL = (
    "energy_j < 0 OR energy_j < low_j OR energy_j > high_j OR energy_j <> energy_j"
    " OR energy_j > 1e300 OR high_j > 1e300 OR end_s < start_s"
    " OR random_low_j < 0 OR random_high_j < 0 OR random_low_sq < 0 OR random_high_sq < 0"
    " OR random_low_j > energy_j - low_j + 1e-9 * (energy_j + 1.0)"
    " OR random_high_j > high_j - energy_j + 1e-9 * (energy_j + 1.0)"
)
"""An energy row no measurement can produce (negative, not finite, outside its band, ending before it
starts). Both engines keep a partial index of such rows, so checking a run's rows reads that (empty)
index, not its 737,280 rows; a query uses it only when its WHERE holds this exact text."""

IMPOSSIBLE_SUMS_SQL = IMPOSSIBLE_ENERGY_SQL.replace(" OR end_s < start_s", "")
"""The same rule less its times (a sum has none): a partial index of the hourly rollup holds only
such rows, so checking a run's hours (92,160 for a 1,024-GPU month) reads an empty index."""

DEVICE_KEY = ("run_id", "host", "device", "kind", "source")
"""The device totals' key: one total per device, kind and source of a run."""
HOUR_KEY = ("run_id", "hour", "host", "kind", "source")
"""The hourly rollup's key: one sum per hour, host, kind and source of a run."""


class EnergySums(SQLModel):
    """The columns an energy row has and a rollup adds up: its energy and band terms
    (wattlog.records.BAND_TERMS)."""

    energy_j: float
    low_j: float
    high_j: float
    # The sampling-error parts of the band's sides, and their squares, summed over the rows an hourly
    # row or a rollup adds: sums of rows add them in quadrature (wattlog.records.summed_band). 0 in old rows.
    random_low_j: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    random_high_j: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    random_low_sq: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    random_high_sq: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})


class EnergyRollup(EnergySums, table=True):
    """Running total of one device's energy in one run, with the run's band revisions added
    (ledger.revisions), so totals give the band the agent gave."""

    __tablename__ = "energy_total"

    run_id: int = Field(foreign_key="run.id", primary_key=True)
    host: str = Field(primary_key=True, max_length=200)
    device: str = Field(primary_key=True, max_length=200)
    kind: str = Field(primary_key=True, max_length=20)
    source: str = Field(primary_key=True, max_length=20)
    records: int  # raw rows added (compaction leaves it alone)
    # The first start and last end of its rows (compaction keeps both): a table reads a device's
    # span here, not in the run's last hours of rows (a million for 1,024 GPUs at 10 s). Null only
    # in a ledger migration 0017 has not filled yet.
    first_start_s: float | None = None
    last_end_s: float | None = None
    # its rows' lengths summed, the device-seconds measured (a gap's power and a run's GPU-hours read
    # it, not the rows); 0 in a ledger migration 0017 has not filled yet
    seconds: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})


class EnergyHourRollup(EnergySums, table=True):
    """A run's energy per hour (rows bucketed by the hour they start in), host, kind and source: what
    an hourly intensity multiplies. The rows alone: revisions are shared among hours when read
    (ledger.revisions.hourly_shares). Per host, so a host whose node meter is counted leaves its
    components out; a 1,024-GPU month is 128 hosts x 720 hours x its kinds."""

    __tablename__ = "energy_hour"
    __table_args__ = (
        Index(
            "ix_energy_hour_impossible",
            "run_id",
            sqlite_where=text(IMPOSSIBLE_SUMS_SQL),
            postgresql_where=text(IMPOSSIBLE_SUMS_SQL),
        ),
    )

    run_id: int = Field(foreign_key="run.id", primary_key=True)
    hour: int = Field(primary_key=True)
    host: str = Field(primary_key=True, max_length=200)
    kind: str = Field(primary_key=True, max_length=20)
    source: str = Field(primary_key=True, max_length=20)
