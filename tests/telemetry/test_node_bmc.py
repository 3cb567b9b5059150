"""The node boundary over IPMI DCMI (through an ipmitool stand-in), the BMC settings and profiles."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, SensorError, SensorUnavailable
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.bmc import BmcConfig, check_config, iso_duration_s, node_profile
from wattlog.telemetry.sensors.dcmi import DcmiNodeSensor
from wattlog.telemetry.sensors.discovery import DiscoveryConfig, discover
from wattlog.telemetry.sensors.estimate import EstimateConfig

FAKE = Path(__file__).with_name("fake_ipmitool.py")


@pytest.fixture
def ipmitool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable ipmitool stand-in that logs its calls to tmp_path/calls.jsonl."""
    script = tmp_path / "ipmitool"
    script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_DCMI_LOG", str(tmp_path / "calls.jsonl"))
    return script


def test_dcmi_reads_the_average_over_the_bmc_sampling_period(ipmitool: Path) -> None:
    sensor = DcmiNodeSensor(BmcConfig(dcmi="local", ipmitool=str(ipmitool)))
    [node] = sensor.devices()
    assert (node.kind, node.source, node.has_counter) == (Kind.NODE, Source.SAMPLED, False)
    assert "5 s sampling period" in node.note
    assert node.profile is not None and node.profile.publication_period_s == 5.0
    assert node.profile.scope == "node" and dict(node.profile.sources)["publication_period_s"].startswith(
        "the BMC"
    )
    reading = sensor.read(node, 100.0)
    assert (reading.power_w, reading.energy_mj, reading.next_read_s) == (1390.0, None, 105.0)


def test_dcmi_password_comes_from_the_environment_never_the_command_line(
    ipmitool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IPMI_PASSWORD", "s3cret-pw")
    environ = {
        "WATTLOG_DCMI": "bmc-7.example",
        "WATTLOG_IPMI_USER": "admin",
        "WATTLOG_IPMITOOL": str(ipmitool),
    }
    config = BmcConfig.from_environ(environ)
    sensor = DcmiNodeSensor(config)
    [node] = sensor.devices()
    sensor.read(node, 1.0)
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert calls[0]["argv"] == [
        "-I",
        "lanplus",
        "-H",
        "bmc-7.example",
        "-E",
        "-U",
        "admin",
        "dcmi",
        "power",
        "reading",
    ]
    assert all(call["password_set"] and "s3cret-pw" not in " ".join(call["argv"]) for call in calls)
    assert "s3cret-pw" not in node.note and "s3cret-pw" not in repr(config)


def test_redfish_password_is_not_in_the_config_repr() -> None:
    config = BmcConfig.from_environ(
        {"WATTLOG_REDFISH_URL": "https://bmc/", "WATTLOG_REDFISH_PASSWORD": "pw-9x"}
    )
    assert config.redfish_url == "https://bmc" and "pw-9x" not in repr(config)
    with pytest.raises(ConfigError, match="http"):
        check_config(BmcConfig(redfish_url="bmc.example"))


@pytest.mark.parametrize(
    ("env", "error"),
    [({"FAKE_DCMI_STATE": "deactivated"}, "deactivated"), ({"FAKE_DCMI_FAIL": "1"}, "RMCP")],
)
def test_dcmi_that_cannot_read_power_is_unavailable_with_the_reason(
    ipmitool: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], error: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SensorUnavailable, match=error):
        DcmiNodeSensor(BmcConfig(dcmi="local", ipmitool=str(ipmitool))).devices()


def test_dcmi_read_failure_mid_run_is_a_sensor_error(ipmitool: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sensor = DcmiNodeSensor(BmcConfig(dcmi="local", ipmitool=str(ipmitool)))
    [node] = sensor.devices()
    monkeypatch.setenv("FAKE_DCMI_FAIL", "1")
    with pytest.raises(SensorError, match="exited 1"):
        sensor.read(node, 2.0)


def test_missing_ipmitool_is_a_note_not_a_traceback(tmp_path: Path) -> None:
    environ = {"WATTLOG_DCMI": "local", "WATTLOG_IPMITOOL": str(tmp_path / "no-ipmitool")}
    found = discover(_host_only(tmp_path, environ))
    assert not [d for _, d in found.devices if d.kind is Kind.NODE]
    assert any(note.startswith("DCMI: DCMI at local") for note in found.notes)


def test_discovery_adds_the_node_boundary_from_the_environment(ipmitool: Path, tmp_path: Path) -> None:
    found = discover(_host_only(tmp_path, {"WATTLOG_DCMI": "local", "WATTLOG_IPMITOOL": str(ipmitool)}))
    assert [d.uuid for _, d in found.devices if d.kind is Kind.NODE] == ["dcmi:local"]
    nothing_set = discover(_host_only(tmp_path, {}))
    assert not [d for _, d in nothing_set.devices if d.kind is Kind.NODE]


def test_profiles_take_what_the_bmc_says_of_itself() -> None:
    wide = node_profile("Redfish")
    assert (wide.gain_low, wide.gain_high, wide.publication_period_s) == (-0.10, 0.10, 5.0)
    assert dict(wide.sources)["gain_low"].startswith("assumed")
    stated = node_profile("Redfish", accuracy_pct=2.0, period_s=1.0)
    assert (stated.gain_low, stated.gain_high, stated.publication_period_s) == (-0.02, 0.02, 1.0)
    assert node_profile("DCMI").observed_fraction == 1.0


@pytest.mark.parametrize(
    ("text", "seconds"), [("PT1S", 1.0), ("PT0.5S", 0.5), ("P0DT0H1M5S", 65.0), ("", None), ("5s", None)]
)
def test_iso_durations(text: str, seconds: float | None) -> None:
    assert iso_duration_s(text) == seconds


def _host_only(tmp_path: Path, environ: dict[str, str]) -> DiscoveryConfig:
    """Discovery with no GPU backend, no RAPL or hwmon tree and no estimate: only the BMC."""
    return DiscoveryConfig(
        backends=[],
        environ=environ,
        powercap_root=tmp_path / "none",
        hwmon_root=tmp_path / "none",
        estimate=EstimateConfig(enabled=False),
    )


def test_the_node_power_integrates_with_its_own_band(ipmitool: Path, fake_clock: FakeClock) -> None:
    sensor = DcmiNodeSensor(BmcConfig(dcmi="local", ipmitool=str(ipmitool)))
    [node] = sensor.devices()
    integrator = Integrator([node], host="h", clock=fake_clock)
    for t_s in (0.0, 5.0, 10.0, 15.0):  # at the BMC's own 5 s period
        integrator.add(sensor.read(node, t_s))
    [energy] = integrator.snapshot()
    assert energy.energy_j == pytest.approx(1390.0 * 15)
    # node.toml's +-10 % gain (a reading 10 % high: truth is reading / 1.1), no sampling error (averaged)
    assert energy.low_j == pytest.approx(1390.0 * 15 / 1.1)
    assert energy.high_j == pytest.approx(1390.0 * 15 / 0.9)
    assert energy.gap_count == 0  # reads 5 s apart, at the BMC's period, are no gaps
