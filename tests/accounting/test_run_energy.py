"""A run's IT energy from ledger rows: sums, node meters never double-counted, GPU and rest apart."""

from __future__ import annotations

from dataclasses import astuple

import pytest

from wattlog.accounting.ledger import EnergyTotal, Ledger, make_engine
from wattlog.accounting.ledger.run_energy import energy_from_devices, ledger_energy
from wattlog.accounting.units import j_to_mwh
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source

MJ = 1e6


def test_components_add_up_and_gpu_is_shown_apart() -> None:
    energy = energy_from_devices(
        [
            EnergyTotal.of("n0", "gpu0", "gpu", "counter", 100 * MJ, 95 * MJ, 105 * MJ),
            EnergyTotal.of("n0", "gpu1", "gpu", "counter", 200 * MJ, 190 * MJ, 210 * MJ),
            EnergyTotal.of("n0", "cpu", "cpu", "estimated", 50 * MJ, 30 * MJ, 70 * MJ),
        ]
    )
    assert energy is not None
    assert energy.it_mwh == pytest.approx(j_to_mwh(350 * MJ))
    assert (energy.gpu_j, energy.host_split_j) == pytest.approx((300 * MJ, 50 * MJ))
    assert energy.source == "counter+estimated"
    assert (energy.band_j.lo, energy.band_j.hi) == pytest.approx((315 * MJ, 385 * MJ))


def test_a_node_meter_replaces_its_hosts_components() -> None:
    energy = energy_from_devices(
        [
            EnergyTotal.of("n0", "meter", "node", "sampled", 500 * MJ, 490 * MJ, 510 * MJ),
            EnergyTotal.of("n0", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ),
            EnergyTotal.of("n1", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ),
        ]
    )
    assert energy is not None
    assert energy.it_mwh == pytest.approx(j_to_mwh(800 * MJ))
    assert energy.source == "counter+sampled"
    assert energy.gpu_j == pytest.approx(600 * MJ)


def test_gpu_only_runs_have_no_split_and_nothing_is_none() -> None:
    energy = energy_from_devices([EnergyTotal.of("n0", "gpu0", "gpu", "simulated", 1.0, 1.0, 1.0)])
    assert energy is not None and energy.gpu_j is None and energy.source == "simulated"
    assert energy_from_devices([]) is None


def test_ledger_energy_has_hours_that_add_up(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r")
    rows = [
        EnergyInterval.of(
            "n0", "gpu0", Kind.GPU, Source.COUNTER, 3590.0 + 10 * i, 3600.0 + 10 * i, 1e5, 9e4, 1.1e5
        )
        for i in range(400)
    ]
    rows += [
        EnergyInterval.of(
            "n0", "m", Kind.NODE, Source.SAMPLED, 3590.0 + 10 * i, 3600.0 + 10 * i, 2e5, 2e5, 2e5
        )
        for i in range(400)
    ]
    ledger.record_intervals(run.id, rows)
    energy = ledger_energy(ledger, run.id)
    assert energy is not None and energy.by_hour_mwh is not None
    assert energy.it_mwh == pytest.approx(j_to_mwh(400 * 2e5))
    assert sum(energy.by_hour_mwh.values()) == pytest.approx(energy.it_mwh)
    assert sorted(energy.by_hour_mwh) == [0, 3600, 7200]


def test_a_device_total_is_a_figure_with_enums_and_its_readers_label() -> None:
    dcgm = EnergyTotal.of("n0", "GPU-a", "gpu", "counter (dcgm-exporter)", 10.0, 9.0, 11.0)
    assert dcgm.figure == EnergyFigure(Kind.GPU, Source.COUNTER, 10.0, 9.0, 11.0)
    assert (dcgm.reader, dcgm.source, dcgm.kind) == ("dcgm-exporter", "counter (dcgm-exporter)", Kind.GPU)
    assert EnergyTotal.of("n0", "cpu", "cpu", "estimated", 1.0, 0.5, 2.0).source is Source.ESTIMATED
    with pytest.raises(ConfigError, match="kind 'tpu'"):
        EnergyTotal.of("n0", "t0", "tpu", "counter", 1.0, 1.0, 1.0)


def test_ledger_totals_and_hours_are_figures_that_add_as_the_ledger_sums(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r")
    start = [3000.0 + 600 * i for i in range(4)]  # one row in hour 0, three in hour 1
    rows = [
        EnergyInterval.of("n0", "gpu0", Kind.GPU, Source.COUNTER, s, s + 600, 50.0, 40.0, 70.0, 3.0 + i, 1.0)
        for i, s in enumerate(start)
    ]
    ledger.record_intervals(run.id, rows)
    [total] = ledger.energy_totals(run.id)
    hours = ledger.energy_by_hour(run.id)
    assert [h.hour for h in hours] == [0, 1]
    by_hours = hours[0].figure + hours[1].figure
    by_rows = rows[0].figure + rows[1].figure + rows[2].figure + rows[3].figure
    for figure in (by_hours, by_rows):
        assert astuple(total.figure) == pytest.approx(astuple(figure))


def test_hours_are_the_sums_of_energy_by_hour_with_meters_counted_once(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("r")
    shapes = [("n0", "m", Kind.NODE, 9.0), ("n0", "gpu0", Kind.GPU, 5.0), ("n1", "gpu0", Kind.GPU, 4.0)]
    shapes.append(("n1", "cpu", Kind.CPU, 2.0))
    rows = [
        EnergyInterval.of(host, device, kind, Source.COUNTER, 1800.0 * i, 1800.0 * (i + 1), j, j, j)
        for i in range(5)
        for host, device, kind, j in shapes
    ]
    ledger.record_intervals(run.id, rows)
    energy = ledger_energy(ledger, run.id)
    assert energy is not None and energy.by_hour_mwh is not None
    # the node meter counts for n0 (its GPU is inside it), n1's components for n1
    expected: dict[int, float] = {}
    for part in (
        ledger.energy_by_hour(run.id, kinds=["node"]),
        ledger.energy_by_hour(run.id, exclude_hosts=["n0"]),
    ):
        for hour in part:
            assert hour.hour is not None
            expected[hour.hour * 3600] = expected.get(hour.hour * 3600, 0.0) + j_to_mwh(hour.energy_j)
    assert energy.by_hour_mwh == pytest.approx(expected)
    assert expected == pytest.approx({0: j_to_mwh(30.0), 3600: j_to_mwh(30.0), 7200: j_to_mwh(15.0)})
