"""`wattlog estimate`: energy and CO2 of what was not measured, labelled estimated, with its band."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from wattlog.accounting.carbon.sites import get_site, site_catalog
from wattlog.accounting.devices import DeviceCatalog, device_catalog
from wattlog.accounting.publishing.disclosure.estimate import (
    Estimate,
    Hours,
    board_draw,
    estimate,
    hours_from_size,
)
from wattlog.accounting.publishing.disclosure.mdf import sig
from wattlog.accounting.ranges import Quantity, bounds, parse_quantity
from wattlog.errors import ConfigError
from wattlog.options import SitesFileOption


def estimate_command(
    gpu_hours: Annotated[
        float | None, typer.Option("--gpu-hours", help="GPU-hours (as a card publishes).")
    ] = None,
    tokens: Annotated[
        float | None, typer.Option("--tokens", help="Before a run: tokens to train on.")
    ] = None,
    params: Annotated[float | None, typer.Option("--params", help="Before a run: model parameters.")] = None,
    mfu: Annotated[str | None, typer.Option("--mfu", help="Before a run: MFU range, e.g. 0.35-0.45.")] = None,
    board: Annotated[str, typer.Option("--board", help="Board (devices.toml): draw and peak FLOP/s.")] = "",
    draw_w: Annotated[
        float | None, typer.Option("--draw-w", help="Mean draw per GPU, W (else published).")
    ] = None,
    server_factor: Annotated[
        float | None, typer.Option("--server-factor", help="Node / GPU energy, e.g. 1.74 (Olmo 3).")
    ] = None,
    pue: Annotated[float | None, typer.Option("--pue", help="PUE (default: the --site's).")] = None,
    intensity: Annotated[
        float | None, typer.Option("--intensity", help="kg CO2e/kWh, location-based (default: the --site's).")
    ] = None,
    site: Annotated[
        str | None, typer.Option("--site", help="Site for PUE and intensity (`wattlog sites`).")
    ] = None,
    sites_file: SitesFileOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Estimate energy and CO2 from GPU-hours, or before a run from tokens x 6 x params / (MFU x peak)."""
    devices = device_catalog()
    hours = _hours(gpu_hours, tokens, params, mfu, board, devices)
    if not board and draw_w is None:
        raise ConfigError("give --board NAME (its published draw or TDP) or --draw-w W")
    draw = board_draw(board, devices, draw_w)
    if site is not None:
        pue, intensity = _site_factors(site, sites_file, pue, intensity)
    found = estimate(hours, draw, pue=pue, server_factor=server_factor, intensity_kg_per_kwh=intensity)
    typer.echo(json.dumps(as_dict(found), indent=2) if as_json else as_text(found))


def _site_factors(
    site: str, sites_file: Path | None, pue: float | None, intensity: float | None
) -> tuple[float | None, float | None]:
    """PUE and intensity: as given, else the site's (a range or an hourly series must be given as one number).

    Raises:
        ConfigError: The site's figure is a range or an hourly series and none was given.
    """
    chosen = get_site(site, site_catalog(sites_file))
    if pue is None:
        pue = _single(chosen.pue, f"site {site}'s PUE is a range: pass --pue")
    if intensity is None:
        if chosen.intensity_source.source != "constant":
            raise ConfigError(
                f"site {site} uses an hourly intensity: pass --intensity (kg/kWh) for an estimate"
            )
        intensity = _single(
            chosen.carbon_intensity_kg_per_kwh, f"site {site}'s intensity is a range: pass --intensity"
        )
    return pue, intensity


def _single(value: Quantity, message: str) -> float:
    low, high = bounds(value)
    if low != high:
        raise ConfigError(message)
    return low


def _hours(
    gpu_hours: float | None,
    tokens: float | None,
    params: float | None,
    mfu: str | None,
    board: str,
    devices: DeviceCatalog,
) -> Hours:
    sized = tokens is not None or params is not None or mfu is not None
    if (gpu_hours is None) == (not sized):
        raise ConfigError("give --gpu-hours, or --tokens, --params and --mfu (before a run), not both")
    if gpu_hours is not None:
        if gpu_hours <= 0:
            raise ConfigError(f"--gpu-hours must be positive, got {gpu_hours}")
        return Hours(gpu_hours, gpu_hours, gpu_hours, f"{gpu_hours:,.6g} given")
    if tokens is None or params is None or mfu is None:
        raise ConfigError("an estimate before a run needs --tokens, --params and --mfu LOW-HIGH")
    model, assumed = devices.get(board)
    if assumed or model.peak_flops is None:
        raise ConfigError(
            f"no published peak FLOP/s for board {board!r} (devices.toml): give --board H100 or A100"
        )
    low, high = bounds(parse_quantity(mfu, "--mfu"))
    return hours_from_size(tokens, params, (low, high), model.peak_flops)


def as_text(found: Estimate) -> str:
    """Lines: every boundary's figure with its band and source, CO2, and what went in."""
    lines = ["Estimate (source: estimated; not a measurement)"]
    hours = found.hours
    lines.append(f"GPU-hours: {hours.hours:,.6g} (band {hours.low:,.6g} - {hours.high:,.6g})")
    for energy in found.energy:
        low, high = energy.band_mwh
        lines.append(
            f"{energy.boundary.value} energy: {sig(energy.mwh, 4)} MWh "
            f"(band {sig(low, 4)} - {sig(high, 4)} MWh; "
            f"source {energy.source})"
        )
    if found.co2_t is not None:
        mid, low, high = found.co2_t
        lines.append(f"CO2 (location-based): {sig(mid, 4)} t (band {sig(low, 4)} - {sig(high, 4)} t)")
    else:
        lines.append("CO2: - (no intensity: pass --intensity or --site)")
    lines.extend(f"  {note}" for note in found.notes)
    return "\n".join(lines)


def as_dict(found: Estimate) -> dict[str, object]:
    """The estimate as JSON-ready data (missing: null)."""
    hours = found.hours
    return {
        "source": "estimated",
        "gpu_hours": {"value": hours.hours, "low": hours.low, "high": hours.high, "how": hours.how},
        "draw_w": {
            "mean": found.draw.mean_w,
            "low": found.draw.low_w,
            "high": found.draw.high_w,
            "source": found.draw.source,
        },  # fmt: skip
        "energy": [
            {
                "boundary": e.boundary.value,
                "mwh": e.mwh,
                "low_mwh": e.band_mwh[0],
                "high_mwh": e.band_mwh[1],
                "source": e.source,
            }  # fmt: skip
            for e in found.energy
        ],
        "co2_t": None
        if found.co2_t is None
        else dict(zip(("value", "low", "high"), found.co2_t, strict=True)),
        "notes": list(found.notes),
    }


def register(app: typer.Typer) -> None:
    """Add `wattlog estimate` to the root app."""
    app.command("estimate")(estimate_command)
