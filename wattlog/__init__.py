"""wattlog: the energy, carbon and water of training runs, measured live and published as Table 19.

The public API, importable from here (``from wattlog import Tracker, Agent, Ledger``):

- measuring: ``Agent``, ``AgentConfig`` (wattlog.telemetry.agent); ``FakeClock``, ``SystemClock``.
- recording: ``Ledger``, ``make_engine`` (wattlog.accounting.ledger).
- accounting: ``Site``, ``get_site``, ``Energy``, ``Footprint``, ``footprint_for`` (wattlog.accounting).
- training: ``Tracker``, ``Callback``, ``GCCallback``, ``SpeedCallback``, ``StabilityCallback``,
  ``health_check``, ``TrackerConfig`` (wattlog.trainer; needs the ``torch`` extra); ``RunSession``,
  ``SessionConfig`` (the torch-free run that ``wattlog run`` uses).
- vocabulary: ``Kind``, ``Source``, ``EnergyInterval``, ``Gap``, ``EventKind``, ``EventCategory`` and the
  errors (``WattlogError``, ``RunNotFound``, ...).

Sub-packages, imports flowing one way (checked by import-linter, see pyproject.toml):
wattlog.telemetry -> wattlog.accounting -> {wattlog.trainer, wattlog.dashboards} -> wattlog.cli.

Names are imported on first use, so ``import wattlog`` and ``wattlog --help`` stay cheap (no torch,
no SQLAlchemy); type checkers see the real signatures through the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from wattlog.lazy import lazy_package

__version__ = "0.2.0"

if TYPE_CHECKING:
    from wattlog.accounting.carbon.sites import Site, get_site
    from wattlog.accounting.it_energy import Energy
    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.accounting.publishing.footprint import Footprint, footprint_for
    from wattlog.clock import FakeClock, SystemClock
    from wattlog.errors import (
        ConfigError,
        DeviceLost,
        LedgerError,
        NotSupported,
        RunNotFound,
        SensorError,
        SensorUnavailable,
        WattlogError,
    )
    from wattlog.events import EventCategory, EventKind
    from wattlog.records import EnergyInterval, Gap, Kind, Source
    from wattlog.telemetry.agent import Agent, AgentConfig
    from wattlog.trainer.callback import Callback
    from wattlog.trainer.callbacks import GCCallback, SpeedCallback, StabilityCallback
    from wattlog.trainer.health import health_check
    from wattlog.trainer.session import RunSession, SessionConfig
    from wattlog.trainer.tracker import Tracker, TrackerConfig


class _ErrorsWhenUnconfigured(logging.Handler):
    """Shows wattlog's errors on stderr while the application has configured no logging at all.

    A library must not configure logging (no basicConfig here), but a user who
    configured nothing must still learn that data was lost: Python's own
    last-resort handler is silenced by the NullHandlers below, so this one
    stands in for it, for ERROR and above, until the root logger gets a handler.
    """

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.setFormatter(logging.Formatter("wattlog %(levelname)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return  # the application configured logging: it decides what is shown
        import sys

        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


logging.getLogger(__name__).addHandler(logging.NullHandler())
logging.getLogger(__name__).addHandler(_ErrorsWhenUnconfigured())

_HOMES = {
    "Agent": "wattlog.telemetry.agent",
    "AgentConfig": "wattlog.telemetry.agent",
    "Callback": "wattlog.trainer.callback",
    "ConfigError": "wattlog.errors",
    "DeviceLost": "wattlog.errors",
    "Energy": "wattlog.accounting.it_energy",
    "EnergyInterval": "wattlog.records",
    "EventCategory": "wattlog.events",
    "EventKind": "wattlog.events",
    "FakeClock": "wattlog.clock",
    "Footprint": "wattlog.accounting.publishing.footprint",
    "GCCallback": "wattlog.trainer.callbacks",
    "Gap": "wattlog.records",
    "Kind": "wattlog.records",
    "Ledger": "wattlog.accounting.ledger",
    "LedgerError": "wattlog.errors",
    "NotSupported": "wattlog.errors",
    "RunNotFound": "wattlog.errors",
    "RunSession": "wattlog.trainer.session",
    "SessionConfig": "wattlog.trainer.session",
    "SensorError": "wattlog.errors",
    "SensorUnavailable": "wattlog.errors",
    "Site": "wattlog.accounting.carbon.sites",
    "Source": "wattlog.records",
    "SpeedCallback": "wattlog.trainer.callbacks",
    "StabilityCallback": "wattlog.trainer.callbacks",
    "SystemClock": "wattlog.clock",
    "Tracker": "wattlog.trainer.tracker",
    "TrackerConfig": "wattlog.trainer.tracker_config",
    "WattlogError": "wattlog.errors",
    "footprint_for": "wattlog.accounting.publishing.footprint",
    "get_site": "wattlog.accounting.carbon.sites",
    "health_check": "wattlog.trainer.health",
    "make_engine": "wattlog.accounting.ledger",
}

__all__ = [
    "__version__",
    "Agent",
    "AgentConfig",
    "Callback",
    "ConfigError",
    "DeviceLost",
    "Energy",
    "EnergyInterval",
    "EventCategory",
    "EventKind",
    "FakeClock",
    "Footprint",
    "GCCallback",
    "Gap",
    "Kind",
    "Ledger",
    "LedgerError",
    "NotSupported",
    "RunNotFound",
    "RunSession",
    "SessionConfig",
    "SensorError",
    "SensorUnavailable",
    "Site",
    "Source",
    "SpeedCallback",
    "StabilityCallback",
    "SystemClock",
    "Tracker",
    "TrackerConfig",
    "WattlogError",
    "footprint_for",
    "get_site",
    "health_check",
    "make_engine",
]


def _missing_extra(error: ModuleNotFoundError, name: str) -> Exception | None:
    """`from wattlog import Tracker` without torch: one line naming the pip extra, not a bare error."""
    from wattlog.extras import MissingExtra

    return MissingExtra.of(error, f"from wattlog import {name}")


lazy_package(__name__, _HOMES, _missing_extra)
