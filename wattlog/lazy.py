"""Packages whose public names load on first use, so importing one light module stays light.

A package's ``__init__`` lists where each public name lives and calls :func:`lazy_package`;
``import wattlog.accounting.units`` then runs that ``__init__`` without importing the
renderers (rich), the ledger (SQLAlchemy) or anything else the package exports. Type
checkers read the same names from the ``__init__``'s ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

__all__ = ["LazyPackage", "lazy_package"]


class LazyPackage(ModuleType):
    """A package module that imports a public name from its home module when first read."""

    _wattlog_homes: Mapping[str, str]

    def __getattr__(self, name: str) -> Any:
        home = self._wattlog_homes.get(name)
        if home is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        super().__setattr__(name, value)  # later reads skip __getattr__
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it on its package under its own name. Where a public name is
        # spelled the same (accounting's render() in accounting/render.py), the public name must win,
        # as it did when the __init__ imported everything eagerly, whichever is imported first.
        submodule = isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}"
        if submodule and name in self._wattlog_homes:
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._wattlog_homes})


def lazy_package(name: str, homes: Mapping[str, str]) -> None:
    """Make the package `name` load each public name from `homes` ({name: module}) on first use.

    Args:
        name: The package's ``__name__``.
        homes: The module each public name is defined in.
    """
    module = sys.modules[name]
    vars(module)["_wattlog_homes"] = dict(homes)  # before the class changes: __getattr__ reads it
    module.__class__ = LazyPackage
