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
from wattlog.dashboards.queries import board, so_far
from wattlog.metric_names import MetricName

BAND = MetricName.ENERGY_UNCERTAINTY_JOULES


def band_end(side: str) -> str:
    """One end of each run's band as the ledger sums rows (wattlog.records.summed_band), in Wh.

    The sampling-error part of each device's side (bound="random_low"/"random_high") is independent
    between devices: the sum takes the root of their squares; the rest adds up linearly. An agent that
    exports no random parts gives the linear sum (`or`).
    """
    end = f'sum by (run) ({BAND}{{bound="{side}", {SELECTOR}}})'
    random = f'{BAND}{{bound="random_{side}", {SELECTOR}}}'
    sign = "+" if side == "low" else "-"
    opposite = "-" if side == "low" else "+"
    quadrature = f"{end} {sign} sum by (run) ({random}) {opposite} sqrt(sum by (run) ({random} ^ 2))"
    return f"(({quadrature}) or {end}) / 3600"


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
                [
                    target(
                        f'{MetricName.POWER_WATTS}{{kind="gpu", {SELECTOR}}}', "{{run}} {{host}} {{device}}"
                    )
                ],
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
                "Energy and the agent's band (whole run)",
                [
                    target(
                        f"sum by (run) ({MetricName.ENERGY_JOULES_TOTAL}{{{SELECTOR}}}) / 3600",
                        "{{run}} best estimate",
                    ),
                    target(band_end("low"), "{{run}} low", "B"),
                    target(band_end("high"), "{{run}} high", "C"),
                ],
                "watth",
                "Best estimate with the low and high ends of the band each agent computes over its whole "
                "run (sensor accuracy, sampling, gaps), summed over devices as the ledger sums: sampling "
                "errors in quadrature, the rest linearly. The ledger's band (`wattlog table`, the report) "
                "sums one band per flush row, each with its own floor, so it is a few % wider: the "
                "figure to quote.",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Gaps (seconds not measured, agent's count)",
                [target(f"{MetricName.GAP_SECONDS_TOTAL}{{{SELECTOR}}}", "{{run}} {{host}} {{device}}")],
                "s",
                "Seconds inside gaps per device as the agent counts them live: failed reads, a lost device, "
                "late readings, never interpolated over. The ledger's gap figure (`wattlog table`) counts "
                "the gaps of its stored rows, which a restart or a lost final flush can make differ.",
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
                        f"60 * rate({MetricName.GAPS_TOTAL}{{{SELECTOR}}}[5m])",
                        "gaps {{run}} {{host}} {{device}}",
                    ),
                    target(
                        f"60 * rate({MetricName.SAMPLE_ERRORS_TOTAL}{{{SELECTOR}}}[5m])",
                        "read errors {{run}} {{host}}",
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
                [
                    target(
                        f"sum by (run, host) ({so_far(f'{MetricName.DEVICE_LOST}{{{SELECTOR}}}')})",
                        "{{run}} {{host}}",
                        instant=True,
                    )
                ],
                "none",
                "Devices the agent marked lost (fell off the bus, stopped answering), per run and host, as "
                "each agent last said in the range (a finished run's count stays).",
                decimals=0,
            ),
            12,
            8,
        ),
    ]
