"""The optional dependencies (pip extras): import one, or say in one line which ``pip install`` brings it.

Every layer may import this module at no cost (it imports nothing heavy). The table
below is the packaging fact, kept beside pyproject's ``[project.optional-dependencies]``
(a test checks that every extra it names exists there).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

from wattlog.errors import WattlogError

__all__ = ["EXTRA_OF", "MissingExtra", "installed", "require"]

EXTRA_OF = {
    "torch": "torch",
    "transformers": "hf",
    "accelerate": "hf",
    "lightning": "lightning",
    "psycopg": "pg",
    "streamlit": "dashboards",
    "grafana_client": "dashboards",
    "yaml": "dashboards",
    "pandas": "dashboards",
    "altair": "dashboards",
    "redfish": "node",
    "opentelemetry": "otlp",
    "olmo_core": "olmo-core",
    "torchtitan": "torchtitan",
}
"""Top-level module -> the wattlog extra that installs it."""


class MissingExtra(WattlogError, ImportError):
    """An optional dependency is not installed; the message is one line naming the pip command.

    Attributes:
        module: The module that is missing.
        extra: The wattlog extra that installs it.
    """

    def __init__(self, module: str, extra: str, user: str = "this wattlog integration") -> None:
        super().__init__(f"{user} needs {module}: pip install 'wattlog[{extra}]'")
        self.module = module
        self.extra = extra

    @classmethod
    def of(cls, error: ModuleNotFoundError, user: str) -> MissingExtra | None:
        """The missing extra behind `error` (None when the module is no extra's: a real bug)."""
        module = (error.name or "").split(".", 1)[0]
        extra = EXTRA_OF.get(module)
        return cls(module, extra, user) if extra is not None else None


def require(module: str, extra: str, user: str = "this wattlog integration") -> ModuleType:
    """Import `module`, or raise :class:`MissingExtra` naming ``pip install wattlog[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtra(module, extra, user) from error


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (a module set to None counts as missing)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
