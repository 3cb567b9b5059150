"""A site's own overhead multiplier, measured: the node boundary over the GPUs' energy of one run.

The run is one already measured (`wattlog calibrate RUN`), or one `wattlog calibrate --site S`
records on this machine (a CalibrationWindow: idle, then under the health check's load; see
wattlog.trainer.calibrate_window).

GPU-only accounting multiplies GPU energy by a constant from elsewhere (1.74, the
Olmo 3 follow-up). Where a run was measured at the node boundary (a BMC meter,
telemetry.sensors.redfish_node / dcmi) beside its GPUs, the site's own multiplier
is node / GPU energy on the metered hosts, with the band the two bands allow.
It is stored per site with its run, date and hardware, and the table uses it
instead of the constant for that site's runs that measured only GPUs
(TableOptions.calibrations); the constant stays the labelled fallback.

The file is TOML, one table per site:

    [sites.jupiter]
    factor = 1.23
    low = 1.08
    high = 1.4
    run = "health-check-3"
    date = "2026-12-04"
    hardware = "1 host(s) n0: 8 GPU(s) H100, IPMI DCMI meter"
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from wattlog.accounting.devices import Overhead
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.publishing.node_boundary import node_boundary
from wattlog.errors import ConfigError
from wattlog.numbers import check_number
from wattlog.records import Kind

CALIBRATIONS_ENV = "WATTLOG_CALIBRATIONS"
"""The file measured multipliers are kept in, when not the default beside the ledger."""


@dataclass
class CalibrationWindow:
    """A calibration measured on this machine: an idle window, then one under the health check's load."""

    site: str
    """The site the multiplier holds for."""
    idle_s: float = 30.0
    """Seconds measured idle."""
    load_s: float = 60.0
    """Seconds measured under load (the health check's matrix multiplications on every device)."""
    db: str | None = None
    """The ledger the measuring run is recorded in."""
    run: str = ""
    """The measuring run's name ("": calibrate-SITE-YYYYMMDDTHHMMSS)."""
    flush_s: float = 1.0
    """How often the agent writes rows (short windows: every second)."""

    def __post_init__(self) -> None:
        if not self.site:
            raise ConfigError("wattlog calibrate --site S: name the site the multiplier is for")
        check_number("--idle-s", self.idle_s, low=0, high=86400, hint="e.g. 30")
        check_number("--load-s", self.load_s, low=0, high=86400, low_open=True, hint="e.g. 60")
        check_number("flush_s", self.flush_s, low=0, high=3600, low_open=True, hint="e.g. 1")


@dataclass(frozen=True, slots=True)
class Calibration:
    """A site's measured multiplier (server / GPU energy), with its band and provenance.

    Attributes:
        site: The site it holds for.
        factor: Node-boundary energy / GPU energy on the metered hosts.
        low: Lowest factor the two bands allow; high: the highest.
        run: The run it was measured on.
        date: When (the run's end, UTC, YYYY-MM-DD).
        hardware: Hosts, GPUs and the meter that read the node.
    """

    site: str
    factor: float
    low: float
    high: float
    run: str
    date: str
    hardware: str

    def overhead(self) -> Overhead:
        """The multiplier as the table applies it, labelled as measured here."""
        source = f"measured at {self.site}: node/GPU energy of run {self.run}, {self.date}, {self.hardware}"
        return Overhead(self.factor, source, (self.low, self.high))


def calibrate(ledger: Ledger, run: int | str, site: str | None = None) -> Calibration:
    """The multiplier a run measured at the node boundary shows: node / GPU energy on its metered hosts.

    Args:
        ledger: The ledger.
        run: A run with node-meter and GPU rows (e.g. the health check's, under load).
        site: The site it holds for (default: the run's).

    Raises:
        ConfigError: No site, no node meter, no GPU energy on the metered hosts, or a meter
            reading less than its GPUs (a broken meter is never stored as a multiplier).
    """
    info = ledger.get_run(run)
    where = site or info.site
    if not where:
        raise ConfigError(f"run {info.name!r} has no site: pass --site")
    totals = ledger.energy_totals(info.id)
    boundary = node_boundary(totals)
    if boundary is None:
        raise ConfigError(f"run {info.name!r} has no node meter (BMC): nothing to calibrate against")
    gpus = [t for t in totals if t.kind == Kind.GPU and t.host in boundary.hosts]
    gpu_j, gpu_low_j, gpu_high_j = (
        sum(t.energy_j for t in gpus),
        sum(t.low_j for t in gpus),
        sum(t.high_j for t in gpus),
    )
    if gpu_low_j <= 0:
        raise ConfigError(f"run {info.name!r} has no GPU energy on its metered hosts")
    factor = boundary.node_j / gpu_j
    if factor < 1.0:
        raise ConfigError(f"run {info.name!r}: its node meter reads x{factor:.2f} of its GPUs: not stored")
    model = f" {info.device_model}" if info.device_model else ""
    hardware = (
        f"{len(boundary.hosts)} host(s) {', '.join(boundary.hosts)}: {len(gpus)} GPU(s){model}, "
        f"{boundary.reader} meter"
    )
    date = datetime.fromtimestamp(info.end_s or info.start_s, UTC).date().isoformat()
    low = max(boundary.node_low_j / gpu_high_j, 1.0)
    high = boundary.node_high_j / gpu_low_j
    return Calibration(where, factor, min(low, factor), max(high, factor), info.name, date, hardware)


def save_calibration(path: Path, calibration: Calibration) -> None:
    """Store `calibration` under its site in the TOML file at `path` (other sites kept, this one replaced)."""
    sites = dict(load_calibration_file(path)) if path.exists() else {}
    sites[calibration.site] = calibration
    lines = []
    for site, c in sorted(sites.items()):
        numbers = [
            f"{key} = {value!r}" for key, value in (("factor", c.factor), ("low", c.low), ("high", c.high))
        ]
        texts = [
            f"{key} = {json.dumps(value)}"
            for key, value in (("run", c.run), ("date", c.date), ("hardware", c.hardware))
        ]
        lines += [f"[sites.{json.dumps(site)}]", *numbers, *texts]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def load_calibration_file(path: Path) -> dict[str, Calibration]:
    """The calibrations stored at `path`, by site.

    Raises:
        ConfigError: The file cannot be read or a site lacks a field.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"calibration file {path}: {e}") from e
    out = {}
    for site, fields in raw.get("sites", {}).items():
        try:
            out[site] = Calibration(
                site, float(fields["factor"]), float(fields["low"]), float(fields["high"]),
                str(fields["run"]), str(fields["date"]), str(fields["hardware"]),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"calibration file {path}: site {site!r} lacks or mistypes {e}") from e
    return out


def load_calibrations(path: Path) -> dict[str, Overhead]:
    """Site -> measured multiplier, as TableOptions.calibrations takes them."""
    return {site: c.overhead() for site, c in load_calibration_file(path).items()}


def calibrations_path() -> Path:
    """Where measured multipliers are kept: $WATTLOG_CALIBRATIONS, else beside the default ledger."""
    given = os.environ.get(CALIBRATIONS_ENV)
    return Path(given) if given else Path.home() / ".local" / "share" / "wattlog-calibrations.toml"


def stored_calibrations() -> dict[str, Overhead]:
    """Site -> measured multiplier from the calibration file (none when there is no file)."""
    path = calibrations_path()
    return load_calibrations(path) if path.exists() else {}
