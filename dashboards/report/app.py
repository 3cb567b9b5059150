"""wattlog's carbon report, a Streamlit page: `wattlog report` (or `streamlit run dashboards/report/app.py`).

Reads the ledger named by $WATTLOG_DB (the CLI sets it from --db) through accounting,
read-only. Pick a run: the page's URL follows (?run=NAME), so a reload or a shared
link shows the same run, and a ?run= the ledger does not hold says so instead of
showing another. Headline energy, CO2 and water with the energy's source; Table 19
with the run beside the paper's rows (download as CSV, Markdown, LaTeX; notes folded
away); power and cumulative energy over time with the run's events (red) and gaps
(orange); the energy by device kind and by use; power fluctuation; the events. Laid
out to read at 800 px.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from wattlog.accounting.ledger import Ledger, RunInfo, describe_url, make_engine, resolve_url
from wattlog.accounting.power_report import POWER_HEADERS, POWER_NOTES, power_cells, run_power
from wattlog.accounting.render import footnotes, format_figure, readable_amount
from wattlog.accounting.units import mwh_of, unit_for
from wattlog.dashboards.report.data import UTC_FORMAT, RunReport, load_report, markdown_text, utc_text
from wattlog.errors import WattlogError

CHART_HEIGHT_PX = 280
BAR_HEIGHT_PX = 30
AXIS_HEIGHT_PX = 70  # the x axis and its title: "fit" takes them out of the height
EVENT_COLOUR = "#c0392b"
GAP_COLOUR = "#f39c12"
# Device kinds in blues and greens: never the events' red nor the gaps' orange.
KIND_COLOURS = {"gpu": "#1f77b4", "cpu": "#17becf", "dram": "#2ca02c", "node": "#7f7f7f"}

SPEED_HELP = (
    "Every rank's tokens over the job's IT energy (accounting.job_speed, as the trainer's panels); "
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


def headline(report: RunReport) -> None:
    """Energy, CO2 and water of the run in units of their size, with the energy's band and source.

    "28.5 Wh", not "0.0000285 MWh": the paper's units stay in Table 19 and in each figure's help.
    """
    fp = report.footprint
    if fp is None:
        st.info("This run recorded no energy yet.")
        return
    energy, co2, water = st.columns(3)
    it_mwh = mwh_of(fp.it_energy_j)
    energy.metric(
        "Energy (IT)",
        readable_amount("total_power_mwh", it_mwh),
        help=f"{format_figure('total_power_mwh', it_mwh)} MWh as in Table 19, measured at the "
        f"devices; facility energy = x PUE {format_figure('pue', fp.pue)}",
    )
    energy.caption(f"band {readable_amount('total_power_mwh', mwh_of(fp.energy_band_j))}")
    co2.metric(
        "Emissions (CO2eq)",
        readable_amount("co2_t", fp.co2_t),
        help=f"{format_figure('co2_t', fp.co2_t)} tCO2eq as in Table 19 = energy x PUE x "
        f"{format_figure('carbon_intensity_kg_per_kwh', fp.intensity_kg_per_kwh)} kg/kWh",
    )
    co2.caption(f"intensity: {fp.intensity_label}")
    water.metric(
        "Water",
        readable_amount("water_kl", fp.water_kl),
        help=f"{format_figure('water_kl', fp.water_kl)} kL as in Table 19 = energy x PUE x WUE "
        f"{format_figure('wue_l_per_kwh', fp.wue_l_per_kwh)} L/kWh",
    )
    water.caption(f"WUE {format_figure('wue_l_per_kwh', fp.wue_l_per_kwh)} L/kWh")
    parts = [f"`{s}` ({SOURCE_NOTES.get(s, s)})" for s in fp.energy_source.split("+")]
    st.markdown(f"**Energy source:** {', '.join(parts)} · site `{fp.site}`")
    st.markdown(f"**Training:** {report.speed_text()}", help=SPEED_HELP)
    st.markdown(f"**Per unit of work:** {report.efficiency_text()}")
    if {"simulated", "estimated"} & set(fp.energy_source.split("+")):
        st.warning(
            "This energy was not measured by a hardware sensor: read it as "
            f"{fp.energy_source}, not as a measurement."
        )


def table19(report: RunReport) -> None:
    """The run's row beside the reference rows, with downloads."""
    st.subheader("Table 19: this run beside the OLMo 2 paper's rows")
    # A static table wraps its cells: every column stays on screen at 800 px (a data grid hid 5 of 9).
    table = report.shown_table()
    st.table(table.set_index(table.columns[0]))
    notes = footnotes(report.rows)
    with st.expander(f"Notes on these figures ({len(notes)})"):
        for note in notes:
            st.caption(note)
    for column, (name, (text, mime)) in zip(st.columns(3), report.downloads().items(), strict=True):
        column.download_button(f"Download {name.rsplit('.', 1)[1].upper()}", text, file_name=name, mime=mime)


