"""Train TorchTitan 0.3's real ``Trainer`` (its llama3 debug model) on CPU with wattlog attached.

Run by tests/integrations/test_torchtitan.py in a fresh interpreter (``python torchtitan_cpu.py
WORK``), since it patches torch before torchtitan is imported. TorchTitan 0.3 does not train on
CPU as shipped; four gaps, each patched here and nowhere else:

1. ``torchtitan.tools.utils`` picks ``_get_available_device_type() or "cuda"`` at import: without
   a GPU it chooses CUDA (``torch._C._cuda_setDevice`` is missing from the CPU build). Patched:
   the probe answers "cpu" (so gloo is the backend).
2. Its memory monitor asks the device module for a name, capacity and peak stats that
   ``torch.cpu`` lacks, and its ``barrier(device_ids=[current_device()])`` takes ints only
   (``torch.cpu.current_device()`` is "cpu"). Patched: neutral answers (memory shows 0).
3. Both of its attention backends lack a CPU backward: FlexAttention ("does not support backward
   on CPU") and varlen (``aten::_flash_attention_forward`` has no CPU kernel). Patched:
   FlexAttention's compiled kernel becomes eager SDPA over the same block mask's ``mask_mod``.
4. It calls ``torch.distributed.set_timeout``, which torch 2.13 has only as ``_set_pg_timeout``.

The run: a fresh job of 2 steps that saves a checkpoint at step 2, then the same job relaunched
to 3 steps, which restores it. Under torchrun (``python -m torch.distributed.run --nproc_per_node
2 torchtitan_cpu.py WORK``): one job of 2 steps on 2 data-parallel ranks (see DATA_PARALLEL).
The tokenizer (word level) and the c4-shaped data set are written into WORK, since torchtitan's
wheel ships neither (its ``tests/assets`` stay in its repository).
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import torch
import torch._utils
import torch.distributed as dist
from torch.distributed.distributed_c10d import _set_pg_timeout

WORDS = ["the", "energy", "of", "training", "a", "model", "is", "measured", "in", "joules", "per", "token"]
WORDS += ["and", "carbon", "follows", "grid"]
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"


def patch_torch_for_cpu() -> None:
    """Gaps 1, 2 and 4 (see the module's docstring); before torchtitan is imported."""
    torch._utils._get_available_device_type = lambda: "cpu"
    neutral = {
        "get_device_name": lambda device=None: "cpu",
        "get_device_properties": lambda device=None: types.SimpleNamespace(total_memory=1 << 30),
        "memory_stats": lambda device=None: {},
        "reset_peak_memory_stats": lambda device=None: None,
        "empty_cache": lambda: None,
    }
    for name, value in neutral.items():
        if not hasattr(torch.cpu, name):
            setattr(torch.cpu, name, value)
    torch.cpu.current_device = lambda: 0  # type: ignore[assignment]
    if not hasattr(dist, "set_timeout"):
        dist.set_timeout = _set_pg_timeout  # type: ignore[attr-defined]


def _sdpa_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kw: Any
) -> tuple[torch.Tensor, None]:
    """Gap 3: FlexAttention's block mask through eager SDPA (causal per document, as the mask says)."""
    from torch.nn.attention.flex_attention import create_mask

    block_mask = kw["block_mask"]
    assert kw.get("score_mod") is None and not kw["return_aux"].lse
    mask = create_mask(
        block_mask.mask_mod, block_mask.kv_num_blocks.shape[0], 1, q.shape[2], k.shape[2], q.device
    )
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, scale=kw["scale"], enable_gqa=kw["enable_gqa"]
    )
    return out, None


