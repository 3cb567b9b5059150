"""Facts of each accelerator board (power limit, peak dense BF16 FLOP/s, embodied emissions), with sources.

They live in the vendors' data files beside the sensor profiles (`[boards.*]`
tables of nvidia.toml, amd.toml, gaudi.toml): a board is the first whose
`names` its name contains (case-insensitive), so more specific boards come
first (GH200 before H200, H100 PCIe before H100). A figure with no source is
not given: it reads None, shown as "unknown", never a guess. Peak FLOP/s are
dense (without structured sparsity), what MFU divides by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wattlog.errors import ConfigError
from wattlog.telemetry.sensors.profiles import VENDOR_PROFILES, read_data
from wattlog.telemetry.types import AnyVendor

_FIELDS = ("peak_bf16_flops", "power_limit_w", "embodied_kg_co2e")


@dataclass(frozen=True, slots=True)
class BoardFacts:
    """What is published about one board, each figure with its source (None: unknown).

    Attributes:
        board: Key of the board in its data file ("h100-sxm").
        label: Human name ("NVIDIA H100 SXM").
        peak_bf16_flops: Peak dense BF16 FLOP/s (no sparsity), for MFU.
        power_limit_w: The board's maximum power (TDP / TBP), watts.
        embodied_kg_co2e: Embodied emissions of one board, kg CO2e.
        sources: (field, where its figure comes from).
    """

    board: str
    label: str
    peak_bf16_flops: float | None = None
    power_limit_w: float | None = None
    embodied_kg_co2e: float | None = None
    sources: tuple[tuple[str, str], ...] = ()

    def source(self, name: str) -> str:
        """Where the figure in field `name` comes from ("" if none is given)."""
        return dict(self.sources).get(name, "")


def board_facts(vendor: AnyVendor, name: str) -> BoardFacts | None:
    """The facts of `vendor`'s board called `name`, or None if its data file names no such board."""
    filename = VENDOR_PROFILES.get(vendor)
    if filename is None:
        return None
    lowered = name.lower()
    for key, raw in read_data(filename).get("boards", {}).items():
        if any(pattern.lower() in lowered for pattern in raw.get("names", ())):
            return _facts(filename, key, raw)
    return None


def _facts(filename: str, key: str, raw: Mapping[str, Any]) -> BoardFacts:
    """One board's facts; every figure given must have a source."""
    sources = dict(raw.get("sources", {}))
    given = {name: float(raw[name]) for name in _FIELDS if name in raw}
    unsourced = [name for name in given if name not in sources]
    if unsourced:
        raise ConfigError(f"{filename}: board {key!r} gives {', '.join(unsourced)} without a source")
    return BoardFacts(key, str(raw.get("label", key)), **given, sources=tuple(sorted(sources.items())))
