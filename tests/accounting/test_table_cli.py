"""`wattlog table` through the real CLI entry point, on a real SQLite ledger."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Kind, Source

MWH_J = 3.6e9
H0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def hour_row(device: str, kind: Kind, source: Source, hour: int, mwh: float, band: float) -> EnergyInterval:
    start = H0 + 3600 * hour
    return EnergyInterval.of(
        "node0",
        device,
        kind,
        source,
        start,
        start + 3600,
        mwh * MWH_J,
        mwh * MWH_J * (1 - band),
        mwh * MWH_J * (1 + band),
    )


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    """A project "olmo": a final run (GPU + CPU, 22 MWh), an ablation (5 MWh), a failed run (3 MWh)."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = FakeClock(wall_offset_s=H0)
    ledger = Ledger(make_engine(url), clock=clock)
    final = ledger.start_run(
        "olmo-final", RunSpec(project="olmo", role="final", model="OLMo 2 7B", site="jupiter")
    )
    ledger.record_intervals(
        final.id,
        [
            hour_row("GPU-0", Kind.GPU, Source.COUNTER, 0, 10.0, 0.05),
            hour_row("GPU-0", Kind.GPU, Source.COUNTER, 1, 10.0, 0.05),
            hour_row("cpu", Kind.CPU, Source.ESTIMATED, 0, 1.0, 0.3),
            hour_row("cpu", Kind.CPU, Source.ESTIMATED, 1, 1.0, 0.3),
        ],
    )
    clock.advance(7200)
    ledger.end_run(final.id)
    ablation = ledger.start_run(
        "olmo-abl", RunSpec(project="olmo", role="ablation", model="OLMo 2 7B", site="jupiter")
    )
    ledger.record_intervals(ablation.id, [hour_row("GPU-1", Kind.GPU, Source.COUNTER, 0, 5.0, 0.05)])
    failed = ledger.start_run("olmo-crash", RunSpec(project="olmo", role="failed", site="jupiter"))
    ledger.record_intervals(failed.id, [hour_row("GPU-2", Kind.GPU, Source.COUNTER, 0, 3.0, 0.05)])
    ledger.start_run("nowhere", RunSpec(project="x"))
    ledger.engine.dispose()
    return url


def markdown_rows(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown pipe table in `text`, keyed by header."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    if not lines:
        return []
    headers = [h.strip() for h in lines[0].strip("|").split("|")]
    return [
        dict(zip(headers, [c.strip() for c in line.strip("|").split("|")], strict=True)) for line in lines[2:]
    ]


def table(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, str]], str]:
    code = main(["table", *args, "--format", "markdown"])
    out = capsys.readouterr()
    return code, markdown_rows(out.out), out.out + out.err


def test_a_run_row_has_table19_columns_source_band_and_gpu_apart(capsys, ledger_url: str) -> None:
    code, rows, text = table(capsys, "olmo-final", "--db", ledger_url)
    assert code == 0
    [row] = rows
    # its counters were never checked at start-up (no counter_check event): the gate marks it in every format
    assert row["Model"] == "OLMo 2 7B (olmo-final, final) (NOT VALID)"
    assert row["Total power (MWh)"] == "22"
    assert (row["PUE"], row["Carbon intensity (kg CO2e/kWh)"], row["WUE (L/kWh)"]) == ("1.2", "0.332", "1.29")
    assert row["Emissions (tCO2eq)"] == "8.76"  # 22 MWh x 1.2 x 0.332
    assert row["Water (kL)"] == "34"  # 22 MWh x 1.2 x 1.29
    assert row["Energy source"] == "counter+estimated"
    assert row["Energy band (MWh)"] == "20 - 24"  # 19 + 1.4 .. 21 + 2.6
    assert (row["GPU energy (MWh)"], row["CPU+DRAM energy (MWh)"]) == ("20", "2.00")
    assert "- Left out: embodied emissions" in text and f"- Ledger: {ledger_url[10:]}" in text


