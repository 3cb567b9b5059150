"""A soak: two nodes of simulated GPUs measured into one ledger while faults are injected at random.

    .venv/bin/python -m bench.soak [--minutes 30] [--every-s 30 90] [--seed 1] [--ledger postgresql]

Two ``wattlog node`` processes (the command a cluster runs per node; two simulated GPUs
each, a 1 s flush, a 5 s lease) measure one run into a SQLite ledger, or with
``--ledger postgresql`` into a throwaway PostgreSQL (tests/integration/postgres.py; the agents
log in as a role of 6 connections that owns the database). Every 30-90 s (``--every-s``) one
fault, drawn at random among those of the ledger, is injected and then healed:

- ``ledger moved`` (SQLite): the ledger file renamed away for 5-15 s, then back (its identity
  check makes that an outage: the agents spool, and replay when it is back);
- ``postgres restarted``: the server restarted (``pg_ctl restart -m fast``);
- ``postgres full``: every connection slot of the agents' role taken by the soak for 5-15 s
  (their sessions ended, then the slots held: the server answers "too many connections");
- ``spool disk full``: the ledger out (moved away, or the server stopped) for 5-15 s while the
  agents' spool disk is full but for the room each spool reserved (bench/soak_node.py: the
  spool's write seam raises ENOSPC past it, as a full disk does past preallocated blocks);
- ``sigstop``: one agent stopped (SIGSTOP) past its lease for 8 s, then continued (its node is
  reaped lost, and revived with its gap withdrawn when it renews).

At the end each agent's final counters are scraped from its metrics endpoint while it lingers
(what it measured), every spool left is replayed, and the ledger's totals per device are
compared with them to the millijoule; ``wattlog check`` must find the ledger clean. It prints
the faults survived and the joules lost (measured minus stored; 0 is the pass).
A slow BMC or a slow intensity provider are not injected here yet (see tests/faults/test_slow_bmc.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.soak_ledgers import PostgresLedger, SoakLedger, SqliteLedger

_URL = re.compile(r"metrics at (http://\S+/metrics)")
_ENERGY = re.compile(r"^wattlog_energy_joules_total\{([^}]*)\} (\S+)$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class Node:
    """One node's agent process and the last counters read from it."""

    host: str
    process: subprocess.Popen[bytes]
    spool: Path
    log: Path
    url: str | None = None
    counters: dict[str, float] = field(default_factory=dict)  # device -> joules

    def scrape(self) -> None:
        """Read the agent's energy counters (kept: the last read is what it measured)."""
        if self.url is None:
            found = _URL.search(self.log.read_text(errors="replace")) if self.log.exists() else None
            self.url = found.group(1) if found else None
            return
        try:
            text = urllib.request.urlopen(self.url, timeout=2).read().decode()  # noqa: S310 - loopback
        except OSError:
            return
        for labels, value in _ENERGY.findall(text):
            device = dict(_LABEL.findall(labels)).get("device", "")
            self.counters[device] = float(value)


def _start(folder: Path, url: str, index: int, seconds: float) -> Node:
    """One `wattlog node` (through bench.soak_node: its spool disk is full while the flag exists)."""
    host = f"soak{index}"
    spool = folder / f"spool-{host}"
    env = {**os.environ, "SLURM_JOB_ID": "4545", "SLURM_NNODES": "2", "SLURM_NODEID": str(index)}
    env.update({"WATTLOG_SPOOL_DIR": str(spool), "PYTHONUNBUFFERED": "1"})
    args = ["node", "--run", "soak", "--db", url, "--host", host, "--simulate", "2", "--flush-s", "1"]
    args += ["--lease-s", "5", "--port", "0", "--linger-s", "20", "--seconds", f"{seconds:g}"]
    args += ["--lock-dir", str(folder / f"locks-{host}")]
    log = folder / f"{host}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.soak_node", str(_disk_flag(folder)), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Node(host, process, spool, log)


def _disk_flag(folder: Path) -> Path:
    return folder / "spool-disk-full"


