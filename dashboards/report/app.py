"""wattlog's carbon report, a Streamlit page: `wattlog report` (or `streamlit run dashboards/report/app.py`).

Reads the ledger named by $WATTLOG_DB (the CLI sets it from --db) through accounting,
read-only. Pick a run: the page's URL follows (?run=NAME), so a reload, a shared link or
a Grafana board's link shows the same run, and a ?run= the ledger does not hold says so
instead of showing another. First the figures: headline energy, CO2 and water with the
energy's source and tokens per joule, then Table 19 with the run beside the paper's rows
(downloads: the run's CSV as `wattlog table` prints it, Table 19 as CSV, Markdown, LaTeX,
and a printable page). Only then the charts (imported after the figures are drawn): power
and cumulative energy over time with the run's events (red, named, alerts with their status)
and gaps (orange); the energy by device kind and by use; power fluctuation; the events; and,
on demand, the project's development and final split (Tables 1-3). Laid out to read at 800 px.
"""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from wattlog.accounting.ledger import Ledger, RunInfo, describe_url, make_engine, resolve_url
from wattlog.accounting.publishing.power_report import POWER_HEADERS, POWER_NOTES, power_cells, run_power
from wattlog.accounting.publishing.render import footnotes, format_figure, readable_amount
from wattlog.accounting.units import mwh_of
from wattlog.dashboards.queries import grafana_url
from wattlog.dashboards.report.data import (
    RunSummary,
    load_details,
    load_summary,
    markdown_text,
    no_shortcodes,
    utc_strings,
    utc_text,
)
from wattlog.dashboards.report.page_html import headline_figures, printable_page, table19_html, validity_line
from wattlog.errors import WattlogError

# No string statements at the top level: Streamlit's "magic" would print them on the page.
GRAFANA_ENV = "WATTLOG_GRAFANA_URL"  # the Grafana of wattlog's boards (`wattlog report --grafana`)
SPEED_HELP = (
    "Every rank's tokens over the job's IT energy "
    "(accounting.publishing.job_speed, as the trainer's panels); "
    "MFU only where FLOPs per token and the devices' peak are known."
)
SOURCE_NOTES = {
    "counter": "differences of hardware energy counters",
    "sampled": "integrated from power readings",
    "estimated": "a utilisation x TDP model: no sensor, an estimate",
    "simulated": "the simulated device: never a measurement",
}


@st.cache_resource
def open_ledger(url: str) -> Ledger:
    """One read-only ledger per server process (a typo'd path creates nothing)."""
    return Ledger(make_engine(url, create=False))


def headline(summary: RunSummary) -> None:
    """Energy, CO2 and water of the run in units of their size, with the energy's band and source.

    "28.5 Wh", not "0.0000285 MWh": the paper's units stay in Table 19 and in each figure's help.
    Plain Markdown, not `st.metric`: the browser draws a metric only once its chart code
    (Vega, ~0.8 MB of script) has loaded, which held the first figures back by a second or more.
    """
    fp = summary.footprint
    if fp is None:
        st.info("This run recorded no energy yet.")
        return
    helps = [
        f"as in Table 19, measured at the devices; facility energy = x PUE {format_figure('pue', fp.pue)}",
        "as in Table 19 = energy x PUE x "
        f"{format_figure('carbon_intensity_kg_per_kwh', fp.intensity_kg_per_kwh)} kg/kWh",
        f"as in Table 19 = energy x PUE x WUE {format_figure('wue_l_per_kwh', fp.wue_l_per_kwh)} L/kWh",
    ]
    captions = [
        f"band {readable_amount('total_power_mwh', mwh_of(fp.energy_band_j))}",
        f"intensity: {fp.intensity_label}",
        f"WUE {format_figure('wue_l_per_kwh', fp.wue_l_per_kwh)} L/kWh",
    ]
    box = st.container(key="headline")
    for column, (label, value, paper), help_text, caption in zip(
        box.columns(3), headline_figures(summary), helps, captions, strict=True
    ):
        column.markdown(f"{label}\n\n### {markdown_text(value)}", help=f"{paper} {help_text}")
        column.caption(no_shortcodes(caption))
    validity = validity_line(summary)  # beside the figures: a NOT VALID run's figures are not publishable
    (box.error if validity.startswith("NOT VALID") else box.caption)(no_shortcodes(validity))
    parts = [f"`{s}` ({SOURCE_NOTES.get(s, s)})" for s in fp.energy_source.split("+")]
    st.markdown(f"**Energy source:** {', '.join(parts)} · site `{fp.site}`")
    st.markdown(f"**Training:** {summary.speed_text()}", help=SPEED_HELP)
    st.markdown(f"**Per unit of work:** {summary.efficiency_text()}")
    if {"simulated", "estimated"} & set(fp.energy_source.split("+")):
        st.warning(
            "This energy was not measured by a hardware sensor: read it as "
            f"{fp.energy_source}, not as a measurement."
        )


