"""The Streamlit carbon report, run headless with Streamlit's AppTest on a seeded SQLite ledger."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboards.seed import RUN, START_S, seed_ledger
from wattlog.accounting.ledger import Ledger, RunSpec
from wattlog.accounting.ledger.jobs import RankReport, report_rank_progress
from wattlog.accounting.publishing.job_speed import job_speed
from wattlog.accounting.publishing.render import readable_amount, to_csv, to_latex, to_markdown
from wattlog.accounting.units import mwh_of, sig3
from wattlog.dashboards.report import data
from wattlog.dashboards.report.data import load_report
from wattlog.records import EnergyInterval, Gap, Kind, Source

APP = str(Path(data.__file__).parent / "app.py")


@pytest.fixture(autouse=True)
def keep_main_module() -> Iterator[None]:
    """AppTest runs the page as `__main__` and leaves it there; restore the real one.

    Otherwise a later test that spawns processes (torch.multiprocessing) makes each child
    re-run the Streamlit page as its main module.
    """
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture
def ledger_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    seed_ledger(url)
    monkeypatch.setenv("WATTLOG_DB", url)
    return url


@pytest.fixture
def ledger(ledger_url: str) -> Ledger:
    from wattlog.accounting.ledger import make_engine

    return Ledger(make_engine(ledger_url))


def headline(app: AppTest) -> dict[str, tuple[str, str]]:
    """The headline as drawn: label -> (figure, help). Markdown, not st.metric (see app.headline)."""
    figures = {}
    for m in app.markdown:
        label, _, value = m.value.partition("\n\n### ")
        if value:
            figures[label] = (value, m.proto.help)
    return figures


def table19_cells(app: AppTest) -> list[list[str]]:
    """Table 19 as the page draws it (an HTML table): each row's cells, the model first."""
    body = app.get("html")[0].value
    table = ElementTree.fromstring(body[body.index("<table") :])
    return [
        [row[0].text or "", *(cell.findtext("span[@class='wl-value']") or "" for cell in row[1:])]
        for row in table.iter("tr")
        if row[0].get("scope") == "row"
    ]


def run_app() -> AppTest:
    app = AppTest.from_file(APP, default_timeout=30)
    app.run()
    assert not app.exception, app.exception
    return app


def test_headline_shows_the_ledgers_figures_and_the_source(ledger_url: str, ledger: Ledger) -> None:
    app = run_app()
    expected = load_report(ledger, RUN).footprint
    assert expected is not None
    figures = headline(app)
    metrics = {label: value for label, (value, _) in figures.items()}
    assert metrics == {
        "Energy (IT)": readable_amount("total_power_mwh", mwh_of(expected.it_energy_j)),
        "Emissions (CO2eq)": readable_amount("co2_t", expected.co2_t),
        "Water": readable_amount("water_kl", expected.water_kl),
    }
    assert metrics["Energy (IT)"] == "528 kWh"  # 16 x ~650 W + 2 x 300 W for 48 h, in the unit of its size
    helps = [h for _, h in figures.values()]
    assert "0.528 MWh as in Table 19" in helps[0]  # the paper's unit one hover away
    captions = " ".join(c.value for c in app.caption)
    band = readable_amount("total_power_mwh", mwh_of(expected.energy_band_j))
    assert f"band {band}" in captions and band.endswith(" kWh") and expected.intensity_label in captions
    text = " ".join(m.value for m in app.markdown)
    assert "Energy source:" in text and "`simulated`" in text and "never a measurement" in text
    assert any("not measured by a hardware sensor" in w.value for w in app.warning)


def test_a_small_run_reads_in_wh_and_grams_not_millionths(ledger_url: str, ledger: Ledger) -> None:
    ledger.start_run("tiny", RunSpec(site="jupiter", host="node1"))
    gpu = EnergyInterval.of(
        "node1", "GPU-0", Kind.GPU, Source.SIMULATED, START_S, START_S + 60, 102_600.0, 1e5, 1.1e5
    )
    ledger.record_intervals("tiny", [gpu])
    app = AppTest.from_file(APP, default_timeout=30)
    app.query_params["run"] = "tiny"
    app.run()
    metrics = {label: value for label, (value, _) in headline(app).items()}
    assert metrics["Energy (IT)"] == "28.5 Wh"
    assert metrics["Emissions (CO2eq)"].endswith(" g") and "0.0000" not in metrics["Emissions (CO2eq)"]
    assert metrics["Water"] == "44.1 mL"  # was "0.0441 L"


