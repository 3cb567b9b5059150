"""The dashboards read right at any moment (issue 25): what each panel asks, checked without a server.

tests/integration/test_panels_vs_ledger.py runs the same queries on a real Prometheus during a run
and five minutes after it; these tests pin the shape that makes that work, and fail on the boards
that showed a stopped cluster's last 2.20 kW as power now.
"""

from __future__ import annotations

import json

import pytest

from wattlog.dashboards import build

BOARDS = {
    name.removeprefix("grafana/"): json.loads(text)
    for name, text in build.render().items()
    if name.startswith("grafana/")
}
ENERGY = {p["title"]: p for p in BOARDS["wattlog-energy.json"]["panels"]}
ALL = {(name, p["title"]): p for name, b in BOARDS.items() for p in b["panels"]}


def test_power_now_is_an_instant_query_of_live_agents_that_says_when_none_is() -> None:
    cluster = ENERGY["Cluster power"]
    [query] = cluster["targets"]
    assert query["instant"] is True  # not the last non-null value of a 6-hour range
    assert "wattlog_agent_finished" in query["expr"] and "== 0" in query["expr"]
    assert cluster["fieldConfig"]["defaults"]["noValue"].startswith("no live agent")


@pytest.mark.parametrize(
    "title",
    ["Energy so far", "CO2 so far and projected", "Water so far and projected", "Tokens per joule",
     "Energy by device and source", "CO2 budget: spent, projected, remaining"],
)  # fmt: skip
def test_totals_take_each_series_last_value_in_the_range_so_finished_runs_count(title: str) -> None:
    for query in ENERGY[title]["targets"]:
        assert query["instant"] is True
        assert "last_over_time(" in query["expr"] and "[$__range])" in query["expr"], query["expr"]


def test_agents_up_tells_finished_from_lost() -> None:
    for name in ("wattlog-energy.json", "wattlog-training.json"):
        panel = ALL[(name, "Agents up")]
        assert panel["type"] == "state-timeline"
        assert "wattlog_agent_finished" in panel["targets"][0]["expr"]
        [mapping] = panel["fieldConfig"]["defaults"]["mappings"]
        names = {value: m["text"] for value, m in mapping["options"].items()}
        assert names == {"0": "lost", "1": "up", "2": "finished"}


def test_legends_of_per_host_and_per_device_series_name_the_run() -> None:
    # two runs on one host drew "vm GPU-sim-0000" twice in one legend
    for (board, title), panel in ALL.items():
        for query in panel.get("targets", []):
            legend = query.get("legendFormat", "")
            if "{{host}}" in legend or "{{device}}" in legend:
                assert "{{run}}" in legend, (board, title, legend)


def test_mass_comes_in_kg_below_a_tonne_and_t_above_never_mg() -> None:
    for title in ("CO2 so far and projected", "CO2 budget: spent, projected, remaining"):
        panel = ENERGY[title]
        units = {
            o["matcher"]["options"]: o["properties"][0]["value"] for o in panel["fieldConfig"]["overrides"]
        }
        for query in panel["targets"]:
            unit = units[query["refId"]]
            assert unit in {"masskg", "masst"}
            assert ("abs(" in query["expr"]) and (("< 1" in query["expr"]) == (unit == "masskg"))


def test_efficiency_units_and_mfu_never_above_100_percent() -> None:
    training = {p["title"]: p for p in BOARDS["wattlog-training.json"]["panels"]}
    assert training["Tokens per joule (5 min rate)"]["fieldConfig"]["defaults"]["unit"] == "suffix: tok/J"
    assert training["Tokens per second (1 min rate)"]["fieldConfig"]["defaults"]["unit"] == "si:tok/s"
    assert ENERGY["Tokens per joule"]["fieldConfig"]["defaults"]["unit"] == "suffix: tok/J"
    assert training["MFU"]["targets"][0]["expr"].endswith("<= 1")


def test_the_band_adds_sampling_errors_in_quadrature_as_the_ledger() -> None:
    band = ALL[("wattlog-devices.json", "Energy and the agent's band (whole run)")]
    low, high = band["targets"][1]["expr"], band["targets"][2]["expr"]
    assert 'bound="random_low"' in low and "sqrt(" in low and "^ 2" in low
    assert 'bound="random_high"' in high and "sqrt(" in high


def test_budget_co2_by_hour_and_intensity_with_its_source() -> None:
    legends = [q["legendFormat"] for q in ENERGY["CO2 budget: spent, projected, remaining"]["targets"]]
    assert {legend.removeprefix("{{run}} ") for legend in legends} == {
        "spent", "projected at planned tokens", "remaining"
    }  # fmt: skip
    hourly = ENERGY["CO2 by hour, with the hour's intensity"]
    assert hourly["targets"][0]["interval"] == "1h" and "[1h]" in hourly["targets"][0]["expr"]
    assert "wattlog:site_carbon_intensity_kg_per_kwh" in hourly["targets"][1]["expr"]
    assert "intensity_source" in ENERGY["Carbon intensity and its source"]["targets"][0]["expr"]


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_annotations_and_links(name: str) -> None:
    board = BOARDS[name]
    annotations = {a["name"]: a for a in board["annotations"]["list"]}
    assert 'kind=~"checkpoint"' in annotations["checkpoints"]["expr"]
    assert 'kind=~"restart"' in annotations["restarts"]["expr"]
    assert annotations["alerts"]["expr"].startswith('ALERTS{alertstate="firing"')
    links = {link["title"]: link for link in board["links"]}
    assert links["wattlog"]["type"] == "dashboards" and links["wattlog"]["includeVars"] is True
    assert links["Carbon report"]["url"] == "${report}"
    data_links = [
        link["url"]
        for p in board["panels"]
        for link in p.get("fieldConfig", {}).get("defaults", {}).get("links", [])
    ]
    if name == "wattlog-energy.json":  # each run's figures link to that run's report
        assert data_links and set(data_links) == {"${report}/?run=${__field.labels.run}"}


def test_grafana_url_leads_back_from_the_report_to_a_run() -> None:
    from wattlog.dashboards.queries import grafana_url

    assert (
        grafana_url("http://localhost:3000/", "run a")
        == "http://localhost:3000/d/wattlog-energy?var-run=run%20a"
    )
