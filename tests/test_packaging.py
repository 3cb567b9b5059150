"""One import package: the wheel installs `wattlog` and nothing else, and its layers hold.

The wheel is built once per session from a copy of the files git would commit (never the
working tree itself, where a stale egg-info or build/ folder can smuggle a removed file
into the wheel). The layering contract (pyproject's [tool.importlinter]) is checked on
the wheel's own layout, as users install it, and on the checkout, where wattlog/telemetry
is a relative link to telemetry/ that every tool follows.
"""

from __future__ import annotations

import csv
import os
import shutil
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


def _committable() -> list[str]:
    """The paths git would commit (tracked or new, not ignored), less those deleted in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        cwd=ROOT,
    ).stdout.split(b"\0")
    names = [item.decode() for item in listed if item]
    return [name for name in names if (ROOT / name).is_symlink() or (ROOT / name).exists()]


def _committable_copy(target: Path) -> Path:
    """The files git would commit, links kept as links."""
    for name in _committable():
        source = ROOT / name
        copy = target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            copy.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, copy)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from a clean copy of the tree (no build isolation: setuptools is in the venv)."""
    source = _committable_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run(
        [*pip_wheel, "-w", str(out), str(source)],
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


def test_the_wheel_carries_every_committed_data_file_and_no_other(wheel: Path) -> None:
    """Data files as git would commit them, each in the wheel, and nothing else besides Python modules.

    Built from the working tree, a stale egg-info kept a data file the package data no longer
    named (a mutation survived); from a clean copy, dropping a pattern loses its files here.
    """
    committed = set()
    for name in _committable():
        folder, _, rest = name.partition("/")
        if folder in FOLDERS and not name.endswith(".py") and not (ROOT / name).is_symlink():
            committed.add("/".join((*FOLDERS[folder].split("."), rest)))
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            n
            for n in archive.namelist()
            if not n.endswith(".py") and ".dist-info/" not in n and not n.endswith("/")
        }
    assert shipped == committed


def test_the_wheel_holds_every_package_folder(site: Path) -> None:
    """Packages are discovered through the links: a new subpackage needs no listing anywhere."""
    for folder, dotted in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            installed = site.joinpath(*dotted.split("."), *relative, "__init__.py")
            assert installed.is_file(), ".".join((dotted, *relative))


def test_the_layer_folders_are_relative_links_into_the_package() -> None:
    for folder in FOLDERS.keys() - {"wattlog"}:
        link = ROOT / "wattlog" / folder
        assert link.is_symlink(), f"wattlog/{folder} must link to ../{folder}"
        assert os.readlink(link) == f"../{folder}"


def test_the_layer_contract_names_every_module() -> None:
    """A module of wattlog/ left out of the layers would be free to import anything."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if "containers" not in c]
    named = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    modules = {f"wattlog.{p.stem}" for p in (ROOT / "wattlog").glob("*.py") if p.stem != "__init__"}
    modules |= {f"wattlog.{p.parent.name}" for p in (ROOT / "wattlog").glob("*/__init__.py")}
    assert modules == named


def test_the_checkout_resolves_every_module_to_its_folder(tmp_path: Path) -> None:
    """From the repository root, with nothing installed, wattlog.telemetry.agent is telemetry/agent.py."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = (
        "import sys, os; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
        "import wattlog.telemetry.agent as m; print(os.path.realpath(m.__file__))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(ROOT / "telemetry" / "agent.py")
    lint = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "KEPT" in lint.stdout


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
        ("telemetry/sampler.py", "wattlog.accounting.publishing.footprint"),
        ("accounting/publishing/footprint.py", "wattlog.trainer.detectors"),
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
        [sys.executable, "-X", "importtime", "-c", "import wattlog.accounting.publishing.footprint"],
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


