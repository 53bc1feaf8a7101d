"""Where the judges of a traced run spent their time, and their reserved device memory x time (developer script).

    KERNEL_MCP_TRACE=/tmp/t.txt kernel-mcp judge ...       (or TRACE=1 bash tools/gpu_owed.sh batch ...)
    python3 tools/trace_phases.py /tmp/t.txt [--top 20] [--mix mix.json]

Reads the marks of worker/trace.py. A judge is a process with a "judge: preparing PROBLEM" mark; its steps are the
intervals between its consecutive marks from "judge: request read" on, named by the two marks (each case's name made
"CASE", so that the steps of every case add up). Each judge counts as a check (it made expected outputs), an import
failure (its candidate never ran a case), cut short (stopped during its candidate's import) or a measure
(batch/survey.py: no candidate; a check stopped before its candidate, its problem broken or too large, reads the
same). GiB x s weighs each interval by the need the judge reported ("a check needs about N GiB"): what the lease held
for it meanwhile, so the steps that hold the most of the device for longest come first.

``--mix FILE`` writes every judge's need and time, in the order their requests were read, as JSON
([[GiB, seconds], ...]): bench/admission_bench.py replays them through the lease.

Marks are taken when the judge's Python gets there, not when the device has finished: a step that queues GPU work
shows little time, and the next step that waits for it (a copy to the host, a comparison) shows it all.
"""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

_NEED = re.compile(r"needs about ([\d.]+) GiB")
_CASE = re.compile(r"^(test \d+( \(secret seed \d+\))?|random shape \d+|undeclared shape)")


def read(path: Path) -> dict[str, list[tuple[float, str]]]:
    """Each process's marks, in order: pid -> [(unix time, label without the memory figures)]."""
    marks: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            marks[parts[1]].append((float(parts[0]), parts[2].split(" [device memory")[0].strip()))
    return marks


def step_name(label: str) -> str:
    label = _CASE.sub("CASE", label)
    label = re.sub(r"^judge: preparing .*", "judge: preparing", label)
    return re.sub(r"^judge sends (\w+).*", r"sends \1", label)


def kind_of(labels: list[str]) -> str:
    if any(label.endswith("expected outputs made") for label in labels):
        return "check"
    if "judge: candidate imported" in labels:
        return "import failure"
    if any("importing the candidate" in label for label in labels):
        return "cut short"  # its candidate's import began and never ended (the run was stopped meanwhile)
    return "measure"  # no candidate: a measure, or a check that stopped before one (its problem broken or too large)


def summarize(marks: dict[str, list[tuple[float, str]]]) -> tuple[Counter, Counter, Counter, list[tuple]]:
    """(seconds by (kind, step), GiB x s by (kind, step), intervals by (kind, step), judges as (GiB x s, kind,
    problem, need GiB, seconds, unix time its request was read))."""
    seconds, weighted, count, judges = Counter(), Counter(), Counter(), []
    for events in marks.values():
        labels = [label for _, label in events]
        problem = next((label[len("judge: preparing "):] for label in labels
                        if label.startswith("judge: preparing ")), None)
        if problem is None:
            continue
        need = next((float(m.group(1)) for label in labels if (m := _NEED.search(label))), 0.0)
        start = next((t for t, label in events if label == "judge: request read"), events[0][0])
        kind = kind_of(labels)
        steps = [(t, label) for t, label in events if t >= start]
        for (t0, a), (t1, b) in zip(steps, steps[1:]):
            key = (kind, f"{step_name(a)} -> {step_name(b)}")
            seconds[key] += t1 - t0
            weighted[key] += need * (t1 - t0)
            count[key] += 1
        judges.append((need * (events[-1][0] - start), kind, problem, need, events[-1][0] - start, start))
    return seconds, weighted, count, judges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--mix", type=Path, help="write each judge's [need GiB, seconds] here, in order (JSON)")
    args = parser.parse_args()
    if not args.trace.is_file():
        parser.error(f"no trace at {args.trace} (KERNEL_MCP_TRACE=FILE writes one)")
    seconds, weighted, count, judges = summarize(read(args.trace))
    if args.mix:
        in_order = sorted(judges, key=lambda judge: judge[5])  # by when each judge's request was read
        args.mix.write_text(json.dumps([[round(need, 2), round(spent, 2)]
                                        for _, _, _, need, spent, _ in in_order if need > 0]) + "\n")
    total = sum(weighted.values()) or 1.0
    print(f"{len(judges)} judges: " + ", ".join(f"{n} {k}" for k, n in Counter(j[1] for j in judges).items()))
    print(f"\n{'GiB x s':>9} {'share':>6} {'seconds':>8} {'n':>4}  step")
    for key, value in weighted.most_common(args.top):
        print(f"{value:9.0f} {100 * value / total:5.1f}% {seconds[key]:8.1f} {count[key]:4d}  {key[0]}: {key[1]}")
    print(f"\n{'GiB x s':>9} {'need GiB':>8} {'seconds':>8}  judge")
    for held, kind, problem, need, spent, _ in sorted(judges, reverse=True)[:args.top]:
        print(f"{held:9.0f} {need:8.1f} {spent:8.1f}  {kind}: {problem}")


if __name__ == "__main__":
    main()
