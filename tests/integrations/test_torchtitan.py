"""The TorchTitan integration, driven through the seams of torchtitan 0.3's ``Trainer``.

``import torchtitan.trainer`` needs ``triton``, which does not import on this CPU-only
machine, and torchtitan is not in the project's venv. So a stand-in with the Trainer's own
attribute names runs the same control flow as torchtitan 0.3's ``Trainer.train()``:
``checkpointer.load`` -> per step ``step += 1``, ``train_step`` (which adds the batch's labels
to ``ntokens_seen`` and, every ``log_freq`` steps, calls ``metrics_processor.log``, which builds
a metrics dict and hands it to ``metrics_processor.logger.log(metrics, step)``) ->
``checkpointer.save(step, last_step=...)`` (True when it saved) -> ``close()``. Where torchtitan
imports, a further test checks the logger against its real ``LoggerContainer``.

Where torchtitan and triton are installed (not in the project's venv: triton's wheel is ~1 GB),
the last test trains TorchTitan's real ``Trainer`` on CPU (its llama3 debug model, gloo, one
process, a restart from its own checkpoint) with wattlog attached: torchtitan_cpu.py says which
four gaps of TorchTitan 0.3 on a CPU-only torch it patches to get there. About 40 s.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.integration.servers import free_port
from tests.integrations.conftest import wait_for_energy
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import rank_progress

pytest.importorskip("torch")
from wattlog.integrations.torchtitan import WattlogLogger, attach  # noqa: E402

TOKENS = 256  # labels per batch (batch 2 x sequence 128)
LOG_FREQ = 2
FLOPS_PER_TOKEN = 6.0e6  # what TorchTitan's MetricsProcessor counts for its model


class Recorded:
    """TorchTitan's logger on the metrics rank (TensorBoard/W&B): keeps what it was given."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, dict[str, Any]]] = []
        self.closed = False

    def log(self, metrics: dict[str, Any], step: int) -> None:
        self.logged.append((step, dict(metrics)))

    def close(self) -> None:
        self.closed = True


class MetricsProcessor:
    """torchtitan.components.metrics.MetricsProcessor's log path (loss and tps only)."""

    def __init__(self) -> None:
        self.logger: Any = Recorded()
        self.ntokens_since_last_log = 0
        self.num_flops_per_token = int(FLOPS_PER_TOKEN)

    def should_log(self, step: int) -> bool:
        return step == 1 or step % LOG_FREQ == 0

    def log(self, step: int, global_avg_loss: float, global_max_loss: float, grad_norm: float) -> None:
        metrics = {"loss_metrics/global_avg_loss": global_avg_loss, "throughput(tps)": 1000.0}
        self.logger.log(metrics, step)
        self.ntokens_since_last_log = 0

    def close(self) -> None:
        self.logger.close()


class Checkpointer:
    """CheckpointManager's public face: save() says whether it saved; load() restores the step."""

    def __init__(self, every: int, restore: tuple[int, int] | None = None) -> None:
        self.every, self.restore = every, restore
        self.trainer: Any = None

    def load(self, step: int = -1) -> bool:
        if self.restore is None:
            return False
        self.trainer.step, self.trainer.ntokens_seen = self.restore
        return True

    def save(self, curr_step: int, last_step: bool = False) -> bool:
        return curr_step % self.every == 0 or last_step

    def close(self) -> None:
        pass


class Trainer:
    """torchtitan.trainer.Trainer's train loop over its real attribute names."""

    def __init__(self, steps: int, checkpointer: Checkpointer, crash_at: int | None = None) -> None:
        self.steps, self.crash_at = steps, crash_at
        self.step = 0
        self.ntokens_seen = 0
        self.metrics_processor = MetricsProcessor()
        self.checkpointer = checkpointer
        checkpointer.trainer = self
        self.session: Any = None  # the tracker session attach() returned

    def train_step(self, data_iterator: Any) -> None:
        next(data_iterator)
        if self.step == 1 and self.session is not None:  # warm-up: long enough for a counter update
            wait_for_energy(self.session)
        self.ntokens_seen += TOKENS
        self.metrics_processor.ntokens_since_last_log += TOKENS
        if self.step == self.crash_at:
            raise RuntimeError("Loss is not finite (global_avg_loss=nan) at step 3. Stopping training.")
        if self.metrics_processor.should_log(self.step):
            self.metrics_processor.log(self.step, 4.0 - 0.1 * self.step, 4.2, 1.0)

    def train(self) -> None:
        self.checkpointer.load(step=-1)
        data = iter(range(10**6))
        while self.step < self.steps:
            self.step += 1
            self.train_step(data)
            self.checkpointer.save(self.step, last_step=(self.step == self.steps))

    def close(self) -> None:
        self.checkpointer.close()
        self.metrics_processor.close()


