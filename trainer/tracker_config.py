"""The Tracker's configuration: one dataclass, validated once, on construction (torch-free)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wattlog.errors import ConfigError
from wattlog.trainer.session_config import SessionConfig


@dataclass
class TrackerConfig:
    """What the Tracker records (the session) and how it handles steps.

    Raises:
        ConfigError: On construction, if a value is out of range.
    """

    session: SessionConfig
    """The run: name, site, ledger, ranks, agent."""
    log_every: int = 10
    """Steps between moves of the metrics to the host (one non-blocking copy each)."""
    gc_every: int | None = 1000
    """Explicit GC every this many steps with automatic GC off; None leaves GC alone."""
    flops_per_token: float | None = None
    """Training FLOPs per token, for MFU."""
    peak_flops: float | None = None
    """Peak FLOP/s of the devices that train, for MFU."""
    health_check: bool = False
    """Run the device health check before training (recorded; failing raises)."""
    device: str = "cpu"
    """Device of the health check (cpu, cuda:N)."""
    progress_every_s: float = 30.0
    """Seconds between progress events in the ledger."""
    stop_timeout_s: float = 30.0
    """How long close() waits for the bookkeeping thread to finish its queue and stop, seconds."""
    handle_signals: bool = True
    """In the main thread, SIGTERM/SIGINT flush and close the run (preempted/killed) before the
    handler that was installed runs (or the process ends as it would have); restored at close."""

    quiet: bool = False
    """Print nothing when the run ends (the figures stay in the ledger: `wattlog table RUN`)."""
    table: bool = False
    """End with the run beside Table 19 and its energy split instead of the few closing lines."""

    def __post_init__(self) -> None:
        """Validate the settings."""
        if self.log_every < 1:
            raise ConfigError(f"log_every must be >= 1, got {self.log_every}")
        if self.gc_every is not None and self.gc_every < 1:
            raise ConfigError(f"gc_every must be >= 1 or None, got {self.gc_every}")
        if not (self.progress_every_s > 0 and math.isfinite(self.progress_every_s)):
            raise ConfigError(f"progress_every_s must be a finite number > 0, got {self.progress_every_s}")
        if not (self.stop_timeout_s >= 0 and math.isfinite(self.stop_timeout_s)):
            raise ConfigError(f"stop_timeout_s must be a finite number >= 0, got {self.stop_timeout_s}")
        for name in ("flops_per_token", "peak_flops"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number, got {value}")

    @classmethod
    def from_kwargs(
        cls,
        run: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> TrackerConfig:
        """Build from the Tracker's keyword arguments, reading unset names and ranks from `environ`."""
        own = {f.name for f in dataclasses.fields(cls)} - {"session"}
        mine = {k: kwargs.pop(k) for k in list(kwargs) if k in own}
        kwargs["config"] = kwargs.get("config") or {}
        return cls(session=SessionConfig.from_env(run, environ=environ, **kwargs), **mine)
