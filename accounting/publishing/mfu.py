"""Model FLOPs utilisation (PaLM, appendix B): achieved model FLOP/s over the devices' published peak.

MFU needs a peak that is the devices' published one (the device catalog,
accounting/data/devices.toml, each with its source). A measured matmul rate is
no peak: training beats it, and the demo once reported MFU of 132-253 % that
way. A figure above 100 % proves the peak wrong, so it is not reported (None),
and the first such case says why in one warning.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

_warned: set[float] = set()  # peaks already named as too low by this process


def mfu_of(
    tokens_per_s: float | None, flops_per_token: float | None, peak_flops: float | None
) -> float | None:
    """Tokens/s x FLOPs per token / peak FLOP/s, 0..1; None when a figure is missing or it exceeds 1.

    >>> mfu_of(1000.0, 6e9, 1e13)
    0.6
    >>> mfu_of(1000.0, 6e9, None) is None, mfu_of(None, 6e9, 1e13) is None
    (True, True)
    """
    if not tokens_per_s or not flops_per_token or not peak_flops:
        return None
    value = tokens_per_s * flops_per_token / peak_flops
    if value > 1.0:
        if peak_flops not in _warned:
            _warned.add(peak_flops)
            logger.warning(
                "MFU would be %.0f %%, above 100 %%: peak_flops=%.3g FLOP/s is below what training achieved "
                "(a measured rate, or another precision's?); MFU not reported",
                value * 100,
                peak_flops,
            )
        return None
    return value
