"""One task of the SLURM test's job: train a few steps under the Tracker (``srun`` starts two).

Usage: python -m tests.integration.slurm_train RUN DB LOCK_DIR. Ranks and the job's
identity come from SLURM's variables, as in a real job: local rank 0 starts the node's
agent (one simulated GPU), every rank reports its steps and tokens into the one run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.sensors.simulated import SimulatedSensor, simulated_gpus
from wattlog.trainer.tracker import Tracker

STEPS = 5
TOKENS = 1000


def main(run: str, db: str, lock_dir: str) -> None:
    """Train STEPS steps of TOKENS tokens under the Tracker (a loss that falls)."""
    agent = AgentConfig(port=0, period_s=0.01, flush_s=0.1, lock_dir=Path(lock_dir), linger_s=0.0)
    with Tracker(run, db=db, agent_config=agent, sensors=[SimulatedSensor(simulated_gpus(1))]) as tracker:
        for step in range(STEPS):
            tracker.step(loss=4.0 - 0.1 * step, tokens=TOKENS)
    print(f"rank {tracker.rank}: {STEPS} steps, status {tracker.summary.status if tracker.summary else '-'}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
