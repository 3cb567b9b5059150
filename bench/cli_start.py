"""How long `wattlog --help` and a full command's start take: each in fresh interpreters, interleaved.

Run: ``.venv/bin/python -m bench.cli_start [--rounds 7]``

Each round times, in new processes, ``python -c pass`` (the interpreter's own start),
``python -m wattlog --help`` (target: under 0.3 s; it must not import SQLAlchemy or the
models) and ``python -m wattlog sites --help`` (a command's help: every package imported).
Printed: the median and min of each, and which heavy modules `--help` loaded. Timings are
noisy on shared cores: read the medians, and the load average printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": ["-c", "pass"],
    "wattlog --help": ["-m", "wattlog", "--help"],
    "wattlog sites --help": ["-m", "wattlog", "sites", "--help"],
}
HEAVY = ("sqlalchemy", "sqlmodel", "torch", "wattlog.accounting.ledger.models", "wattlog.telemetry.agent")


def _time(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


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
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(rounds):
        for name, args in CASES.items():
            times[name].append(_time(args))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, {rounds} rounds")
    for name, values in times.items():
        print(f"{name:<22} median {statistics.median(values):.3f} s  min {min(values):.3f} s")
    heavy = _loaded_by_help()
    print(f"heavy modules loaded by --help: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
