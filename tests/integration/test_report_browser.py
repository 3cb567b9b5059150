"""The carbon report in a real browser: `wattlog report` on 127.0.0.1, headless Chromium via Playwright.

Chromium is Debian's (/usr/bin/chromium); `playwright install` is never run. The
page's headline figures are checked against the ledger's footprint of the run,
and a full-page screenshot is saved to the test's tmp_path.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboards.seed import RUN, START_S, seed_ledger
from tests.integration.servers import free_port, wattlog_process
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.render import readable_amount
from wattlog.accounting.units import mwh_of
from wattlog.dashboards.report.data import load_report
from wattlog.records import EnergyInterval, Kind, Source

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


HEADLINE = ".st-key-headline"
FIGURE = "h3"
"""The headline's figures: Markdown in the container keyed "headline" (st.metric waited for Vega)."""
TABLE19 = "table.wl-t19"


def headline_shown(page: Any) -> dict[str, str]:
    """Label -> figure of the headline as the browser shows it."""
    shown = {}
    columns = page.locator(f'{HEADLINE} [data-testid="stColumn"]')
    for i in range(columns.count()):
        label = columns.nth(i).locator("p").first.inner_text().strip()
        shown[label] = columns.nth(i).locator(FIGURE).first.inner_text().strip()
    return shown


CELLS_SCRIPT = """
([selector, width]) => {
  const table = document.querySelector(selector);
  const columns = table.querySelectorAll("thead th").length - 1;
  const rows = [...table.querySelectorAll("tbody tr")];
  const off = [];
  for (const [r, row] of rows.entries()) {
    const cells = [...row.querySelectorAll("td")];
    if (cells.length !== columns) off.push(`row ${r}: ${cells.length} of ${columns} cells`);
    for (const [c, cell] of cells.entries()) {
      const box = cell.getBoundingClientRect();
      const shown = box.width > 0 && box.height > 0 && getComputedStyle(cell).visibility !== "hidden";
      if (!shown || box.left < 0 || box.right > width) off.push(`row ${r} cell ${c}: ${box.right}`);
    }
  }
  const stacked = getComputedStyle(table.querySelector("thead")).display === "none";
  const label = rows[0].querySelector("td:last-child .wl-label");
  return {columns, rows: rows.length, off, stacked, labelShown: getComputedStyle(label).display !== "none"};
}
"""


def every_column_on_screen(page: Any, width: int) -> None:
    """Each Table-19 row shows every cell within `width`: as a table, or stacked in a card with labels."""
    found = page.evaluate(CELLS_SCRIPT, [TABLE19, width])
    assert found["columns"] >= 8 and found["rows"] >= 2, found
    assert found["off"] == [], found["off"]
    assert found["labelShown"] == found["stacked"]  # a card names each value; a table's header does


def need(path: str, what: str) -> None:
    if Path(path).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing (CI installs it: the setup is broken)")
    pytest.skip(f"{what} is missing: apt-get install -y chromium")


def screenshot(page: Any, path: Path) -> Path:
    """A full-page screenshot at `path` (also copied to $WATTLOG_SCREENSHOT_DIR when set)."""
    time.sleep(1.0)  # let the charts finish drawing before the screenshot
    page.screenshot(path=str(path), full_page=True)
    keep = os.environ.get("WATTLOG_SCREENSHOT_DIR")
    if keep:
        shutil.copy(path, Path(keep) / path.name)
    return path


