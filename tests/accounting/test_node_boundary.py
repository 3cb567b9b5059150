"""The node boundary (the BMC's meter) beside the devices it holds, in the table with source and band."""

from __future__ import annotations

import pytest

from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import EnergyTotal, Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.run_energy import energy_from_devices
from wattlog.accounting.publishing.node_boundary import node_boundary
from wattlog.accounting.publishing.run_table import TableOptions, run_row
from wattlog.accounting.units import j_to_mwh
from wattlog.records import EnergyInterval, Kind, Source

MJ = 1e6
T0 = 1_800_000_000.0


def test_the_meter_is_set_beside_the_devices_of_its_own_hosts_only() -> None:
    boundary = node_boundary(
        [
            EnergyTotal.of(
                "n0", "redfish:bmc0/redfish/v1/Chassis/1U", "node", "counter", 500 * MJ, 490 * MJ, 510 * MJ
            ),
            EnergyTotal.of("n0", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ),
            EnergyTotal.of("n0", "cpu", "cpu", "estimated", 50 * MJ, 40 * MJ, 60 * MJ),
            EnergyTotal.of("n1", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ),  # no meter on n1
        ]
    )
    assert boundary is not None
    assert (boundary.hosts, boundary.reader, boundary.source) == (("n0",), "Redfish", "counter")
    assert (boundary.node_j, boundary.devices_j, boundary.rest_j) == (500 * MJ, 350 * MJ, 150 * MJ)
    assert boundary.rest_band_j == (490 * MJ - 370 * MJ, 510 * MJ - 330 * MJ)
    assert boundary.ratio == pytest.approx(500 / 350)
    note = boundary.note()
    assert note.startswith("node boundary (Redfish BMC, counter, 1 host(s)): 139 kWh [136 - 142 kWh]")
    assert "GPU+CPU+DRAM there: 97.2 kWh" in note and "node/devices x1.43, measured" in note


def test_no_meter_no_boundary_and_no_devices_no_ratio() -> None:
    assert node_boundary([EnergyTotal.of("n0", "gpu0", "gpu", "counter", 1.0, 1.0, 1.0)]) is None
    alone = node_boundary([EnergyTotal.of("n0", "dcmi:local", "node", "sampled", 9.0, 8.0, 10.0)])
    assert alone is not None and alone.ratio is None and alone.reader == "IPMI DCMI"
    assert "node/devices -" in alone.note()


def _interval(device: str, kind: Kind, source: Source, joules: float, rel: float) -> EnergyInterval:
    return EnergyInterval.of(
        "n0", device, kind, source, T0, T0 + 3600, joules, joules * (1 - rel), joules * (1 + rel)
    )


def test_the_table_row_shows_the_node_boundary_beside_the_device_sum(tmp_path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"))
    run = ledger.start_run("metered", RunSpec(site="jupiter"))
    ledger.record_intervals(
        run.id,
        [
            _interval("dcmi:local", Kind.NODE, Source.SAMPLED, 5.04e6, 0.10),  # 1400 W for an hour
            _interval("gpu0", Kind.GPU, Source.COUNTER, 3.6e6, 0.05),  # 1000 W
            _interval("cpu", Kind.CPU, Source.ESTIMATED, 0.72e6, 0.3),  # 200 W
        ],
    )
    table_row = run_row(ledger, ledger.get_run("metered"), TableOptions(catalog=site_catalog()))
    assert table_row.energy_j == pytest.approx(5.04e6)  # the meter, its parts not added
    [note] = [n for n in table_row.notes if n.startswith("node boundary")]
    assert "(IPMI DCMI BMC, sampled, 1 host(s)): 1.40 kWh [1.26 - 1.54 kWh]" in note
    assert (
        "GPU+CPU+DRAM there: 1.20 kWh" in note
        and "difference (fans, PSU losses, disks, NICs): 200 Wh" in note
    )


def test_beside_a_node_meter_the_cpu_dram_column_is_cpu_and_dram_never_the_meter_less_the_gpus() -> None:
    meter = EnergyTotal.of("n0", "dcmi:local", "node", "sampled", 500 * MJ, 450 * MJ, 550 * MJ)
    gpu = EnergyTotal.of("n0", "gpu0", "gpu", "counter", 300 * MJ, 290 * MJ, 310 * MJ)
    cpu = EnergyTotal.of("n0", "cpu", "cpu", "estimated", 50 * MJ, 40 * MJ, 60 * MJ)
    energy = energy_from_devices([meter, gpu, cpu])
    assert energy is not None and energy.it_mwh == pytest.approx(j_to_mwh(500 * MJ))
    assert (energy.gpu_j, energy.host_split_j) == pytest.approx((300 * MJ, 50 * MJ))
    gpus_only = energy_from_devices([meter, gpu])  # no CPU or DRAM measured: missing, not 200 MJ
    assert gpus_only is not None and gpus_only.gpu_j == pytest.approx(300 * MJ)
    assert gpus_only.host_split_j is None
