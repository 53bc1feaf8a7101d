"""Externally written KernelBench candidates judged (issue 34): our verdict and its cause, KernelBench's own
contract judged in the same run (both its rules), and the verdict the candidate's source published, side by side.

    python bench/generations_bench.py MANIFEST OUT_DIR [--root DIR] [--jobs 12] [--fresh-seeds 1]
                                      [--budget-s 540] [--device cuda] [--same-reference] [--ids ID ...] [--skip EARLIER.jsonl ...]
    python bench/generations_bench.py MANIFEST OUT_DIR --summarize A.jsonl B.jsonl ...

MANIFEST: JSON lines, one candidate each: ``id``, ``level``, ``problem`` (a file name in DIR/levelN/),
``candidate`` (its path, relative to the manifest's folder), ``source_verdict`` (``compiled``, ``correct``: what
the source's own evaluation said), ``source_tolerance`` (the atol = rtol it judged with, if known) and
``same_reference`` (whether the source judged against the same problem file). The candidates are not in this
repository (their authors' code); ``tools/gather_generations.py OUT`` gathers them from public KernelBench runs.
Writes OUT_DIR/generations.jsonl (a row per candidate, appended as each ends) and prints a summary: ours
against the source, KernelBench's contract against the source, our causes, and every disagreement where we pass
a candidate both the source and KernelBench's contract call wrong (a bug in our verdict, never to be explained
away).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from pathlib import Path

from kernelbench_bench import DEFAULT_ROOT, read_rows, run_jobs


def load(manifest: Path, same_reference: bool, ids: list[str]) -> list[dict]:
    entries = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    if same_reference:
        entries = [e for e in entries if e.get("same_reference")]
    # in an order that mixes levels and sources (a run cut short by its budget is still a fair sample)
    return sorted((e for e in entries if not ids or e["id"] in ids), key=lambda e: hashlib.sha1(e["id"].encode()).hexdigest())


def judge(entry: dict, manifest: Path, root: Path, fresh_seeds: int, device: str) -> dict:
    from kernel_mcp.tools.check import check
    problem = root / f"level{entry['level']}" / entry["problem"]
    result = check(problem, manifest.parent / entry["candidate"], device=device, fresh_seeds=fresh_seeds)
    contract = {b.rule: b for b in result.benchmark}
    first = next((c for c in result.cases if not c.passed), None)
    failing = next((f for f in reversed(result.findings) if f.severity == "error"), None)
    return {"verdict": result.verdict, "passed": result.passed, "cause": result.cause,
            "kernelbench": _said(contract.get("KernelBench")), "kernelbench_v01": _said(contract.get("KernelBench v0.1")),
            "why": next((b.why for b in result.benchmark if b.why), ""),
            "worst_in_bounds": max((c.max_error_in_bounds for c in first.comparisons), default=None) if first else None,
            "finding": f"{failing.code}: {failing.message[:300]}" if failing else ""}


def _said(verdict) -> bool | None:
    return None if verdict is None else verdict.passed


def source_word(entry: dict) -> str:
    verdict = entry["source_verdict"]
    if verdict.get("correct"):
        return "correct"
    return "wrong" if verdict.get("compiled") else "not compiled"


def contract_at_source(row: dict, entry: dict) -> bool | None:
    """KernelBench's contract at the tolerance the source judged with (v0.1's 1e-2 where unknown). Rows of this
    bench and of ``kernel-mcp judge``'s results.jsonl read alike (``--summarize`` takes either)."""
    return row.get("kernelbench") if entry.get("source_tolerance") == 1e-4 else row.get("kernelbench_v01")


def summary(rows: list[dict], entries: dict[str, dict]) -> str:
    ran = [r for r in rows if r.get("passed") is not None and r["id"] in entries]
    lines = [f"{len(ran)} candidates judged", "", "| source says | n | ours pass | ours fail | KernelBench's contract "
             "(source's tolerance) agrees with the source |", "|---|---|---|---|---|"]
    for word in ("correct", "wrong", "not compiled"):
        mine = [r for r in ran if source_word(entries[r["id"]]) == word]
        known = [r for r in mine if "kernelbench" in r]  # rows that judged the contract (a one-shot loop's did not)
        agree = sum((contract_at_source(r, entries[r["id"]]) is True) == (word == "correct") for r in known)
        lines.append(f"| {word} | {len(mine)} | {sum(r['passed'] for r in mine)} | "
                     f"{sum(not r['passed'] for r in mine)} | {agree} of {len(known)} |")
    causes = Counter(r.get("cause") or r["verdict"] for r in ran if not r["passed"])
    lines += ["", "our causes: " + ", ".join(f"{c} x{n}" for c, n in causes.most_common())]
    bugs = [r for r in ran if r["passed"] and source_word(entries[r["id"]]) != "correct"
            and contract_at_source(r, entries[r["id"]]) is False]
    lines += ["", f"ours pass where the source and KernelBench's contract both say wrong: {len(bugs)}"]
    lines += [f"  {r['id']} L{entries[r['id']]['level']} {entries[r['id']]['problem']}: {r.get('why', '')[:200]}"
              for r in bugs]
    split = [r for r in ran if r["passed"] != (source_word(entries[r["id"]]) == "correct")]
    lines += ["", f"disagreements with the source: {len(split)}"]
    # (a one-shot loop's rows, batch_bench's, name no problem: the manifest does)
    lines += [f"  {r['id']} L{entries[r['id']]['level']} {entries[r['id']]['problem']}: source {source_word(entries[r['id']])}, "
              f"ours {r['verdict']}"
              f" ({r.get('cause', '')}); KernelBench {r.get('kernelbench')}, v0.1 {r.get('kernelbench_v01')}; "
              f"{(r.get('why') or r.get('finding') or '')[:240]}" for r in split]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--fresh-seeds", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=540.0)
    parser.add_argument("--device", default="cuda", help="cpu: a smoke run of the bench itself")
    parser.add_argument("--same-reference", action="store_true", help="only candidates judged on the same file")
    parser.add_argument("--ids", nargs="*", default=[])
    parser.add_argument("--skip", type=Path, nargs="*", default=[])
    parser.add_argument("--summarize", type=Path, nargs="*", default=None)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    entries = {e["id"]: e for e in load(args.manifest, args.same_reference, args.ids)}
    if args.summarize is not None:
        print(summary(read_rows(args.summarize, key=lambda r: r["id"]), entries))
        return
    done = {r["id"] for r in read_rows(args.skip, key=lambda r: r["id"]) if r.get("passed") is not None}
    todo = [({"id": i, "level": e["level"], "problem": e["problem"]}, e) for i, e in entries.items() if i not in done]
    started = time.monotonic()
    rows = run_jobs(todo, lambda e: judge(e, args.manifest, args.root, args.fresh_seeds, args.device),
                    args.out_dir / "generations.jsonl", args.jobs, args.budget_s)
    text = summary(rows, entries) + f"\n{len(rows)} rows in {time.monotonic() - started:.0f} s, {args.jobs} jobs"
    (args.out_dir / "generations_summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
