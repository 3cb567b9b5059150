"""The simulated GPU: real sensor semantics over a trace whose integral is exact."""

from __future__ import annotations

import pytest

from wattlog.errors import ConfigError, DeviceLost, SensorError
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.simulated import SensorModel, SimulatedGpu, SimulatedSensor, simulated_gpus
from wattlog.telemetry.sensors.traces import ConstantTrace, SquareWave, Trace, TrainingTrace
from wattlog.telemetry.types import DeviceInfo


def gpu(trace: Trace, model: SensorModel | None = None, **kwargs: object) -> SimulatedGpu:
    return SimulatedGpu("GPU-sim-0000", "sim", trace, model, **kwargs)  # type: ignore[arg-type]


def test_published_value_averages_only_the_last_25_ms_of_each_100_ms() -> None:
    # on for the first 50 ms of each period, off for the last 50 ms: the window sees only "off"
    g = gpu(SquareWave(600.0, 200.0, 0.05, 0.05))
    for t in (1.0, 1.04, 1.099, 7.3):
        assert g.instant_power_w(t) == pytest.approx(200.0)
    assert g.true_energy_j(0.0, 10.0) == pytest.approx(4000.0)  # the truth: 400 W mean
    # shifting the load by half a period flips the error sign
    g2 = gpu(SquareWave(600.0, 200.0, 0.05, 0.05, phase_s=0.05))
    assert g2.instant_power_w(3.0) == pytest.approx(600.0)


def test_published_value_is_held_until_the_next_publication() -> None:
    g = gpu(SquareWave(600.0, 200.0, 0.05, 0.05, phase_s=0.06))  # on over [0.06, 0.11)
    # the window [0.075, 0.1] is all on; 1 ms later true power is off but the value holds
    assert g.instant_power_w(0.1) == pytest.approx(600.0)
    assert g.true_power_w(0.111) == 200.0
    assert g.instant_power_w(0.199) == pytest.approx(600.0)


def test_partial_window_is_averaged() -> None:
    g = gpu(SquareWave(600.0, 200.0, 0.09, 0.01))  # off during [0.09, 0.1): 10 of the 25 ms
    assert g.instant_power_w(0.5) == pytest.approx((15 * 600.0 + 10 * 200.0) / 25)


def test_average_reading_is_a_trailing_one_second_mean_of_published_values() -> None:
    trace = SquareWave(500.0, 100.0, 2.0, 2.0)  # 500 W for 2 s, then 100 W for 2 s
    g = gpu(trace)
    assert g.average_power_w(1.95) == pytest.approx(500.0)
    assert g.average_power_w(2.5) == pytest.approx(0.5 * 500 + 0.5 * 100)  # 5 values of each
    assert g.average_power_w(3.5) == pytest.approx(100.0)
    assert g.instant_power_w(2.5) == pytest.approx(100.0)
    a100 = gpu(trace, SensorModel.a100())  # GA100's GetPowerUsage is not a 1 s mean
    assert a100.average_power_w(2.5) == pytest.approx(100.0)


def test_gain_scales_every_reading_and_the_counter_but_not_the_truth() -> None:
    g = gpu(ConstantTrace(400.0), SensorModel.h100().with_gain(1.064))
    assert g.instant_power_w(5.0) == pytest.approx(425.6)
    assert g.average_power_w(5.0) == pytest.approx(425.6)
    assert g.energy_mj(10.0) == pytest.approx(1.064 * 4000e3)
    assert g.true_energy_j(0.0, 10.0) == pytest.approx(4000.0)


def test_counter_is_monotonic_and_steps_every_100_ms() -> None:
    g = gpu(TrainingTrace.generate(seed=2, duration_s=30.0))
    times = [k * 0.005 for k in range(2000)]  # 10 s read every 5 ms
    values = [g.energy_mj(t) for t in times]
    assert all(b >= a for a, b in zip(values, values[1:], strict=False))
    steps = [t for t, a, b in zip(times[1:], values, values[1:], strict=False) if b != a]
    assert steps == pytest.approx([k * 0.1 for k in range(1, 100)])
    assert g.energy_mj(0.299) == pytest.approx(1e3 * g.true_energy_j(0.0, 0.2))
    assert g.energy_mj(9.95) == pytest.approx(1e3 * g.true_energy_j(0.0, 9.9))


def test_counter_restarts_from_zero_at_each_reset() -> None:
    g = gpu(ConstantTrace(100.0), resets_at_s=(5.05, 12.0))
    assert g.energy_mj(5.0) == pytest.approx(500e3)
    assert g.energy_mj(5.07) == 0.0  # reset, not updated since
    assert g.energy_mj(5.1) == pytest.approx(100 * 0.05 * 1e3)
    assert g.energy_mj(11.99) == pytest.approx(100 * (11.9 - 5.05) * 1e3)
    assert g.energy_mj(13.0) == pytest.approx(100e3)