@pytest.mark.parametrize("args", [["sites"], ["table", "--reference", "--format", "markdown"]])
def test_installed_commands_find_their_data_files(site: Path, tmp_path: Path, args: list[str]) -> None:
    """Data files are found through the installed package, never a top-level `accounting`.

    Other projects' `trainer`, `telemetry`, `accounting` and `dashboards` (all on PyPI) sit first on
    the path and refuse to load: wattlog must never reach for them.
    """
    shadow = tmp_path / "shadow"
    for name in ("trainer", "telemetry", "accounting", "dashboards"):
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(f"raise ImportError('{name} is another project')\n")
    path = os.pathsep.join((str(shadow), str(site)))
    env = {**os.environ, "PYTHONPATH": path, "WATTLOG_DB": f"sqlite:///{tmp_path / 'w.db'}"}
    result = subprocess.run(
        [sys.executable, "-m", "wattlog", *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


# A user's settings (the project's own), with the frameworks' packages not followed: neither
# signature names a torch, numpy or Lightning type, and reading their stubs was half of this test's
# 40 s (the slowest in the suite but two).
_MYPY_USER_CONFIG = """[mypy]
python_version = 3.11
ignore_missing_imports = True
implicit_reexport = False
[mypy-torch.*,numpy.*,transformers.*,lightning.*,pytorch_lightning.*,lightning_fabric.*,torchmetrics.*]
follow_imports = skip
"""


def test_mypy_sees_the_trackers_real_signature(site: Path, tmp_path: Path) -> None:
    """The signature users' mypy sees, from the wheel's layout as installed (MYPYPATH)."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import wattlog\nreveal_type(wattlog.Tracker)\nreveal_type(wattlog.RunSession)\n")
    config = tmp_path / "mypy.ini"
    config.write_text(_MYPY_USER_CONFIG)
    mypy = Path(sys.executable).with_name("mypy")
    result = subprocess.run(
        [
            str(mypy),
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(site)},
        cwd=tmp_path,
    )
    revealed = [line for line in result.stdout.splitlines() if "Revealed type" in line]
    assert len(revealed) == 2, result.stdout + result.stderr
    tracker, session = revealed
    # the config object (or, short form, the run's free-form mapping), then the objects it works with
    assert "def (run: str | None =, config: wattlog.trainer.tracker_config.TrackerConfig" in tracker
    assert "callbacks: typing.Sequence[wattlog.trainer.callback.Callback] =" in tracker
    assert tracker.endswith('-> wattlog.trainer.tracker.Tracker"')
    assert "config: wattlog.trainer.session_config.SessionConfig" in session
    assert "Any" not in tracker.split("config:")[0]  # every parameter before the free-form config is typed


def test_no_extra_chooses_the_users_torch(wheel: Path) -> None:
    """Requires-Dist as pip reads it: torch bounded from below at most, never pinned or capped."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    torch = [Requirement(line.split(":", 1)[1]) for line in lines if line.startswith("Requires-Dist: torch")]
    assert torch, "the torch extra is gone: update this test"
    for requirement in torch:
        operators = {spec.operator for spec in requirement.specifier}
        assert operators <= {">="}, f"{requirement} would change a user's torch"


def test_the_projects_own_venv_takes_torch_from_its_constraints() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "-c scripts/constraints.txt" in setup
    assert "torch==" in (ROOT / "scripts" / "constraints.txt").read_text()


def test_make_typecheck_runs_mypy_strict_on_the_public_api() -> None:
    """`make test` (through typecheck) holds the public API to mypy --strict (issue 39)."""
    makefile = (ROOT / "Makefile").read_text()
    (line,) = [line for line in makefile.splitlines() if line.startswith("PUBLIC_API :=")]
    public = ["wattlog/__init__.py", "wattlog/records.py", "wattlog/integrations"]
    assert line.split(":=")[1].split() == public
    target = makefile.split("\ntypecheck:\n")[1].split("\n\n")[0]
    assert "$(BIN)/mypy --strict $(PUBLIC_API)" in target
