"""Runs in the ledger: finding one by id or name, a new run's project and labels, a resumed run.

Each function works inside a transaction the caller opened (see `Ledger.transaction`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar, cast

from sqlalchemy import Table, select
from sqlalchemy.orm import Session
from sqlmodel import col

from wattlog.accounting.ledger.models import Event, Phase, Project, Role, Run, Stage, Status
from wattlog.accounting.ledger.reader import find_run
from wattlog.accounting.ledger.views import RunInfo
from wattlog.errors import ConfigError
from wattlog.events import EventCategory, EventKind, Restart

_E = TypeVar("_E", Role, Status, Phase, Stage)


def resume_run(session: Session, run: Run, now_s: float) -> None:
    """Set a found run running again, one more restart, with its restart event."""
    run.status = Status.RUNNING.value
    run.end_s = None
    run.lease_until_s = None  # the last attempt's lease: the new attempt's agent renews its own
    run.restarts += 1
    session.add(
        Event(
            run_id=cast(int, run.id),
            time_s=now_s,
            kind=EventKind.RESTART,
            category=EventCategory.DOWNTIME,
            payload=Restart(run.restarts).to_json(),
        )
    )
    session.flush()


def project_row(session: Session, name: str, now_s: float) -> Project:
    """The project of this name, created if missing; safe when many runs start at once."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert  # type: ignore[assignment]
    table = cast(Table, Project.__table__)  # type: ignore[attr-defined]
    statement = upsert(table).values(name=name, created_s=now_s)
    session.execute(statement.on_conflict_do_nothing(index_elements=["name"]))
    return session.execute(select(Project).where(col(Project.name) == name)).scalars().one()


def member(enum: type[_E], value: _E | str, what: str) -> _E:
    try:
        return enum(value)
    except ValueError as error:
        allowed = "|".join(member.value for member in enum)
        raise ConfigError(f"unknown {what} {value!r}: use {allowed}") from error


@dataclass
class RunSpec:
    """What a new run is (`Ledger.start_run`): every field has a default."""

    project: str = "default"
    """The project the run belongs to (created on first use)."""
    role: Role | str = Role.DEVELOPMENT
    """final, ablation, sweep, debug, failed, ..."""
    model: str = ""
    """The model trained, as the table names it."""
    site: str = ""
    """The site it ran at ("" = none: energy only, no CO2 or water)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The training configuration, stored as JSON."""
    host: str = ""
    """The host that started it."""
    phase: Phase | str = ""
    """Development or final ("" = from the role: final -> final, else development)."""
    stage: Stage | str = ""
    """Pre-training, mid-training, SFT, ... (the follow-up paper's tables group by it)."""
    scale_group: str = ""
    """The model scale it belongs to in the development tables (e.g. "7B")."""
    device_model: str = ""
    """The accelerator (e.g. "H100"): selects its embodied figures and power limit."""
    site_figures: dict[str, Any] | None = None
    """The site's figures as the run is accounted with them (accounting's run_sites.site_figures)."""


class RunLabels(TypedDict):
    """A new run's labels, as Run's columns."""

    phase: str
    stage: str
    scale_group: str
    device_model: str


def run_labels(phase: Phase | str, stage: Stage | str, scale_group: str, device_model: str) -> RunLabels:
    """The checked phase, stage, scale group and device model of a new run ("" where not given)."""
    if len(scale_group) > 100 or len(device_model) > 100:
        raise ConfigError("scale group and device model must be at most 100 characters")
    return {
        "phase": member(Phase, phase, "phase").value if phase else "",
        "stage": member(Stage, str(stage).lower(), "stage").value if stage else "",
        "scale_group": scale_group.strip(),
        "device_model": device_model.strip(),
    }


def set_figures(session: Session, run: int | str, gpu_hours: float | None, requests: int | None) -> RunInfo:
    """Store a run's GPU-hours and requests served, each where given.

    Raises:
        ConfigError: A negative or non-finite figure (checked before the run is looked up).
        RunNotFound: No such run.
    """
    if gpu_hours is not None and not (math.isfinite(gpu_hours) and gpu_hours >= 0):
        raise ConfigError(f"GPU-hours must be a finite number >= 0, got {gpu_hours}")
    if requests is not None and requests < 0:
        raise ConfigError(f"requests must be >= 0, got {requests}")
    row = find_run(session, run)
    if gpu_hours is not None:
        row.gpu_hours = gpu_hours
    if requests is not None:
        row.requests = requests
    session.flush()
    return RunInfo.of(row)
