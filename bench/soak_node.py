"""`wattlog node` whose spool disk is full while a flag file exists (the soak's "spool disk full").

    python -m bench.soak_node FLAG node --run soak ...

With SOAK_PROVIDER_URL set, the site's live intensity provider is asked there (the
provider's ``base_url`` seam, :class:`ProviderContext`), and the fetch at the run's close
prints one line with how long it took ("soak: the fetch at close took 10.0 s: ...").

No tmpfs or loop device can be mounted unprivileged, so the full disk is played through the
spool's write seam (``Spool(write=...)``, accounting/ledger/spool_space.py): while FLAG exists
every write past the room the spool had reserved when the disk filled raises
``OSError(ENOSPC)``, as a real full disk does past a file's preallocated blocks
(``fallocate`` KEEP_SIZE, :meth:`Spool.open`). Everything else is `wattlog node` as shipped.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

from wattlog.accounting.ledger.spool_space import DEFAULT_RESERVE_BYTES, write_durably


class FullDisk:
    """A spool write seam: the disk is full while `flag` exists, but for the room reserved at its filling.

    Args:
        flag: While this file exists, the disk is full.
        reserve_bytes: The room the spool keeps allocated past its end (Spool's reserve_bytes).
    """

    def __init__(self, flag: Path, reserve_bytes: int = DEFAULT_RESERVE_BYTES) -> None:
        self.flag = flag
        self.reserve_bytes = reserve_bytes
        self._limit: int | None = None  # the file's end plus its room, when the disk filled

    def __call__(self, handle: IO[str], data: str) -> None:
        """Write as `write_durably` does, or raise ENOSPC past the reserved room while the disk is full."""
        if not self.flag.exists():
            self._limit = None
        else:
            handle.flush()
            size = os.fstat(handle.fileno()).st_size
            if self._limit is None:
                self._limit = size + self.reserve_bytes
            if size + len(data.encode()) > self._limit:
                raise OSError(errno.ENOSPC, "No space left on device (soak: spool disk full)")
        write_durably(handle, data)


def _provider_seam(url: str) -> None:
    """The site's provider asked at `url`, and the fetch at close timed (one line on stdout)."""
    from wattlog.accounting.carbon.intensity.live import at_close, providers

    context, fetch = providers.ProviderContext, at_close.fetch_at_close

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        done = fetch(*args, **kwargs)
        line = "no provider" if done is None else f"{'ok' if done.ok else 'failed'}: {done.line}"
        print(f"soak: the fetch at close took {time.monotonic() - started:.1f} s: {line}", flush=True)
        return done

    providers.ProviderContext = functools.partial(context, base_url=url)  # type: ignore[misc,assignment]  # the seam
    at_close.fetch_at_close = timed


def main(argv: list[str]) -> int:
    """Run the wattlog CLI with every spool written through a FullDisk on `argv[0]`."""
    from wattlog.accounting.fleet import recording
    from wattlog.cli import main as wattlog

    disk = FullDisk(Path(argv[0]))
    recording.Spool = functools.partial(recording.Spool, write=disk)  # type: ignore[misc]  # the seam, here only
    if os.environ.get("SOAK_PROVIDER_URL"):
        _provider_seam(os.environ["SOAK_PROVIDER_URL"])
    return wattlog(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
