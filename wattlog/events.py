"""Run events: their kinds, categories and typed payloads, shared by every writer and reader.

The ledger stores an event as (kind, category, step, time, JSON payload). The
kinds and categories are closed sets (StrEnum, so a stored string compares
equal to its member); each payload that several packages read has a frozen
dataclass here with ``to_json()`` for the writer and ``from_json()`` for the
reader, so a field name is spelled once. Nothing here imports beyond the
standard library: every layer may import it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class EventKind(StrEnum):
    """What happened in a run."""

    RESTART = "restart"
    """The run was resumed (a new attempt)."""
    PROGRESS = "progress"
    """Training reached a step (payload: :class:`Progress`)."""
    CHECKPOINT = "checkpoint"
    """The trainer saved a checkpoint at `step`."""
    LOST_WORK = "lost_work"
    """Steps a restart redoes (payload: their window start_s/end_s, steps and joules)."""
    HEALTH_CHECK = "health_check"
    """A device health check (payload: the check's figures, with start_s, end_s and ok)."""
    ALERT = "alert"
    """An alert received by the webhook (payload: the alert, with its idempotency key)."""
    LOSS_SPIKE = "loss_spike"
    GRAD_NORM_SPIKE = "grad_norm_spike"
    NON_FINITE = "non_finite"
    LOSS_SCALE_COLLAPSE = "loss_scale_collapse"
    ACTIVATION_GROWTH = "activation_growth"
    STOPPED = "stopped"
    """The run was stopped by a signal (payload: :class:`Stopped`)."""
    INVALID_TOKENS = "invalid_tokens"
    """A step reported a token count that is no count (NaN, infinite or negative): skipped, counted."""
    EXCEPTION = "exception"
    """Training raised (a framework callback's on_exception; payload: type, message, rank)."""
    LOST = "lost"
    """The run's agent stopped renewing its lease: closed as lost (payload: lease_until_s, last_row_s)."""
    CLOCK_STEP = "clock_step"
    """The wall clock stepped during the run (payload: step_s, wall_s, end_s); durations kept monotonic."""
    ACTIVITY = "activity"
    """What a command measured under `wattlog run` did (payload: :class:`Activity`)."""
    NODE_LOST = "node_lost"
    """A node's lease expired while the run went on (payload: host, last_row_s, lease_until_s)."""
    HOST_COLLISION = "host_collision"
    """Two machines (or two agents) reported under one host name at once (payload: host, machines)."""
    RESITE = "resite"
    """The run's site figures were changed on purpose (`wattlog runs resite`; payload: before, after)."""
    COUNTER_CHECK = "counter_check"
    """A device's energy counter beside power x time at start-up (payload: host, device, counter_j,
    power_j, span_s): the validity gate trusts a counter only within 0.1-10x."""


INSTABILITIES = frozenset(
    {
        EventKind.LOSS_SPIKE,
        EventKind.GRAD_NORM_SPIKE,
        EventKind.NON_FINITE,
        EventKind.LOSS_SCALE_COLLAPSE,
        EventKind.ACTIVATION_GROWTH,
    }
)
"""The kinds the detectors emit (sent to alert webhooks)."""


class EventCategory(StrEnum):
    """Where the energy around an event is attributed (the split by use reads it)."""

    NONE = ""
    PRODUCTIVE = "productive"
    LOST_WORK = "lost_work"
    HEALTH_CHECK = "health_check"
    DOWNTIME = "downtime"
    INSTABILITY = "instability"
    ALERT = "alert"


@dataclass(frozen=True, slots=True)
class Progress:
    """Payload of a ``progress`` event: how far an attempt got and how fast.

    Attributes:
        attempt: 0 for the first attempt, +1 per restart.
        attempt_start_s: Unix time of the attempt's first step.
        tokens_total: Tokens reported in this attempt.
        tokens_per_s: Throughput of the latest batch (None before the first).
        tokens_per_j: Tokens per joule of the latest batch, or of the whole job when it has
            several ranks (None without energy).
        mfu: Model FLOPs utilisation, 0..1 (None without FLOPs figures); the whole job's likewise.
        job_ranks: Ranks whose tokens the job's figures count (None: one rank's figures).
        job_tokens: Tokens of every rank of the job so far.
        job_tokens_per_s: The whole job's tokens per second.
    """

    attempt: int
    attempt_start_s: float | None
    tokens_total: float
    tokens_per_s: float | None = None
    tokens_per_j: float | None = None
    mfu: float | None = None
    job_ranks: int | None = None
    job_tokens: float | None = None
    job_tokens_per_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored payload (speed figures only when known)."""
        out = asdict(self)
        return {k: v for k, v in out.items() if v is not None or k == "attempt_start_s"}

    @classmethod
    def from_json(cls, payload: Mapping[str, Any], time_s: float) -> Progress:
        """Read a stored payload (older rows may lack fields: the event time stands in)."""
        start = payload.get("attempt_start_s")
        return cls(
            attempt=int(payload.get("attempt", 0)),
            attempt_start_s=float(start) if start is not None else time_s,
            tokens_total=_number(payload.get("tokens_total", 0.0)),
            tokens_per_s=_optional(payload.get("tokens_per_s")),
            tokens_per_j=_optional(payload.get("tokens_per_j")),
            mfu=_optional(payload.get("mfu")),
            job_ranks=int(payload["job_ranks"]) if payload.get("job_ranks") is not None else None,
            job_tokens=_optional(payload.get("job_tokens")),
            job_tokens_per_s=_optional(payload.get("job_tokens_per_s")),
        )


@dataclass(frozen=True, slots=True)
class Window:
    """A stretch of time an event covers (health checks, lost work), Unix seconds."""

    start_s: float
    end_s: float

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> Window | None:
        """The payload's window, or None when it has none."""
        if "start_s" not in payload or "end_s" not in payload:
            return None
        return cls(float(payload["start_s"]), float(payload["end_s"]))


@dataclass(frozen=True, slots=True)
class Activity:
    """Payload of an ``activity`` event: the CPU time a command used over its run, Unix seconds.

    Attributes:
        start_s: When the command started.
        end_s: When it ended.
        cpu_s: CPU time (user + system) of the command and the descendants it waited for.
        gpu_busy: Mean utilisation of the node's GPUs meanwhile, 0..1, from the sensors' readings
            (None: no GPU, or its sensor gives no utilisation).
        runnable: Fraction of samples in which a process of the command was runnable (on a CPU or
            waiting for one), 0..1: a CPU-bound command on a loaded machine is busy, not idle
            (None: not sampled).
    """

    start_s: float
    end_s: float
    cpu_s: float
    gpu_busy: float | None = None
    runnable: float | None = None

    @property
    def cpu_busy(self) -> float:
        """Fraction of its time the command kept a CPU busy, 0..1 (several busy cores count as one)."""
        wall_s = self.end_s - self.start_s
        return min(1.0, max(0.0, self.cpu_s / wall_s)) if wall_s > 0 else 0.0

    @property
    def busy(self) -> float:
        """Fraction of its time the command was busy: the highest of CPU time, runnable and GPU use."""
        return max(self.cpu_busy, self.runnable or 0.0, self.gpu_busy or 0.0)

    def to_json(self) -> dict[str, Any]:
        """The stored payload (``gpu_busy`` and ``runnable`` only when known)."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> Activity | None:
        """Read a stored payload (None when a field is missing)."""
        try:
            times = (float(payload["start_s"]), float(payload["end_s"]), float(payload["cpu_s"]))
            return cls(*times, _optional(payload.get("gpu_busy")), _optional(payload.get("runnable")))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Restart:
    """Payload of a ``restart`` event."""

    restarts: int

    def to_json(self) -> dict[str, Any]:
        """The stored payload."""
        return {"restarts": self.restarts}


@dataclass(frozen=True, slots=True)
class DetectionPayload:
    """Payload of an instability event (a detector's finding)."""

    value: float
    threshold: float
    message: str
    rank: int

    def to_json(self) -> dict[str, Any]:
        """The stored payload."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Stopped:
    """Payload of a ``stopped`` event: the signal that ended the run and what became of its command."""

    signal: str
    exit_code: int

    def to_json(self) -> dict[str, Any]:
        """The stored payload."""
        return asdict(self)


def json_safe(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A payload with non-finite floats as text (PostgreSQL's JSON has no NaN)."""
    return {k: (repr(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in payload.items()}


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _optional(value: Any) -> float | None:
    return None if value is None else _number(value)
