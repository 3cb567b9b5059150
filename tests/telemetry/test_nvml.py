"""The NVIDIA backend, driven through the pynvml-compatible fake (and, once, a patched real pynvml)."""

from __future__ import annotations

import pynvml
import pytest

from wattlog.clock import FakeClock
from wattlog.errors import DeviceLost, SensorError, SensorUnavailable
from wattlog.records import Source
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml, install
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace, SquareWave, TrainingTrace


def gpus(lost_at_s: float | None = None) -> list[SimulatedGpu]:
    return [
        SimulatedGpu("GPU-sim-0000", "sim A", SquareWave(600.0, 200.0, 2.0, 2.0), power_limit_w=700.0),
        SimulatedGpu("GPU-sim-0001", "sim B", ConstantTrace(300.0), power_limit_w=400.0, lost_at_s=lost_at_s),
    ]


def sensor(clock: FakeClock, lost_at_s: float | None = None, **kwargs: object) -> tuple[NvmlSensor, FakeNvml]:
    fake = FakeNvml(gpus(lost_at_s), clock, **kwargs)  # type: ignore[arg-type]
    return NvmlSensor(fake), fake


def test_devices_keyed_by_uuid_with_counter_and_instant_field(fake_clock: FakeClock) -> None:
    s, fake = sensor(fake_clock)
    assert isinstance(s, Sensor)
    assert fake.init_calls == 0  # the constructor does no I/O
    devices = s.devices()
    assert [(d.uuid, d.index, d.name) for d in devices] == [
        ("GPU-sim-0000", 0, "sim A"),
        ("GPU-sim-0001", 1, "sim B"),
    ]
    assert all(d.has_counter for d in devices)
    assert devices[1].power_limit_w == pytest.approx(400.0)
    assert "power: NVML_FI_DEV_POWER_INSTANT" in devices[0].note
    assert devices[0].source == Source.SIMULATED  # the fake says so: never labelled a measurement
    assert s.devices() == devices
    assert fake.init_calls == 1


def test_real_module_labels_counter_and_sampled(fake_clock: FakeClock) -> None:
    class RealLooking(FakeNvml):
        WATTLOG_SIMULATED = False

    with_counter = NvmlSensor(RealLooking(gpus(), fake_clock)).devices()
    without = NvmlSensor(RealLooking(gpus(), fake_clock, supports_energy=False)).devices()
    assert {d.source for d in with_counter} == {Source.COUNTER}
    assert {d.source for d in without} == {Source.SAMPLED}
    assert not any(d.has_counter for d in without)
    assert "no energy counter" in without[0].note


def test_read_uses_instant_field_and_counter(fake_clock: FakeClock) -> None:
    s, fake = sensor(fake_clock)
    a = s.devices()[0]
    fake_clock.advance(2.5)  # off phase for 0.5 s: instant says 200 W, the 1 s average still mixes
    reading = s.read(a, 2.5)
    assert reading.power_w == pytest.approx(200.0)
    assert reading.energy_mj == pytest.approx(600.0 * 2.0e3 + 200.0 * 0.5e3)
    assert reading.t_s == 2.5
    assert reading.utilisation_pct is not None and reading.temperature_c is not None
    assert reading.memory_used_bytes == fake._gpus[0].memory_used_bytes
    assert fake.calls.get("nvmlDeviceGetPowerUsage", 0) == 0


def test_without_instant_field_falls_back_to_power_usage_and_says_so(fake_clock: FakeClock) -> None:
    s, fake = sensor(fake_clock, supports_instant_field=False)
    a = s.devices()[0]
    assert "power: nvmlDeviceGetPowerUsage (1 s average on Ampere+)" in a.note
    fake_clock.advance(2.5)
    assert s.read(a, 2.5).power_w == pytest.approx(0.5 * 600.0 + 0.5 * 200.0)  # the 1 s trailing mean
    calls = dict(fake.calls)
    s.read(a, 2.5)
    # field 186 is not asked again: the one field call per read carries only the energy (83)
    assert fake.calls["nvmlDeviceGetFieldValues"] == calls["nvmlDeviceGetFieldValues"] + 1
    assert fake.calls["nvmlDeviceGetPowerUsage"] == calls["nvmlDeviceGetPowerUsage"] + 1


