"""`wattlog disclose --format spdx|cyclonedx`: records that validate against the published JSON schemas."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.accounting.publishing.disclosure_ledger import H0, seeded
from tests.accounting.publishing.schemas import cyclonedx_16, errors, spdx_301
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.publishing.disclosure.cyclonedx import to_cyclonedx
from wattlog.accounting.publishing.disclosure.gather import disclosure_of_project, disclosure_of_run
from wattlog.accounting.publishing.disclosure.spdx import to_spdx
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.cli import full_app

OPTIONS = TableOptions(catalog=site_catalog(None))
PRETRAIN_FACILITY_KWH = 9900.0 * 100 * 1.2 / 1000  # 16 x 600 W + 300 W, 100 h, PUE 1.2


def test_the_validators_refuse_what_the_published_schemas_refuse() -> None:
    # the checks below can fail: a wrong unit and a missing required field are caught
    cost = {"activity": "training", "energyProviders": [], "activityEnergyCost": {"value": 1, "unit": "MWh"}}
    card = {"considerations": {"environmentalConsiderations": {"energyConsumptions": [cost]}}}
    model = {"type": "machine-learning-model", "name": "m", "modelCard": card}
    bom = {"bomFormat": "CycloneDX", "specVersion": "1.6", "components": [model]}
    assert any("'MWh' is not one of ['kWh']" in e for e in errors(cyclonedx_16(), bom))
    spdx = {"@context": "https://spdx.org/rdf/3.0.1/spdx-context.jsonld", "@graph": [
        {"type": "ai_EnergyConsumptionDescription", "ai_energyUnit": "kilowattHour"}]}  # fmt: skip
    assert errors(spdx_301(), spdx)


def test_a_runs_cyclonedx_record_validates_and_carries_kwh_co2_and_the_boundary(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path)
    bom = json.loads(to_cyclonedx(disclosure_of_run(ledger, "pretrain", OPTIONS), H0))
    assert errors(cyclonedx_16(), bom) == []
    (model,) = bom["components"]
    (entry,) = model["modelCard"]["considerations"]["environmentalConsiderations"]["energyConsumptions"]
    assert entry["activity"] == "training"
    assert entry["activityEnergyCost"] == {"value": pytest.approx(PRETRAIN_FACILITY_KWH), "unit": "kWh"}
    assert entry["co2CostEquivalent"]["value"] == pytest.approx(PRETRAIN_FACILITY_KWH / 1000 * 0.332)
    assert "co2CostOffset" not in entry  # no offset ever lowers the figure
    props = {p["name"]: p["value"] for p in entry["properties"]}
    assert props["wattlog:energy:gpu:source"] == "sampled" and props["wattlog:basis"] == "measured"
    assert props["wattlog:energy:facility:source"].startswith("derived")


def test_a_projects_records_validate_with_post_training_as_fine_tuning(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path)
    found = disclosure_of_project(ledger, "p", OPTIONS)
    bom = json.loads(to_cyclonedx(found, H0))
    assert errors(cyclonedx_16(), bom) == []
    entries = bom["components"][0]["modelCard"]["considerations"]["environmentalConsiderations"]
    assert [e["activity"] for e in entries["energyConsumptions"]] == ["training", "training", "fine-tuning"]
    spdx = json.loads(to_spdx(found, H0))
    assert errors(spdx_301(), spdx) == []
    (package,) = [e for e in spdx["@graph"] if e["type"] == "ai_AIPackage"]
    energy = package["ai_energyConsumption"]
    assert (
        len(energy["ai_trainingEnergyConsumption"]) == 2
        and len(energy["ai_finetuningEnergyConsumption"]) == 1
    )
    assert "facility boundary" in package["ai_informationAboutTraining"]


def test_a_runs_spdx_record_validates_in_kilowatt_hours(tmp_path: Path) -> None:
    ledger, _ = seeded(tmp_path)
    document = json.loads(to_spdx(disclosure_of_run(ledger, "pretrain", OPTIONS), H0))
    assert errors(spdx_301(), document) == []
    (package,) = [e for e in document["@graph"] if e["type"] == "ai_AIPackage"]
    (entry,) = package["ai_energyConsumption"]["ai_trainingEnergyConsumption"]
    assert entry["ai_energyUnit"] == "kilowattHour"
    assert float(entry["ai_energyQuantity"]) == pytest.approx(PRETRAIN_FACILITY_KWH)
    broken = copy.deepcopy(document)
    broken["@graph"][2]["ai_energyConsumption"]["ai_trainingEnergyConsumption"][0]["ai_energyUnit"] = "MWh"
    assert errors(spdx_301(), broken)


@pytest.mark.parametrize("fmt", ["spdx", "cyclonedx"])
def test_the_command_writes_each_record_for_a_run_and_a_project(tmp_path: Path, fmt: str) -> None:
    _, url = seeded(tmp_path)
    validator = spdx_301() if fmt == "spdx" else cyclonedx_16()
    for target in (["pretrain"], ["--project", "p"]):
        out = CliRunner().invoke(full_app(), ["disclose", *target, "--db", url, "--format", fmt])
        assert out.exit_code == 0, out.output
        assert errors(validator, json.loads(out.output)) == []
