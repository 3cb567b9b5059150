"""Read a tar from elsewhere (an audit bundle) without trusting it.

On 38e5f82 `wattlog audit verify` hung on a FIFO or /dev/zero given as the bundle,
accepted bundles holding links and device entries as "verified", wrote 2.14 GB to
its temporary folder for a 2 MB bomb, and printed 200,001 lines for 100,000 junk
entries. Here the file is opened only if it is a regular file (never blocking on a
FIFO), only regular members are read, and the member count and the decompressed
size (absolute, and against the compressed size) are capped before a byte is
written. Every refusal is one :class:`~wattlog.errors.UntrustedInput` line naming
the reason.
"""

from __future__ import annotations

import contextlib
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from wattlog.errors import UntrustedInput
from wattlog.untrusted import open_regular

_KINDS = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.DIRTYPE: "a folder",
}


@dataclass(frozen=True, slots=True)
class TarLimits:
    """How much of a tar from elsewhere is read before it is refused."""

    max_members: int = 1000
    """Members (a bundle holds about 30)."""
    max_bytes: int = 64 << 30
    """Decompressed bytes in all, whatever the ratio."""
    max_ratio: float = 200.0
    """Decompressed bytes per compressed byte beyond `ratio_floor_bytes` (rows compress ~10-30x)."""
    ratio_floor_bytes: int = 256 << 20
    """Decompressed bytes always allowed, whatever the ratio."""

    def budget(self, compressed: int) -> int:
        """Decompressed bytes allowed for a file of `compressed` bytes."""
        return min(self.max_bytes, max(self.ratio_floor_bytes, int(compressed * self.max_ratio)))


def regular_members(path: Path, limits: TarLimits | None = None) -> Iterator[tuple[str, IO[bytes]]]:
    """Each member's name and contents, streamed, refusing the whole tar at the first bad member.

    Raises:
        UntrustedInput: Not a regular file or not a tar; a member not a regular file, named outside the
            tar, or past the member or size caps.
    """
    limits = limits or TarLimits()
    with open_regular(path, "bundle") as raw:
        budget = limits.budget(os.fstat(raw.fileno()).st_size)
        try:
            tar = tarfile.open(fileobj=raw, mode="r|*")  # noqa: SIM115 - closed below; a stream, never seeks
        except (tarfile.TarError, EOFError, OSError) as error:
            raise UntrustedInput(path, f"not a tar (xz, gzip or plain): {_first_line(error)}") from error
        with contextlib.closing(tar):
            yield from _checked(path, tar, limits, budget)


def _checked(
    path: Path, tar: tarfile.TarFile, limits: TarLimits, budget: int
) -> Iterator[tuple[str, IO[bytes]]]:
    count = total = 0
    try:
        for member in tar:
            count += 1
            if count > limits.max_members:
                raise UntrustedInput(path, f"more than {limits.max_members} members")
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise UntrustedInput(path, f"member {member.name!r} points outside it")
            if not member.isreg():
                kind = _KINDS.get(member.type, f"of tar type {member.type!r}")
                raise UntrustedInput(path, f"member {member.name!r} is {kind}; only regular files are read")
            total += member.size
            if total > budget:
                raise UntrustedInput(path, f"decompresses past {budget:,} bytes (a bomb?)")
            source = tar.extractfile(member)
            if source is not None:
                yield member.name, source
    except (tarfile.TarError, EOFError, OSError) as error:
        raise UntrustedInput(path, f"unreadable tar: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0].rstrip(":") if text else type(error).__name__
