"""The soak's slow services and its verdict (bench/soak_services.py, bench/soak_report.py).

The soak (``python -m bench.soak``) is not run here (minutes); its parts are: the BMC
emulator is a node meter `discover` would read, a late one is a failed read within the
deadline; the intensity provider answers the UK grid API, a late one leaves the fetch at a
run's close within its budget; and the verdict fails on a lost joule, a slow BMC stretch
without a stored gap, a close past its budget, or a check that is not clean.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.soak_report import BmcStretch, Faults, report
from bench.soak_services import SITES, BmcEmulator, IntensityProvider
from tests.waiting import wait_until
from wattlog.accounting.carbon.intensity.live.at_close import fetch_at_close
from wattlog.accounting.carbon.intensity.live.providers import ProviderContext
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, Status, make_engine
from wattlog.errors import SensorError
from wattlog.records import EnergyInterval, Gap, Kind, Source
from wattlog.telemetry.sensors.bmc import BmcConfig
from wattlog.telemetry.sensors.offthread import OffThreadSensor
from wattlog.telemetry.sensors.redfish_node import RedfishNodeSensor

T0 = 1_800_000_000.0
BMC = "redfish:127.0.0.1:1/redfish/v1/Chassis/1U"
CLOSE_LINE = "soak: the fetch at close took {took} s: failed: run soak: grid intensity not fetched at close\n"


@pytest.fixture
def provider() -> Iterator[IntensityProvider]:
    served = IntensityProvider()
    yield served
    served.close()


def test_a_late_bmc_is_a_failed_read_of_a_sampled_node_meter_within_the_deadline() -> None:
    bmc = BmcEmulator()
    sensor = OffThreadSensor(
        RedfishNodeSensor(BmcConfig(bmc.url, "soak", "-", timeout_s=0.5)), deadline_s=0.8
    )
    try:
        [node] = sensor.devices()
        assert (node.kind, node.source, node.has_counter) == (Kind.NODE, Source.SAMPLED, False)
        bmc.slow_s = 1.5  # past the deadline (0.8 s)
        calls: list[float] = []

        def failed() -> bool:
            started = time.monotonic()
            try:
                sensor.read(node, started)
            except SensorError:
                return True
            finally:
                calls.append(time.monotonic() - started)
            return False

        wait_until(failed, 5.0, "a BMC answering 1.5 s late was never a failed read", 0.05)
        assert max(calls) < 0.5  # no read waits on the BMC: the sampler is never held
    finally:
        bmc.slow_s = 0.0
        sensor.close()
        bmc.close()


def test_a_late_provider_leaves_the_close_within_its_budget(
    tmp_path: Path, provider: IntensityProvider
) -> None:
    sites = tmp_path / "sites.toml"
    sites.write_text(SITES, encoding="utf-8")
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("soak", RunSpec(site="soaksite"), start_s=T0)
    ledger.end_run(run.id, Status.FINISHED, end_s=T0 + 3600)
    context = ProviderContext(environ={}, base_url=provider.url, sleep=lambda s: None, retries=0)
    done = fetch_at_close(ledger, "soak", site_catalog(sites), context, budget_s=1.0)
    assert done is not None and done.ok, done  # answering: the run's hours stored
    provider.slow_s = 5.0
    started = time.monotonic()
    done = fetch_at_close(ledger, "soak", site_catalog(sites), context, budget_s=1.0)
    assert done is not None and not done.ok and time.monotonic() - started < 3.0


@dataclass
class FakeNode:
    host: str
    log: Path
    counters: dict[str, float] = field(default_factory=dict)
    exit_code: int | None = 0


def _ledger(tmp_path: Path, held: bool) -> str:
    url = f"sqlite:///{tmp_path / 'soak.db'}"
    ledger = Ledger(make_engine(url))
    run = ledger.start_run("soak", start_s=T0)
    rows = [
        EnergyInterval.of("soak0", device, kind, Source.SAMPLED, T0, T0 + 60, j, j * 0.9, j * 1.1)
        for device, kind, j in (("GPU-0", Kind.GPU, 600.0), ("cpu", Kind.CPU, 60.0), (BMC, Kind.NODE, 900.0))
    ]
    gaps = [Gap("soak0", BMC, T0 + 20, T0 + 30, "read failed")]
    if held:  # the GPU's sampling held over the BMC's stretch
        gaps.append(Gap("soak0", "GPU-0", T0 + 20, T0 + 30, "read failed"))
    ledger.record_intervals(run.id, rows, gaps)
    ledger.end_run(run.id, Status.FINISHED, end_s=T0 + 60)
    return url


@pytest.mark.parametrize(
    ("fault", "exit_code", "line"),
    [
        ("none", 0, "its other devices sampled throughout (no gap)"),
        ("a joule lost", 1, "joules lost: 1.000 J"),
        ("no gap over the stretch", 1, "FAIL no gap of its BMC device stored over the stretch"),
        ("another device's gap", 1, "FAIL gaps of its other devices over it: GPU-0"),
        ("close past its budget", 1, "fetch at close took 25.0 s, FAIL past its 10 s budget"),
        ("check not clean", 1, "wattlog check: exit 1"),
    ],
)
def test_the_verdict_fails_on_any_loss_or_wrong_trace(
    tmp_path: Path,
    provider: IntensityProvider,
    capsys: pytest.CaptureFixture[str],
    fault: str,
    exit_code: int,
    line: str,
) -> None:
    url = _ledger(tmp_path, held=fault == "another device's gap")
    log = tmp_path / "soak0.log"
    log.write_text(CLOSE_LINE.format(took=25.0 if fault == "close past its budget" else 10.0))
    gpu_j = 601.0 if fault == "a joule lost" else 600.0
    node = FakeNode("soak0", log, {"GPU-0": gpu_j, "cpu": 60.0, BMC: 900.0})
    stretch = (T0 + 40, T0 + 50) if fault == "no gap over the stretch" else (T0 + 22, T0 + 28)
    faults = Faults(provider, ["bmc slow", "provider slow"], [BmcStretch("soak0", *stretch)])
    assert report(url, [node], faults, check=lambda _: int(fault == "check not clean")) == exit_code
    out = capsys.readouterr().out
    assert line in out
    assert "faults injected and survived: 2 (bmc slow 1, provider slow 1)" in out
    assert "of which node meters over Redfish (1): measured 900.000 J, stored 900.000 J" in out