def _fault(kind: str, nodes: list[Node], ledger: SoakLedger, rng: random.Random) -> str:
    """Inject one fault and heal it; a line saying what was done."""
    away_s = rng.uniform(5, 15)
    if kind == "ledger moved":
        with ledger.out():
            _wait(nodes, away_s)
        return f"ledger file moved away for {away_s:.1f} s"
    if kind == "postgres restarted":
        ledger.restart()
        return "PostgreSQL restarted (pg_ctl restart -m fast)"
    if kind == "postgres full":
        with ledger.full() as taken:
            _wait(nodes, away_s)
        return f"PostgreSQL full for {away_s:.1f} s (all {taken} connection slots of the agents' role taken)"
    if kind == "spool disk full":
        flag = _disk_flag(ledger.folder)
        flag.touch()
        try:
            with ledger.out():
                _wait(nodes, away_s)
        finally:
            flag.unlink()
        return f"spool disk full (but for each spool's reserved room), ledger out for {away_s:.1f} s"
    node = rng.choice(nodes)
    node.process.send_signal(signal.SIGSTOP)
    time.sleep(8.0)  # past its 5 s lease: its node is reaped lost meanwhile by any reader
    node.process.send_signal(signal.SIGCONT)
    return f"{node.host} stopped (SIGSTOP) for 8 s, past its 5 s lease"


def _wait(nodes: list[Node], seconds: float) -> None:
    """Wait `seconds`, scraping every agent twice a second."""
    end_s = time.monotonic() + seconds
    while time.monotonic() < end_s:
        for node in nodes:
            node.scrape()
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    """Run the soak; exit 0 when nothing was lost and the ledger checks clean."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--every-s", type=float, nargs=2, default=(30.0, 90.0))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ledger", choices=("sqlite", "postgresql"), default="sqlite")
    options = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="wattlog-soak-"))
    with contextlib.ExitStack() as stack:
        if options.ledger == "postgresql":
            from tests.integration.postgres import running_postgres

            ledger: SoakLedger = PostgresLedger(stack.enter_context(running_postgres()), folder)
        else:
            ledger = SqliteLedger(folder)
        return _soak(options, ledger, folder)


def _soak(options: argparse.Namespace, ledger: SoakLedger, folder: Path) -> int:
    rng = random.Random(options.seed)
    url = ledger.url
    wattlog = [sys.executable, "-m", "wattlog"]
    seconds = options.minutes * 60.0
    nodes = [_start(folder, url, i, seconds) for i in range(2)]
    began_s, faults = time.monotonic(), []
    while any(node.url is None for node in nodes):  # both measuring before the first fault
        _wait(nodes, 0.5)
    while True:
        pause_s = rng.uniform(*options.every_s)
        if time.monotonic() - began_s + pause_s + 20.0 > seconds:  # the last fault healed before the end
            break
        _wait(nodes, pause_s)
        kind = rng.choice(ledger.faults)
        faults.append(f"{time.monotonic() - began_s:6.0f} s  {_fault(kind, nodes, ledger, rng)}")
        print(faults[-1], flush=True)
    while any(node.process.poll() is None for node in nodes):
        _wait(nodes, 0.2)
    for node in nodes:
        subprocess.run([*wattlog, "replay", "--db", url, "--spool-dir", str(node.spool)], check=False)
    print(f"agents' logs and the ledger: {folder}")
    return _report(url, nodes, faults)


def _report(url: str, nodes: list[Node], faults: list[str]) -> int:
    """Compare the ledger with what the agents measured; run `wattlog check`; print the figures."""
    from wattlog.accounting.ledger import Ledger, make_engine

    ledger = Ledger(make_engine(url))
    stored = {(t.host, t.device): t.energy_j for t in ledger.energy_totals("soak")}
    measured = {(n.host, d): j for n in nodes for d, j in n.counters.items()}
    measured_j, stored_j = sum(measured.values()), sum(stored.values())
    worst_mj = max((abs(measured[k] - stored.get(k, 0.0)) * 1e3 for k in measured), default=0.0)
    check = subprocess.run([sys.executable, "-m", "wattlog", "check", "--db", url], check=False)
    print(f"faults injected and survived: {len(faults)}")
    print(f"joules measured by the agents: {measured_j:.3f} J over {len(measured)} devices")
    print(f"joules stored in the ledger:   {stored_j:.3f} J")
    print(f"joules lost: {measured_j - stored_j:.3f} J (worst device {worst_mj:.3f} mJ)")
    print(
        f"agents' exit codes: {[n.process.returncode for n in nodes]}; wattlog check: exit {check.returncode}"
    )
    ok = worst_mj <= 1.0 and check.returncode == 0 and len(measured) >= 4
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
