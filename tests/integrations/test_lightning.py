"""The Lightning callback on a CPU: a tiny language model built in code trains a few steps."""

from __future__ import annotations

import io
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from rich.console import Console

pytest.importorskip("lightning", reason="pip install 'wattlog[lightning]'")

import lightning.pytorch as pl  # noqa: E402
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402

from tests.integrations.conftest import import_error_without  # noqa: E402
from wattlog.accounting.ledger import Ledger, make_engine  # noqa: E402
from wattlog.accounting.ledger.windows import windows  # noqa: E402
from wattlog.integrations.lightning import WattlogCallback, tokens_in  # noqa: E402

SEQ, VOCAB, BATCH = 16, 64, 4


class TinyLM(pl.LightningModule):
    def __init__(self, crash_at: int | None = None, wattlog: WattlogCallback | None = None) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 32)
        self.head = torch.nn.Linear(32, VOCAB)
        self.crash_at = crash_at
        self.wattlog = wattlog

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        if self.crash_at is not None and batch_idx == self.crash_at:
            raise RuntimeError("simulated crash")
        if self.wattlog is not None and batch_idx == 2:  # a stretch measured as a user's evaluation would be
            with self.wattlog.window("eval"):
                time.sleep(0.15)
        time.sleep(0.06)  # each step outlasts the simulated energy counter's 100 ms updates now and then
        logits = self.head(self.embed(batch[:, :-1]))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader() -> torch.utils.data.DataLoader:
    torch.manual_seed(0)
    return torch.utils.data.DataLoader(torch.randint(0, VOCAB, (64, SEQ)), batch_size=BATCH)


def trainer(tmp_path: Path, callback: WattlogCallback, steps: int = 6) -> pl.Trainer:
    return pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=steps,
        log_every_n_steps=2,
        logger=CSVLogger(tmp_path / "logs", name="tiny"),
        callbacks=[callback],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
    )


def test_the_loggers_receive_the_footprint_and_the_run_ends_with_the_table(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    out = io.StringIO()
    callback = WattlogCallback("pl-run", console=Console(file=out, width=200), **tracker_kwargs)
    fit = trainer(tmp_path, callback)
    fit.fit(TinyLM(wattlog=callback), loader())
    [metrics_csv] = (tmp_path / "logs").rglob("metrics.csv")
    header, *rows = metrics_csv.read_text().splitlines()
    columns = header.split(",")
    for key in ("wattlog/energy_j", "wattlog/co2_kg", "wattlog/water_l"):
        assert key in columns, columns
    energy = [float(r.split(",")[columns.index("wattlog/energy_j")] or 0) for r in rows]
    assert energy[-1] > 0 and energy == sorted(energy)  # cumulative, what any logger (W&B, MLflow) gets
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("pl-run").status == "finished"
    progress = [e for e in ledger.events("pl-run") if e.kind == "progress"]
    assert progress[-1].step == 6 and progress[-1].payload["tokens_total"] == 6 * BATCH * SEQ
    assert sum(t.energy_j for t in ledger.energy_totals("pl-run")) > 0
    assert callback.session.printed and "pl-run" in out.getvalue()
    lines = out.getvalue().splitlines()  # quiet by default: energy, CO2 and water, ledger, table command
    assert len(lines) <= 5 and "OLMo 2 7B" not in out.getvalue()
    [hparams] = (tmp_path / "logs").rglob("hparams.yaml")  # the source, beside the stable keys
    assert "wattlog/energy_source: simulated" in hparams.read_text()
    rows = windows(ledger, "pl-run")  # one per simulated GPU; never reached the ledger before
    assert [r.window for r in rows] == ["eval", "eval"] and all(r.energy_j > 0 for r in rows)


def test_an_exception_is_recorded_flushed_and_ends_the_run_failed(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    with pytest.raises(RuntimeError, match="simulated crash"):
        trainer(tmp_path, WattlogCallback("pl-crash", **tracker_kwargs)).fit(TinyLM(crash_at=3), loader())
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert ledger.get_run("pl-crash").status == "failed"
    [event] = [e for e in ledger.events("pl-crash") if e.kind == "exception"]
    assert event.payload["type"] == "RuntimeError" and event.step == 3


def test_tokens_are_counted_from_the_batch() -> None:
    assert tokens_in(torch.zeros(4, 16)) == 64
    assert tokens_in({"attention_mask": torch.zeros(2, 3), "input_ids": torch.zeros(4, 16)}) == 64
    assert tokens_in((torch.zeros(2, 8), torch.zeros(2))) == 16
    assert tokens_in("text") is None


def test_without_lightning_the_import_names_the_extra() -> None:
    message = import_error_without("wattlog.integrations.lightning", "lightning")
    assert message == "this wattlog integration needs lightning.pytorch: pip install 'wattlog[lightning]'"


def test_without_a_logger_nothing_is_logged_and_lightning_does_not_warn_per_key(
    tmp_path: Path, tracker_kwargs: dict[str, Any]
) -> None:
    out = io.StringIO()
    callback = WattlogCallback("pl-nolog", console=Console(file=out, width=200), **tracker_kwargs)
    fit = pl.Trainer(
        accelerator="cpu",
        max_steps=2,
        logger=False,
        callbacks=[callback],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit.fit(TinyLM(), loader())
    # before: "You called `self.log('wattlog/energy_j', ...)` but have no logger configured", once per key
    assert not [w for w in caught if "no logger configured" in str(w.message)]
    assert out.getvalue().startswith("Energy: ")


def test_fitting_again_under_the_same_name_is_a_new_attempt_said_in_one_line(
    tmp_path: Path, tracker_kwargs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    quiet = {**tracker_kwargs, "quiet": True}
    trainer(tmp_path, WattlogCallback("pl-twice", **quiet), steps=2).fit(TinyLM(), loader())
    capsys.readouterr()
    trainer(tmp_path, WattlogCallback("pl-twice", **quiet), steps=2).fit(TinyLM(), loader())  # used to raise
    notices = [line for line in capsys.readouterr().err.splitlines() if line.startswith("wattlog: ")]
    assert len(notices) == 1 and "recorded as pl-twice-2" in notices[0] and "resume=True" in notices[0]
    ledger = Ledger(make_engine(tracker_kwargs["db"]))
    assert {r.name: r.status for r in ledger.runs()} == {"pl-twice": "finished", "pl-twice-2": "finished"}


@pytest.mark.parametrize("bar", [RichProgressBar, TQDMProgressBar])  # rich: Lightning's default beside rich
def test_the_closing_lines_come_after_the_finished_progress_bar(
    bar: type[pl.Callback], tmp_path: Path, tracker_kwargs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The bar, finished after wattlog's callback, was redrawn under its closing lines: now they end it."""
    callback = WattlogCallback("pl-bar", console=Console(file=sys.stdout, width=200), **tracker_kwargs)
    fit = pl.Trainer(
        accelerator="cpu",
        max_steps=3,
        logger=False,
        callbacks=[callback, bar()],
        enable_progress_bar=True,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
    )
    fit.fit(TinyLM(), loader())
    out = capsys.readouterr().out
    assert callback.session.printed and "Epoch 0" in out
    ending = out.index("Energy: ")
    assert "Epoch 0" not in out[ending:], out[ending - 200 :]  # the bar finished, then the figures
    assert out[out.rindex("Epoch 0") : ending].count("3/") >= 1  # the bar's last state is drawn before them
