"""Plain data shared by sensors, sampler, integrator and sinks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from wattlog.records import EnergyFigure, FigureView, Kind, Source


class Vendor(StrEnum):
    """Who made an accelerator: the backend that reads it and the profile its band comes from."""

    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    HABANA = "habana"  # Intel Gaudi

    @property
    def label(self) -> str:
        """The vendor's name as notes and tables show it."""
        return {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "habana": "Intel Gaudi"}[self.value]


@dataclass(frozen=True, slots=True)
class PluginVendor:
    """A vendor a plugin's backend brings (entry-point group ``wattlog.sensors``), beside :class:`Vendor`.

    Attributes:
        value: Its name as data carries it ("acme"), as a Vendor's value is.
        label: Its name as notes and tables show it ("Acme").
    """

    value: str
    label: str

    def __str__(self) -> str:
        return self.value


AnyVendor = Vendor | PluginVendor
"""A built-in vendor or one a plugin brought."""


@dataclass(frozen=True, slots=True)
class SensorProfile:
    """How one board family's power sensor behaves; the band reads it (telemetry.uncertainty).

    Loaded from the backend's data file, each number with its source (`sources`).

    Attributes:
        family: Key of the family in its data file ("nvidia-hopper", "unknown").
        label: Human name, shown beside the band ("NVIDIA Hopper (H100, H200)").
        gain_low: Lowest relative gain error of the family's boards (-0.095: reads 9.5 % low).
        gain_high: Highest relative gain error.
        observed_fraction: Share of each publication period a power value averages (0, 1].
        publication_period_s: How often the sensor publishes a new power value, seconds.
        instant_power: Whether an instantaneous power reading exists (else only an average).
        average_window_s: Window of the averaged power reading, seconds (None: not averaged).
        counter_unit: Unit of the energy counter ("mJ"), "" if the family has none.
        counter_range_mj: Value at which the counter wraps, mJ (None: never in practice).
        counter_integrates_true: Whether the counter integrates true power (None: not known).
        counter_step_mj: One step of the counter's reading, mJ (a BMC's kWh with 3 decimals: 3.6 kJ),
            so a difference of two readings is within one step of the truth (None: negligible).
        known: False for the wide profile given to a board no data file describes.
        sensor: What reads the board, as notes name it ("NVML", "amdsmi"); not a number, so unsourced.
        scope: What the board's figure covers ("board": the accelerator's board; "gpu": the GPU of
            a superchip module, not its CPU or the module; "cpu socket"), so figures of different
            scopes are never summed as one.
        sources: (field, where its number comes from), one per number.
    """

    family: str
    label: str
    gain_low: float
    gain_high: float
    observed_fraction: float
    publication_period_s: float
    instant_power: bool = True
    average_window_s: float | None = None
    counter_unit: str = ""
    counter_range_mj: float | None = None
    counter_integrates_true: bool | None = None
    counter_step_mj: float | None = None
    known: bool = True
    sensor: str = "the driver"
    scope: str = "board"
    sources: tuple[tuple[str, str], ...] = ()

    def gain_factors(self) -> tuple[float, float]:
        """Factors taking a reading to the lowest and highest truth the gain range allows.

        A reading is gain x truth, so truth lies in [E / (1 + gain_high), E / (1 + gain_low)].
        """
        return 1 / (1 + self.gain_high), 1 / (1 + self.gain_low)

    def source(self, name: str) -> str:
        """Where the number in field `name` comes from ("" if the data file names none)."""
        return dict(self.sources).get(name, "")


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One measurable device, keyed by a stable UUID.

    Attributes:
        uuid: Stable key (NVML UUID, powercap zone path, "estimate-cpu", ...).
        name: Human name ("NVIDIA H100 80GB HBM3", "package-0").
        kind: gpu, cpu, dram or node.
        source: The label every energy figure of this device carries.
        has_counter: Whether readings carry a cumulative energy counter.
        counter_range_mj: Value at which the counter wraps to 0, or None if it never wraps.
        power_limit_w: Enforced power limit, if known; bounds gap estimates.
        index: Index as the driver numbers it (NVML index), if any.
        note: How it is read, e.g. "power from NVML_FI_DEV_POWER_INSTANT".
        vendor: Who made the accelerator (None for host zones and hand-built devices).
        profile: How its sensor behaves, from its backend's data file (None: the band's default
            for its kind, see telemetry.uncertainty.BandModel).
    """

    uuid: str
    name: str
    kind: Kind
    source: Source
    has_counter: bool
    counter_range_mj: float | None = None
    power_limit_w: float | None = None
    index: int | None = None
    note: str = ""
    vendor: AnyVendor | None = None
    profile: SensorProfile | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """One read of one device at sampler time `t_s` (monotonic seconds).

    Metrics a device does not offer are None; the slow metrics (utilisation,
    temperature, memory, power limit) are None on reads that did not ask for them.
    `energy_t_s` and `power_t_s` are the driver's own times of the counter value
    and of the power value (its publication), on the same monotonic clock as
    `t_s`, where the driver says (NVML field timestamps); a repeated publication
    carries the same time again, and the integrator integrates on these times.
    `next_read_s` is when the device can next show something new (its driver's
    next publication, on the same clock); the sampler skips it on ticks before
    then. None: read it on every tick.
    """

    device: str
    t_s: float
    energy_mj: float | None = None
    power_w: float | None = None
    utilisation_pct: float | None = None
    temperature_c: float | None = None
    memory_used_bytes: int | None = None
    energy_t_s: float | None = None
    power_t_s: float | None = None
    power_limit_w: float | None = None
    next_read_s: float | None = None


@dataclass(frozen=True, slots=True)
class DeviceEnergy(FigureView):
    """Cumulative energy of one device since the agent started (what scrapes and CLIs show).

    The figure's band [low_j, high_j] is the honest uncertainty of its energy against
    true power: sensor calibration, partial observation, and gaps; its kind and source
    are the device's.

    Attributes:
        device: The device.
        figure: The energy, its band and the band's random part, joules.
        power_w: Latest power reading, watts (None if the device gives none or is lost).
        samples: Readings integrated.
        gap_count: Gaps recorded (failed reads, lost device, too long between readings).
        gap_s: Seconds inside those gaps (not interpolated over).
        lost: Whether the device was marked lost.
        notes: Plain-language caveats ("phase lock suspected: ...", "counter reset at ...").
        utilisation_pct_sum: The device's utilisation readings so far summed, percent (a slow metric,
            read about once a second where the sensor gives it): between two snapshots, the
            difference over that of `utilisation_reads` is the mean utilisation.
        utilisation_reads: How many utilisation readings that is (0: the sensor gives none).
        counter_check: The counter's joules, power x time's joules and the seconds measured over the
            first interval taken (the start-up check of a counter device; None before it or without one).
        counter_swapped: Whether that check failed and the counter was swapped for power x time.
    """

    device: DeviceInfo
    figure: EnergyFigure
    power_w: float | None
    samples: int
    gap_count: int
    gap_s: float
    lost: bool = False
    notes: tuple[str, ...] = ()
    utilisation_pct_sum: float = 0.0
    utilisation_reads: int = 0
    counter_check: tuple[float, float, float] | None = None
    counter_swapped: bool = False


def mean_utilisation(
    before: Sequence[DeviceEnergy], after: Sequence[DeviceEnergy], kind: Kind
) -> float | None:
    """Mean utilisation of the devices of `kind` between two snapshots, 0..1 (None: no readings)."""
    reads = sum(d.utilisation_reads for d in after if d.device.kind == kind)
    reads -= sum(d.utilisation_reads for d in before if d.device.kind == kind)
    if reads <= 0:
        return None
    pct = sum(d.utilisation_pct_sum for d in after if d.device.kind == kind)
    pct -= sum(d.utilisation_pct_sum for d in before if d.device.kind == kind)
    return min(1.0, max(0.0, pct / reads / 100.0))


def reading_problem(reading: Reading) -> str | None:
    """Why a reading cannot be energy (a non-finite or negative power or counter), None if it can.

    Such a reading is a failed read: integrating one NaN would make the
    device's energy NaN for good, and a negative one would subtract energy.
    """
    # 0 <= v < inf is False for NaN, negatives and infinities: one comparison chain each (hot path)
    power, energy = reading.power_w, reading.energy_mj
    if power is not None and not 0.0 <= power < math.inf:
        return f"invalid power reading {power!r} (not a finite number >= 0)"
    if energy is not None and not 0.0 <= energy < math.inf:
        return f"invalid energy counter reading {energy!r} (not a finite number >= 0)"
    return None
