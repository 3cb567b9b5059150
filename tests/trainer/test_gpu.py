"""On a GPU: the tracked training loop runs under torch.cuda.set_sync_debug_mode("error")."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from wattlog.trainer.example import GPT, GPTConfig
from wattlog.trainer.tracker import Tracker

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_tracked_loop_adds_no_host_device_sync(db_url: str, sim: dict[str, Any]) -> None:
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = GPT(GPTConfig(layers=2, d_model=64, heads=4, context=32)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    data = [torch.randint(0, 256, (4, 33), device=device) for _ in range(25)]
    with Tracker("gpu-nosync", db=db_url, log_every=5, watch=model.final_layer, **sim) as tracker:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            for batch in data:
                _, loss = model(batch[:, :-1], batch[:, 1:])
                assert loss is not None
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
                optimizer.step()
                tracker.step(loss=loss, tokens=batch[:, 1:].numel(), grad_norm=grad_norm)
        finally:
            torch.cuda.set_sync_debug_mode(0)
        tracker.drain()
        assert tracker.latest is not None and tracker.latest.step == 25
        assert 0 < tracker.latest.values["loss"] < 10
    assert tracker.status == "finished"
