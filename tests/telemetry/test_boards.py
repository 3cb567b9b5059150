"""Board facts: the right board for a name, every figure sourced, unknown where nothing is published."""

from __future__ import annotations

import pytest

from wattlog.telemetry.sensors.boards import board_facts
from wattlog.telemetry.types import Vendor


@pytest.mark.parametrize(
    ("vendor", "name", "board", "peak_tflops"),
    [
        (Vendor.NVIDIA, "NVIDIA A100-SXM4-80GB", "a100", 312),
        (Vendor.NVIDIA, "NVIDIA H100 80GB HBM3", "h100-sxm", 989),
        (Vendor.NVIDIA, "NVIDIA H100 PCIe", "h100-pcie", 756),
        (Vendor.NVIDIA, "NVIDIA H200", "h200", 989),
        (Vendor.NVIDIA, "NVIDIA H200 NVL", "h200-nvl", None),  # a 600 W board: not the SXM's figures
        (Vendor.NVIDIA, "NVIDIA GH200 480GB", "gh200", 989),  # not the H200 inside its name
        (Vendor.NVIDIA, "NVIDIA B200", "b200", 2250),
        (Vendor.NVIDIA, "NVIDIA GB200", "gb200", None),  # not the B200 inside its name; nothing sourced
        (Vendor.AMD, "AMD Instinct MI300X", "mi300x", 1307.4),
        (Vendor.AMD, "AMD Instinct MI325X", "mi325x", 1307.4),
        (Vendor.AMD, "AMD Instinct MI250X", "mi250x", 383),
        (Vendor.HABANA, "HL-325L", "gaudi3", 1835),
    ],
)
def test_each_board_is_found_by_name_with_sourced_figures(
    vendor: Vendor, name: str, board: str, peak_tflops: float | None
) -> None:
    facts = board_facts(vendor, name)
    assert facts is not None and facts.board == board
    peak = facts.peak_bf16_flops
    if peak_tflops is None:
        assert peak is None
    else:
        assert peak == pytest.approx(peak_tflops * 1e12)
    for field in ("peak_bf16_flops", "power_limit_w", "embodied_kg_co2e"):
        assert getattr(facts, field) is None or facts.source(field), f"{board}.{field} has no source"


def test_only_the_h100_has_embodied_emissions_and_unknown_boards_have_no_facts() -> None:
    h100 = board_facts(Vendor.NVIDIA, "NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.embodied_kg_co2e == 463 and "Morrison" in h100.source("embodied_kg_co2e")
    mi300x = board_facts(Vendor.AMD, "AMD Instinct MI300X")
    assert mi300x is not None and mi300x.embodied_kg_co2e is None  # unknown, never a guess
    assert board_facts(Vendor.NVIDIA, "NVIDIA GeForce RTX 4090") is None
    assert board_facts(Vendor.INTEL, "Intel Data Center GPU Max 1550") is None
