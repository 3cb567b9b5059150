"""Reading a spool file back: every line checked, the good ones grouped by run, the bad ones kept aside.

A spool file is written by another process (a dead run, another user's
folder, a disk that filled): nothing in it is trusted. Each line is decoded
on its own (a bad byte spoils its line, not the file), parsed, and checked
field by field (numbers are JSON numbers, finite, a row's band consistent)
before a row is built. A bad line is named by file and line number and kept
aside; the good lines still replay. Only the file's last line may be torn
(a crash mid-write): it has no newline, and is counted as torn, not as bad.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattlog.accounting.ledger.models import Status
from wattlog.accounting.ledger.writes import check_interval
from wattlog.errors import ConfigError, UntrustedInput
from wattlog.records import BandRevision, EnergyInterval, Gap, Kind, Source
from wattlog.untrusted import open_regular

_INTERVAL_NUMBERS = ("start_s", "end_s", "energy_j", "low_j", "high_j", "random_low_j", "random_high_j")


@dataclass
class Batch:
    """One run's lines of a spool file."""

    intervals: list[EnergyInterval] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Ledger.record_event keyword arguments (kind, time_s, step, category, payload)."""
    revisions: list[BandRevision] = field(default_factory=list)
    """Band revisions of the run's rows, stored after them."""
    end: tuple[str, float] | None = None  # (status, end_s) of a run whose end the ledger missed
    start: dict[str, Any] | None = None
    """Ledger.start_run keywords of a run the ledger could not register (unreachable at its start)."""


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line of a spool file that cannot be replayed: where, why, and its bytes (kept aside)."""

    number: int
    reason: str
    raw: bytes


@dataclass
class SpoolContent:
    """A spool file's good lines by run (keyed by the JSON of an id or a name), its torn and bad lines."""

    batches: dict[str, Batch] = field(default_factory=dict)
    torn: int = 0
    bad: list[BadLine] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Energy rows read."""
        return sum(len(b.intervals) for b in self.batches.values())


MAX_FILE_BYTES = 1 << 30
"""A spool file larger is refused whole (the writer's bound is 64 MiB)."""
MAX_LINE_BYTES = 1 << 20
"""A longer line is a bad line (a row is ~250 bytes, an event's payload at most a few kB)."""
MAX_LINES = 4_000_000
"""A file with more lines is refused whole (64 MiB holds about 250,000 rows)."""


def header_of(path: Path) -> str | None:
    """The ledger a spool file belongs to (its first line), None if the line is not a header.

    Raises:
        UntrustedInput: Not a regular file (a FIFO is never opened for blocking reads).
    """
    return read_header(path).ledger


@dataclass(frozen=True, slots=True)
class Header:
    """A spool file's first line: the ledger (printable URL), and the run's name and the ledger's
    identity when the run started ("" and None where the writer did not know them, or an older file).

    They let replay tell a run's id in the ledger the spool was written for from another
    run's id in a ledger put in its place (identity.py: SQLite device and inode, PostgreSQL
    system identifier and database oid).
    """

    ledger: str | None = None
    run_name: str = ""
    ledger_key: tuple[int | str | None, ...] | None = None


def read_header(path: Path) -> Header:
    """The header of a spool file (all fields empty if its first line is none).

    Raises:
        UntrustedInput: Not a regular file (a FIFO is never opened for blocking reads).
    """
    with open_regular(path, "spool file") as handle:
        first = handle.readline(MAX_LINE_BYTES)
    try:
        item = json.loads(first.decode("utf-8"))
    except ValueError:
        return Header()
    if not isinstance(item, dict) or item.get("type") != "header" or not isinstance(item.get("ledger"), str):
        return Header()
    name, key = item.get("run_name", ""), item.get("ledger_key")
    keys_ok = isinstance(key, list) and len(key) == 2 and all(isinstance(k, int | str | None) for k in key)
    return Header(
        item["ledger"],
        name if isinstance(name, str) and 0 < len(name) <= 200 else "",
        tuple(key) if keys_ok and isinstance(key, list) else None,
    )


def read_spool(path: Path, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_LINES) -> SpoolContent:
    """Every line of a spool file, checked (see the module docstring), read a line at a time.

    Raises:
        UntrustedInput: Not a regular file, over `max_bytes` or over `max_lines` (nothing is replayed).
    """
    content = SpoolContent()
    with open_regular(path, "spool file") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise UntrustedInput(path, f"{size:,} bytes, over the {max_bytes:,} a spool file may hold")
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if number > max_lines:
                raise UntrustedInput(path, f"more than {max_lines:,} lines")
            if len(raw) > MAX_LINE_BYTES:
                while not raw.endswith(b"\n") and (raw := handle.readline(MAX_LINE_BYTES)):
                    pass  # skipped a piece at a time, never held whole
                reason = f"longer than {MAX_LINE_BYTES:,} bytes"
                content.bad.append(BadLine(number, reason, b"(line too long, not kept)\n"))
                continue
            _read_line(content, number, raw)
    return content


def _read_line(content: SpoolContent, number: int, raw: bytes) -> None:
    if not raw.endswith(b"\n"):  # only the last line can lack one: torn by a crash mid-write
        content.torn += 1
        return
    try:
        item = json.loads(raw.decode("utf-8"))
        if not isinstance(item, dict):
            raise ConfigError("not a JSON object")
        _add(content.batches, item)
    except (ValueError, KeyError, TypeError, RecursionError) as error:  # ConfigError, UnicodeDecodeError too
        reason = (
            f"{type(error).__name__}: {error}" if isinstance(error, KeyError | RecursionError) else str(error)
        )
        content.bad.append(BadLine(number, reason.splitlines()[0][:200] if reason else "unreadable", raw))


def keep_aside(path: Path, bad: list[BadLine]) -> Path:
    """Append the bad lines to `<file>.rejected` (created private), one line each as read; returns it."""
    aside = path.with_name(path.name + ".rejected")
    descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        for line in bad:
            handle.write(line.raw if line.raw.endswith(b"\n") else line.raw + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    return aside


def describe_bad(path: Path, bad: list[BadLine], aside: Path | None) -> str:
    """One line: the file, the first bad line and why, how many, and where they were kept."""
    first = bad[0]
    more = f" and {len(bad) - 1} more bad line(s)" if len(bad) > 1 else ""
    kept = f"; kept aside in {aside}" if aside is not None else ""
    return f"spool {path} line {first.number}: {first.reason}{more}{kept}"


def run_key(run: str) -> int | str:
    """The run as the writer named it (spool keys are its JSON: 7 is an id, "7" a name)."""
    value = json.loads(run)
    return value if isinstance(value, int | str) else str(value)


def _add(batches: dict[str, Batch], item: dict[str, Any]) -> None:
    kind = item.pop("type")
    if kind == "header":
        return
    run = item.pop("run")
    if isinstance(run, bool) or not isinstance(run, int | str):
        raise ConfigError(f"run must be an id or a name, got {run!r}")
    batch = batches.setdefault(json.dumps(run), Batch())
    if kind == "interval":
        batch.intervals.append(_interval(item))
    elif kind == "gap":
        batch.gaps.append(_gap(item))
    elif kind == "event":
        batch.events.append(_event(item))
    elif kind == "revision":
        batch.revisions.append(_revision(item))
    elif kind == "start":
        batch.start = _start(item)
    elif kind == "end":
        status = _text(item, "status")
        if status not in set(Status):
            raise ConfigError(f"unknown run status {status!r}")
        batch.end = (status, _number(item, "end_s"))
    else:
        raise ConfigError(f"unknown line type {kind!r}")


def _number(item: Mapping[str, Any], name: str) -> float:
    value = item[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be finite, got {value!r}")
    return float(value)


def _text(item: Mapping[str, Any], name: str, limit: int = 200) -> str:
    """A text field as the ledger's column takes it (its length limit, no NUL byte: PostgreSQL refuses it)."""
    value = item[name]
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise ConfigError(f"{name} must be a text of at most {limit} characters, got {str(value)[:40]!r}")
    return value


def _interval(item: Mapping[str, Any]) -> EnergyInterval:
    numbers = {
        name: _number(item, name) for name in _INTERVAL_NUMBERS if name in item or name[:6] != "random"
    }
    row = EnergyInterval.of(
        _text(item, "host"), _text(item, "device"), Kind(item["kind"]), Source(item["source"]), **numbers
    )
    check_interval(row)
    return row


def _gap(item: Mapping[str, Any]) -> Gap:
    start_s, end_s = _number(item, "start_s"), _number(item, "end_s")
    if not end_s >= start_s:
        raise ConfigError(f"gap ends before it starts ({start_s} > {end_s})")
    return Gap(
        _text(item, "host"), _text(item, "device"), start_s, end_s, _text(item, "reason", 100_000)[:500]
    )


def _revision(item: Mapping[str, Any]) -> BandRevision:
    start_s, end_s = _number(item, "start_s"), _number(item, "end_s")
    terms = item["terms"]
    if not end_s >= start_s or not isinstance(terms, list) or len(terms) != 6:
        raise ConfigError(f"a band revision needs start_s <= end_s and 6 terms, got {str(item)[:80]!r}")
    t = [_number({"terms": x}, "terms") for x in terms]
    return BandRevision(
        _text(item, "host"), _text(item, "device"), start_s, end_s, _text(item, "reason", 100_000)[:500],
        (t[0], t[1], t[2], t[3], t[4], t[5]),
    )  # fmt: skip


_START_TEXTS = ("project", "role", "model", "site", "host", "phase", "stage", "scale_group", "device_model")


def _start(item: Mapping[str, Any]) -> dict[str, Any]:
    config = item.get("config", {})
    if not isinstance(config, dict):
        raise ConfigError("config must be a JSON object")
    fields: dict[str, Any] = {name: _text(item, name) for name in _START_TEXTS if name in item}
    figures = item.get("site_figures")  # the site's figures at the start, kept as they were
    if figures is not None and not isinstance(figures, dict):
        raise ConfigError("site_figures must be a JSON object")
    if figures is not None:
        fields["site_figures"] = figures
    return {**fields, "config": config, "start_s": _number(item, "start_s")}


def _event(item: Mapping[str, Any]) -> dict[str, Any]:
    step = item.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise ConfigError(f"step must be an integer, got {step!r}")
    payload = item.get("payload", {})
    if not isinstance(payload, dict):
        raise ConfigError("payload must be a JSON object")
    return {
        "kind": _text(item, "kind", 50),
        "time_s": _number(item, "time_s"),
        "step": step,
        "category": _text(item, "category", 50) if "category" in item else "",
        "payload": payload,
    }
