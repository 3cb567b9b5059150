"""The audit bundle's series, intensity, profiles, configuration and exports, each recomputed or refused."""

from __future__ import annotations

import csv
import json
import tarfile
from pathlib import Path

import pytest

from tests.accounting.test_audit import _rewrite
from wattlog.accounting.carbon.catalog import load_series, save_series
from wattlog.accounting.carbon.intensity.base import HourlySeries, HourProvenance
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.audit.bundle import build_bundle, verify_bundle
from wattlog.accounting.publishing.audit.series import CSV_COLUMNS
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.accounting.publishing.validity import counter_check_payload
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.events import EventKind
from wattlog.records import EnergyInterval, Kind, Source

T0 = 1_800_000_000.0  # 2027-01-15T08:00Z
HOUR = int(T0 // 3600) * 3600


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """Two GPUs over two hours in 60 s rows, an hourly intensity stored in the ledger's catalog."""
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    provenance = {HOUR: HourProvenance("EIA-930 (ERCO)"), HOUR + 3600: HourProvenance("EIA-930", True)}
    save_series(ledger, "erco-2027", HourlySeries({HOUR: 0.41, HOUR + 3600: 0.38}, "eia", provenance))
    run = ledger.start_run("r", RunSpec(site="jupiter", model="tiny", role="final", config={"lr": 3e-4}))
    rows = [
        EnergyInterval.of(
            "n0", f"gpu{g}", Kind.GPU, Source.COUNTER, T0 + t, T0 + t + 60, j, j * 0.95, j * 1.05
        )
        for t in range(0, 7200, 60)
        for g, j in ((0, 7000.0 + t % 37), (1, 6500.0))
    ]
    ledger.record_intervals(run.id, rows)
    for device in ("gpu0", "gpu1"):
        payload = counter_check_payload("n0", device, 7000.0, 6950.0, 10.0)
        ledger.record_event(run.id, EventKind.COUNTER_CHECK, payload=payload)
    ledger.end_run(run.id, end_s=T0 + 7200)
    options = TableOptions(catalog=site_catalog(), intensity=load_series(ledger, "erco-2027"))
    return build_bundle(ledger, "r", options, tmp_path / "r.tar.gz")


def _json(path: Path, name: str) -> dict:  # type: ignore[type-arg]
    with tarfile.open(path) as tar:
        member = tar.extractfile(name)
        assert member is not None
        return json.loads(member.read())  # type: ignore[no-any-return]


def test_the_bundle_holds_series_intensity_profiles_config_and_exports(bundle: Path) -> None:
    result = verify_bundle(bundle)
    assert result.ok, result.problems
    assert result.printed["validity"] == "valid" and "measurement valid" in result.printed["notes"]
    series = _json(bundle, "series.json")
    gpu0 = series["devices"]["n0/gpu0"]
    assert series["resolution_s"] == 60.0
    assert gpu0 == {"kind": "gpu", "source": "counter", "rows": 120, "start_s": T0, "end_s": T0 + 7200}
    # the series are the rows: said how, not written out again (2.9 B a row, bench.audit_size)
    assert "energy_j / (end_s - start_s)" in series["what"] and "running sum" in series["what"]
    intensity = _json(bundle, "intensity.json")
    assert intensity["hours"] == {str(HOUR): 0.41, str(HOUR + 3600): 0.38}
    assert intensity["provenance"][str(HOUR + 3600)] == {"source": "EIA-930", "estimated": True}
    assert "ledger series erco-2027" in intensity["label"]
    assert "counter_step_mj = 3.6e6" in _json(bundle, "profiles.json")["node.toml"]
    config = _json(bundle, "config.json")
    assert config["run_config"] == {"lr": 3e-4} and config["validity"]["max_gap_fraction"] == 0.01
    assert {"wattlog", "python", "sqlalchemy"} <= set(_json(bundle, "versions.json"))
    row = _json(bundle, "exports/row.json")["rows"][0]
    assert row["valid"] is True and row["hourly_intensity"] is True


@pytest.mark.parametrize(
    ("name", "old", "new", "refusal"),
    [
        ("intensity.json", b"0.38", b"0.18", "co2_t: printed"),
        ("exports/row.json", b'"valid": true', b'"valid": false', "exports/row.json: the recomputed export"),
        ("exports/row.csv", b",true,", b",false,", "exports/row.csv: the recomputed export differs"),
        ("series.json", b'"rows":120', b'"rows":119', "series.json: differs from the series the rows give"),
    ],
)
def test_one_changed_number_anywhere_is_refused_even_with_a_rewritten_manifest(
    bundle: Path, name: str, old: bytes, new: bytes, refusal: str
) -> None:
    _rewrite(bundle, name, lambda b: b.replace(old, new, 1), fix_manifest=True)
    result = verify_bundle(bundle)
    assert not result.ok
    assert any(problem.startswith(refusal) for problem in result.problems), result.problems


def test_wattlog_audit_series_writes_the_power_and_counter_series_of_a_bundle(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The series a reviewer plots, from the bundle alone: each row's mean power and its device's running
    counter, the counter ending at the device's total (7,000-7,036 J and 6,500 J a minute, 120 rows)."""
    out = tmp_path / "series.csv"
    assert main(["audit", "series", str(bundle), "-o", str(out)]) == 0
    with out.open(newline="") as source:
        lines = list(csv.DictReader(source))
    assert list(lines[0]) == list(CSV_COLUMNS) and len(lines) == 240
    gpu0 = [line for line in lines if line["device"] == "gpu0"]
    assert float(gpu0[1]["power_w"]) == (7000.0 + 60 % 37) / 60
    assert float(gpu0[-1]["counter_j"]) == sum(7000.0 + t % 37 for t in range(0, 7200, 60))
    # every energy with its band and every line with its source: the row's as stored, the counter's
    # as the ledger sums the rows (no random parts here: the sides add up)
    assert (float(gpu0[1]["low_j"]), float(gpu0[1]["high_j"])) == ((7000.0 + 23) * 0.95, (7000.0 + 23) * 1.05)
    assert float(gpu0[-1]["counter_low_j"]) == pytest.approx(float(gpu0[-1]["counter_j"]) * 0.95, rel=1e-12)
    assert float(gpu0[-1]["counter_high_j"]) == pytest.approx(float(gpu0[-1]["counter_j"]) * 1.05, rel=1e-12)
    assert {line["source"] for line in lines} == {"counter"}
    assert main(["audit", "series", str(bundle)]) == 0  # without -o: on stdout
    assert capsys.readouterr().out.splitlines()[1:] == out.read_text().splitlines()[1:]


def test_a_tampered_bundle_gives_no_series_and_leaves_the_output_as_it_was(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rewrite(bundle, "rows/low_j.bin", lambda b: b[:-1] + bytes([b[-1] ^ 1]), fix_manifest=False)
    out = tmp_path / "series.csv"
    out.write_text("kept\n")
    assert main(["audit", "series", str(bundle), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "FAILED rows/low_j.bin: SHA-256 differs" in err and "REFUSED (no series written)" in err
    assert out.read_text() == "kept\n" and list(tmp_path.glob("*.part")) == []


def test_wattlog_audit_series_writes_only_the_devices_named_and_refuses_one_it_lacks(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A month's bundle holds millions of rows: a reviewer asks for one device's series by its name or
    by host/device; a name the bundle has no series of is said, and nothing written."""
    out = tmp_path / "gpu1.csv"
    assert main(["audit", "series", str(bundle), "--device", "gpu1", "-o", str(out)]) == 0
    with out.open(newline="") as source:
        lines = list(csv.DictReader(source))
    assert {line["device"] for line in lines} == {"gpu1"} and len(lines) == 120
    assert float(lines[-1]["counter_j"]) == 6500.0 * 120
    assert main(["audit", "series", str(bundle), "--device", "n0/gpu0", "--device", "gpu1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 240
    assert main(["audit", "series", str(bundle), "--device", "gpu9", "-o", str(tmp_path / "none.csv")]) == 1
    assert "FAILED series.json: no series of gpu9 in this bundle" in capsys.readouterr().err
    assert not (tmp_path / "none.csv").exists()
