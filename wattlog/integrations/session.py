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
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console

from wattlog.accounting.footprint import CarbonPath, LiveCarbon, water_kl
from wattlog.accounting.intensity import HourSplitter
from wattlog.accounting.it_energy import energy_label
from wattlog.accounting.ranges import Quantity, bounds
from wattlog.accounting.sites import Site, get_site
from wattlog.accounting.units import j_to_kwh, j_to_mwh
from wattlog.events import EventCategory, EventKind
from wattlog.trainer.tracker import Tracker

log = logging.getLogger(__name__)

PREFIX = "wattlog"
"""Prefix of every key added to the framework's logs (W&B and TensorBoard group by it)."""


def figures_of(
    tracker: Tracker,
    carbon: LiveCarbon | None = None,
    wall: Callable[[], float] = time.time,
    catalog: Mapping[str, Site] | None = None,
) -> dict[str, float]:
    """Energy, CO2, water and efficiency of a tracker's run so far, as flat log keys.

    Energy keys carry the energy's source label (``wattlog/simulated/energy_j``), so a
    simulated or estimated figure never reads as a measured one in any logger, and its band
    (``energy_j_low``, ``energy_j_high``). CO2 and
    water need the run's site (no silent default): without one only energy is given. A
    site figure given as a range yields ``_low`` and ``_high`` keys. CO2 takes the tables'
    path (:class:`~wattlog.accounting.footprint.CarbonPath`) with the site's own intensity
    source, so the logged figure and the table agree.

    Args:
        tracker: The rank's tracker.
        carbon: The run's live CO2 path, fed since the agent started (None: one starting now,
            exact for a constant intensity).
        wall: Unix time now.
        catalog: Sites by name (None: the built-in catalog).

    Returns:
        {} on a rank that measures nothing (its node's agent runs on local rank 0).
    """
    devices = tracker.snapshot()
    if not devices:
        return {}
    energy_j = sum(d.energy_j for d in devices)
    source = energy_label(d.device.source for d in devices).replace("+", "_")
    base = f"{PREFIX}/{source}"
    out: dict[str, float] = {
        f"{base}/energy_j": energy_j,
        # the band beside the figure: summed over devices, as the energy is
        f"{base}/energy_j_low": sum(d.low_j for d in devices),
        f"{base}/energy_j_high": sum(d.high_j for d in devices),
        f"{base}/energy_kwh": j_to_kwh(energy_j),
    }
    power_w = tracker.power_w()
    if power_w is not None:
        out[f"{base}/power_w"] = power_w
    if tracker.site:
        site = get_site(tracker.site, catalog)
        mwh = j_to_mwh(energy_j)
        carbon = carbon or LiveCarbon(CarbonPath.of(site), HourSplitter(wall()))
        _put(out, f"{base}/co2_kg", carbon.co2_t(wall(), energy_j), 1000.0)
        water = water_kl(mwh, site.pue, site.wue_onsite_l_per_kwh, site.wue_offsite_l_per_kwh)
        _put(out, f"{base}/water_l", water, 1000.0)
    speed = tracker.speed
    if speed is not None and speed.tokens_per_j is not None and math.isfinite(speed.tokens_per_j):
        out[f"{PREFIX}/tokens_per_joule"] = speed.tokens_per_j
    if speed is not None and speed.mfu is not None:
        out[f"{PREFIX}/mfu"] = speed.mfu
    return out


def _live_carbon(tracker: Tracker) -> LiveCarbon | None:
    """The run's CO2 path fed from the agent's start, hour by hour as the table splits it (None: no site)."""
    if not tracker.site:
        return None
    site = get_site(tracker.site)
    wall = tracker.session.clock.wall
    return LiveCarbon(CarbonPath.of(site, ledger=tracker.ledger), HourSplitter(wall()))


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
        tracker_kwargs: Further ``Tracker`` keywords (site, db, model, log_every, ...).
        console: Where rank 0 prints the footprint table at the end (None: stdout).
        tracker_factory: Builds the tracker (tests inject fakes; default ``Tracker``).
    """

    def __init__(
        self,
        run: str | None,
        tracker_kwargs: Mapping[str, Any],
        *,
        console: Console | None = None,
        tracker_factory: Callable[..., Tracker] = Tracker,
    ) -> None:
        self.run = run
        self._kwargs = dict(tracker_kwargs)
        self._console = console
        self._factory = tracker_factory
        self.tracker: Tracker | None = None
        self.printed = False
        self._carbon: LiveCarbon | None = None

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
            return figures_of(self.tracker, self._carbon, self.tracker.session.clock.wall)
        except Exception as error:  # a logging step must never fail because of us
            log.warning("wattlog figures skipped: %s", error)
            return {}

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

    def end(self) -> None:
        """Flush, end the run finished, and on rank 0 print the run beside Table 19."""
        tracker, self.tracker = self.tracker, None
        if tracker is None:
            return
        tracker.close()
        if tracker.rank == 0 and tracker.ledger is not None:
            from wattlog.accounting.run_report import print_run_report

            try:
                print_run_report(tracker.ledger, tracker.run, tracker.session.config.db, self._console)
                self.printed = True
            except Exception as error:
                log.warning("could not print the footprint table: %s", error)
