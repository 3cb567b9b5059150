"""Each vendor's stand-in, from the agent through the ledger to a Table-19 row; a mixed node counted once."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.waiting import wait_until
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, LedgerSink, RunSpec, make_engine
from wattlog.accounting.publishing.render import TableRow
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.clock import SystemClock
from wattlog.telemetry.agent import Agent
from wattlog.telemetry.agent_config import AgentConfig
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.base import Sensor
from wattlog.telemetry.sensors.fake_amdsmi import AmdFaults, FakeAmdSmi
from wattlog.telemetry.sensors.fake_pyhlml import FakeHlml
from wattlog.telemetry.sensors.fake_pynvml import FakeNvml
from wattlog.telemetry.sensors.gaudi import HlmlSensor
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import ConstantTrace
from wattlog.telemetry.types import Vendor


def _gpus(prefix: str, name: str, vendor: Vendor, watts: float) -> list[SimulatedGpu]:
    t0 = time.monotonic()
    return [
        SimulatedGpu(f"GPU-{prefix}-{i}", name, ConstantTrace(watts), t0_s=t0, vendor=vendor)
        for i in range(2)
    ]


def _amd(faults: AmdFaults | None = None) -> Sensor:
    gpus = _gpus("amd", "AMD Instinct MI300X", Vendor.AMD, 500.0)
    return AmdSmiSensor(FakeAmdSmi(gpus, SystemClock(), faults), check_s=0.2)


def _gaudi() -> Sensor:
    return HlmlSensor(FakeHlml(_gpus("gaudi", "HL-325L", Vendor.HABANA, 600.0), SystemClock()))


def _nvidia() -> Sensor:
    return NvmlSensor(FakeNvml(_gpus("nv", "NVIDIA H100 80GB HBM3", Vendor.NVIDIA, 400.0), SystemClock()))


def _row_of(tmp_path: Path, sensors: list[Sensor]) -> tuple[Ledger, TableRow, dict[str, Vendor | None]]:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))
    run = ledger.start_run("r", RunSpec(model="m", site="jupiter", host="node0"))
    config = AgentConfig(port=0, flush_s=3600.0, host="node0", lock_dir=tmp_path / "locks")
    with Agent(config, sensors=sensors, sinks=[LedgerSink(ledger, run.id)]) as agent:

        def sampled() -> bool:
            return min((e.samples for e in agent.snapshot()), default=0) >= 12

        wait_until(sampled, 10, "the sampler produced no readings")
        vendors = {d.uuid: d.vendor for d in agent.devices}
        assert agent.metrics_url is not None
        scraped = urllib.request.urlopen(agent.metrics_url, timeout=5).read().decode()
        for uuid in vendors:  # the exporter serves every device's energy counter
            assert f'device="{uuid}"' in scraped and "wattlog_energy_joules_total" in scraped
    return ledger, run_row(ledger, ledger.get_run("r"), TableOptions(catalog=site_catalog(None))), vendors


@pytest.mark.parametrize(
    ("make", "vendor", "prefix"),
    [
        (_amd, Vendor.AMD, "amd"),
        (lambda: _amd(AmdFaults(power_na=True, old_key=True)), Vendor.AMD, "amd"),
        (_gaudi, Vendor.HABANA, "gaudi"),
    ],
    ids=["amd", "amd-old-key-na-power", "gaudi"],
)
def test_each_vendors_node_reaches_the_exporter_and_the_table_with_its_energy_and_band(
    tmp_path: Path, make: Callable[[], Sensor], vendor: Vendor, prefix: str
) -> None:
    ledger, row, vendors = _row_of(tmp_path, [make()])
    assert set(vendors.values()) == {vendor}
    totals = ledger.energy_totals("r")
    assert sorted(t.device for t in totals) == [f"GPU-{prefix}-0", f"GPU-{prefix}-1"]
    assert all(t.energy_j > 0 and t.low_j < t.energy_j < t.high_j for t in totals)
    assert row.energy_j is not None and row.energy_band_j is not None
    assert row.energy_source == "simulated"


def test_a_mixed_node_accounts_each_device_once(tmp_path: Path) -> None:
    ledger, row, vendors = _row_of(tmp_path, [_nvidia(), _amd()])
    gpus = {uuid: vendor for uuid, vendor in vendors.items() if vendor is not None}
    assert gpus == {
        "GPU-nv-0": Vendor.NVIDIA,
        "GPU-nv-1": Vendor.NVIDIA,
        "GPU-amd-0": Vendor.AMD,
        "GPU-amd-1": Vendor.AMD,
    }
    devices = [t.device for t in ledger.energy_totals("r")]
    assert sorted(devices) == sorted(gpus) and len(devices) == len(set(devices))
    assert row.energy_j is not None
