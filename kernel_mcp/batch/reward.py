"""A reward an RL framework can trust: a candidate's source in, a typed reward out, through the same check
and timing as ``kernel-mcp check`` and ``profile`` (a fresh sandboxed process per candidate, secret seeds,
the integrity findings), async and batched.

The reward's value (docs/reward.md says why each term resists the published reward hacks):

    value = 0                                  the candidate fails the check, or cannot be judged
    value = CORRECT + SPEED * clip(log2(lo), 0, SPEED_CAP)
                                               it passes; lo is the lower end of the 95% interval of its
                                               speedup over the reference, counted only when the timing is
                                               trusted (no integrity finding), else 0

so a correct kernel earns CORRECT (0.3), and speed earns only what the measurement can vouch for: a gain
inside the noise, a kernel timed on a stream it did not synchronise, or one whose outputs changed while
timed earns nothing for speed. The log keeps a 100x outlier from drowning every other rollout's signal.
"""
from __future__ import annotations

import asyncio
import math
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from kernel_mcp.batch.prebuild import build_ahead, builds_allowed, builds_on_import, lease_device
from kernel_mcp.errors import UsageError
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import ProfileSettings
from kernel_mcp.tools.check import check
from kernel_mcp.tools.profile import profile
from kernel_mcp.worker import LocalRunner, Runner, default_shapes
from kernel_mcp.worker.protocol import Device

CORRECT = 0.3  # the share of the reward for passing (Kevin-32B's scheme uses the same split; any constant works)
SPEED = 1.0  # per doubling of the speedup's lower bound
SPEED_CAP = 5.0  # doublings: 32x and beyond earn the same


class Reward(BaseModel):
    value: float  # the scalar to learn from (the module's docstring defines it)
    passed: bool
    trusted: bool | None = None  # None: not timed
    verdict: str  # "pass", "fail: mismatch", "error: usage", ...
    cause: str = ""  # a failure's likeliest cause, measured
    speedup: float | None = None  # over the reference, when timed
    speedup_ci: list[float] | None = None  # 95%
    terms: dict[str, float] = Field(default_factory=dict)  # what value is made of
    seconds: float = 0.0


def value_of(passed: bool, trusted: bool | None, speedup_ci: list[float] | None) -> dict[str, float]:
    """The reward's terms (their sum is its value)."""
    if not passed:
        return {"correct": 0.0, "speed": 0.0}
    lo = speedup_ci[0] if trusted and speedup_ci else None
    doublings = min(max(math.log2(lo), 0.0), SPEED_CAP) if lo and lo > 0 else 0.0
    return {"correct": CORRECT, "speed": SPEED * doublings}


def judge_source(problem: Problem, source: str, device: str, timed: bool, settings: ProfileSettings,
                 runner: Runner, build_device: Device | None | bool = False) -> Reward:
    """One candidate's reward, judged from a private copy of its source (removed after). ``build_device``: False,
    no build ahead; else the device a load_inline source's build ahead holds shared (None: none told)."""
    folder = Path(tempfile.mkdtemp(prefix="kernel-mcp-reward-"))  # 0700: no other rollout reads it
    try:
        path = folder / "candidate.py"
        path.write_text(source)
        if build_device is not False and builds_on_import(path):
            build_ahead(path, problem, runner, build_device)  # its build made with no memory reserved
        try:
            if timed:
                prof = profile(problem, path, device=device, settings=settings, runner=runner)
                result, seconds = prof.check, prof.seconds
                passed, trusted, verdict = prof.passed, prof.trusted, prof.verdict
                speedup, ci = prof.speedup, prof.speedup_ci
            else:
                result = check(problem, path, device=device, runner=runner)
                seconds = result.seconds
                passed, trusted, verdict, speedup, ci = result.passed, None, result.verdict, None, None
        except UsageError as exc:
            return Reward(value=0.0, passed=False, verdict="error: usage", cause=str(exc)[:300],
                          terms=value_of(False, None, None))
        terms = value_of(passed, trusted, ci)
        return Reward(value=sum(terms.values()), passed=passed, trusted=trusted, verdict=verdict,
                      cause=result.cause if result else "", speedup=speedup, speedup_ci=ci, terms=terms,
                      seconds=seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Rewarder:
    """Rewards for one problem, at most ``concurrency`` judged at once; share one per problem and process.
    Without ``runner=`` it keeps judges booted ahead of need, and stops them when closed:

        async with Rewarder("problems/vector_add", device="cuda") as rewarder:
            rewards = await rewarder.many([source_a, source_b, ...])
    """

    def __init__(self, problem: str | Path | Problem, device: str = "auto", timed: bool = True,
                 budget_s: float = 2.0, concurrency: int = 8, runner: Runner | None = None):
        self.problem = load_problem(problem)  # a broken problem is a UsageError here, not in every reward
        self.device, self.timed = device, timed
        self._owned = runner is None
        self.runner = runner or LocalRunner(warm=True, spares=min(concurrency, 4))
        self.settings = ProfileSettings(budget_s=budget_s, shapes=default_shapes(device))
        self._slots = asyncio.Semaphore(concurrency)
        # once, not per rollout: whether builds ahead are allowed here, and the device they hold (imports torch)
        self._build_device = lease_device(device) if builds_allowed(self.runner, 1) else False

    async def __aenter__(self) -> Rewarder:
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Stop the judges this Rewarder booted (a runner passed in stays its owner's)."""
        if self._owned:
            self.runner.close()

    async def one(self, source: str) -> Reward:
        async with self._slots:
            return await asyncio.to_thread(judge_source, self.problem, source, self.device, self.timed,
                                           self.settings, self.runner, self._build_device)

    async def many(self, sources: list[str]) -> list[Reward]:
        return list(await asyncio.gather(*(self.one(source) for source in sources)))


async def reward(problem: str | Path | Problem, source: str, **options) -> Reward:
    """One candidate's reward (a Rewarder made and closed for it; for many, share a Rewarder)."""
    async with Rewarder(problem, **options) as rewarder:
        return await rewarder.one(source)
