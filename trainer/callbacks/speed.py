"""Throughput per flushed batch: tokens/s, tokens per joule and MFU (PaLM, appendix B)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from wattlog.accounting.publishing.mfu import mfu_of
from wattlog.errors import ConfigError
from wattlog.trainer.callback import Callback

if TYPE_CHECKING:
    from wattlog.trainer.metrics import StepRecord


@dataclass(frozen=True, slots=True)
class SpeedFigures:
    """Throughput over the latest flushed batch of steps.

    Attributes:
        step: Last step of the batch.
        tokens_total: Tokens reported since the run (this attempt) began.
        tokens_per_s: Tokens per second of wall time.
        power_w: Mean power of the measured devices over the batch (None without energy).
        energy_j: Cumulative energy of the measured devices (None without energy).
        tokens_per_j: Tokens per joule over the batch (None without energy).
        mfu: Model FLOPs utilisation, 0..1 (None without FLOPs per token and a published peak
            FLOP/s, or above 1: see wattlog.accounting.publishing.mfu).
    """

    step: int
    tokens_total: float
    tokens_per_s: float
    power_w: float | None
    energy_j: float | None
    tokens_per_j: float | None
    mfu: float | None


@dataclass
class SpeedCallback(Callback):
    """Compute :class:`SpeedFigures` on the bookkeeping thread for each flushed batch."""

    priority: ClassVar[int] = 10

    flops_per_token: float | None = None
    """Training FLOPs per token of the model (e.g. GPTConfig.flops_per_token()); None: no MFU."""
    peak_flops: float | None = None
    """Peak FLOP/s of the devices that train (all ranks together); None: no MFU."""
    energy_j: Callable[[], float | None] | None = None
    """Cumulative energy of the measured devices, joules; None = the tracker's agent's."""
    on_figures: list[Callable[[SpeedFigures], None]] | None = None
    """Called with each batch's figures (exporters)."""
    _context: Any = None
    _last: tuple[float, float | None] | None = None
    _tokens_total: float = 0.0
    _latest: SpeedFigures | None = None

    def __post_init__(self) -> None:
        """Validate the config."""
        for name in ("flops_per_token", "peak_flops"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number, got {value}")

    @property
    def latest(self) -> SpeedFigures | None:
        """The figures of the latest batch (None before the first flush)."""
        return self._latest

    def pre_train(self, context: Any) -> None:
        """Take the starting point of the first interval."""
        self._context = context
        self._last = (context.clock.wall(), self._energy())

    def log_metrics(self, records: Sequence[StepRecord]) -> None:
        """Turn one flushed batch into figures."""
        if not records:
            return
        tokens = sum(r.values.get("tokens", 0.0) for r in records if math.isfinite(r.values.get("tokens", 0)))
        self._tokens_total += tokens
        end_s = records[-1].wall_s
        energy = self._energy()
        start_s, start_energy = self._last if self._last is not None else (records[0].wall_s, None)
        self._last = (end_s, energy)
        elapsed_s = end_s - start_s
        if elapsed_s <= 0:
            return
        tokens_per_s = tokens / elapsed_s
        spent = energy - start_energy if energy is not None and start_energy is not None else None
        figures = SpeedFigures(
            step=records[-1].step,
            tokens_total=self._tokens_total,
            tokens_per_s=tokens_per_s,
            power_w=spent / elapsed_s if spent is not None else None,
            energy_j=energy,
            tokens_per_j=tokens / spent if spent else None,
            mfu=mfu_of(tokens_per_s, self.flops_per_token, self.peak_flops),
        )
        self._latest = figures
        for hook in self.on_figures or ():
            hook(figures)
        publish = getattr(self._context, "speed", None)
        if publish is not None:
            publish(figures)

    def _energy(self) -> float | None:
        if self.energy_j is not None:
            return self.energy_j()
        measured = getattr(self._context, "energy_j", None)
        return measured() if measured is not None else None

    def state_dict(self) -> dict[str, Any]:
        """Tokens so far, so a resumed run keeps counting."""
        return {"tokens_total": self._tokens_total}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the token count."""
        self._tokens_total = float(state.get("tokens_total", 0.0))
