"""A run's hours fetched when it closes, within a time budget: the run still closes if the provider fails.

`wattlog run`, the Tracker and the framework callbacks (through
:class:`~wattlog.trainer.session.RunSession`) and `wattlog node` (its first node) call
:func:`fetch_at_close` after the run's end is recorded. When the run's site names a live
provider, the hours of the run are fetched into the ledger's catalog, so its table is
final without a separate `wattlog intensity fetch`. The fetch has a budget (10 s by
default) covering its requests and its retries' waits: a provider that is down, slow or
rate-limiting past it gives one line, stores nothing, and the table gives those hours the
site's constant, labelled, until `wattlog intensity fetch --run` stores them.
"""

from __future__ import annotations

import dataclasses
import io
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wattlog.accounting.carbon.intensity.live.cache import fetch_into_ledger
from wattlog.accounting.carbon.intensity.live.client import ProviderError
from wattlog.accounting.carbon.intensity.live.providers import PROVIDERS, ProviderContext
from wattlog.accounting.carbon.sites import Site
from wattlog.accounting.ledger.store import Ledger
from wattlog.http_body import read_body

CLOSE_BUDGET_S = 10.0
"""Seconds a run's close may spend fetching its hours (requests and retries' waits together)."""


@dataclass(frozen=True, slots=True)
class CloseFetch:
    """What fetching a run's hours at its close did.

    Attributes:
        ok: Every hour was stored (False: a failure, or hours the provider lacked).
        line: One line for the log, naming the run, the series and what to do next.
    """

    ok: bool
    line: str


def budgeted(
    context: ProviderContext, budget_s: float, clock: Callable[[], float] = time.monotonic
) -> ProviderContext:
    """`context` with every request and every retry's wait held within `budget_s` from now.

    A request gets at most the time left as its timeout; a retry whose wait would pass the
    budget raises :class:`ProviderError` instead of sleeping.
    """
    deadline = clock() + budget_s

    def opener(request: Any, timeout: float | None = None) -> Any:
        left = deadline - clock()
        if left <= 0:
            raise TimeoutError(f"the {budget_s:g} s budget is spent")
        with context.opener(request, timeout=min(timeout or left, left)) as response:
            # the whole answer within the budget: a body that never ends must not hold the run open
            source = getattr(request, "full_url", "the provider")
            return io.BytesIO(read_body(response, deadline=deadline, source=source, clock=clock))

    def sleep(wait_s: float) -> None:
        if clock() + wait_s >= deadline:
            raise ProviderError(
                "intensity fetch", f"a retry in {wait_s:g} s would pass the {budget_s:g} s budget"
            )
        context.sleep(wait_s)

    return dataclasses.replace(context, opener=opener, sleep=sleep)


def fetch_at_close(
    ledger: Ledger,
    run: str | int,
    catalog: Mapping[str, Site],
    context: ProviderContext | None = None,
    budget_s: float = CLOSE_BUDGET_S,
) -> CloseFetch | None:
    """Fetch the hours of `run` from its site's provider into `ledger`, within `budget_s`; never raises.

    Args:
        ledger: The run's ledger (the run's end already recorded, or its hours are taken up to now).
        run: The run's name or id.
        catalog: Sites by name (the run's site is looked up here).
        context: Keys, address and side effects of the provider (None: the environment's).
        budget_s: Seconds for the whole fetch.

    Returns:
        None when the run's site names no live provider; else what was stored, in one line.
    """
    context = context or ProviderContext()
    site_name = "SITE"
    try:
        info = ledger.get_run(run)
        site = catalog.get(info.site.strip().lower()) if info.site else None
        if site is None or site.intensity_source.source not in PROVIDERS:
            return None
        site_name = site.name
        end_s = info.end_s if info.end_s is not None else context.clock()
        ref = site.intensity_source
        report = fetch_into_ledger(
            ledger, ref, info.start_s, end_s, budgeted(context, budget_s), site.wue_offsite_l_per_kwh
        )
    except Exception as error:  # the run is closed already: a fetch that fails is one line, never an error
        return CloseFetch(
            False,
            f"run {run}: grid intensity not fetched at close ({error}); its hours take the site's constant, "
            f"labelled, until `wattlog intensity fetch --run {run} --site {site_name}` stores them",
        )
    line = f"run {info.name}: stored {report.stored} hours of grid intensity in ledger series {report.series}"
    if report.missing:
        line += f"; {len(report.missing)} hours the provider lacked take the site's constant, labelled"
    if report.refused:
        line += f"; {report.refused}"
    return CloseFetch(not report.missing, line)
