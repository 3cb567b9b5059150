"""The ledger's tables (SQLModel): projects, runs, energy records, gaps, events, sites, intensity.

Times are Unix seconds (floats), energies joules of IT energy as the sensors
measured it (facility energy, x PUE, is derived by the accounting, never
stored). Enumerated columns are stored as plain strings and checked by the
store against the StrEnums here, so adding a role needs no migration.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import JSON, Column, Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from wattlog.accounting.ledger.rollups import (
    IMPOSSIBLE_ENERGY_SQL,
    EnergyHourRollup,
    EnergyRollup,
    EnergySums,
)
from wattlog.accounting.units import HOUR_S


class Role(StrEnum):
    """What a run was for; `wattlog table --project` totals all roles beside the final run.

    A run is development unless marked final: failed attempts and typos never become Table 19
    rows by default (`wattlog runs relabel NAME --role final` marks the one that counts).
    """

    DEVELOPMENT = "development"
    FINAL = "final"
    ABLATION = "ablation"
    BASELINE = "baseline"
    FAILED = "failed"
    DEBUG = "debug"


class Phase(StrEnum):
    """Development (sweeps, ablations, failed runs) or a model's final run (Morrison et al., ICLR 2025)."""

    DEVELOPMENT = "development"
    FINAL = "final"


class Stage(StrEnum):
    """What a run did: the stages the Olmo 3 follow-up (arXiv 2605.01158) reports apart."""

    PRETRAINING = "pretraining"
    MID_TRAINING = "mid-training"
    SFT = "sft"
    DPO = "dpo"
    RL = "rl"
    EVALUATION = "evaluation"
    INFERENCE = "inference"
    DEBUGGING = "debugging"


class Status(StrEnum):
    """Where a run stands."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    KILLED = "killed"
    PREEMPTED = "preempted"
    """Stopped by SIGTERM (what SLURM and Kubernetes send on preemption); a resume continues it."""
    LOST = "lost"
    """Its agent stopped renewing the run's lease (killed -9, node gone): closed by a reader or a reap."""


class Resolution(StrEnum):
    """Raw rows are one flush interval each; hourly rows are compacted buckets."""

    RAW = "raw"
    HOURLY = "hourly"


