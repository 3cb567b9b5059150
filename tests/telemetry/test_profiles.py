"""Sensor profiles: the band reads the device's, NVIDIA's numbers are unchanged, every number is sourced."""

from __future__ import annotations

import dataclasses
import math

import pytest

from wattlog.clock import FakeClock
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.sensors.profiles import load_table, unknown_board
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.telemetry.types import DeviceInfo, SensorProfile, Vendor
from wattlog.telemetry.uncertainty import BandInputs, BandModel

NVIDIA = load_table("nvidia.toml")
PLAIN_GPU = DeviceInfo("g", "g", Kind.GPU, Source.COUNTER, True, power_limit_w=700.0)


def _inputs(energy_j: float = 1000.0) -> BandInputs:
    return BandInputs(energy_j, energy_j, True, 10.0, 0.0, 700.0, cv=0.2, publications=500)


def _gpu(profile: SensorProfile, vendor: Vendor) -> DeviceInfo:
    return dataclasses.replace(PLAIN_GPU, vendor=vendor, profile=profile)


def test_a_gpu_of_another_vendor_gets_its_profiles_band_not_nvidias() -> None:
    model = BandModel(floor_rel=0.0)
    wide = dataclasses.replace(unknown_board(), observed_fraction=1.0)
    amd = _gpu(wide, Vendor.AMD)
    low, high = model.band(amd, BandInputs(1000.0, 1000.0, True, 10.0, 0.0, 700.0))
    assert low == pytest.approx(1000.0 / (1 + wide.gain_high))
    assert high == pytest.approx(1000.0 / (1 + wide.gain_low))
    nvidia_low, nvidia_high = model.band(PLAIN_GPU, BandInputs(1000.0, 1000.0, True, 10.0, 0.0, 700.0))
    assert nvidia_high == pytest.approx(1000.0 / 0.905) and high > nvidia_high and low < nvidia_low
    # a sensor that observes all of the time has no partial-observation term at all
    assert model.fraction_seen(amd) == 1.0 and model.fraction_seen(PLAIN_GPU) == 0.25


def test_an_unknown_board_is_wide_labelled_and_never_narrower_than_nvidias() -> None:
    unknown = unknown_board()
    assert not unknown.known and "unknown board" in unknown.label
    default = NVIDIA.default
    assert unknown.gain_low < default.gain_low and unknown.gain_high > default.gain_high
    assert unknown.observed_fraction <= default.observed_fraction
    low, high = BandModel().band(_gpu(unknown, Vendor.INTEL), _inputs())
    nvidia_low, nvidia_high = BandModel().band(PLAIN_GPU, _inputs())
    assert low < nvidia_low and high > nvidia_high


@pytest.mark.parametrize("board", ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB"])
def test_every_nvidia_board_gets_the_band_nvidia_gpus_always_had(board: str) -> None:
    profile = NVIDIA.for_board(board)
    device = _gpu(profile, Vendor.NVIDIA)
    assert BandModel().band_parts(device, _inputs()) == BandModel().band_parts(PLAIN_GPU, _inputs())
    assert (profile.gain_low, profile.gain_high, profile.observed_fraction, profile.publication_period_s) == (
        -0.095,
        0.064,
        0.25,
        0.1,
    )


def test_board_families_are_matched_by_name() -> None:
    assert NVIDIA.for_board("NVIDIA H100 80GB HBM3").family == "nvidia-hopper"
    assert NVIDIA.for_board("NVIDIA A100-SXM4-80GB").family == "nvidia-ga100"
    assert NVIDIA.for_board("NVIDIA A100-SXM4-80GB").average_window_s is None  # GA100: not averaged
    assert NVIDIA.for_board("NVIDIA GeForce RTX 4090").family == "nvidia"


@pytest.mark.parametrize("filename", ["nvidia.toml", "unknown_board.toml"])
def test_every_number_of_every_profile_has_a_source(filename: str) -> None:
    table = load_table(filename)
    for profile in [table.default, *(p for _, p in table.families)]:
        for name in ("gain_low", "gain_high", "observed_fraction", "publication_period_s"):
            assert profile.source(name), f"{profile.family}.{name} has no source"
            assert math.isfinite(getattr(profile, name))


def test_the_nvml_backend_gives_each_gpu_its_vendor_and_profile() -> None:
    sensor = NvmlSensor(nvml=FakeNvml(simulated_gpus(2), FakeClock()))
    try:
        devices = sensor.devices()
    finally:
        sensor.close()
    assert devices and all(d.vendor is Vendor.NVIDIA for d in devices)
    assert all(d.profile is not None and d.profile.known for d in devices)


def test_a_phase_lock_note_names_the_devices_sensor_not_nvml_for_every_vendor() -> None:
    from wattlog.telemetry.uncertainty import PhaseLock

    lock = PhaseLock(0.1, 0.3, "sampled +30% vs counter")
    assert "amdsmi readings may be off" in lock.note(0.1, "amdsmi") and "NVML" not in lock.note(0.1, "amdsmi")
    assert "NVML readings" in lock.note(0.1, NVIDIA.for_board("H100").sensor)
    assert unknown_board().sensor == "the driver"


def test_simulated_gpus_carry_their_vendor_and_its_board_profile() -> None:
    [device] = SimulatedSensor(simulated_gpus(1)).devices()
    assert device.vendor is Vendor.NVIDIA
    assert device.profile == NVIDIA.for_board("NVIDIA H100 80GB HBM3")
    # the band is the one simulated GPUs always had (BandModel's NVIDIA default)
    assert BandModel().band_parts(device, _inputs()) == BandModel().band_parts(PLAIN_GPU, _inputs())
