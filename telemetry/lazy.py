"""Lazy package exports: a package `__init__` names where each public name lives, imported on first use.

So importing one module of a package (wattlog.telemetry.job) does not load the
whole package (the sampler, every sensor, psutil). Type checkers see the names
through the package's own ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module `__getattr__` and `__dir__` for `package`, whose public names live in `homes`.

    Args:
        package: The package's `__name__`.
        homes: Public name -> the module it is imported from.

    Returns:
        (__getattr__, __dir__) to assign in the package's `__init__`.
    """

    def get(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def names() -> list[str]:
        return sorted(homes)

    return get, names
