"""What both framework callbacks do, in one place: a Tracker per rank, figures for the loggers.

A framework callback calls :meth:`TrackerSession.start` when training begins,
:meth:`~TrackerSession.step` after every optimizer step, :meth:`~TrackerSession.figures`
when the framework logs, and :meth:`~TrackerSession.end` or :meth:`~TrackerSession.fail`
at the end. Every rank has its own ``Tracker`` (so every rank's steps are reported); the
node's local rank 0 owns the node's one agent, so energy is measured once per node.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rich.console import Console

from wattlog.accounting.carbon.intensity import HourSplitter
from wattlog.accounting.carbon.sites import Site, get_site, run_catalog
from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.publishing.footprint import CarbonPath, LiveCarbon, water_kl
from wattlog.accounting.ranges import Quantity, bounds
from wattlog.accounting.units import j_to_kwh, j_to_mwh
from wattlog.events import EventCategory, EventKind
from wattlog.notices import Notices
from wattlog.telemetry.types import DeviceEnergy
from wattlog.trainer.callbacks.speed import SpeedFigures
from wattlog.trainer.tracker import Tracker

log = logging.getLogger(__name__)

PREFIX = "wattlog"
"""Prefix of every key added to the framework's logs (W&B and TensorBoard group by it)."""
SOURCE_KEY = f"{PREFIX}/energy_source"
"""The energy's source label, logged beside the figures when it is first known and when it changes."""
TOKENS_PER_JOULE = f"{PREFIX}/tokens_per_joule"
"""Tokens per joule: logged only once tokens were reported (else the session says why, once)."""


def figures_of(
    tracker: Tracker,
    carbon: LiveCarbon | None = None,
    wall: Callable[[], float] = time.time,
    catalog: Mapping[str, Site] | None = None,
) -> dict[str, float]:
    """Energy, CO2, water and efficiency this node measured since this attempt began, as flat log keys.

    A restarted run's earlier attempts, and the other nodes of a job, are in the ledger and its
    table, not here: the keys are what this process's agent measured.

    The keys are the same on every machine (``wattlog/energy_j``, ``wattlog/co2_kg``), so
    runs of two clusters share a chart; the energy's source label (``simulated``,
    ``counter+estimated``) is a separate value, :func:`source_of`, so a simulated or estimated
    figure is never read as a measured one. The band is beside the figure (``energy_j_low``,
    ``energy_j_high``). CO2 and water need the run's site (no silent default): without one only
    energy is given. A site figure given as a range yields ``_low`` and ``_high`` keys. CO2 takes
    the tables' path (:class:`~wattlog.accounting.publishing.footprint.CarbonPath`) with the site's own
    intensity source, so the logged figure and the table agree. ``tokens_per_joule`` is given
    only once tokens were reported (never a 0 that means "unknown").

    Args:
        tracker: The rank's tracker.
        carbon: The run's live CO2 path, fed since the agent started (None: one starting now,
            exact for a constant intensity).
        wall: Unix time now.
        catalog: Sites by name (None: the built-in catalog and ``$WATTLOG_SITES_FILE``'s).

    Returns:
        {} on a rank that measures nothing (its node's agent runs on local rank 0); only the power
        before the agent has integrated its first interval.
    """
    devices = tracker.snapshot()
    if not devices:
        return {}
    out: dict[str, float] = {}
    power_w = tracker.power_w()
    if power_w is not None:
        out[f"{PREFIX}/power_w"] = power_w
    energy = _energy_keys(devices)
    if not energy:  # unknown yet: no energy, CO2 or water key
        return out
    out.update(energy)
    energy_j = energy[f"{PREFIX}/energy_j"]
    if tracker.site:
        site = get_site(tracker.site, catalog if catalog is not None else run_catalog())
        mwh = j_to_mwh(energy_j)
        carbon = carbon or LiveCarbon(CarbonPath.of(site), HourSplitter(wall()))
        _put(out, f"{PREFIX}/co2_kg", carbon.co2_t(wall(), energy_j), 1000.0)
        water = water_kl(mwh, site.pue, site.wue_onsite_l_per_kwh, site.wue_offsite_l_per_kwh)
        _put(out, f"{PREFIX}/water_l", water, 1000.0)
    speed = tracker.speed
    if speed is not None and tokens_known(speed) and math.isfinite(speed.tokens_per_j or math.nan):
        assert speed.tokens_per_j is not None
        out[TOKENS_PER_JOULE] = speed.tokens_per_j
    if speed is not None and speed.mfu is not None:
        out[f"{PREFIX}/mfu"] = speed.mfu
    return out


