"""Packages whose public names load on first use, so importing one light module stays light.

:func:`import_deferring` does the same for a third-party module that imports heavy classes at its
top and rarely uses them (typer's help formatter: rich's Markdown and Traceback).

A package's ``__init__`` lists where each public name lives and calls :func:`lazy_package`;
``import wattlog.accounting.units`` then runs that ``__init__`` without importing the
renderers (rich), the ledger (SQLAlchemy) or anything else the package exports. Type
checkers read the same names from the ``__init__``'s ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["LazyPackage", "import_deferring", "lazy_package"]


class LazyPackage(ModuleType):
    """A package module that imports a public name from its home module when first read."""

    _wattlog_homes: Mapping[str, str]
    _wattlog_missing: Callable[[ModuleNotFoundError, str], Exception | None] | None

    def __getattr__(self, name: str) -> Any:
        home = self._wattlog_homes.get(name)
        if home is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        try:
            module = importlib.import_module(home)
        except ModuleNotFoundError as error:  # e.g. `from wattlog import Tracker` without torch
            said = self._wattlog_missing(error, name) if self._wattlog_missing is not None else None
            if said is None:
                raise
            raise said from error
        value = getattr(module, name)
        super().__setattr__(name, value)  # later reads skip __getattr__
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it on its package under its own name. Where a public name is
        # spelled the same (accounting's render() in accounting/publishing/render.py), the public
        # name must win,
        # as it did when the __init__ imported everything eagerly, whichever is imported first.
        submodule = isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}"
        if submodule and name in self._wattlog_homes:
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._wattlog_homes})


def lazy_package(
    name: str,
    homes: Mapping[str, str],
    missing: Callable[[ModuleNotFoundError, str], Exception | None] | None = None,
) -> None:
    """Make the package `name` load each public name from `homes` ({name: module}) on first use.

    Args:
        name: The package's ``__name__``.
        homes: The module each public name is defined in.
        missing: Turns a name's missing dependency into the error to raise instead (one line naming
            the pip extra); None, or it returning None, lets the ModuleNotFoundError through.
    """
    module = sys.modules[name]
    vars(module)["_wattlog_homes"] = dict(homes)  # before the class changes: __getattr__ reads it
    vars(module)["_wattlog_missing"] = missing
    module.__class__ = LazyPackage


class _Deferred(type):
    """The type of a stand-in class: its instances and attributes come from the real class, imported then."""

    _home: tuple[str, str]

    def _real(cls) -> Any:
        module, name = cls._home
        return getattr(importlib.import_module(module), name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, attr: str) -> Any:
        return getattr(cls._real(), attr)


def import_deferring(module: str, deferred: Mapping[str, str]) -> ModuleType:
    """Import `module` with the classes in `deferred` ({module: class}) imported only when first used.

    While `module` is imported, each module of `deferred` not imported yet is a stand-in holding a
    class that, called or read, imports the real module and forwards to the real class; the stand-ins
    are gone afterwards, so any later import gets the real module. An isinstance() against a deferred
    class is False: defer only classes the importer constructs or calls through.
    """
    stand_ins: dict[str, ModuleType] = {}
    for home, name in deferred.items():
        if home not in sys.modules:
            stand_ins[home] = ModuleType(home)
            setattr(stand_ins[home], name, _Deferred(name, (), {"_home": (home, name)}))
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module(module)
    finally:
        for home, stand_in in stand_ins.items():
            if sys.modules.get(home) is stand_in:
                del sys.modules[home]
