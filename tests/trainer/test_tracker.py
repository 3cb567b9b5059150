"""The Tracker with simulated GPUs and a SQLite ledger: zero syncs, energy, events, resume, bad input."""

from __future__ import annotations

import dataclasses
import logging
import math
import socket
import threading
import time
import urllib.request
from typing import Any

import pytest
import torch

from tests.trainer.conftest import NoSyncTensor, SyncError, no_sync
from tests.waiting import wait_until
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.windows import windows
from wattlog.accounting.publishing.split import Use, energy_split
from wattlog.errors import ConfigError, LedgerError
from wattlog.trainer.callback import Callback, CallbackContext
from wattlog.trainer.callbacks import SpeedCallback, SpeedFigures, StabilityCallback
from wattlog.trainer.detectors import Detection
from wattlog.trainer.example import GPT, ByteTokenizer, GPTConfig, batches, generate_corpus
from wattlog.trainer.session import SessionConfig
from wattlog.trainer.tracker import Tracker, TrackerConfig


def _train(tracker: Tracker, model: GPT, steps: int, *, wrap: Any = no_sync) -> None:
    data = batches(ByteTokenizer().encode(generate_corpus(200)), 4, model.config.context)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        x, y = next(data)
        _, loss = model(x, y)
        assert loss is not None
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        tracker.step(
            loss=wrap(loss),
            tokens=wrap(torch.tensor(x.numel())),
            grad_norm=wrap(grad_norm),
            loss_scale=wrap(1.0),
        )


def _small_gpt() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(layers=1, d_model=32, heads=2, context=16))


def test_training_loop_under_the_tracker_never_converts_a_step_metric_outside_the_flush(
    db_url: str, sim: dict[str, Any]
) -> None:
    NoSyncTensor.conversions.clear()
    model = _small_gpt()
    with Tracker("nosync", db=db_url, log_every=5, watch=model.final_layer, **sim) as tracker:
        probe = no_sync(1.0)
        with pytest.raises(SyncError):
            bool(probe)
        _train(tracker, model, 23)
        tracker.drain()
        assert tracker.latest is not None and tracker.latest.step == 23
        assert tracker.latest.values["tokens"] == 64 and math.isfinite(tracker.latest.values["loss"])
    assert tracker.status == "finished"
    assert tracker._bookkeeping.failed == 0  # the thread converted plain host copies only
    assert "item" not in NoSyncTensor.conversions and "__float__" not in NoSyncTensor.conversions


def test_run_energy_events_and_metrics_reach_the_ledger_and_prometheus(
    db_url: str, sim: dict[str, Any]
) -> None:
    events: list[Detection] = []
    model = _small_gpt()
    with Tracker(
        "run-a",
        site="jupiter",
        model="gpt",
        db=db_url,
        on_event=[events.append],
        progress_every_s=0.01,
        **sim,
    ) as tracker:
        _train(tracker, model, 30, wrap=lambda v: v)
        # The simulated counter updates every 100 ms and each ledger row holds the energy up to its
        # last update: 30 quick steps can fit between two updates and leave the training's rows 0 J.
        # A last step 0.35 s on makes the training span several updates.
        time.sleep(0.35)
        tracker.step(loss=float("nan"), tokens=64)
        tracker.drain()
        wait_until(tracker.energy_j, 5.0, "no energy measured", 0.05)
        assert tracker.energy_j() is not None and tracker.energy_j() > 0  # type: ignore[operator]
        assert tracker.metrics_url is not None
        body = urllib.request.urlopen(tracker.metrics_url, timeout=5).read().decode()
        host = f'host="{socket.gethostname()}"'
        assert f'wattlog_train_tokens_total{{{host},rank="0",run="run-a"}} 1984.0' in body
        assert f'wattlog_train_events_total{{{host},kind="non_finite",rank="0",run="run-a"}} 1.0' in body
        # every kind from the start, so increase() sees the first event of each
        assert f'wattlog_train_events_total{{{host},kind="loss_spike",rank="0",run="run-a"}} 0.0' in body
        assert "wattlog_energy_joules_total{device=" in body and 'run="run-a"' in body
        assert "wattlog_energy_joules_total" in body
        measured = sum(d.energy_j for d in tracker.snapshot())
    ledger = Ledger(make_engine(db_url))
    run = ledger.get_run("run-a")
    assert run.status == "finished" and run.site == "jupiter" and run.model == "gpt"
    stored = sum(t.energy_j for t in ledger.energy_totals("run-a"))
    assert stored == pytest.approx(sum(d.energy_j for d in tracker.snapshot()))
    assert stored >= measured
    kinds = [e.kind for e in ledger.events("run-a")]
    assert "non_finite" in kinds and "progress" in kinds
    assert [e.kind for e in events] == ["non_finite"]
    split = energy_split(ledger, "run-a")
    assert split.source == "simulated"
    assert split.total_j == pytest.approx(stored)
    assert split.joules[Use.PRODUCTIVE] > 0 and split.joules[Use.LOST_WORK] == 0


