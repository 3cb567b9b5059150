"""The pynvml-compatible fake: real pynvml errors, units and structs over simulated GPUs."""

from __future__ import annotations

import sys

import pynvml
import pytest

from wattlog.clock import FakeClock
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml, install
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace, SquareWave


def make(clock: FakeClock, **kwargs: object) -> FakeNvml:
    gpus = [
        SimulatedGpu("GPU-sim-0000", "sim A", SquareWave(600.0, 200.0, 0.05, 0.05), power_limit_w=700.0),
        SimulatedGpu("GPU-sim-0001", "sim B", ConstantTrace(300.0), power_limit_w=400.0, lost_at_s=10.0),
    ]
    fake = FakeNvml(gpus, clock, **kwargs)  # type: ignore[arg-type]
    fake.nvmlInit()
    return fake


def test_calls_before_init_raise_uninitialized(fake_clock: FakeClock) -> None:
    fake = FakeNvml([], fake_clock)
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()


def test_no_driver_raises_library_not_found_like_the_real_one(fake_clock: FakeClock) -> None:
    fake = FakeNvml([], fake_clock, driver_loaded=False)
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        fake.nvmlInit()


def test_identity_and_handles(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    assert fake.nvmlDeviceGetCount() == 2
    handle = fake.nvmlDeviceGetHandleByUUID(b"GPU-sim-0001")
    assert fake.nvmlDeviceGetIndex(handle) == 1
    assert fake.nvmlDeviceGetUUID(handle) == "GPU-sim-0001"
    assert fake.nvmlDeviceGetName(fake.nvmlDeviceGetHandleByIndex(0)) == "sim A"
    assert "simulated" in fake.nvmlSystemGetDriverVersion()
    with pytest.raises(pynvml.NVMLError_NotFound):
        fake.nvmlDeviceGetHandleByUUID("GPU-nope")
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        fake.nvmlDeviceGetHandleByIndex(2)


def test_power_energy_and_limits_in_nvml_units(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    fake_clock.advance(5.0)
    b = fake.nvmlDeviceGetHandleByIndex(1)
    assert fake.nvmlDeviceGetPowerUsage(b) == 300_000  # mW
    assert fake.nvmlDeviceGetTotalEnergyConsumption(b) == 1_500_000  # mJ after 5 s at 300 W
    assert fake.nvmlDeviceGetEnforcedPowerLimit(b) == 400_000
    assert fake.nvmlDeviceGetPowerManagementLimit(b) == 400_000


def test_field_values_are_real_structs_with_instant_and_average(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    fake_clock.advance(5.0)
    a = fake.nvmlDeviceGetHandleByIndex(0)
    values = fake.nvmlDeviceGetFieldValues(
        a, [pynvml.NVML_FI_DEV_POWER_INSTANT, (pynvml.NVML_FI_DEV_POWER_AVERAGE, 0), 1]
    )
    assert isinstance(values[0], pynvml.c_nvmlFieldValue_t)
    assert values[0].nvmlReturn == pynvml.NVML_SUCCESS
    assert values[0].value.uiVal == 200_000  # the 25 ms window sees only the off phase
    assert values[1].fieldId == pynvml.NVML_FI_DEV_POWER_AVERAGE
    assert values[1].value.uiVal == 200_000
    assert values[2].nvmlReturn == pynvml.NVML_ERROR_NOT_SUPPORTED


def test_unsupported_features_answer_not_supported(fake_clock: FakeClock) -> None:
    fake = make(
        fake_clock,
        supports_instant_field=False,
        supports_energy=False,
        unsupported={"nvmlDeviceGetTemperature"},
    )
    a = fake.nvmlDeviceGetHandleByIndex(0)
    field = fake.nvmlDeviceGetFieldValues(a, [pynvml.NVML_FI_DEV_POWER_INSTANT])[0]
    assert field.nvmlReturn == pynvml.NVML_ERROR_NOT_SUPPORTED
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake.nvmlDeviceGetTotalEnergyConsumption(a)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake.nvmlDeviceGetTemperature(a, pynvml.NVML_TEMPERATURE_GPU)
    with pytest.raises(pynvml.NVMLError_NotSupported):  # a function it does not simulate
        fake.nvmlDeviceGetClockInfo(a, pynvml.NVML_CLOCK_SM)


def test_other_metrics(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    fake_clock.advance(20.0)
    a = fake.nvmlDeviceGetHandleByIndex(0)
    memory = fake.nvmlDeviceGetMemoryInfo(a)
    assert memory.total == memory.used + memory.free > memory.used > 0
    assert 0 <= fake.nvmlDeviceGetUtilizationRates(a).gpu <= 100
    assert 30 <= fake.nvmlDeviceGetTemperature(a, pynvml.NVML_TEMPERATURE_GPU) <= 100
    assert fake.nvmlDeviceGetComputeRunningProcesses(a) == []


def test_lost_gpu_raises_gpu_is_lost_while_the_other_answers(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    fake_clock.advance(10.0)
    lost = fake.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetTotalEnergyConsumption(lost)
    assert fake.nvmlDeviceGetTotalEnergyConsumption(fake.nvmlDeviceGetHandleByIndex(0)) > 0


def test_constants_come_from_the_real_module(fake_clock: FakeClock) -> None:
    fake = FakeNvml([], fake_clock)
    assert fake.NVML_TEMPERATURE_GPU == pynvml.NVML_TEMPERATURE_GPU
    assert fake.NVMLError is pynvml.NVMLError
    assert fake.c_nvmlFieldValue_t is pynvml.c_nvmlFieldValue_t
    with pytest.raises(AttributeError):
        fake.no_such_name  # noqa: B018


def test_install_makes_import_pynvml_return_the_fake_and_restores(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    before = sys.modules.get("pynvml")
    with install(fake):
        import pynvml as imported

        assert imported is fake
        assert imported.nvmlDeviceGetCount() == 2
    assert sys.modules.get("pynvml") is before


def test_shutdown_is_counted(fake_clock: FakeClock) -> None:
    fake = make(fake_clock)
    fake.nvmlShutdown()
    assert (fake.init_calls, fake.shutdown_calls) == (1, 1)
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
