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
from wattlog.accounting.ledger.windows import windows  # noqa: E402
from wattlog.integrations.hf import WattlogCallback  # noqa: E402
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus  # noqa: E402

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
    console = Console(file=out, width=200)
    callback = WattlogCallback("hf-run", console=console, table=True, **tracker_kwargs).attach(trainer)
    trainer.train()
    step_logs = [logs for logs in reporter.logs if "loss" in logs]
    assert len(step_logs) == 3  # steps 2, 4, 6
    for logs in step_logs:
        assert logs["wattlog/energy_j"] > 0  # one key on every machine
        low, high = logs["wattlog/energy_j_low"], logs["wattlog/energy_j_high"]
        assert low <= logs["wattlog/energy_j"] <= high  # and its band beside it
        assert logs["wattlog/co2_kg"] == pytest.approx(
            logs["wattlog/energy_j"] / 3.6e6 * 1.2 * 0.332  # kWh x PUE x kg/kWh, Jupiter
        )
        assert logs["wattlog/water_l"] > 0
    assert step_logs[0]["wattlog/energy_source"] == "simulated"  # the source beside it: never "measured"
    assert "wattlog/energy_source" not in step_logs[-1]  # a string, logged when it changes only
    assert not any(k.startswith(("wattlog/simulated", "wattlog/estimated")) for k in step_logs[0])
    assert step_logs[-1]["wattlog/energy_j"] > step_logs[0]["wattlog/energy_j"]
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


class Evaluates(TrainerCallback):
    """Measures a stretch of the run in a window, as a user's evaluation would be."""

    def __init__(self, wattlog: WattlogCallback) -> None:
        self.wattlog = wattlog

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if state.global_step == 2:
            with self.wattlog.window("eval"):
                time.sleep(0.15)


def test_passed_in_callbacks_the_reporters_get_the_footprint_as_with_attach(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    reporter, out = Recorder(), io.StringIO()  # the reporter is registered before wattlog, as report_to's are
    callback = WattlogCallback("hf-passed", console=Console(file=out, width=80), **tracker_kwargs)
    trainer = tiny_trainer(tmp_path, reporter, callback, Evaluates(callback), steps=4)
    trainer.train()
    step_logs = [logs for logs in reporter.logs if "loss" in logs]
    assert step_logs and all("wattlog/energy_j" in logs for logs in step_logs)  # missed before: 0 keys
    lines = out.getvalue().splitlines()  # quiet by default: energy, CO2 and water, ledger, table command
    assert len(lines) <= 5 and lines[0].startswith("Energy: ") and "simulated" in lines[0]
    assert "OLMo 2 7B" not in out.getvalue() and "wattlog table hf-passed" in lines[-1]
    rows = windows(Ledger(make_engine(tracker_kwargs["db"])), "hf-passed")  # one per GPU; dropped before
    assert [r.window for r in rows] == ["eval", "eval"] and all(r.energy_j > 0 for r in rows)


def test_passed_in_callbacks_an_exception_ending_train_is_recorded(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    trainer = tiny_trainer(tmp_path, Boom(), WattlogCallback("hf-passed-crash", **tracker_kwargs))
    with pytest.raises(RuntimeError, match="simulated crash"):
        trainer.train()
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("hf-passed-crash").status == "failed"  # was left "running"
    assert [e.kind for e in ledger.events("hf-passed-crash")].count("exception") == 1


def test_added_after_the_trainer_was_built_it_still_runs_before_the_reporters(
    tmp_path: Path, tracker_kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    reporter = Recorder()
    trainer = tiny_trainer(tmp_path, reporter, steps=2)
    trainer.add_callback(WattlogCallback("hf-late", **tracker_kwargs))
    trainer.train()
    assert any("wattlog/energy_j" in logs for logs in reporter.logs)
    assert "added after the Trainer was built" in caplog.text


def test_running_the_script_again_is_a_new_attempt_said_in_one_line(
    tmp_path: Path, tracker_kwargs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tiny_trainer(tmp_path, WattlogCallback("hf-twice", **tracker_kwargs), steps=2).train()
    capsys.readouterr()
    kwargs = {**tracker_kwargs, "sensors": [SimulatedSensor(simulated_gpus(1))]}
    tiny_trainer(tmp_path, WattlogCallback("hf-twice", **kwargs), steps=2).train()  # used to raise
    notices = [line for line in capsys.readouterr().err.splitlines() if line.startswith("wattlog: ")]
    assert len(notices) == 1 and "recorded as hf-twice-2" in notices[0] and "resume=True" in notices[0]
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert {r.name: r.status for r in ledger.runs()} == {"hf-twice": "finished", "hf-twice-2": "finished"}


class BarCloser(TrainerCallback):
    """Stands in for HF's ProgressCallback, whose on_train_end closes (and redraws) the progress bar."""

    def __init__(self, out: io.StringIO) -> None:
        self.out = out

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.out.write("100%|##########| bar closed\n")


def test_the_closing_lines_come_after_the_progress_bar_closes(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    out = io.StringIO()
    callback = WattlogCallback("hf-last", console=Console(file=out, width=200), **tracker_kwargs)
    tiny_trainer(tmp_path, BarCloser(out), callback, steps=2).train()
    lines = out.getvalue().splitlines()
    assert lines[0] == "100%|##########| bar closed"  # before: the figures, then the bar drawn over them
    assert lines[1].startswith("Energy: ") and lines[-1].startswith("Full table beside Table 19: ")
