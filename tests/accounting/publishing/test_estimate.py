"""`wattlog estimate`: GPU-hours x draw x PUE, or tokens x 6 x parameters / (MFU x peak), banded, labelled."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wattlog.accounting.devices import device_catalog
from wattlog.accounting.publishing.disclosure.estimate import Hours, board_draw, estimate, hours_from_size
from wattlog.accounting.publishing.disclosure.model import Boundary
from wattlog.cli import full_app
from wattlog.errors import ConfigError


def test_metas_formula_gives_llama_2_7b_exactly_as_published() -> None:
    # Llama 2 card: 184,320 GPU-hours at 400 W; Meta's factors PUE 1.1 and 0.385 kg/kWh -> 31.22 t
    found = estimate(Hours(184_320, 184_320, 184_320, "given"), board_draw("", device_catalog(), 400.0),
                     pue=1.1, intensity_kg_per_kwh=0.385)  # fmt: skip
    assert found.co2_t is not None and round(found.co2_t[0], 2) == 31.22
    assert [e.boundary for e in found.energy] == [Boundary.GPU, Boundary.FACILITY]
    assert all(e.source == "estimated" for e in found.energy)


def test_a_published_measured_draw_comes_before_the_tdp_and_sets_the_band() -> None:
    h100 = board_draw("H100", device_catalog())
    assert (h100.low_w, h100.high_w) == (621.0, 649.0) and "measured mean draw" in h100.source
    a100 = board_draw("A100", device_catalog())  # no measured draw published: its TDP, banded down
    assert (a100.mean_w, a100.low_w, a100.high_w) == (400.0, 200.0, 400.0) and "TDP" in a100.source
    with pytest.raises(ConfigError, match="no published draw or TDP"):
        board_draw("TPUv9", device_catalog())


def test_before_a_run_the_band_comes_from_the_mfu_range() -> None:
    peak = 989.4e12
    hours = hours_from_size(4e12, 7e9, (0.35, 0.45), peak)
    flops = 6 * 7e9 * 4e12
    assert hours.high == pytest.approx(flops / (0.35 * peak) / 3600)  # low MFU: more hours
    assert hours.low == pytest.approx(flops / (0.45 * peak) / 3600)
    assert hours.low < hours.hours < hours.high
    with pytest.raises(ConfigError, match="--mfu"):
        hours_from_size(4e12, 7e9, (0.5, 0.4), peak)


def test_the_command_labels_every_figure_estimated_and_says_what_is_missing() -> None:
    runner = CliRunner()
    out = runner.invoke(full_app(), ["estimate", "--gpu-hours", "184320", "--draw-w", "400", "--pue", "1.1",
                                     "--intensity", "0.385"], env={"COLUMNS": "200"})  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "CO2 (location-based): 31.22 t" in out.output and "GPU-hours: 184,320" in out.output
    assert "source estimated" in out.output and "not a measurement" in out.output
    size = ["--tokens", "4e12", "--params", "7e9", "--mfu", "0.35-0.45", "--board", "H100"]
    sized = runner.invoke(full_app(), ["estimate", *size, "--site", "jupiter", "--json"])
    assert sized.exit_code == 0, sized.output
    data = json.loads(sized.output)
    assert (
        data["source"] == "estimated"
        and data["co2_t"]["low"] < data["co2_t"]["value"] < data["co2_t"]["high"]
    )
    bare = runner.invoke(full_app(), ["estimate", "--gpu-hours", "10", "--draw-w", "400", "--json"])
    assert json.loads(bare.output)["co2_t"] is None  # no intensity given: null, never 0
    both = runner.invoke(full_app(), ["estimate", "--gpu-hours", "10", "--tokens", "1e9", "--draw-w", "400"])
    assert both.exit_code != 0