def _energy_keys(devices: Sequence[DeviceEnergy]) -> dict[str, float]:
    """The devices' energy summed, with its band beside it ({} while nothing is integrated).

    Nothing is integrated during the agent's first readings, or before a counter's first update:
    the energy is unknown then, and a 0 J figure with a 0 - 0 J band beside 1,300 W would say it
    was measured as nothing.
    """
    if not any(d.samples >= 2 and d.high_j > 0 for d in devices):
        return {}
    energy_j = sum(d.energy_j for d in devices)
    return {
        f"{PREFIX}/energy_j": energy_j,
        f"{PREFIX}/energy_j_low": sum(d.low_j for d in devices),
        f"{PREFIX}/energy_j_high": sum(d.high_j for d in devices),
        f"{PREFIX}/energy_kwh": j_to_kwh(energy_j),
    }


def source_of(tracker: Tracker) -> str | None:
    """The source label of the energy in :func:`figures_of` ("simulated", "counter+estimated"); None: none."""
    devices = tracker.snapshot()
    return energy_label(d.device.source for d in devices) if devices else None


def tokens_known(speed: SpeedFigures) -> bool:
    """Whether tokens were reported, so tokens per joule means something."""
    return speed.tokens_total > 0 and speed.tokens_per_j is not None


def _live_carbon(tracker: Tracker) -> LiveCarbon | None:
    """The run's CO2 path fed from the agent's start, hour by hour as the table splits it (None: no site)."""
    if not tracker.site:
        return None
    site = get_site(tracker.site, run_catalog())
    wall = tracker.session.clock.wall
    return LiveCarbon(CarbonPath.of(site, ledger=tracker.ledger, live=True), HourSplitter(wall()))


def _put(out: dict[str, float], key: str, value: Quantity, scale: float) -> None:
    lo, hi = bounds(value)
    if lo == hi:
        out[key] = lo * scale
    else:
        out[f"{key}_low"], out[f"{key}_high"] = lo * scale, hi * scale


