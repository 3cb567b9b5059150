"""The audit bundle: built, verified from the bundle alone, then tampered with and refused."""

from __future__ import annotations

import hashlib
import io
import json
import random
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.accounting.audit_coding import decode_rows, encode_rows
from wattlog.accounting.carbon.sites import site_catalog
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.accounting.ledger.jobs import RankReport, report_rank_progress
from wattlog.accounting.publishing.audit.bundle import build_bundle, verify_bundle
from wattlog.accounting.publishing.audit.files import MANIFEST
from wattlog.accounting.publishing.audit.rows import COLUMNS
from wattlog.accounting.publishing.run_table import TableOptions
from wattlog.cli import main
from wattlog.clock import FakeClock
from wattlog.records import EnergyInterval, Gap, Kind, Source

T0 = 1_800_000_000.0


def _row(device: str, kind: Kind, start: float, end: float, joules: float) -> EnergyInterval:
    return EnergyInterval.of(
        "n0", device, kind, Source.COUNTER, T0 + start, T0 + end, joules, joules * 0.95, joules * 1.05
    )


@pytest.fixture(params=["run.tar.xz", "run.tar.gz"])
def bundle(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    clock = FakeClock(start_s=0.0, wall_offset_s=T0)
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=clock)
    run = ledger.start_run("audited", RunSpec(site="jupiter", model="OLMo-tiny", role="final"))
    ledger.record_intervals(
        run.id,
        [_row("gpu0", Kind.GPU, 0, 3600, 2.52e6), _row("dcmi:local", Kind.NODE, 0, 3600, 3.6e6)],
        [Gap("n0", "gpu0", T0 + 100, T0 + 102, "no readings for 2 s")],
    )
    clock.advance(4000)
    ledger.start_run("audited", resume=True)  # a restart: its downtime is part of the row's notes
    ledger.record_intervals(run.id, [_row("gpu0", Kind.GPU, 4000, 4600, 4.2e5)])
    # tokens make the exports' J per token: before ranks.json, verify refused any run that had them
    report_rank_progress(ledger, run.id, 0, RankReport("n0", 0, 4.1e6, 500, T0, flops_per_token=6.0e9))
    ledger.end_run(run.id, end_s=T0 + 4600)
    return build_bundle(ledger, "audited", TableOptions(catalog=site_catalog()), tmp_path / request.param)


def _rewrite(path: Path, name: str, change, *, fix_manifest: bool) -> None:  # noqa: ANN001 - bytes -> bytes
    _rewrite_members(path, lambda blobs: {name: change(blobs[name])}, fix_manifest=fix_manifest)


def _rewrite_energy(path: Path, old_j: float, new_j: float, *, fix_manifest: bool) -> None:
    """One row's energy changed and the rows coded again as a bundle codes them (a forger who knows how)."""

    def changed(blobs: dict[str, bytes]) -> dict[str, bytes]:
        rows = decode_rows(blobs)
        [index] = [i for i, row in enumerate(rows) if row.energy_j == old_j]
        rows[index] = replace(rows[index], figure=replace(rows[index].figure, energy_j=new_j))
        return encode_rows(rows)

    _rewrite_members(path, changed, fix_manifest=fix_manifest)


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:*") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _rewrite_members(path: Path, change, *, fix_manifest: bool) -> None:  # noqa: ANN001 - members -> changed ones
    blobs = _members(path)
    blobs |= {name: blob for name, blob in change(blobs).items() if blobs.get(name) != blob}
    if fix_manifest:  # a forger who also rewrites the hashes: the recomputation still catches it
        manifest = {n: hashlib.sha256(b).hexdigest() for n, b in blobs.items() if n != MANIFEST}
        blobs[MANIFEST] = json.dumps(manifest).encode()
    with tarfile.open(path, "w:xz" if path.name.endswith(".xz") else "w:gz") as tar:
        for n, blob in blobs.items():
            member = tarfile.TarInfo(n)
            member.size = len(blob)
            tar.addfile(member, io.BytesIO(blob))


def test_a_bundle_recomputes_its_row_to_the_printed_digit(bundle: Path) -> None:
    result = verify_bundle(bundle)
    assert result.ok, result.problems
    assert result.recomputed == result.printed
    assert (
        result.printed["total_power_mwh"] == "1.00 kWh"
    )  # n0's node meter: its GPU rows beside it, not added
    assert (
        "node boundary (IPMI DCMI BMC" in result.printed["notes"]
        and "restarted 1 time(s)" in result.printed["notes"]
    )
    with tarfile.open(bundle) as tar:
        names = set(tar.getnames())
    assert names == {
        "manifest.json",
        "run.json",
        "rows/streams.json",
        "rows/order.bin",
        "rows/units.bin",
        "rows/energy_j.low.bin",
        *(f"rows/{column}.bin" for column in COLUMNS),
        "revisions.json",
        "ranks.json",
        "gaps.json",
        "events.json",
        "site.json",
        "table.json",
        "versions.json",
        "series.json",
        "intensity.json",
        "profiles.json",
        "config.json",
        "exports/row.json",
        "exports/row.csv",
    }


