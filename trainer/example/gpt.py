"""A small decoder-only transformer (GPT-2 shaped), pure torch, for CPU training."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from wattlog.errors import ConfigError


@dataclass
class GPTConfig:
    """Shape of the model."""

    vocab_size: int = 256
    """Tokens in the vocabulary (256 for the byte tokenizer)."""
    context: int = 128
    """Longest sequence the model sees."""
    layers: int = 4
    """Transformer blocks."""
    d_model: int = 192
    """Width of the residual stream."""
    heads: int = 4
    """Attention heads; must divide d_model."""
    dropout: float = 0.0
    """Dropout probability (0 for the demo: nothing to regularise in a minute)."""

    def __post_init__(self) -> None:
        """Validate the shape."""
        if min(self.vocab_size, self.context, self.layers, self.d_model, self.heads) < 1:
            raise ConfigError("GPTConfig sizes must all be >= 1")
        if self.d_model % self.heads:
            raise ConfigError(f"d_model {self.d_model} must be a multiple of heads {self.heads}")

    def flops_per_token(self) -> float:
        """Training FLOPs per token: 6 N plus attention, as in PaLM's MFU (appendix B)."""
        n = 12 * self.layers * self.d_model**2 + self.vocab_size * self.d_model
        return 6.0 * n + 12.0 * self.layers * self.d_model * self.context


class _Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.heads = config.heads
        self.dropout = config.dropout
        self.ln1 = nn.LayerNorm(config.d_model)
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, 4 * config.d_model),
            nn.GELU(),
            nn.Linear(4 * config.d_model, config.d_model),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        drop = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token + position embeddings, `layers` pre-norm blocks, a final norm and a tied head.

    Args:
        config: The model's shape.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.d_model)
        self.pos = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    @property
    def final_layer(self) -> nn.Module:
        """The module whose output norm the activation-growth detector watches."""
        return self.ln_f

    def num_params(self) -> int:
        """Parameters, counting the tied embedding once."""
        return sum(p.numel() for p in self.parameters())

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits for `idx` (batch, time) and, given `targets`, the mean cross-entropy loss."""
        t = idx.shape[1]
        if t > self.config.context:
            raise ConfigError(f"sequence of {t} tokens exceeds the context of {self.config.context}")
        pos = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


PRESETS: dict[str, GPTConfig] = {
    "gpt-small": GPTConfig(),
    "gpt-tiny": GPTConfig(layers=2, d_model=64, heads=4, context=64),
}
"""Named shapes the demo accepts (`--model`)."""


def preset(name: str) -> GPTConfig:
    """The GPTConfig named `name`.

    Raises:
        ConfigError: Unknown name; the message lists the known ones.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown model {name!r}: use one of {', '.join(PRESETS)}") from None
