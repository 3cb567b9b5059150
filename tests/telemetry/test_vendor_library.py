"""The vendor libraries (pynvml, amdsmi, pyhlml) load through one helper: import, then start."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wattlog.errors import SensorUnavailable
from wattlog.telemetry.sensors.vendor_library import import_library, start_library

SENSORS = Path(__file__).resolve().parents[2] / "telemetry" / "sensors"


class LibraryError(Exception):
    """A vendor library's own error."""


def test_a_library_that_does_not_import_is_one_line_naming_the_fix() -> None:
    with pytest.raises(SensorUnavailable, match=r"^absent \(No module named") as raised:
        import_library("no_such_vendor_library", (ImportError,), lambda e: f"absent ({e}): pip install it")
    assert isinstance(raised.value.__cause__, ImportError)


def test_an_init_that_raises_the_librarys_error_is_one_line_and_any_other_error_propagates() -> None:
    def init() -> None:
        raise LibraryError("driver gone")

    with pytest.raises(SensorUnavailable, match=r"^could not start \(driver gone\)$"):
        start_library(init, LibraryError, lambda e: f"could not start ({e})")
    with pytest.raises(LibraryError):
        start_library(init, KeyError, lambda e: "never shown")
    start_library(lambda: None, LibraryError, lambda e: "never shown")


@pytest.mark.parametrize("module", ["nvml.py", "amdsmi_sensor.py", "gaudi.py"])
def test_each_vendor_sensor_loads_its_library_through_the_helper(module: str) -> None:
    tree = ast.parse((SENSORS / module).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert "importlib" not in imported
    assert {"import_library", "start_library"} <= called
