"""The intensity registry: sources by name, the CLI's formats and "auto" read from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.accounting.carbon.intensity import ConstantIntensity, IntensityRef, OpenContext
from wattlog.accounting.carbon.intensity.registry import (
    SOURCES,
    by_name,
    file_formats,
    formats_help,
    names,
    open_intensity,
    read_intensity,
)
from wattlog.errors import ConfigError


def test_every_source_is_found_by_its_name_and_an_unknown_one_lists_them() -> None:
    assert names() == [
        "constant",
        "csv",
        "electricitymaps",
        "electricitymaps-lca",
        "eia930",
        "ledger",
        "electricitymaps-api",
        "electricitymaps-api-lca",
        "watttime",
        "watttime-average",
        "ukgrid",
        "eia-api",
    ]
    assert all(by_name(source.name) is source for source in SOURCES)
    with pytest.raises(ConfigError, match="unknown intensity source 'wattmeter': use constant, csv"):
        by_name("wattmeter")


def test_the_table_help_lists_every_file_source_of_the_registry(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattlog.cli import main

    monkeypatch.setenv("COLUMNS", "1000")  # one line per option: no name wrapped
    assert main(["table", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert file_formats()[1:] == ["csv", "electricitymaps", "electricitymaps-lca", "eia930"]
    for source in SOURCES:
        if source.reads_file:
            assert source.name in out and source.description in formats_help()


def test_constant_opens_the_sites_own_figure_and_needs_one() -> None:
    figure = ConstantIntensity(0.3, "facility report")
    assert open_intensity(IntensityRef(), OpenContext(constant=figure)) is figure
    with pytest.raises(ConfigError, match="a site's own figure"):
        open_intensity(IntensityRef())


def test_a_stored_series_needs_a_ledger() -> None:
    with pytest.raises(ConfigError, match="stored in a ledger"):
        open_intensity(IntensityRef("ledger", "ercot"))


def test_a_non_file_source_is_no_file_format(tmp_path: Path) -> None:
    path = tmp_path / "grid.csv"
    path.write_text("timestamp,kg_co2_per_kwh\n2026-01-01T00:00:00Z,0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown intensity format 'ledger'"):
        read_intensity(path, "ledger")
