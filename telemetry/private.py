"""What stays the user's own: folders only they can write, and credentials never printed.

Credentials: a URL's password (a Pushgateway's basic auth, a database's) is
masked in every message (:func:`hide_password`).

Folders: the device locks and the spool trust what they find there.

A folder another user can write lets that user plant lock files (naming a
metrics server whose figures a run would record) or spool lines (replayed
into the ledger). So wattlog's state folders are created 0700; an existing
one that is group- or world-writable is fixed if it is ours, and refused if
another user owns it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from wattlog.errors import ConfigError

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*):[^@\s]*@")


def hide_password(url: str) -> str:
    """`url` with the password of its user:password@ part as ***, for messages and logs.

    >>> hide_password("http://ops:s3cret@gw:9091/metrics")
    'http://ops:***@gw:9091/metrics'
    """
    return _USERINFO.sub(r"\g<scheme>\g<user>:***@", url)


def private_folder(path: Path) -> Path:
    """Create `path` 0700 (parents as usual), or check an existing one is ours and make it 0700.

    Returns:
        The folder.

    Raises:
        ConfigError: It cannot be created, is not a folder, or another user owns it.
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(path)
    except OSError as error:
        raise ConfigError(f"cannot create the private folder {path}: {error.strerror or error}") from error
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{path} is not a folder")
    if info.st_uid != os.getuid():
        raise ConfigError(
            f"folder {path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}): another user "
            "could plant files in it; choose a folder of your own (WATTLOG_LOCK_DIR, WATTLOG_SPOOL_DIR)"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        try:
            path.chmod(0o700)
        except OSError as error:
            raise ConfigError(f"cannot make {path} private (chmod 700): {error.strerror}") from error
    return path
