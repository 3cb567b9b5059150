"""Mutation testing of core logic: does the owning test file notice a one-line change?

Run: ``.venv/bin/python -m bench.mutation [--only TEXT] [--tests-at REV] [--jobs N]``

Copies the tree to a temporary folder once, checks the owning tests pass there unchanged, then
applies each mutation of bench/mutations.py alone, runs only the test files that own that code
(``pytest -x``), and restores the file. A mutation is killed when its tests fail. Prints one line
per mutation and killed/total, apart for the twenty the issue does not name and the four it does.
``--tests-at 38e5f82`` takes tests/ from that commit (test files it lacks are skipped), so the
same mutations measure the tests before and after a change.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[1]
_SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".hypothesis", ".mypy_cache", ".ruff_cache")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one mutation's tests did."""

    mutation: Mutation
    killed: bool
    seconds: float
    detail: str


def copy_tree(into: Path, tests_at: str | None) -> Path:
    """The checkout (less .git and .venv) under `into`, with tests/ from `tests_at` when given."""
    tree = into / "tree"
    shutil.copytree(ROOT, tree, symlinks=True, ignore=_SKIP)
    if tests_at:
        shutil.rmtree(tree / "tests")
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", tests_at, "tests"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def run_tests(tree: Path, tests: tuple[str, ...], timeout_s: float) -> tuple[int, str]:
    """pytest -x on `tests` (those the tree has) in `tree`; (exit code, last line). 5: none to run."""
    present = [t for t in tests if (tree / t).exists()]
    if not present:
        return 5, "no owning test file in this tree"
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "120"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header", *present]
    try:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout_s:.0f} s"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, lines[-1] if lines else done.stderr.strip()[-200:]


def mutate(into: Path, m: Mutation, tests_at: str | None, timeout_s: float) -> Outcome:
    """Apply `m` to its own copy of the tree, run its tests, and say whether they failed."""
    tree = copy_tree(into / m.name.replace(" ", "_")[:40], tests_at)
    path = tree / m.path
    text = path.read_text()
    if text.count(m.old) != 1:
        return Outcome(m, False, 0.0, f"not applied: the text occurs {text.count(m.old)} times")
    path.write_text(text.replace(m.old, m.new))
    start = time.perf_counter()
    code, last = run_tests(tree, m.tests, timeout_s)
    shutil.rmtree(tree, ignore_errors=True)
    return Outcome(m, code not in (0, 5), time.perf_counter() - start, last)


def main(argv: list[str] | None = None) -> int:
    """Run the mutations; exit 0 when all were applied and the baseline passed."""
    parser = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="Only mutations whose name contains this text.")
    parser.add_argument("--tests-at", default=None, help="Take tests/ from this git revision.")
    parser.add_argument("--jobs", type=int, default=1, help="Mutations run at once (each its own copy).")
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds per mutation's tests.")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if args.only in m.name]
    with tempfile.TemporaryDirectory(prefix="wattlog-mutation-") as folder:
        base = Path(folder)
        tree = copy_tree(base / "baseline", args.tests_at)
        owning = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        code, last = run_tests(tree, owning, args.timeout * 3)  # every owning file at once
        print(f"baseline (tests at {args.tests_at or 'this checkout'}): {last}")
        if code not in (0, 5):
            print("the owning tests fail without any mutation: fix that first", file=sys.stderr)
            return 2
        shutil.rmtree(tree)
        with ThreadPoolExecutor(max(args.jobs, 1)) as pool:
            outcomes = list(pool.map(lambda m: mutate(base, m, args.tests_at, args.timeout), chosen))
    for o in outcomes:
        verdict = "killed  " if o.killed else "SURVIVED"
        tag = " (named in issue 38)" if o.mutation.named else ""
        print(f"{verdict} {o.seconds:6.1f} s  {o.mutation.name}{tag}  [{o.mutation.path}]  {o.detail}")
    unnamed = [o for o in outcomes if not o.mutation.named]
    named = [o for o in outcomes if o.mutation.named]
    print(f"killed {sum(o.killed for o in unnamed)}/{len(unnamed)} mutations the issue does not name")
    print(f"killed {sum(o.killed for o in named)}/{len(named)} of the four that survived on 38e5f82")
    print(f"killed {sum(o.killed for o in outcomes)}/{len(outcomes)}")
    return 0 if all("not applied" not in o.detail for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
