"""An audit bundle: one run's measurement, self-contained, that recomputes its Table-19 row and exports.

`build_bundle` writes a tar.xz (a tar.gz where the name ends .tar.gz or .tgz) with the run (its
spec, status, edges, restarts), every ledger energy row (coded column by column, every float kept
exactly: accounting.audit_rows) and the revisions of their band, its
gaps and events (the counters'
start-up checks among them), the power and counter series per device, the site, the intensity with
each hour's provenance, the sensor profiles, the configuration and options the row was
printed with (the validity gate on), the printed row and its JSON and CSV exports, versions,
and a SHA-256 manifest of all of them (see accounting.audit_contents). `verify_bundle`
checks the manifest, replays the bundle into an in-memory ledger with the bundle's own site
and intensity (never the verifier's catalog), recomputes the row, its verdict and its
exports and compares them with the printed ones: the cells to the last printed digit, the
exports word for word and number for number, to within the rounding of summing the run's rows in
another order (`summing_tolerance`: a few parts in 10^13 for a thousand rows). A changed number
fails one or the other, and says where.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import tarfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wattlog.accounting.audit_contents import (
    check_series,
    config_doc,
    intensity_doc,
    power_series,
    profiles_doc,
    replay_options,
    site_doc,
    versions_doc,
)
from wattlog.accounting.audit_rows import decode_rows, encode_rows
from wattlog.accounting.exports import rows_csv, rows_json
from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.jobs import RankReport, rank_progress, report_rank_progress
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.render import FIGURE_COLUMNS, TableRow
from wattlog.accounting.run_table import TableOptions, carbon_path, overhead_for, run_row
from wattlog.accounting.validity import ValidityLimits
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.events import EventKind
from wattlog.records import BandRevision, EnergyInterval, Gap

if TYPE_CHECKING:
    from wattlog.accounting.ledger.views import RankInfo

MANIFEST = "manifest.json"
_SPEC_FIELDS = ("project", "role", "model", "site", "host", "phase", "stage", "scale_group", "device_model")


@dataclass(frozen=True, slots=True)
class AuditResult:
    """What `verify_bundle` found.

    Attributes:
        problems: One line per failed check (empty: the bundle verifies).
        printed: The row's cells as printed when the bundle was built.
        recomputed: The same cells recomputed from the bundle alone (empty if it could not be).
    """

    problems: tuple[str, ...]
    printed: Mapping[str, str]
    recomputed: Mapping[str, str]

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


def build_bundle(ledger: Ledger, run: int | str, options: TableOptions, out: Path) -> Path:
    """Write the audit bundle of `run` (its row as `options` print it, the gate on) to `out` (xz, see _gzip).

    Raises:
        ConfigError: The run has no site (a bundle recomputes a full row).
    """
    info = ledger.get_run(run)
    site_name = options.site or info.site
    if not site_name:
        raise ConfigError(f"run {info.name!r} has no site: pass --site to audit its full row")
    options = replace(options, site=site_name, validity=options.validity or ValidityLimits(), strict=False)
    site, carbon = carbon_path(ledger, info, options)
    rows = ledger.energy_rows(info.id)
    spec = {name: str(getattr(info, name, "") or "") for name in _SPEC_FIELDS if name != "project"}
    row = run_row(ledger, info, options)
    files = {
        "run.json": {
            "name": info.name,
            "spec": spec | {"project": ledger.project_of(info), "site": site.name},
            "status": str(info.status),
            "start_s": info.start_s,
            "end_s": info.end_s,
            "restarts": info.restarts,
        },  # fmt: skip
        "series.json": power_series(rows),
        "revisions.json": [asdict(r) for r in ledger.band_revisions(info.id)],  # the rows' band, as revised
        "ranks.json": [_rank_doc(r) for r in rank_progress(ledger, info.id)],  # tokens: J per token
        "gaps.json": [[g.host, g.device, g.start_s, g.end_s, g.reason] for g in ledger.gaps(info.id)],
        "events.json": [
            {
                "kind": str(e.kind),
                "time_s": e.time_s,
                "step": e.step,
                "category": str(e.category),
                "payload": dict(e.payload),
            }
            for e in ledger.events(info.id)
        ],  # fmt: skip
        "site.json": site_doc(site),
        "intensity.json": intensity_doc(carbon.intensity, rows),
        "profiles.json": profiles_doc(),
        "config.json": config_doc(info.config, options, overhead_for(info, options)),
        "table.json": printed_cells(row),
        "versions.json": versions_doc(),
    }
    # compact JSON, and the rows (most of a bundle: a 1,024-GPU month's must stay under 1 GB,
    # bench.audit_size) coded column by column against the previous row, losslessly
    blobs = {
        name: json.dumps(body, separators=(",", ":"), sort_keys=True).encode() for name, body in files.items()
    }
    blobs |= encode_rows(rows) | _exports(row)
    blobs[MANIFEST] = json.dumps(
        {n: hashlib.sha256(b).hexdigest() for n, b in blobs.items()}, indent=1
    ).encode()
    with tarfile.open(out, "w:gz") if _gzip(out) else tarfile.open(out, "w:xz") as tar:
        for name, blob in sorted(blobs.items()):
            member = tarfile.TarInfo(name)
            member.size = len(blob)
            tar.addfile(member, io.BytesIO(blob))
    return out


def _gzip(out: Path) -> bool:
    """Whether `out` asks for gzip by its name; else xz (lzma, stdlib): a 1,024-GPU month's series and
    rows ~2.7x smaller than gzip's (10 s rows), under 1 GB."""
    return out.name.endswith((".tar.gz", ".tgz"))


