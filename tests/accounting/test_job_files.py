"""Fault: the root-run epilog appends its report card wherever the job's StdOut points.

On 38e5f82 `_append_card` did `open(path, "a")` as root: a job's user who made StdOut a
link to a root-owned 0600 file got the card appended to it, and a StdOut in a folder only
root can write was created there. Now the card is written as the job's user (a child
dropped to its uid and gid), without following a link or creating the file.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattlog.accounting.fleet.job_files import JobUser, append_as, job_user
from wattlog.accounting.fleet.slurm_hooks import _append_card
from wattlog.accounting.publishing.render import TableRow

NOBODY = JobUser(65534, 65534)
as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to play the job's user (nobody)")


@pytest.fixture
def nobodys_folder() -> Iterator[Path]:
    """A folder of nobody's (the job's user) that root's victims sit beside."""
    folder = Path(tempfile.mkdtemp(prefix="wattlog-job-"))
    folder.chmod(0o755)
    own = folder / "theirs"
    own.mkdir()
    os.chown(own, NOBODY.uid, NOBODY.gid)
    try:
        yield own
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@as_root
def test_a_stdout_linked_to_a_root_file_is_not_appended_to(nobodys_folder: Path) -> None:
    secret = nobodys_folder.parent / "root-only"
    secret.write_text("root's\n")
    secret.chmod(0o600)
    subprocess.run(["runuser", "-u", "nobody", "--", "ln", "-s", str(secret), str(nobodys_folder / "out")])
    said = _append_card_text(str(nobodys_folder / "out"))
    assert secret.read_text() == "root's\n"
    assert said.startswith(f"report card not appended to {nobodys_folder / 'out'}:") and "\n" not in said


@as_root
def test_a_root_file_hardlinked_or_named_directly_is_not_appended_to(nobodys_folder: Path) -> None:
    secret = nobodys_folder.parent / "root-readable"
    secret.write_text("root's\n")
    secret.chmod(0o666)  # even one the user could write: the card goes only into the user's own file
    assert "belongs to uid 0" in append_as(NOBODY, str(secret), "card")
    assert secret.read_text() == "root's\n"


@as_root
def test_a_stdout_in_a_root_only_folder_is_not_created(nobodys_folder: Path) -> None:
    closed = nobodys_folder.parent / "closed"
    closed.mkdir(mode=0o700)
    said = _append_card_text(str(closed / "job.out"))
    assert "not appended" in said and not (closed / "job.out").exists()


@as_root
def test_the_jobs_own_stdout_gets_the_card(nobodys_folder: Path) -> None:
    out = nobodys_folder / "job.out"
    subprocess.run(["runuser", "-u", "nobody", "--", "touch", str(out)], check=True)
    assert append_as(NOBODY, str(out), "card\n") == ""
    assert out.read_text() == "card\n" and out.stat().st_uid == NOBODY.uid


def test_a_missing_stdout_is_not_created_even_as_its_user(tmp_path: Path) -> None:
    me = JobUser(os.getuid(), os.getgid())
    assert "No such file" in append_as(me, str(tmp_path / "gone.out"), "card")
    assert not (tmp_path / "gone.out").exists()


def test_the_jobs_user_comes_from_the_epilog_or_scontrol() -> None:
    assert job_user({"SLURM_JOB_UID": "1000", "SLURM_JOB_GID": "100"}, {}) == JobUser(1000, 100)
    assert job_user({}, {"UserId": "alice(1001)", "GroupId": "users(100)"}) == JobUser(1001, 100)
    assert job_user({}, {"UserId": "alice"}) is None


def _append_card_text(path: str) -> str:
    """What the epilog says for `path`, with the card of a minimal row, as nobody's job."""
    row = TableRow(
        model="slurm-1",
        energy_j=3.6e6,
        pue=1.2,
        carbon_intensity_kg_per_kwh=0.332,
        co2_t=0.0003984,
        wue_l_per_kwh=1.29,
        water_kl=0.001548,
        energy_source="counter",
    )
    return _append_card(row, "slurm-1", path, NOBODY)