def test_project_totals_the_whole_development_beside_the_final_run(capsys, ledger_url: str) -> None:
    code, rows, text = table(capsys, "--project", "olmo", "--db", ledger_url)
    assert code == 0
    assert [r["Model"] for r in rows] == [
        "OLMo 2 7B (olmo-final, final) (NOT VALID)",  # counters never checked at start-up
        "ablation runs (1)",
        "failed runs (1)",
        "olmo: whole development (3 runs)",
    ]
    assert [r["Total power (MWh)"] for r in rows] == ["22", "5.00", "3.00", "30"]
    assert rows[-1]["Emissions (tCO2eq)"] == "12"  # 30 x 1.2 x 0.332 = 11.95
    assert "1.36x the final run's energy" in text


def test_reference_rows_need_no_ledger(capsys, tmp_path: Path) -> None:
    code, rows, _ = table(capsys, "--reference", "--db", f"sqlite:///{tmp_path / 'none.db'}")
    assert code == 0
    olmo = next(r for r in rows if r["Model"] == "OLMo 2 7B")
    assert (olmo["Total power (MWh)"], olmo["Emissions (tCO2eq)"], olmo["Water (kL)"]) == ("131", "52", "202")
    assert olmo["Energy source"] == "published"
    assert not (tmp_path / "none.db").exists()


def test_hourly_intensity_sums_hour_by_hour(capsys, ledger_url: str, tmp_path: Path) -> None:
    series = tmp_path / "grid.csv"
    series.write_text("timestamp,kg_co2_per_kwh\n2026-01-01T00:00:00Z,0.5\n2026-01-01T01:00:00Z,0.1\n")
    code, [row], _ = table(capsys, "olmo-final", "--db", ledger_url, "--intensity", str(series))
    assert code == 0
    assert row["Emissions (tCO2eq)"] == "7.92"  # 11 MWh x 1.2 x 0.5 + 11 MWh x 1.2 x 0.1
    assert row["Carbon intensity (kg CO2e/kWh)"] == "0.300 (hourly mean)"


def test_other_formats_render(capsys, ledger_url: str) -> None:
    for fmt, marker in (
        ("markdown", "| OLMo 2 7B"),
        ("latex", r"\toprule"),
        ("html", "<table"),
        ("rich", "22"),
    ):
        assert main(["table", "olmo-final", "--db", ledger_url, "--format", fmt]) == 0
        assert marker in capsys.readouterr().out


def one_message(err: str, expected: str) -> bool:
    """One error message (rich wraps it at the terminal's width), no traceback."""
    flat = " ".join(err.split())
    return flat.count("error:") == 1 and "Traceback" not in err and expected in flat


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "run 'nope' does not exist"),
        (["--project", "nope"], "project 'nope' does not exist"),
        (["olmo-final", "--site", "mars"], "unknown site 'mars'"),
        (["olmo-final", "--prometheus", "http://127.0.0.1:{port}"], "cannot reach Prometheus"),
        (["olmo-final", "--intensity", "{missing}"], "cannot read intensity series"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys, ledger_url: str, tmp_path: Path, args: list[str], message: str
) -> None:
    ledger_file = Path(ledger_url[len("sqlite:///") :])
    before = ledger_file.read_bytes()
    args = [a.format(port=closed_port(), missing=tmp_path / "missing.csv") for a in args]
    code = main(["table", *args, "--db", ledger_url])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert one_message(out.err, message)
    assert ledger_file.read_bytes() == before


def test_unreachable_database_is_one_line(capsys, tmp_path: Path) -> None:
    assert main(["table", "r", "--db", f"postgresql+psycopg://u@127.0.0.1:{closed_port()}/db"]) == 2
    assert one_message(capsys.readouterr().err, "cannot open ledger")
    assert main(["table", "--db", f"sqlite:///{tmp_path / 'missing.db'}"]) == 2
    assert "no ledger at" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()


def test_compact_folds_old_rows_keeps_the_table_and_prints_the_path(capsys, ledger_url: str) -> None:
    assert main(["table", "olmo-final", "--db", ledger_url, "--format", "csv"]) == 0
    before = capsys.readouterr().out
    assert main(["compact", "--older-than-days", "0", "--db", ledger_url]) == 0
    out = capsys.readouterr().out
    assert ledger_url[len("sqlite:///") :] in out and "6 raw rows folded into 6 hourly rows" in out
    assert main(["table", "olmo-final", "--db", ledger_url, "--format", "csv"]) == 0
    assert capsys.readouterr().out == before
