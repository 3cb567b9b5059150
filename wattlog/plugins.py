"""Plugins: what installed packages add through entry points, beside the built-ins registered alike.

A group (``wattlog.sensors``: vendor backends; ``wattlog.intensity``: intensity sources) is read
from the installed metadata with :mod:`importlib.metadata`. wattlog's own entries are registered
in its pyproject.toml exactly as a third party's are; where the installed metadata predates them
(an editable install made before a built-in was added), the built-ins given here stand in for them,
so a built-in never goes missing and is never listed twice. An entry point that fails to load is
one line in :attr:`Loaded.failures`, shown by the command that lists the group, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

__all__ = ["BUILT_IN", "Loaded", "Plugin", "load_group"]

BUILT_IN = "built-in"
"""The origin of an entry wattlog itself registers."""

EntryPoints = Callable[[str], Iterable[metadata.EntryPoint]]
"""Which entry points a group has (default: the installed metadata's)."""


@dataclass(frozen=True, slots=True)
class Plugin:
    """One loaded entry point.

    Attributes:
        name: The entry point's name.
        value: Where it points, "module:attribute".
        origin: "built-in", or the distribution that brought it with its version ("acme-gpu 1.0").
        loaded: The object it names.
    """

    name: str
    value: str
    origin: str
    loaded: Any

    @property
    def built_in(self) -> bool:
        """Whether wattlog itself registers it."""
        return self.origin == BUILT_IN


@dataclass(frozen=True, slots=True)
class Loaded:
    """A group's entries: the built-ins first (in their given order), then plugins by name.

    Attributes:
        plugins: Every entry that loaded.
        failures: One line per entry that did not, naming it and why.
    """

    plugins: tuple[Plugin, ...]
    failures: tuple[str, ...] = ()

    def brought(self) -> tuple[Plugin, ...]:
        """The entries installed packages added (not wattlog's own)."""
        return tuple(p for p in self.plugins if not p.built_in)


def installed_entry_points(group: str) -> Iterable[metadata.EntryPoint]:
    """The installed metadata's entry points of `group`."""
    return metadata.entry_points(group=group)


def load_group(
    group: str, built_ins: Mapping[str, str], entry_points: EntryPoints = installed_entry_points
) -> Loaded:
    """Load `group`: its built-ins (name -> "module:attribute") and whatever else is installed.

    An installed entry with a built-in's name and value is that built-in; one with a built-in's
    name and another value is refused (a failure line), so no plugin silently replaces wattlog's.
    """
    plugins: list[Plugin] = []
    failures: list[str] = []
    found = sorted(entry_points(group), key=lambda e: e.name)
    for name, value in built_ins.items():
        _load(metadata.EntryPoint(name, value, group), BUILT_IN, plugins, failures)
    for entry in found:
        if entry.name in built_ins:
            if entry.value != built_ins[entry.name]:
                failures.append(
                    f"{group} {entry.name!r} from {_origin(entry)}: the name is wattlog's own "
                    f"({built_ins[entry.name]}), not loaded"
                )
            continue
        if any(p.name == entry.name for p in plugins):
            failures.append(f"{group} {entry.name!r} from {_origin(entry)}: registered twice, not loaded")
            continue
        _load(entry, _origin(entry), plugins, failures)
    return Loaded(tuple(plugins), tuple(failures))


def _load(entry: metadata.EntryPoint, origin: str, plugins: list[Plugin], failures: list[str]) -> None:
    try:
        loaded = entry.load()
    except Exception as e:  # a broken plugin is a line on screen, never the command's end
        failures.append(f"{entry.group} {entry.name!r} from {origin}: could not load {entry.value} ({e})")
        return
    plugins.append(Plugin(entry.name, entry.value, origin, loaded))


def _origin(entry: metadata.EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unnamed distribution"
