"""The durable ledger: runs and their flushed energy in SQLite or PostgreSQL.

- models: the SQLModel tables (Project, Run, EnergyRecord, GapRecord, Event, SiteRecord, IntensityPoint).
- engine: make_engine(url) opens and migrates (Alembic) the database.
- store: Ledger, the transactional reads and writes, hourly compaction.
- views: RunInfo, EventInfo, GapInfo, EnergyRow, RankInfo: the frozen read models the Ledger returns.
- jobs: runs that span nodes (join_run, job_nodes, report_rank_progress, rank_progress).
- sink: LedgerSink, the agent's IntervalSink.
"""

from __future__ import annotations

from wattlog.accounting.ledger.engine import DEFAULT_URL, ENV_VAR, describe_url, make_engine, resolve_url
from wattlog.accounting.ledger.models import Phase, Resolution, Role, Stage, Status
from wattlog.accounting.ledger.sink import LedgerSink
from wattlog.accounting.ledger.store import Compaction, EnergyTotal, HourEnergy, Ledger
from wattlog.accounting.ledger.views import EnergyRow, EventInfo, GapInfo, RankInfo, RunInfo

__all__ = [
    "DEFAULT_URL",
    "ENV_VAR",
    "Compaction",
    "EnergyTotal",
    "HourEnergy",
    "Ledger",
    "LedgerSink",
    "Phase",
    "Resolution",
    "Role",
    "RunInfo",
    "EventInfo",
    "GapInfo",
    "EnergyRow",
    "RankInfo",
    "Stage",
    "Status",
    "describe_url",
    "make_engine",
    "resolve_url",
]
