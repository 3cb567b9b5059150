"""The OLMo-core callback, driven through OLMo-core's own ``Callback`` hooks in the trainer's order.

OLMo-core's ``Trainer`` needs a data loader, a train module and a checkpointer to build; its
callbacks only see ``trainer.global_step``, so a stand-in trainer with that attribute drives
the real callback class (a subclass of ``olmo_core.train.callbacks.Callback``). Skipped where
``ai2-olmo-core`` is not installed (its pins would downgrade rich in the project's venv).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integrations.conftest import import_error_without, wait_for_energy
from wattlog.accounting.ledger import Ledger, make_engine

pytest.importorskip("olmo_core.train.callbacks")
torch = pytest.importorskip("torch")
from wattlog.integrations.olmo_core import WattlogCallback  # noqa: E402

BATCH, SEQ = 2, 16


class StandIn:
    """What an OLMo-core callback reads of its trainer."""

    global_step = 0


def fit(callback: WattlogCallback, steps: int, crash_at: int | None = None) -> list[dict[str, float]]:
    """Call the hooks as ``Trainer.fit()`` does; return what each logging step's metrics became."""
    callback.trainer = StandIn()
    logged: list[dict[str, float]] = []
    try:
        callback.pre_train()
        for _ in range(steps):
            callback.pre_step({"input_ids": torch.zeros(BATCH, SEQ, dtype=torch.long)})
            callback.trainer.global_step += 1
            if callback.trainer.global_step == crash_at:
                raise RuntimeError("simulated crash")
            callback.post_train_batch()
            metrics = {"train/CE loss": 3.0}
            if callback.trainer.global_step == steps:  # stand-in steps are instant: let energy accrue
                wait_for_energy(callback.session)
            callback.pre_log_metrics(callback.trainer.global_step, metrics)
            logged.append(metrics)
            if callback.trainer.global_step == 2:
                callback.post_checkpoint_saved("step2")
            callback.post_step()
        callback.post_train()
    except BaseException as error:
        callback.on_error(error)
        raise
    finally:
        callback.close()
    return logged


def test_the_trainers_metrics_get_the_footprint_and_the_run_is_recorded(
    tracker_kwargs: dict[str, Any],
) -> None:
    callback = WattlogCallback(run="olmo-run", tracker_kwargs=tracker_kwargs)
    logged = fit(callback, steps=4)
    assert logged[-1]["train/CE loss"] == 3.0  # the trainer's own metrics stay
    for key in ("wattlog/energy_j", "wattlog/co2_kg", "wattlog/water_l"):
        assert key in logged[-1], sorted(logged[-1])
    print({k: v for k, v in logged[-1].items() if k.startswith("wattlog/")})  # shown with -s
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("olmo-run").status == "finished"
    events = ledger.events("olmo-run")
    progress = [e for e in events if e.kind == "progress"]
    assert progress[-1].step == 4 and progress[-1].payload["tokens_total"] == 4 * BATCH * SEQ
    assert [e.step for e in events if e.kind == "checkpoint"] == [2]
    assert sum(t.energy_j for t in ledger.energy_totals("olmo-run")) > 0


def test_an_error_ends_the_run_failed(tracker_kwargs: dict[str, Any]) -> None:
    with pytest.raises(RuntimeError, match="simulated crash"):
        fit(WattlogCallback(run="olmo-crash", tracker_kwargs=tracker_kwargs), steps=4, crash_at=3)
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("olmo-crash").status == "failed"
    assert [e.payload["type"] for e in ledger.events("olmo-crash") if e.kind == "exception"] == [
        "RuntimeError"
    ]


def test_without_olmo_core_the_import_names_the_extra() -> None:
    message = import_error_without("wattlog.integrations.olmo_core", "olmo_core")
    assert "pip install 'wattlog[olmo-core]'" in message