def table19(summary: RunSummary, facts: str, read_at: str) -> None:
    """The run's row beside the reference rows (HTML that stacks below 900 px), its notes and downloads."""
    st.subheader("Table 19: this run beside the OLMo 2 paper's rows")
    st.html(table19_html(summary))
    notes = footnotes(summary.rows)
    with st.expander(f"Notes on these figures ({len(notes)})"):
        for note in notes:
            st.caption(no_shortcodes(note))
    stem = f"wattlog-{summary.run.name}"
    files = {
        "The run's CSV": (f"{stem}-run.csv", summary.run_csv(), "text/csv"),
        **{
            f"Table 19 {name.rsplit('.', 1)[1].upper()}": (name, text, mime)
            for name, (text, mime) in summary.downloads().items()
        },
        "Printable page": (f"{stem}.html", printable_page(summary, facts, read_at), "text/html"),
    }
    for column, (label, (name, text, mime)) in zip(st.columns(len(files)), files.items(), strict=True):
        column.download_button(label, text, file_name=name, mime=mime)
    st.caption(
        "The run's CSV is what `wattlog table NAME --format csv` prints; the printable page holds the "
        f"figures, Table 19 and its notes (read at {no_shortcodes(read_at)})."
    )


def grafana_link(run: str) -> None:
    """A link to the run on the Grafana energy board, where `wattlog report --grafana URL` named one."""
    base = os.environ.get(GRAFANA_ENV, "").strip()
    if base:
        st.markdown(f"[Open this run in Grafana]({grafana_url(base, run)}) (live power, energy and alerts)")


