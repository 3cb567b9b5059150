"""The durable ledger: runs and their flushed energy in SQLite or PostgreSQL.

- models: the SQLModel tables (Project, Run, EnergyRecord, GapRecord, Event, SiteRecord, IntensityPoint).
- engine: make_engine(url) opens and migrates (Alembic) the database.
- store: Ledger, the transactional reads and writes, hourly compaction.
- views: RunInfo, EventInfo, GapInfo, EnergyRow: the frozen read models the Ledger returns.
- sink: LedgerSink, the agent's IntervalSink.
"""

from __future__ import annotations

from wattlog.accounting.ledger.engine import DEFAULT_URL, ENV_VAR, describe_url, make_engine, resolve_url
from wattlog.accounting.ledger.models import Resolution, Role, Status
from wattlog.accounting.ledger.sink import LedgerSink
from wattlog.accounting.ledger.store import Compaction, EnergyTotal, HourEnergy, Ledger
from wattlog.accounting.ledger.views import EnergyRow, EventInfo, GapInfo, RunInfo

__all__ = [
    "DEFAULT_URL",
    "ENV_VAR",
    "Compaction",
    "EnergyTotal",
    "HourEnergy",
    "Ledger",
    "LedgerSink",
    "Resolution",
    "Role",
    "RunInfo",
    "EventInfo",
    "GapInfo",
    "EnergyRow",
    "Status",
    "describe_url",
    "make_engine",
    "resolve_url",
]
