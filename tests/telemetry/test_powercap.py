from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from wattlog.errors import SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.powercap import PowercapSensor

DATA = Path(__file__).resolve().parents[1] / "data" / "powercap"


@pytest.fixture
def intel(tmp_path: Path) -> Path:
    """A writable copy of the two-socket Intel tree."""
    return Path(shutil.copytree(DATA / "intel", tmp_path / "powercap"))


def test_constructor_does_no_io(tmp_path: Path) -> None:
    sensor = PowercapSensor(root=tmp_path / "missing")  # would raise if it looked
    assert isinstance(sensor, Sensor)
    assert not sensor.is_available()


def test_intel_tree_gives_packages_and_dram_only() -> None:
    devices = PowercapSensor(root=DATA / "intel").devices()
    assert [(d.uuid, d.name, d.kind) for d in devices] == [
        ("rapl:intel-rapl:0", "package-0", Kind.CPU),
        ("rapl:intel-rapl:0:2", "package-0/dram", Kind.DRAM),
        ("rapl:intel-rapl:1", "package-1", Kind.CPU),
        ("rapl:intel-rapl:1:1", "package-1/dram", Kind.DRAM),
    ]  # core, uncore, psys and the MMIO duplicate of package-0 are not counted
    assert all(d.has_counter and d.source is Source.COUNTER for d in devices)
    assert devices[0].counter_range_mj == pytest.approx(262_143_328.850)
    assert devices[1].counter_range_mj == pytest.approx(65_712_999.613)
    assert devices[0].power_limit_w == pytest.approx(165.0)
    assert "core/uncore" in devices[0].note


def test_amd_tree_has_a_package_and_no_dram() -> None:
    sensor = PowercapSensor(root=DATA / "amd")
    assert sensor.is_available()
    devices = sensor.devices()
    assert [(d.uuid, d.kind) for d in devices] == [("rapl:intel-rapl:0", Kind.CPU)]
    assert devices[0].power_limit_w is None


def test_read_reports_the_raw_counter_in_millijoules(intel: Path) -> None:
    sensor = PowercapSensor(root=intel)
    package = sensor.devices()[0]
    reading = sensor.read(package, t_s=12.5)
    assert (reading.device, reading.t_s, reading.energy_mj) == ("rapl:intel-rapl:0", 12.5, 123_456.789)
    assert reading.power_w is None


def test_read_does_not_unwrap_a_counter_that_wrapped(intel: Path) -> None:
    sensor = PowercapSensor(root=intel)
    dram = sensor.devices()[1]
    (intel / "intel-rapl:0:2" / "energy_uj").write_text("65712999000\n")
    assert sensor.read(dram, 0.0).energy_mj == pytest.approx(65_712_999.0)
    (intel / "intel-rapl:0:2" / "energy_uj").write_text("1000\n")
    # the integrator, told counter_range_mj, turns this backwards step into a wrap
    assert sensor.read(dram, 1.0).energy_mj == pytest.approx(1.0)


def test_mmio_zone_is_used_when_the_msr_zone_is_missing(intel: Path) -> None:
    shutil.rmtree(intel / "intel-rapl:0")
    uuids = [d.uuid for d in PowercapSensor(root=intel).devices()]
    assert "rapl:intel-rapl-mmio:0" in uuids
    assert "rapl:intel-rapl:0:2" in uuids


def test_missing_tree_is_unavailable_with_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(SensorUnavailable, match="no RAPL powercap tree at"):
        PowercapSensor(root=tmp_path / "nothing").devices()


def test_tree_without_package_zones_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "intel-rapl:0").mkdir()
    (tmp_path / "intel-rapl:0" / "name").write_text("psys\n")
    with pytest.raises(SensorUnavailable, match="no RAPL package or dram zone"):
        PowercapSensor(root=tmp_path).devices()


def _deny_energy(path: Path) -> str:
    if path.name == "energy_uj":
        raise PermissionError(13, "Permission denied", str(path))
    return path.read_text()


def test_permission_denied_names_the_fix() -> None:
    sensor = PowercapSensor(root=DATA / "intel", read_text=_deny_energy)
    with pytest.raises(SensorUnavailable, match="CVE-2020-8694") as caught:
        sensor.devices()
    assert "chmod o+r" in str(caught.value) and "root" in str(caught.value)


def test_permission_lost_while_reading_is_unavailable_too() -> None:
    device = PowercapSensor(root=DATA / "intel").devices()[0]
    with pytest.raises(SensorUnavailable, match="chmod o\\+r"):
        PowercapSensor(root=DATA / "intel", read_text=_deny_energy).read(device, 0.0)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file anyway")
def test_real_unreadable_file_is_reported(intel: Path) -> None:
    (intel / "intel-rapl:0" / "energy_uj").chmod(0)
    with pytest.raises(SensorUnavailable, match="permission denied"):
        PowercapSensor(root=intel).devices()


def test_garbled_counter_is_a_sensor_error(intel: Path) -> None:
    sensor = PowercapSensor(root=intel)
    package = sensor.devices()[0]
    (intel / "intel-rapl:0" / "energy_uj").write_text("")
    with pytest.raises(SensorError, match="cannot read"):
        sensor.read(package, 0.0)