def _measured_span(report: RunReport) -> tuple[pd.Timestamp, pd.Timestamp]:
    """From the run's start to its last energy row (UTC)."""
    start = pd.Timestamp(report.run.start_s, unit="s", tz="UTC")
    return min(start, report.power["time"].min()), report.power["time"].max()


def _time_axis(report: RunReport) -> tuple[alt.X, alt.Scale]:
    """The x of every time chart and its scale: UTC on a 24-hour clock (Vega-Lite draws local, 12-hour).

    The domain is the measured span, so a late alert cannot squeeze the run into part of the chart.
    """
    first, last = _measured_span(report)
    within_day = (last - first) <= pd.Timedelta(days=1)
    scale = alt.Scale(type="utc", domain=[first.isoformat(), last.isoformat()])
    axis = alt.Axis(format="%H:%M:%S" if within_day else "%m-%d %H:%M", labelAngle=0)
    return alt.X("time:T", title="time (UTC)", scale=scale, axis=axis), scale


def _event_marks(report: RunReport, x: alt.X) -> alt.LayerChart:
    """The run's events as dashed rules, each labelled with its kind (a bare red line says nothing)."""
    events = report.events.assign(when=_utc_strings(report.events["time"]))
    rules = (
        alt.Chart(events)
        .mark_rule(color=EVENT_COLOUR, strokeDash=[4, 3], clip=True)
        .encode(x=x, tooltip=["when:N", "kind:N", "detail:N"])
    )
    # Events at one instant (a restart and its lost work) share one label, not two on top of each other.
    named = events.groupby("time", as_index=False).agg(kind=("kind", ", ".join))
    labels = (
        alt.Chart(named)
        .mark_text(color=EVENT_COLOUR, angle=270, align="right", baseline="bottom", dy=-2, clip=True)
        .encode(x=x, y=alt.value(4), text="kind:N")
    )
    return rules + labels


def _utc_strings(times: pd.Series) -> pd.Series:
    return times.dt.strftime(UTC_FORMAT)


def timeline(report: RunReport) -> None:
    """Power and cumulative energy over time, the run's events as labelled vertical rules."""
    st.subheader("Power and energy over time")
    if report.power.empty:
        st.info("No energy rows recorded.")
        return
    x, scale = _time_axis(report)
    events = _event_marks(report, x)
    gaps = (
        alt.Chart(
            report.gaps.assign(
                start_utc=_utc_strings(report.gaps["start"]), end_utc=_utc_strings(report.gaps["end"])
            )
        )
        .mark_rect(color=GAP_COLOUR, opacity=0.35, clip=True)
        .encode(
            x=alt.X("start:T", scale=scale),
            x2="end:T",
            tooltip=["start_utc:N", "end_utc:N", "host:N", "device:N", "reason:N", "detail:N"],
        )
    )
    kinds = sorted(set(report.power["kind"]))
    palette = alt.Scale(domain=kinds, range=[KIND_COLOURS.get(k, "#8c564b") for k in kinds])
    # Axes in the unit of the run's size: "1.3 MW", not "1,300,000 W".
    watts, watts_size = unit_for(float(report.power["power_w"].max()), "power")
    joules, joules_size = unit_for(float(report.cumulative["energy_kwh"].max()) * 3.6e6, "energy")
    power = (
        alt.Chart(report.power.assign(power=report.power["power_w"] / watts_size))
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("power:Q", title=f"power ({watts})"),
            color=alt.Color("kind:N", scale=palette, legend=alt.Legend(orient="bottom")),
        )
    )
    cumulative = (
        alt.Chart(report.cumulative.assign(energy=report.cumulative["energy_kwh"] * 3.6e6 / joules_size))
        .mark_area(opacity=0.5, color=KIND_COLOURS["gpu"])
        .encode(x=x, y=alt.Y("energy:Q", title=f"IT energy ({joules})"))
    )
    outside = int((~report.events["time"].between(*_measured_span(report))).sum())
    st.caption(
        "Red dashed lines: events, named at the top (restarts, spikes, alerts). Orange bands: gaps, when a "
        f"device was not measured ({len(report.gaps)} recorded; never filled in). Times in UTC."
        + (f" {outside} events fall outside the measured span: see the table below." if outside else "")
    )
    power = (gaps + power + events).properties(height=CHART_HEIGHT_PX)
    cumulative = (gaps + cumulative + events).properties(height=CHART_HEIGHT_PX)
    left, right = st.columns(2)
    left.altair_chart(power, width="stretch")
    right.altair_chart(cumulative, width="stretch")


