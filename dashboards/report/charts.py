"""The carbon report's charts: power and energy over time with named events and gaps, energy by kind and use.

Imported by the page after its first figures are drawn: Altair and the charts' data wait
until the headline and Table 19 are on screen.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from wattlog.accounting.units import unit_for
from wattlog.dashboards.report.data import RunReport, utc_strings

CHART_HEIGHT_PX = 280
BAR_HEIGHT_PX = 30
AXIS_HEIGHT_PX = 70  # the x axis and its title: "fit" takes them out of the height
EVENT_COLOUR = "#c0392b"
GAP_COLOUR = "#f39c12"
# Device kinds in blues and greens: never the events' red nor the gaps' orange.
KIND_COLOURS = {"gpu": "#1f77b4", "cpu": "#17becf", "dram": "#2ca02c", "node": "#7f7f7f"}


def _measured_span(report: RunReport) -> tuple[pd.Timestamp, pd.Timestamp]:
    """From the run's start to its last energy row or its last gap's end, whichever is later (UTC).

    A killed run's lease gaps lie after its last row (39 % of its device-seconds, the reason it is
    NOT VALID): an axis ending at the last row left them off the charts.
    """
    start = pd.Timestamp(report.run.start_s, unit="s", tz="UTC")
    gaps = report.gaps.dropna(subset=["start", "end"])
    first, last = min(start, report.power["time"].min()), report.power["time"].max()
    if gaps.empty:
        return first, last
    return min(first, gaps["start"].min()), max(last, gaps["end"].max())


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
    events = report.events.assign(when=utc_strings(report.events["time"]))
    rules = (
        alt.Chart(events)
        .mark_rule(color=EVENT_COLOUR, strokeDash=[4, 3], clip=True)
        .encode(x=x, tooltip=["when:N", "kind:N", "status:N", "detail:N"])
    )
    # Labels right of their rule: the first event (a health check at the start) keeps its label in the plot.
    # An alert's label carries its status: its firing and its resolution are two marks, not a repeat.
    # Events at one instant (a restart and its lost work) share one label, not two on top of each other.
    named = (
        events.assign(kind=event_labels(events)).groupby("time", as_index=False).agg(kind=("kind", ", ".join))
    )
    labels = (
        alt.Chart(named)
        .mark_text(color=EVENT_COLOUR, angle=270, align="right", baseline="top", dy=2, clip=True)
        .encode(x=x, y=alt.value(4), text="kind:N")
    )
    return rules + labels


def event_labels(events: pd.DataFrame) -> pd.Series:
    """Each event's name on the charts: its kind, and an alert's status ("alert firing", "alert resolved").

    >>> event_labels(pd.DataFrame({"kind": ["restart", "alert"], "status": ["", "resolved"]})).tolist()
    ['restart', 'alert resolved']
    """
    return (events["kind"].astype(str) + " " + events["status"].astype(str)).str.strip()


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
                start_utc=utc_strings(report.gaps["start"]), end_utc=utc_strings(report.gaps["end"])
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
        "Red dashed lines: events, named at the top (restarts, spikes, alerts firing or resolved). "
        f"Orange bands: gaps, when a device was not measured ({len(report.gaps)} recorded; "
        "never filled in). Times in UTC."
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