def test_one_changed_number_is_refused_by_the_manifest(bundle: Path) -> None:
    _rewrite_energy(bundle, 2520000.0, 2520001.0, fix_manifest=False)
    result = verify_bundle(bundle)
    assert not result.ok
    assert result.problems == tuple(  # the band's guesses read the energy: its columns change with it
        f"rows/{column}.bin: SHA-256 differs from the manifest (changed after the bundle was built)"
        for column in ("energy_j.low", "low_j", "high_j")  # 1 J more: 1000 mJ, in the energy's low bits
    )


def test_a_changed_number_with_a_rewritten_manifest_is_refused_by_the_recomputation(bundle: Path) -> None:
    _rewrite_energy(bundle, 3600000.0, 3700000.0, fix_manifest=True)
    result = verify_bundle(bundle)
    assert not result.ok
    printed = "total_power_mwh: printed '1.00 kWh', recomputed '1.03 kWh'"
    assert any(p.startswith(printed) for p in result.problems), result.problems


def test_an_impossible_number_is_refused_by_the_replay(bundle: Path) -> None:
    _rewrite_energy(bundle, 3600000.0, 4600000.0, fix_manifest=True)
    [problem] = verify_bundle(bundle).problems
    assert problem.startswith("the bundle cannot be replayed: energy of dcmi:local must satisfy")


def test_wattlog_audit_builds_verifies_and_refuses_a_tampered_bundle(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    ledger = Ledger(make_engine(url), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("r", RunSpec(site="jupiter"))
    ledger.record_intervals(run.id, [_row("gpu0", Kind.GPU, 0, 3600, 2.52e6)])
    ledger.end_run(run.id, end_s=T0 + 3600)
    ledger.engine.dispose()
    out = tmp_path / "r.tar.xz"
    assert main(["audit", "r", "-o", str(out), "--db", url]) == 0
    with tarfile.open(out, "r:xz") as tar:  # xz, as its name says
        assert tar.getnames()
    assert main(["audit", "verify", str(out)]) == 0
    assert "total_power_mwh: 700 Wh (printed 700 Wh)" in capsys.readouterr().out
    _rewrite(out, "table.json", lambda b: b.replace(b"700 Wh", b"650 Wh"), fix_manifest=False)
    assert main(["audit", "verify", str(out)]) == 1
    captured = capsys.readouterr()
    assert "REFUSED" in captured.out and "FAILED table.json: SHA-256 differs" in captured.err


def test_a_run_whose_rows_came_late_verifies(tmp_path: Path) -> None:
    """A spool replayed after an outage writes its rows after later ones: the ledger's totals then
    summed them in another order than the replay does, and the exports' last digits differed."""
    ledger = Ledger(make_engine(f"sqlite:///{tmp_path / 'l.db'}"), clock=FakeClock(wall_offset_s=T0))
    run = ledger.start_run("late", RunSpec(site="jupiter"))
    draw, flushes, end = random.Random(3), [], T0
    for _ in range(300):  # every joule with every digit of a double, edges late by up to 40 ms, as an agent's
        start, end = end, end + 10 + draw.random() * 0.04
        joules = [draw.uniform(6000, 8000) for _ in range(4)]
        flushes.append(
            [
                EnergyInterval.of(
                    "n0",
                    f"g{g}",
                    Kind.GPU,
                    Source.COUNTER,
                    start,
                    end,
                    j,
                    j * 0.95,
                    j * 1.05,
                    j / 1e3,
                    j / 5e2,
                )
                for g, j in enumerate(joules)
            ]
        )
    for flush in flushes[:100] + flushes[150:] + flushes[100:150]:  # flushes 100-149 spooled, replayed last
        ledger.record_intervals(run.id, flush)
    ledger.end_run(run.id, end_s=end)
    bundle = build_bundle(ledger, "late", TableOptions(catalog=site_catalog()), tmp_path / "late.tar.xz")
    result = verify_bundle(bundle)
    assert result.ok, result.problems  # was refused: "exports/row.json: ... 0.0023429427221925503 vs ...51"


def test_a_number_changed_past_the_summing_tolerance_is_refused(bundle: Path) -> None:
    changed = 2520000.0 * (1 + 1e-9)  # past any reordering of three rows' sum, far below any printed digit
    _rewrite_energy(bundle, 2520000.0, changed, fix_manifest=True)
    [problem] = [p for p in verify_bundle(bundle).problems if p.startswith("exports/row.json")]
    assert "the recomputed export differs from the bundled one, line" in problem
