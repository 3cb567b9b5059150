"""How a node agent samples, flushes and publishes: AgentConfig, validated once; the node's lock folder."""

from __future__ import annotations

import dataclasses
import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from wattlog.errors import ConfigError
from wattlog.numbers import check_number

LOCK_DIR_ENV = "WATTLOG_LOCK_DIR"


def default_lock_dir(environ: Mapping[str, str] | None = None) -> Path:
    """$WATTLOG_LOCK_DIR, else $XDG_RUNTIME_DIR/wattlog-locks, else <tmp>/wattlog-<uid>/wattlog-locks.

    The folder this user's agents share. $XDG_RUNTIME_DIR is the user's own (0700, made by the
    login manager), so nobody else can plant anything on its way; under <tmp> the folders are
    made and checked without following links (telemetry/private_walk.py). Not <tmp>/wattlog: a
    folder named like the package in the current directory would shadow it for `python -m
    wattlog` run from <tmp>.
    """
    env = os.environ if environ is None else environ
    if env.get(LOCK_DIR_ENV):
        return Path(env[LOCK_DIR_ENV])
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / "wattlog-locks"
    # one parent per user: the folder is private (0700), so users cannot share one
    return Path(tempfile.gettempdir()) / f"wattlog-{os.getuid()}" / "wattlog-locks"


LINGER_S = 8.0
"""Default final-scrape linger: inside a preemption grace period (Kubernetes 30 s, SLURM's
KillWait 30 s) with room for the last flush; a scrape interval of 5 s or less is caught."""


@dataclass
class AgentConfig:
    """How a node agent samples, flushes and publishes.

    Raises:
        ConfigError: On construction, if a value is out of range.
    """

    period_s: float = 0.025
    """Sampling period, seconds (25 ms = 40 Hz)."""
    flush_s: float = 10.0
    """How often energy intervals go to the sinks (and the Pushgateway), seconds."""
    host: str = field(default_factory=socket.gethostname)
    """The `host` label and ledger host."""
    listen_host: str = "127.0.0.1"
    """Address the metrics server binds (loopback unless asked otherwise)."""
    port: int | None = 9464
    """Metrics port; 0 picks a free one; None serves nothing."""
    whole_node: bool = False
    """Measure every GPU of the node instead of the job's (CUDA_VISIBLE_DEVICES, SLURM)."""
    pushgateway_url: str | None = None
    """Push metrics to this Pushgateway at each flush and at close (short jobs)."""
    push_job: str = "wattlog"
    """The `job` label of pushed metrics (grouped by instance=host)."""
    lock_dir: Path = field(default_factory=default_lock_dir)
    """Folder of the per-device lock files, shared by every agent of the node ($WATTLOG_LOCK_DIR)."""
    slow_period_s: float = 1.0
    """How often slow metrics are read (GPU utilisation, temperature, memory, power limit; the
    CPU estimate's utilisation): NVML calls serialise in the driver, so only power and energy
    are read every period."""
    run: str = ""
    """The `run` label on every series ("" for a plain agent measuring no run): runs are told apart by it,
    never by the scrape target's port."""
    linger_s: float = LINGER_S
    """At close, keep serving until the next regular scrape has read `wattlog_agent_finished 1`
    (so Prometheus knows the end was normal), at most this long; no wait when nothing scrapes
    regularly; 0 closes at once. The run is closed before this wait."""
    hwmon_root: Path | None = None
    """The hwmon tree Grace's ACPI power meters are read from (None: $WATTLOG_HWMON_ROOT, else
    /sys/class/hwmon)."""
    stop_timeout_s: float = 30.0
    """At close, how long to wait for the flush thread (a sink write in progress) before warning
    that it is stuck; close then still waits for that write to hand over the last interval."""

    def __post_init__(self) -> None:
        check_number("period_s", self.period_s, low=0, high=3600, low_open=True, hint="the default is 0.025")
        check_number("flush_s", self.flush_s, low=self.period_s, high=86400, hint="try 10")
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be in 0..65535 (0 = any free port), got {self.port}")
        if self.pushgateway_url is not None and not self.pushgateway_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"pushgateway_url must start with http:// or https://, got {self.pushgateway_url!r}"
            )
        if not self.host:
            raise ConfigError("host must not be empty; it labels every series and ledger row")
        check_number("linger_s", self.linger_s, low=0, high=3600, hint="0 closes at once")
        check_number("stop_timeout_s", self.stop_timeout_s, low=0, high=3600, hint="the default is 30")
        if not self.slow_period_s >= self.period_s:
            raise ConfigError(
                f"slow_period_s ({self.slow_period_s}) must be >= period_s ({self.period_s}); try 1.0"
            )
        self.lock_dir = Path(self.lock_dir)

    def with_port(self, port: int | None) -> AgentConfig:
        """A copy serving on `port`."""
        return dataclasses.replace(self, port=port)
