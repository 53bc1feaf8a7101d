"""How large the model agent's system prompt is (issue 37: "the problem, stated ... sized to a token budget"):
the prompt ``kernel-mcp optimize`` sends (prompts/system.md with the problem's statement,
kernel_mcp/agent/loop/statement.py) for every bundled problem and every KernelBench problem, in characters
and in estimated tokens (characters / 4, the usual rule of thumb for English and code; a provider's own
tokenizer differs by some 10-20%). The starting kernel's measured numbers are left out (they need a run);
they add one line per shape (agent/loop/feedback.py, at most FEEDBACK_CHARS).

    python bench/prompt_bench.py [--root DIR]

DIR is KernelBench's ``KernelBench`` folder (default: the team's copy in ../shared/benchmarks).
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from kernel_mcp.agent.loop.statement import STATEMENT_CHARS, problem_statement
from kernel_mcp.files import load_prompt
from kernel_mcp.problem import bundled_names, bundled_problem, load_problem

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "kernelbench" / "KernelBench"
BASELINE = "(the starting kernel's measurements: one line per timed shape)"


def prompt_chars(problem_path: Path) -> int:
    problem = load_problem(problem_path)
    statement = problem_statement(problem, "benchmarks", BASELINE)
    return len(load_prompt("system").format(problem=problem.name, statement=statement))


def report(name: str, sizes: list[int]) -> None:
    tokens = [s / 4 for s in sizes]
    print(f"{name:<16} {len(sizes):>4} problems  median {statistics.median(tokens):>6.0f} tokens  "
          f"max {max(tokens):>6.0f}  (characters: median {statistics.median(sizes):.0f}, max {max(sizes)}; "
          f"the statement's cap is {STATEMENT_CHARS})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    args = parser.parse_args()
    report("bundled", [prompt_chars(bundled_problem(name)) for name in bundled_names()])
    for level in ("level1", "level2", "level3"):
        files = sorted((args.root / level).glob("*.py"))
        if files:
            report(f"KernelBench {level}", [prompt_chars(path) for path in files])


if __name__ == "__main__":
    main()
