"""The carbon report's downloads, stacking Table 19, project tables, event labels and Grafana link."""

from __future__ import annotations

import ast
import dataclasses
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from tests.dashboards.seed import RUN, START_S, seed_ledger
from wattlog.accounting.ledger import Ledger, Role, RunSpec, make_engine
from wattlog.accounting.publishing.render import footnotes, table_cells
from wattlog.cli import app as cli_app
from wattlog.dashboards.report import charts, data
from wattlog.dashboards.report.data import load_report, load_summary
from wattlog.dashboards.report.page_html import STACK_BELOW_PX, printable_page, table19_table
from wattlog.records import EnergyInterval, Kind, Source

APP = str(Path(data.__file__).parent / "app.py")


@pytest.fixture(autouse=True)
def keep_main_module() -> Iterator[None]:
    """AppTest leaves the page as `__main__`: restore the real one (see test_report.py)."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded ledger, made once for the module (seeding takes about a second)."""
    path = tmp_path_factory.mktemp("seeded") / "ledger.db"
    seed_ledger(f"sqlite:///{path}")
    return path


@pytest.fixture
def ledger_url(seeded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A copy of the seeded ledger of this test's own (SQLite's backup: rows in the WAL come along)."""
    path = tmp_path / "ledger.db"
    with sqlite3.connect(seeded) as source, sqlite3.connect(path) as copy:
        source.backup(copy)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("WATTLOG_DB", url)
    monkeypatch.setenv("WATTLOG_CALIBRATIONS", str(tmp_path / "no-calibrations.toml"))
    return url


@pytest.fixture
def ledger(ledger_url: str) -> Ledger:
    return Ledger(make_engine(ledger_url))


def run_app(run: str = RUN) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=30)
    app.query_params["run"] = run
    app.run()
    assert not app.exception, app.exception
    return app


def test_the_runs_csv_is_what_wattlog_table_prints_for_it(ledger_url: str, ledger: Ledger) -> None:
    result = CliRunner().invoke(cli_app, ["table", RUN, "--format", "csv", "--db", ledger_url])
    assert result.exit_code == 0, result.output
    csv = load_summary(ledger, RUN).run_csv()  # what the page's "The run's CSV" button holds
    assert csv == result.stdout
    assert csv.count("\n") == 2 and csv.splitlines()[1].startswith('"OLMo mini')  # header + the run only


def test_the_printable_page_holds_figures_table_and_notes_for_print(ledger: Ledger) -> None:
    summary = load_summary(ledger, RUN)
    page = printable_page(summary, "model OLMo mini · site jupiter", "2026-12-04 09:00:00 UTC")
    assert page.startswith("<!DOCTYPE html>") and "@media print" in page and "@page" in page
    assert "<h1>Carbon report: olmo-mini</h1>" in page and "528 kWh" in page and "0.528 MWh" in page
    assert "OLMo 2 7B" in page and "\\-" not in page  # HTML, not Markdown: a dash stays a dash
    assert page.count("<li>") == len(footnotes(summary.rows))  # every note of the table, none folded away
    assert "Read from the ledger at 2026-12-04 09:00:00 UTC" in page


def test_table19_cells_carry_their_column_name_for_stacking(ledger: Ledger) -> None:
    """Below STACK_BELOW_PX each row is a card: every cell must say which column it is."""
    summary = load_summary(ledger, RUN)
    headers, cells = table_cells(summary.rows)
    table = ElementTree.fromstring(table19_table(summary))
    rows = [tr for tr in table.iter("tr") if tr[0].get("scope") == "row"]
    assert len(rows) == len(cells) and STACK_BELOW_PX > 800  # 800 px stacks
    for tr, row in zip(rows, cells, strict=True):
        assert [td.findtext("span[@class='wl-label']") for td in tr[1:]] == headers[1:]
        assert [td.findtext("span[@class='wl-value']") for td in tr[1:]] == row[1:]
    assert "-" in {c for row in cells for c in row}  # the paper's missing figures: shown as "-", unescaped


def test_the_page_offers_the_five_downloads(ledger_url: str) -> None:
    app = run_app()
    labels = [b.proto.label for b in app.get("download_button")]
    assert labels == ["The run's CSV", "Table 19 CSV", "Table 19 MD", "Table 19 TEX", "Printable page"]


# Streamlit's own test (StreamlitMarkdown's bundle, 1.67) for text that needs its emoji plugin: ~265 kB
# of script the browser loads before it draws that Markdown.
STREAMLIT_SHORTCODE = re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:")


def test_no_markdown_on_the_page_makes_the_browser_load_the_emoji_plugin(ledger_url: str) -> None:
    app = run_app()
    texts = [e.value for kind in ("title", "caption", "markdown") for e in app.get(kind)]
    assert any(re.search(r"\d\d&#58;\d\d", text) for text in texts)  # the run's times are there
    assert [t for t in texts if STREAMLIT_SHORTCODE.search(t)] == []


def test_alerts_are_named_with_their_status_on_the_charts(ledger: Ledger) -> None:
    ledger.record_event(
        RUN,
        "alert",
        time_s=START_S + 31 * 3600,
        category="alert",
        payload={"alertname": "WattlogPowerAboveLimit", "status": "resolved"},
    )
    report = load_report(ledger, RUN)
    x, _ = charts._time_axis(report)  # noqa: SLF001
    labels = charts._event_marks(report, x).layer[1].data  # noqa: SLF001 (the labels' own frame)
    assert {"alert firing", "alert resolved", "restart, lost_work"} <= set(labels["kind"])


def test_grafana_link_names_the_run_where_grafana_is_given(
    ledger_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not any("in Grafana" in m.value for m in run_app().markdown)  # none configured: no dead link
    monkeypatch.setenv("WATTLOG_GRAFANA_URL", "http://grafana.example:3000/")
    app = run_app()
    [link] = [m.value for m in app.markdown if "in Grafana" in m.value]
    assert f"(http://grafana.example:3000/d/wattlog-energy?var-run={RUN})" in link


def test_project_tables_split_development_and_final_on_demand(ledger_url: str, ledger: Ledger) -> None:
    project = ledger.project_of(ledger.get_run(RUN))
    spec = RunSpec(project=project, site="jupiter", host="node1", role=Role.DEVELOPMENT)
    ledger.start_run("sweep-1", spec)
    joules = 3.6e6
    gpu = EnergyInterval.of(
        "node1", "GPU-0", Kind.GPU, Source.COUNTER, START_S, START_S + 3600, joules, joules, joules
    )
    ledger.record_intervals("sweep-1", [gpu])
    ledger.end_run("sweep-1", end_s=START_S + 3600)
    app = run_app()
    assert f"Project {project}: development and final" in [s.value for s in app.subheader]
    before = len(app.table)  # nothing read until asked: a project can hold a thousand runs
    app.toggle(key="project").set_value(True).run()
    assert not app.exception
    phases = list(app.table[before].value.index)
    assert phases[:2] == ["development", "final"] and phases[2].startswith("Total")
    assert any("Table 2" in m.value for m in app.markdown)
    # 29 t of simulated energy showed with no source nor validity: each group and run says both
    table1, table2 = app.table[before].value, app.table[before + 1].value
    assert list(table1.columns[-2:]) == ["Energy source", "Validity"] == list(table2.columns[-2:])
    final, development = table1.loc["final"], table1.loc["development"]  # Markdown cells: "a\\+b"
    assert "simulated" in final["Energy source"] and final["Validity"].startswith("NOT VALID (")
    assert "counter" in development["Energy source"]


def test_the_page_script_has_no_bare_strings_for_streamlit_magic_to_print() -> None:
    """Streamlit writes every top-level string statement on the page (an attribute docstring did)."""
    tree = ast.parse(Path(APP).read_text(encoding="utf-8"))
    strings = [
        node.lineno
        for node in tree.body[1:]  # the module docstring is the one Streamlit leaves out
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    ]
    assert strings == []


def test_validity_stands_beside_the_headline_and_on_the_printable_page(ledger: Ledger) -> None:
    # a NOT VALID run (simulated devices) showed its figures with no word of it there
    summary = load_summary(ledger, RUN)
    page = printable_page(summary, "model OLMo mini", "2026-12-04 09:00:00 UTC")
    figures_end = page.index('<div class="figures">') + page[page.index('<div class="figures">') :].index(
        "<h2>"
    )
    assert '<p class="validity invalid">NOT VALID to publish: ' in page[:figures_end]
    assert "simulated" in page[page.index("NOT VALID to publish") :].split("</p>")[0]
    app = run_app()
    [error] = [e.value for e in app.error if "NOT VALID" in e.value]
    assert error.startswith("NOT VALID to publish:") and "simulated" in error


def test_a_killed_runs_gaps_after_its_last_row_lie_on_the_charts_axis(ledger: Ledger) -> None:
    # a killed run's lease gaps (the reason it is NOT VALID) lay after its last row, off the axis
    report = load_report(ledger, RUN)
    last_row = report.power["time"].max()
    lease = pd.DataFrame(
        {"start": [last_row], "end": [last_row + pd.Timedelta(hours=3)], "host": ["vm"], "device": ["gpu0"],
         "reason": ["lease expired"], "detail": [""]}
    )  # fmt: skip
    killed = dataclasses.replace(report, gaps=pd.concat([report.gaps, lease], ignore_index=True))
    _, scale = charts._time_axis(killed)  # noqa: SLF001
    first, last = (pd.Timestamp(t) for t in scale.domain)
    assert first <= report.power["time"].min() and last == last_row + pd.Timedelta(hours=3)


def test_the_readmes_example_run_reads_the_times_of_its_rows(tmp_path: Path) -> None:
    # "00:45:49 UTC to 00:45:50 UTC" for 500 hours of January rows: the run's times were the seeding's
    from wattlog.accounting.publishing.example_project import EXAMPLE_RUNS, HOUR_S, seed_example_project

    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'example.db'}"))
    seed_example_project(ledger)
    final = ledger.get_run("final-7b")
    with ledger.reading("final-7b") as reader:
        span = reader.span()
    assert span is not None and (final.start_s, final.end_s) == span
    assert final.end_s - final.start_s == next(r.hours for r in EXAMPLE_RUNS if r.name == "final-7b") * HOUR_S


def test_tokens_are_exact_and_big_rates_take_a_prefix(ledger: Ledger) -> None:
    # 4,096 tokens read "4,100"; 1,170,000 tok/s is seven digits to count
    from wattlog.accounting.publishing.job_speed import JobSpeed

    speed = JobSpeed(1, 4096.0, 3600.0, 8.4e8, "counter", 1.17e6, 5.0, None)
    text = dataclasses.replace(load_summary(ledger, RUN), speed=speed).speed_text()
    assert text.startswith("4,096 tokens · 1.17 M tok/s · 5.00 tok/J")


def test_each_run_of_tables_2_and_3_carries_its_own_source_and_validity() -> None:
    from wattlog.accounting.publishing.project_table import Grid
    from wattlog.dashboards.report.project_columns import Verdict, with_verdicts

    verdicts = {"final-7b": Verdict("simulated", "NOT VALID"), "serve": Verdict("counter", "valid")}
    grids = [
        Grid("Table 1", ["Phase", "MWh"], [["final", "1"], ["Total (p)", "2"]], [], frozenset()),
        Grid("Table 2", ["Model", "Run", "MWh"], [["7B", "final-7b", "1"]], [], frozenset()),
        Grid("Table 3", ["Inference run", "Requests"], [["serve", "2"]], [], frozenset()),
    ]
    table1, table2, table3 = with_verdicts(grids, [], verdicts)
    assert table2.cells == [["7B", "final-7b", "1", "simulated", "NOT VALID"]]
    assert table3.cells == [["serve", "2", "counter", "valid"]]
    assert table1.cells[-1][-2:] == ["counter+simulated", "NOT VALID (1 of 2 runs)"]