def test_times_are_to_the_second_in_utc_and_labelled(ledger_url: str) -> None:
    app = run_app()
    # as the browser shows it: a time's colons are written "&#58;" (data.no_shortcodes)
    caption = html.unescape(next(c.value for c in app.caption if c.value.startswith("model ")))
    start = datetime.fromtimestamp(START_S, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert f"{start} UTC to " in caption and "+00:00" not in caption


def test_missing_figures_show_as_a_dash_not_a_bullet(ledger: Ledger) -> None:
    report = load_report(ledger, RUN)
    plain, shown = report.table(), report.shown_table()
    assert (plain == "-").any().any()  # the paper leaves some figures out
    assert set(shown.to_numpy()[(plain == "-").to_numpy()]) == {"\\-"}
    assert "OLMo 2 7B" in set(shown.iloc[:, 0])  # plain text stays as it is


def test_table19_has_the_run_beside_the_reference_rows(ledger_url: str, ledger: Ledger) -> None:
    app = run_app()
    cells = table19_cells(app)  # HTML that stacks: every column on screen at 800 px
    table = pd.DataFrame(cells, columns=load_report(ledger, RUN).table().columns)
    models = list(table["Model"])
    assert models[0].startswith("OLMo mini") and "OLMo 2 7B" in models and "OLMo 2 13B" in models
    olmo2 = table[table["Model"] == "OLMo 2 7B"].iloc[0]
    assert (olmo2["Total power (MWh)"], olmo2["Emissions (tCO2eq)"], olmo2["Water (kL)"]) == (
        "131",
        "52",
        "202",
    )
    assert table.iloc[0]["Energy source"] == "simulated"


def test_downloads_are_the_accounting_renderers_output(ledger_url: str, ledger: Ledger) -> None:
    report = load_report(ledger, RUN)
    files = report.downloads()
    assert files[f"wattlog-{RUN}.csv"][0] == to_csv(report.rows)
    assert files[f"wattlog-{RUN}.md"][0] == to_markdown(report.rows)
    assert files[f"wattlog-{RUN}.tex"][0] == to_latex(report.rows)
    app = run_app()
    buttons = app.get("download_button")
    assert len(buttons) == 5  # the run's CSV, Table 19 as CSV, Markdown and LaTeX, the printable page


def test_breakdowns_and_events(ledger: Ledger) -> None:
    report = load_report(ledger, RUN)
    kinds = dict(zip(report.by_kind["kind"], report.by_kind["energy_kwh"], strict=True))
    assert kinds["cpu"] == pytest.approx(2 * 0.3 * 48)
    assert sum(kinds.values()) == pytest.approx(report.cumulative["energy_kwh"].iloc[-1])
    uses = dict(zip(report.by_use["use"], report.by_use["energy_kwh"], strict=True))
    assert set(uses) == {"productive", "lost work", "health checks", "outside steps"}
    assert uses["lost work"] > 0 and uses["health checks"] > 0
    assert sum(uses.values()) == pytest.approx(sum(kinds.values()))
    assert list(report.events["kind"]) == ["health_check", "loss_spike", "restart", "lost_work", "alert"]
    assert set(report.power["kind"]) == {"gpu", "cpu"}
    assert report.power[report.power["kind"] == "cpu"]["power_w"].to_list() == pytest.approx([600.0] * 48)


def test_the_run_can_be_picked_and_charts_are_drawn(ledger_url: str, ledger: Ledger) -> None:
    ledger.start_run("second-run", RunSpec(site="augusta"))
    app = run_app()
    assert app.selectbox[0].options == [RUN, "second-run"]
    assert app.selectbox[0].value == "second-run"  # the newest run first
    assert any("no energy" in i.value for i in app.info)
    app.selectbox[0].select(RUN).run()
    assert not app.exception
    assert app.title[0].value == f"Carbon report: {RUN}"
    assert len(app.get("vega_lite_chart")) == 4


def test_missing_ledger_is_one_error_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATTLOG_DB", f"sqlite:///{tmp_path / 'nope' / 'w.db'}")
    app = run_app()
    assert len(app.error) == 1 and "no ledger at" in app.error[0].value and "nope" in app.error[0].value


def test_the_url_names_the_run_both_ways(ledger_url: str, ledger: Ledger) -> None:
    ledger.start_run("second-run", RunSpec(site="augusta"))
    app = AppTest.from_file(APP, default_timeout=30)
    app.query_params["run"] = RUN
    app.run()
    assert not app.exception and app.title[0].value == f"Carbon report: {RUN}"  # ?run= is read
    app.selectbox[0].select("second-run").run()
    assert app.query_params["run"] == "second-run"  # and a pick is written back (reload, shared link)
    assert app.title[0].value == "Carbon report: second-run"


def test_an_unknown_run_in_the_url_is_said_not_replaced_by_the_latest(ledger_url: str) -> None:
    app = AppTest.from_file(APP, default_timeout=30)
    app.query_params["run"] = "no-such-run"
    app.run()
    assert not app.exception
    assert len(app.error) == 1 and "'no-such-run' is not in the ledger" in app.error[0].value
    assert app.selectbox[0].value is None and not app.title  # nothing shown under the wrong name
    app.selectbox[0].select(RUN).run()
    assert app.title[0].value == f"Carbon report: {RUN}"
    assert [e.value for e in app.error if "NOT VALID" not in e.value] == []  # only its validity's box


def test_notes_fold_away_missing_steps_are_blank_and_gaps_are_drawn(ledger_url: str, ledger: Ledger) -> None:
    gap = Gap("node1", "GPU-03", START_S + 5 * 3600, START_S + 6 * 3600, "device lost")
    ledger.record_intervals(RUN, [], [gap])
    report = load_report(ledger, RUN)
    assert list(report.gaps["device"]) == ["GPU-03"]
    assert "None" not in report.events.astype(str).to_string()
    assert report.events.loc[report.events["kind"] == "restart", "step"].iloc[0] == ""
    app = run_app()
    [notes] = [e for e in app.expander if e.label.startswith("Notes on these figures")]
    assert notes.caption and not any(c in notes.caption for c in app.main.caption[:1])
    assert any("Orange bands: gaps" in c.value and "1 recorded" in c.value for c in app.caption)


def test_power_fluctuation_section(ledger_url: str) -> None:
    app = run_app()
    assert "Power fluctuation" in [s.value for s in app.subheader]
    table = next(t.value.reset_index() for t in app.table if "Dips" in t.value.columns)  # static: 800 px
    low, median, high = table.iloc[0]["% of power limit (min / median / max)"].split(" / ")
    assert float(low.split()[0]) == pytest.approx(100 * 600 / 700, abs=0.5)  # 650 W - 50 W of a 700 W H100
    assert float(high.split()[0]) == pytest.approx(100 * 700 / 700, abs=0.5)
    assert table.iloc[0]["Dips"] == "0"  # hourly rows around 650 W: no checkpoint dip to see
    assert any("assumed: no device model recorded" in c.value for c in app.caption)


def _marks(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every single-mark layer of a Vega-Lite spec, nested layers flattened."""
    if "layer" in spec:
        return [m for layer in spec["layer"] for m in _marks(layer)]
    return [spec]


def test_charts_read_utc_on_a_24_hour_clock_with_named_events_and_bars(ledger_url: str) -> None:
    app = run_app()
    power, cumulative, by_kind, by_use = (json.loads(c.proto.spec) for c in app.get("vega_lite_chart"))
    for chart in (power, cumulative):
        xs = [m["encoding"]["x"] for m in _marks(chart)]
        assert all(x["scale"]["type"] == "utc" for x in xs)  # not the browser's local time
        axis = next(x for x in xs if "axis" in x)
        assert "%H" in axis["axis"]["format"] and "%I" not in axis["axis"]["format"]
        texts = [m for m in _marks(chart) if m["mark"]["type"] == "text"]
        assert texts and texts[0]["encoding"]["text"]["field"] == "kind"  # each event named on the chart
    for chart, field in ((by_kind, "device"), (by_use, "use")):
        y = _marks(chart)[0]["encoding"]["y"]
        assert y["field"] == field and y["axis"]["labelOverlap"] is False  # no label dropped for room
        assert any(m["mark"]["type"] == "text" for m in _marks(chart))  # the share beside each bar
    ys = [m["encoding"].get("y", {}) for m in _marks(power) + _marks(cumulative)]
    titles = {y["title"] for y in ys if "title" in y}
    assert titles == {"power (kW)", "IT energy (kWh)"}  # ~11 kW and 528 kWh: axes in the unit of their size
    events = app.table[-1].value.reset_index()
    events["time"] = events["time"].map(html.unescape)  # "&#58;": a colon (data.no_shortcodes)
    assert events["time"].str.fullmatch(r"\d{4}\\-\d\d\\-\d\d \d\d:\d\d:\d\d UTC").all()  # "\\-": Markdown


def test_tokens_per_joule_is_the_jobs_figure_and_dash_without_tokens(ledger_url: str, ledger: Ledger) -> None:
    app = run_app()
    assert any(
        m.value == "**Training:** no token counts recorded · - tok/s · - tok/J · MFU -" for m in app.markdown
    )
    for rank in range(2):  # two ranks: the job's tokens are both ranks' together
        report_rank_progress(ledger, RUN, rank, RankReport("node1", rank, 5e9, 1000, START_S))
    speed = job_speed(ledger, RUN)
    assert speed is not None and speed.tokens_per_j is not None
    app = run_app()
    [line] = [m.value for m in app.markdown if m.value.startswith("**Training:**")]
    assert f"{sig3(speed.tokens_per_j)} tok/J" in line and "10,000,000,000 tokens" in line and "MFU -" in line
    [unit] = [m.value for m in app.markdown if m.value.startswith("**Per unit of work:**")]
    assert (
        f"Energy per token {sig3(1 / speed.tokens_per_j)} J, per 10^18 FLOP -," in unit
    )  # no FLOPs per token
