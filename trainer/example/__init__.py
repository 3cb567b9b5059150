"""A small GPT and its generated corpus, for the demo and the overhead bench.

- gpt: GPTConfig, GPT (pure torch, a few million parameters), PRESETS and preset(name).
- data: generate_corpus, ByteTokenizer, batches.
"""

from __future__ import annotations

from wattlog.trainer.example.data import ByteTokenizer, batches, generate_corpus
from wattlog.trainer.example.gpt import GPT, PRESETS, GPTConfig, preset

__all__ = ["GPT", "PRESETS", "ByteTokenizer", "GPTConfig", "batches", "generate_corpus", "preset"]
