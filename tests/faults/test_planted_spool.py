"""Fault: another local user plants the spool folder's path.

On 18aee5b a spool folder that was a link planted by `nobody`, or a folder of theirs, was
refused: every row the ledger could not take was lost (counted, a gap) for the rest of the
outage. Now, as the lock folder does, the planted path is named in one warning and the
rows go to a fresh private folder (0700, a new name), from which they replay whole.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.faults.test_corrupt_spool import row
from tests.faults.test_planted_folders import as_nobody, shared_tmp  # noqa: F401 - the fixture
from wattlog.accounting.ledger import Ledger, describe_url, make_engine
from wattlog.accounting.ledger.spool import Spool

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to play another user (nobody)")


@pytest.mark.parametrize("plant", ["a link to a root folder", "a 0777 folder of theirs"])
def test_a_planted_spool_folder_is_named_once_and_nothing_is_lost(
    shared_tmp: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    plant: str,
) -> None:
    planted = shared_tmp / "wattlog-spool"
    victim = Path(tempfile.mkdtemp(prefix="wattlog-victim-", dir="/tmp"))
    victim.chmod(0o755)
    try:
        if plant.startswith("a link"):
            as_nobody("ln", "-s", str(victim), str(planted))
        else:
            as_nobody("mkdir", "-m", "0777", str(planted))
        url = f"sqlite:///{tmp_path / 'l.db'}"
        ledger = Ledger(make_engine(url))
        run = ledger.start_run("r").id
        assert run is not None
        spool = Spool(planted, describe_url(url), run)
        with caplog.at_level(logging.WARNING):
            spool.append(run, [row(i) for i in range(100)], [])
            spool.append(run, [row(i) for i in range(100, 150)], [])
        assert list(victim.iterdir()) == [] and stat.S_IMODE(victim.stat().st_mode) == 0o755
        assert os.listdir(planted) == []  # through the link: the victim's; else their folder
    finally:
        subprocess.run(["rm", "-rf", str(victim)], check=False)
    [warning] = [r.getMessage() for r in caplog.records if "not safe to use" in r.getMessage()]
    assert str(planted) in warning and str(spool.folder) in warning and "\n" not in warning
    fresh = spool.folder.lstat()
    assert fresh.st_uid == os.getuid() and stat.S_IMODE(fresh.st_mode) == 0o700
    assert spool.replay(ledger) == 150
    assert sum(t.energy_j for t in ledger.energy_totals(run)) == 1500.0  # every row, once
    spool.close()
    assert not spool.folder.exists()  # emptied: the fallback folder goes with the spool
