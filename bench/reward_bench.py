"""The reward API under an RL-style load (issue 38): N rollouts at once from one client process through one
Rewarder, a mix of honest kernels and cheats; rewards per hour, the values each kind got, whether a secret
leaked, and whether any process was left once the Rewarder closed.

    python bench/reward_bench.py [--rollouts 64] [--concurrency 64] [--device cpu] [--timed]

Sources: vector_add's two correct solutions and five cheats from tests/cheats (stale_empty, wrong_a_minus_b,
mutate_zero_input, cache_shape, partial_zeros), repeated to ``--rollouts``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from test_batch import _children  # noqa: E402  (descendants from /proc, the caller's fork server aside)

from kernel_mcp.batch.reward import Rewarder  # noqa: E402

SECRET = "sk-bench-secret-kernel-mcp"
HONEST = ["correct/torch_add.py", "correct/triton_block256.py"]
CHEATS = ["stale_empty", "wrong_a_minus_b", "mutate_zero_input", "cache_shape", "partial_zeros"]


def sources() -> list[tuple[str, str]]:
    problem = REPO / "problems" / "vector_add" / "solutions"
    return ([(f"honest {name}", (problem / name).read_text()) for name in HONEST]
            + [(f"cheat {name}", (REPO / "tests" / "cheats" / f"{name}.py").read_text()) for name in CHEATS])


async def main_async(args) -> dict:
    kinds = sources()
    batch = [kinds[i % len(kinds)] for i in range(args.rollouts)]
    before = _children()
    began = time.monotonic()
    async with Rewarder(REPO / "problems" / "vector_add", device=args.device, timed=args.timed,
                        concurrency=args.concurrency) as rewarder:
        rewards = await rewarder.many([source for _, source in batch])
    seconds = time.monotonic() - began
    deadline = time.monotonic() + 30
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    values = defaultdict(Counter)
    for (name, _), reward in zip(batch, rewards):
        values[name][f"{reward.verdict} -> {reward.value:.2f}"] += 1
    return {"rollouts": args.rollouts, "concurrency": args.concurrency, "device": args.device, "timed": args.timed,
            "seconds": round(seconds, 1), "per_hour": round(3600 * len(rewards) / seconds),
            "secret_leaked": any(SECRET in r.model_dump_json() for r in rewards),
            "processes_left": len(_children() - before), "values": {k: dict(v) for k, v in values.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timed", action="store_true")
    args = parser.parse_args()
    os.environ["ANTHROPIC_API_KEY"] = SECRET  # a caller's secret the results must never carry
    print(json.dumps(asyncio.run(main_async(args)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