def _rows(blobs: Mapping[str, bytes]) -> list[EnergyInterval]:
    """The bundle's rows: coded column by column (accounting.audit_rows), or, in a bundle built before
    that, rows.json's JSON columns."""
    if "rows.json" not in blobs:
        return decode_rows(blobs)
    table = json.loads(blobs["rows.json"])
    columns, values = table["columns"], table["values"]
    return [EnergyInterval.from_dict(dict(zip(columns, r, strict=True))) for r in zip(*values, strict=True)]


def verify_bundle(path: Path) -> AuditResult:
    """Check the manifest's hashes, then recompute the row, series and exports from the bundle alone."""
    blobs = _read(path)
    problems = _check_manifest(blobs)
    printed = json.loads(blobs.get("table.json", b"{}"))
    if problems:
        return AuditResult(tuple(problems), printed, {})
    try:
        row, rows = _replay(blobs)
        series = json.loads(blobs["series.json"])
    except (WattlogError, KeyError, TypeError, ValueError) as e:  # rows the ledger itself refuses
        return AuditResult((f"the bundle cannot be replayed: {e}",), printed, {})
    recomputed = printed_cells(row)
    problems = [
        f"{column}: printed {printed.get(column)!r}, recomputed {value!r}"
        for column, value in recomputed.items()
        if printed.get(column) != value
    ]
    problems += check_series(series, rows)
    tolerance = summing_tolerance(len(rows))
    problems += [
        f"{name}: the recomputed export differs from the bundled one{difference}"
        for name, blob in _exports(row).items()
        if (difference := _difference(blobs.get(name), blob, tolerance))
    ]
    return AuditResult(tuple(problems), printed, recomputed)


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


def _read(path: Path) -> dict[str, bytes]:
    try:
        with tarfile.open(path, "r:*") as tar:  # xz or gzip
            return {m.name: f.read() for m in tar.getmembers() if m.isfile() and (f := tar.extractfile(m))}
    except (OSError, tarfile.TarError) as e:
        raise ConfigError(f"cannot read audit bundle {path}: {e}") from e


def _check_manifest(blobs: Mapping[str, bytes]) -> list[str]:
    if MANIFEST not in blobs:
        return ["no manifest.json: not an audit bundle"]
    manifest = json.loads(blobs[MANIFEST])
    problems = [f"{name}: listed in the manifest, missing" for name in manifest if name not in blobs]
    problems += [
        f"{name}: not in the manifest" for name in blobs if name not in manifest and name != MANIFEST
    ]
    problems += [
        f"{name}: SHA-256 differs from the manifest (changed after the bundle was built)"
        for name, digest in manifest.items()
        if name in blobs and hashlib.sha256(blobs[name]).hexdigest() != digest
    ]
    return problems


def _replay(blobs: Mapping[str, bytes]) -> tuple[TableRow, list[EnergyInterval]]:
    """The run's row recomputed in a fresh in-memory ledger from the bundle's files, and its rows."""
    run: dict[str, Any] = json.loads(blobs["run.json"])
    config: dict[str, Any] = json.loads(blobs["config.json"])
    clock = FakeClock(start_s=0.0, wall_offset_s=float(run["start_s"]))
    ledger = Ledger(make_engine("sqlite://"), clock=clock)
    info = ledger.start_run(run["name"], RunSpec(**run["spec"], config=config["run_config"]))
    rows = _rows(blobs)
    gaps = [Gap(h, d, float(s), float(e), str(r)) for h, d, s, e, r in json.loads(blobs["gaps.json"])]
    ledger.record_intervals(info.id, rows, gaps)
    revisions = json.loads(blobs.get("revisions.json", b"[]"))  # bundles built before revisions have none
    ledger.record_revisions(info.id, [BandRevision(**{**r, "terms": tuple(r["terms"])}) for r in revisions])
    for rank in json.loads(blobs.get("ranks.json", b"[]")):  # bundles built before ranks have none
        report_rank_progress(ledger, info.id, int(rank.pop("rank")), RankReport(**rank))
    for event in json.loads(blobs["events.json"]):
        kind = event.pop("kind")
        if kind == EventKind.RESTART:  # a resume records it, at its time, and counts the restart
            clock.advance(float(event["time_s"]) - clock.wall())
            ledger.start_run(run["name"], resume=True)
        else:
            ledger.record_event(info.id, kind, **event)
    if run["end_s"] is not None:
        ledger.end_run(info.id, run["status"], end_s=float(run["end_s"]))
    options = replay_options(json.loads(blobs["site.json"]), json.loads(blobs["intensity.json"]), config)
    return run_row(ledger, ledger.get_run(info.id), options), rows


def _rank_doc(rank: RankInfo) -> dict[str, Any]:
    """One rank's progress as the bundle keeps it: what `report_rank_progress` takes, and its rank."""
    fields = ("host", "local_rank", "tokens_total", "step", "start_s", "flops_per_token", "peak_flops")
    return {"rank": rank.rank} | {name: getattr(rank, name) for name in fields}
