"""wattlog's Grafana dashboards as code: `python -m wattlog.dashboards.build [--check]`.

Writes dashboards/grafana/*.json and dashboards/prometheus/sites.rules.yml (committed,
so a diff shows what changed); with `--check` it writes nothing and exits 1 when the
committed files differ from what this code generates (tests/dashboards/test_build.py).

The boards themselves are in energy_board, devices_board and training_board (panels
in the panels module, shared queries in the queries module).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from wattlog.accounting.carbon.sites import builtin_sites
from wattlog.dashboards.devices_board import devices_dashboard
from wattlog.dashboards.energy_board import energy_dashboard
from wattlog.dashboards.siterules import site_rules
from wattlog.dashboards.training_board import training_dashboard

ROOT = Path(__file__).parent

BOARDS = {
    "wattlog-energy.json": energy_dashboard,
    "wattlog-devices.json": devices_dashboard,
    "wattlog-training.json": training_dashboard,
}


def render() -> dict[str, str]:
    """Every generated file, as {path under dashboards/: text}, exactly as written."""
    boards = {name: build_board() for name, build_board in BOARDS.items()}
    out = {
        f"grafana/{name}": json.dumps(board, indent=2, sort_keys=True) + "\n"
        for name, board in boards.items()
    }
    out["prometheus/sites.rules.yml"] = site_rules(builtin_sites())
    return out


def write(root: Path = ROOT) -> list[Path]:
    """Write every generated file under `root`; returns the paths written."""
    paths = []
    for name, text in render().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def stale(root: Path = ROOT) -> list[str]:
    """Paths under `root` that are missing or differ from what the code generates."""
    return [
        name
        for name, text in render().items()
        if not (root / name).is_file() or (root / name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m wattlog.dashboards.build`; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m wattlog.dashboards.build", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed file is stale")
    parser.add_argument("--out", type=Path, default=ROOT, help="root of the generated files (dashboards/)")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.out)
        for name in names:
            fix = "run `python -m wattlog.dashboards.build`"
            print(f"{args.out / name} differs from the code: {fix}", file=sys.stderr)
        return 1 if names else 0
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
