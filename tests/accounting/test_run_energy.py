"""A run's IT energy from ledger rows: sums, node meters never double-counted, GPU and rest apart."""

from __future__ import annotations

import pytest

from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.prometheus_energy import PromEnergy
from wattlog.accounting.run_energy import energy_from_devices, ledger_energy
from wattlog.accounting.units import j_to_mwh
from wattlog.records import EnergyInterval, Kind, Source

MJ = 1e6


def test_components_add_up_and_gpu_is_shown_apart() -> None:
    energy = energy_from_devices(
        [
            PromEnergy.of("n0", "gpu0", "gpu", "counter", 100 * MJ, 95 * MJ, 105 * MJ),
            PromEnergy.of("n0", "gpu1", "gpu", "counter", 200 * MJ, 190 * MJ, 210 * MJ),
            PromEnergy.of("n0", "cpu", "cpu", "estimated", 50 * MJ, 30 * MJ, 70 * MJ),
        ]
    )
    assert energy is not None
    assert energy.it_mwh == pytest.approx(j_to_mwh(350 * MJ))
    assert (energy.gpu_mwh, energy.host_mwh) == pytest.approx((j_to_mwh(300 * MJ), j_to_mwh(50 * MJ)))
    assert energy.source == "counter+estimated"
    assert (energy.band_mwh.lo, energy.band_mwh.hi) == pytest.approx((j_to_mwh(315 * MJ), j_to_mwh(385 * MJ)))


def test_a_node_meter_replaces_its_hosts_components() -> None:
    energy = energy_from_devices(
        [
            PromEnergy.of("n0", "meter", "node", "sampled", 500 * MJ, 490 * MJ, 510 * MJ),
            PromEnergy.of("n0", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ),
            PromEnergy.of("n1", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ),
        ]
    )
    assert energy is not None
    assert energy.it_mwh == pytest.approx(j_to_mwh(800 * MJ))
    assert energy.source == "counter+sampled"
    assert energy.gpu_mwh == pytest.approx(j_to_mwh(600 * MJ))


def test_gpu_only_runs_have_no_split_and_nothing_is_none() -> None:
    energy = energy_from_devices([PromEnergy.of("n0", "gpu0", "gpu", "simulated", 1.0, 1.0, 1.0)])
    assert energy is not None and energy.gpu_mwh is None and energy.source == "simulated"
    assert energy_from_devices([]) is None


def test_ledger_energy_has_hours_that_add_up(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r")
    rows = [
        EnergyInterval(
            "n0", "gpu0", Kind.GPU, Source.COUNTER, 3590.0 + 10 * i, 3600.0 + 10 * i, 1e5, 9e4, 1.1e5
        )
        for i in range(400)
    ]
    rows += [
        EnergyInterval("n0", "m", Kind.NODE, Source.SAMPLED, 3590.0 + 10 * i, 3600.0 + 10 * i, 2e5, 2e5, 2e5)
        for i in range(400)
    ]
    ledger.record_intervals(run.id, rows)
    energy = ledger_energy(ledger, run.id)
    assert energy is not None and energy.by_hour_mwh is not None
    assert energy.it_mwh == pytest.approx(j_to_mwh(400 * 2e5))
    assert sum(energy.by_hour_mwh.values()) == pytest.approx(energy.it_mwh)
    assert sorted(energy.by_hour_mwh) == [0, 3600, 7200]