class TrackerSession:
    """One rank's tracker, driven by a framework's hooks; never stops training on its own errors.

    Args:
        run: Run name (None: $WATTLOG_RUN_ID).
        tracker_kwargs: Further ``Tracker`` keywords (site, db, model, log_every, ...);
            ``quiet=True`` prints nothing at the end.
        console: Where rank 0 prints the run's figures at the end (None: stdout).
        tracker_factory: Builds the tracker (tests inject fakes; default ``Tracker``).
        table: Print the run beside Table 19 at the end (default: the few lines of its figures).
        tokens_hint: How the user gives the tokens in this framework, said once when none were reported.
        notices: Where lines the user must see go, whatever logging is set (default: stderr).
    """

    def __init__(
        self,
        run: str | None,
        tracker_kwargs: Mapping[str, Any],
        *,
        console: Console | None = None,
        tracker_factory: Callable[..., Tracker] = Tracker,
        table: bool = False,
        tokens_hint: str = "",
        notices: Notices | None = None,
    ) -> None:
        self.run = run
        self._kwargs = dict(tracker_kwargs)
        # The session prints the figures itself, to its console; ``quiet=True`` silences both.
        self._quiet = bool(self._kwargs.pop("quiet", False))
        self._kwargs["quiet"] = True
        self._console = console
        self._factory = tracker_factory
        self._table = table
        self._tokens_hint = tokens_hint
        self._notices = notices if notices is not None else Notices()
        self.tracker: Tracker | None = None
        self._ended: Tracker | None = None  # ended, its figures not yet printed (see end(show=False))
        self.printed = False
        self._carbon: LiveCarbon | None = None
        self._said_tokens = False
        self._logged_source: str | None = None

    @property
    def active(self) -> bool:
        """True between start() and end()/fail()."""
        return self.tracker is not None

    def start(self, *, rank: int, local_rank: int, resume_step: int | None = None) -> Tracker:
        """Start this rank's tracker; a job resumed from a checkpoint continues its run (a restart event).

        Raises:
            WattlogError: Bad configuration or an unreachable ledger, before any step is trained.
        """
        kwargs = {"rank": rank, "local_rank": local_rank, **self._kwargs}
        if resume_step:
            kwargs.setdefault("resume", True)
            kwargs.setdefault("resume_step", resume_step)
        tracker = self._factory(self.run, **kwargs).start()
        try:
            self._carbon = _live_carbon(tracker)
        except Exception as error:  # e.g. the site's series unreadable: stop the agent, then say why
            tracker.close(error)
            raise
        self.tracker = tracker
        return tracker

    def step(self, step: int, *, loss: Any = None, tokens: Any = None, grad_norm: Any = None) -> None:
        """Report one optimizer step (values may be device tensors: never synced here)."""
        if self.tracker is not None:
            self.tracker.step(loss=loss, tokens=tokens, grad_norm=grad_norm, step=step)

    def checkpoint(self, step: int) -> None:
        """Record a saved checkpoint (a later restart counts the steps after it as redone)."""
        if self.tracker is not None:
            self.tracker.checkpoint(step)

    def figures(self) -> dict[str, float]:
        """The figures to add to a logging step's metrics ({} before start or off rank-0-of-node)."""
        if self.tracker is None:
            return {}
        try:
            out = figures_of(self.tracker, self._carbon, self.tracker.session.clock.wall)
        except Exception as error:  # a logging step must never fail because of us
            log.warning("wattlog figures skipped: %s", error)
            return {}
        speed = self.tracker.speed
        if out and speed is not None and not tokens_known(speed) and not self._said_tokens:
            self._said_tokens = True
            # a warning through logging is hidden unless the user configured it (issue 44): stderr
            self._notices.tell(
                f"{TOKENS_PER_JOULE} is not logged: no tokens were reported. {self._tokens_hint}"
            )
        return out

    def new_source(self) -> str | None:
        """The energy's source label when first known or changed since the last call (else None)."""
        if self.tracker is None:
            return None
        source = source_of(self.tracker)
        if source is None or source == self._logged_source:
            return None
        self._logged_source = source
        return source

    def window(self, name: str, *, sync: Callable[[], object] | None = None) -> AbstractContextManager[Any]:
        """Measure the energy of a block (``with callback.window("eval"):``); stored in the ledger's windows.

        On a rank without the node's agent (or before training starts) the block runs unmeasured.
        """
        agent = self.tracker.agent if self.tracker is not None else None
        return agent.window(name, sync=sync) if agent is not None else nullcontext()

    def fail(self, error: BaseException) -> None:
        """Record the exception as an event, flush what was measured and end the run failed (or killed)."""
        tracker, self.tracker = self.tracker, None
        if tracker is None:
            return
        if tracker.recorder is not None:
            payload = {"type": type(error).__name__, "message": str(error)[:500], "rank": tracker.rank}
            try:
                step = tracker.current_step
                tracker.recorder.event(
                    EventKind.EXCEPTION, step=step, category=EventCategory.DOWNTIME, payload=payload
                )
            except Exception as problem:
                log.warning("could not record the exception event: %s", problem)
        tracker.close(error)

    def end(self, *, show: bool = True) -> None:
        """Flush, end the run finished, and (`show`) print its figures as :meth:`show_end` does."""
        tracker, self.tracker = self.tracker, None
        if tracker is None:
            return
        tracker.close()
        self._ended = tracker
        if show:
            self.show_end()

    def show_end(self) -> None:
        """On rank 0, print the ended run's figures (beside Table 19 if asked), once; never raises."""
        tracker, self._ended = self._ended, None
        if tracker is None or tracker.rank != 0 or tracker.ledger is None or self._quiet:
            return
        from wattlog.accounting.publishing.run_report import print_run_end

        try:
            db = tracker.session.config.db
            print_run_end(tracker.ledger, tracker.run, db, table=self._table, console=self._console)
            self.printed = True
        except Exception as error:
            log.warning("could not print the run's figures: %s", error)
