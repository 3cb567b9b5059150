"""A real SLURM (slurm-wlm 22.05 on loopback): an sbatch job of two tasks trains under wattlog.

Multi-node tests elsewhere set SLURM's variables by hand; here slurmctld and slurmd
launch the tasks, so the job identity, node list and ranks are the scheduler's own. The
cluster also runs what an admin installs (`wattlog slurm scripts`: Prolog, Epilog,
PrologFlags=Alloc): the prolog's agent measures the node into ``slurm-<job id>``, the job's
AdminComment carries its figures as JSON and the epilog appends its report card.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlmodel import col

from tests.integration.slurm import Slurm, missing, running_slurm
from tests.integration.slurm_train import STEPS, TOKENS
from wattlog.accounting.fleet.slurm_hooks import SlurmHooks, scripts
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.accounting.ledger.jobs import rank_progress
from wattlog.accounting.ledger.models import JobNode

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_an_sbatch_job_of_two_tasks_is_one_run_with_the_jobs_identity(tmp_path: Path) -> None:
    why = missing()
    if why is not None:
        pytest.skip(why)
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    script = tmp_path / "job.sh"
    python = sys.executable
    script.write_text(
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        f"export PYTHONPATH={ROOT}\n"
        f"srun -n 2 {python} -m tests.integration.slurm_train slurm-run {db} {tmp_path / 'locks'}\n"
        # The end-of-job report card, where SLURM users look: the job's output file.
        f"{python} -m wattlog table slurm-run --db {db} --site jupiter --format markdown\n"
    )
    # What an admin installs: `wattlog slurm scripts` writes the prolog and epilog slurm.conf names.
    hooks_db = f"sqlite:///{tmp_path / 'hooks.db'}"
    hooks = SlurmHooks(site="jupiter", state_dir=tmp_path / "hooks", comment_every_s=0.5, flush_s=0.2)
    hooks.port, hooks.simulate = -1, 1
    exports = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "WATTLOG_DB": hooks_db}
    prolog, epilog = scripts(hooks, tmp_path / "scripts", exports)
    extra = {"Prolog": prolog, "Epilog": epilog, "PrologFlags": "Alloc"}
    with running_slurm(tmp_path / "slurm", extra=extra) as slurm:
        output = tmp_path / "job-%j.out"
        job_id = slurm.run("sbatch", "--parsable", "-n", "2", "-o", str(output), str(script)).strip()
        state = slurm.wait_job(job_id)
        shown = slurm.run("scontrol", "show", "job", job_id)
        jobs_of_nobody(slurm)  # the same cluster, a second user: the epilog writes as that user only
    text = (tmp_path / f"job-{job_id}.out").read_text()
    print(f"{shown}\n{text}")  # shown with -s: the scheduler's view and the job's report card
    assert state == "COMPLETED", f"{shown}\n{text}"
    assert f"NodeList={slurm.node}" in shown
    assert "rank 0: 5 steps" in text and "rank 1: 5 steps" in text
    assert "site jupiter" in text and "g CO2e" in text  # the report card: energy, CO2 and water
    ledger = Ledger(make_engine(db))
    ranks = rank_progress(ledger, "slurm-run")
    assert [(r.rank, r.step, r.tokens_total) for r in ranks] == [
        (0, STEPS, STEPS * TOKENS),
        (1, STEPS, STEPS * TOKENS),
    ]
    with ledger.transaction("read the job") as session:
        nodes = session.execute(select(col(JobNode.host), col(JobNode.job_id))).all()
    assert [tuple(n) for n in nodes] == [(slurm.node, job_id)]
    assert {t.host for t in ledger.energy_totals("slurm-run")} == {slurm.node}  # local rank 0 measured

    # The prolog's agent measured the node into the job's run; the epilog stopped it and put the
    # card in the output file; the first node kept the AdminComment current while the job ran.
    run = f"slurm-{job_id}"
    assert f"wattlog: energy, CO2 and water of this job (run {run}" in text
    hooks_ledger = Ledger(make_engine(hooks_db))
    totals = hooks_ledger.energy_totals(run)
    assert {t.host for t in totals} == {slurm.node}
    figure = json.loads(shown.split("AdminComment=", 1)[1].splitlines()[0])["wattlog"]
    assert figure["run"] == run and figure["site"] == "jupiter" and "simulated" in figure["source"]
    # Written while the job ran (SLURM refuses scontrol updates once it ends; slurmdbd's copy, which
    # sacct reads, takes the epilog's final figure): never above the ledger's final energy.
    ledger_j = sum(t.energy_j for t in totals)
    assert 0 < figure["energy_j"] <= ledger_j * 1.001 and figure["co2_g"] > 0 and figure["water_l"] > 0


def jobs_of_nobody(slurm: Slurm) -> None:
    """Two jobs of `nobody`'s, output in nobody's 0700 folder: the root-run epilog appends the card to
    the first's output as nobody, and refuses the second's, which the job swapped for a link to a
    root-only file (on 38e5f82 root appended to that file)."""
    nobody = pwd.getpwnam("nobody")
    shared = Path(tempfile.mkdtemp(prefix="wattlog-job-user-", dir="/tmp"))
    try:
        shared.chmod(0o755)
        theirs = shared / "out"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
        secret = shared / "root-only"
        secret.write_text("root's\n")
        secret.chmod(0o600)
        plain, linked = theirs / "plain.out", theirs / "linked.out"
        jobs = {
            plain: "echo hello\n",
            linked: f"rm -f {linked}\nln -s {secret} {linked}\n",  # the job's user swaps its StdOut
        }
        ids = {}
        for out, body in jobs.items():
            script = shared / f"{out.stem}.sh"
            script.write_text(f"#!/bin/bash\n{body}")
            user = (f"--uid={nobody.pw_uid}", f"--gid={nobody.pw_gid}", f"--chdir={shared}")
            ids[out] = slurm.run("sbatch", "--parsable", *user, "-o", str(out), str(script)).strip()
        states = {out: slurm.wait_job(job_id) for out, job_id in ids.items()}
        assert set(states.values()) == {"COMPLETED"}, f"{states}\n{slurm.logs()}"
        assert plain.lstat().st_uid == nobody.pw_uid  # made by slurmstepd as nobody, and still theirs
        text = plain.read_text()
        assert text.startswith("hello\n") and f"(run slurm-{ids[plain]};" in text, text
        assert linked.is_symlink() and secret.read_text() == "root's\n"  # refused: nothing appended
        assert secret.stat().st_uid == 0 and stat.S_IMODE(secret.stat().st_mode) == 0o600
    finally:
        shutil.rmtree(shared, ignore_errors=True)
