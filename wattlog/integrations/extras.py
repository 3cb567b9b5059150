"""Optional dependencies of the integrations: import one, or say which pip extra installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from wattlog.errors import WattlogError

__all__ = ["MissingExtra", "require"]


class MissingExtra(WattlogError, ImportError):
    """An optional dependency of an integration is not installed; the message names the pip command."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(f"this wattlog integration needs {module}: pip install 'wattlog[{extra}]'")
        self.module = module
        self.extra = extra


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or raise :class:`MissingExtra` naming ``pip install wattlog[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtra(module, extra) from error
