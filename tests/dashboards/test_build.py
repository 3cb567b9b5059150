"""Dashboards as code: committed JSON up to date, valid against the dashboard schema, and complete."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from wattlog.dashboards import build

SCHEMA = json.loads((Path(__file__).parent / "dashboard.schema.json").read_text())
BOARDS = {
    name.removeprefix("grafana/"): json.loads(text)
    for name, text in build.render().items()
    if name.startswith("grafana/")
}


def test_committed_json_matches_the_code() -> None:
    fix = "run `python -m wattlog.dashboards.build` and commit dashboards/grafana/"
    assert build.main(["--check"]) == 0, fix


def test_check_fails_on_a_stale_or_missing_file(tmp_path: Path) -> None:
    build.write(tmp_path)
    assert build.main(["--check", "--out", str(tmp_path)]) == 0
    path = tmp_path / "grafana/wattlog-energy.json"
    path.write_text(path.read_text().replace("Cluster power", "Cluster pwr"))
    (tmp_path / "grafana/wattlog-training.json").unlink()
    (tmp_path / "prometheus/sites.rules.yml").write_text("")
    assert build.stale(tmp_path) == [
        "grafana/wattlog-energy.json",
        "grafana/wattlog-training.json",
        "prometheus/sites.rules.yml",
    ]
    assert build.main(["--check", "--out", str(tmp_path)]) == 1


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_dashboard_is_valid_against_the_schema(name: str) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(BOARDS[name], SCHEMA, cls=jsonschema.Draft202012Validator)


def test_schema_rejects_a_deprecated_graph_panel_and_a_long_uid() -> None:
    board = json.loads(json.dumps(BOARDS["wattlog-energy.json"]))
    board["panels"][1]["type"] = "graph"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(board, SCHEMA)
    board = json.loads(json.dumps(BOARDS["wattlog-energy.json"]))
    board["uid"] = "x" * 41
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(board, SCHEMA)


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_panels_fit_the_grid_without_overlap_and_ids_are_unique(name: str) -> None:
    panels = BOARDS[name]["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine


def _exprs(board: dict) -> str:
    return "\n".join(t["expr"] for p in board["panels"] for t in p.get("targets", []))


def test_energy_dashboard_has_the_panels_users_expect() -> None:
    board = BOARDS["wattlog-energy.json"]
    titles = {p["title"]: p for p in board["panels"]}
    for wanted in (
        "Cluster power",
        "Power by node",
        "Power by GPU",
        "Energy so far",
        "CO2 so far and projected",
        "Water so far and projected",
        "Tokens per joule",
        "Overruns per minute",
        "Agents up",
    ):
        assert wanted in titles, wanted
    assert "/ 3600" in titles["Energy so far"]["targets"][0]["expr"]  # J -> Wh
    assert "by (source)" in titles["Energy so far"]["targets"][0]["expr"]  # honesty: source shown
    exprs = _exprs(board)
    for metric in (
        "wattlog_energy_joules_total",
        "wattlog_power_watts",
        "wattlog_samples_total",
        "wattlog_sample_overruns_total",
        "wattlog_run_planned_tokens",
        "wattlog:site_wue_offsite_l_per_kwh",
    ):
        assert metric in exprs, metric
    # the footprint from the counters' last values: rules evaluated every 15 s miss a run's last seconds
    assert "wattlog:run_" not in exprs


def test_units_are_scaled_by_grafana_not_fixed_to_mwh_and_tonnes() -> None:
    # "0.0002 MWh" and "0.000 t" for a short run: Grafana's SI-scaling units read "720 Wh", "239 g";
    # every energy in Wh..MWh (never "115 GJ"), mass g..kg..t (never massg's "101 Mg").
    titles = {p["title"]: p for b in BOARDS.values() for p in b["panels"]}
    unit = {t: p.get("fieldConfig", {}).get("defaults", {}).get("unit") for t, p in titles.items()}
    assert unit["Energy so far"] == "watth" and unit["Cumulative energy"] == "watth"
    assert unit["CO2 so far and projected"] == "masskg" and unit["Water so far and projected"] == "litre"
    assert (
        unit["Energy by device and source"] == "watth"
        and unit["Energy and the agent's band (whole run)"] == "watth"
    )
    every = [str(u) for u in unit.values()] + [
        str(prop["value"])
        for p in titles.values()
        for o in p.get("fieldConfig", {}).get("overrides", [])
        for prop in o["properties"]
        if prop["id"] == "unit"
    ]
    assert not {"massg", "joule"} & set(every)
    # fixed suffixes only where Grafana has no unit: tokens per joule, kg/kWh, hourly kg on one axis
    assert {u for u in every if u.startswith("suffix:")} == {"suffix: tok/J", "suffix: kg/kWh", "suffix: kg"}


def test_co2_names_its_intensity_source_in_a_column_not_in_every_series_name() -> None:
    panels = {p["title"]: p for p in BOARDS["wattlog-energy.json"]["panels"]}
    co2 = panels["CO2 so far and projected"]
    assert all("intensity_source" not in t.get("legendFormat", "") for t in co2["targets"])
    [source] = panels["Carbon intensity and its source"]["targets"]
    assert "by (site, intensity_source)" in source["expr"] and source["format"] == "table"


def test_devices_dashboard_has_a_row_per_gpu_the_band_gaps_and_lost_devices() -> None:
    board = BOARDS["wattlog-devices.json"]
    titles = {p["title"]: p for p in board["panels"]}
    per_gpu = titles["Per-GPU power"]
    # A heatmap on a gauge drew one GPU; a state timeline draws one row per series (per GPU).
    assert per_gpu["type"] == "state-timeline" and per_gpu["targets"][0].get("format") is None
    assert "{{device}}" in per_gpu["targets"][0]["legendFormat"]
    exprs = _exprs(board)
    for metric in (
        "wattlog_energy_uncertainty_joules",
        "wattlog_gap_seconds_total",
        "wattlog_gaps_total",
        "wattlog_sample_errors_total",
        "wattlog_device_lost",
    ):
        assert metric in exprs, metric


def test_training_dashboard_has_health_panels_and_event_annotations() -> None:
    board = BOARDS["wattlog-training.json"]
    exprs = _exprs(board)
    for metric in (
        "wattlog_train_loss",
        "wattlog_train_grad_norm",
        "wattlog_train_loss_scale",
        "wattlog_train_mfu_ratio",
        "wattlog_train_tokens_total",
        "max by (job, instance) (up)",  # joined on the marks' job: any job name
    ):
        assert metric in exprs
    events = [a for a in board["annotations"]["list"] if a["name"] == "wattlog events"]
    assert events and "wattlog_train_events_total" in events[0]["expr"]


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_variables_run_host_site_filter_every_query(name: str) -> None:
    board = BOARDS[name]
    names = [v["name"] for v in board["templating"]["list"]]
    assert names == ["datasource", "job", "run", "host", "site", "report"]
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert not any("wattlog-nodes" in e for e in exprs)  # the job a variable, never a literal (issue 44)
    for p in board["panels"]:
        for t in p.get("targets", []):
            assert "$run" in t["expr"] and "$site" in t["expr"], (p["title"], t["expr"])


def test_site_rules_carry_every_catalog_site_with_its_figures() -> None:
    import yaml

    from wattlog.accounting.carbon.sites import builtin_sites
    from wattlog.accounting.ranges import bounds

    rules = yaml.safe_load(build.render()["prometheus/sites.rules.yml"])["groups"][0]["rules"]
    published = {(r["record"], r["labels"]["site"]): r["expr"] for r in rules}
    for name, site in builtin_sites().items():
        assert published[("wattlog:site_pue", name)] == f"vector({bounds(site.pue)[1]:g})"
        ci = bounds(site.carbon_intensity_kg_per_kwh)[1]
        assert published[("wattlog:site_carbon_intensity_kg_per_kwh", name)] == f"vector({ci:g})"
    assert (
        published[("wattlog:site_wue_offsite_l_per_kwh", "world")] == "vector(4.26)"
    )  # a range: its upper end


def test_a_sites_intensity_rule_names_its_real_source() -> None:
    from wattlog.accounting.carbon.intensity import IntensityRef
    from wattlog.accounting.carbon.sites import Site
    from wattlog.dashboards.siterules import site_rules

    ref = IntensityRef("eia930", "/data/EIA930_BALANCE.csv", "ERCO")
    site = Site("texas", 1.2, 0.0, 1.29, 0.4, {"carbon_intensity_kg_per_kwh": "EIA 2023"}, "", ref)
    [rule] = [line for line in site_rules({"texas": site}).splitlines() if "intensity_source" in line]
    # the rule publishes the constant (a static rule cannot follow hours) and says the tables do not
    assert (
        'intensity_source: "hourly eia930 /data/EIA930_BALANCE.csv, zone ERCO (tables); constant: EIA 2023'
        in rule
    )
    assert "vector(0.4)" in rule


def test_every_board_is_in_utc_as_every_other_output() -> None:
    for make in build.BOARDS.values():
        assert make()["timezone"] == "utc"  # was "browser": a board and the report disagreed on times
