"""Exports mark invalid runs (`valid` + reasons), and a device with no sensor reads as missing, never 0."""

from __future__ import annotations

import csv
import io
import json

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.render import TableFormat, footnotes, render
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.accounting.publishing.validity import ValidityLimits, counter_check_payload
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.events import EventKind
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_800_000_000.0


def _ledger(url: str) -> Ledger:
    """Two finished runs: `whole` measured GPU and CPU; `gpu_only` had no CPU sensor and a simulated GPU."""
    ledger = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=T0))
    for name, parts in (
        ("whole", [("gpu0", Kind.GPU, Source.COUNTER), ("cpu0", Kind.CPU, Source.SAMPLED)]),
        ("gpu_only", [("gpu0", Kind.GPU, Source.SIMULATED)]),
    ):
        run = ledger.start_run(name, RunSpec(site="jupiter"))
        rows = [EnergyInterval.of("n", d, k, s, T0, T0 + 1000, 7e5, 6.9e5, 7.1e5) for d, k, s in parts]
        ledger.record_intervals(run.id, rows)
        payload = counter_check_payload("n", "gpu0", 7000.0, 7100.0, 10.0)
        ledger.record_event(run.id, EventKind.COUNTER_CHECK, payload=payload)
        ledger.end_run(run.id, end_s=T0 + 1000)
    return ledger


def test_json_and_csv_carry_valid_and_reasons_and_a_missing_cpu_is_null(tmp_path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _ledger(url).engine.dispose()
    assert main(["table", "whole", "gpu_only", "--db", url, "--format", "json"]) == 0
    rows = {r["model"].split(" ")[0]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["whole"]["valid"] is True and rows["whole"]["invalid_reasons"] == []
    assert rows["gpu_only"]["valid"] is False
    assert rows["gpu_only"]["invalid_reasons"] == ["1 simulated device(s): not a measurement"]
    assert rows["whole"]["host_j"] == 7e5 and rows["gpu_only"]["host_j"] is None  # null, never 0
    assert main(["table", "whole", "gpu_only", "--db", url, "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["valid"], r["invalid_reasons"]) for r in table] == [
        ("true", ""),
        ("false", "1 simulated device(s): not a measurement"),
    ]
    assert table[1]["host_j"] == "" and table[0]["host_j"] == "700000.0"


def test_table_19_prints_a_missing_cpu_as_a_dash_and_the_invalid_run_as_not_valid(tmp_path) -> None:
    ledger = _ledger(f"sqlite:///{tmp_path / 'l.db'}")
    gated = TableOptions(catalog=site_catalog(), validity=ValidityLimits())
    rows = [run_row(ledger, ledger.get_run(name), gated) for name in ("whole", "gpu_only")]
    text = render(rows, TableFormat.MARKDOWN, footnotes(rows))
    [gpu_only] = [line for line in text.splitlines() if line.startswith("| gpu_only")]
    assert gpu_only.startswith("| gpu_only (gpu_only, development) (NOT VALID) |")
    assert gpu_only.rstrip(" |").endswith("| -")  # CPU+DRAM energy: "-", not 0
    assert "NOT VALID: 1 simulated device(s): not a measurement" in text
    assert rows[0].validity == () and "measurement valid" in rows[0].notes
