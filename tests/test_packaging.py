"""One import package: the wheel installs `wattlog` and nothing else, and its layers hold.

The wheel is built once per session from the working tree; the layering contract
(pyproject's [tool.importlinter]) is checked on the wheel's own layout, where
`wattlog.telemetry` really is a folder under `wattlog/` as it is for users.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "wattlog": "wattlog",
    "telemetry": "wattlog.telemetry",
    "accounting": "wattlog.accounting",
    "trainer": "wattlog.trainer",
    "dashboards": "wattlog.dashboards",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from the working tree (no build isolation: setuptools is in the venv)."""
    out = tmp_path_factory.mktemp("wheel")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run(
        [*pip_wheel, "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (found,) = out.glob("wattlog-*.whl")
    return found


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel unpacked as pip would lay it into site-packages."""
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def _record_top_levels(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        (record,) = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
        rows = csv.reader(archive.read(record).decode().splitlines())
        return {row[0].split("/")[0] for row in rows if row}


def test_the_wheel_holds_exactly_one_import_package(wheel: Path) -> None:
    tops = _record_top_levels(wheel)
    packages = {t for t in tops if not t.endswith(".dist-info")}
    assert packages == {"wattlog"}, f"top-level entries besides wattlog: {sorted(packages)}"


def test_the_wheel_carries_the_data_files(site: Path) -> None:
    for relative in (
        "wattlog/accounting/data/sites.toml",
        "wattlog/accounting/ledger/migrations/script.py.mako",
        "wattlog/dashboards/prometheus/rules.yml",
        "wattlog/dashboards/grafana/wattlog-energy.json",
        "wattlog/py.typed",
    ):
        assert (site / relative).is_file(), relative


def test_pyproject_lists_every_package_folder() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for folder, dotted in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((dotted, *relative)))
    assert listed == found


def _lint_imports(site: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [str(lint), str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=site,
    )


def test_the_layers_hold(site: Path) -> None:
    result = _lint_imports(site)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("telemetry/sampler.py", "wattlog.accounting.footprint"),
        ("accounting/footprint.py", "wattlog.trainer.detectors"),
        ("dashboards/notify.py", "wattlog.trainer.health"),
        ("trainer/detectors.py", "wattlog.dashboards.notify"),
        ("errors.py", "wattlog.telemetry.sampler"),
    ],
)
def test_an_upward_import_breaks_the_contract(
    site: Path, tmp_path: Path, module: str, forbidden: str
) -> None:
    broken = tmp_path / "site"
    subprocess.run(["cp", "-r", str(site), str(broken)], check=True)
    target = broken / "wattlog" / module
    target.write_text(target.read_text() + f"\nimport {forbidden}  # noqa\n")
    result = _lint_imports(broken)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout


def test_pure_arithmetic_loads_no_sensor_sampler_or_database(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import wattlog.accounting.footprint"],
        capture_output=True,
        text=True,
        env=env,
        cwd=site,
    )
    assert result.returncode == 0, result.stderr
    loaded = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    heavy = {m for m in loaded if m.split(".")[0] in {"psutil", "sqlalchemy", "sqlmodel", "torch", "pynvml"}}
    heavy |= {m for m in loaded if m.startswith(("wattlog.telemetry", "wattlog.trainer"))}
    assert not heavy, sorted(heavy)


def test_python_m_wattlog_and_lazy_api(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = (
        "import sys, wattlog; assert 'torch' not in sys.modules; "
        "from wattlog import Ledger, Kind, WattlogError; assert 'torch' not in sys.modules; "
        "print(wattlog.__version__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=site)
    assert result.returncode == 0, result.stderr
    help_text = subprocess.run(
        [sys.executable, "-m", "wattlog", "--help"], capture_output=True, text=True, env=env, cwd=site
    )
    assert help_text.returncode == 0, help_text.stderr
    assert "table" in help_text.stdout
