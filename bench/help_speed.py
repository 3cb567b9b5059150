"""How long each command's `--help` takes, against the interpreter's own start.

Run: ``.venv/bin/python -m bench.help_speed [--rounds 3] [--only table runs]``

Target (issue 44): every ``wattlog X --help`` and ``wattlog X Y --help`` imports only typer, its
own small module and what its options name, never SQLAlchemy, torch or numpy; its CPU time within
a few times that of ``python -c pass``. Each command's help runs in a fresh interpreter,
interleaved over the rounds after one untimed round that compiles every module (into a private
``PYTHONPYCACHEPREFIX``, as an installed wattlog has its bytecode; PYTHONDONTWRITEBYTECODE=1 would
time the compiler); printed per command: the median CPU time (user + sys, less sensitive than
wall time to the load of a shared machine), its ratio to ``python -c pass`` and the heavy modules
the help loaded ("-" none).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from typing import Any

HEAVY = ("sqlalchemy", "sqlmodel", "torch", "numpy")
PROBE = (
    "import sys\nfrom wattlog.cli import main\ncode = main(sys.argv[1:])\n"
    f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or '-', file=sys.stderr)\n"
)


def command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand of `wattlog`, as the words typed before `--help`."""
    import typer

    from wattlog.cli import full_app

    root = typer.main.get_command(full_app())
    ctx = root.make_context("wattlog", ["--help"], resilient_parsing=True)
    return [(), *_walk(root, ctx, ())]


def _walk(group: Any, ctx: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found.append((*path, name))
        if hasattr(command, "list_commands"):  # a group: its subcommands too
            found += _walk(command, type(ctx)(command, parent=ctx, info_name=name), (*path, name))
    return found


def cpu_seconds(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """CPU seconds (user + sys) of one fresh ``python ARGS`` and the last line it wrote to stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = done.stderr.strip().splitlines()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, lines[-1] if lines else ""


def main() -> None:
    """Print each command's help time and its ratio to `python -c pass`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", nargs="*", default=None, help="Only the commands starting with these words."
    )
    options = parser.parse_args()
    paths = [p for p in command_paths() if options.only is None or (p and p[0] in options.only)]
    floor: list[float] = []
    times: dict[tuple[str, ...], list[float]] = {path: [] for path in paths}
    heavy: dict[tuple[str, ...], str] = {}
    with tempfile.TemporaryDirectory(prefix="wattlog-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for round_ in range(options.rounds + 1):  # round 0 compiles, untimed
            seconds = cpu_seconds(["-c", "pass"], env)[0]
            floor += [seconds] if round_ else []
            for path in paths:
                seconds, heavy[path] = cpu_seconds(["-c", PROBE, *path, "--help"], env)
                times[path] += [seconds] if round_ else []
    base = statistics.median(floor)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, {options.rounds} rounds")
    print(f"{'python -c pass':<40} {base:6.3f} s CPU")
    for path, values in times.items():
        seconds = statistics.median(values)
        name = " ".join(("wattlog", *path, "--help"))
        print(f"{name:<40} {seconds:6.3f} s CPU  x{seconds / base:5.1f}  heavy: {heavy[path]}")


if __name__ == "__main__":
    main()