def test_failed_body_marks_the_run_failed_and_keeps_what_was_recorded(
    db_url: str, sim: dict[str, Any]
) -> None:
    with pytest.raises(RuntimeError), Tracker("boom", db=db_url, log_every=2, **sim) as tracker:
        for i in range(5):
            tracker.step(loss=torch.tensor(1.0 + i), tokens=10)
            time.sleep(0.03)
        raise RuntimeError("out of memory")
    ledger = Ledger(make_engine(db_url))
    assert ledger.get_run("boom").status == "failed"
    assert [e.step for e in ledger.events("boom") if e.kind == "progress"][-1] == 5
    assert sum(t.energy_j for t in ledger.energy_totals("boom")) > 0


def test_resume_continues_the_run_and_accounts_redone_steps_as_lost_work(
    db_url: str, sim: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RuntimeError), Tracker("long", db=db_url, log_every=5, **sim) as first:
        for step in range(1, 41):
            first.step(loss=torch.tensor(2.0), tokens=100)
            if step == 20:
                first.checkpoint()
            time.sleep(0.005)
        raise RuntimeError("node failure")
    first_id = first.run_id
    monkeypatch.setenv("WATTLOG_RESUME", "1")
    seen: list[Detection] = []
    sim["sensors"][0].gpus[0].true_power_w(0.0)  # the same simulated GPUs keep running
    with Tracker("long", db=db_url, log_every=5, on_event=[seen.append], **sim) as second:
        assert second.run_id == first_id and second.current_step == 20
        assert second.lost is not None and second.lost.steps_redone == 20
        for _ in range(25):
            second.step(loss=torch.tensor(1.5), tokens=100)
    ledger = Ledger(make_engine(db_url))
    run = ledger.get_run("long")
    assert run.status == "finished" and run.restarts == 1
    lost = [e for e in ledger.events("long") if e.kind == "lost_work"]
    assert len(lost) == 1 and lost[0].payload["steps_redone"] == 20 and lost[0].payload["energy_j"] > 0
    assert [d.kind for d in seen] == ["restart"]
    split = energy_split(ledger, "long")
    assert split.joules[Use.LOST_WORK] == pytest.approx(lost[0].payload["energy_j"], rel=1e-6)
    assert split.joules[Use.PRODUCTIVE] > 0


def test_a_checkpoint_is_counted_for_prometheus_from_zero(db_url: str, sim: dict[str, Any]) -> None:
    # the dashboards' checkpoint annotation is increase() of this counter: it must start at 0
    series = (
        f'wattlog_train_events_total{{host="{socket.gethostname()}",kind="checkpoint",rank="0",run="ckpt"}}'
    )
    with Tracker("ckpt", db=db_url, **sim) as tracker:
        assert tracker.metrics_url is not None
        before = urllib.request.urlopen(tracker.metrics_url, timeout=5).read().decode()
        tracker.step(loss=torch.tensor(2.0), tokens=10)
        tracker.checkpoint()
        after = urllib.request.urlopen(tracker.metrics_url, timeout=5).read().decode()
    assert f"{series} 0.0" in before and f"{series} 1.0" in after


