"""The Tracker's cost to a training loop: the same GPT steps with and without it, interleaved.

Run: ``.venv/bin/python -m bench.overhead [--rounds 8] [--steps 30] [--threads 1,2]``

The comparisons run once per torch intra-op thread count (1 and 2 by default),
in the same process, so the step-time ratios at 1 and 2 threads print side by
side; a summary line per thread count ends the run. Timings are noisy on shared
cores (the ratio of medians of interleaved rounds is the figure to read).

One process, one model, one data stream. Each round times a block of steps
without the tracker and a block with it (the order alternates A-B, B-A so
drift in the machine's load cancels), the tracker started and closed outside
the timed block: what is timed is the training loop while the agent samples
every 25 ms in its thread, metrics are buffered on the device, moved every 10
steps and handled by the bookkeeping thread, and the ledger is written every
flush. Printed: mean step time of each arm, the ratio per round, and the
ratio of the medians. Target: at most 1.005 on CPU.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from wattlog.telemetry.agent import AgentConfig
from wattlog.trainer.example import GPT, ByteTokenizer, batches, generate_corpus, preset
from wattlog.trainer.tracker import Tracker


def _loop(model: GPT, data: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> Callable[[Tracker | None], None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    def step(tracker: Tracker | None) -> None:
        x, y = next(data)
        _, loss = model(x, y)
        assert loss is not None
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if tracker is not None:
            tracker.step(loss=loss, tokens=x.numel(), grad_norm=grad_norm)

    return step


def _block(step: Callable[[Tracker | None], None], steps: int, tracker: Tracker | None) -> float:
    """Mean seconds per step over `steps` steps."""
    start = time.perf_counter()
    for _ in range(steps):
        step(tracker)
    return (time.perf_counter() - start) / steps


def _tracker(name: str, db: str, folder: Path, flops_per_token: float) -> Tracker:
    return Tracker(
        name,
        db=db,
        agent_config=AgentConfig(port=0, lock_dir=folder / "locks"),
        flops_per_token=flops_per_token,
    )


def _summary(label: str, plain: list[float], tracked: list[float]) -> tuple[float, float]:
    ratios = [t / p for t, p in zip(tracked, plain, strict=True)]
    print(f"{label}:")
    for arm, times in (("plain  ", plain), ("tracked", tracked)):
        print(
            f"  {arm} step: median {statistics.median(times) * 1e3:.2f} ms "
            f"(min {min(times) * 1e3:.2f}, max {max(times) * 1e3:.2f})"
        )
    print("  ratio per round: " + " ".join(f"{r:.4f}" for r in ratios))
    print(
        f"  ratio of minima {min(tracked) / min(plain):.4f}, of medians "
        f"{statistics.median(tracked) / statistics.median(plain):.4f}, median of ratios "
        f"{statistics.median(ratios):.4f}  (target <= 1.005)"
    )
    return statistics.median(tracked) / statistics.median(plain), min(tracked) / min(plain)


def main(argv: list[str] | None = None) -> None:
    """Run both interleaved comparisons and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30, help="steps per timed block")
    parser.add_argument("--model", default="gpt-small")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", default="1,2", help="torch intra-op thread counts, comma-separated")
    args = parser.parse_args(argv)
    summary = [_run(args, int(threads)) for threads in args.threads.split(",")]
    print("\nsummary (target: whole tracker <= 1.005 with 2 threads)")
    for line in summary:
        print("  " + line)


def _run(args: argparse.Namespace, threads: int) -> str:
    """Both interleaved comparisons at `threads` torch threads; the summary line."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = preset(args.model)
    model = GPT(config)
    data = batches(ByteTokenizer().encode(generate_corpus(20_000)), args.batch_size, config.context)
    step = _loop(model, data)
    folder = Path(tempfile.mkdtemp(prefix="wattlog-overhead-"))
    db = f"sqlite:///{folder / 'ledger.db'}"
    flops = config.flops_per_token()
    _block(step, 5, None)  # warm-up: allocator, kernels
    print(
        f"model {args.model} ({model.num_params() / 1e6:.2f} M params), batch {args.batch_size}, "
        f"torch threads {torch.get_num_threads()}, {args.rounds} rounds x {args.steps} steps per arm"
    )

    # 1. Everything: agent sampling at 40 Hz, ledger, bookkeeping thread, exporter; started and
    #    closed outside the timed blocks, A-B then B-A.
    plain: list[float] = []
    tracked: list[float] = []
    for i in range(args.rounds):
        for arm in ("plain", "tracked") if i % 2 == 0 else ("tracked", "plain"):
            gc.collect()
            if arm == "plain":
                plain.append(_block(step, args.steps, None))
                continue
            with _tracker(f"overhead-{i}", db, folder, flops) as tracker:
                tracked.append(_block(step, args.steps, tracker))
    whole = _summary("whole tracker (agent + ledger + step path) vs no tracker", plain, tracked)

    # 2. The step path alone: one tracker (and agent) running throughout, blocks of steps
    #    alternating between reporting every step and not reporting.
    plain, tracked = [], []
    with _tracker("overhead-step-path", db, folder, flops) as tracker:
        for i in range(args.rounds * 3):
            for arm in ("plain", "tracked") if i % 2 == 0 else ("tracked", "plain"):
                times = plain if arm == "plain" else tracked
                times.append(_block(step, max(10, args.steps // 3), tracker if arm == "tracked" else None))
    path = _summary(
        "step path only (Tracker.step + flush + bookkeeping), agent running in both arms", plain, tracked
    )
    return (
        f"torch threads {threads}: step-time ratio, whole tracker {whole[0]:.4f} (minima {whole[1]:.4f}), "
        f"step path only {path[0]:.4f} (minima {path[1]:.4f}); ratios of medians"
    )


if __name__ == "__main__":
    main()
