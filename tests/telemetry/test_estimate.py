from __future__ import annotations

import pytest

from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, SensorError
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.estimate import (
    CPU_UUID,
    DRAM_UUID,
    CpuUtilisation,
    EstimateConfig,
    EstimateSensor,
    job_memory_bytes,
)
from wattlog.telemetry.types import DeviceInfo

GB = 1_000_000_000


def _sensor(utilisation: float = 50.0, **config: float) -> EstimateSensor:
    return EstimateSensor(
        EstimateConfig(**config),  # type: ignore[arg-type]
        cpu_percent=lambda: utilisation,
        memory_bytes=lambda: 64 * GB,
        cpu_count=lambda: 8,
    )


def _device(sensor: EstimateSensor, kind: Kind) -> DeviceInfo:
    return next(d for d in sensor.devices() if d.kind is kind)


def test_devices_are_labelled_estimated_and_name_their_assumptions() -> None:
    sensor = _sensor()
    assert isinstance(sensor, Sensor)
    cpu, dram = sensor.devices()
    assert (cpu.uuid, cpu.kind, dram.uuid, dram.kind) == (CPU_UUID, Kind.CPU, DRAM_UUID, Kind.DRAM)
    assert all(d.source is Source.ESTIMATED and not d.has_counter for d in (cpu, dram))
    assert cpu.note.startswith("estimated: utilisation x 28 W TDP (3.5 W x 8 logical CPUs")
    assert "21% of it at idle" in cpu.note
    assert dram.note.startswith("estimated: 0.06 W/GB x 64.0 GB")
    assert "(estimated)" in cpu.name and "(estimated)" in dram.name


@pytest.mark.parametrize(("utilisation", "expected_w"), [(0.0, 21.0), (50.0, 60.5), (100.0, 100.0)])
def test_cpu_power_is_linear_from_idle_to_tdp(utilisation: float, expected_w: float) -> None:
    sensor = _sensor(utilisation, cpu_tdp_w=100.0)
    reading = sensor.read(_device(sensor, Kind.CPU), t_s=3.0)
    assert reading.power_w == pytest.approx(expected_w)
    assert (reading.utilisation_pct, reading.t_s, reading.energy_mj) == (utilisation, 3.0, None)
    assert "100 W TDP (configured)" in _device(sensor, Kind.CPU).note


def test_out_of_range_utilisation_is_clamped() -> None:
    sensor = _sensor(140.0, cpu_tdp_w=100.0)
    assert sensor.read(_device(sensor, Kind.CPU), 0.0).power_w == pytest.approx(100.0)


def test_dram_power_is_bounded_per_gb_not_codecarbons_378_w() -> None:
    sensor = EstimateSensor(cpu_percent=lambda: 0.0, memory_bytes=lambda: 1008 * GB)
    power_w = sensor.read(_device(sensor, Kind.DRAM), 0.0).power_w
    assert power_w == pytest.approx(60.48)  # 1 TB at 0.06 W/GB, where 3 W per 8 GB gave 378 W
    with pytest.raises(ConfigError, match="W/GB"):
        EstimateConfig(dram_w_per_gb=3.0)


@pytest.mark.parametrize(
    "bad",
    [{"cpu_tdp_w": 0.0}, {"cpu_tdp_w": 5000.0}, {"cpu_idle_fraction": 1.0}, {"cpu_w_per_thread": -1.0}],
)
def test_implausible_config_is_a_config_error(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        EstimateConfig(**bad)  # type: ignore[arg-type]


def test_with_cpu_tdp_copies_and_validates() -> None:
    base = EstimateConfig()
    assert base.with_cpu_tdp_w(95.0).cpu_tdp_w == 95.0 and base.cpu_tdp_w is None
    with pytest.raises(ConfigError):
        base.with_cpu_tdp_w(-3.0)


def test_kinds_limit_the_devices_offered() -> None:
    sensor = EstimateSensor(memory_bytes=lambda: GB, cpu_count=lambda: 2, kinds=[Kind.DRAM])
    assert [d.uuid for d in sensor.devices()] == [DRAM_UUID]


def test_unknown_device_is_a_sensor_error() -> None:
    stranger = DeviceInfo("GPU-1", "gpu", Kind.GPU, Source.COUNTER, True)
    with pytest.raises(SensorError):
        _sensor().read(stranger, 0.0)


def test_real_probes_return_plausible_values() -> None:
    utilisation = CpuUtilisation()
    assert 0.0 <= utilisation() <= 100.0  # since boot
    assert 0.0 <= utilisation() <= 100.0  # since the previous call
    assert job_memory_bytes() > 0


def test_the_sampler_reads_the_estimate_once_per_estimate_and_the_energy_is_unchanged() -> None:
    calls = {"cpu": 0}

    def utilisation() -> float:
        calls["cpu"] += 1
        return 50.0

    clock = FakeClock()
    sensor = EstimateSensor(
        EstimateConfig(cpu_tdp_w=100.0), cpu_percent=utilisation, memory_bytes=lambda: 64 * GB
    )
    integ = Integrator(sensor.devices(), host="h", clock=clock)
    sampler = Sampler([sensor], integ, period_s=0.025, clock=clock)
    sampler.run_until(10.0)
    assert calls["cpu"] == 10  # one estimate a second
    assert sampler.stats().reads_total == 2 * 10  # and one read of each device per estimate, not 400
    cpu, dram = integ.snapshot()
    assert (cpu.gap_count, dram.gap_count) == (0, 0)
    assert cpu.energy_j == pytest.approx(60.5 * 9.0, rel=1e-9)  # held backwards over each second
    assert dram.energy_j == pytest.approx(0.06 * 64 * 9.0, rel=1e-9)
    reading = sensor.read(_device(sensor, Kind.CPU), 10.0)
    assert reading.next_read_s == pytest.approx(11.0)
