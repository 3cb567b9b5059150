"""`wattlog calibrate --site S` measures its own window: idle, then under the health check's load.

A run is recorded with this node's agent (its devices and the BMC's node meter, found
as `wattlog agent` finds them: WATTLOG_REDFISH_URL or WATTLOG_DCMI), in two named
windows, `idle` and `load`; the load is the health check's matrix multiplications on
every device (trainer.health), repeated until the window ends. The run is then
calibrated like any other (accounting.fleet.calibration.calibrate): node / device energy, with
the band both bands allow, its date and hardware.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

from wattlog.accounting.fleet.calibration import CalibrationWindow
from wattlog.accounting.ledger import Status
from wattlog.errors import ConfigError
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.base import Sensor
from wattlog.trainer.session import RunSession, SessionConfig

Load = Callable[[float], None]
"""Keeps the devices busy for the given seconds."""


def health_load(seconds: float) -> None:
    """The health check's multiplications on every device (one thread each) for `seconds`.

    Raises:
        ConfigError: torch is not installed (the load is torch's matrix multiplication).
    """
    try:
        from wattlog.trainer.health import default_devices, health_check  # torch: only when loading
    except ImportError as e:
        raise ConfigError(f"the load needs torch ({e}): pip install torch, or calibrate from a run") from e
    deadline = time.monotonic() + seconds

    def spin(device: str) -> None:
        while time.monotonic() < deadline:
            health_check(device, repeats=1)

    devices = default_devices()
    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        for done in [pool.submit(spin, device) for device in devices]:
            done.result()  # a failing device fails the calibration


def measure_window(
    window: CalibrationWindow,
    *,
    sensors: Sequence[Sensor] | None = None,
    agent_config: AgentConfig | None = None,
    load: Load = health_load,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Record the calibration run (idle, then loaded) and return its name.

    Args:
        window: What to measure, for how long, into which ledger.
        sensors: The sensors (default: discovered, the BMC's node meter among them).
        agent_config: The agent's settings (default: no metrics port, rows every `window.flush_s`).
        load: What keeps the devices busy during the load window.
        sleep: How the idle window waits.
    """
    run = window.run or f"calibrate-{window.site}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    agent = agent_config or AgentConfig(port=None)
    config = SessionConfig(
        run,
        site=window.site,
        db=window.db,
        agent_config=replace(agent, flush_s=window.flush_s, run=run),
        config={"calibration": {"idle_s": window.idle_s, "load_s": window.load_s}},
    )
    session = RunSession(config, sensors=sensors).start()
    status = Status.FAILED
    try:
        assert session.agent is not None  # the only rank of its node owns the agent
        with session.agent.window("idle"):
            sleep(window.idle_s)
        with session.agent.window("load"):
            load(window.load_s)
        status = Status.FINISHED
    finally:
        session.close(status)
    return run