@pytest.fixture
def tracker_kwargs(tracker_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The shared keywords, with an agent that closes at once (no scraper waits for its last counters)."""
    return {**tracker_kwargs, "agent_config": replace(tracker_kwargs["agent_config"], linger_s=0.0)}


def _run(trainer: Trainer, run: str, kwargs: dict[str, Any]) -> Recorded:
    recorded = trainer.metrics_processor.logger
    trainer.session = attach(trainer, run=run, tracker_kwargs=kwargs)
    try:
        trainer.train()
    finally:
        trainer.close()
    return recorded


def test_the_trainers_loggers_get_the_footprint_and_steps_checkpoints_reach_the_ledger(
    tracker_kwargs: dict[str, Any],
) -> None:
    recorded = _run(Trainer(steps=4, checkpointer=Checkpointer(every=2)), "titan", tracker_kwargs)
    assert [step for step, _ in recorded.logged] == [1, 2, 4] and recorded.closed
    # the first step (warm-up, compilation) is measured: its log line has the figures too
    assert "wattlog/energy_j" in recorded.logged[0][1], sorted(recorded.logged[0][1])
    last = recorded.logged[-1][1]
    assert last["loss_metrics/global_avg_loss"] == pytest.approx(3.6)  # TorchTitan's own keys stay
    for key in ("wattlog/energy_j", "wattlog/co2_kg", "wattlog/water_l"):
        assert key in last, sorted(last)
    print({k: v for k, v in last.items() if k.startswith("wattlog/")})  # the logged energy keys (-s)
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("titan").status == "finished"
    events = ledger.events("titan")
    progress = [e for e in events if e.kind == "progress"]
    assert progress[-1].step == 4 and progress[-1].payload["tokens_total"] == 4 * TOKENS
    assert [e.step for e in events if e.kind == "checkpoint"] == [2, 4]
    assert sum(t.energy_j for t in ledger.energy_totals("titan")) > 0
    # the model's FLOPs per token reach the ledger: the table gives J per 10^18 FLOP
    assert [r.flops_per_token for r in rank_progress(ledger, "titan")] == [FLOPS_PER_TOKEN]


def test_a_restored_job_continues_its_run_and_counts_only_this_attempts_tokens(
    tracker_kwargs: dict[str, Any],
) -> None:
    _run(Trainer(steps=2, checkpointer=Checkpointer(every=2)), "titan-resumed", tracker_kwargs)
    restored = Checkpointer(every=2, restore=(2, 2 * TOKENS))
    _run(Trainer(steps=4, checkpointer=restored), "titan-resumed", tracker_kwargs)
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    events = ledger.events("titan-resumed")
    assert [e.kind for e in events].count("restart") == 1
    progress = [e for e in events if e.kind == "progress"]
    # the second attempt reports its own 2 steps' tokens, not the 2 restored with the checkpoint again
    assert progress[-1].step == 4 and progress[-1].payload["tokens_total"] == 2 * TOKENS


def test_a_crash_ends_the_run_failed_and_reaches_the_caller(tracker_kwargs: dict[str, Any]) -> None:
    with pytest.raises(RuntimeError, match="Loss is not finite"):
        _run(Trainer(steps=4, checkpointer=Checkpointer(every=2), crash_at=3), "titan-crash", tracker_kwargs)
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("titan-crash").status == "failed"
    assert [e.payload["type"] for e in ledger.events("titan-crash") if e.kind == "exception"] == [
        "RuntimeError"
    ]


def test_with_torchtitan_the_logger_sits_in_front_of_its_logger_container() -> None:
    metrics = pytest.importorskip("torchtitan.components.metrics")  # needs torchtitan (and triton)
    container = metrics.LoggerContainer()
    inner = Recorded()
    container.add_logger(inner)

    class Session:
        active = False

        def figures(self) -> dict[str, float]:
            return {"wattlog/energy_j": 1.0}

        def new_source(self) -> str | None:
            return None

    WattlogLogger(container, Session()).log({"tflops": 1.0}, 10)  # type: ignore[arg-type]
    assert inner.logged == [(10, {"tflops": 1.0, "wattlog/energy_j": 1.0})]


needs_torchtitan = pytest.mark.skipif(
    importlib.util.find_spec("torchtitan") is None or importlib.util.find_spec("triton") is None,
    reason="needs torchtitan>=0.3 and triton (pip install 'wattlog[torchtitan]' triton)",
)
SCRIPT = Path(__file__).with_name("torchtitan_cpu.py")


def _attempts(command: list[str], prefix: str) -> list[Any]:
    """Run torchtitan_cpu.py; the attempts its process `prefix` printed."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith(prefix + " "))
    return list(json.loads(line.removeprefix(prefix + " ")))


@needs_torchtitan
def test_a_real_torchtitan_trainer_on_cpu_logs_the_footprint_and_restarts_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    first, second = _attempts([sys.executable, str(SCRIPT), str(tmp_path)], "ATTEMPTS")
    assert [step for step, _ in first] == [1, 2] and [step for step, _ in second] == [3]
    for step, metrics in (*first, *second):
        assert "loss_metrics/global_avg_loss" in metrics  # TorchTitan's own keys stay
        for key in ("wattlog/energy_j", "wattlog/co2_kg", "wattlog/water_l"):
            assert metrics[key] > 0, (step, sorted(metrics))
    assert first[1][1]["wattlog/tokens_per_joule"] > 0
    print({k: v for k, v in first[1][1].items() if k.startswith("wattlog/")})  # the logged keys (-s)
    # TorchTitan's own TensorBoard logger (behind ours in its LoggerContainer) wrote them too
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    for folder in sorted((tmp_path / "out" / "tb").iterdir()):
        events_read = EventAccumulator(str(folder))
        events_read.Reload()
        assert "wattlog/energy_j" in events_read.Tags()["scalars"], folder
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))
    assert ledger.get_run("titan-real").status == "finished"
    events = ledger.events("titan-real")
    assert [e.kind for e in events].count("restart") == 1
    assert [e.step for e in events if e.kind == "checkpoint"] == [2, 3]
    progress = [e for e in events if e.kind == "progress"]
    tokens = second[0][1]["n_tokens_seen"] - first[1][1]["n_tokens_seen"]  # this attempt's only
    assert progress[-1].step == 3 and progress[-1].payload["tokens_total"] == tokens
    flops = [r.flops_per_token for r in rank_progress(ledger, "titan-real")]
    assert len(flops) == 1 and flops[0] is not None and flops[0] > 0
    assert sum(t.energy_j for t in ledger.energy_totals("titan-real")) > 0


@needs_torchtitan
def test_two_real_torchtitan_ranks_on_cpu_both_report_and_one_agent_measures(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    command = [*run, "--master_port", str(free_port())]
    done = subprocess.run([*command, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    logged = {
        line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1])[0]
        for line in done.stdout.splitlines()
        if line.startswith("ATTEMPTS-")
    }
    assert [step for step, _ in logged["ATTEMPTS-0"]] == [1, 2] and logged["ATTEMPTS-1"] == []  # rank 0 logs
    assert logged["ATTEMPTS-0"][-1][1]["wattlog/energy_j"] > 0
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))
    assert ledger.get_run("titan-real").status == "finished"
    ranks = rank_progress(ledger, "titan-real")
    assert [(r.rank, r.local_rank, r.step) for r in ranks] == [(0, 0, 2), (1, 1, 2)]
    assert all(r.tokens_total == 2 * 2 * 64 for r in ranks)  # each rank its own batches (2 x 64 tokens)
    assert sum(t.energy_j for t in ledger.energy_totals("titan-real")) > 0
