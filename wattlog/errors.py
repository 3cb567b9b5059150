"""The project's typed errors.

One root, :class:`WattlogError`, that the CLI catches and prints as one line.
Every package raises these (accounting and trainer import them from here), so a
caller can tell a misconfiguration from a lost device from a broken ledger.
"""

from __future__ import annotations


class WattlogError(Exception):
    """Root of every error wattlog raises on purpose; its message names the fix."""


class ConfigError(WattlogError, ValueError):
    """A setting or an input value is invalid (bad PUE, unknown site, malformed file)."""


class PlantedFolder(ConfigError):
    """A state folder, or a folder or link on its way, is another user's: nothing is made under it."""

    def __init__(self, path: object, why: str) -> None:
        super().__init__(
            f"folder {path} is not safe to use ({why}): another user could redirect or read what wattlog "
            "writes there; remove it, or choose a folder of your own (WATTLOG_LOCK_DIR, WATTLOG_SPOOL_DIR, "
            "XDG_RUNTIME_DIR)"
        )
        self.path = path
        self.why = why


class UntrustedInput(ConfigError):
    """A file or answer from elsewhere (a bundle, a spool file, a server's body) refused unread."""

    def __init__(self, source: object, why: str) -> None:
        super().__init__(f"{source} refused: {why}")
        self.source = source
        self.why = why


class SensorError(WattlogError):
    """A sensor could not be read."""


class SensorUnavailable(SensorError):
    """The backend cannot be used on this machine (no driver, no permission, no sysfs tree)."""


class NotSupported(SensorError):
    """The device does not offer this metric; callers fall back per metric."""

    def __init__(self, metric: str, device: str = "") -> None:
        super().__init__(f"{metric} is not supported" + (f" on {device}" if device else ""))
        self.metric = metric
        self.device = device


class DeviceLost(SensorError):
    """The device stopped answering (GPU_IS_LOST, UNKNOWN): it is marked lost, others go on."""

    def __init__(self, device: str, reason: str = "") -> None:
        super().__init__(f"device {device} is lost" + (f": {reason}" if reason else ""))
        self.device = device
        self.reason = reason


class LedgerError(WattlogError):
    """The ledger cannot be opened, read or written; nothing was half-written."""


class LedgerUnavailable(LedgerError):
    """The ledger cannot be reached now (server down, connections used up, disk full): try again later.

    Unlike a damaged ledger or a wrong URL, this passes: writers spool and go on.
    """


class RunNotFound(LedgerError, LookupError):
    """The ledger has no run of that name or id."""

    def __init__(self, run: int | str) -> None:
        # `wattlog table` hides development runs, the ones most often mistyped and deleted
        super().__init__(f"run {str(run)!r} does not exist: `wattlog runs` lists every run in the ledger")
        self.run = run
