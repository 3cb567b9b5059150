"""Training text the project generates itself (nothing downloaded) and a byte tokenizer.

The corpus comes from a small seeded grammar about measuring energy, so it has
structure a model can learn within a minute, and the same seed always gives the
same text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import torch

from wattlog.errors import ConfigError

_GRAMMAR: dict[str, list[list[str]]] = {
    "S": [["NP", "VP", "."], ["NP", "VP", "PP", "."], ["when", "NP", "VP", ",", "NP", "VP", "."]],
    "NP": [["the", "N"], ["the", "ADJ", "N"], ["every", "N"], ["a", "ADJ", "N"]],
    "VP": [["V", "NP"], ["V", "NP", "ADV"], ["V"]],
    "PP": [["P", "NP"]],
    "N": [[w] for w in ("gpu", "node", "sensor", "agent", "ledger", "trainer", "run", "counter", "grid")],
    "ADJ": [[w] for w in ("idle", "busy", "hot", "quiet", "large", "small", "green", "careful")],
    "V": [[w] for w in ("measures", "records", "samples", "exports", "heats", "cools", "reads", "counts")],
    "ADV": [[w] for w in ("quickly", "slowly", "exactly", "twice", "again")],
    "P": [[w] for w in ("on", "beside", "under", "after", "before")],
}


def _expand(symbol: str, rng: random.Random, out: list[str]) -> None:
    rules = _GRAMMAR.get(symbol)
    if rules is None:
        out.append(symbol)
        return
    for part in rng.choice(rules):
        _expand(part, rng, out)


def generate_corpus(sentences: int = 20_000, seed: int = 0) -> str:
    """Generate `sentences` sentences from the grammar, deterministically for `seed`.

    Args:
        sentences: How many sentences (~30 bytes each).
        seed: Seed of the generator.

    Returns:
        The text, one sentence per line.
    """
    if sentences < 1:
        raise ConfigError("the corpus needs at least one sentence")
    rng = random.Random(seed)  # noqa: S311 - the example trainer's data shuffle, not a secret
    lines = []
    for _ in range(sentences):
        words: list[str] = []
        _expand("S", rng, words)
        line = " ".join(words).replace(" .", ".").replace(" ,", ",")
        lines.append(line[0].upper() + line[1:])
    return "\n".join(lines) + "\n"


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, nothing to train or download."""

    vocab_size = 256

    def encode(self, text: str) -> torch.Tensor:
        """Token ids (int64) of `text`."""
        return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)

    def decode(self, ids: list[int]) -> str:
        """Text of token ids (invalid UTF-8 replaced)."""
        return bytes(ids).decode("utf-8", errors="replace")


def batches(
    tokens: torch.Tensor, batch_size: int, context: int, *, seed: int = 0, device: str | torch.device = "cpu"
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless random (input, target) windows of `context` tokens, targets shifted by one.

    Args:
        tokens: The encoded corpus (1-D int64).
        batch_size: Windows per batch.
        context: Tokens per window.
        seed: Seed of the window sampler.
        device: Where the batches go.

    Yields:
        (x, y), each of shape (batch_size, context).
    """
    if tokens.numel() <= context + 1:
        raise ConfigError(f"the corpus has {tokens.numel()} tokens, fewer than one window of {context + 1}")
    generator = torch.Generator().manual_seed(seed)
    span = torch.arange(context)
    while True:
        starts = torch.randint(0, tokens.numel() - context - 1, (batch_size, 1), generator=generator)
        x = tokens[starts + span]
        y = tokens[starts + span + 1]
        yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)