@pytest.fixture(autouse=True)
def short_socket_folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Chromium puts its SingletonSocket under TMPDIR, and a socket's path is capped at 107 bytes:
    under a long TMPDIR (a CI's, 120 characters) it refused to start. Its temp folder is a short,
    private one (mkdtemp: 0700, ours)."""
    folder = tempfile.mkdtemp(prefix="wl-chromium-", dir="/tmp")
    monkeypatch.setenv("TMPDIR", folder)
    yield
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    seed_ledger(url)
    return url


@pytest.fixture
def report_url(ledger_url: str, tmp_path: Path) -> Iterator[str]:
    """`wattlog report --db ... --port ...` as its own process (it runs `streamlit run`)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with wattlog_process(
        ["report", "--db", ledger_url, "--port", str(port)],
        tmp_path / "report.log",
        f"{url}/_stcore/health",
        healthy=lambda body: body == b"ok",
        timeout_s=60,
    ):
        yield url


def test_report_page_shows_the_ledgers_headline_numbers(
    report_url: str, ledger_url: str, tmp_path: Path
) -> None:
    need(CHROMIUM, CHROMIUM)
    from playwright.sync_api import sync_playwright

    footprint = load_report(Ledger(make_engine(ledger_url, create=False)), RUN).footprint
    assert footprint is not None
    expected = {
        "Energy (IT)": readable_amount("total_power_mwh", mwh_of(footprint.it_energy_j)),
        "Emissions (CO2eq)": readable_amount("co2_t", footprint.co2_t),
        "Water": readable_amount("water_kl", footprint.water_kl),
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            # Streamlit scrolls inside the page, so a full-page shot needs a viewport as tall as the page.
            page = browser.new_page(viewport={"width": 1400, "height": 3000})
            page.goto(f"{report_url}/?run={RUN}", wait_until="domcontentloaded", timeout=30_000)
            page.get_by_text(f"Carbon report: {RUN}").wait_for(timeout=30_000)
            figures = page.locator(f"{HEADLINE} {FIGURE}")
            figures.nth(2).wait_for(timeout=30_000)
            assert headline_shown(page) == expected
            page.get_by_text("OLMo 2 7B").first.wait_for(timeout=30_000)  # Table 19 drawn
            body = page.locator("body").inner_text()
            assert "Energy source:" in body and "simulated" in body and "OLMo 2 7B" in body
            page.locator('[data-testid="stVegaLiteChart"]').nth(3).wait_for(timeout=30_000)
            page.locator('[data-testid="stDownloadButton"]').nth(2).wait_for(timeout=30_000)
            shot = screenshot(page, tmp_path / "report.png")
        finally:
            browser.close()
    assert shot.stat().st_size > 50_000


def test_a_picked_run_survives_a_reload_and_the_page_reads_at_800_px(
    ledger_url: str, tmp_path: Path, report_url: str
) -> None:
    need(CHROMIUM, CHROMIUM)
    from playwright.sync_api import sync_playwright

    Ledger(make_engine(ledger_url, create=False)).start_run(
        "later-run", RunSpec(site="augusta")
    )  # the newest
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 900})
            page.goto(report_url, wait_until="domcontentloaded", timeout=30_000)
            page.get_by_text("Carbon report: later-run").wait_for(timeout=30_000)
            page.locator('[data-testid="stSelectbox"]').first.click()
            page.get_by_role("option", name=RUN).click()
            page.get_by_text(f"Carbon report: {RUN}").wait_for(timeout=30_000)
            page.wait_for_url(f"**/?run={RUN}", timeout=10_000)  # the pick is in the URL
            page.reload(wait_until="domcontentloaded")
            page.get_by_text(f"Carbon report: {RUN}").wait_for(timeout=30_000)  # and a reload keeps it
            assert "Carbon report: later-run" not in page.locator("body").inner_text()

            # 800 px wide: every Table 19 column on screen, charts tall enough to read.
            page.locator('[data-testid="stVegaLiteChart"]').nth(3).wait_for(timeout=30_000)
            table = page.locator(TABLE19)
            box = table.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 800
            for header in ("Total power (MWh)", "Emissions (tCO2eq)", "Water (kL)", "Energy source"):
                cell = table.locator("tbody tr").first.locator(".wl-label", has_text=header).first
                cell_box = cell.bounding_box()
                assert cell.is_visible() and cell_box is not None, header  # stacked: named in each card
                assert cell_box["x"] + cell_box["width"] <= 800, header
            every_column_on_screen(page, 800)
            heights = [
                page.locator('[data-testid="stVegaLiteChart"]').nth(i).bounding_box()["height"]  # type: ignore[index]
                for i in range(2)
            ]
            assert min(heights) >= 200, heights
            body = page.locator("body").inner_text()
            assert "None" not in body
            height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 3000")
            page.set_viewport_size({"width": 800, "height": int(height) + 100})
            shot = screenshot(page, tmp_path / "report-800px.png")
        finally:
            browser.close()
    assert shot.stat().st_size > 30_000


