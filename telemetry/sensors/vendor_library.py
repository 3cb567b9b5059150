"""Loading a vendor's library, shared by the NVML, AMD and Gaudi sensors: import it, then start it.

A vendor library fails the same two ways on a machine without that vendor: it does not import
(not installed, or its shared object is missing), or it imports and its init call raises its own
error. Both become a :class:`~wattlog.errors.SensorUnavailable` with one line naming the fix, so
discovery shows a note and measures the rest.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from wattlog.errors import SensorUnavailable

__all__ = ["import_library", "start_library"]


def import_library(
    name: str, errors: tuple[type[BaseException], ...], missing: Callable[[BaseException], str]
) -> Any:
    """Import the vendor module `name` ("pynvml", "amdsmi", "pyhlml").

    Args:
        name: Its import name.
        errors: What importing it may raise where the vendor is absent.
        missing: The line to show, given the error.

    Raises:
        SensorUnavailable: It did not import.
    """
    try:
        return importlib.import_module(name)
    except errors as e:
        raise SensorUnavailable(missing(e)) from e


def start_library(
    init: Callable[[], object], error: type[BaseException], failed: Callable[[BaseException], str]
) -> None:
    """Start the vendor library (its init call).

    Args:
        init: The library's init, e.g. ``nvml.nvmlInit``.
        error: The library's own error type (``nvml.NVMLError``); any other error propagates.
        failed: The line to show, given the error.

    Raises:
        SensorUnavailable: The init raised the library's error.
    """
    try:
        init()
    except error as e:
        raise SensorUnavailable(failed(e)) from e
