"""What the carbon report shows, read from the ledger through accounting (no Streamlit here).

A run's footprint and its Table-19 row come from accounting.publishing.run_table (the same
numbers `wattlog table` prints), the reference rows from accounting.publishing.reference,
the downloads from accounting.publishing.render. The split by use (productive, lost work,
health checks, the rest) is accounting.publishing.split's, which reads only the ledger.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from wattlog.accounting.carbon.sites import run_catalog
from wattlog.accounting.fleet.calibration import stored_calibrations
from wattlog.accounting.ledger.lease import reap_before_reading
from wattlog.accounting.publishing.efficiency import Efficiency
from wattlog.accounting.publishing.gaps import GapSummary, run_gaps
from wattlog.accounting.publishing.job_speed import JobSpeed, job_speed
from wattlog.accounting.publishing.market_columns import MARKET_FILE_ENV, add_market_columns
from wattlog.accounting.publishing.reference import reference_table_rows
from wattlog.accounting.publishing.render import MISSING, TableRow, table_cells, to_csv, to_latex, to_markdown
from wattlog.accounting.publishing.run_table import TableOptions, run_footprint, run_row
from wattlog.accounting.publishing.split import energy_split
from wattlog.accounting.units import j_to_kwh, sig3
from wattlog.events import EventKind
from wattlog.records import Kind

if TYPE_CHECKING:
    from wattlog.accounting.ledger import Ledger
    from wattlog.accounting.ledger.views import EventInfo, RunInfo
    from wattlog.accounting.publishing.footprint import Footprint
    from wattlog.records import EnergyInterval

GAP_COLUMNS = ["start", "end", "host", "device", "reason", "detail"]
UTC_FORMAT = "%Y-%m-%d %H:%M:%S UTC"
"""Every time a person reads on the page: to the second, 24-hour clock, in UTC and labelled so."""
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#+-|~$"})
# Streamlit's Markdown loads its emoji plugin (~265 kB of script) before it draws any text with a
# run like ":15:" (its test, in StreamlitMarkdown's bundle: /:(?!material\/|streamlit:)[\w+-][\w_+-]*:/,
# on the raw text: a backslash escape does not hide it). Every time on the page ("09:15:00") had one,
# which held a warm load's first figures back. Such a colon is written as the entity "&#58;".
_SHORTCODE_COLON = re.compile(r":(?=[\w+-][\w+-]*:)")


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """The page's first figures for one run: what the headline and Table 19 show.

    Read before anything the charts need, so the page draws its figures first.

    Attributes:
        run: The ledger's run.
        footprint: Energy, CO2 and water (None when no energy was recorded).
        rows: The run's Table-19 row first, then the paper's reference rows.
        speed: Tokens, tok/s, tok/J and MFU of the whole job (None: no rank reported tokens).
    """

    run: RunInfo
    footprint: Footprint | None
    rows: list[TableRow]
    speed: JobSpeed | None = None

    def speed_text(self) -> str:
        """Tokens, tok/s, tok/J and MFU of the job, as the trainer's panels compute them; "-" where unknown.

        >>> from wattlog.accounting.publishing.job_speed import JobSpeed
        >>> run = RunSummary.__new__(RunSummary)
        >>> object.__setattr__(run, "speed", JobSpeed(8, 4.2e9, 3600.0, 8.4e8, "counter", 1.17e6, 5.0, None))
        >>> run.speed_text()
        '4,200,000,000 tokens · 1.17 M tok/s · 5.00 tok/J · MFU -'

        Tokens are exact (4,096 read "4,100"); a rate beyond six digits takes an SI prefix.
        """
        sp = self.speed
        if sp is None:
            return f"no token counts recorded · {MISSING} tok/s · {MISSING} tok/J · MFU {MISSING}"
        per_s, per_j = (MISSING if v is None else prefixed(v) for v in (sp.tokens_per_s, sp.tokens_per_j))
        mfu = MISSING if sp.mfu is None else f"{100 * sp.mfu:.1f} %"
        return f"{sp.tokens:,.0f} tokens · {per_s} tok/s · {per_j} tok/J · MFU {mfu}"

    def efficiency_text(self) -> str:
        """J per token, J per 10^18 FLOP and mean GPU power / TDP of the run; "-" where unknown."""
        efficiency = self.rows[0].efficiency if self.rows else None
        return (efficiency or Efficiency()).line()

    def table(self) -> pd.DataFrame:
        """Table 19 as shown on the page (formatted like every other wattlog table)."""
        headers, cells = table_cells(self.rows)
        return pd.DataFrame(cells, columns=headers)

    def shown_table(self) -> pd.DataFrame:
        """Table 19 for Markdown (`st.table`): cells escaped, since it reads them as Markdown.

        Unescaped, a missing figure "-" renders as a list bullet and "$" starts a formula.
        """
        return self.table().map(markdown_text)

    def run_csv(self) -> str:
        """The run's own row as `wattlog table RUN --format csv` prints it (no reference rows)."""
        return to_csv(self.rows[:1])

    def downloads(self) -> dict[str, tuple[str, str]]:
        """File name -> (text, MIME type) for CSV, Markdown and LaTeX of Table 19 with the reference rows."""
        stem = f"wattlog-{self.run.name}"
        return {
            f"{stem}.csv": (to_csv(self.rows), "text/csv"),
            f"{stem}.md": (to_markdown(self.rows), "text/markdown"),
            f"{stem}.tex": (to_latex(self.rows), "application/x-tex"),
        }