def static_table(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` ready for `st.table`: cells as escaped Markdown, no index column.

    A static table wraps its cells, so every column stays on screen at 800 px (a data grid
    scrolls sideways), and it draws at once where a grid first loads its canvas code.
    """
    return frame.astype(str).map(markdown_text).set_index(frame.columns[0])


def _url_follows_pick() -> None:
    if st.session_state.get("run") is not None:
        st.query_params["run"] = st.session_state["run"]


def choose_run(names: list[str], ledger: str) -> str | None:
    """The run to show: ?run= when the ledger holds it, else the newest; the URL follows every pick.

    An unknown ?run= is said plainly and nothing is shown until a run is picked: showing another
    run under a shared link would pass one run's figures off as another's.
    """
    wanted = st.query_params.get("run")
    index: int | None = len(names) - 1
    if wanted is not None and wanted not in names:
        st.error(
            f"Run {wanted!r} is not in the ledger {ledger}: pick one of its {len(names)} runs below "
            "(`wattlog table` lists them)."
        )
        index = None
    elif wanted is not None:
        index = names.index(wanted)
    # On the page, not in the sidebar: at 800 px a sidebar would take a third of the width. The pick is
    # written to the URL before the rerun, so the rerun reads the same run from ?run=.
    run = st.selectbox(
        "Run", names, index=index, placeholder="Choose a run", key="run", on_change=_url_follows_pick
    )
    st.caption(f"Ledger: {ledger}")
    if run is not None and st.query_params.get("run") != run:
        st.query_params["run"] = run
    return run


def power_fluctuation(ledger: Ledger, run: RunInfo) -> None:
    """Power as % of the power limit, dips, the job's swing and ramp (as `wattlog table --power`)."""
    st.subheader("Power fluctuation")
    figures, notes = run_power(ledger, run)
    cells = power_cells(run.name, figures)
    st.table(static_table(pd.DataFrame([dict(zip(POWER_HEADERS[1:], cells[1:], strict=True))])))
    for note in [*POWER_NOTES, *notes]:
        st.caption(no_shortcodes(note))


def project_section(ledger: Ledger, run: RunInfo) -> None:
    """The run's project as the follow-up papers report it: Tables 1-3, development and final (on demand).

    Behind a toggle: a project of a thousand runs is read only when someone asks for it.
    """
    from wattlog.accounting.publishing.project_table import project_tables

    project = ledger.project_of(run)
    st.subheader(f"Project {project}: development and final")
    if not st.toggle("Show the project's Tables 1-3 (every run of the project)", key="project"):
        st.caption(
            "Tables 1-3 of Morrison et al. (ICLR 2025): development by phase, the final runs, inference."
        )
        return
    from wattlog.dashboards.report.data import report_options
    from wattlog.dashboards.report.project_columns import run_verdicts, with_verdicts

    options, runs = report_options(), ledger.runs(project)
    grids = project_tables(ledger, project, "phase", options)
    for grid in with_verdicts(grids, runs, run_verdicts(ledger, runs, options)):
        st.markdown(f"**{markdown_text(grid.title)}**")
        st.table(static_table(pd.DataFrame(grid.cells, columns=grid.headers)))
        for note in grid.notes:
            st.caption(no_shortcodes(note))


def linked_run(ledger: Ledger) -> str | None:
    """The run a link names (?run=) when the ledger holds it, found without listing every run."""
    wanted = st.query_params.get("run")
    found = ledger.find_run(wanted) if wanted else None
    return wanted if found is not None and found.name == wanted else None


def run_names(ledger: Ledger, where: str) -> list[str]:
    """Every run's name, oldest first; says so and stops when the ledger holds none."""
    names = [r.name for r in ledger.runs()]
    if not names:
        st.info(f"No runs in the ledger {where} yet: run `wattlog demo` first.")
        st.stop()
    return names


def main() -> None:
    """Draw the page: the first figures, then the charts and tables below them.

    A linked run (?run=, as the boards' links) is drawn before the run list is read: on a ledger
    of a thousand runs the list then holds back only the picker, drawn into its place above.
    """
    st.set_page_config(page_title="wattlog carbon report", layout="wide", initial_sidebar_state="collapsed")
    url = resolve_url(None)  # $WATTLOG_DB or the default, as every wattlog command; also the cache key
    where = describe_url(url)
    picker = st.container()
    try:
        ledger = open_ledger(url)
        run = linked = linked_run(ledger)
        if linked is None:
            with picker:
                run = choose_run(run_names(ledger, where), where)
        if run is None:
            st.stop()
        summary = load_summary(ledger, run)
    except WattlogError as error:
        st.error(str(error))
        st.stop()
    r = summary.run
    st.title(f"Carbon report: {r.name}")
    end = utc_text(r.end_s) if r.end_s else "still running"
    facts = (
        f"model {r.model or '-'} · site {r.site or '-'} · {r.status} · "
        f"{utc_text(r.start_s)} to {end} · restarts {r.restarts}"
    )
    st.caption(no_shortcodes(facts))
    headline(summary)
    table19(summary, facts, utc_text(ledger.wall_s()))
    if linked is not None:
        with picker:
            try:
                choose_run(run_names(ledger, where), where)
            except WattlogError as error:
                st.error(str(error))
    grafana_link(r.name)
    details(ledger, summary)


def details(ledger: Ledger, summary: RunSummary) -> None:
    """Everything below the first figures: read and drawn after them (Altair is imported here)."""
    from wattlog.dashboards.report import charts

    try:
        report = load_details(ledger, summary)
    except WattlogError as error:
        st.error(str(error))
        st.stop()
    charts.timeline(report)
    charts.breakdown(report)
    power_fluctuation(ledger, report.run)
    st.subheader("Events")
    st.table(static_table(report.events.assign(time=utc_strings(report.events["time"]))))
    project_section(ledger, report.run)


main()
