"""Health check on the CPU, a wrong product, missing devices, peers and the NVML checks."""

from __future__ import annotations

import dataclasses
import os
from types import SimpleNamespace

import pytest
import torch

from wattlog.errors import ConfigError
from wattlog.trainer.gpuchecks import Thresholds, nvml_checks
from wattlog.trainer.health import compare_peers, default_devices, exit_code, health_check, resolve_device


def test_cpu_health_check_passes_and_reports_throughput() -> None:
    result = health_check("cpu", size=128, repeats=2)
    assert result.ok and exit_code([result]) == 0
    assert result.device == "cpu" and result.tflops > 0 and result.max_rel_error < 1e-5
    assert [c.name for c in result.checks] == ["matmul"]
    assert result.payload()["ok"] is True and result.end_s >= result.start_s
    assert "ok" in result.summary()


def test_wrong_result_fails_with_non_zero_exit() -> None:
    def broken(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = a @ b
        out[3, 5] += 1.0  # one flipped value, as a faulty SM would produce
        return out

    result = health_check("cpu", size=64, matmul=broken)
    assert not result.ok and exit_code([result]) == 1
    assert result.failures[0].name == "matmul"
    assert "FAIL" in result.summary()


@pytest.mark.parametrize("spec", ["cuda:7", "tpu", "banana"])
def test_missing_or_unknown_device_is_one_clear_error(spec: str) -> None:
    if spec.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    with pytest.raises(ConfigError, match=spec.split(":")[0]):
        resolve_device(spec)


def test_default_devices_fall_back_to_cpu() -> None:
    assert default_devices() == (
        [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else ["cpu"]
    )


def test_a_device_far_below_its_peers_fails() -> None:
    base = health_check("cpu", size=32, repeats=1)
    results = [
        dataclasses.replace(base, device=f"cuda:{i}", name="H100", tflops=t)
        for i, t in enumerate([700, 690, 300])
    ]
    checked = compare_peers(results)
    assert [r.ok for r in checked] == [True, True, False]
    assert checked[2].checks[-1].name == "peers" and exit_code(checked) == 1
    assert compare_peers(results[:1])[0].ok  # no peers: nothing to compare
    with pytest.raises(ConfigError):
        compare_peers(results, min_fraction=0)


class _NvmlError(Exception):
    pass


def _fake_nvml(**over: object) -> SimpleNamespace:
    values = {
        "processes": [SimpleNamespace(pid=os.getpid())],  # only this process
        "used": 100 * 2**20,
        "temp": 40,
        "ecc": 0,
        "remap": (0, 0, 0, 0),
        "retired": 0,
    } | over

    def ecc(*_: object) -> int:
        if values["ecc"] is None:
            raise _NvmlError("not supported")
        return values["ecc"]  # type: ignore[return-value]

    return SimpleNamespace(
        NVML_TEMPERATURE_GPU=0,
        NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1,
        NVML_VOLATILE_ECC=0,
        nvmlDeviceGetHandleByUUID=lambda uuid: uuid,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetComputeRunningProcesses=lambda h: values["processes"],
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=values["used"]),
        nvmlDeviceGetTemperature=lambda h, s: values["temp"],
        nvmlDeviceGetTotalEccErrors=ecc,
        nvmlDeviceGetRemappedRows=lambda h: values["remap"],
        nvmlDeviceGetRetiredPagesPendingStatus=lambda h: values["retired"],
    )


def test_nvml_checks_pass_on_a_clean_idle_gpu() -> None:
    checks = nvml_checks(_fake_nvml(), "GPU-x", 0, Thresholds())
    assert all(c.ok for c in checks)
    assert {c.name for c in checks} >= {"processes", "memory", "temperature", "ecc", "row_remap", "xid"}
    assert next(c for c in checks if c.name == "xid").skipped


@pytest.mark.parametrize(
    ("over", "failing"),
    [
        ({"processes": [SimpleNamespace(pid=4242)]}, "processes"),
        ({"used": 8 * 2**30}, "memory"),
        ({"temp": 91}, "temperature"),
        ({"ecc": 3}, "ecc"),
        ({"remap": (0, 1, 1, 0)}, "row_remap"),
        ({"retired": 1}, "page_retirement"),
    ],
)
def test_nvml_checks_fail_a_dirty_gpu(over: dict[str, object], failing: str) -> None:
    checks = nvml_checks(_fake_nvml(**over), None, 0, Thresholds())
    assert [c.name for c in checks if not c.ok] == [failing]


def test_unsupported_nvml_metric_is_skipped_not_failed() -> None:
    checks = nvml_checks(_fake_nvml(ecc=None), "GPU-x", 0, Thresholds())
    ecc = next(c for c in checks if c.name == "ecc")
    assert ecc.ok and ecc.skipped and "not reported" in ecc.detail
