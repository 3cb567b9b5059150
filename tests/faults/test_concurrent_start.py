"""Fault: many processes start runs at once on a new ledger (SQLite and PostgreSQL).

On the old code they raced on the migrations (SQLite: 3 of 4 failed to
start; PostgreSQL: 6 of 16, duplicate type or key) and on creating the
project of their first run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration import postgres
from tests.waiting import wait_until

# Each process imports once, then for each new ledger in turn waits for its go file, so all open
# it together, and leaves a done file: a race per ledger for one import per process.
STARTER = """
import sys, time, pathlib
from wattlog.accounting.ledger import Ledger, RunSpec, make_engine
from wattlog.records import EnergyInterval, Kind, Source
name, folder, urls = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
for turn, url in enumerate(urls):
    while not (folder / f"go-{turn}").exists():
        time.sleep(0.005)
    ledger = Ledger(make_engine(url))
    run = ledger.start_run(name, RunSpec(project="shared"))
    row = EnergyInterval.of("n", "gpu0", Kind.GPU, Source.COUNTER, 0, 1, 5.0, 5.0, 5.0)
    ledger.record_intervals(run.id, [row])
    ledger.engine.dispose()
    (folder / f"done-{turn}-{name}").touch()
print("started", name)
"""


def start_many(urls: list[str], n: int, tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    """n processes start a run on each new ledger of `urls`, all at once, one ledger after the other."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STARTER, f"run-{i}", str(tmp_path), *urls],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    time.sleep(2.0)  # let every process finish importing (2 shared cores)
    for turn in range(len(urls)):
        (tmp_path / f"go-{turn}").touch()
        pattern = f"done-{turn}-*"
        wait_until(
            lambda pattern=pattern: len(list(tmp_path.glob(pattern))) == n or any(p.poll() for p in procs),
            120,
            f"ledger {turn}: not every process started its run",
        )
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def check_all_started(done: list[subprocess.CompletedProcess[str]], url: str, n: int) -> None:
    from wattlog.accounting.ledger import Ledger, make_engine

    failures = [d.stderr.strip().splitlines()[-1] for d in done if d.returncode != 0]
    print(f"{n - len(failures)} of {n} concurrent starts succeeded")
    assert not failures, failures
    ledger = Ledger(make_engine(url))
    runs = ledger.runs("shared")
    assert sorted(r.name for r in runs) == sorted(f"run-{i}" for i in range(n))
    assert all(ledger.energy_totals(r.id)[0].energy_j == 5.0 for r in runs)


def test_8_concurrent_starts_on_each_of_three_new_sqlite_ledgers(tmp_path) -> None:
    urls = [f"sqlite:///{tmp_path / f'new-{attempt}.db'}" for attempt in range(3)]  # the race is timing-bound
    done = start_many(urls, 8, tmp_path)
    for url in urls:
        check_all_started(done, url, 8)


@pytest.mark.integration
@pytest.mark.skipif(not postgres.available(), reason="apt-get install -y postgresql")
def test_16_concurrent_starts_on_a_new_postgresql_ledger(tmp_path) -> None:
    pytest.importorskip("psycopg")
    with postgres.running_postgres() as server:
        url = server.create_database()
        check_all_started(start_many([url], 16, tmp_path), url, 16)
