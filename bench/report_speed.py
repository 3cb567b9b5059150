"""How soon the carbon report shows its first figures, in headless Chromium, on a ledger of many runs.

    .venv/bin/python -m bench.report_speed [--runs 1000] [--rows 48] [--loads 5]

Seeds a temporary SQLite ledger with `--runs` finished runs of `--rows` hourly energy rows
each (the last one the seeded report run of tests/dashboards/seed.py), starts `wattlog report`
on a free port and opens `?run=NAME` in Debian's Chromium through Playwright (never
`playwright install`). Prints, per load, the seconds from navigation to the headline's first
figure and to the fourth chart (and to the run picker: the page's own start, which no
change to the report's Python shortens); the first load is cold (the server imports and reads all),
the rest warm (a new browser tab each time, the server already running; with --cached the tabs
share the browser's cache, as a person reopening the report). Also the CPU seconds of server and
browser together (less sensitive to the machine's load). Target: warm first figures under 2 s.
Beside it, taking turns with it load by load, a floor (bench/report_floor_app.py: a heading, a
select box and four charts in Streamlit, nothing of the report), served the same way: what no
change to the report can go below, and the report's time as a ratio of it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.dashboards.seed import RUN, seed_ledger
from tests.integration.servers import free_port, serving_process, wattlog_process
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.dashboards.cli import streamlit_command
from wattlog.records import EnergyInterval, Kind, Source

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
TARGET_S = 2.0
FIRST_FIGURE = ".st-key-headline h3"
"""The headline's first figure (Markdown since the report stopped using st.metric; before: stMetricValue)."""
START_S = 1_700_000_000.0
PICKER = '[data-testid="stSelectbox"]'
PICKER_SEEN = f"""
new MutationObserver((_, observer) => {{
  if (document.querySelector('{PICKER}')) {{
    window.__pickerSeenMs = performance.now();
    observer.disconnect();
  }}
}}).observe(document, {{subtree: true, childList: true}});
"""
"""Records when the run picker enters the page (ms since navigation), however the waits are ordered."""


def seed_many(url: str, runs: int, rows: int) -> None:
    """`runs - 1` small finished runs, then the report's seeded run (so it is the newest)."""
    ledger = Ledger(make_engine(url))
    for i in range(runs - 1):
        name = f"run-{i:04d}"
        start = START_S + i * 86_400
        ledger.start_run(name, RunSpec(model="bench", site="jupiter", host="node1"))
        ledger.record_intervals(
            name,
            [
                EnergyInterval.of(
                    "node1", "GPU-0", Kind.GPU, Source.SIMULATED, t, t + 3600, 2.3e6, 2.2e6, 2.4e6
                )
                for t in (start + h * 3600 for h in range(rows))
            ],
        )
        ledger.end_run(name, end_s=start + rows * 3600)
    seed_ledger(url)


def tree_cpu_s() -> float:
    """CPU seconds used so far by this process's children and theirs: the report server and the browser.

    Less sensitive to the machine's load than wall time (two CPUs shared with other work here).
    """
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended between the listing and the read
            continue
        total += times.user + times.system
    return total


@dataclass(frozen=True, slots=True)
class Load:
    """One page load: seconds from navigation to the picker, the first figure, the fourth chart, and CPU."""

    picker_s: float
    figures_s: float
    charts_s: float
    figures_cpu_s: float
    charts_cpu_s: float


def first_figures(pages: Sequence[tuple[str, str]], loads: int, cached: bool = False) -> list[list[Load]]:
    """Per page (its base URL, its first figure's selector): seconds (and CPU seconds of servers and
    browser) to the run picker, first figure and fourth chart of `loads` loads, the pages taking turns
    (a drift in the machine's load hits all alike).

    `cached`: every tab in one browser context, so the page's scripts come from the browser's cache
    after the first load (a person opening the report again); else each tab starts with an empty cache.
    """
    from playwright.sync_api import sync_playwright

    times: list[list[Load]] = [[] for _ in pages]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1440, "height": 3000}) if cached else None
        try:
            for _ in range(loads):
                for (base, first_figure), page_times in zip(pages, times, strict=True):
                    page = (
                        context.new_page()
                        if context
                        else browser.new_page(viewport={"width": 1440, "height": 3000})
                    )
                    page_times.append(_load(page, base, first_figure))
                    page.close()
        finally:
            browser.close()
    return times


