"""The ledger source: an hourly series stored in the ledger (:mod:`wattlog.accounting.carbon.catalog`).

A site names it by the stored name (``source = "ledger"``, ``series = "ercot-2026"``);
every reader of that ledger then sees the same hours, each with the source it was stored with.
"""

from __future__ import annotations

from wattlog.accounting.carbon.intensity.base import HourlySeries, IntensityRef, OpenContext, RegisteredSource
from wattlog.errors import ConfigError


def _open(ref: IntensityRef, context: OpenContext) -> HourlySeries:
    if context.ledger is None:
        raise ConfigError(f"intensity source {ref.describe()!r} is stored in a ledger: read it with --db")
    # imported here: the ledger (SQLAlchemy) loads only for sites that use it
    from wattlog.accounting.carbon.catalog import load_series

    return load_series(context.ledger, ref.series)


SOURCE = RegisteredSource("ledger", "an hourly series stored in the ledger (series: its name)", _open)