@dataclass(frozen=True, kw_only=True)
class RunReport(RunSummary):
    """Everything the page shows for one run: the summary, then what the charts and tables below it read.

    Attributes:
        power: Columns time (UTC), kind, power_w: mean power of each kind per flush interval.
        cumulative: Columns time (UTC), energy_kwh: cumulative IT energy.
        by_kind: Columns kind, source, energy_kwh.
        by_use: Columns use, energy_kwh, share.
        use_source: Source label of the energy split by use.
        events: Columns time (UTC), kind, status, category, step, detail (step "" where none: never
            "None"; status "firing" or "resolved" for an alert, "" otherwise).
        gaps: Columns start, end (UTC), host, device, reason, detail: stretches not measured.
    """

    power: pd.DataFrame
    cumulative: pd.DataFrame
    by_kind: pd.DataFrame
    by_use: pd.DataFrame
    use_source: str
    events: pd.DataFrame
    gaps: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=GAP_COLUMNS))


_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"))


def prefixed(value: float) -> str:
    """`value` to 3 significant figures, with an SI prefix beyond six digits (never 2,167,619,048).

    >>> prefixed(4096.0), prefixed(1_170_000.0), prefixed(2_167_619_048.0), prefixed(0.5)
    ('4,100', '1.17 M', '2.17 G', '0.500')
    """
    for size, prefix in _PREFIXES:
        if abs(value) >= size * 0.9995:
            return f"{sig3(value / size)} {prefix}"
    return sig3(value)


def markdown_text(text: str) -> str:
    r"""`text` escaped so Markdown shows it as written: "-" stays "-" (not a bullet).

    >>> markdown_text("-"), markdown_text("1,450 - 4,823"), markdown_text("OLMo 2 7B")
    ('\\-', '1,450 \\- 4,823', 'OLMo 2 7B')
    """
    return no_shortcodes(text.translate(_MARKDOWN_SPECIAL))


def no_shortcodes(text: str) -> str:
    """`text` with no emoji-shortcode-like run (":26:"), shown as written: such colons become "&#58;".

    >>> no_shortcodes("2026-09-21 12:26:40 UTC"), no_shortcodes("site: jupiter")
    ('2026-09-21 12&#58;26:40 UTC', 'site: jupiter')
    """
    return _SHORTCODE_COLON.sub("&#58;", text)


def utc_text(seconds: float) -> str:
    """A time the page shows: "2026-09-21 12:26:40 UTC"."""
    return pd.Timestamp(seconds, unit="s", tz="UTC").strftime(UTC_FORMAT)


def utc_strings(times: pd.Series) -> pd.Series:
    """UTC timestamps as the page writes them (UTC_FORMAT)."""
    return times.dt.strftime(UTC_FORMAT)


def _utc(seconds: pd.Series) -> pd.Series:
    return pd.to_datetime(seconds, unit="s", utc=True)


