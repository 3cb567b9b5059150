"""What run a session records, where, and who measures it: one dataclass, validated once (torch-free)."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wattlog.errors import ConfigError
from wattlog.telemetry.agent import AgentConfig
from wattlog.telemetry.job import JobIdentity, job_identity, sample_nodes_from

ENV_RESUME = "WATTLOG_RESUME"
ENV_RUN_ID = "WATTLOG_RUN_ID"
_TRUE = {"1", "true", "yes", "on"}
_MAX_NAME = 200


@dataclass
class SessionConfig:
    """What run to record, where, and who measures it; validated once, on construction.

    Raises:
        ConfigError: On construction, if a value is missing or out of range.
    """

    run: str
    """Run name, unique in the ledger."""
    site: str = ""
    """Site from the catalog (`wattlog sites`), or "" to choose at table time."""
    model: str = ""
    """What is trained (free text, shown in tables)."""
    project: str = "default"
    """Project the run belongs to."""
    role: str = "development"
    """development (the default), final (a Table 19 row), ablation, baseline, failed or debug."""
    db: str | None = None
    """Ledger URL; None = $WATTLOG_DB or the user's ledger (`wattlog.accounting.ledger.default_url`)."""
    resume: bool = False
    """Continue the run of that name (a restart) instead of creating it."""
    resume_step: int | None = None
    """Step the job restarts from (its checkpoint); None = the last checkpoint recorded."""
    rank: int = 0
    """Global rank of this process (rank 0 registers and ends the run)."""
    local_rank: int = 0
    """Rank within the node."""
    job: JobIdentity | None = None
    """This process's place in a multi-node job (SLURM / torchrun); None = a job of one node."""
    sample_nodes: int | None = None
    """Measure only this many of the job's nodes (spread evenly; the others report steps only and
    the run's energy is extrapolated); None = every node."""
    agent: bool | None = None
    """Start the node agent here; None = when this is the node's local rank 0 and the node is measured."""
    agent_config: AgentConfig | None = None
    """Agent settings (default: port 0, i.e. any free port on 127.0.0.1)."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """Free-form run configuration stored with the run."""
    join_timeout_s: float = 60.0
    """How long a non-zero rank waits for rank 0 to register the run, seconds."""
    phase: str = ""
    """development or final ("" = from the role: final -> final, else development)."""
    stage: str = ""
    """pretraining, mid-training, sft, dpo, rl, evaluation, inference or debugging ("" = none)."""
    scale_group: str = ""
    """The model scale the run belongs to (e.g. "7B"): the project tables' groups."""
    device_model: str = ""
    """Accelerator model (e.g. "H100"): embodied figures and power limit."""
    gpu_hours: float | None = None
    """GPU-hours to record for the run (None: derived from its GPU rows)."""
    requests: int | None = None
    """Requests served (an inference run), for the break-even with training."""

    def __post_init__(self) -> None:
        """Validate the settings."""
        self.run, self.site, self.model = self.run.strip(), self.site.strip(), self.model.strip()
        if not self.run:
            raise ConfigError(f"the tracker needs a run name: pass run=... or set ${ENV_RUN_ID}")
        if len(self.model) > _MAX_NAME or len(self.run) > _MAX_NAME:
            raise ConfigError(f"run and model names must be at most {_MAX_NAME} characters")
        if not self.join_timeout_s >= 0:
            raise ConfigError(f"join_timeout_s must be >= 0, got {self.join_timeout_s}")
        if self.rank < 0 or self.local_rank < 0:
            raise ConfigError(f"ranks must be >= 0, got rank {self.rank}, local rank {self.local_rank}")
        if self.resume_step is not None and self.resume_step < 0:
            raise ConfigError(f"resume_step must be >= 0, got {self.resume_step}")
        if self.gpu_hours is not None and not (math.isfinite(self.gpu_hours) and self.gpu_hours >= 0):
            raise ConfigError(f"GPU-hours must be a finite number >= 0, got {self.gpu_hours}")
        if self.requests is not None and self.requests < 0:
            raise ConfigError(f"requests must be >= 0, got {self.requests}")
        if self.sample_nodes is not None and self.sample_nodes < 1:
            raise ConfigError(f"sample_nodes must be >= 1 (or None: every node), got {self.sample_nodes}")
        self.config = dict(self.config)

    @property
    def labels(self) -> dict[str, str]:
        """The run's labels as RunSpec takes them (phase, stage, scale_group, device_model)."""
        return {
            "phase": self.phase,
            "stage": self.stage,
            "scale_group": self.scale_group,
            "device_model": self.device_model,
        }

    @property
    def agent_settings(self) -> AgentConfig:
        """The agent's settings: `agent_config` (default: port 0), its series labelled with this run.

        The run label comes from the agent itself, so a later run that reuses the port never mixes
        into this one; an `agent_config` that names a run keeps it.
        """
        config = self.agent_config or AgentConfig(port=0)
        return config if config.run else dataclasses.replace(config, run=self.run)

    @property
    def node_measured(self) -> bool:
        """Whether this node is one of the measured ones (always, outside a sampled multi-node job)."""
        return self.job is None or self.job.measured(self.sample_nodes)

    @property
    def world_size(self) -> int:
        """Processes in the job (1 when no job identity is known)."""
        return self.job.world_size if self.job is not None else 1

    @property
    def owns_agent(self) -> bool:
        """Whether this process starts the node's agent."""
        return (self.local_rank == 0 and self.node_measured) if self.agent is None else self.agent

    @classmethod
    def from_env(
        cls,
        run: str | None = None,
        *,
        resume: bool | None = None,
        rank: int | None = None,
        local_rank: int | None = None,
        sample_nodes: int | None = None,
        environ: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> SessionConfig:
        """A config whose unset run name, resume flag, ranks and job identity come from the environment.

        Args:
            run: Run name; None takes $WATTLOG_RUN_ID.
            resume: None = $WATTLOG_RESUME is true, or $WATTLOG_RUN_ID is set.
            rank: None reads $RANK, else $SLURM_PROCID (0).
            local_rank: None reads $LOCAL_RANK, else $SLURM_LOCALID (0).
            sample_nodes: None reads $WATTLOG_SAMPLE_NODES (unset: every node is measured).
            environ: The environment (default: os.environ).
            **settings: The other fields (the job's host is ``agent_config.host`` when given).
        """
        env = os.environ if environ is None else environ
        if resume is None:
            resume = env.get(ENV_RESUME, "").lower() in _TRUE or bool(env.get(ENV_RUN_ID))
        agent_config = settings.get("agent_config")
        job = job_identity(env, host=agent_config.host if agent_config is not None else None)
        return cls(
            run=run or env.get(ENV_RUN_ID, ""),
            resume=resume,
            rank=job.rank if rank is None else rank,
            local_rank=job.local_rank if local_rank is None else local_rank,
            job=job,
            sample_nodes=sample_nodes_from(env, sample_nodes),
            **settings,
        )
