"""An audit bundle: one run's measurement, self-contained, that recomputes its Table-19 row and exports.

`build_bundle` writes a tar.xz (a tar.gz where the name ends .tar.gz or .tgz) with the run (its
spec, status, edges, restarts), every ledger energy row (coded column by column, every float kept
exactly: accounting.publishing.audit.rows) and the revisions of their band, its gaps and events (the
counters' start-up checks among them), what the power series per device are
(accounting.publishing.audit.series),
the site, the intensity with each hour's provenance, the sensor profiles, the configuration and
options the row was printed with (the validity gate on), the printed row and its JSON and CSV
exports, versions, and a SHA-256 manifest of all of them (accounting.publishing.audit.files). The rows are
read, coded and replayed a batch at a time, through files in a private temporary folder: a run
of millions of rows is never held in memory.

`verify_bundle` checks the manifest, replays the bundle into a ledger of its own with the
bundle's own site and intensity (never the verifier's catalog), recomputes the row, its verdict,
its series and its exports and compares them with the printed ones: the cells to the last printed
digit, the exports word for word and number for number, to within the rounding of summing the
run's rows in another order (`summing_tolerance`: a few parts in 10^13 for a thousand rows). A
changed number fails one or the other, and says where.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Collection, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.jobs import RankReport, rank_progress, report_rank_progress
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.progress import Progress
from wattlog.accounting.publishing.audit.contents import (
    config_doc,
    intensity_doc,
    profiles_doc,
    replay_options,
    site_doc,
    versions_doc,
)
from wattlog.accounting.publishing.audit.files import (
    MANIFEST,
    check_manifest,
    extract_bundle,
    folded,
    sha256_of,
    write_bundle,
)
from wattlog.accounting.publishing.audit.rows import STREAMS, RowCoder, bundle_rows, member_names
from wattlog.accounting.publishing.audit.series import SERIES, Digest, PowerSeries, unknown_devices, write_csv
from wattlog.accounting.publishing.exports import rows_csv, rows_json
from wattlog.accounting.publishing.render import FIGURE_COLUMNS, TableRow
from wattlog.accounting.publishing.run_table import TableOptions, carbon_path, overhead_for, run_row
from wattlog.accounting.publishing.validity import ValidityLimits
from wattlog.accounting.units import HOUR_S
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.events import EventKind
from wattlog.records import BandRevision, Gap
from wattlog.untrusted import loads_json

if TYPE_CHECKING:
    from wattlog.accounting.ledger.views import EventInfo, RankInfo, RunInfo

_DOCS = (
    "run.json", "config.json", "gaps.json", "revisions.json", "ranks.json", "events.json", "site.json",
    "intensity.json",
)  # fmt: skip
"""The bundle's JSON documents the replay reads."""
_FILES = frozenset(
    {*_DOCS, "profiles.json", "table.json", "versions.json", "exports/row.json", "exports/row.csv"}
    | {STREAMS, *member_names(), SERIES, MANIFEST}
)
"""Every file a bundle holds (`build_bundle` writes them; the verifier refuses others)."""
_SPEC_FIELDS = ("project", "role", "model", "site", "host", "phase", "stage", "scale_group", "device_model")


@dataclass(frozen=True, slots=True)
class AuditResult:
    """What `verify_bundle` found.

    Attributes:
        problems: One line per failed check (empty: the bundle verifies).
        printed: The row's cells as printed when the bundle was built.
        recomputed: The same cells recomputed from the bundle alone (empty if it could not be).
        row: The row recomputed from the bundle alone, its figures as numbers (None if it could not be).
    """

    problems: tuple[str, ...]
    printed: Mapping[str, str]
    recomputed: Mapping[str, str]
    row: TableRow | None = None

    @property
    def ok(self) -> bool:
        """Whether every hash matched and every cell was recomputed to the printed digit."""
        return not self.problems


def printed_cells(row: TableRow) -> dict[str, str]:
    """A row's figure cells as the table prints them, with its energy source, verdict and notes."""
    cells = {column: row.cell(column) for column in FIGURE_COLUMNS}
    valid = "not gated" if row.validity is None else "; ".join(row.validity) or "valid"
    return cells | {"energy_source": row.energy_source, "validity": valid, "notes": " | ".join(row.notes)}