def test_the_same_name_again_is_a_new_attempt_named_in_one_line(
    db_url: str, sim: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    with Tracker("twice", db=db_url, **sim):
        pass
    capsys.readouterr()
    for expected in ("twice-2", "twice-3"):  # used to raise LedgerError: the name exists
        with Tracker("twice", db=db_url, **sim) as again:
            again.step(tokens=10)
        assert again.run == expected
        [line] = capsys.readouterr().err.splitlines()
        assert f"recorded as {expected}" in line and "resume=True" in line
    runs = {r.name: r for r in Ledger(make_engine(db_url)).runs()}
    assert set(runs) == {"twice", "twice-2", "twice-3"}
    assert (runs["twice"].restarts, runs["twice-2"].status) == (0, "finished")


def test_the_new_attempt_is_the_label_of_its_training_series(db_url: str, sim: dict[str, Any]) -> None:
    with Tracker("label", db=db_url, **sim):
        pass
    with Tracker("label", db=db_url, **sim) as again:
        assert again.metrics_url is not None
        text = urllib.request.urlopen(again.metrics_url, timeout=5).read().decode()
    assert 'run="label-2"' in text and 'run="label"' not in text


def test_a_window_of_a_tracker_run_reaches_the_ledger(db_url: str, sim: dict[str, Any]) -> None:
    with Tracker("win", db=db_url, **sim) as t:
        assert t.agent is not None
        with t.agent.window("eval") as w:
            time.sleep(0.15)
    rows = windows(Ledger(make_engine(db_url)), "win")  # one per simulated GPU
    assert [r.window for r in rows] == ["eval", "eval"]
    assert sum(r.energy_j for r in rows) == pytest.approx(w.energy_j)


def test_unknown_site_and_bad_names_are_config_errors(db_url: str) -> None:
    with pytest.raises(ConfigError, match="unknown site 'atlantis'"):
        Tracker("x", site="atlantis", db=db_url).start()
    with pytest.raises(ConfigError, match="run name"):
        Tracker("", environ={})
    with pytest.raises(ConfigError, match="200"):
        Tracker("x", model="m" * 201)


def test_ledger_that_cannot_be_opened_is_one_ledger_error(tmp_path: Any) -> None:
    with pytest.raises(LedgerError, match="does not exist"):
        Tracker("x", db=f"sqlite:///{tmp_path}/missing/dir/l.db").start()


def test_bad_step_values_warn_once_and_never_raise(
    db_url: str, sim: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="wattlog.trainer.tracker")
    with Tracker("bad", db=db_url, log_every=2, **sim) as tracker:
        tracker.step(loss="1.0", tokens=10)
        tracker.step(loss=torch.ones(3), tokens=10)
        tracker.step(loss=math.inf, tokens=[1, 2])
        tracker.step(loss=math.inf, tokens=True)
        tracker.step(loss=torch.tensor(2.0), tokens=10, step="not a step")  # type: ignore[arg-type]
        tracker.step(loss=torch.tensor(2.0), tokens=10)
        tracker.drain()
        assert tracker.latest is not None and tracker.latest.values == {"loss": 2.0, "tokens": 10.0}
    lines = [r.getMessage() for r in caplog.records if r.name == "wattlog.trainer.tracker"]
    assert any("got a str" in line for line in lines)
    assert any("one-element real tensor" in line for line in lines)
    assert sum("inf" in line and "not finite" in line for line in lines) == 1
    assert any("skipped a step" in line for line in lines)
    assert tracker.status == "finished"
    assert "non_finite" in [e.kind for e in Ledger(make_engine(db_url)).events("bad")]


def test_step_outside_the_block_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="wattlog.trainer.tracker")
    Tracker("idle").step(loss=1.0)
    assert "outside" in caplog.text


def test_health_check_before_training_is_recorded(db_url: str, sim: dict[str, Any]) -> None:
    with Tracker("hc", db=db_url, health_check=True, **sim) as tracker:
        assert tracker.health is not None and tracker.health.ok
    events = Ledger(make_engine(db_url)).events("hc")
    assert [e.kind for e in events if e.category == "health_check"] == ["health_check"]


def test_custom_stability_callback_replaces_the_default(db_url: str, sim: dict[str, Any]) -> None:
    mine = StabilityCallback(detectors={})
    tracker = Tracker("cb", db=db_url, callbacks=[mine], **sim)
    assert [c for c in tracker.callbacks if isinstance(c, StabilityCallback)] == [mine]
    assert tracker.state_dict()["step"] == 0


def test_malformed_rank_variable_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"\$RANK must be an integer"):
        Tracker("x", environ={"RANK": "zero"})


def test_tracker_records_stage_group_device_and_figures(db_url: str, sim: dict[str, Any]) -> None:
    with Tracker(
        "sft-run", db=db_url, role="ablation", stage="sft", scale_group="7B", device_model="H100",
        gpu_hours=3.5, requests=None, **sim,
    ) as tracker:  # fmt: skip
        _train(tracker, _small_gpt(), 2)
    run = Ledger(make_engine(db_url)).get_run("sft-run")
    assert (run.stage, run.scale_group, run.device_model, run.gpu_hours) == ("sft", "7B", "H100", 3.5)
    assert run.phase == ""  # from the role at table time: development


def test_tracker_with_an_unknown_stage_fails_before_training(db_url: str, sim: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="unknown stage 'finetune'"):
        Tracker("bad-stage", db=db_url, stage="finetune", **sim).start()


def _config_fields(callback: Any) -> dict[str, Any]:
    """A callback's public fields (its config), with lists copied."""
    return {
        f.name: list(v) if isinstance(v := getattr(callback, f.name), list) else v
        for f in dataclasses.fields(callback)
        if not f.name.startswith("_")
    }


