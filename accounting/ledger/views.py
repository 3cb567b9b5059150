"""What the ledger hands its callers: frozen read models, never ORM rows or sessions.

A row read back from the database always has its id, so the read models say
``id: int`` (the tables' ``int | None`` is for rows not yet inserted), and a
caller cannot change a row by setting an attribute on what it was given.
Enumerated columns come back as their StrEnum (a stored string the enum does
not know stays a plain string rather than failing the read).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
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
    Resolution,
    Role,
    Run,
    Stage,
    Status,
)
from wattlog.errors import ConfigError
from wattlog.events import EventCategory, EventKind
from wattlog.records import EnergyFigure, EnergyInterval, FigureView, Gap, Kind, Source, summed_band

_E = TypeVar("_E", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as stored.

    Attributes:
        id: The run's id (stable across restarts).
        name: Its unique name.
        project_id: Id of the project it belongs to.
        role: development, final, ablation, baseline, failed or debug.
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
        site_figures: Its site's figures as stored at its start (None: a run from before they were).
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
    site_figures: MappingProxyType[str, Any] | None = None

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
            site_figures=None if row.site_figures is None else MappingProxyType(dict(row.site_figures)),
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
class EnergyTotal(FigureView):
    """An energy figure summed over a group, with the who and when the group shares.

    The one read model of summed energy: the ledger's per-device totals of a run
    (`run_id`, `host`, `device`, `rows`), its hourly sums (`run_id`, `hour`), and a
    device's increase over a window in Prometheus (`host`, `device`). A grouping that
    does not carry an identity field leaves it "" or None.

    Attributes:
        figure: Joules with their band, its random part, the kind and the source.
        host: The node ("" for sums over hosts).
        device: The device ("" for sums over devices).
        run_id: The run (None outside the ledger).
        hour: Hours since the Unix epoch of an hourly sum (None otherwise).
        rows: Ledger rows summed (0 outside the ledger).
        reader: Who read the figure when not wattlog's agent, e.g. "dcgm-exporter" ("" = wattlog).
    """

    figure: EnergyFigure
    host: str = ""
    device: str = ""
    run_id: int | None = None
    hour: int | None = None
    rows: int = 0
    reader: str = ""

    @classmethod
    def of(
        cls, host: str, device: str, kind: str, source: str, energy_j: float, low_j: float, high_j: float
    ) -> EnergyTotal:
        """A device's figure from label values, e.g. Prometheus' (a source may name its reader).

        Raises:
            ConfigError: A kind or source label wattlog does not know.
        """
        base, _, reader = source.partition(" (")
        try:
            figure = EnergyFigure(Kind(kind), Source(base), energy_j, low_j, high_j)
        except ValueError as error:
            kinds, sources = "|".join(Kind), "|".join(Source)
            raise ConfigError(
                f"energy labelled kind {kind!r}, source {source!r}: use kind {kinds} and source {sources}"
            ) from error
        return cls(figure, host, device, reader=reader.removesuffix(")"))

    @property
    def kind(self) -> Kind:
        """The device kind."""
        return self.figure.kind

    @property
    def source(self) -> Source | str:
        """The figure's source label, naming its reader when not wattlog (e.g. "counter (dcgm-exporter)")."""
        return f"{self.figure.source} ({self.reader})" if self.reader else self.figure.source


def interval_of(row: EnergyRecord) -> EnergyInterval:
    """The interval a stored energy row holds.

    A raw row reads back exactly as it was written. A compacted hourly row stores the
    sums of its flushes' band terms: its band is theirs summed as a total is
    (`summed_band`), its random parts the roots of the summed squares.
    """
    low_j, high_j = row.low_j, row.high_j
    random_low_j, random_high_j = row.random_low_j, row.random_high_j
    if row.resolution != Resolution.RAW.value:
        low_j, high_j = summed_band(
            low_j, high_j, random_low_j, random_high_j, row.random_low_sq, row.random_high_sq
        )
        random_low_j, random_high_j = (
            math.sqrt(max(row.random_low_sq, 0.0)),
            math.sqrt(max(row.random_high_sq, 0.0)),
        )
    return EnergyInterval.of(
        row.host,
        row.device,
        Kind(row.kind),
        Source(row.source),
        row.start_s,
        row.end_s,
        row.energy_j,
        low_j,
        high_j,
        random_low_j,
        random_high_j,
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


@dataclass(frozen=True, slots=True)
class NodeOutage:
    """A node lost while its run went on: from its last row to its return (or the run's end).

    Attributes:
        host: The node.
        start_s: Its last row's end (Unix seconds).
        end_s: When it came back, or the end of its gap so far.
        back: Whether it came back (restarted).
    """

    host: str
    start_s: float
    end_s: float
    back: bool

    def describe(self) -> str:
        """E.g. "node05 lost 12:03:01-12:10:00 UTC, restarted"."""
        span = f"{_hms(self.start_s)}-{_hms(self.end_s)} UTC"
        return f"{self.host} lost {span}, {'restarted' if self.back else 'not back'}"


def _hms(t_s: float) -> str:
    return dt.datetime.fromtimestamp(t_s, dt.UTC).strftime("%H:%M:%S")


@dataclass(frozen=True, slots=True)
class JobNodes:
    """The nodes of a run's job as the ledger knows them.

    Attributes:
        node_count: Nodes in the job (the largest count any node reported; 1 if none joined).
        joined: Hosts that joined the run, by node index.
        measuring: Hosts that joined to measure energy (not sampled out).
        indexes: The joined hosts' node indexes (0-based), in the same order.
        outages: Nodes lost while the run went on (each a gap on that node).
        collisions: Lines naming hosts reported by two machines (or two agents) at once.
    """

    node_count: int
    joined: tuple[str, ...]
    measuring: tuple[str, ...]
    indexes: tuple[int, ...] = ()
    outages: tuple[NodeOutage, ...] = ()
    collisions: tuple[str, ...] = ()

    def describe(self, measured_hosts: Sequence[str]) -> str:
        """The table note, e.g. "4 of 16 nodes measured", naming measuring nodes that stored no energy.

        Nodes lost during the run are named: "2 of 3 nodes measured throughout; n2 lost ..., restarted".
        """
        text = f"{len(set(measured_hosts))} of {self.node_count} nodes measured"
        if self.outages:
            hosts = {outage.host for outage in self.outages}
            throughout = len(set(measured_hosts) - hosts)
            shown = "; ".join(outage.describe() for outage in self.outages[:5])
            more = f" and {len(self.outages) - 5} more" if len(self.outages) > 5 else ""
            text = f"{throughout} of {self.node_count} nodes measured throughout; {shown}{more}"
        for line in self.collisions:
            text += f"; {line}"
        silent = sorted(set(self.measuring) - set(measured_hosts))
        if silent:
            shown = ", ".join(silent[:5]) + (f" and {len(silent) - 5} more" if len(silent) > 5 else "")
            text += f"; no energy from {shown}"
        absent = sorted(set(range(self.node_count)) - set(self.indexes)) if self.indexes else []
        if absent:  # a node that never joined (say, refused by a full server) is named, not averaged in
            shown = ", ".join(str(i + 1) for i in absent[:5]) + (
                f" and {len(absent) - 5} more" if len(absent) > 5 else ""
            )
            text += f"; {len(absent)} node(s) never reached the ledger (node {shown} of {self.node_count})"
        return text


def member_or_text(enum: type[_E], value: str) -> _E | str:
    """The StrEnum member for a stored string, or the string itself when the enum does not know it."""
    try:
        return enum(value)
    except ValueError:
        return value
