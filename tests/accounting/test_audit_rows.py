"""The audit bundle's rows, coded column by column: every double back bit for bit, and small."""

from __future__ import annotations

import json
import lzma
import random
import struct
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.accounting.audit_coding import decode_rows, encode_rows
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.publishing.audit.bundle import build_bundle
from wattlog.accounting.publishing.audit.rows import COLUMNS, ENERGY_LOW, ORDER, STREAMS, UNITS, column_file
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError
from wattlog.records import EnergyFigure, EnergyInterval, Kind, Source

T0 = 1_800_000_000.0
doubles = st.floats(allow_nan=False, allow_infinity=False)


def _bits(row: EnergyInterval) -> tuple[object, ...]:
    """A row with every float as its 64-bit pattern: -0.0 and 0.0 differ, as the bundle must keep them."""
    figure = row.figure
    floats = [row.start_s, row.end_s, figure.energy_j, figure.low_j, figure.high_j]
    floats += [figure.random_low_j, figure.random_high_j]
    patterns = tuple(struct.pack("<d", value) for value in floats)
    return (row.host, row.device, figure.kind, figure.source, row.window, row.parent, patterns)


# whole millijoules (as an agent records joules), -0.0 (not one), and the largest the coder takes as one
millijoules = st.integers(-(2**50) + 1, 2**50 - 1).map(lambda k: k / 1000)
numbers_of_a_row = st.one_of(doubles, millijoules, st.sampled_from([-0.0, 0.0, 0.001, 2.0**50 / 1000]))


@st.composite
def rows(draw: st.DrawFn) -> EnergyInterval:
    numbers = draw(st.lists(numbers_of_a_row, min_size=7, max_size=7))
    device = draw(st.sampled_from(["gpu0", "gpu1", "cpu"]))
    row = EnergyInterval.of("n0", device, Kind.GPU, draw(st.sampled_from(list(Source))), *numbers)
    window = draw(st.sampled_from(["", "", "eval"]))
    return replace(row, window=window, parent="train" if window else "")


@given(st.lists(rows(), max_size=40))
def test_any_rows_come_back_bit_for_bit_in_their_order(original: list[EnergyInterval]) -> None:
    decoded = decode_rows(encode_rows(original))
    assert [_bits(r) for r in decoded] == [_bits(r) for r in original]


def _steady_rows(devices: int, steps: int) -> list[EnergyInterval]:
    """An agent's rows: contiguous 10 s flushes, each joule figure with every digit of a double (the
    integrator splits a reading at the flush edge), the band a steady fraction of it."""
    out = []
    for k in range(steps):
        for g in range(devices):
            joules = (
                (700.0 + (k * 7919 + g * 31) % 97) * 10 * (1 + ((k * 104_729 + g * 7_919) % 1_000_003) / 1e9)
            )
            span = (T0 + 10 * k, T0 + 10 * (k + 1), joules, joules * 0.97, joules * 1.03)
            out.append(
                EnergyInterval.of(
                    "n0", f"GPU-{g}", Kind.GPU, Source.COUNTER, *span, joules * 1e-3, joules * 1e-3
                )
            )
    return out


def _xz_per_row(rows: list[EnergyInterval]) -> dict[str, float]:
    """Each member's bytes after xz, per row."""
    return {name: len(lzma.compress(blob)) / len(rows) for name, blob in encode_rows(rows).items()}


def test_rows_with_every_digit_cost_a_double_for_the_energy_and_little_else() -> None:
    steady = _steady_rows(devices=8, steps=360)
    xz = _xz_per_row(steady)
    # the energy's digits are the only news in a row (as JSON, rows.json, the five figures took ~20 B)
    assert xz[column_file("energy_j")] < 6.0
    assert sum(xz.values()) < 6.5, xz


def test_rows_in_whole_millijoules_cost_their_change_of_energy_and_little_else() -> None:
    """An agent's rows now: every figure a whole number of millijoules (EnergyFigure.to_millijoules),
    each GPU's power drawn anew for each row (no row predicts the next): the energy's change takes
    ~20 bits; the band, a steady fraction of it, a few bits; together under the 3.8 B a row that keeps
    a 1,024-GPU month of 10 s rows under 1 GB (bench.audit_size)."""
    draw, agents_rows = random.Random(24), []
    for row in _steady_rows(devices=8, steps=360):
        joules = draw.uniform(7000.0, 7960.0)
        band = (joules * 0.97, joules * 1.03, joules * 1e-3, 0.0)
        figure = EnergyFigure(Kind.GPU, Source.COUNTER, joules, *band)
        agents_rows.append(replace(row, figure=figure.to_millijoules()))
    xz = _xz_per_row(agents_rows)
    assert xz[column_file("energy_j")] + xz[ENERGY_LOW] < 2.8 and xz[UNITS] < 0.05
    binary = b"".join(blob for name, blob in encode_rows(agents_rows).items() if name != STREAMS)
    assert len(lzma.compress(binary)) / len(agents_rows) < 3.5, xz  # one stream, as the bundle's xz
    assert [_bits(r) for r in decode_rows(encode_rows(agents_rows))] == [_bits(r) for r in agents_rows]


def test_a_bundle_holds_its_rows_coded_with_the_coding_written_beside_them(tmp_path: Path) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("steady", RunSpec(site="jupiter"))
    ledger.record_intervals(run.id, _steady_rows(devices=2, steps=60))
    ledger.end_run(run.id, end_s=T0 + 600)
    bundle = build_bundle(ledger, "steady", TableOptions(catalog=site_catalog()), tmp_path / "b.tar.xz")
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    header = json.loads(members[STREAMS])
    assert header["rows"] == 120 and header["streams"] == [
        ["n0", f"GPU-{g}", "gpu", "counter", "", ""] for g in range(2)
    ]
    assert "zigzag LEB128" in header["coding"]
    assert [_bits(r) for r in decode_rows(members)] == [_bits(r) for r in ledger.energy_rows(run.id)]


@pytest.mark.parametrize(
    ("member", "change", "message"),
    [
        (column_file("end_s"), lambda b: b[:-1] + bytes([b[-1] | 0x80]), "ends inside a number"),
        (column_file("low_j"), lambda b: b[:-1], "fewer numbers"),
        (column_file("high_j"), lambda b: b + b"\x00", "not the 3 rows"),
        (ORDER, lambda b: b"\x00\x00\x08", "names stream 8"),
        (ENERGY_LOW, lambda b: b[:-1], "ends inside a 2-byte number"),
        (STREAMS, lambda b: b.replace(b"wattlog-rows/3", b"wattlog-rows/2"), "build the bundle again"),
        (UNITS, lambda b: b[:-1] + b"\x20", "names columns the rows do not have"),
    ],
)
def test_columns_that_do_not_add_up_are_refused_with_what_is_wrong(member: str, change, message: str) -> None:  # noqa: ANN001
    three = _steady_rows(devices=1, steps=3)
    members = encode_rows(three)
    members[member] = change(members[member])
    with pytest.raises(ConfigError, match=message):
        decode_rows(members)


def test_every_column_is_a_member() -> None:
    assert set(encode_rows([])) == {STREAMS, ORDER, UNITS, ENERGY_LOW, *(column_file(c) for c in COLUMNS)}
    assert decode_rows(encode_rows([])) == []