def test_without_counter_reads_no_energy(fake_clock: FakeClock) -> None:
    s, _ = sensor(fake_clock, supports_energy=False)
    a = s.devices()[0]
    fake_clock.advance(1.0)
    reading = s.read(a, 1.0)
    assert reading.energy_mj is None
    assert reading.power_w == pytest.approx(600.0)


def test_not_supported_falls_back_per_metric_and_is_remembered(fake_clock: FakeClock) -> None:
    s, fake = sensor(fake_clock, unsupported={"nvmlDeviceGetTemperature", "nvmlDeviceGetUtilizationRates"})
    a = s.devices()[0]
    for t in (0.5, 1.0, 1.5):
        fake_clock.advance(0.5)
        reading = s.read(a, t)
        assert reading.temperature_c is None and reading.utilisation_pct is None
        assert reading.power_w is not None and reading.energy_mj is not None
    assert fake.calls["nvmlDeviceGetTemperature"] == 1
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == 1


def test_lost_gpu_raises_device_lost_while_the_other_keeps_reading(fake_clock: FakeClock) -> None:
    s, fake = sensor(fake_clock, lost_at_s=3.0)
    a, b = s.devices()
    fake_clock.advance(2.0)
    assert s.read(b, 2.0).energy_mj == pytest.approx(600e3)
    fake_clock.advance(2.0)
    with pytest.raises(DeviceLost, match="GPU-sim-0001") as caught:
        s.read(b, 4.0)
    assert isinstance(caught.value.__cause__, pynvml.NVMLError_GpuIsLost)
    calls = sum(fake.calls.values())
    with pytest.raises(DeviceLost):
        s.read(b, 4.1)  # remembered: a faulted GPU is not called again
    assert sum(fake.calls.values()) == calls
    assert s.read(a, 4.0).energy_mj == pytest.approx((2 * 600.0 + 2 * 200.0) * 1e3)


def test_unknown_error_is_device_lost_and_others_are_sensor_errors(fake_clock: FakeClock) -> None:
    class Flaky(FakeNvml):
        code = pynvml.NVML_ERROR_UNKNOWN

        def nvmlDeviceGetMemoryInfo(self, handle, version=None):  # noqa: N802
            raise pynvml.NVMLError(self.code)

    fake = Flaky(gpus(), fake_clock)
    s = NvmlSensor(fake)
    a, b = s.devices()
    with pytest.raises(DeviceLost):
        s.read(a, 0.0)
    fake.code = pynvml.NVML_ERROR_TIMEOUT
    with pytest.raises(SensorError, match="memory") as caught:
        s.read(b, 0.0)
    assert not isinstance(caught.value, DeviceLost)


def test_no_driver_is_one_clear_line(fake_clock: FakeClock) -> None:
    s, _ = sensor(fake_clock, driver_loaded=False)
    with pytest.raises(SensorUnavailable) as caught:
        s.devices()
    assert str(caught.value) == (
        "no NVIDIA driver found (libnvidia-ml.so.1 could not be loaded): not measuring GPUs"
    )
    assert not s.is_available()


def test_real_pynvml_without_driver_is_unavailable() -> None:
    # this machine has no NVIDIA driver: the real binding fails to load the library
    s = NvmlSensor(pynvml)
    if s.is_available():  # pragma: no cover - only on a machine with a GPU
        s.close()
        pytest.skip("an NVIDIA driver is present")
    with pytest.raises(SensorUnavailable, match="no NVIDIA driver found"):
        s.devices()


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        (lambda index, uuid: index == 1, ["GPU-sim-0001"]),
        (lambda index, uuid: uuid == "GPU-sim-0000", ["GPU-sim-0000"]),
        (lambda index, uuid: False, []),
        (None, ["GPU-sim-0000", "GPU-sim-0001"]),
    ],
)
def test_include_picks_the_jobs_gpus(fake_clock: FakeClock, include: object, expected: list[str]) -> None:
    fake = FakeNvml(gpus(), fake_clock)
    devices = NvmlSensor(fake, include=include).devices()  # type: ignore[arg-type]
    assert [d.uuid for d in devices] == expected
    assert [d.index for d in devices] == [int(u[-1]) for u in expected]  # NVML index kept