def seed_sizes(url: str) -> dict[str, str]:
    """A 28.5 Wh run and a 32 MWh one (128 nodes at 10.4 kW for a day) beside the seeded run.

    Returns run name -> the headline unit a reader should see.
    """
    ledger = Ledger(make_engine(url, create=False))
    # started at their rows' time (not now, after them) and at a power a board can draw: 342 W
    ledger.start_run("tiny", RunSpec(model="tiny", site="jupiter", host="node1"), start_s=START_S)
    gpu = EnergyInterval.of(
        "node1", "GPU-0", Kind.GPU, Source.COUNTER, START_S, START_S + 300, 102_600.0, 1e5, 1.1e5
    )
    ledger.record_intervals("tiny", [gpu])
    ledger.end_run("tiny", end_s=START_S + 300)
    ledger.start_run("big", RunSpec(model="big", site="jupiter", host="node000"), start_s=START_S)
    joules = 32e6 * 3600 / (128 * 24)  # 32 MWh over 128 nodes x 24 hourly rows
    for hour in range(24):
        start = START_S + hour * 3600
        rows = [
            EnergyInterval.of(
                f"node{n:03d}",
                "node",
                Kind.NODE,
                Source.COUNTER,
                start,
                start + 3600,
                joules,
                0.99 * joules,
                1.01 * joules,
            )
            for n in range(128)
        ]
        ledger.record_intervals("big", rows)
    ledger.end_run("big", end_s=START_S + 24 * 3600)
    return {"tiny": "Wh", "big": "MWh"}


def test_screenshots_of_a_32_mwh_run_at_800_px_and_a_small_one_at_1440_px(
    ledger_url: str, tmp_path: Path
) -> None:
    """The headline reads in the unit of its size and every Table-19 column is on screen at 800 px."""
    need(CHROMIUM, CHROMIUM)
    from playwright.sync_api import sync_playwright

    units = seed_sizes(ledger_url)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (
        wattlog_process(
            ["report", "--db", ledger_url, "--port", str(port)],
            tmp_path / "report.log",
            f"{url}/_stcore/health",
            healthy=lambda body: body == b"ok",
            timeout_s=60,
        ),
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            # the big run at the narrow width (its long figures are the ones that could be cut), the
            # small one at the wide: each unit and each width once, two page loads where four were
            for run, width in (("big", 800), ("tiny", 1440)):
                unit = units[run]
                page = browser.new_page(viewport={"width": width, "height": 3000})
                page.goto(f"{url}/?run={run}", wait_until="domcontentloaded", timeout=30_000)
                energy = page.locator(f"{HEADLINE} {FIGURE}").first
                energy.wait_for(timeout=30_000)
                assert energy.inner_text().strip().endswith(f" {unit}"), (run, energy.inner_text())
                page.locator('[data-testid="stVegaLiteChart"]').nth(3).wait_for(timeout=30_000)
                table = page.locator(TABLE19)
                every_column_on_screen(page, width)  # the 11th column too, stacked at 800 px
                assert table.locator("li").count() == 0  # "-" stays "-", never a list bullet
                assert "tok/J" in page.locator("body").inner_text()  # tokens per joule, "-" if unknown
                height = page.evaluate(
                    "document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 3000"
                )
                page.set_viewport_size({"width": width, "height": int(height) + 100})
                shot = screenshot(page, tmp_path / f"report-{run}-{width}px.png")
                assert shot.stat().st_size > 30_000
                page.close()
        finally:
            browser.close()


ORDER_SCRIPT = """
window.__firstSeen = {};
new MutationObserver(() => {
  for (const [name, selector] of [["figure", ".st-key-headline h3"], ["table", "table.wl-t19"],
                                  ["chart", '[data-testid="stVegaLiteChart"]']]) {
    if (!(name in window.__firstSeen) && document.querySelector(selector)) {
      window.__firstSeen[name] = performance.now();
    }
  }
}).observe(document, {subtree: true, childList: true});
"""


def test_first_figures_are_on_screen_before_any_chart(report_url: str) -> None:
    """The headline and Table 19 come first; the charts (Altair here, Vega in the browser) after them."""
    need(CHROMIUM, CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for _ in range(2):  # cold, then warm (the server has imported everything)
                page = browser.new_page(viewport={"width": 1440, "height": 3000})
                page.add_init_script(ORDER_SCRIPT)
                page.goto(f"{report_url}/?run={RUN}", wait_until="commit", timeout=30_000)
                page.locator('[data-testid="stVegaLiteChart"]').nth(3).wait_for(timeout=30_000)
                seen = page.evaluate("window.__firstSeen")
                assert seen["figure"] <= seen["chart"] and seen["table"] <= seen["chart"], seen
                page.close()
        finally:
            browser.close()
