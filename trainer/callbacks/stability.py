"""Instability detection: the detectors of trainer.detectors fed from each flushed batch.

Each detection goes to every callable in `on_detection` (the tracker adds the
ledger event and the Prometheus counter; the alerting code adds its webhook).
The final-layer activation norm is measured by a forward hook every
`activation_every` forward passes, as a device tensor (no sync), and enters the
step metrics as ``act_norm``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from wattlog.errors import ConfigError
from wattlog.events import EventKind
from wattlog.trainer.callback import Callback
from wattlog.trainer.detectors import (
    Detection,
    GrowthDetector,
    LossScaleDetector,
    NonFiniteDetector,
    SpikeDetector,
)

if TYPE_CHECKING:
    from wattlog.trainer.metrics import StepRecord

Detector = SpikeDetector | NonFiniteDetector | LossScaleDetector | GrowthDetector


def default_detectors() -> dict[str, list[Detector]]:
    """Metric name -> detectors: loss spikes and non-finite loss, grad-norm spikes, scale collapse, growth."""
    return {
        "loss": [NonFiniteDetector(), SpikeDetector(EventKind.LOSS_SPIKE)],
        "grad_norm": [NonFiniteDetector(metric="grad_norm"), SpikeDetector(EventKind.GRAD_NORM_SPIKE)],
        "loss_scale": [LossScaleDetector()],
        "act_norm": [GrowthDetector()],
    }


@dataclass
class StabilityCallback(Callback):
    """Run the detectors on each flushed batch and report what they find."""

    priority: ClassVar[int] = 5

    detectors: dict[str, list[Detector]] = field(default_factory=default_detectors)
    """Metric name -> detectors fed with that metric."""
    activation_every: int = 10
    """Sample the watched module's output norm every this many forward passes."""
    on_detection: list[Callable[[Detection], None]] = field(default_factory=list)
    """Called (bookkeeping thread) with each detection."""
    _detections: list[Detection] = field(default_factory=list)
    _handle: Any = None
    _calls: int = 0
    _pending: torch.Tensor | None = None
    _context: Any = None

    def __post_init__(self) -> None:
        """Validate the config."""
        if self.activation_every < 1:
            raise ConfigError(f"activation_every must be >= 1, got {self.activation_every}")

    @property
    def detections(self) -> list[Detection]:
        """Everything detected so far, in order."""
        return list(self._detections)

    def watch(self, module: torch.nn.Module) -> None:
        """Measure `module`'s output norm (e.g. the final layer norm) every `activation_every` passes."""
        if self._handle is not None:
            self._handle.remove()
        self._handle = module.register_forward_hook(self._hook)

    def _hook(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        if not module.training or not isinstance(output, torch.Tensor):
            return
        self._calls += 1
        if self._calls % self.activation_every == 0:
            # Mean per-token norm: comparable across batch sizes; stays on the device.
            self._pending = output.detach().float().norm(dim=-1).mean()

    def pre_train(self, context: Any) -> None:
        """Remember the context (to attach activation norms, report detections); watch its module."""
        self._context = context
        module = getattr(context, "watch", None)
        if module is not None and self._handle is None:
            self.watch(module)

    def pre_step(self, step: int) -> None:
        """Attach a pending activation-norm sample to this step's metrics."""
        if self._pending is not None and self._context is not None:
            self._context.add_metric("act_norm", self._pending)
            self._pending = None

    def log_metrics(self, records: Sequence[StepRecord]) -> None:
        """Feed each step's values to the detectors."""
        for record in records:
            for name, value in record.values.items():
                for detector in self.detectors.get(name, ()):
                    detection = detector.update(record.step, value)
                    if detection is not None:
                        self._report(detection)

    def _report(self, detection: Detection) -> None:
        self._detections.append(detection)
        for hook in self.on_detection:
            hook(detection)
        report = getattr(self._context, "detected", None)
        if report is not None:
            report(detection)

    def close(self) -> None:
        """Remove the forward hook."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
