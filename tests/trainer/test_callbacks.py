"""Callbacks called directly with a fake tracker: GC, speed and stability."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest
import torch

from wattlog.clock import FakeClock
from wattlog.errors import ConfigError
from wattlog.trainer.callback import Callback
from wattlog.trainer.callbacks import GCCallback, SpeedCallback, StabilityCallback
from wattlog.trainer.metrics import StepRecord


def test_base_callback_hooks_are_no_ops() -> None:
    callback = Callback()
    callback.pre_train(None)  # type: ignore[arg-type]
    callback.pre_step(1)
    callback.post_step(1)
    callback.log_metrics([])
    callback.on_error(RuntimeError())
    callback.close()
    assert callback.state_dict() == {}


def test_gc_callback_disables_automatic_gc_collects_on_schedule_and_restores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, int]] = []  # (step being reported, generation) of each collection
    step = 0
    real_collect = gc.collect
    monkeypatch.setattr(
        gc, "collect", lambda generation=2: calls.append((step, generation)) or real_collect(generation)
    )
    gc.enable()
    callback = GCCallback(every_steps=3)
    callback.pre_train(None)
    assert not gc.isenabled()
    calls.clear()
    for step in range(1, 10):
        callback.post_step(step)
    # exactly steps 3, 6 and 9: the same steps on every rank, never a count of calls
    assert calls == [(3, 1), (6, 1), (9, 1)] and callback.collections == 3
    calls.clear()
    for step in range(10, 17):  # a resumed run: multiples of every_steps, not steps since the start
        callback.post_step(step)
    assert calls == [(12, 1), (15, 1)] and callback.collections == 5
    callback.close()
    assert gc.isenabled()


def test_gc_callback_leaves_gc_off_if_it_was_off_and_can_be_disabled() -> None:
    gc.disable()
    try:
        callback = GCCallback(every_steps=1)
        callback.pre_train(None)
        callback.close()
        assert not gc.isenabled()
    finally:
        gc.enable()
    off = GCCallback(enabled=False)
    off.pre_train(None)
    off.post_step(1000)
    assert gc.isenabled() and off.collections == 0
    with pytest.raises(ConfigError):
        GCCallback(every_steps=0)


def _records(start: int, n: int, t0: float, tokens: float = 100.0) -> list[StepRecord]:
    return [StepRecord(start + i, t0 + i + 1, {"tokens": tokens, "loss": 1.0}) for i in range(n)]


def test_speed_callback_tokens_per_second_per_joule_and_mfu() -> None:
    clock = FakeClock(wall_offset_s=0.0)
    energy = [0.0]
    callback = SpeedCallback(flops_per_token=1e6, peak_flops=1e9, energy_j=lambda: energy[0])
    seen = []
    callback.on_figures = [seen.append]
    callback.pre_train(SimpleNamespace(clock=clock))
    energy[0] = 500.0
    callback.log_metrics(_records(1, 10, 0.0))  # 1000 tokens in 10 s, 500 J
    figures = callback.latest
    assert figures is not None and seen == [figures]
    assert figures.tokens_per_s == pytest.approx(100.0)
    assert figures.power_w == pytest.approx(50.0)
    assert figures.tokens_per_j == pytest.approx(2.0)
    assert figures.mfu == pytest.approx(100.0 * 1e6 / 1e9)
    assert figures.tokens_total == 1000
    assert callback.state_dict() == {"tokens_total": 1000.0}


def test_speed_callback_without_energy_or_flops_reports_none() -> None:
    callback = SpeedCallback()
    callback.pre_train(SimpleNamespace(clock=FakeClock(wall_offset_s=0.0)))
    callback.log_metrics(_records(1, 4, 0.0))
    figures = callback.latest
    assert (
        figures is not None
        and figures.tokens_per_j is None
        and figures.mfu is None
        and figures.power_w is None
    )
    with pytest.raises(ConfigError):
        SpeedCallback(peak_flops=-1.0)


def test_stability_callback_reports_detections_and_samples_activations() -> None:
    found = []
    callback = StabilityCallback(activation_every=2, on_detection=[found.append])
    added: dict[str, torch.Tensor] = {}
    callback.pre_train(SimpleNamespace(add_metric=added.__setitem__))
    layer = torch.nn.LayerNorm(4)
    callback.watch(layer)
    layer(torch.ones(2, 4))
    callback.pre_step(1)
    assert added == {}
    layer(torch.randn(2, 4))
    callback.pre_step(2)
    assert "act_norm" in added and added["act_norm"].dim() == 0
    records = [StepRecord(s, float(s), {"loss": 2.0 + 0.01 * (s % 3)}) for s in range(1, 40)]
    records.append(StepRecord(40, 40.0, {"loss": float("nan")}))
    records.append(StepRecord(41, 41.0, {"loss": 9.0, "loss_scale": 2.0**-6}))
    callback.log_metrics(records)
    assert [(d.kind, d.step) for d in found] == [
        ("non_finite", 40),
        ("loss_spike", 41),
        ("loss_scale_collapse", 41),
    ]
    assert callback.detections == found
    callback.close()
    assert not layer._forward_hooks