def write_assets(work: Path) -> None:
    """A word-level tokenizer and a c4-shaped JSON data set (``{"text": ...}`` per line)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    (work / "tokenizer").mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate([BOS, EOS, "[UNK]", *WORDS])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(work / "tokenizer" / "tokenizer.json"))
    (work / "tokenizer" / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": BOS, "eos_token": EOS})
    )
    (work / "c4_test").mkdir(exist_ok=True)
    lines = (
        json.dumps({"text": " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(90))}) for i in range(64)
    )
    (work / "c4_test" / "data.json").write_text("\n".join(lines) + "\n")


DATA_PARALLEL = [
    "--parallelism.data_parallel_replicate_degree",
    "2",
    "--parallelism.data_parallel_shard_degree",
    "1",
]
"""Two ranks: DDP (FSDP's reduce-scatter uses PREMUL_SUM, which gloo refuses) on the DTensor path
(under the default spmd_types backend torch 2.13's replicate() refuses the model's plain tensors)."""
DATA_PARALLEL += ["--parallelism.spmd_backend", "full_dtensor"]


def train(work: Path, assets: Path, steps: int, extra: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """One attempt of the job: TorchTitan's own config registry and CLI, wattlog attached."""
    from torchtitan.components.metrics import BaseLogger, LoggerContainer
    from torchtitan.config import ConfigManager

    from wattlog.integrations.torchtitan import attach
    from wattlog.telemetry.agent import AgentConfig

    class Recording(BaseLogger):  # beside TorchTitan's TensorBoard logger in its LoggerContainer
        def __init__(self) -> None:
            self.logged: list[tuple[int, dict[str, Any]]] = []

        def log(self, metrics: dict[str, Any], step: int) -> None:
            self.logged.append((step, dict(metrics)))

    args = [
        "--module",
        "llama3",
        "--config",
        "llama3_debugmodel",
        "--hf_assets_path",
        str(assets / "tokenizer"),
    ]
    args += ["--dataloader.dataset_path", str(assets / "c4_test"), "--dump_folder", str(work / "out")]
    args += ["--training.steps", str(steps), "--training.seq_len", "64", "--training.local_batch_size", "2"]
    args += ["--metrics.log_freq", "1", "--metrics.enable_tensorboard"]
    args += ["--checkpoint.enable", "--checkpoint.interval", "2", "--validator.freq", "100", *extra]
    trainer = ConfigManager().parse_args(args).build()
    recording = Recording()
    if isinstance(trainer.metrics_processor.logger, LoggerContainer):  # else not the metrics rank
        trainer.metrics_processor.logger.add_logger(recording)
    agent = AgentConfig(port=0, flush_s=0.2, lock_dir=work / "locks", linger_s=0.0)
    kwargs = {
        "db": f"sqlite:///{work / 'ledger.db'}",
        "site": "jupiter",
        "log_every": 1,
        "agent_config": agent,
    }
    attach(trainer, run="titan-real", tracker_kwargs=kwargs)
    try:
        trainer.train()
    finally:
        trainer.close()
        dist.destroy_process_group()
    return recording.logged


def main(work: Path) -> None:
    """Under torchrun: one attempt of 2 steps on every rank. Else both attempts, in one process.

    Prints one JSON line per process: the metrics its loggers received, per attempt.
    """
    patch_torch_for_cpu()
    sys.path.insert(0, str(Path(__file__).parents[2]))  # run as a script: the repository's tests package
    from torchtitan.models.common.attention import FlexAttention
    from torchtitan.tools.logging import init_logger

    from tests.integration.servers import free_port

    FlexAttention._compiled_flex_attn = _sdpa_attention  # type: ignore[method-assign]
    init_logger()
    if "WORLD_SIZE" in os.environ:  # torchrun: each rank its own copy of the assets (no race)
        rank = os.environ["RANK"]
        write_assets(work / f"assets-{rank}")
        attempt = train(work, work / f"assets-{rank}", 2, DATA_PARALLEL)
        print(f"ATTEMPTS-{rank} " + json.dumps([attempt], default=float))
        return
    write_assets(work / "assets")
    os.environ.update(WORLD_SIZE="1", RANK="0", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    attempts = []
    for steps in (2, 3):
        os.environ["MASTER_PORT"] = str(free_port())
        attempts.append(train(work, work / "assets", steps, []))
    print("ATTEMPTS " + json.dumps(attempts, default=float))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