def test_default_imports_pynvml_lazily_and_close_shuts_down_once(fake_clock: FakeClock) -> None:
    fake = FakeNvml(gpus(), fake_clock)
    with install(fake):
        s = NvmlSensor()
        assert len(s.devices()) == 2
    s.close()
    s.close()
    assert fake.shutdown_calls == 1


def test_read_of_unknown_device_is_a_sensor_error(fake_clock: FakeClock) -> None:
    s, _ = sensor(fake_clock)
    other = NvmlSensor(FakeNvml(gpus(), fake_clock)).devices()[0]
    with pytest.raises(SensorError, match="devices"):
        s.read(other, 0.0)


def test_phase_locked_load_misleads_power_sampling_but_not_a_true_counter(fake_clock: FakeClock) -> None:
    trace = TrainingTrace.phase_locked(period_s=0.1, compute_w=600.0, comm_w=200.0, comm_fraction=0.5)
    gpu = SimulatedGpu("GPU-sim-0000", "locked", trace)
    s = NvmlSensor(FakeNvml([gpu], fake_clock))
    (device,) = s.devices()
    readings = []
    for _ in range(400):  # 10 s at 25 ms
        fake_clock.advance(0.025)
        readings.append(s.read(device, fake_clock.monotonic()))
    true_j = gpu.true_energy_j(readings[0].t_s, readings[-1].t_s)
    sampled_j = sum(0.025 * (a.power_w + b.power_w) / 2 for a, b in zip(readings, readings[1:], strict=False))
    counter_j = (readings[-1].energy_mj - readings[0].energy_mj) / 1e3
    assert sampled_j == pytest.approx(0.5 * true_j, rel=0.01)  # sees only the 200 W dips: 50 % low
    assert counter_j == pytest.approx(true_j, abs=0.1 * 600.0)  # within one counter update


def test_a_driver_without_field_timestamps_is_read_on_the_read_times(fake_clock: FakeClock) -> None:
    class NoStamps(FakeNvml):
        def nvmlDeviceGetFieldValues(self, handle, fieldIds):  # type: ignore[no-untyped-def]  # noqa: N802, N803
            values = super().nvmlDeviceGetFieldValues(handle, fieldIds)
            for value in values:
                value.timestamp = 0
            return values

    s = NvmlSensor(NoStamps(gpus(), fake_clock))
    a = s.devices()[0]
    readings = []
    for _ in range(3):
        fake_clock.advance(0.025)
        readings.append(s.read(a, fake_clock.monotonic()))
    assert all(r.power_w is not None and r.energy_mj is not None for r in readings)  # not the cache
    assert all(r.power_t_s is None and r.energy_t_s is None for r in readings)


@pytest.mark.parametrize(
    ("value_type", "member", "power_mw", "energy_mj"),
    [
        (pynvml.NVML_VALUE_TYPE_DOUBLE, "dVal", 312_500.25, 7_000.5),
        (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG, "ulVal", 312_500, 2**40 + 3),
        (pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG, "sllVal", 312_500, 2**40 + 3),
        (pynvml.NVML_VALUE_TYPE_SIGNED_INT, "siVal", 312_500, 70_000),
        (pynvml.NVML_VALUE_TYPE_UNSIGNED_SHORT, "usVal", 31_250, 7_000),
    ],
)
def test_each_value_type_is_read_from_the_union_as_that_type(
    fake_clock: FakeClock, value_type: int, member: str, power_mw: float, energy_mj: float
) -> None:
    class Typed(FakeNvml):
        def nvmlDeviceGetFieldValues(self, handle, fieldIds):  # type: ignore[no-untyped-def]  # noqa: N802, N803
            values = super().nvmlDeviceGetFieldValues(handle, fieldIds)
            for value in values:
                value.value.ullVal = 0xFFFF_FFFF_FFFF_FFFF  # the union's bytes beyond the type are noise
                value.valueType = value_type
                number = power_mw if value.fieldId == pynvml.NVML_FI_DEV_POWER_INSTANT else energy_mj
                setattr(value.value, member, number)
            return values

    s = NvmlSensor(Typed(gpus(), fake_clock))
    a = s.devices()[0]
    fake_clock.advance(0.025)
    reading = s.read(a, fake_clock.monotonic())
    assert reading.power_w == power_mw / 1e3
    assert reading.energy_mj == energy_mj


