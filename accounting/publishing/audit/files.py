"""An audit bundle's files: written as a tar.xz (or .tar.gz) with a SHA-256 manifest, read back
by streaming its regular members, under caps, into a private folder, so that a bundle of millions
of rows is never held in memory whole (its rows and series are files, read and hashed in pieces)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Mapping
from pathlib import Path

from wattlog.accounting.publishing.untrusted_tar import TarLimits, regular_members
from wattlog.errors import UntrustedInput
from wattlog.untrusted import loads_json

MANIFEST = "manifest.json"
_PIECE = 1 << 20


def sha256_of(path: Path) -> str:
    """A file's SHA-256, read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while piece := source.read(_PIECE):
            digest.update(piece)
    return digest.hexdigest()


def write_bundle(out: Path, blobs: Mapping[str, bytes], files: Mapping[str, Path]) -> None:
    """`out` holding `blobs` and `files` by name, with their SHA-256 in manifest.json (xz, see _gzip)."""
    digests = {name: hashlib.sha256(blob).hexdigest() for name, blob in blobs.items()}
    digests |= {name: sha256_of(path) for name, path in files.items()}
    everything: dict[str, bytes | Path] = {**blobs, **files, MANIFEST: json.dumps(digests, indent=1).encode()}
    with tarfile.open(out, "w:gz") if _gzip(out) else tarfile.open(out, "w:xz") as tar:
        for name, body in sorted(everything.items()):
            member = tarfile.TarInfo(name)
            if isinstance(body, Path):
                member.size = body.stat().st_size
                with body.open("rb") as source:
                    tar.addfile(member, source)
            else:
                member.size = len(body)
                tar.addfile(member, io.BytesIO(body))


def _gzip(out: Path) -> bool:
    """Whether `out` asks for gzip by its name; else xz (lzma, stdlib): a 1,024-GPU month's series and
    rows ~2.7x smaller than gzip's (10 s rows)."""
    return out.name.endswith((".tar.gz", ".tgz"))


def extract_bundle(path: Path, folder: Path, limits: TarLimits | None = None) -> dict[str, Path]:
    """The bundle's regular files written under `folder` (private: a TemporaryDirectory), by name.

    The bundle comes from elsewhere: read as a stream, with only regular members and under the member
    and size caps of `limits` (publishing/untrusted_tar.py), so nothing but its files is ever written.

    Raises:
        UntrustedInput: Not a regular file or a tar; a link, device or FIFO member; a member named
            outside the bundle (absolute or ".."); a member named twice; past the member or size caps.
            One line each.
    """
    members: dict[str, Path] = {}
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in regular_members(path, limits):
        if name in members:
            raise UntrustedInput(path, f"member {name!r} twice (which one is the bundle's?)")
        # a name wattlog chooses, flat: the bundle's names only key the map ("a" then "a/b", or any
        # name a file system refuses, would otherwise be a traceback or a folder made from outside)
        target = folder / f"member-{len(members):04d}"
        with target.open("xb") as sink:
            shutil.copyfileobj(source, sink, _PIECE)
        members[name] = target
    return members


def folded(names: list[str], said: str, shown: int = 5) -> list[str]:
    """One problem line per name, or one line for them all past `shown` names: a bundle from
    elsewhere may hold up to 1,000 members, and its manifest list any number of names."""
    if len(names) <= shown:
        return [f"{name}: {said}" for name in names]
    return [f"{len(names):,} files {said}: {', '.join(names[:shown])} and {len(names) - shown:,} more"]


def check_manifest(members: Mapping[str, Path]) -> list[str]:
    """What the manifest says that the files do not: missing, unlisted, or changed files."""
    if MANIFEST not in members:
        return ["no manifest.json: not an audit bundle"]
    try:  # from elsewhere: any bytes
        manifest = loads_json(members[MANIFEST].read_bytes())
    except ValueError as error:
        return [f"manifest.json: not JSON ({str(error).splitlines()[0][:120]})"]
    if not isinstance(manifest, dict) or not all(isinstance(v, str) for v in manifest.values()):
        return ["manifest.json: not a JSON object of file name -> SHA-256"]
    problems = folded([name for name in manifest if name not in members], "listed in the manifest, missing")
    problems += folded(
        [name for name in members if name not in manifest and name != MANIFEST], "not in the manifest"
    )
    problems += [
        f"{name}: SHA-256 differs from the manifest (changed after the bundle was built)"
        for name, digest in manifest.items()
        if name in members and sha256_of(members[name]) != digest
    ]
    return problems
