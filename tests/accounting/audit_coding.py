"""The audit bundle's row coding in memory, for tests: rows to members and back, through the
RowCoder and row_batches a bundle uses (a bundle itself codes and decodes through files)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping

from wattlog.accounting.publishing.audit.rows import STREAMS, RowCoder, member_names, row_batches
from wattlog.records import EnergyInterval


def encode_rows(rows: Iterable[EnergyInterval]) -> dict[str, bytes]:
    """The bundle members that hold `rows`, in memory: their streams, each row's stream, the columns."""
    sinks = {name: io.BytesIO() for name in member_names()}
    coder = RowCoder(sinks)
    for row in rows:
        coder.add(row)
    return {STREAMS: coder.header()} | {name: sink.getvalue() for name, sink in sinks.items()}


def decode_rows(members: Mapping[str, bytes]) -> list[EnergyInterval]:
    """The rows `encode_rows` wrote, every float exactly as it was, in their order (see `row_batches`)."""
    sources = {name: io.BytesIO(members[name]) for name in member_names()}
    return [row for batch in row_batches(members[STREAMS], sources) for row in batch]