class _MigNvml(FakeNvml):
    """GPU 0 in MIG mode with two instances; GPU 1 without MIG."""

    MIGS = ("MIG-11111111-aaaa-bbbb-cccc-000000000001", "MIG-11111111-aaaa-bbbb-cccc-000000000002")

    def nvmlDeviceGetMigMode(self, handle: object) -> tuple[int, int]:  # noqa: N802 - pynvml's name
        if getattr(handle, "index", None) == 0:
            return (1, 1)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: object) -> int:  # noqa: N802
        return 3  # one empty slot

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: object, i: int) -> str:  # noqa: N802
        if i >= len(self.MIGS):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return self.MIGS[i]

    def nvmlDeviceGetUUID(self, handle: object) -> str:  # noqa: N802
        return handle if isinstance(handle, str) else super().nvmlDeviceGetUUID(handle)  # type: ignore[arg-type]


def test_mig_instances_select_their_parent_gpu_once_and_say_energy_is_not_split(
    fake_clock: FakeClock,
) -> None:
    from wattlog.telemetry.selection import job_selection

    # a job given both instances of GPU 0 (the new MIG-<uuid> form): the parent, once, never per instance
    selection = job_selection({"CUDA_VISIBLE_DEVICES": ",".join(_MigNvml.MIGS)})
    [device] = NvmlSensor(_MigNvml(gpus(), fake_clock), include=selection.includes).devices()
    assert device.uuid == "GPU-sim-0000"
    assert "MIG enabled (2 instances)" in device.note and "not split" in device.note
    other = NvmlSensor(_MigNvml(gpus(), fake_clock)).devices()[1]
    assert "MIG" not in other.note


def test_a_counter_that_stops_answering_mid_run_marks_the_gpu_lost_not_a_silent_stall(
    fake_clock: FakeClock,
) -> None:
    s, fake = sensor(fake_clock)
    a = s.devices()[0]
    fake_clock.advance(0.5)
    assert s.read(a, 0.5).energy_mj is not None
    fake._supports_energy = False  # the driver stops answering the counter (field and plain call)
    fake_clock.advance(0.5)
    with pytest.raises(DeviceLost, match="counter stopped answering"):
        s.read(a, 1.0)


@pytest.mark.parametrize("shape", ["sequence", "short"])
def test_a_binding_whose_field_array_has_another_shape_falls_back_to_plain_calls_and_says_so(
    fake_clock: FakeClock, shape: str
) -> None:
    class OtherShape(FakeNvml):
        def nvmlDeviceGetFieldValues(self, handle, fieldIds):  # type: ignore[no-untyped-def]  # noqa: N802, N803
            values = super().nvmlDeviceGetFieldValues(handle, fieldIds)
            # a Python list made unpack raise TypeError inside discovery, which stopped the agent
            return list(values) if shape == "sequence" else bytes(values)[:-3]

    s = NvmlSensor(OtherShape(gpus(), fake_clock))
    a = s.devices()[0]
    assert a.note.count("nvmlDeviceGetFieldValues unreadable") == 1
    assert "nvmlDeviceGetPowerUsage" in a.note
    fake_clock.advance(0.025)
    reading = s.read(a, fake_clock.monotonic())
    assert reading.power_w is not None and reading.energy_mj is not None


def test_without_field_timestamps_reads_are_paced_by_the_counters_observed_updates(
    fake_clock: FakeClock,
) -> None:
    fake = FakeNvml(gpus(), fake_clock, field_timestamps=False)
    s = NvmlSensor(fake)
    a = s.devices()[0]
    due = []
    for _ in range(80):  # 2 s at 25 ms: the counter updates every 100 ms
        fake_clock.advance(0.025)
        due.append(s.read(a, fake_clock.monotonic()).next_read_s)
    assert due[:3] == [None, None, None]  # before the update period is learned: every tick
    paced = [d for d in due[40:] if d is not None]
    assert paced and all(d > fake_clock.monotonic() - 1.0 for d in paced)
