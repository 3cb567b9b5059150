"""Device models: power limit and embodied emissions and water per GPU-hour, each figure with its source.

The paper's own follow-up (Morrison et al., ICLR 2025) amortises 463 kg CO2e and
about 102.6 L of water per H100 over 4 years: 0.013 kg CO2e and 0.003 L per
GPU-hour. These are embodied figures: shown apart from the operational
(Table 19) figures and added only in a project's total, never folded into them.

The rest of the server: when only GPUs were measured, an optional overhead
multiplier (e.g. 1.74, the Olmo 3 follow-up, arXiv 2605.01158) estimates the
whole server's draw from the GPUs'; measured CPU and DRAM energy is preferred
where it exists, and the multiplier is then not applied.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from wattlog.errors import ConfigError

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True, slots=True)
class DeviceModel:
    """One device model's figures; None where no sourced figure exists.

    Attributes:
        name: Catalog key, e.g. "H100".
        description: What it is.
        power_limit_w: Board power limit, W.
        embodied_kg_co2e: Embodied emissions per device, kg CO2e.
        embodied_water_l: Embodied water per device, L.
        lifetime_years: Years the embodied figures are amortised over.
        peak_flops: Published dense BF16 peak, FLOP/s (MFU's denominator); None: no MFU.
        sources: Figure name -> where it comes from.
    """

    name: str
    description: str = ""
    power_limit_w: float | None = None
    embodied_kg_co2e: float | None = None
    embodied_water_l: float | None = None
    lifetime_years: float | None = None
    peak_flops: float | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def embodied_kg_per_gpu_hour(self) -> float | None:
        """Embodied kg CO2e per device-hour (463 kg / 4 years = 0.0132 for an H100)."""
        if self.embodied_kg_co2e is None or not self.lifetime_years:
            return None
        return self.embodied_kg_co2e / (self.lifetime_years * HOURS_PER_YEAR)

    @property
    def embodied_l_per_gpu_hour(self) -> float | None:
        """Embodied litres of water per device-hour (102.6 L / 4 years = 0.00293 for an H100)."""
        if self.embodied_water_l is None or not self.lifetime_years:
            return None
        return self.embodied_water_l / (self.lifetime_years * HOURS_PER_YEAR)

    def embodied_source(self) -> str:
        """The sources of the embodied figures, in one line."""
        keys = ("embodied_kg_co2e", "embodied_water_l", "lifetime_years")
        return "; ".join(dict.fromkeys(self.sources[k] for k in keys if k in self.sources))


@dataclass(frozen=True, slots=True)
class DeviceCatalog:
    """Device models by name, and the one assumed when a run recorded none.

    Attributes:
        models: Name -> model (names matched case-insensitively).
        default: The model assumed for a run without one.
    """

    models: Mapping[str, DeviceModel]
    default: str

    def get(self, name: str) -> tuple[DeviceModel, bool]:
        """The model of this name (or the default for ""), and whether it was assumed.

        A name the catalog does not hold is a model without figures: its embodied
        columns and % of power limit show "-", never another device's numbers.
        """
        if not name.strip():
            return self.models[self.default], True
        for key, model in self.models.items():
            if key.lower() == name.strip().lower():
                return model, False
        return DeviceModel(name=name.strip()), False

    def named_in(self, device_name: str) -> DeviceModel | None:
        """The model a driver's device name names ("NVIDIA H100 80GB HBM3" -> H100), None if none.

        A key counts only as a whole token ("H100" is not in "GH100"), so a board the
        catalog does not hold never borrows another's figures.
        """
        for key, model in self.models.items():
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![0-9])", device_name, re.IGNORECASE):
                return model
        return None


def device_catalog() -> DeviceCatalog:
    """The built-in device catalog (accounting/data/devices.toml)."""
    text = resources.files("wattlog.accounting").joinpath("data/devices.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    models = {}
    for name, spec in raw["devices"].items():
        numbers = {
            key: float(spec[key])
            for key in (
                "power_limit_w",
                "embodied_kg_co2e",
                "embodied_water_l",
                "lifetime_years",
                "peak_flops",
            )
            if key in spec
        }
        missing = set(numbers) - set(spec.get("sources", {}))
        if missing:
            raise ConfigError(f"device {name}: every figure needs a source ({', '.join(sorted(missing))})")
        models[name] = DeviceModel(
            name=name, description=str(spec.get("description", "")), sources=dict(spec["sources"]), **numbers
        )
    return DeviceCatalog(models, str(raw["default"]))


@dataclass(frozen=True, slots=True)
class Overhead:
    """A multiplier from GPU energy to the whole server's, for runs that measured only GPUs.

    Attributes:
        factor: Server energy / GPU energy (>= 1), e.g. 1.74.
        source: Where the factor comes from (shown beside every figure it changed).
        band: (lowest, highest) factor a measured multiplier allows (None: a constant, no band).
    """

    factor: float
    source: str = "Olmo 3 follow-up (arXiv 2605.01158): GPU power x 1.74 for the rest of the server"
    band: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.factor) and self.factor >= 1.0):
            raise ConfigError(f"--overhead must be a number >= 1 (server / GPU energy), got {self.factor}")
        if self.band is not None and not self.band[0] <= self.factor <= self.band[1]:
            raise ConfigError(f"overhead band {self.band} does not hold its factor {self.factor}")

    @property
    def label(self) -> str:
        """E.g. "x1.74 for the rest of the server (Olmo 3 follow-up ...)"."""
        band = "" if self.band is None else f" [x{self.band[0]:.2f} - x{self.band[1]:.2f}]"
        return f"GPU energy x{self.factor:g}{band} for the rest of the server, estimated ({self.source})"
