"""An audit bundle of a long run is built and verified a batch of rows at a time, never the whole run.

Before, `build_bundle` read every row as an object (~2.3 kB each with its series: a 1,024-GPU day of
raw rows, 8.8 M, needed ~20 GB) and `verify_bundle` replayed them into an in-memory database.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

import pytest

from tests.accounting.test_audit import _rewrite_members
from tests.accounting.test_audit_rows import _steady_rows
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.reader import RunReader
from wattlog.accounting.publishing.audit.bundle import build_bundle, verify_bundle
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError

T0 = 1_800_000_000.0


def _whole_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("the whole run's rows read at once")


def test_bundles_are_built_and_verified_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("long", RunSpec(site="jupiter"))
    rows = _steady_rows(devices=4, steps=300)
    for start in range(0, len(rows), 4):  # a flush at a time, as an agent writes
        ledger.record_intervals(run.id, rows[start : start + 4])
    ledger.end_run(run.id, end_s=rows[-1].end_s)
    batches: list[int] = []
    real_batches = RunReader.energy_row_batches

    def small_batches(self: RunReader, kinds: object = None, batch_rows: int = 0):  # noqa: ANN202
        for batch in real_batches(self, None, batch_rows=100):
            batches.append(len(batch))
            yield batch

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where build and verify unpack
    monkeypatch.setattr(RunReader, "energy_rows", _whole_run)
    monkeypatch.setattr(RunReader, "energy_row_batches", small_batches)
    heard: list[tuple[str, int]] = []
    bundle = build_bundle(
        ledger,
        "long",
        TableOptions(catalog=site_catalog()),
        tmp_path / "b.tar.xz",
        lambda *said: heard.append(said),
    )
    assert batches == [100] * 12 and heard[:-1] == [("coding rows", n) for n in range(100, 1201, 100)]
    assert heard[-1][0] == "compressing" and heard[-1][1] > 1200  # bytes: the rows' files and series
    replayed: list[tuple[str, int]] = []
    result = verify_bundle(bundle, lambda *said: replayed.append(said))
    assert result.ok, result.problems
    assert replayed == [("replaying rows", 1200)]  # the rows decoded 20,000 at a time
    assert not list(scratch.iterdir())  # what they wrote went with their private folders


def test_a_bundle_naming_a_member_outside_itself_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "evil.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        member = tarfile.TarInfo("../outside.json")
        member.size = 2
        tar.addfile(member, io.BytesIO(b"{}"))
    with pytest.raises(ConfigError, match="points outside it"):
        verify_bundle(bundle)
    assert not (tmp_path.parent / "outside.json").exists()


def test_a_bundle_cannot_bring_its_own_replay_ledger(tmp_path: Path) -> None:
    """A forger's file named like the verifier's replay database, listed in a rewritten manifest,
    lands beside the bundle's files, not under the verifier's ledger, and is refused as a file no
    bundle holds (on main the replay opened it as its ledger: "file is not a database")."""
    bundle = _small_bundle(tmp_path)
    _rewrite_members(bundle, lambda blobs: {"replay.db": b"not the verifier's"}, fix_manifest=True)
    assert verify_bundle(bundle).problems == ("replay.db: not a file an audit bundle holds",)


def test_a_bundle_of_json_rows_is_told_to_be_built_again(tmp_path: Path) -> None:
    bundle = _small_bundle(tmp_path)
    _rewrite_members(bundle, lambda blobs: {"rows.json": b'{"columns": [], "values": []}'}, fix_manifest=True)
    assert verify_bundle(bundle).problems == (
        "rows.json: a bundle of an older wattlog (JSON rows); build it again with this one",
    )


def _small_bundle(tmp_path: Path) -> Path:
    """The bundle of a run of three rows of one device."""
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("r", RunSpec(site="jupiter"))
    ledger.record_intervals(run.id, _steady_rows(devices=1, steps=3))
    ledger.end_run(run.id, end_s=T0 + 30)
    return build_bundle(ledger, "r", TableOptions(catalog=site_catalog()), tmp_path / "r.tar.gz")
