"""`wattlog node`: what it prints names each device's source and band, and a loss exits non-zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.cli import main
from wattlog.errors import LedgerError
from wattlog.telemetry.sinks import INCOMPLETE_EXIT


def node_args(tmp_path: Path) -> list[str]:
    return [
        "node", "--run", "job", "--db", f"sqlite:///{tmp_path / 'l.db'}", "--host", "n1", "--port", "-1",
        "--seconds", "0.4", "--flush-s", "0.1", "--simulate", "1", "--linger-s", "0",
        "--lock-dir", str(tmp_path / "locks"),
    ]  # fmt: skip


def test_the_end_names_each_devices_source_and_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(node_args(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "simulated" in out and "band" in out


def test_rows_the_ledger_did_not_take_exit_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WATTLOG_SPOOL_DIR", str(tmp_path / "spool"))

    def down(*args: object, **kwargs: object) -> int:
        raise LedgerError("ledger down (test)")

    monkeypatch.setattr("wattlog.accounting.ledger.store.Ledger.record_intervals", down)
    assert main(node_args(tmp_path)) == INCOMPLETE_EXIT
    assert "incomplete" in capsys.readouterr().err
