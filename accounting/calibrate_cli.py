"""`wattlog calibrate RUN`: store a site's own overhead multiplier, measured at the node boundary."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.calibration import calibrate, load_calibrations, save_calibration
from wattlog.accounting.devices import Overhead
from wattlog.accounting.ledger.engine import describe_url, make_engine
from wattlog.accounting.ledger.store import Ledger
from wattlog.options import DbOption

CALIBRATIONS_ENV = "WATTLOG_CALIBRATIONS"


def calibrations_path() -> Path:
    """Where measured multipliers are kept: $WATTLOG_CALIBRATIONS, else beside the default ledger."""
    given = os.environ.get(CALIBRATIONS_ENV)
    return Path(given) if given else Path.home() / ".local" / "share" / "wattlog-calibrations.toml"


def stored_calibrations() -> dict[str, Overhead]:
    """Site -> measured multiplier from the calibration file (none when there is no file)."""
    path = calibrations_path()
    return load_calibrations(path) if path.exists() else {}


def calibrate_command(
    run: Annotated[
        str, typer.Argument(help="A run measured at the node boundary (a BMC meter) beside its GPUs.")
    ],
    site: Annotated[
        str | None, typer.Option("--site", help="The site it holds for (default: the run's).")
    ] = None,
    db: DbOption = None,
) -> None:
    """Store a site's overhead multiplier (node / GPU energy, with its band) measured by RUN.

    `wattlog table` then uses it instead of --overhead for that site's GPU-only runs.
    """
    engine = make_engine(db, create=False)
    try:
        found = calibrate(Ledger(engine), run, site)
    finally:
        engine.dispose()
    path = calibrations_path()
    save_calibration(path, found)
    typer.echo(
        f"site {found.site}: x{found.factor:.3f} [x{found.low:.3f} - x{found.high:.3f}] server/GPU energy, "
        f"measured by run {found.run} ({found.date}; {found.hardware}); ledger {describe_url(db)}"
    )
    typer.echo(f"stored in {path} (${CALIBRATIONS_ENV} to move it)")


def register(app: typer.Typer) -> None:
    """Add `wattlog calibrate` to the root app."""
    app.command("calibrate")(calibrate_command)
