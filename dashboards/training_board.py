"""The training board: loss, grad norm, loss scale, throughput and MFU, with wattlog's events."""

from __future__ import annotations

from wattlog.dashboards.panels import (
    SELECTOR,
    TOK_PER_J,
    TOK_PER_S,
    Panel,
    row,
    target,
    timeseries,
)
from wattlog.dashboards.queries import TOKENS_PER_JOULE, agents_panel, board
from wattlog.metric_names import MetricName


def training_dashboard() -> dict:
    """Training health (loss, grad norm, loss scale, throughput, MFU) with wattlog's events as annotations."""
    panels = [*_training_health(), *_throughput(), *_agents()]
    return board(
        "wattlog-training",
        "wattlog: training health",
        panels,
        "Loss, gradient norm and loss scale of wattlog-tracked runs, with its events as annotations.",
    )


def _series(metric: str) -> list[dict]:
    """One line per rank of a trainer's gauge."""
    return [target(f"{metric}{{{SELECTOR}}}", "{{run}} {{host}} rank {{rank}}")]


def _training_health() -> list[tuple[Panel, int, int]]:
    """Loss, gradient norm, loss scale and events per kind."""
    return [
        (row("Training health"), 24, 1),
        (timeseries("Loss", _series(MetricName.TRAIN_LOSS), "none"), 12, 8),
        (timeseries("Gradient norm", _series(MetricName.TRAIN_GRAD_NORM), "none"), 12, 8),
        (
            timeseries(
                "Loss scale",
                _series(MetricName.TRAIN_LOSS_SCALE),
                "none",
                "A dynamic loss scale falling toward zero precedes divergence (OPT).",
            ),
            12,
            8,
        ),
        (
            timeseries(
                "Events per kind",
                [
                    target(
                        f"sum by (kind) (increase({MetricName.TRAIN_EVENTS_TOTAL}{{{SELECTOR}}}[5m]))",
                        "{{kind}}",
                    )
                ],
                "none",
                "Loss spikes, grad-norm spikes, loss-scale collapses, non-finite values, restarts "
                "(every kind exported at 0 from the start, so the first event counts).",
            ),
            12,
            8,
        ),
    ]


def _throughput() -> list[tuple[Panel, int, int]]:
    """Tokens per second, tokens per joule and MFU."""
    return [
        (row("Throughput and efficiency"), 24, 1),
        (
            timeseries(
                "Tokens per second (1 min rate)",
                [
                    target(
                        f"sum by (run) (rate({MetricName.TRAIN_TOKENS_TOTAL}{{{SELECTOR}}}[1m]))", "{{run}}"
                    )
                ],
                TOK_PER_S,
            ),
            8,
            8,
        ),
        (
            timeseries(
                "Tokens per joule (5 min rate)",
                [target(TOKENS_PER_JOULE, "{{run}}")],
                TOK_PER_J,
                "Tokens over the IT energy of the last 5 minutes; the run's whole-run figure is on the "
                "energy board and in the report.",
            ),
            8,
            8,
        ),
        (
            timeseries(
                "MFU",
                [
                    target(
                        f"{MetricName.TRAIN_MFU_RATIO}{{{SELECTOR}}} <= 1", "{{run}} {{host}} rank {{rank}}"
                    )
                ],
                "percentunit",
                "Model FLOPs utilisation: achieved training FLOP/s over the devices' published peak (only "
                "when the trainer knows it: flops_per_token and peak_flops). A value above 100 % means the "
                "peak is wrong and is not drawn.",
            ),
            8,
            8,
        ),
    ]


def _agents() -> list[tuple[Panel, int, int]]:
    """Which agents are up."""
    return [
        (row("Agents"), 24, 1),
        (agents_panel(), 24, 6),
    ]