def _exports(row: TableRow) -> dict[str, bytes]:
    """The row's JSON and CSV exports, as `wattlog table --format json|csv` writes them."""
    return {"exports/row.json": rows_json([row], []).encode(), "exports/row.csv": rows_csv([row]).encode()}


def build_bundle(
    ledger: Ledger, run: int | str, options: TableOptions, out: Path, progress: Progress | None = None
) -> Path:
    """Write the audit bundle of `run` (its row as `options` print it, the gate on) to `out` (xz, or
    gzip where the name ends .tar.gz or .tgz); `progress` hears the rows coded, then the compression.

    Raises:
        ConfigError: The run has no site (a bundle recomputes a full row).
    """
    info = ledger.get_run(run)
    site_name = options.site or info.site
    if not site_name:
        raise ConfigError(f"run {info.name!r} has no site: pass --site to audit its full row")
    options = replace(options, site=site_name, validity=options.validity or ValidityLimits(), strict=False)
    site, carbon = carbon_path(ledger, info, options)
    row = run_row(ledger, info, options)
    with tempfile.TemporaryDirectory(prefix="wattlog-audit-") as folder:
        header, hours = _write_rows(ledger, info.id, Path(folder), progress)
        docs = {
            "run.json": _run_doc(ledger, info, site.name),
            # the rows' band as revised, and the ranks' tokens (J per token)
            "revisions.json": [asdict(r) for r in ledger.band_revisions(info.id)],
            "ranks.json": [_rank_doc(r) for r in rank_progress(ledger, info.id)],
            "gaps.json": [[g.host, g.device, g.start_s, g.end_s, g.reason] for g in ledger.gaps(info.id)],
            "events.json": [_event_doc(e) for e in ledger.events(info.id)],
            "site.json": site_doc(site),
            "intensity.json": intensity_doc(carbon.intensity, hours),
            "profiles.json": profiles_doc(),
            "config.json": config_doc(info.config, options, overhead_for(info, options)),
            "table.json": printed_cells(row),
            "versions.json": versions_doc(),
        }
        blobs = {
            n: json.dumps(body, separators=(",", ":"), sort_keys=True).encode() for n, body in docs.items()
        }
        files = {name: Path(folder, name) for name in (*member_names(), SERIES)}
        if progress is not None:  # xz takes minutes for a month of rows: say it has started
            progress("compressing", sum(path.stat().st_size for path in files.values()))
        write_bundle(out, blobs | {STREAMS: header} | _exports(row), files)
    return out


def _run_doc(ledger: Ledger, info: RunInfo, site: str) -> dict[str, Any]:
    """run.json: what the replay starts the run with, its status, edges and restarts."""
    spec = {name: str(getattr(info, name, "") or "") for name in _SPEC_FIELDS if name != "project"}
    return {
        "name": info.name,
        "spec": spec | {"project": ledger.project_of(info), "site": site},
        "status": str(info.status),
        "start_s": info.start_s,
        "end_s": info.end_s,
        "restarts": info.restarts,
    }


def _event_doc(event: EventInfo) -> dict[str, Any]:
    fields = {"time_s": event.time_s, "step": event.step, "category": str(event.category)}
    return {"kind": str(event.kind), **fields, "payload": dict(event.payload)}


