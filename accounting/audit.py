"""An audit bundle: one run's measurement, self-contained, that recomputes its Table-19 row.

`build_bundle` writes a tar.gz with the run (its spec, status, edges, restarts), every
ledger energy row, the revisions of their band, its gaps and events, the site and options the row was printed
with, the printed row itself, versions, and a SHA-256 manifest of all of them.
`verify_bundle` checks the manifest, replays the bundle into an in-memory ledger,
recomputes the row and compares it with the printed one, cell for cell, to the
last printed digit. A changed number fails one or the other, and says where.

Not in the bundle yet: the 1 Hz power series (the ledger keeps flush rows, not
samples), an hourly intensity series (the site's constant intensity is used), and
sensor profiles beyond the rows' bands.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from wattlog.accounting.footprint import WaterConvention
from wattlog.accounting.ledger.engine import make_engine
from wattlog.accounting.ledger.runs import RunSpec
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.render import FIGURE_COLUMNS, TableRow
from wattlog.accounting.run_table import TableOptions, run_row
from wattlog.accounting.sites import site_catalog
from wattlog.clock import FakeClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.events import EventKind
from wattlog.records import BandRevision, EnergyInterval, Gap

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
    """A row's figure cells as the table prints them, with its energy source and notes."""
    cells = {column: row.cell(column) for column in FIGURE_COLUMNS}
    return cells | {"energy_source": row.energy_source, "notes": " | ".join(row.notes)}


def build_bundle(ledger: Ledger, run: int | str, options: TableOptions, out: Path) -> Path:
    """Write the audit bundle of `run` (its row as `options` print it) to `out` (a .tar.gz).

    Raises:
        ConfigError: The run has no site (a bundle recomputes a full row).
    """
    info = ledger.get_run(run)
    site = options.site or info.site
    if not site:
        raise ConfigError(f"run {info.name!r} has no site: pass --site to audit its full row")
    spec = {name: str(getattr(info, name, "") or "") for name in _SPEC_FIELDS if name != "project"}
    files = {
        "run.json": {
            "name": info.name,
            "spec": spec | {"project": ledger.project_of(info), "site": site},
            "status": str(info.status),
            "start_s": info.start_s,
            "end_s": info.end_s,
            "restarts": info.restarts,
        },  # fmt: skip
        "rows.json": _columns([row.as_dict() for row in ledger.energy_rows(info.id)]),
        "revisions.json": [asdict(r) for r in ledger.band_revisions(info.id)],  # the rows' band, as revised
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
        "site.json": {"name": site, "convention": str(options.convention.value)},
        "table.json": printed_cells(run_row(ledger, info, options)),
        "versions.json": {"wattlog": _version(), "python": platform.python_version()},
    }
    # compact: the rows are most of a bundle (a 1,024-GPU month's must stay under 1 GB, bench.audit_size)
    blobs = {
        name: json.dumps(body, separators=(",", ":"), sort_keys=True).encode() for name, body in files.items()
    }
    blobs[MANIFEST] = json.dumps(
        {n: hashlib.sha256(b).hexdigest() for n, b in blobs.items()}, indent=1
    ).encode()
    with tarfile.open(out, "w:gz") as tar:
        for name, blob in sorted(blobs.items()):
            member = tarfile.TarInfo(name)
            member.size = len(blob)
            tar.addfile(member, io.BytesIO(blob))
    return out


def _version() -> str:
    """wattlog's installed version (the package root is above this layer: read from the metadata)."""
    try:
        return metadata.version("wattlog")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _columns(items: list[dict[str, object]]) -> dict[str, object]:
    """Rows as one header and value lists (a row with window names: `name`, `parent` filled, else "")."""
    columns = sorted({key for item in items for key in item})
    return {"columns": columns, "rows": [[item.get(key, "") for key in columns] for item in items]}


def verify_bundle(path: Path) -> AuditResult:
    """Check the manifest's hashes, then recompute the row from the bundle alone and compare."""
    blobs = _read(path)
    problems = _check_manifest(blobs)
    printed = json.loads(blobs.get("table.json", b"{}"))
    if problems:
        return AuditResult(tuple(problems), printed, {})
    try:
        recomputed = printed_cells(_replay(blobs))
    except (WattlogError, KeyError, TypeError, ValueError) as e:  # rows the ledger itself refuses
        return AuditResult((f"the bundle cannot be replayed: {e}",), printed, {})
    problems = [
        f"{column}: printed {printed.get(column)!r}, recomputed {value!r}"
        for column, value in recomputed.items()
        if printed.get(column) != value
    ]
    return AuditResult(tuple(problems), printed, recomputed)


def _read(path: Path) -> dict[str, bytes]:
    try:
        with tarfile.open(path, "r:gz") as tar:
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


def _replay(blobs: Mapping[str, bytes]) -> TableRow:
    """The run's row recomputed in a fresh in-memory ledger from the bundle's files."""
    run: dict[str, Any] = json.loads(blobs["run.json"])
    site: dict[str, Any] = json.loads(blobs["site.json"])
    clock = FakeClock(start_s=0.0, wall_offset_s=float(run["start_s"]))
    ledger = Ledger(make_engine("sqlite://"), clock=clock)
    info = ledger.start_run(run["name"], RunSpec(**run["spec"]))
    table = json.loads(blobs["rows.json"])
    rows = [EnergyInterval.from_dict(dict(zip(table["columns"], row, strict=True))) for row in table["rows"]]
    gaps = [Gap(h, d, float(s), float(e), str(r)) for h, d, s, e, r in json.loads(blobs["gaps.json"])]
    ledger.record_intervals(info.id, rows, gaps)
    revisions = json.loads(blobs.get("revisions.json", b"[]"))  # bundles built before revisions have none
    ledger.record_revisions(info.id, [BandRevision(**{**r, "terms": tuple(r["terms"])}) for r in revisions])
    for event in json.loads(blobs["events.json"]):
        kind = event.pop("kind")
        if kind == EventKind.RESTART:  # a resume records it, at its time, and counts the restart
            clock.advance(float(event["time_s"]) - clock.wall())
            ledger.start_run(run["name"], resume=True)
        else:
            ledger.record_event(info.id, kind, **event)
    if run["end_s"] is not None:
        ledger.end_run(info.id, run["status"], end_s=float(run["end_s"]))
    options = TableOptions(
        catalog=site_catalog(), site=site["name"], convention=WaterConvention(site["convention"])
    )
    return run_row(ledger, ledger.get_run(info.id), options)
