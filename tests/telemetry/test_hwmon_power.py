"""Grace CPU power from ACPI power meters in a hwmon-shaped tree; the module meter is never summed."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.clock import FakeClock
from wattlog.errors import SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.hwmon_power import HwmonPowerSensor, hwmon_root
from wattlog.telemetry.sensors.nvidia import NvidiaBackend
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace

METERS = {  # oem_info -> microwatts
    "Module Power Socket 0": 900_000_000,
    "Grace Power Socket 0": 250_000_000,
    "CPU Power Socket 0": 180_000_000,
    "SysIO Power Socket 0": 30_000_000,
    "CPU Power Socket 1": 170_000_000,  # a socket no Grace meter names: its CPU rail
}


def grace_tree(root: Path) -> Path:
    meter = root / "hwmon3"
    (meter / "device").mkdir(parents=True)
    (meter / "name").write_text("power_meter\n")
    for i, (info, microwatts) in enumerate(METERS.items(), start=1):
        (meter / "device" / f"power{i}_oem_info").write_text(info + "\n")
        (meter / "device" / f"power{i}_average").write_text(f"{microwatts}\n")
    other = root / "hwmon0"
    other.mkdir()
    (other / "name").write_text("coretemp\n")
    return root


def test_each_socket_is_one_cpu_device_from_its_grace_meter_and_the_module_is_skipped(tmp_path: Path) -> None:
    sensor = HwmonPowerSensor(grace_tree(tmp_path))
    devices = sensor.devices()
    assert [(d.name, d.kind, d.source, d.has_counter) for d in devices] == [
        ("Grace socket 0", Kind.CPU, Source.SAMPLED, False),
        ("Grace socket 1", Kind.CPU, Source.SAMPLED, False),
    ]
    assert [sensor.read(d, 1.0).power_w for d in devices] == [250.0, 170.0]  # never Grace + CPU, never module
    assert "Grace Power Socket 0" in devices[0].note and "CPU rail only" in devices[1].note
    assert any(line.startswith("Module Power Socket 0") and "not summed" in line for line in sensor.skipped)


def test_a_machine_without_power_meters_has_none(tmp_path: Path) -> None:
    sensor = HwmonPowerSensor(tmp_path / "none")
    assert not sensor.is_available()
    with pytest.raises(SensorUnavailable):
        sensor.devices()


def test_discovery_measures_grace_cpus_rather_than_estimating_them(tmp_path: Path) -> None:
    found = discover(
        DiscoveryConfig(
            backends=[],
            powercap_root=tmp_path / "no-rapl",
            hwmon_root=grace_tree(tmp_path / "hwmon"),
            environ={},
        )
    )
    kinds = {device.kind: device.source for _, device in found.devices}
    assert kinds == {Kind.CPU: Source.SAMPLED, Kind.DRAM: Source.ESTIMATED}
    assert any(note.startswith("Grace: Module Power Socket 0") for note in found.notes)
    found.close()


@pytest.mark.parametrize("meters", [True, False], ids=["grace-meters", "no-meters"])
def test_a_superchip_modules_counter_already_holds_its_grace_cpu_so_it_is_not_added(
    tmp_path: Path, meters: bool
) -> None:
    gpus = [SimulatedGpu("GPU-gh-0", "NVIDIA GH200 480GB", ConstantTrace(600.0))]
    found = discover(
        DiscoveryConfig(
            nvml=FakeNvml(gpus, FakeClock()),
            backends=[NvidiaBackend()],
            powercap_root=tmp_path / "no-rapl",
            hwmon_root=grace_tree(tmp_path / "hwmon") if meters else tmp_path / "none",
            environ={},
        ),
    )
    [gpu] = [d for _, d in found.devices if d.kind is Kind.GPU]
    assert gpu.profile is not None and gpu.profile.scope == "module"
    assert Kind.CPU not in {d.kind for _, d in found.devices}  # not Grace, not the estimate either
    assert any("inside the module energy of NVIDIA GH200" in note for note in found.notes)
    found.close()


def test_beside_a_module_scope_counter_neither_cpu_nor_dram_is_estimated(tmp_path: Path) -> None:
    # GH200: the module's counter covers GPU + Grace CPU + memory; a DRAM estimate (~1.5 W) was added too
    gpus = [SimulatedGpu("GPU-gh-0", "NVIDIA GH200 480GB", ConstantTrace(600.0))]
    found = discover(
        DiscoveryConfig(
            nvml=FakeNvml(gpus, FakeClock()),
            backends=[NvidiaBackend()],
            powercap_root=tmp_path / "no-rapl",
            hwmon_root=tmp_path / "none",
            environ={},
        ),
    )
    assert {d.kind for _, d in found.devices} == {Kind.GPU}  # no estimate at all
    assert any("cpu/dram power is inside the module energy" in note for note in found.notes)
    found.close()


def test_a_meter_with_only_power_input_is_read_and_says_so(tmp_path: Path) -> None:
    meter = tmp_path / "hwmon1"
    meter.mkdir(parents=True)
    (meter / "name").write_text("power_meter\n")
    (meter / "power1_oem_info").write_text("Grace Power Socket 0\n")
    (meter / "power1_input").write_text("210500000\n")  # microwatts, no power1_average
    sensor = HwmonPowerSensor(tmp_path)
    [d] = sensor.devices()
    assert sensor.read(d, 1.0).power_w == pytest.approx(210.5)
    assert "power1_input" in d.note and "instantaneous" in d.note


def test_the_hwmon_root_comes_from_the_environment_or_the_option(tmp_path: Path) -> None:
    tree = grace_tree(tmp_path / "hwmon")
    config = DiscoveryConfig(
        backends=[], powercap_root=tmp_path / "no-rapl", environ={"WATTLOG_HWMON_ROOT": str(tree)}
    )
    found = discover(config)
    assert [d.name for _, d in found.devices if d.kind is Kind.CPU] == ["Grace socket 0", "Grace socket 1"]
    found.close()
    assert hwmon_root({"WATTLOG_HWMON_ROOT": "/x"}, tmp_path) == tmp_path  # the CLI option wins
    assert hwmon_root({}) == Path("/sys/class/hwmon")


def test_wattlog_sensors_takes_hwmon_root(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from wattlog.cli import app

    tree = grace_tree(tmp_path / "hwmon")
    args = ["sensors", "--powercap-root", str(tmp_path / "no-rapl"), "--hwmon-root", str(tree)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "hwmon:grace-power-socket-0" in result.output


@pytest.mark.parametrize("command", ["agent", "node"])
def test_the_agent_commands_take_hwmon_root_into_their_config(command: str) -> None:
    import inspect

    from wattlog.accounting.commands import node_cli
    from wattlog.telemetry.agent import AgentConfig  # imported inside the commands (fast --help)

    assert "hwmon_root" in inspect.signature(getattr(node_cli, command)).parameters
    assert "hwmon_root" in {f.name for f in __import__("dataclasses").fields(AgentConfig)}