def _load(page: Any, base: str, first_figure: str) -> Load:  # noqa: ANN401 - a Playwright page
    """One load of `base`?run=RUN in a new tab."""
    page.add_init_script(PICKER_SEEN)
    cpu = tree_cpu_s()
    began = time.perf_counter()
    page.goto(f"{base}/?run={RUN}", wait_until="commit", timeout=60_000)
    # Waited for first, whatever else the page draws before it (the picker used to be
    # awaited first, which hid first figures drawn before it).
    page.locator(first_figure).first.wait_for(timeout=60_000)
    figures, figures_cpu = time.perf_counter() - began, tree_cpu_s() - cpu
    page.locator('[data-testid="stVegaLiteChart"]').nth(3).wait_for(timeout=60_000)
    charts, charts_cpu = time.perf_counter() - began, tree_cpu_s() - cpu
    page.locator(PICKER).first.wait_for(timeout=60_000)
    shell = page.evaluate("window.__pickerSeenMs") / 1000  # the script runs: its first widget
    return Load(shell, figures, charts, figures_cpu, charts_cpu)


@contextlib.contextmanager
def serving_floor(folder: Path) -> Iterator[str]:
    """bench/report_floor_app.py served as `wattlog report` serves the report; its base URL."""
    port = free_port()
    command = streamlit_command("127.0.0.1", port, app=Path(__file__).with_name("report_floor_app.py"))
    base = f"http://127.0.0.1:{port}"
    health = f"{base}/_stcore/health"
    with serving_process(
        command, folder / "floor.log", health, "floor", healthy=lambda b: b == b"ok", timeout_s=60
    ):
        yield base


def print_warm(report: list[Load], floor: list[Load]) -> None:
    """The warm loads' medians: the report's against the target and against the floor's."""
    median = statistics.median(w.figures_s for w in report)
    verdict = "under" if median < TARGET_S else "OVER"
    print(
        f"warm first figures: median {median:.2f} s, max {max(w.figures_s for w in report):.2f} s "
        f"({verdict} {TARGET_S} s); CPU (server + browser) median "
        f"{statistics.median(w.figures_cpu_s for w in report):.2f} s to the figures, "
        f"{statistics.median(w.charts_cpu_s for w in report):.2f} s to the charts"
    )
    if floor:
        floor_s = statistics.median(w.figures_s for w in floor)
        floor_charts = statistics.median(w.charts_s for w in floor)
        charts = statistics.median(w.charts_s for w in report)
        print(
            f"the floor (a Streamlit page of a heading, a select box and four charts, nothing of the "
            f"report): first figure median {floor_s:.2f} s, charts {floor_charts:.2f} s; the report "
            f"{median / floor_s:.2f}x ({median - floor_s:+.2f} s) and {charts / floor_charts:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=48, help="hourly energy rows per run")
    parser.add_argument("--loads", type=int, default=5, help="page loads (the first is cold)")
    parser.add_argument("--ledger", type=Path, help="a copy of this SQLite ledger instead of seeding")
    parser.add_argument(
        "--first-figure",
        default=FIRST_FIGURE,
        help="CSS selector of the first figure (the report before 2026-12-04: '[data-testid=stMetricValue]')",
    )
    parser.add_argument(
        "--cached", action="store_true", help="one browser context: scripts cached after load 1"
    )
    parser.add_argument("--keep", type=Path, help="also copy the seeded ledger here (to profile it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        began = time.perf_counter()
        if args.ledger:
            shutil.copy(args.ledger, Path(tmp) / "ledger.db")
            print(f"ledger: a copy of {args.ledger}")
        else:
            seed_many(url, args.runs, args.rows)
            print(f"seeded {args.runs} runs x {args.rows} rows in {time.perf_counter() - began:.1f} s")
        if args.keep:  # SQLite's backup, not a file copy: rows still in the WAL file come along
            with sqlite3.connect(Path(tmp) / "ledger.db") as source, sqlite3.connect(args.keep) as kept:
                source.backup(kept)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with (
            wattlog_process(
                ["report", "--db", url, "--port", str(port)],
                Path(tmp) / "report.log",
                f"{base}/_stcore/health",
                healthy=lambda body: body == b"ok",
                timeout_s=60,
            ),
            serving_floor(Path(tmp)) as floor_base,
        ):
            pages = [(base, args.first_figure), (floor_base, FIRST_FIGURE)]
            times, floor = first_figures(pages, args.loads, args.cached)
    for i, load in enumerate(times):
        kind = "cold" if i == 0 else "warm"
        print(
            f"load {i + 1} ({kind}): picker {load.picker_s:.2f} s, first figures {load.figures_s:.2f} s "
            f"(CPU {load.figures_cpu_s:.2f} s), charts {load.charts_s:.2f} s (CPU {load.charts_cpu_s:.2f} s)"
        )
    if len(times) > 1:
        print_warm(times[1:], floor[1:])
    print(f"load average over the last minute: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
