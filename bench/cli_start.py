"""How long `wattlog --help` and a full command's start take: each in fresh interpreters, interleaved.

Run: ``.venv/bin/python -m bench.cli_start [--rounds 7]``

Each round times, in new processes, ``python -c pass`` (the interpreter's own start),
importing typer and rich (the floor of any typer app's rich help),
``python -m wattlog --help`` (target: under 0.3 s; it must not import SQLAlchemy or the
models) and ``python -m wattlog sites --help`` (a command's help: every package imported).
Printed: the median and min of each, wall clock and CPU time (user + sys, which the load
of a shared machine inflates less), the slowest top-level imports of `--help` (``-X importtime``)
and which heavy modules it loaded. Timings are noisy on shared cores: read the medians, and
the load average printed beside them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": ["-c", "pass"],
    # the floor of a typer app's rich help: what `--help` cannot avoid
    "import typer, rich": ["-c", "import typer, rich.console, rich.panel, rich.table"],
    "wattlog --help": ["-m", "wattlog", "--help"],
    "wattlog sites --help": ["-m", "wattlog", "sites", "--help"],
}
HEAVY = (
    "sqlalchemy",
    "sqlmodel",
    "torch",
    "wattlog.accounting.ledger.models",
    "wattlog.telemetry.agent",
    "markdown_it",
    "pygments",
)


def process_seconds(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys: less sensitive to the load) of one fresh
    ``python ARGS`` process, its output swallowed (`env`: None inherits this one's)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _import_times(args: list[str], top: int = 6) -> list[tuple[str, float]]:
    """The top-level imports of one run under ``-X importtime``, slowest first: (module, seconds)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, check=True
    )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        # top-level imports only (no indentation): their cumulative time includes what they import
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            rows.append((parts[2].strip(), int(parts[1]) / 1e6))
    return sorted(rows, key=lambda row: -row[1])[:top]


def _loaded_by_help() -> list[str]:
    code = "import sys; from wattlog.cli import main; main(['--help']); print(','.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.strip().splitlines()[-1].split(","))
    return [name for name in HEAVY if name in loaded]


def main() -> None:
    """Print the start-up times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in CASES}
    for _ in range(rounds):
        for name, args in CASES.items():
            times[name].append(process_seconds(args))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, {rounds} rounds")
    for name, values in times.items():
        wall, cpu = [v[0] for v in values], [v[1] for v in values]
        print(
            f"{name:<22} wall median {statistics.median(wall):.3f} s  min {min(wall):.3f} s; "
            f"user+sys median {statistics.median(cpu):.3f} s  min {min(cpu):.3f} s"
        )
    imports = _import_times(CASES["wattlog --help"])
    print("wattlog --help, slowest top-level imports: " + ", ".join(f"{m} {s:.3f} s" for m, s in imports))
    heavy = _loaded_by_help()
    print(f"heavy modules loaded by --help: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
