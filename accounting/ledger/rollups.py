"""The ledger's rollups: sums of a run's energy rows kept in the same transaction as the rows.

A table of a 1,024-GPU month reads its totals and its hours from these, not from the month's
rows (737,280 folded hourly, 62 M more for each week kept raw at 10 s). `Ledger.rebuild_totals`
recomputes both from the rows. Compaction leaves them alone: folding an hour's rows changes
neither a device's total nor the hour's.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Index, case, text
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

RESIDUE_J = 1e-9
"""How far below zero, relative to its energy (+1 J), a device total's sampling part may sit and be
floating-point residue, not damage. A band revision takes back its rows' sampling terms summed in
another order than the rows were added, which leaves a few units in the last place: about n x 2^-53
x the parts' sum for n rows (2.9e-12 of the energy for a month of 10 s rows at a 5 % part), far below
this, and this far below one row's part (5 % of 1/259,200 of the energy, 1.9e-7)."""
RESIDUE_SQ = 1e-14
"""The same for the parts' squares, relative to the square of the energy (+1 J): the residue is about
2^-53 x the squares' sum, at most 2.2e-16 x energy^2 however many rows; this is 45 times that."""


def residue_j(energy_j: Any) -> Any:
    """The largest float residue a total of `energy_j` may carry in a sampling part (joules).

    Works on floats and on SQL column expressions alike: the one tolerance the check and the
    writes share.
    """
    return RESIDUE_J * (energy_j + 1.0)


def residue_sq(energy_j: Any) -> Any:
    """The largest float residue a total of `energy_j` may carry in a sampling part's square (J^2)."""
    return RESIDUE_SQ * (energy_j + 1.0) * (energy_j + 1.0)


SAMPLING_PARTS = (
    ("random_low_j", residue_j),
    ("random_high_j", residue_j),
    ("random_low_sq", residue_sq),
    ("random_high_sq", residue_sq),
)
"""The sampling parts of a band with the residue each may carry (see `impossible_sampling_parts`)."""


def impossible_sampling_parts(c: Any) -> list[Any]:
    """Conditions no total's sampling parts can meet: one below zero past its residue, or a part
    outside its side of the band past the same residue.

    A device total adds its rows (each part >= 0: agents round them down, inside their side) and
    the run's band revisions, which take terms back and may leave a residue below zero; the
    writes clamp a residue to 0 (`clamped_sum`), and this lets one a ledger already holds pass.
    """
    slack = residue_j(c.energy_j)
    return [
        *(c[name] < -tolerance(c.energy_j) for name, tolerance in SAMPLING_PARTS),
        c.random_low_j > c.energy_j - c.low_j + slack,
        c.random_high_j > c.high_j - c.energy_j + slack,
    ]


def clamped_sum(column: Any, added: float, energy_j: Any) -> Any:
    """`column + added` for a sampling part of a total, with a residue below zero stored as 0.

    Only a residue is clamped (within `residue_j`/`residue_sq` of `energy_j`): anything further
    below zero is kept as it is, for the check to find.
    """
    tolerance = dict(SAMPLING_PARTS)[column.name](energy_j)
    total = column + added
    return case(((total < 0) & (total >= -tolerance), 0.0), else_=total)


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