def test_callbacks_given_are_never_changed_and_report_through_the_context(
    db_url: str, sim: dict[str, Any]
) -> None:
    figures: list[SpeedFigures] = []
    found: list[Detection] = []
    speed = SpeedCallback(on_figures=[figures.append])
    stability = StabilityCallback(on_detection=[found.append])
    before = (_config_fields(speed), _config_fields(stability))
    lists = (speed.on_figures, stability.on_detection)
    model = _small_gpt()
    with Tracker(
        "cb-given", db=db_url, log_every=2, callbacks=[speed, stability], watch=model.final_layer, **sim
    ) as tracker:
        _train(tracker, model, 6, wrap=lambda v: v)
        tracker.step(loss=float("nan"), tokens=64)
        tracker.drain()
        assert tracker.speed is speed.latest is not None
        body = urllib.request.urlopen(tracker.metrics_url, timeout=5).read().decode()  # type: ignore[arg-type]
    assert (_config_fields(speed), _config_fields(stability)) == before
    assert speed.on_figures is lists[0] and stability.on_detection is lists[1]
    assert speed.energy_j is None  # the tracker's energy reaches it through the context, not a field
    assert figures and [d.kind for d in found] == ["non_finite"]
    host = f'host="{socket.gethostname()}"'
    assert f'wattlog_train_events_total{{{host},kind="non_finite",rank="0",run="cb-given"}} 1.0' in body
    assert f'wattlog_train_tokens_per_second{{{host},rank="0",run="cb-given"}}' in body  # via the context
    assert "non_finite" in [e.kind for e in Ledger(make_engine(db_url)).events("cb-given")]


def test_callbacks_get_a_narrow_context_not_the_tracker(db_url: str, sim: dict[str, Any]) -> None:
    seen: list[Any] = []

    @dataclasses.dataclass
    class Probe(Callback):
        def pre_train(self, context: CallbackContext) -> None:
            seen.append(context)
            context.add_metric("probe", 1.0)

    with Tracker("ctx", db=db_url, log_every=1, callbacks=[Probe()], **sim) as tracker:
        tracker.step(loss=1.0)
        tracker.drain()
        assert tracker.latest is not None and tracker.latest.values["probe"] == 1.0
    (context,) = seen
    assert isinstance(context, CallbackContext) and not isinstance(context, Tracker)
    assert context.run == "ctx" and context.rank == 0 and context.clock is tracker.clock
    assert context.energy_j() is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.run = "other"  # type: ignore[misc]


def test_tracker_config_is_one_validated_dataclass(db_url: str, sim: dict[str, Any]) -> None:
    session = SessionConfig("from-config", db=db_url, agent_config=sim["agent_config"])
    config = TrackerConfig(session, log_every=3)
    tracker = Tracker.from_config(config, sensors=sim["sensors"])
    assert tracker.settings is config and tracker.run == "from-config"
    with tracker:
        tracker.step(loss=1.0)
    assert tracker.status == "finished"
    assert Tracker("kw", log_every=4, environ={}).settings.log_every == 4
    for bad in ({"log_every": 0}, {"gc_every": 0}, {"progress_every_s": math.inf}, {"peak_flops": -1.0}):
        with pytest.raises(ConfigError):
            TrackerConfig(SessionConfig("x"), **bad)


def test_the_constructor_takes_the_config_object_and_refuses_it_mixed_with_keywords(
    db_url: str, sim: dict[str, Any]
) -> None:
    config = TrackerConfig(SessionConfig("cfg", db=db_url, agent_config=sim["agent_config"]), log_every=2)
    tracker = Tracker("cfg", config=config, sensors=sim["sensors"])
    assert tracker.settings is config and tracker.run == "cfg" and tracker.ledger is None
    with tracker:
        tracker.step(loss=1.0)
    assert tracker.status == "finished" and tracker.run_id is not None
    with pytest.raises(ConfigError, match="log_every"):
        Tracker(config=config, log_every=5)
    with pytest.raises(ConfigError, match="run"):
        Tracker("other", config=config)
    # the short form: a mapping given as config is the run's free-form configuration
    assert Tracker("kw", config={"lr": 0.1}, environ={}).settings.session.config == {"lr": 0.1}


def test_a_stuck_bookkeeping_thread_does_not_hang_close_and_is_reported(
    db_url: str, sim: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    picked, gate = threading.Event(), threading.Event()

    class Stuck(Callback):
        def log_metrics(self, records: Any) -> None:
            if not picked.is_set():
                picked.set()
                gate.wait()

    tracker = Tracker("stuck", db=db_url, log_every=1, stop_timeout_s=0.3, callbacks=[Stuck()], **sim)
    try:
        with caplog.at_level("WARNING"), tracker:
            tracker.step(loss=1.0)
            assert picked.wait(10.0)
            started_s = time.monotonic()
        assert time.monotonic() - started_s < 5.0
        assert tracker.stuck_threads == ["wattlog-bookkeeping"] and tracker.status == "finished"
        assert "wattlog-bookkeeping did not stop" in caplog.text
    finally:
        gate.set()