def _bars(frame: pd.DataFrame, label: str, rows: int) -> alt.LayerChart:
    """Horizontal bars with every label on its axis and the share at the bar's end (none hidden).

    No y title: the caption names the split, and a vertical title taller than the bars squashes them.
    """
    y = alt.Y(f"{label}:N", title=None, sort=None, axis=alt.Axis(labelLimit=160, labelOverlap=False))
    bars = alt.Chart(frame).mark_bar().encode(x=alt.X("energy_kwh:Q", title="kWh"), y=y)
    text = bars.mark_text(align="left", dx=3).encode(text=alt.Text("share:Q", format=".1%"))
    return (bars + text).properties(height=AXIS_HEIGHT_PX + BAR_HEIGHT_PX * rows)


def breakdown(report: RunReport) -> None:
    """Energy by device kind and by use, each bar named and its share written beside it."""
    st.subheader("Where the energy went")
    if report.by_kind.empty:
        return
    left, right = st.columns(2)
    by_kind = report.by_kind.assign(
        device=report.by_kind["kind"] + " (" + report.by_kind["source"] + ")",
        share=report.by_kind["energy_kwh"] / report.by_kind["energy_kwh"].sum(),
    )
    rows = max(len(by_kind), len(report.by_use))  # one height: the two charts line up side by side
    left.altair_chart(_bars(by_kind, "device", rows), width="stretch")
    left.caption("By device kind (source of its energy).")
    right.altair_chart(_bars(report.by_use, "use", rows), width="stretch")
    right.caption(
        f"By use (productive, lost work, health checks, the rest); energy source: {report.use_source}."
    )


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
        st.caption(note)


def main() -> None:
    """Draw the page."""
    st.set_page_config(page_title="wattlog carbon report", layout="wide", initial_sidebar_state="collapsed")
    url = resolve_url(None)  # $WATTLOG_DB or the default, as every wattlog command; also the cache key
    try:
        ledger = open_ledger(url)
        runs = ledger.runs()
    except WattlogError as error:
        st.error(str(error))
        st.stop()
    if not runs:
        st.info(f"No runs in the ledger {describe_url(url)} yet: run `wattlog demo` first.")
        st.stop()
    run = choose_run([r.name for r in runs], describe_url(url))
    if run is None:
        st.stop()
    try:
        report = load_report(ledger, run)
    except WattlogError as error:
        st.error(str(error))
        st.stop()
    r = report.run
    st.title(f"Carbon report: {r.name}")
    end = utc_text(r.end_s) if r.end_s else "still running"
    st.caption(
        f"model {r.model or '-'} · site {r.site or '-'} · {r.status} · "
        f"{utc_text(r.start_s)} to {end} · restarts {r.restarts}"
    )
    headline(report)
    table19(report)
    timeline(report)
    breakdown(report)
    power_fluctuation(ledger, report.run)
    st.subheader("Events")
    st.table(static_table(report.events.assign(time=_utc_strings(report.events["time"]))))


main()
