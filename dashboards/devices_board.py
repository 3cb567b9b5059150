"""The devices board: each GPU's power as a row of its own, the energy's band, gaps and lost devices."""

from __future__ import annotations

from wattlog.dashboards.panels import (
    SELECTOR,
    Panel,
    row,
    stat,
    state_timeline,
    target,
    timeseries,
)
from wattlog.dashboards.queries import board
from wattlog.metric_names import MetricName


def devices_dashboard() -> dict:
    """Each GPU's power as a row of its own, the energy's band, gaps, read errors and lost devices."""
    panels = [*_per_gpu_power(), *_band_and_gaps(), *_errors_and_lost()]
    return board(
        "wattlog-devices",
        "wattlog: devices, gaps and band",
        panels,
        "Per-GPU power, the energy's uncertainty band, recorded gaps and lost devices.",
    )


def _per_gpu_power() -> list[tuple[Panel, int, int]]:
    """One state-timeline row per GPU, coloured by power."""
    return [
        (row("Per-GPU power"), 24, 1),
        (
            state_timeline(
                "Per-GPU power",
                [target(f'{MetricName.POWER_WATTS}{{kind="gpu", {SELECTOR}}}', "{{host}} {{device}}")],
                "watt",
                "One row per GPU, coloured by power: idle, throttled or lost GPUs stand out.",
            ),
            24,
            10,
        ),
    ]


def _band_and_gaps() -> list[tuple[Panel, int, int]]:
    """The energy with its band, and the seconds inside recorded gaps."""
    return [
        (row("How sure the energy is"), 24, 1),
        (
            timeseries(
                "Energy and its band",
                [
                    target(
                        f"sum by (run) ({MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}})",
                        "{{run}} best estimate",
                    ),
                    target(
                        f"sum by (run, bound) ({MetricName.ENERGY_UNCERTAINTY_JOULES}{{{SELECTOR}}})",
                        "{{run}} {{bound}}",
                        "B",
                    ),
                ],
                "joule",
                "Best estimate with the low and high ends of its band (sensor accuracy, sampling, gaps).",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Gaps (seconds not measured)",
                [target(f"{MetricName.GAP_SECONDS_TOTAL}{{{SELECTOR}}}", "{{host}} {{device}}")],
                "s",
                "Seconds inside recorded gaps per device: failed reads, a lost device, late readings. "
                "Never interpolated over.",
            ),
            12,
            8,
        ),
    ]


def _errors_and_lost() -> list[tuple[Panel, int, int]]:
    """Gaps and read errors per minute, and lost devices per host."""
    return [
        (
            timeseries(
                "Gaps and read errors per minute",
                [
                    target(
                        f"60 * rate({MetricName.GAPS_TOTAL}{{{SELECTOR}}}[5m])", "gaps {{host}} {{device}}"
                    ),
                    target(
                        f"60 * rate({MetricName.SAMPLE_ERRORS_TOTAL}{{{SELECTOR}}}[5m])",
                        "read errors {{host}}",
                        "B",
                    ),
                ],
                "none",
            ),
            12,
            8,
        ),
        (
            stat(
                "Lost devices",
                [target(f"sum by (host) ({MetricName.DEVICE_LOST}{{{SELECTOR}}})", "{{host}}")],
                "none",
                "Devices the agent marked lost (fell off the bus, stopped answering), per host.",
                decimals=0,
            ),
            12,
            8,
        ),
    ]