def _energy_frames(records: list[EnergyInterval]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Power per kind, cumulative IT energy and energy per kind from the ledger's energy rows."""
    if not records:
        empty = pd.DataFrame
        return (
            empty(columns=["time", "kind", "power_w"]),
            empty(columns=["time", "energy_kwh"]),
            empty(columns=["kind", "source", "energy_kwh"]),
        )
    rows = pd.DataFrame(
        [
            {
                "host": r.host,
                "kind": r.kind,
                "source": r.source,
                "start_s": r.start_s,
                "end_s": r.end_s,
                "energy_j": r.energy_j,
            }
            for r in records
        ]
    )
    by_interval = rows.groupby(["start_s", "end_s", "kind"], as_index=False)["energy_j"].sum()
    by_interval["power_w"] = by_interval["energy_j"] / (by_interval["end_s"] - by_interval["start_s"]).clip(
        lower=1e-9
    )
    by_interval["time"] = _utc(by_interval["end_s"])
    # A whole-node meter already includes its host's GPUs, CPU and DRAM: count those hosts once.
    metered = set(rows.loc[rows["kind"] == Kind.NODE.value, "host"])
    it = rows[~(rows["host"].isin(metered) & (rows["kind"] != Kind.NODE.value))]
    per_end = it.groupby("end_s", as_index=False)["energy_j"].sum().sort_values("end_s")
    cumulative = pd.DataFrame(
        {"time": _utc(per_end["end_s"]), "energy_kwh": j_to_kwh(per_end["energy_j"].cumsum())}
    )
    kinds = rows.groupby(["kind", "source"], as_index=False)["energy_j"].sum()
    kinds["energy_kwh"] = j_to_kwh(kinds.pop("energy_j"))
    return by_interval[["time", "kind", "power_w"]], cumulative, kinds


def _events_frame(events: list[EventInfo]) -> pd.DataFrame:
    """The run's events, less the per-flush `progress` bookkeeping (one per flush would drown the rest)."""
    rows = []
    for e in events:
        if e.kind == EventKind.PROGRESS:
            continue
        payload: Mapping[str, Any] = e.payload
        detail = (
            payload.get("message")
            or payload.get("annotations", {}).get("summary")
            or payload.get("alertname", "")
        )
        step = "" if e.step is None else str(e.step)
        # an alert is stored once firing and once resolved: without its status the two read as a repeat
        status = str(payload.get("status", "")) if e.kind == EventKind.ALERT else ""
        rows.append(
            {
                "time": e.time_s,
                "kind": e.kind,
                "status": status,
                "category": e.category,
                "step": step,
                "detail": detail or "",
            }
        )
    frame = pd.DataFrame(rows, columns=["time", "kind", "status", "category", "step", "detail"])
    frame["time"] = _utc(frame["time"])
    return frame


def gaps_frame(summary: GapSummary) -> pd.DataFrame:
    """The run's gaps as the report draws them: recorded ones and the downtime between attempts.

    One implementation with the tables' gap footnote (accounting.publishing.gaps): `reason` is the group
    (device lost, agent down, ...), `detail` the text the agent recorded.
    """
    frame = pd.DataFrame(
        [
            {
                "start": g.start_s,
                "end": g.end_s,
                "host": g.host,
                "device": g.device,
                "reason": g.reason.words,
                "detail": g.detail,
            }
            for g in summary.gaps
        ],
        columns=GAP_COLUMNS,
    )
    frame["start"], frame["end"] = _utc(frame["start"]), _utc(frame["end"])
    return frame


def report_options() -> TableOptions:
    """How the page turns runs into rows: as `wattlog table`'s exports do (built-in sites and
    ``$WATTLOG_SITES_FILE``'s, stored calibrations, the validity gate on), so the run's CSV
    download is byte for byte the CLI's."""
    return TableOptions(catalog=run_catalog(), calibrations=stored_calibrations())


def load_summary(
    ledger: Ledger, run: str, options: TableOptions | None = None, market_file: str | None = None
) -> RunSummary:
    """Read one run's first figures: the run, its footprint, its Table-19 row and its speed.

    Args:
        ledger: The ledger.
        run: Run name or id.
        options: How runs become rows (default: :func:`report_options`).
        market_file: Instruments and residual mixes: the run's row adds market-based columns, annual
            and hourly matching, as `wattlog table --market-file` (None: ``$WATTLOG_MARKET_FILE``, if set).

    Raises:
        LedgerError: No such run or the database fails.
        ConfigError: The run's site is unknown.
    """
    options = options or report_options()
    reap_before_reading(ledger)  # a run whose agent died shows as lost, with its gap
    row = ledger.get_run(run)
    table_row = run_row(ledger, row, options)
    market_file = market_file or os.environ.get(MARKET_FILE_ENV)
    if market_file:
        table_row = add_market_columns(ledger, [row], [table_row], options, Path(market_file))[0][0]
    return RunSummary(
        run=row,
        footprint=run_footprint(ledger, row, options),
        rows=[table_row, *reference_table_rows(table19_only=True)],
        speed=job_speed(ledger, row.id),
    )


def load_details(ledger: Ledger, summary: RunSummary) -> RunReport:
    """The rest of a run's report: power, energy, the split by use, events and gaps."""
    run_id = summary.run.id
    power, cumulative, by_kind = _energy_frames(ledger.energy_rows(run_id))
    split = energy_split(ledger, run_id)
    by_use = pd.DataFrame(
        [
            {"use": split.label(use, short=True), "energy_kwh": j_to_kwh(joules), "share": split.share(use)}
            for use, joules in split.joules.items()
        ]
    )
    return RunReport(
        run=summary.run,
        footprint=summary.footprint,
        rows=summary.rows,
        speed=summary.speed,
        power=power,
        cumulative=cumulative,
        by_kind=by_kind,
        by_use=by_use,
        use_source=split.source,
        events=_events_frame(ledger.events(run_id)),
        gaps=gaps_frame(run_gaps(ledger, run_id)),
    )


def load_report(
    ledger: Ledger, run: str, options: TableOptions | None = None, market_file: str | None = None
) -> RunReport:
    """Read one run's whole report from the ledger (the summary, then the details).

    Args:
        ledger: The ledger.
        run: Run name or id.
        options: How runs become rows (default: as `wattlog table`, see report_options).
        market_file: Market-based columns' instruments (see :func:`load_summary`).

    Raises:
        LedgerError: No such run or the database fails.
        ConfigError: The run's site is unknown.
    """
    return load_details(ledger, load_summary(ledger, run, options, market_file))
