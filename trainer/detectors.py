"""Instability detectors over Python values (they run on the bookkeeping thread).

Each takes one value per step and returns a :class:`Detection` or None:

- :class:`SpikeDetector`: a value above median + k x MAD of a trailing window
  (loss spikes, grad-norm spikes); robust to the spikes themselves.
- :class:`NonFiniteDetector`: NaN or infinity.
- :class:`LossScaleDetector`: a dynamic loss scale collapsing toward zero. OPT
  saw the scale fall before its divergences; metaseq stops training at 2**-5.
- :class:`GrowthDetector`: a slowly growing value (final-layer activation norm)
  against the median of its first samples.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass

from wattlog.errors import ConfigError
from wattlog.events import EventKind

# MAD x 1.4826 estimates the standard deviation of normally distributed values.
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True, slots=True)
class Detection:
    """One instability found at one step.

    Attributes:
        kind: loss_spike, grad_norm_spike, non_finite, loss_scale_collapse, activation_growth.
        step: Step at which it was seen.
        value: The offending value.
        threshold: The bound it crossed.
        message: One line for logs and alerts.
    """

    kind: str
    step: int
    value: float
    threshold: float
    message: str


@dataclass
class SpikeDetector:
    """Value > median + k x (1.4826 MAD) of the last `window` finite values."""

    kind: str = EventKind.LOSS_SPIKE
    """Detection kind emitted."""
    window: int = 100
    """Trailing values kept."""
    k: float = 6.0
    """Robust standard deviations above the median that count as a spike."""
    min_history: int = 20
    """Values needed before anything is flagged."""
    min_spread: float = 1e-3
    """Floor on the robust spread relative to |median|, so a flat series does not flag noise."""

    def __post_init__(self) -> None:
        """Validate the config and create the window."""
        if self.window < 3 or not 3 <= self.min_history <= self.window:
            raise ConfigError(f"need window >= min_history >= 3, got {self.window} and {self.min_history}")
        if not self.k > 0:
            raise ConfigError(f"k must be > 0, got {self.k}")
        self._values: deque[float] = deque(maxlen=self.window)

    def update(self, step: int, value: float) -> Detection | None:
        """Feed one value; spikes are reported and kept out of the window."""
        if not math.isfinite(value):
            return None
        if len(self._values) >= self.min_history:
            median = statistics.median(self._values)
            mad = statistics.median(abs(v - median) for v in self._values)
            spread = max(_MAD_TO_SIGMA * mad, self.min_spread * abs(median), 1e-12)
            threshold = median + self.k * spread
            if value > threshold:
                return Detection(
                    self.kind,
                    step,
                    value,
                    threshold,
                    f"{self.kind.replace('_', ' ')} at step {step}: {value:.4g} > {threshold:.4g} "
                    f"(median {median:.4g} + {self.k:g} x {spread:.3g})",
                )
        self._values.append(value)
        return None


@dataclass
class NonFiniteDetector:
    """Flags NaN and infinite values."""

    kind: str = EventKind.NON_FINITE
    """Detection kind emitted."""
    metric: str = "loss"
    """Name used in the message."""

    def update(self, step: int, value: float) -> Detection | None:
        """Feed one value."""
        if math.isfinite(value):
            return None
        return Detection(self.kind, step, value, math.inf, f"{self.metric} is {value} at step {step}")


@dataclass
class LossScaleDetector:
    """A dynamic loss scale at or below `min_scale` (reported once until it recovers)."""

    kind: str = EventKind.LOSS_SCALE_COLLAPSE
    """Detection kind emitted."""
    min_scale: float = 2.0**-5
    """metaseq stops training at this scale."""
    _collapsed: bool = False

    def __post_init__(self) -> None:
        """Validate the config."""
        if not self.min_scale > 0:
            raise ConfigError(f"min_scale must be > 0, got {self.min_scale}")

    def update(self, step: int, value: float) -> Detection | None:
        """Feed one loss scale."""
        if value > self.min_scale:
            self._collapsed = False
            return None
        if self._collapsed:
            return None
        self._collapsed = True
        return Detection(
            self.kind,
            step,
            value,
            self.min_scale,
            f"loss scale fell to {value:.3g} at step {step} (<= {self.min_scale:.3g}): training is diverging",
        )


@dataclass
class GrowthDetector:
    """Value > factor x the median of the first `baseline` values (reported once per doubling)."""

    kind: str = EventKind.ACTIVATION_GROWTH
    """Detection kind emitted."""
    baseline: int = 5
    """Samples that set the reference level."""
    factor: float = 4.0
    """Growth over the reference that counts."""

    def __post_init__(self) -> None:
        """Validate the config."""
        if self.baseline < 1 or not self.factor > 1:
            raise ConfigError(f"need baseline >= 1 and factor > 1, got {self.baseline} and {self.factor}")
        self._first: list[float] = []
        self._next_threshold: float | None = None

    def update(self, step: int, value: float) -> Detection | None:
        """Feed one sampled value."""
        if not math.isfinite(value):
            return None
        if len(self._first) < self.baseline:
            self._first.append(value)
            if len(self._first) == self.baseline:
                self._next_threshold = self.factor * statistics.median(self._first)
            return None
        assert self._next_threshold is not None
        if value <= self._next_threshold or self._next_threshold <= 0:
            return None
        threshold = self._next_threshold
        self._next_threshold = 2 * value
        return Detection(
            self.kind,
            step,
            value,
            threshold,
            f"final-layer activation norm {value:.4g} at step {step} is above {threshold:.4g} "
            f"({self.factor:g} x its starting level)",
        )
