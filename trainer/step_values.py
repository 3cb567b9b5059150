"""The values a training loop hands to ``Tracker.step()``, checked without a host-device sync.

A bad value (a string, a tensor of several elements, a boolean) is one warning
line, once per name and problem, and is skipped: the tracker never stops
training. A non-finite number is kept (the detectors report it) and warned
about once.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Mapping
from typing import Any

import torch


class StepValues:
    """Checks step values and warns once per problem.

    Args:
        logger: Where warnings go (the tracker's logger, so users filter one name).
    """

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._warned: set[str] = set()

    def warn_once(self, key: str, message: str) -> None:
        """Log `message` as a warning the first time `key` is seen."""
        if key not in self._warned:
            self._warned.add(key)
            self._log.warning("%s", message)

    def checked(self, given: Mapping[str, Any], step: int) -> dict[str, torch.Tensor | float]:
        """The usable values among `given` (None values are absent, not errors)."""
        out: dict[str, torch.Tensor | float] = {}
        for name, value in given.items():
            if value is not None:
                checked = self._check(name, value, step)
                if checked is not None:
                    out[name] = checked
        return out

    def _check(self, name: str, value: Any, step: int) -> torch.Tensor | float | None:
        if isinstance(value, torch.Tensor):
            # Shape and dtype are metadata: reading them never syncs.
            if value.numel() != 1 or value.is_complex() or value.dtype == torch.bool:
                self.warn_once(
                    f"shape-{name}",
                    f"step({name}=...) needs a one-element real tensor, got shape {tuple(value.shape)} "
                    f"{value.dtype}: value ignored",
                )
                return None
            return value
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            number = float(value)
            if not math.isfinite(number):
                self.warn_once(f"finite-{name}", f"step({name}={number}) at step {step} is not finite")
            return number
        self.warn_once(
            f"type-{name}",
            f"step({name}=...) got a {type(value).__name__}; pass a tensor or a number: value ignored",
        )
        return None
