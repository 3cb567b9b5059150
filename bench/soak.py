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
  reaped lost, and revived with its gap withdrawn when it renews);
- ``bmc slow``: one node's BMC (its own Redfish emulator, bench/soak_services.py: every
  agent reads its node meter over Redfish besides its GPUs) answering 8 s late, past the read
  deadline (6 s), for 10-20 s: the stretch must be a stored gap of that BMC's device and of
  none of the node's other devices (their sampling not held), the GPUs' and CPUs' joules all
  stored (the BMC is sampled power: a slow stretch of an energy counter would be bridged);
- ``provider slow``: the site's live intensity provider (a UK grid API on loopback) answering
  30 s late from then on, through the run's close: the first node's fetch at close must end
  within its 10 s budget (it prints how long it took) and the energy be stored in full.

At the end each agent's final counters are scraped from its metrics endpoint while it lingers
(what it measured), every spool left is replayed, and the ledger's totals per device are
compared with them to the millijoule; ``wattlog check`` must find the ledger clean. It prints
the faults survived by kind, with what each one must have left (bench/soak_report.py), and
the joules measured, stored and lost (measured minus stored; 0 is the pass); it exits 1 when
any joule is lost, a fault left the wrong trace, or `wattlog check` is not clean.
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
from bench.soak_report import BmcStretch, Faults, report
from bench.soak_services import SITES, BmcEmulator, IntensityProvider

SERVICE_FAULTS = ("bmc slow", "provider slow")
"""The faults of the outside services, drawn besides the ledger's."""
BMC_LATE_S = 8.0
"""How late a slow BMC answers: past the agent's read deadline (BmcConfig.timeout_s 5 s + 1 s)."""
PROVIDER_LATE_S = 30.0
"""How late a slow provider answers: past the fetch at close's 10 s budget."""

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
    bmc: BmcEmulator
    url: str | None = None
    counters: dict[str, float] = field(default_factory=dict)  # device -> joules

    @property
    def exit_code(self) -> int | None:
        """The agent's exit code (None: still running)."""
        return self.process.returncode

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


def _start(folder: Path, url: str, index: int, seconds: float, provider: IntensityProvider) -> Node:
    """One `wattlog node` (through bench.soak_node: its spool disk is full while the flag exists).

    Its node meter is read over Redfish from its own BMC emulator; its site's live provider is `provider`.
    """
    host, bmc = f"soak{index}", BmcEmulator()
    spool = folder / f"spool-{host}"
    env = {**os.environ, "SLURM_JOB_ID": "4545", "SLURM_NNODES": "2", "SLURM_NODEID": str(index)}
    env.update({"WATTLOG_SPOOL_DIR": str(spool), "PYTHONUNBUFFERED": "1"})
    env.update(
        {"WATTLOG_REDFISH_URL": bmc.url, "WATTLOG_REDFISH_USER": "soak", "WATTLOG_REDFISH_PASSWORD": "-"}
    )
    env.update({"WATTLOG_SITES_FILE": str(folder / "sites.toml"), "SOAK_PROVIDER_URL": provider.url})
    args = ["node", "--run", "soak", "--db", url, "--host", host, "--simulate", "2", "--flush-s", "1"]
    args += ["--site", "soaksite"]
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
    return Node(host, process, spool, log, bmc)


def _disk_flag(folder: Path) -> Path:
    return folder / "spool-disk-full"


def _fault(kind: str, nodes: list[Node], ledger: SoakLedger, rng: random.Random, faults: Faults) -> str:
    """Inject one fault and heal it (a slow provider stays slow through the close); a line saying what."""
    away_s = rng.uniform(5, 15)
    if kind == "bmc slow":
        node, slow_s = rng.choice(nodes), away_s + 5.0
        began_s = time.time()
        with node.bmc.slow(BMC_LATE_S):
            _wait(nodes, slow_s)
        faults.stretches.append(BmcStretch(node.host, began_s, time.time()))
        return f"{node.host}'s BMC answering {BMC_LATE_S:g} s late for {slow_s:.1f} s (read deadline 6 s)"
    if kind == "provider slow":
        already = " (already)" if faults.provider.slow_s else ""
        faults.provider.slow_s = PROVIDER_LATE_S
        return f"intensity provider answering {PROVIDER_LATE_S:g} s late from now through the close{already}"
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
    (folder / "sites.toml").write_text(SITES, encoding="utf-8")
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
    faults = Faults(IntensityProvider())
    nodes = [_start(folder, url, i, seconds, faults.provider) for i in range(2)]
    began_s = time.monotonic()
    while any(node.url is None for node in nodes):  # both measuring before the first fault
        _wait(nodes, 0.5)
    while True:
        pause_s = rng.uniform(*options.every_s)
        if time.monotonic() - began_s + pause_s + 20.0 > seconds:  # the last fault healed before the end
            break
        _wait(nodes, pause_s)
        kind = rng.choice(ledger.faults + SERVICE_FAULTS)
        faults.kinds.append(kind)
        print(f"{time.monotonic() - began_s:6.0f} s  {_fault(kind, nodes, ledger, rng, faults)}", flush=True)
    while any(node.process.poll() is None for node in nodes):
        _wait(nodes, 0.2)
    for node in nodes:
        subprocess.run([*wattlog, "replay", "--db", url, "--spool-dir", str(node.spool)], check=False)
    for node in nodes:
        node.bmc.close()
    faults.provider.close()
    print(f"agents' logs and the ledger: {folder}")
    return report(url, nodes, faults)


if __name__ == "__main__":
    sys.exit(main())
