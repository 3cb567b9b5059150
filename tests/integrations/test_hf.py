"""The Hugging Face callback on a CPU: a tiny GPT-2 built from a config (no hub download) trains."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from rich.console import Console

pytest.importorskip("transformers", reason="pip install 'wattlog[hf]'")

from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402

from tests.integrations.conftest import import_error_without  # noqa: E402
from wattlog.accounting.ledger import Ledger, make_engine  # noqa: E402
from wattlog.integrations.hf import WattlogCallback  # noqa: E402

SEQ, VOCAB = 16, 64


class Recorder(TrainerCallback):
    """Stands in for a reporter (W&B, MLflow, TensorBoard): keeps a copy of every logs dict it sees."""

    def __init__(self) -> None:
        self.logs: list[dict[str, Any]] = []

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        self.logs.append(dict(logs or {}))


class Paced(TrainerCallback):
    """Makes each step last 60 ms, so the simulated energy counter (100 ms updates) moves between logs."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        time.sleep(0.06)


class Boom(TrainerCallback):
    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if state.global_step == 3:
            raise RuntimeError("simulated crash at step 3")


def tiny_trainer(tmp_path: Path, *callbacks: TrainerCallback, steps: int = 6) -> Trainer:
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            n_layer=1, n_head=2, n_embd=32, vocab_size=VOCAB, n_positions=SEQ, bos_token_id=0, eos_token_id=0
        )
    )
    data = [{"input_ids": (ids := torch.randint(0, VOCAB, (SEQ,))), "labels": ids} for _ in range(64)]
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=steps,
        logging_steps=2,
        per_device_train_batch_size=2,
        report_to=[],
        use_cpu=True,
        save_strategy="steps",
        save_steps=4,
        include_num_input_tokens_seen=True,
        disable_tqdm=True,
    )
    return Trainer(model=model, args=args, train_dataset=data, callbacks=[Paced(), *callbacks])


def test_every_logging_step_carries_the_footprint_and_the_run_ends_with_the_table(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    reporter = Recorder()
    out = io.StringIO()
    trainer = tiny_trainer(tmp_path, reporter)  # the reporter is registered before wattlog, as W&B's is
    callback = WattlogCallback("hf-run", console=Console(file=out, width=200), **tracker_kwargs).attach(
        trainer
    )
    trainer.train()
    step_logs = [logs for logs in reporter.logs if "loss" in logs]
    assert len(step_logs) == 3  # steps 2, 4, 6
    for logs in step_logs:
        assert logs["wattlog/simulated/energy_j"] > 0  # the source label is in the key: never "measured"
        low, high = logs["wattlog/simulated/energy_j_low"], logs["wattlog/simulated/energy_j_high"]
        assert low <= logs["wattlog/simulated/energy_j"] <= high  # and its band beside it
        assert logs["wattlog/simulated/co2_kg"] == pytest.approx(
            logs["wattlog/simulated/energy_j"] / 3.6e6 * 1.2 * 0.332  # kWh x PUE x kg/kWh, Jupiter
        )
        assert logs["wattlog/simulated/water_l"] > 0
    assert step_logs[-1]["wattlog/simulated/energy_j"] > step_logs[0]["wattlog/simulated/energy_j"]
    assert any("wattlog/tokens_per_joule" in logs for logs in step_logs)
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    run = ledger.get_run("hf-run")
    assert run.status == "finished"
    kinds = [e.kind for e in ledger.events("hf-run")]
    assert "checkpoint" in kinds and "progress" in kinds
    progress = [e for e in ledger.events("hf-run") if e.kind == "progress"]
    assert progress[-1].step == 6 and progress[-1].payload["tokens_total"] == 6 * 2 * SEQ
    assert sum(t.energy_j for t in ledger.energy_totals("hf-run")) > 0
    assert callback.session.printed and "hf-run" in out.getvalue() and "OLMo 2 7B" in out.getvalue()


def test_an_exception_is_recorded_flushed_and_ends_the_run_failed(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    trainer = tiny_trainer(tmp_path, Boom())
    WattlogCallback("hf-crash", **tracker_kwargs).attach(trainer)
    with pytest.raises(RuntimeError, match="simulated crash"):
        trainer.train()
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("hf-crash").status == "failed"
    [event] = [e for e in ledger.events("hf-crash") if e.kind == "exception"]
    assert event.payload["type"] == "RuntimeError" and event.step == 3
    assert sum(t.energy_j for t in ledger.energy_totals("hf-crash")) > 0  # what was measured is kept


def test_a_resumed_trainer_continues_its_run_with_a_restart_event(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    WattlogCallback("hf-resume", **tracker_kwargs).attach(first := tiny_trainer(tmp_path, steps=4))
    first.train()
    again = tiny_trainer(tmp_path, steps=6)
    kwargs = {**tracker_kwargs, "sensors": None}  # a fresh agent; the first one's sensors are closed
    from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus

    kwargs["sensors"] = [SimulatedSensor(simulated_gpus(1))]
    WattlogCallback("hf-resume", **kwargs).attach(again)
    again.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-4"))
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    run = ledger.get_run("hf-resume")
    assert run.status == "finished" and run.restarts == 1
    assert "restart" in [e.kind for e in ledger.events("hf-resume")]


def test_without_transformers_the_import_names_the_extra() -> None:
    message = import_error_without("wattlog.integrations.hf", "transformers")
    assert message == "this wattlog integration needs transformers: pip install 'wattlog[hf]'"


def test_passed_in_callbacks_instead_of_attached_it_says_what_is_lost(
    tmp_path: Path, tracker_kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    reporter = Recorder()
    trainer = tiny_trainer(tmp_path, reporter, WattlogCallback("hf-late", **tracker_kwargs), steps=2)
    trainer.train()
    assert "was not attached" in caplog.text and ".attach(trainer)" in caplog.text
    assert not any(k.startswith("wattlog/") for logs in reporter.logs for k in logs)  # why attach() exists
