"""What stays the user's own: folders only they can write, and credentials never printed.

Credentials: a URL's password (a Pushgateway's basic auth, a database's) is
masked in every message (:func:`hide_password`).

Folders: the device locks and the spool trust what they find there.

A folder another user can write lets that user plant lock files (naming a
metrics server whose figures a run would record) or spool lines (replayed
into the ledger). So wattlog's state folders are created 0700; an existing
one that is group- or world-writable is fixed if it is ours, and refused if
another user owns it or any folder or link on its way (telemetry/private_walk.py).
"""

from __future__ import annotations

from pathlib import Path

from wattlog.masking import mask
from wattlog.telemetry.private_walk import open_private_folder


def hide_password(url: str) -> str:
    """`url` with the password of its user:password@ part as ***, for messages and logs.

    >>> hide_password("http://ops:s3cret@gw:9091/metrics")
    'http://ops:***@gw:9091/metrics'
    """
    return mask(url)


def private_folder(path: Path) -> Path:
    """Create `path` 0700 (parents as usual), or check an existing one is ours and make it 0700.

    Walked without following another user's links (:func:`open_private_folder`).

    Returns:
        The folder.

    Raises:
        PlantedFolder: It, or a folder or link on its way, is another user's, or it is not a folder.
    """
    open_private_folder(path)
    return path
