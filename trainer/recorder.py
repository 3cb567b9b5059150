"""The run's rows in the ledger: registration and resume, lost work, progress, events.

Rank 0 registers the run and writes its life cycle (progress, checkpoints,
lost work, the end); other ranks wait for the run to exist and record their
own events (detections, health checks), tagged with their rank. Every rank
reports its cumulative tokens, and each node's first rank records the node in
the run's job, so the job's figures count every rank and every node.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from wattlog.accounting.ledger import EventInfo, Ledger, RunSpec, Status
from wattlog.accounting.ledger.admin import run_deleted
from wattlog.accounting.ledger.jobs import RankReport, created_by_job, record_node, report_rank_progress
from wattlog.accounting.ledger.spool import Spool
from wattlog.accounting.publishing.job_speed import JobSpeed, job_speed
from wattlog.accounting.publishing.split import Use, split_row
from wattlog.causes import LEDGER_OUTAGE
from wattlog.clock import Clock, SystemClock
from wattlog.errors import LedgerError, WattlogError
from wattlog.events import EventCategory, EventKind, Progress, json_safe
from wattlog.telemetry.job import JobIdentity
from wattlog.trainer.restarts import LostWork, lost_work

log = logging.getLogger(__name__)

CLOCK_STEP_S = 2.0
"""A wall clock this far from the monotonic one at the end has stepped (NTP slews far less)."""


class RunRecorder:
    """Writes one run's rows; every write is one ledger transaction.

    Args:
        ledger: The ledger.
        run: Run name.
        rank: Global rank of this process.
        join_timeout_s: How long a non-zero rank waits for rank 0 to register the run.
        clock: Time source: the run's end is its start on the wall clock plus monotonic time.
    """

    def __init__(
        self,
        ledger: Ledger,
        run: str,
        rank: int = 0,
        join_timeout_s: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        self.ledger = ledger
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._anchor = (self._clock.wall(), self._clock.monotonic())
        self.run = run
        self.rank = rank
        self._join_timeout_s = join_timeout_s
        self.run_id: int | None = None
        self.attempt = 0
        self.offline = False
        """True when the ledger was unreachable at start: events are spooled under the run's name."""
        self.spool: Spool | None = None
        """Where events go while the ledger is down (the run's energy spool; None: they raise)."""

    def register(
        self, spec: RunSpec, *, resume: bool, resume_step: int | None, job_id: str | None = None
    ) -> tuple[int, LostWork | None]:
        """Create (or resume) the run on rank 0, find it on the others.

        A run that this scheduler job's node agents (`wattlog node`) created first is joined,
        not refused: `job_id` (e.g. $SLURM_JOB_ID) says it is the same job.

        Args:
            spec: What the run is (rank 0 creates it so).
            resume: Continue a run of that name (a first attempt when there is none).
            resume_step: The step the trainer resumes from, if it knows.
            job_id: The scheduler job's id.

        Returns:
            The step training continues from, and the work a resume redoes (None if none).

        Raises:
            LedgerError: The run exists without resume, or rank 0 never registered it.
        """
        self._anchor = (self._clock.wall(), self._clock.monotonic())
        if self.rank != 0:
            self.run_id = self._wait_for_run()
            return resume_step or 0, None
        previous = None
        if resume and self.ledger.find_run(self.run) is not None:  # else a first attempt: nothing to resume
            previous = self.ledger.events(self.run)
        try:
            run = self.ledger.start_run(self.run, spec, resume=resume)
        except LedgerError:
            if resume or not created_by_job(self.ledger, self.run, job_id):
                raise
            run = self.ledger.get_run(self.run)
        self.run_id, self.attempt = run.id, run.restarts
        if previous is None:
            return resume_step or 0, None
        lost = lost_work(previous, resume_step)
        return _resume_from(previous, resume_step, lost), lost

    def _wait_for_run(self) -> int | None:
        deadline = time.monotonic() + self._join_timeout_s
        while (found := self.ledger.find_run(self.run)) is None:
            if time.monotonic() >= deadline:
                raise LedgerError(
                    f"rank {self.rank}: run {self.run!r} was not registered by rank 0 within "
                    f"{self._join_timeout_s:.0f} s: check that rank 0 uses the same --db"
                )
            time.sleep(0.1)
        return found.id

    def record_lost_work(self, lost: LostWork) -> float:
        """Store the `lost_work` event of a restart; returns the joules spent on the redone steps."""
        assert self.run_id is not None
        window = {Use.LOST_WORK: [(lost.start_s, lost.end_s)]}
        energy = sum(
            split_row(r.start_s, r.end_s, r.energy_j, window)[Use.LOST_WORK]
            for r in self.ledger.energy_rows(self.run_id)
        )
        payload = {**lost.payload(), "energy_j": energy, "restarts": self.attempt}
        category = EventCategory.LOST_WORK
        self.event(EventKind.LOST_WORK, step=lost.from_step, category=category, payload=payload)
        return energy

    def event(
        self,
        kind: EventKind | str,
        *,
        step: int | None = None,
        category: EventCategory = EventCategory.NONE,
        payload: Mapping[str, Any] | None = None,
        time_s: float | None = None,
    ) -> None:
        """Store one event of the run (non-finite floats as text: PostgreSQL's JSON has no NaN)."""
        if self.run_id is None and not self.offline:
            return
        safe = json_safe(payload or {})
        event: dict[str, Any] = {
            "kind": str(kind),
            "time_s": time_s,
            "step": step,
            "category": str(category),
            "payload": safe,
        }
        if time_s is None:
            event["time_s"] = self.ledger.wall_s()
        try:
            if self.run_id is None:  # offline: the ledger could not register the run
                raise LedgerError("the run is not registered in the ledger yet")
            self.ledger.record_event(self.run_id, **event)
        except LedgerError as error:
            if self.spool is None or run_deleted(error, self.run_id or self.run):
                raise  # a deleted run's events have no run to go to: never spooled
            self._spool_event(event, error)

    def _spool_event(self, event: dict[str, Any], error: LedgerError) -> None:
        """The ledger is down: the event waits in the run's spool beside its energy rows."""
        assert self.spool is not None
        try:
            self.spool.append_event(self.run_id if self.run_id is not None else self.run, event)
        except (OSError, WattlogError) as spool_error:
            raise LedgerError(f"{error}; and the spool cannot be written either: {spool_error}") from error
        log.warning(
            "ledger unavailable: event %s of run %s spooled to %s",
            event["kind"],
            self.run,
            self.spool.path,
            extra=LEDGER_OUTAGE,
        )

    def progress(self, step: int, time_s: float, progress: Progress) -> None:
        """Store how far training got (rank 0 only)."""
        if self.rank == 0:
            self.event(
                EventKind.PROGRESS,
                step=step,
                time_s=time_s,
                category=EventCategory.PRODUCTIVE,
                payload=progress.to_json(),
            )

    def record_node(self, job: JobIdentity, *, measured: bool) -> None:
        """Record this node in the run's job (its host, index, the job's node count, whether it measures)."""
        if self.run_id is not None:
            record_node(self.ledger, self.run_id, job, measured=measured)

    def report_rank(self, report: RankReport) -> None:
        """Store this rank's cumulative tokens and latest step (the job's tokens are every rank's sum)."""
        if self.run_id is not None:
            report_rank_progress(self.ledger, self.run_id, self.rank, report)

    def job_speed(self) -> JobSpeed | None:
        """The whole job's tokens per second, per joule and MFU so far (None before any rank reported)."""
        return job_speed(self.ledger, self.run_id) if self.run_id is not None else None

    def end_s(self) -> float:
        """Now, as the wall clock read at registration plus the monotonic time since: never before it."""
        wall_s, monotonic_s = self._anchor
        return wall_s + max(0.0, self._clock.monotonic() - monotonic_s)

    def end(self, status: Status) -> None:
        """Mark the run ended (rank 0 only), at :meth:`end_s`; a wall-clock step is recorded as an event."""
        if self.rank == 0 and self.run_id is not None:
            end_s = self.end_s()
            wall_s = self._clock.wall()
            if abs(wall_s - end_s) >= CLOCK_STEP_S:  # a step moves neither the end nor the duration
                payload = {"step_s": round(wall_s - end_s, 3), "wall_s": wall_s, "end_s": end_s}
                self.event(EventKind.CLOCK_STEP, payload=payload, time_s=end_s)
            self.ledger.end_run(self.run_id, status, end_s=end_s)


def _resume_from(previous: Sequence[EventInfo], resume_step: int | None, lost: LostWork | None) -> int:
    """The step a resumed run continues from: as given, else the checkpoint, else the last progress."""
    if resume_step is not None:
        return resume_step
    if lost:
        return lost.from_step
    steps = (int(e.step) for e in previous if e.kind == EventKind.PROGRESS and e.step is not None)
    return max(steps, default=0)
