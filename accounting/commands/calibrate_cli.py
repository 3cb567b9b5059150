"""`wattlog calibrate [RUN] --site S`: store a site's own overhead multiplier, measured at the node."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from wattlog.errors import ConfigError
from wattlog.options import DbOption

if TYPE_CHECKING:
    from wattlog.accounting.fleet.calibration import CalibrationWindow

WindowMeasure = Callable[["CalibrationWindow"], str]
"""Records a calibration run on this machine and returns its name (wattlog.trainer.calibrate_window)."""


def command(measure: WindowMeasure | None) -> Callable[..., None]:
    """The `calibrate` command, measuring its own window with `measure` (None: from a run only)."""

    def calibrate_command(
        run: Annotated[
            str | None,
            typer.Argument(
                help="A run measured at the node boundary beside its GPUs (default: measure one)."
            ),
        ] = None,
        site: Annotated[
            str | None, typer.Option("--site", help="The site it holds for (default: the run's).")
        ] = None,
        idle_s: Annotated[float, typer.Option("--idle-s", help="Own window: seconds idle.")] = 30.0,
        load_s: Annotated[float, typer.Option("--load-s", help="Own window: seconds under load.")] = 60.0,
        db: DbOption = None,
    ) -> None:
        """Store a site's overhead multiplier (node / GPU energy, with its band), measured here or by RUN.

        Without RUN it measures its own window on this machine: idle, then under the health
        check's load, the BMC's node meter (WATTLOG_REDFISH_URL or WATTLOG_DCMI) beside the
        devices. `wattlog table` then uses it instead of --overhead for that site's GPU-only runs.
        """
        from wattlog.accounting.fleet.calibration import (
            CALIBRATIONS_ENV,
            CalibrationWindow,
            calibrate,
            calibrations_path,
            save_calibration,
        )
        from wattlog.accounting.ledger.engine import describe_url, make_engine
        from wattlog.accounting.ledger.store import Ledger

        if run is None:
            if measure is None:
                raise ConfigError("wattlog calibrate RUN: this build cannot measure a window, name a run")
            run = measure(CalibrationWindow(site or "", idle_s, load_s, db))
        engine = make_engine(db, create=False)
        try:
            found = calibrate(Ledger(engine), run, site)
        finally:
            engine.dispose()
        path = calibrations_path()
        save_calibration(path, found)
        band = f"[x{found.low:.3f} - x{found.high:.3f}]"
        typer.echo(
            f"site {found.site}: x{found.factor:.3f} {band} server/GPU energy, "
            f"measured by run {found.run} ({found.date}; {found.hardware}); ledger {describe_url(db)}"
        )
        typer.echo(f"stored in {path} (${CALIBRATIONS_ENV} to move it)")

    return calibrate_command


def register(app: typer.Typer, measure: WindowMeasure | None = None) -> None:
    """Add `wattlog calibrate` to the root app (`measure` records its own window)."""
    app.command("calibrate")(command(measure))
