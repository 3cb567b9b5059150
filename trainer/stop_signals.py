"""Close a run when its process is told to stop (SIGTERM, SIGINT), then end as the process would have.

A script that uses the Tracker (or a framework callback) directly has no supervisor: without this,
SIGTERM kills it with the run `running` and the energy since the last flush lost. While installed,
:class:`CloseOnSignals` handles SIGTERM and SIGINT in the main thread: it first restores the
handlers it replaced, calls `close` (flush, end the run as preempted or killed), then does what the
process would have done without it: call the handler the user installed, ignore the signal if it
was ignored, raise KeyboardInterrupt for Python's default SIGINT handler, or re-deliver the signal
with its default action (the process dies of it, exit status 128 + N).

`close` runs in a thread of its own, waited for at most `timeout_s`: the signal interrupts the
main thread anywhere, perhaps holding a lock that closing needs (the integrator's, a ledger
transaction), and a handler that waited on it would hang the process past its grace period.
Past the timeout the process ends anyway; the run's lease then lets a reader close it as lost.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from wattlog.telemetry.supervise import STOP_SIGNALS

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 20.0
"""How long a stop signal waits for the run to close: inside a 30 s preemption grace period."""

Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class CloseOnSignals:
    """Call `close(signum)` on the first SIGTERM or SIGINT, then chain to the handler it replaced.

    Args:
        close: Ends the run for the signal received (its errors are logged).
        timeout_s: How long to wait for `close` before ending the process as it would have.
    """

    def __init__(self, close: Callable[[signal.Signals], None], timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        self._close = close
        self._timeout_s = timeout_s
        self._previous: dict[signal.Signals, Handler] = {}
        self._replaced: dict[signal.Signals, Handler] = {}
        """What install() replaced, kept after restore(): a handler set after ours may pass us a signal."""

    @property
    def installed(self) -> bool:
        """Whether the handlers are in place (only ever in the main thread)."""
        return bool(self._previous)

    def install(self) -> CloseOnSignals:
        """Replace the SIGTERM and SIGINT handlers; does nothing outside the main thread."""
        # Python runs signal handlers only in the main thread, and only it may set them
        if threading.current_thread() is threading.main_thread() and not self._previous:
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def restore(self) -> None:
        """Put back the handlers replaced by :meth:`install` (idempotent)."""
        previous, self._previous = self._previous, {}
        self._replaced.update(previous)
        for signum, handler in previous.items():
            if signal.getsignal(signum) == self._handle:  # a handler set after ours stays
                signal.signal(signum, _unwound(signum, handler))

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        received = signal.Signals(signum)
        active = self.installed  # else restored, reached through a handler set after ours: pass it on
        previous = _unwound(received, (self._previous if active else self._replaced).get(received))
        self.restore()
        if active:
            self._close_within_timeout(received)
        if callable(previous):
            previous(signum, frame)  # the user's handler, or Python's default SIGINT handler
        elif previous in (signal.SIG_DFL, None):
            signal.signal(received, signal.SIG_DFL)
            os.kill(os.getpid(), received)  # dies of it, as without us

    def _close_within_timeout(self, received: signal.Signals) -> None:
        closer = threading.Thread(
            target=self._close_logged, args=(received,), name="wattlog-close", daemon=True
        )
        closer.start()
        closer.join(self._timeout_s)
        if closer.is_alive():
            log.warning(
                "closing the run on %s took over %.0f s (a lock held where it came?): ending without it",
                received.name,
                self._timeout_s,
            )

    def _close_logged(self, received: signal.Signals) -> None:
        try:
            self._close(received)
        except Exception:  # ending the process as it would have matters more
            log.exception("closing the run on %s failed", received.name)


def _unwound(signum: signal.Signals, handler: Handler) -> Handler:
    """`handler`, or what it replaced while it is a restored CloseOnSignals' (closed runs drop out).

    Two Trackers in one process close in any order: the first to close cannot take its handler
    out from under the second's, so the second, restoring, skips past it to what it replaced.
    """
    owner = getattr(handler, "__self__", None)
    while isinstance(owner, CloseOnSignals) and not owner.installed:
        handler = owner._replaced.get(signum, signal.SIG_DFL)
        owner = getattr(handler, "__self__", None)
    return signal.SIG_DFL if handler is None else handler
