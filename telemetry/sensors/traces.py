"""Power traces for the simulated device: piecewise-constant, with an exact integral.

Every trace is a sorted list of segments (start time, power). `power_w(t)` and
`energy_j(t0, t1)` are a bisect into that list plus a prefix sum, so both are
O(log n) and `energy_j` is the exact integral of the true power, the ground truth
every estimator is scored against.

Time before 0 holds the first segment's power. Beyond `duration_s` a trace either
repeats (`repeats=True`: SquareWave, TrainingTrace) or holds its last value
(`repeats=False`: ConstantTrace, CsvTrace).
"""

from __future__ import annotations

import csv
import math
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from wattlog.errors import ConfigError


@runtime_checkable
class Trace(Protocol):
    """True power of a device over time."""

    @property
    def duration_s(self) -> float:
        """Length of the trace's content; it repeats or holds beyond (see the class)."""
        ...

    def power_w(self, t_s: float) -> float:
        """True instantaneous power at `t_s`, watts."""
        ...

    def energy_j(self, t0_s: float, t1_s: float) -> float:
        """Exact integral of true power over [t0_s, t1_s], joules (negative if t1_s < t0_s)."""
        ...


class PiecewiseTrace:
    """Power held constant from each start time to the next.

    Args:
        starts_s: Segment start times; the first is 0, strictly increasing, all < duration_s.
        powers_w: Power of each segment, watts (finite, >= 0).
        duration_s: End of the content: > the last start when repeating; when holding,
            >= the last start (the last value then holds; may be inf).
        repeats: Repeat with period duration_s beyond it (else hold the last value).
    """

    def __init__(
        self,
        starts_s: Sequence[float],
        powers_w: Sequence[float],
        duration_s: float,
        *,
        repeats: bool = False,
    ) -> None:
        if not starts_s or len(starts_s) != len(powers_w):
            raise ConfigError("a trace needs one power per segment start, and at least one segment")
        if starts_s[0] != 0.0:
            raise ConfigError(f"a trace starts at t=0, not {starts_s[0]}")
        if any(b <= a for a, b in zip(starts_s, starts_s[1:], strict=False)):
            raise ConfigError("segment start times must strictly increase")
        if duration_s < starts_s[-1] or (repeats and duration_s == starts_s[-1]):
            raise ConfigError(f"duration_s {duration_s} must exceed the last segment start {starts_s[-1]}")
        if repeats and not math.isfinite(duration_s):
            raise ConfigError("a repeating trace needs a finite duration_s")
        if any(not (math.isfinite(p) and p >= 0.0) for p in powers_w):
            raise ConfigError("powers must be finite and >= 0 W")
        self._starts = [float(s) for s in starts_s]
        self._powers = [float(p) for p in powers_w]
        self._duration_s = float(duration_s)
        self.repeats = repeats
        # _cum[i] = energy from 0 to the start of segment i
        self._cum = [0.0]
        for i in range(1, len(self._starts)):
            self._cum.append(self._cum[-1] + self._powers[i - 1] * (self._starts[i] - self._starts[i - 1]))
        self._period_j = (
            self._cum[-1] + self._powers[-1] * (self._duration_s - self._starts[-1]) if repeats else math.nan
        )

    @property
    def duration_s(self) -> float:
        """See :class:`Trace`."""
        return self._duration_s

    @property
    def segments(self) -> list[tuple[float, float]]:
        """(start_s, power_w) of every segment, a copy."""
        return list(zip(self._starts, self._powers, strict=True))

    def _fold(self, t_s: float) -> tuple[float, float]:
        """(whole periods' energy before t, t within its period) for repeating traces."""
        k = math.floor(t_s / self._duration_s)
        return k * self._period_j, t_s - k * self._duration_s

    def power_w(self, t_s: float) -> float:
        """See :class:`Trace`."""
        if self.repeats:
            t_s = self._fold(t_s)[1]
        return self._powers[max(bisect_right(self._starts, t_s) - 1, 0)]

    def _cumulative_j(self, t_s: float) -> float:
        """Energy from 0 to t_s (negative for t_s < 0)."""
        base_j = 0.0
        if self.repeats:
            base_j, t_s = self._fold(t_s)
        i = bisect_right(self._starts, t_s) - 1
        if i < 0:  # before 0, the first power holds
            return base_j + t_s * self._powers[0]
        return base_j + self._cum[i] + (t_s - self._starts[i]) * self._powers[i]

    def energy_j(self, t0_s: float, t1_s: float) -> float:
        """See :class:`Trace`."""
        return self._cumulative_j(t1_s) - self._cumulative_j(t0_s)

    def mean_power_w(self, t0_s: float, t1_s: float) -> float:
        """Mean true power over [t0_s, t1_s]; the power at t0_s when the span is empty."""
        if t1_s <= t0_s:
            return self.power_w(t0_s)
        return self.energy_j(t0_s, t1_s) / (t1_s - t0_s)


