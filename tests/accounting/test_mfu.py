"""MFU only against a published peak (the device catalog, with sources), never above 100 %."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from wattlog.accounting.devices import device_catalog
from wattlog.accounting.publishing import mfu as mfu_module
from wattlog.accounting.publishing.mfu import mfu_of
from wattlog.clock import FakeClock
from wattlog.trainer.callbacks import SpeedCallback
from wattlog.trainer.metrics import StepRecord


def test_the_catalog_names_published_peaks_with_sources() -> None:
    catalog = device_catalog()
    h100 = catalog.named_in("NVIDIA H100 80GB HBM3")
    assert (
        h100 is not None
        and h100.peak_flops == pytest.approx(989.4e12)
        and "datasheet" in h100.sources["peak_flops"]
    )
    a100 = catalog.named_in("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.peak_flops == pytest.approx(312e12)
    for other in ("NVIDIA GH100 engineering sample", "Intel(R) Xeon(R) CPU @ 2.20GHz", "simulated GPU"):
        assert catalog.named_in(other) is None, other


def test_mfu_above_one_proves_the_peak_wrong(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(mfu_module, "_warned", set())
    assert mfu_of(1000.0, 6e9, 1e13) == pytest.approx(0.6)
    with caplog.at_level(logging.WARNING):
        assert mfu_of(1000.0, 6e9, 3e12) is None  # would be 200 %
        assert mfu_of(1000.0, 6e9, 3e12) is None
    assert len([r for r in caplog.records if "above 100 %" in r.getMessage()]) == 1


def test_the_speed_callback_never_reports_mfu_above_one() -> None:
    # The demo's case: the peak was a CPU health check's matmul rate, below what training achieved.
    callback = SpeedCallback(flops_per_token=1e6, peak_flops=5e7)
    callback.pre_train(SimpleNamespace(clock=FakeClock(wall_offset_s=0.0)))
    callback.log_metrics([StepRecord(i + 1, i + 1.0, {"tokens": 100.0}) for i in range(10)])
    figures = callback.latest
    assert figures is not None and figures.tokens_per_s == pytest.approx(100.0)
    assert figures.mfu is None  # before: 2.0, i.e. "MFU 200 %"
