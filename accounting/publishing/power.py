"""Power fluctuation of a run: % of the power limit, dips (checkpoints), the job's swing and ramp rate.

Training power is not flat: the OLMo 2 paper's follow-up (Morrison et al., ICLR
2025) saw H100s swing between about 15 % (checkpointing) and 85 % of their
700 W limit, and synchronised dips across thousands of GPUs matter to grid
operators. From a run's energy rows (one per device per flush interval, or a
finer node series) this module derives:

- per device sample: power as a % of the device's power limit (min, median, max);
- the job's power (all devices summed over time) and its dips: maximal stretches
  below ``(1 - threshold)`` x the job's median power, each with its depth
  (1 - lowest power in the dip / median power) and duration (see :class:`Dip`);
- the job's swing (max - min power, W) and steepest ramp (W/s) between
  neighbouring samples.

Figures are only as fine as the series: a dip shorter than a flush interval is
smeared into it, and the ramp rate is bounded by the sample spacing (both said
in the notes).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wattlog.errors import ConfigError
from wattlog.records import EnergyInterval, Kind


@dataclass(frozen=True, slots=True)
class Segment:
    """Constant power over [start_s, end_s)."""

    start_s: float
    end_s: float
    power_w: float


@dataclass(frozen=True, slots=True)
class Dip:
    """A stretch of the job's power below the threshold.

    Its samples rarely line up with the stall: the first and last ones are partly
    inside it. So the depth is taken at its lowest sample, and the duration is the
    energy it lacked spread at that depth (edge samples count by how far they dip),
    which is the stall's length whenever one sample falls wholly inside it.

    Attributes:
        start_s: Start of its first sample, s.
        end_s: End of its last sample, s.
        depth: 1 - lowest power in the dip / the job's median power (0..1).
        min_w: Lowest power in the dip, W.
        deficit_j: Energy below the median over the dip, J.
    """

    start_s: float
    end_s: float
    depth: float
    min_w: float
    deficit_j: float

    @property
    def duration_s(self) -> float:
        """Length at full depth: deficit / (median - lowest power), s."""
        drop_w = self.min_w / (1 - self.depth) - self.min_w if self.depth < 1 else 0.0
        return self.deficit_j / drop_w if drop_w > 0 else self.end_s - self.start_s


@dataclass(frozen=True, slots=True)
class PowerFluctuation:
    """A run's power figures.

    Attributes:
        limit_pct: (min, median, max) of device power as % of its limit; None without a limit.
        median_w: The job's median power, W.
        dips: The job's dips.
        swing_w: The job's max - min power, W.
        ramp_w_per_s: Steepest change of the job's power between neighbouring samples, W/s.
        resolution_s: Median sample length, s (finer features are smeared).
        samples: Device samples used.
    """

    limit_pct: tuple[float, float, float] | None
    median_w: float
    dips: tuple[Dip, ...]
    swing_w: float
    ramp_w_per_s: float
    resolution_s: float
    samples: int


def device_segments(rows: Iterable[EnergyInterval]) -> list[Segment]:
    """Each row as constant power (its energy over its length); zero-length rows are skipped."""
    return [
        Segment(r.start_s, r.end_s, r.energy_j / (r.end_s - r.start_s)) for r in rows if r.end_s > r.start_s
    ]


def job_series(rows: Iterable[EnergyInterval]) -> list[Segment]:
    """The job's power over time: the power of every device active in each stretch, summed.

    Hosts with a whole-node meter count that meter (not its parts), as the energy totals do.
    """
    rows = list(rows)
    metered = {r.host for r in rows if r.kind == Kind.NODE}
    counted = [r for r in rows if (r.kind == Kind.NODE) == (r.host in metered) and r.end_s > r.start_s]
    events: dict[float, float] = {}
    for r in counted:
        p = r.energy_j / (r.end_s - r.start_s)
        events[r.start_s] = events.get(r.start_s, 0.0) + p
        events[r.end_s] = events.get(r.end_s, 0.0) - p
    out: list[Segment] = []
    level = 0.0
    times = sorted(events)
    for t0, t1 in zip(times, times[1:], strict=False):
        level += events[t0]
        out.append(Segment(t0, t1, max(level, 0.0)))  # max: float residue of adding and removing
    return out


def _weighted_median(segments: Sequence[Segment]) -> float:
    ordered = sorted(segments, key=lambda s: s.power_w)
    half = sum(s.end_s - s.start_s for s in ordered) / 2
    acc = 0.0
    for s in ordered:
        acc += s.end_s - s.start_s
        if acc >= half:
            return s.power_w
    return ordered[-1].power_w


def find_dips(series: Sequence[Segment], threshold: float = 0.3) -> tuple[float, list[Dip]]:
    """The median power and the dips below ``(1 - threshold)`` x median (touching segments merged).

    Args:
        series: The job's power (from :func:`job_series`), in time order.
        threshold: How far below the median a dip goes, as a fraction (0..1).

    Returns:
        (median power W, dips).
    """
    if not 0 < threshold < 1:
        raise ConfigError(f"dip threshold must be between 0 and 1, got {threshold}")
    if not series:
        return 0.0, []
    median = _weighted_median(series)
    cut = median * (1 - threshold)

    def touching(a: Segment, b: Segment) -> bool:
        return math.isclose(a.end_s, b.start_s)

    def deficit_j(segment: Segment) -> float:
        return max(median - segment.power_w, 0.0) * (segment.end_s - segment.start_s)

    spans: list[list[int]] = []  # [first, last] indexes of each stretch below the cut
    for i, segment in enumerate(series):
        if segment.power_w >= cut:
            continue
        if spans and spans[-1][1] == i - 1 and touching(series[i - 1], segment):
            spans[-1][1] = i
        else:
            spans.append([i, i])
    dips = []
    for first, last in spans:
        inside = series[first : last + 1]
        low = min(s.power_w for s in inside)
        deficit = sum(deficit_j(s) for s in inside)
        # The samples either side hold the stall's partial ends (above the cut, below the median).
        if first > 0 and touching(series[first - 1], series[first]):
            deficit += deficit_j(series[first - 1])
        if last + 1 < len(series) and touching(series[last], series[last + 1]):
            deficit += deficit_j(series[last + 1])
        depth = 1 - low / median if median else 0.0
        dips.append(Dip(inside[0].start_s, inside[-1].end_s, depth, low, deficit))
    return median, dips


def power_fluctuation(
    rows: Sequence[EnergyInterval], limit_w: float | None, *, threshold: float = 0.3
) -> PowerFluctuation | None:
    """Power figures of a run's rows; None when there are none.

    Args:
        rows: The run's energy rows (any kinds; % of limit uses the GPU rows).
        limit_w: Power limit of one GPU, W (None: no % of limit).
        threshold: Dip threshold, a fraction below the median.
    """
    gpu = device_segments(r for r in rows if r.kind == Kind.GPU)
    series = job_series(rows)
    if not series:
        return None
    pct = None
    if limit_w and gpu:
        values = [100.0 * s.power_w / limit_w for s in gpu]
        pct = (min(values), statistics.median(values), max(values))
    median, dips = find_dips(series, threshold)
    powers = [s.power_w for s in series]
    ramp = 0.0
    for a, b in zip(series, series[1:], strict=False):
        dt = (b.start_s + b.end_s) / 2 - (a.start_s + a.end_s) / 2
        if dt > 0:
            ramp = max(ramp, abs(b.power_w - a.power_w) / dt)
    return PowerFluctuation(
        limit_pct=pct,
        median_w=median,
        dips=tuple(dips),
        swing_w=max(powers) - min(powers),
        ramp_w_per_s=ramp,
        resolution_s=statistics.median(s.end_s - s.start_s for s in series),
        samples=len(gpu) or len(series),
    )
