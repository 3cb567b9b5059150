"""The durable ledger: runs and their flushed energy in SQLite or PostgreSQL.

- models: the SQLModel tables (Project, Run, EnergyRecord, GapRecord, Event, SiteRecord, IntensityPoint).
- engine: make_engine(url) opens and migrates (Alembic) the database.
- connections: Connections, how many connections a process holds to PostgreSQL; refusals retried.
- location: where the ledger is (one per user, $WATTLOG_DB to override) and how to name it.
- runs: RunSpec, what a new run is (`Ledger.start_run(name, RunSpec(...))`).
- store: Ledger, the facade: one transaction a call; `Ledger.reading(run)` for many reads in one.
- runs, writes, reader, compaction: what the Ledger does, one module per job.
- partitions, day_plan, placement, server_fold (PostgreSQL): day partitions made ahead of their rows,
  DEFAULT's rows moved to their days (`wattlog partitions`), a day compacted by the server.
- views: RunInfo, EventInfo, GapInfo, EnergyTotal, JobNodes, RankInfo: the frozen read models the Ledger
  returns (energy rows come back as wattlog.records.EnergyInterval).
- jobs: runs that span nodes (join_run, job_nodes, report_rank_progress, rank_progress).
- sink: LedgerSink, the agent's IntervalSink.
"""

from __future__ import annotations

from wattlog.accounting.ledger.compaction import Compaction
from wattlog.accounting.ledger.connections import Connections
from wattlog.accounting.ledger.engine import ENV_VAR, describe_url, make_engine, resolve_url
from wattlog.accounting.ledger.location import default_url, ledger_line
from wattlog.accounting.ledger.models import Phase, Resolution, Role, Stage, Status
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.sink import LedgerSink
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import (
    EnergyTotal,
    EventInfo,
    GapInfo,
    RankInfo,
    RunInfo,
)

__all__ = [
    "ENV_VAR",
    "Compaction",
    "Connections",
    "EnergyTotal",
    "Ledger",
    "LedgerSink",
    "Phase",
    "Resolution",
    "Role",
    "RunInfo",
    "RunSpec",
    "EventInfo",
    "GapInfo",
    "RankInfo",
    "Stage",
    "Status",
    "default_url",
    "describe_url",
    "ledger_line",
    "make_engine",
    "resolve_url",
]