def hour_of(t_s: float) -> int:
    """Hours since the Unix epoch of the hour that contains `t_s` (the bucket key).

    >>> hour_of(7199.9), hour_of(7200.0)
    (1, 2)
    """
    return int(t_s // HOUR_S)


class Project(SQLModel, table=True):
    """A body of work whose runs (final, ablations, baselines, failures) add up."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, max_length=200)
    created_s: float


class RunBase(SQLModel):
    """What the caller says about a run (the fields `Ledger.start_run` takes)."""

    name: str = Field(max_length=200)
    role: str = Field(default=Role.DEVELOPMENT.value, max_length=20)
    model: str = Field(default="", max_length=200)
    site: str = Field(default="", max_length=200)
    host: str = Field(default="", max_length=200)
    phase: str = Field(default="", max_length=20)  # "" = from role: final -> final, else development
    stage: str = Field(default="", max_length=20)
    scale_group: str = Field(default="", max_length=100)  # e.g. "1B", "7B": Table 1's groups
    device_model: str = Field(default="", max_length=100)  # e.g. "H100": embodied figures, power limit
    gpu_hours: float | None = None  # as given; None = derived from the GPU rows' time
    requests: int | None = None  # requests served, for an inference run


class Run(RunBase, table=True):
    """One training run; a restarted run continues the same row (same id)."""

    __table_args__ = (UniqueConstraint("name", name="uq_run_name"), Index("ix_run_project", "project_id"))

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    start_s: float
    end_s: float | None = None
    status: str = Field(default=Status.RUNNING.value, max_length=20)
    restarts: int = 0
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    lease_until_s: float | None = None
    """Until when the run's agent promised to write (renewed at each flush); None: no lease, never reaped."""
    site_figures: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """The site's figures it is accounted with, stored at its start (None: a run from before 0018)."""


LONG_ROW_SQL = "end_s - start_s > 3600"
"""An energy row longer than an hour (an import or a published figure; flushes and hourly rows are
not): a partial index holds only these, so a reader bounds how far back a row can reach without
scanning the run's rows; as above, a query uses it only with this exact text."""


class EnergyRecord(EnergySums, table=True):
    """IT energy of one device over one flush interval (raw) or one hour (hourly), with its source."""

    __tablename__ = "energy_record"
    __table_args__ = (
        # end_s last: the latest end before a restart is one seek per hour (RunReader.last_end_before),
        # not a read of the hours' rows (a million in three raw hours of 1,024 GPUs)
        Index("ix_energy_run_hour_end", "run_id", "hour", "end_s"),
        Index("ix_energy_resolution_hour", "resolution", "hour"),
        # a flush's duplicate check reads its own host's raw keys of the hour, never the whole fleet's
        # (resolution before hour: with it after, SQLite plans on ix_energy_resolution_hour instead)
        Index("ix_energy_run_host_resolution_hour", "run_id", "host", "resolution", "hour"),
        Index(
            "ix_energy_impossible",
            "run_id",
            sqlite_where=text(IMPOSSIBLE_ENERGY_SQL),
            postgresql_where=text(IMPOSSIBLE_ENERGY_SQL),
        ),
        Index(
            "ix_energy_long", "run_id", sqlite_where=text(LONG_ROW_SQL), postgresql_where=text(LONG_ROW_SQL)
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    host: str = Field(max_length=200)
    device: str = Field(max_length=200)
    kind: str = Field(max_length=20)
    source: str = Field(max_length=20)
    resolution: str = Field(default=Resolution.RAW.value, max_length=10)
    hour: int  # hour_of(start_s): rows are bucketed by the hour they start in
    start_s: float
    end_s: float
    # energy_j and its band terms: EnergySums


REASON_CHARS = 500
"""The longest reason a gap or a band revision stores (longer ones are cut)."""


class Stretch(SQLModel):
    """The columns a gap and a band revision share: a device's stretch of a run, and why it is stored."""

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    host: str = Field(max_length=200)
    device: str = Field(max_length=200)
    start_s: float
    end_s: float
    reason: str = Field(default="", max_length=REASON_CHARS)


class StretchLike(Protocol):
    """What a stretch row is made of (a wattlog.records Gap or BandRevision)."""

    @property
    def host(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float: ...
    @property
    def reason(self) -> str: ...


def stretch_row(run_id: int, stretch: StretchLike) -> dict[str, Any]:
    """The `Stretch` columns of a gap or a band revision of the run, for an insert."""
    return {
        "run_id": run_id,
        "host": stretch.host,
        "device": stretch.device,
        "start_s": stretch.start_s,
        "end_s": stretch.end_s,
        "reason": stretch.reason[:REASON_CHARS],
    }


class BandRevisionRecord(Stretch, table=True):
    """A revision of the band of a device's rows in [start_s, end_s], from evidence learned after them.

    The rows are never rewritten: the revision is stored beside them with its reason, and
    added to the device's rollup (so totals give the band the agent gave). Its columns are
    what it adds to each of wattlog.records.BAND_TERMS.
    """

    __tablename__ = "band_revision"
    __table_args__ = (Index("ix_band_revision_run", "run_id", "host", "device"),)

    low_j: float
    high_j: float
    random_low_j: float
    random_high_j: float
    random_low_sq: float
    random_high_sq: float


class GapRecord(Stretch, table=True):
    """A stretch in which a device was not measured; never filled in (its reason: wattlog.gap_reasons)."""

    __tablename__ = "gap"
    __table_args__ = (Index("ix_gap_run", "run_id"),)


class Event(SQLModel, table=True):
    """Something that happened in a run (restart, health_check, alert, loss_spike, ...).

    `category` says where energy around the event is attributed (e.g. "downtime",
    "wasted", "productive"), so the accounting can report waste.
    """

    __table_args__ = (Index("ix_event_run_time", "run_id", "time_s"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    time_s: float
    kind: str = Field(max_length=50)
    step: int | None = None
    category: str = Field(default="", max_length=50)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class SiteRecord(SQLModel, table=True):
    """A user-defined site stored in the ledger: the site's fields as JSON, with their source."""

    __tablename__ = "site"

    name: str = Field(primary_key=True, max_length=200)
    definition: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    source: str = Field(default="", max_length=500)


class IntensityPoint(SQLModel, table=True):
    """One hour of a carbon-intensity series (kg CO2 per kWh)."""

    __tablename__ = "intensity_point"

    series: str = Field(primary_key=True, max_length=200)
    hour: int = Field(primary_key=True)
    kg_per_kwh: float
    source: str = Field(default="", max_length=500)


class JobNode(SQLModel, table=True):
    """One node of a run's job, as its agent or tracker joined: which hosts there are, which measured.

    A run spans nodes; each node writes its own row (keyed by host), so the
    ledger knows the job's node count even when only K of its N nodes measure
    energy (``--sample-nodes``) or a node's agent never started.
    """

    __tablename__ = "job_node"

    run_id: int = Field(foreign_key="run.id", primary_key=True)
    host: str = Field(primary_key=True, max_length=200)
    node_index: int = 0
    node_count: int = 1  # nodes in the job, as this node's scheduler said
    job_id: str = Field(default="", max_length=200)  # SLURM_JOB_ID (or torchrun's run id)
    measured: bool = True  # False: this node only reports steps (sampled out)
    joined_s: float
    lease_until_s: float | None = None  # renewed by the node's agent with each flush; None: no lease
    state: str = Field(default="", max_length=10)  # live | lost | left ("" before it held a lease)
    machine_id: str = Field(default="", max_length=64)  # tells two machines behind one host name apart
    agent_id: str = Field(default="", max_length=64)  # the agent process holding the node's lease


class RankProgress(SQLModel, table=True):
    """Each rank's cumulative tokens and steps: the one place the job's tokens are counted across ranks.

    Every rank upserts its own row; the job's tokens are the sum over rows
    (:mod:`wattlog.accounting.publishing.job_speed`), never one rank's count.
    """

    __tablename__ = "rank_progress"

    run_id: int = Field(foreign_key="run.id", primary_key=True)
    rank: int = Field(primary_key=True)
    host: str = Field(default="", max_length=200)
    local_rank: int = 0
    tokens_total: float = 0.0
    step: int = 0
    start_s: float
    updated_s: float
    flops_per_token: float | None = None
    peak_flops: float | None = None  # all ranks together, as the tracker takes it


class WindowRecord(SQLModel, table=True):
    """IT energy of one device over one named window of a run (`with agent.window("eval"):`)."""

    __tablename__ = "energy_window"
    __table_args__ = (Index("ix_window_run", "run_id", "start_s"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    name: str = Field(max_length=200)
    parent: str = Field(default="", max_length=200)
    host: str = Field(max_length=200)
    device: str = Field(max_length=200)
    kind: str = Field(max_length=20)
    source: str = Field(max_length=20)
    start_s: float
    end_s: float
    energy_j: float
    low_j: float
    high_j: float


TABLES = (
    Project,
    Run,
    EnergyRecord,
    EnergyRollup,
    EnergyHourRollup,
    GapRecord,
    Event,
    SiteRecord,
    IntensityPoint,
    JobNode,
    RankProgress,
    WindowRecord,
)


class InstrumentUse(SQLModel, table=True):
    """MWh of a site's contractual instrument used by a run in one matching period (market-based Scope 2).

    An instrument's MWh are used once across runs and calls: `wattlog scope2` subtracts the
    uses of every other run before matching a run, and replaces the run's own uses after.
    `period` is the year (annual matching) or the hour start, Unix s (hourly matching).
    """

    __tablename__ = "instrument_use"
    __table_args__ = (
        UniqueConstraint("site", "instrument", "method", "period", "run_id", name="uq_instrument_use"),
    )

    id: int | None = Field(default=None, primary_key=True)
    site: str = Field(max_length=200)
    instrument: str = Field(max_length=200)
    method: str = Field(max_length=20)
    period: int
    run_id: int = Field(foreign_key="run.id", index=True)
    mwh: float
    recorded_s: float
