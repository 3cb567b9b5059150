"""The example GPT and its generated corpus."""

from __future__ import annotations

import pytest
import torch

from wattlog.errors import ConfigError
from wattlog.trainer.example import GPT, ByteTokenizer, GPTConfig, batches, generate_corpus


def test_corpus_is_deterministic_per_seed_and_round_trips_through_the_tokenizer() -> None:
    text = generate_corpus(200, seed=3)
    assert text == generate_corpus(200, seed=3) != generate_corpus(200, seed=4)
    assert text.count("\n") == 200
    tokenizer = ByteTokenizer()
    ids = tokenizer.encode(text)
    assert ids.dtype == torch.long and int(ids.max()) < 256
    assert tokenizer.decode(ids.tolist()) == text


def test_batches_are_shifted_windows() -> None:
    ids = torch.arange(1000) % 256
    x, y = next(batches(ids, 4, 16, seed=1))
    assert x.shape == y.shape == (4, 16)
    assert torch.equal(x[:, 1:], y[:, :-1])
    with pytest.raises(ConfigError):
        next(batches(ids[:10], 2, 16))


def test_gpt_has_a_few_million_parameters_and_learns() -> None:
    torch.manual_seed(0)
    config = GPTConfig(layers=2, d_model=64, heads=4, context=32)
    model = GPT(config)
    assert GPT(GPTConfig()).num_params() > 1_000_000
    assert config.flops_per_token() > 6 * model.num_params()
    ids = ByteTokenizer().encode(generate_corpus(300))
    data = batches(ids, 8, 32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        x, y = next(data)
        logits, loss = model(x, y)
        assert logits.shape == (8, 32, 256) and loss is not None
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 1.0


def test_bad_gpt_config_and_too_long_input() -> None:
    with pytest.raises(ConfigError, match="multiple of heads"):
        GPTConfig(d_model=100, heads=3)
    model = GPT(GPTConfig(layers=1, d_model=32, heads=2, context=8))
    with pytest.raises(ConfigError, match="context"):
        model(torch.zeros(1, 9, dtype=torch.long))
