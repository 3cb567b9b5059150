"""Why a stretch of a run was not measured: one closed set, each reason with its stored code and its words.

A gap's reason is stored as text, ``"<code>: <detail>"`` (``"lost: GPU_IS_LOST"``), so
the ledger stays readable by eye and by older wattlogs. Writers build that text with
`GapReason.recorded`, readers get the reason back with `GapReason.of`; nothing else
parses it. Ledgers written before the enum (telemetry wrote the bare failure text, the
spool "spool full ...", the sinks "rejected as invalid ...") still read: those heads are
kept below, and text with no known head is a failed read, as it always was.

Telemetry (the writer of most gaps) and accounting (their reader) both import this, so
it sits at the bottom of the layers with the other shared vocabulary.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["GapReason"]


class GapReason(StrEnum):
    """Why a stretch was not measured; the value is the code at the head of the stored text."""

    DEVICE_LOST = "lost"
    COUNTER_RESET = "counter"
    READ_FAILED = "read failed"
    AGENT_DOWN = "agent down"
    NOT_STORED = "not stored"
    DOWNTIME = "downtime"

    @property
    def words(self) -> str:
        """What tables and reports call it ("device lost", "downtime between attempts")."""
        return _WORDS[self]

    def recorded(self, detail: str = "") -> str:
        """The text stored for a gap of this reason: the code, then the detail if any."""
        return f"{self.value}: {detail}" if detail else self.value

    @classmethod
    def of(cls, text: str) -> GapReason:
        """The reason of a gap's stored text, written now or by an older wattlog."""
        head = text.lower()
        for reason in cls:
            if head.startswith(reason.value):
                return reason
        for old, reason in _OLD_HEADS:
            if head.startswith(old):
                return reason
        return cls.READ_FAILED


_WORDS = {
    GapReason.DEVICE_LOST: "device lost",
    GapReason.COUNTER_RESET: "counter reset",
    GapReason.READ_FAILED: "read failed",
    GapReason.AGENT_DOWN: "agent down",
    GapReason.NOT_STORED: "not stored",
    GapReason.DOWNTIME: "downtime between attempts",
}

# heads that ledgers written before the codes hold: rows the spool dropped or a sink refused
_OLD_HEADS = (
    ("spool full", GapReason.NOT_STORED),
    ("spool not writable", GapReason.NOT_STORED),
    ("rejected", GapReason.NOT_STORED),
)
