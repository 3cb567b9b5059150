"""Plugins: vendor backends (wattlog.sensors) and intensity sources (wattlog.intensity) by entry point.

The last tests build and install tests/data/plugin_example (a third party's package: the Acme
vendor and Acme's grid) into a temporary folder and run wattlog with it on the path: the CLI and a
sites file name both, and wattlog is not edited.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from wattlog.accounting.carbon.intensity.registry import BUILT_IN_SOURCES, SOURCES, registered
from wattlog.cli import main
from wattlog.plugins import BUILT_IN, load_group
from wattlog.telemetry.sensors.discovery import BUILT_IN_BACKENDS, GPU_BACKENDS, vendor_backends

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "data" / "plugin_example"
GROUP = "wattlog.test"
BUILT_INS = {"one": "wattlog.plugins:BUILT_IN"}

SITES_TOML = """
[sites.acme-lab]
pue = 1.1
wue_onsite_l_per_kwh = 0.0
wue_offsite_l_per_kwh = 1.0
carbon_intensity_kg_per_kwh = 0.2

[sites.acme-lab.intensity]
source = "acme-grid"
series = "north"
"""


def _points(*entries: tuple[str, str]) -> object:
    return lambda group: [metadata.EntryPoint(name, value, group) for name, value in entries]


def test_the_built_ins_load_when_the_installed_metadata_lacks_them() -> None:
    loaded = load_group(GROUP, BUILT_INS, _points())
    assert [(p.name, p.origin, p.loaded) for p in loaded.plugins] == [("one", BUILT_IN, BUILT_IN)]
    assert loaded.failures == () and loaded.brought() == ()


def test_a_built_in_in_the_metadata_too_is_listed_once() -> None:
    loaded = load_group(GROUP, BUILT_INS, _points(("one", "wattlog.plugins:BUILT_IN")))
    assert [p.name for p in loaded.plugins] == ["one"]


def test_a_plugin_is_loaded_after_the_built_ins_and_one_taking_a_built_ins_name_is_refused() -> None:
    loaded = load_group(
        GROUP, BUILT_INS, _points(("two", "wattlog.plugins:load_group"), ("one", "wattlog.plugins:Plugin"))
    )
    assert [p.name for p in loaded.plugins] == ["one", "two"]
    assert loaded.plugins[0].loaded == BUILT_IN  # wattlog's own, not the impostor
    assert [p.name for p in loaded.brought()] == ["two"]
    (failure,) = loaded.failures
    assert "'one'" in failure and "wattlog's own" in failure


def test_a_plugin_that_cannot_load_is_a_line_not_a_traceback() -> None:
    loaded = load_group(GROUP, BUILT_INS, _points(("broken", "no_such_module_here:thing")))
    assert [p.name for p in loaded.plugins] == ["one"]
    (failure,) = loaded.failures
    assert "'broken'" in failure and "no_such_module_here" in failure


def test_the_built_ins_are_registered_in_pyproject_as_a_third_partys_would_be() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    groups = config["project"]["entry-points"]
    assert groups["wattlog.sensors"] == BUILT_IN_BACKENDS
    assert groups["wattlog.intensity"] == BUILT_IN_SOURCES
    assert [p.loaded for p in vendor_backends(_points()).plugins] == list(GPU_BACKENDS)
    assert [s for s, origin in registered(_points()).sources if origin == BUILT_IN] == list(SOURCES)


def test_a_site_cannot_name_a_source_no_package_registered(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text(SITES_TOML)
    assert main(["sites", "--sites-file", str(path)]) != 0


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/plugin_example built and installed with pip into a folder of its own."""
    work = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(EXAMPLE, work / "source")  # the build leaves nothing in the checkout
    target = work / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, "--target", str(target), str(source)], check=True, capture_output=True)
    assert (target / "wattlog_acme_example-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def _wattlog(plugin_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{plugin_path}{os.pathsep}{ROOT}", "COLUMNS": "240"}
    return subprocess.run(
        [sys.executable, "-m", "wattlog", *args], capture_output=True, text=True, env=env, cwd=ROOT
    )


def test_wattlog_sensors_measures_a_vendor_a_plugin_brought(plugin_path: Path, tmp_path: Path) -> None:
    result = _wattlog(plugin_path, "sensors", "--powercap-root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if "ACME-A1-0" in line]
    assert "Acme A1" in row and "Acme" in row and "simulated" in row
    (backends,) = [line for line in result.stdout.splitlines() if line.startswith("vendor backends:")]
    assert "NVIDIA (built-in)" in backends
    assert "Acme (plugin 'acme' from wattlog-acme-example 0.1.0)" in backends


def test_a_sites_file_names_an_intensity_source_a_plugin_brought(plugin_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text(SITES_TOML)
    result = _wattlog(plugin_path, "sites", "--sites-file", str(path), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert "acme-lab,Carbon intensity in tables,hourly,acme-grid north" in result.stdout
    listed = _wattlog(plugin_path, "sites")
    assert "intensity sources from plugins: acme-grid (wattlog-acme-example 0.1.0)" in listed.stdout
    code = (
        "from wattlog.accounting.carbon.intensity.registry import open_intensity\n"
        "from wattlog.accounting.carbon.sites import get_site, load_sites\n"
        f"site = get_site('acme-lab', load_sites({str(path)!r}))\n"
        "print(open_intensity(site.intensity_source).kg_per_kwh_at(0.0))"
    )
    env = {**os.environ, "PYTHONPATH": f"{plugin_path}{os.pathsep}{ROOT}"}
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.strip() == "0.123"  # Acme's north region, as the plugin publishes it
