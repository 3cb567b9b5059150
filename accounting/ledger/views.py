"""What the ledger hands its callers: frozen read models, never ORM rows or sessions.

A row read back from the database always has its id, so the read models say
``id: int`` (the tables' ``int | None`` is for rows not yet inserted), and a
caller cannot change a row by setting an attribute on what it was given.
Enumerated columns come back as their StrEnum (a stored string the enum does
not know stays a plain string rather than failing the read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from wattlog.accounting.ledger.models import (
    EnergyRecord,
    Event,
    GapRecord,
    Phase,
    RankProgress,
    Role,
    Run,
    Stage,
    Status,
)
from wattlog.events import EventCategory, EventKind
from wattlog.records import Gap

_E = TypeVar("_E", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as stored.

    Attributes:
        id: The run's id (stable across restarts).
        name: Its unique name.
        project_id: Id of the project it belongs to.
        role: final, ablation, baseline, failed or debug.
        model, site, host: What was trained, where, on which host (may be empty).
        start_s: Unix time it was first started.
        end_s: Unix time it ended (None while running).
        status: running, finished, failed, killed or preempted.
        restarts: Attempts after the first.
        config: The run's free-form configuration (read-only).
        phase: development or final ("" = from the role: final -> final, else development).
        stage: pretraining, mid-training, sft, dpo, rl, evaluation, inference, debugging or "".
        scale_group: The run's group in the project's development table (e.g. "7B"), or "".
        device_model: The device model (e.g. "H100") for embodied figures and power limit, or "".
        gpu_hours: GPU-hours as given (None = derived from the GPU rows' time).
        requests: Requests served, for an inference run (None where not recorded).
    """

    id: int
    name: str
    project_id: int
    role: Role | str
    model: str
    site: str
    host: str
    start_s: float
    end_s: float | None
    status: Status | str
    restarts: int
    config: MappingProxyType[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    phase: Phase | str = ""
    stage: Stage | str = ""
    scale_group: str = ""
    device_model: str = ""
    gpu_hours: float | None = None
    requests: int | None = None

    @classmethod
    def of(cls, row: Run) -> RunInfo:
        """The read model of a table row read from the database."""
        assert row.id is not None, "a run read from the ledger has an id"
        return cls(
            id=row.id,
            name=row.name,
            project_id=row.project_id,
            role=member_or_text(Role, row.role),
            model=row.model,
            site=row.site,
            host=row.host,
            start_s=row.start_s,
            end_s=row.end_s,
            status=member_or_text(Status, row.status),
            restarts=row.restarts,
            config=MappingProxyType(dict(row.config or {})),
            phase=member_or_text(Phase, row.phase) if row.phase else "",
            stage=member_or_text(Stage, row.stage) if row.stage else "",
            scale_group=row.scale_group,
            device_model=row.device_model,
            gpu_hours=row.gpu_hours,
            requests=row.requests,
        )


@dataclass(frozen=True, slots=True)
class EventInfo:
    """One stored event of a run (see wattlog.events for the kinds and payloads)."""

    id: int
    run_id: int
    time_s: float
    kind: EventKind | str
    step: int | None
    category: EventCategory | str
    payload: MappingProxyType[str, Any]

    @classmethod
    def of(cls, row: Event) -> EventInfo:
        """The read model of a table row read from the database."""
        assert row.id is not None, "an event read from the ledger has an id"
        return cls(
            id=row.id,
            run_id=row.run_id,
            time_s=row.time_s,
            kind=member_or_text(EventKind, row.kind),
            step=row.step,
            category=member_or_text(EventCategory, row.category),
            payload=MappingProxyType(dict(row.payload or {})),
        )


@dataclass(frozen=True, slots=True)
class GapInfo(Gap):
    """One stored gap (a :class:`~wattlog.records.Gap`) with its id and run."""

    id: int
    run_id: int

    @classmethod
    def of(cls, row: GapRecord) -> GapInfo:
        """The read model of a table row read from the database."""
        assert row.id is not None, "a gap read from the ledger has an id"
        return cls(row.host, row.device, row.start_s, row.end_s, row.reason, id=row.id, run_id=row.run_id)


@dataclass(frozen=True, slots=True)
class EnergyRow:
    """One stored energy row (a flush interval, or an hourly bucket after compaction), joules."""

    run_id: int
    host: str
    device: str
    kind: str
    source: str
    resolution: str
    start_s: float
    end_s: float
    energy_j: float
    low_j: float
    high_j: float

    @classmethod
    def of(cls, row: EnergyRecord) -> EnergyRow:
        """The read model of a table row read from the database."""
        return cls(
            row.run_id,
            row.host,
            row.device,
            row.kind,
            row.source,
            row.resolution,
            row.start_s,
            row.end_s,
            row.energy_j,
            row.low_j,
            row.high_j,
        )


@dataclass(frozen=True, slots=True)
class RankInfo:
    """One rank's latest progress in a run: its cumulative tokens (the job's tokens are their sum)."""

    run_id: int
    rank: int
    host: str
    local_rank: int
    tokens_total: float
    step: int
    start_s: float
    updated_s: float
    flops_per_token: float | None
    peak_flops: float | None

    @classmethod
    def of(cls, row: RankProgress) -> RankInfo:
        """The read model of a table row read from the database."""
        return cls(
            row.run_id,
            row.rank,
            row.host,
            row.local_rank,
            row.tokens_total,
            row.step,
            row.start_s,
            row.updated_s,
            row.flops_per_token,
            row.peak_flops,
        )


def member_or_text(enum: type[_E], value: str) -> _E | str:
    """The StrEnum member for a stored string, or the string itself when the enum does not know it."""
    try:
        return enum(value)
    except ValueError:
        return value
