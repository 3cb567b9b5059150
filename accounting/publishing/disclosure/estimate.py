"""Energy estimated where it was not measured (the form allows estimates), with a band and source `estimated`.

Two ways in, both ending in GPU-hours x a board's mean draw x (server factor) x PUE:

- from GPU-hours, as published cards do (Meta: GPU-hours x TDP x PUE 1.1 x 0.385 kg/kWh);
- before a run, from its size: FLOPs = 6 x parameters x tokens (Kaplan et al. 2020), GPU-hours =
  FLOPs / (MFU x peak FLOP/s) / 3600, the band from the MFU range given (the low MFU gives the
  high end).

The mean draw is the one given, else a published measured mean for the board
(data/board_draws.toml), else its TDP: the TDP is a ceiling, so its band reaches down to half
of it (wattlog's assumption, said beside the figure).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from wattlog.accounting.devices import DeviceCatalog
from wattlog.accounting.publishing.disclosure.model import Boundary, BoundaryEnergy
from wattlog.errors import ConfigError

ESTIMATED = "estimated"
TDP_LOW_FRACTION = 0.5
"""The low end of a TDP-based draw band, as a fraction of TDP (an assumption, named where used)."""


@dataclass(frozen=True, slots=True)
class Draw:
    """A board's mean power draw while training, W, with its band and where it comes from."""

    mean_w: float
    low_w: float
    high_w: float
    source: str

    def __post_init__(self) -> None:
        if not 0 < self.low_w <= self.mean_w <= self.high_w:
            raise ConfigError(
                f"a draw needs 0 < low <= mean <= high W, got {self.low_w}, {self.mean_w}, {self.high_w}"
            )


def board_draw(board: str, devices: DeviceCatalog, given_w: float | None = None) -> Draw:
    """The draw to use: given, else the board's published measured mean, else its TDP.

    Raises:
        ConfigError: No draw given and the board has neither a measured mean nor a TDP.
    """
    if given_w is not None:
        return Draw(given_w, given_w, given_w, "given (--draw-w)")
    measured = tomllib.loads(
        resources.files("wattlog.accounting").joinpath("data/board_draws.toml").read_text(encoding="utf-8")
    )["boards"]
    for name, spec in measured.items():
        if name.lower() == board.strip().lower():
            low, high = float(spec["low_w"]), float(spec["high_w"])
            return Draw((low + high) / 2.0, low, high, f"measured mean draw: {spec['source']}")
    model, assumed = devices.get(board)
    if assumed or model.power_limit_w is None:
        raise ConfigError(f"no published draw or TDP for board {board!r}: pass --draw-w W (see devices.toml)")
    tdp = model.power_limit_w
    cited = model.sources.get("power_limit_w", "unsourced")
    source = f"TDP {tdp:g} W ({cited}); band down to {TDP_LOW_FRACTION:g} x TDP, assumed"
    return Draw(tdp, tdp * TDP_LOW_FRACTION, tdp, source)


@dataclass(frozen=True, slots=True)
class Hours:
    """GPU-hours with a band and how they were obtained."""

    hours: float
    low: float
    high: float
    how: str


def hours_from_size(tokens: float, params: float, mfu: tuple[float, float], peak_flops: float) -> Hours:
    """GPU-hours to train `params` on `tokens` at an MFU in `mfu` on boards of `peak_flops` FLOP/s.

    Raises:
        ConfigError: An MFU outside (0, 1] or reversed, or a non-positive size or peak.
    """
    low_mfu, high_mfu = mfu
    if not 0 < low_mfu <= high_mfu <= 1:
        raise ConfigError(f"--mfu must be LOW-HIGH within (0, 1], got {low_mfu}-{high_mfu}")
    if tokens <= 0 or params <= 0 or peak_flops <= 0:
        raise ConfigError("tokens, parameters and peak FLOP/s must be positive")
    flops = 6.0 * params * tokens
    mid = 2.0 / (1.0 / low_mfu + 1.0 / high_mfu)  # the hours' midpoint: the harmonic mean of the MFUs
    at = lambda m: flops / (m * peak_flops) / 3600.0  # noqa: E731
    how = (
        f"6 x {params:.3g} params x {tokens:.3g} tokens = {flops:.3g} FLOP "
        f"at MFU {low_mfu:g}-{high_mfu:g} of {peak_flops:.4g} FLOP/s"
    )
    return Hours(at(mid), at(high_mfu), at(low_mfu), how)


@dataclass(frozen=True, slots=True)
class Estimate:
    """An estimate: energy per boundary (source `estimated`), emissions where an intensity is given."""

    hours: Hours
    draw: Draw
    energy: tuple[BoundaryEnergy, ...]
    co2_t: tuple[float, float, float] | None
    notes: tuple[str, ...]


def estimate(
    hours: Hours,
    draw: Draw,
    *,
    pue: float | None = None,
    server_factor: float | None = None,
    intensity_kg_per_kwh: float | None = None,
) -> Estimate:
    """GPU-hours x draw (x server factor) (x PUE), each boundary with its band; CO2 at the outermost one."""
    j = 3600.0
    gpu = BoundaryEnergy(Boundary.GPU, hours.hours * draw.mean_w * j, hours.low * draw.low_w * j,
                         hours.high * draw.high_w * j, ESTIMATED)  # fmt: skip
    found, notes = [gpu], [f"GPU-hours: {hours.how}", f"mean draw {draw.mean_w:g} W: {draw.source}"]
    outer = gpu
    if server_factor is not None:
        outer = _scaled(gpu, Boundary.NODE, server_factor)
        found.append(outer)
        notes.append(f"node = GPU x {server_factor:g} for the rest of the server")
    if pue is not None:
        outer = _scaled(outer, Boundary.FACILITY, pue)
        found.append(outer)
        notes.append(f"facility = {'node' if server_factor else 'GPU'} x PUE {pue:g}")
    co2 = None
    if intensity_kg_per_kwh is not None:
        to_t = intensity_kg_per_kwh / 3.6e9  # J x kg/kWh -> t
        co2 = (outer.energy_j * to_t, outer.low_j * to_t, outer.high_j * to_t)
        notes.append(f"CO2 = {outer.boundary.value} energy x {intensity_kg_per_kwh:g} kg/kWh")
    return Estimate(hours, draw, tuple(found), co2, tuple(notes))


def _scaled(energy: BoundaryEnergy, boundary: Boundary, factor: float) -> BoundaryEnergy:
    if factor < 1.0:
        raise ConfigError(f"a factor from one boundary to a wider one is >= 1, got {factor}")
    return BoundaryEnergy(
        boundary, energy.energy_j * factor, energy.low_j * factor, energy.high_j * factor, ESTIMATED
    )