def _merged(points: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Drop empty segments and merge neighbours of equal power; points are sorted (start, power)."""
    starts: list[float] = []
    powers: list[float] = []
    for i, (start, power) in enumerate(points):
        if i + 1 < len(points) and points[i + 1][0] <= start:
            continue  # zero-length segment
        if powers and powers[-1] == power:
            continue
        starts.append(start)
        powers.append(power)
    return starts, powers


class ConstantTrace(PiecewiseTrace):
    """The same power forever (`duration_s` is inf).

    Args:
        power_w: Power, watts.
    """

    def __init__(self, power_w: float) -> None:
        super().__init__([0.0], [power_w], math.inf)


class SquareWave(PiecewiseTrace):
    """`on_w` for `on_s`, then `off_w` for `off_s`, repeating; an on phase starts at `phase_s`.

    Args:
        on_w: Power of the on phase, watts.
        off_w: Power of the off phase, watts.
        on_s: Length of the on phase, seconds (> 0).
        off_s: Length of the off phase, seconds (> 0).
        phase_s: Time at which an on phase starts (any value; taken modulo the period).
    """

    def __init__(self, on_w: float, off_w: float, on_s: float, off_s: float, phase_s: float = 0.0) -> None:
        if not (on_s > 0 and off_s > 0):
            raise ConfigError(f"a square wave needs on_s > 0 and off_s > 0, got {on_s} and {off_s}")
        period_s = on_s + off_s
        p = phase_s % period_s
        if p + on_s <= period_s:
            points = [(0.0, off_w), (p, on_w), (p + on_s, off_w)]
        else:  # the on phase wraps around the period's end
            points = [(0.0, on_w), (p + on_s - period_s, off_w), (p, on_w)]
        starts, powers = _merged([pt for pt in points if pt[0] < period_s])
        super().__init__(starts, powers, period_s, repeats=True)
        self.period_s = period_s


class CsvTrace(PiecewiseTrace):
    """A trace read from a CSV file with columns `t_s,power_w`; it holds its last value.

    Each value holds until the next row's time. Times are shifted so the first row
    is at t=0; `duration_s` is the last row's (shifted) time, after which the last
    value holds. Blank lines and lines starting with '#' are skipped.
    """

    @classmethod
    def from_csv(cls, path: str | Path) -> CsvTrace:
        """Read `path`; a malformed line raises ConfigError naming the file and line."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read trace {path}: {e.strerror}") from e
        rows = [
            (n, line)
            for n, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not rows or [c.strip() for c in rows[0][1].split(",")][:2] != ["t_s", "power_w"]:
            raise ConfigError(f"{path}: the first line must be the header 't_s,power_w'")
        times: list[float] = []
        powers: list[float] = []
        for n, fields in zip((n for n, _ in rows[1:]), csv.reader(line for _, line in rows[1:]), strict=True):
            try:
                t_s, power_w = float(fields[0]), float(fields[1])
            except (IndexError, ValueError):
                raise ConfigError(
                    f"{path}:{n}: expected 't_s,power_w' as two numbers, got {','.join(fields)!r}"
                ) from None
            if not (math.isfinite(t_s) and math.isfinite(power_w) and power_w >= 0):
                raise ConfigError(f"{path}:{n}: time must be finite and power finite and >= 0")
            if times and t_s <= times[-1]:
                raise ConfigError(f"{path}:{n}: time {t_s} does not increase (previous {times[-1]})")
            times.append(t_s)
            powers.append(power_w)
        if not times:
            raise ConfigError(f"{path}: no data rows after the header")
        t0 = times[0]
        starts = [t - t0 for t in times]
        return cls(starts, powers, starts[-1])


class TrainingTrace(PiecewiseTrace):
    """Training-like power: compute bursts, communication dips, periodic checkpoint stalls.

    Each step is a compute burst (`1 - comm_fraction` of the step) then a
    communication dip. Every `checkpoint_every_s` a stall at `checkpoint_w` is
    inserted between steps. The trace repeats beyond `duration_s`. Build it with
    :meth:`generate` (seeded) or :meth:`phase_locked`.
    """

    seed: int = 0

    @classmethod
    def generate(
        cls,
        seed: int,
        duration_s: float,
        step_s: tuple[float, float] = (0.1, 2.0),
        compute_w: float = 650.0,
        comm_w: float = 350.0,
        comm_fraction: float = 0.2,
        idle_w: float = 90.0,
        checkpoint_every_s: float | None = 60.0,
        checkpoint_s: float = 5.0,
        *,
        checkpoint_w: float | None = None,
        vary: Literal["run", "step"] = "run",
        jitter: float = 0.05,
        power_jitter: float = 0.03,
        warmup_s: float = 0.0,
        step_grid_s: float | None = None,
    ) -> TrainingTrace:
        """A seeded training-like trace; the same arguments always give the same trace.

        Args:
            seed: Random seed.
            duration_s: Length of the trace (> 0); it repeats beyond.
            step_s: (min, max) step length; "run": one length drawn per run, "step": one per step.
            compute_w: Power during compute bursts, watts.
            comm_w: Power during communication dips, watts.
            comm_fraction: Share of each step spent communicating, in [0, 1).
            idle_w: Power while idle (warmup and, by default, checkpoint stalls), watts.
            checkpoint_every_s: Time between checkpoint stalls; None or 0 for none.
            checkpoint_s: Length of each checkpoint stall, seconds.
            checkpoint_w: Power during a stall (default idle_w).
            vary: Draw the step length once per run ("run") or per step ("step").
            jitter: Relative jitter of each step's length (0 keeps it exact).
            power_jitter: Relative jitter of each step's compute and comm power (0 keeps them exact).
            warmup_s: Idle time at the start (data loading, compilation).
            step_grid_s: Round every step to a whole multiple of this (e.g. 0.1: steps of exactly
                200 ms, 1.3 s, ...; jitter then only picks among multiples). None: no rounding.
        """
        shape = _Shape(
            step_s, compute_w, comm_w, comm_fraction, idle_w, checkpoint_every_s or 0.0, checkpoint_s,
            idle_w if checkpoint_w is None else checkpoint_w, vary, jitter, power_jitter, step_grid_s,
        )  # fmt: skip
        if not (duration_s > 0 and warmup_s >= 0 and shape.valid()):
            raise ConfigError(
                "TrainingTrace needs 0 < step_s[0] <= step_s[1], duration_s > 0, "
                "0 <= comm_fraction < 1, jitter >= 0, warmup_s >= 0 and step_grid_s > 0 (or None)"
            )
        points = shape.points(random.Random(seed), duration_s, warmup_s)  # noqa: S311 - a simulated trace's noise, not a secret
        starts, powers = _merged([p for p in points if p[0] < duration_s])
        trace = cls(starts, powers, duration_s, repeats=True)
        trace.seed = seed
        return trace

    @classmethod
    def phase_locked(
        cls,
        period_s: float = 0.1,
        compute_w: float = 650.0,
        comm_w: float = 250.0,
        comm_fraction: float = 0.5,
    ) -> TrainingTrace:
        """Steps of exactly `period_s`, compute first: locked to a sensor publishing every `period_s`.

        A sensor that averages only the end of each period then sees the comm dip
        alone. The trace is one step long and repeats, so the lock never drifts.
        """
        if not (period_s > 0 and 0 < comm_fraction < 1):
            raise ConfigError("phase_locked needs period_s > 0 and 0 < comm_fraction < 1")
        return cls([0.0, (1.0 - comm_fraction) * period_s], [compute_w, comm_w], period_s, repeats=True)


@dataclass(frozen=True, slots=True)
class _Shape:
    """The arguments of TrainingTrace.generate that shape each step (see it for their meaning)."""

    step_s: tuple[float, float]
    compute_w: float
    comm_w: float
    comm_fraction: float
    idle_w: float
    checkpoint_every_s: float
    checkpoint_s: float
    stall_w: float
    vary: Literal["run", "step"]
    jitter: float
    power_jitter: float
    step_grid_s: float | None

    def valid(self) -> bool:
        """Whether the steps can be drawn (lengths ordered and positive, fractions in range)."""
        lo, hi = self.step_s
        grid_ok = self.step_grid_s is None or self.step_grid_s > 0
        return 0 < lo <= hi and 0 <= self.comm_fraction < 1 and self.jitter >= 0 and grid_ok

    def points(self, rng: random.Random, duration_s: float, warmup_s: float) -> list[tuple[float, float]]:
        """(start, power) of every level: warmup, then compute/comm steps with checkpoint stalls."""
        lo, hi = self.step_s
        run_step_s = rng.uniform(lo, hi)
        points: list[tuple[float, float]] = [(0.0, self.idle_w)] if warmup_s > 0 else []
        t = warmup_s
        since_checkpoint_s = 0.0
        while t < duration_s:
            if self.checkpoint_every_s and since_checkpoint_s >= self.checkpoint_every_s:
                points.append((t, self.stall_w))
                t += self.checkpoint_s
                since_checkpoint_s = 0.0
                continue
            step = rng.uniform(lo, hi) if self.vary == "step" else run_step_s
            if self.jitter:
                step *= 1.0 + rng.uniform(-self.jitter, self.jitter)
            if self.step_grid_s:
                step = max(round(step / self.step_grid_s), 1) * self.step_grid_s
            scale = 1.0 + rng.uniform(-self.power_jitter, self.power_jitter) if self.power_jitter else 1.0
            points.append((t, self.compute_w * scale))
            if self.comm_fraction:
                points.append((t + step * (1.0 - self.comm_fraction), self.comm_w * scale))
            t += step
            since_checkpoint_s += step
        return points