def test_counter_true_and_observed_differ_on_phase_locked_load() -> None:
    trace = TrainingTrace.phase_locked(period_s=0.1, compute_w=600.0, comm_w=200.0, comm_fraction=0.5)
    true = gpu(trace, SensorModel.h100().with_counter("true"))
    observed = gpu(trace, SensorModel.h100().with_counter("observed"))
    assert true.energy_mj(60.0) / 1e3 == pytest.approx(true.true_energy_j(0.0, 60.0))  # 400 W
    assert observed.energy_mj(60.0) / 1e3 == pytest.approx(200.0 * 60.0)  # sees only the dip
    assert observed.energy_mj(61.0) > observed.energy_mj(60.0)  # incremental sum moves on
    assert observed.energy_mj(30.0) / 1e3 == pytest.approx(200.0 * 30.0)  # going back recomputes


def test_counter_true_and_observed_agree_on_constant_power() -> None:
    true = gpu(ConstantTrace(350.0), SensorModel.h100())
    observed = gpu(ConstantTrace(350.0), SensorModel.h100().with_counter("observed"))
    for t in (0.05, 1.0, 33.33):
        assert observed.energy_mj(t) == pytest.approx(true.energy_mj(t))


def test_observed_counter_restarts_at_reset() -> None:
    g = gpu(ConstantTrace(100.0), SensorModel.h100().with_counter("observed"), resets_at_s=(2.0,))
    assert g.energy_mj(1.95) == pytest.approx(190e3)
    assert g.energy_mj(3.0) == pytest.approx(100e3)


def test_trace_starts_at_t0() -> None:
    g = gpu(SquareWave(500.0, 100.0, 1.0, 1.0), t0_s=1000.0)
    assert g.true_power_w(1000.5) == 500.0
    assert g.energy_mj(999.0) == 0.0
    assert g.energy_mj(1001.0) == pytest.approx(500e3)


def test_ideal_model_reads_true_power() -> None:
    trace = TrainingTrace.generate(seed=4, duration_s=60.0)
    g = gpu(trace, SensorModel.ideal())
    assert g.energy_mj(30.0) / 1e3 == pytest.approx(trace.energy_j(0.0, 30.0))
    assert g.instant_power_w(12.3456) == pytest.approx(trace.mean_power_w(12.345, 12.3456 // 0.001 * 0.001))


def test_lost_gpu_raises_device_lost_but_keeps_its_truth() -> None:
    g = gpu(ConstantTrace(100.0), lost_at_s=5.0)
    assert g.energy_mj(4.9) > 0
    for read in (g.energy_mj, g.instant_power_w, g.average_power_w, g.utilisation_pct, g.temperature_c):
        with pytest.raises(DeviceLost, match="GPU-sim-0000"):
            read(5.0)
    assert g.true_energy_j(0.0, 10.0) == pytest.approx(1000.0)


def test_utilisation_follows_true_power_between_idle_and_limit() -> None:
    g = gpu(SquareWave(700.0, 70.0, 1.0, 1.0), power_limit_w=700.0, idle_w=70.0)
    assert g.utilisation_pct(0.5) == 100
    assert g.utilisation_pct(1.5) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"publish_period_s": 0.0},
        {"observed_window_s": 0.2},
        {"average_window_s": 0.01},
        {"gain": 0.0},
        {"counter_update_s": -1.0},
        {"counter_integrates": "maybe"},
    ],
)
def test_sensor_model_validates(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        SensorModel(**kwargs)  # type: ignore[arg-type]


def test_simulated_sensor_lists_and_reads_devices_labelled_simulated() -> None:
    sensor = SimulatedSensor(simulated_gpus(3, seed=5))
    assert isinstance(sensor, Sensor)
    devices = sensor.devices()
    assert [d.uuid for d in devices] == ["GPU-sim-0000", "GPU-sim-0001", "GPU-sim-0002"]
    assert all(d.kind == Kind.GPU and d.source == Source.SIMULATED and d.has_counter for d in devices)
    assert [d.index for d in devices] == [0, 1, 2]
    assert devices[0].note.startswith("simulated: 25 ms of every 100 ms")
    reading = sensor.read(devices[1], 12.34)
    g = sensor.gpus[1]
    assert reading.device == "GPU-sim-0001"
    assert reading.t_s == 12.34
    assert reading.energy_mj == g.energy_mj(12.34)
    assert reading.power_w == g.instant_power_w(12.34)
    assert reading.memory_used_bytes == g.memory_used_bytes
    assert reading.temperature_c is not None and 30 <= reading.temperature_c <= 100
    sensor.close()


def test_simulated_gpus_are_seeded_and_distinct() -> None:
    a = simulated_gpus(2, seed=1)
    b = simulated_gpus(2, seed=1)
    assert a[0].true_energy_j(0, 100) == b[0].true_energy_j(0, 100)
    assert a[0].true_energy_j(0, 100) != a[1].true_energy_j(0, 100)
    custom = simulated_gpus(2, lambda i: ConstantTrace(100.0 * (i + 1)))
    assert custom[1].true_energy_j(0, 1) == pytest.approx(200.0)


def test_simulated_sensor_rejects_duplicates_and_strangers() -> None:
    g = gpu(ConstantTrace(1.0))
    with pytest.raises(ConfigError, match="distinct"):
        SimulatedSensor([g, g])
    stranger = DeviceInfo("GPU-x", "x", Kind.GPU, Source.SIMULATED, True)
    with pytest.raises(SensorError, match="GPU-x"):
        SimulatedSensor([g]).read(stranger, 0.0)
