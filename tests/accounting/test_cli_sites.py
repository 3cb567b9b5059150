"""`wattlog sites`: the catalog with each value's source, user files, and one-line errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from wattlog.cli import main


def test_sites_lists_every_figure_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sites", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    rows = [r for r in csv.reader(io.StringIO(out)) if r and not r[0].startswith("#")]
    assert rows[0] == ["Site", "Figure", "Value", "Source"]
    by_key = {(r[0], r[1]): r for r in rows[1:]}
    assert by_key[("jupiter", "PUE")][2] == "1.2"
    assert by_key[("augusta", "Carbon intensity (kg CO2e/kWh)")][2] == "0.352"
    assert by_key[("world", "WUE off-site (L/kWh)")][2] == "1.29-4.26"
    assert all(r[3] for r in rows[1:])


def test_sites_default_rich_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sites"]) == 0
    out = capsys.readouterr().out
    assert "jupiter" in out and "Ember" in out


def _list_sites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, wue_offsite: str, more: str = ""
) -> str:
    """`wattlog sites --format markdown` with a sites file holding one site (PUE 1.3, intensity 0.25)."""
    path = tmp_path / "sites.toml"
    path.write_text(
        f"[sites.{name}]\npue = 1.3\nwue_onsite_l_per_kwh = 0\nwue_offsite_l_per_kwh = {wue_offsite}\n"
        f"carbon_intensity_kg_per_kwh = 0.25\n{more}",
        encoding="utf-8",
    )
    assert main(["sites", "--sites-file", str(path), "--format", "markdown"]) == 0
    return capsys.readouterr().out


def test_sites_file_adds_a_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _list_sites(tmp_path, capsys, "mylab", "[1, 2]")
    assert "| mylab | WUE off-site (L/kWh) | 1-2 |" in out
    assert f"user sites file {tmp_path / 'sites.toml'}" in out


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("pue = 0.9", "PUE is 0.9, below 1"),
        ("pue = [1.5, 1.2]", "min 1.5 is above max 1.2"),
        ("pue = 1.2\ncarbon_intensity_kg_per_kwh = -1", "carbon intensity cannot be negative"),
    ],
)
def test_bad_sites_file_exits_non_zero_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, expected: str
) -> None:
    fields = {
        "pue": "1.2",
        "wue_onsite_l_per_kwh": "0",
        "wue_offsite_l_per_kwh": "1",
        "carbon_intensity_kg_per_kwh": "0.3",
    }
    for line in body.splitlines():
        key, _, value = line.partition(" = ")
        fields[key] = value
    path = tmp_path / "bad.toml"
    path.write_text("[sites.bad]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items()), encoding="utf-8")
    assert main(["sites", "--sites-file", str(path)]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert expected in lines[0] and str(path) in lines[0]


def test_missing_sites_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sites", "--sites-file", str(tmp_path / "absent.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot read sites file" in err


def test_unknown_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sites", "--format", "pdf"]) != 0


def test_error_text_with_brackets_is_printed_verbatim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("title = 'no sites'\n", encoding="utf-8")
    assert main(["sites", "--sites-file", str(path)]) == 2
    assert "no [sites.NAME] tables found" in capsys.readouterr().err


def test_a_site_with_an_hourly_source_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hourly = '[sites.texas.intensity]\nsource = "ledger"\nseries = "ercot"\n'
    out = _list_sites(tmp_path, capsys, "texas", "1.29", hourly)
    assert "| texas | Carbon intensity in tables | hourly | ledger ercot |" in out
    assert "| jupiter | Carbon intensity in tables" not in out