def _write_rows(
    ledger: Ledger, run_id: int, folder: Path, progress: Progress | None
) -> tuple[bytes, set[int]]:
    """The run's rows coded into `folder`/rows/ and their series into `folder`/series.json, a batch at
    a time (the rows, most of a bundle, coded column by column against the previous row, losslessly:
    a 1,024-GPU month's bundle must stay small, bench.audit_size); the rows' header and their hours."""
    (folder / "rows").mkdir()
    series, hours = PowerSeries(), set()
    with ExitStack() as files, ledger.reading(run_id, "bundle the rows") as read:
        coder = RowCoder(
            {name: files.enter_context(Path(folder, name).open("wb")) for name in member_names()}
        )
        for batch in read.energy_row_batches():
            for row in batch:
                coder.add(row)
                series.add(row)
                hours.add(int(row.start_s // HOUR_S) * HOUR_S)
            if progress is not None:
                progress("coding rows", coder.rows)
        header = coder.header()
    with Path(folder, SERIES).open("wb") as sink:
        series.write(sink)
    return header, hours


def verify_bundle(path: Path, progress: Progress | None = None) -> AuditResult:
    """Check the manifest's hashes, then recompute the row, series and exports from the bundle alone
    (replayed into a ledger in a private temporary folder; `progress` hears the rows replayed)."""
    with tempfile.TemporaryDirectory(prefix="wattlog-verify-") as folder:
        members = extract_bundle(path, Path(folder, "bundle"))  # apart from the replay's ledger
        problems = check_manifest(members)
        if "rows.json" in members:  # stop 33's bundles: JSON rows, no rows/ files
            problems.append(
                "rows.json: a bundle of an older wattlog (JSON rows); build it again with this one"
            )
        unknown = [name for name in members if name not in _FILES and name != "rows.json"]
        problems += folded(unknown, "not a file an audit bundle holds")
        try:  # the bundle's own words: any bytes until proved otherwise
            printed = loads_json(_member(members, "table.json") or b"{}")
        except ValueError:
            printed, problems = {}, [*problems, "table.json: not JSON"]
        if not isinstance(printed, dict):
            printed, problems = {}, [*problems, "table.json: not a JSON object"]
        if problems:
            return AuditResult(tuple(problems), printed, {})
        try:
            row, rows, series_digest = _replay(members, Path(folder), progress)
        except (WattlogError, KeyError, TypeError, ValueError) as e:  # rows the ledger itself refuses
            return AuditResult((f"the bundle cannot be replayed: {e}",), printed, {})
        if series_digest != sha256_of(members[SERIES]):
            problems.append(f"{SERIES}: differs from the series the rows give (changed)")
        recomputed_exports = _exports(row)
        bundled_exports = {name: _member(members, name) for name in recomputed_exports}
    recomputed = printed_cells(row)
    problems += [
        f"{column}: printed {printed.get(column)!r}, recomputed {value!r}"
        for column, value in recomputed.items()
        if printed.get(column) != value
    ]
    tolerance = summing_tolerance(rows)
    problems += [
        f"{name}: the recomputed export differs from the bundled one{difference}"
        for name, blob in recomputed_exports.items()
        if (difference := _difference(bundled_exports[name], blob, tolerance))
    ]
    return AuditResult(tuple(problems), printed, recomputed, row)


def write_series(
    path: Path, out: TextIO, devices: Collection[str] = (), progress: Progress | None = None
) -> tuple[str, ...]:
    """The bundle's power and counter series as CSV on `out`
    (accounting.publishing.audit.series.write_csv), from
    its rows alone (only `devices`' where any are named), once every file matches the manifest and
    every device named has a series; else what is wrong, and nothing written."""
    with tempfile.TemporaryDirectory(prefix="wattlog-series-") as folder:
        members = extract_bundle(path, Path(folder))
        if problems := check_manifest(members):
            return tuple(problems)
        if unknown := unknown_devices(members[SERIES].read_bytes(), devices):
            return (f"{SERIES}: no series of {', '.join(unknown)} in this bundle",)
        write_csv(_counted(bundle_rows(members), progress, "writing the series"), out, devices)
    return ()


def _counted(batches: Iterator[list[Any]], progress: Progress | None, what: str) -> Iterator[list[Any]]:
    """`batches` as they are, `progress` hearing how many rows went by after each."""
    count = 0
    for batch in batches:
        yield batch
        count += len(batch)
        if progress is not None:
            progress(what, count)


def _member(members: Mapping[str, Path], name: str) -> bytes | None:
    return members[name].read_bytes() if name in members else None


def summing_tolerance(rows: int) -> float:
    """How far apart, relatively, two sums of the same `rows` positive doubles added in another order
    can be: each within (n-1) x 2^-53 of the exact sum, so twice that, and a few products after
    (PUE, intensity), doubled for margin. The ledger's totals are kept as rows arrive, so a run
    whose rows came late (a spool replayed after an outage) sums in another order than the replay."""
    return (rows + 4) * 2.0**-51


_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def _difference(bundled: bytes | None, recomputed: bytes, tolerance: float) -> str:
    """Where two texts first differ beyond `tolerance` (relative, in their numbers): ", line N:
    'bundled' vs 'recomputed'"; "" where they agree, every word and every number."""
    if bundled is None:
        return " (missing)"
    old_lines, new_lines = bundled.decode().splitlines(), recomputed.decode().splitlines()
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if not _same_line(old, new, tolerance):
            return f", line {number}: {old.strip()!r} vs {new.strip()!r}"
    return "" if len(old_lines) == len(new_lines) else " (length)"


def _same_line(old: str, new: str, tolerance: float) -> bool:
    """Whether two lines say the same words and the same numbers to within `tolerance`."""
    if old == new:
        return True
    old_parts, new_parts = _NUMBER.split(old), _NUMBER.split(new)
    if len(old_parts) != len(new_parts):
        return False
    # split keeps the numbers at odd places, the words between them at even ones
    return all(
        a == b if i % 2 == 0 else math.isclose(float(a), float(b), rel_tol=tolerance, abs_tol=0.0)
        for i, (a, b) in enumerate(zip(old_parts, new_parts, strict=True))
    )


def _replay(
    members: Mapping[str, Path], folder: Path, progress: Progress | None
) -> tuple[TableRow, int, str]:
    """The run's row recomputed in a fresh ledger (a file in `folder`) from the bundle's files, the
    number of rows, and the SHA-256 of the series those rows give (written as the builder wrote it)."""
    doc = {name: json.loads(members[name].read_bytes()) for name in _DOCS}
    run, config = doc["run.json"], doc["config.json"]
    clock = FakeClock(start_s=0.0, wall_offset_s=float(run["start_s"]))
    ledger = Ledger(make_engine(f"sqlite:///{folder / 'replay.db'}"), clock=clock)
    try:
        info = ledger.start_run(run["name"], RunSpec(**run["spec"], config=config["run_config"]))
        gaps = [Gap(h, d, float(s), float(e), str(r)) for h, d, s, e, r in doc["gaps.json"]]
        ledger.record_intervals(info.id, [], gaps)
        rows, series_digest = _replay_rows(ledger, info.id, members, progress)
        ledger.record_revisions(
            info.id, [BandRevision(**{**r, "terms": tuple(r["terms"])}) for r in doc["revisions.json"]]
        )
        for rank in doc["ranks.json"]:
            report_rank_progress(ledger, info.id, int(rank.pop("rank")), RankReport(**rank))
        for event in doc["events.json"]:
            kind = event.pop("kind")
            if kind == EventKind.RESTART:  # a resume records it, at its time, and counts the restart
                clock.advance(float(event["time_s"]) - clock.wall())
                ledger.start_run(run["name"], resume=True)
            else:
                ledger.record_event(info.id, kind, **event)
        if run["end_s"] is not None:
            ledger.end_run(info.id, run["status"], end_s=float(run["end_s"]))
        options = replay_options(doc["site.json"], doc["intensity.json"], config)
        return run_row(ledger, ledger.get_run(info.id), options), rows, series_digest
    finally:
        ledger.engine.dispose()


def _replay_rows(
    ledger: Ledger, run_id: int, members: Mapping[str, Path], progress: Progress | None
) -> tuple[int, str]:
    """The bundle's rows recorded a batch at a time, in their order; their count and their series'
    SHA-256."""
    series, count = PowerSeries(), 0
    for batch in _counted(bundle_rows(members), progress, "replaying rows"):
        ledger.record_intervals(run_id, batch)
        for row in batch:
            series.add(row)
        count += len(batch)
    digest = Digest()
    series.write(digest)
    return count, digest.hexdigest()


def _rank_doc(rank: RankInfo) -> dict[str, Any]:
    """One rank's progress as the bundle keeps it: what `report_rank_progress` takes, and its rank."""
    fields = ("host", "local_rank", "tokens_total", "step", "start_s", "flops_per_token", "peak_flops")
    return {"rank": rank.rank} | {name: getattr(rank, name) for name in fields}
