"""snapshot, history, diff, restore, best, status: every attempt kept in git with its numbers
(kernel_mcp/history/snapshots.py), and the stall signal over them (kernel_mcp/history/stall.py). Plain functions over a
workspace root; paths are relative to it and must stay inside it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_mcp.errors import UsageError, shown
from kernel_mcp.history import snapshots
from kernel_mcp.history.snapshots import Snapshot, SnapshotMeta, Store
from kernel_mcp.history.stall import RunFacts, StallPolicy, StallStatus, assess
from kernel_mcp.results import CheckResult, CompileResult, ProfileResult, RooflineResult

NOVELTY_LOOKBACK = 60  # snapshots whose sources the status tool reads to spot repeated proposals (S4)


def metrics(check: CheckResult | None = None, profile: ProfileResult | None = None,
            roofline: RooflineResult | None = None,
            compile: CompileResult | None = None) -> dict[str, Any]:  # noqa: A002
    """The numbers a snapshot keeps, from whichever results the evaluation produced."""
    out: dict[str, Any] = {}
    if check is not None:
        out.update(passed=check.passed, verdict=check.verdict)
    if profile is not None:
        out.update(passed=profile.passed, trusted=profile.trusted, verdict=profile.verdict, speedup=profile.speedup,
                   speedup_ci=profile.speedup_ci)
    if roofline is not None:
        percents = [p.percent_of_bound for s in roofline.shapes for p in s.points if p.who == "candidate"]
        out["roofline_percent"] = max(percents) if percents else None
    measured = profile or check
    if measured is not None and measured.provenance is not None:
        out["provenance"] = measured.provenance
    if compile is not None:
        out["compile"] = [{"kernel": b.kernel, "target": b.target, "ok": b.ok, "registers": b.registers,
                           "spill_bytes": b.spill_bytes, "shared_bytes": b.shared_bytes,
                           "occupancy_percent": b.occupancy.percent if b.occupancy else None} for b in compile.builds]
    return out


MAX_NOTE = 65_536  # characters of a snapshot's note: a paragraph of reasoning, not a log
MAX_NAME = 200  # characters of an author's name
MAX_PROBLEM = 4096  # characters of a problem argument (a name or a path to it)
MAX_LIMIT = 10_000  # history entries in one answer


def _bounded(what: str, value: str | None, limit: int) -> None:
    if value is not None and len(value) > limit:
        raise UsageError(f"{what} {shown(value)} is too long (at most {limit} characters)")


def problem_name(problem: str | Path) -> str:
    """Snapshots are filed under the problem folder's name; a path to it ("problems/softmax/") means the
    same problem, so status and history find what evaluate recorded whichever form an agent passes."""
    _bounded("problem", str(problem), MAX_PROBLEM)
    return Path(str(problem).rstrip("/\\")).name or str(problem)


def _relative(store: Store, path: str | Path) -> str:
    full = (store.root / path).resolve()
    if not full.is_relative_to(store.root):
        raise UsageError(f"{path} is outside the workspace {store.root}")
    return full.relative_to(store.root).as_posix()


def snapshot(root: str | Path, problem: str, candidate: str | Path, files: list[str] | None = None,
             author: str = "unknown", note: str = "", parent: str | None = None,
             attachments: dict[str, bytes] | None = None, candidate_bytes: bytes | None = None,
             **results: Any) -> Snapshot:
    """Record the candidate (and any extra files, e.g. helpers it imports) with the given results
    (check=, profile=, roofline=, compile=) as a new snapshot derived from ``parent``; ``attachments``
    (e.g. the roofline chart) are kept with its metrics; ``candidate_bytes``: the candidate's content to
    keep (what was evaluated) instead of the file's content now."""
    _bounded("note", note, MAX_NOTE)
    _bounded("author", author, MAX_NAME)
    with Store(root) as store:
        name = _relative(store, candidate)
        stored = [name] + [_relative(store, f) for f in files or [] if _relative(store, f) != name]
        meta = SnapshotMeta(problem=problem_name(problem), candidate=name, files=stored, author=author, note=note,
                            **metrics(**results))
        contents = {name: candidate_bytes} if candidate_bytes is not None else None
        return store.save(meta, parent=parent, attachments=attachments, contents=contents)


def history(root: str | Path, problem: str | None = None, passed_only: bool = False, author: str | None = None,
            limit: int = 20) -> list[Snapshot]:
    """The leaderboard, best first (passed and trusted, then speedup): at most ``limit`` entries."""
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}; got {limit}")
    _bounded("author", author, MAX_NAME)
    board = snapshots.leaderboard(_all(root), problem_name(problem) if problem else None, passed_only,
                                  author)[:limit]
    return [s.model_copy(update={"other_stack": snapshots.stack_differences(board[0], s)}) for s in board]


def _source(store: Store, snap: Snapshot) -> str:
    import git
    try:
        return store.file_at(snap, snap.candidate).decode(errors="replace")
    except git.GitCommandError:
        return ""  # a snapshot of a file since renamed out of the store's reach: no source to compare


def _all(root: str | Path) -> list[Snapshot]:
    """Every snapshot; none (and no repository created) where the folder is not a repository."""
    try:
        with Store(root, create=False) as store:
            return store.all()
    except UsageError:
        if not Path(root).is_dir():
            raise
        return []


def best(root: str | Path, problem: str | None = None) -> Snapshot | None:
    return snapshots.best(_all(root), problem_name(problem) if problem else None)


def best_file(root: str | Path, problem: str, name: str | None = None) -> tuple[Snapshot, bytes | None]:
    """The best snapshot of ``problem`` and one of its stored files (default: the candidate's source), or
    with ``name`` an attachment (None when it has none). UsageError when nothing passed and was trusted."""
    top = best(root, problem)
    if top is None:
        raise UsageError(f"no passed and trusted snapshot of {problem} yet: run evaluate first")
    with Store(root, create=False) as store:
        return top, store.attachment(top, name) if name else store.file_at(top, top.candidate)


def diff(root: str | Path, a: str, b: str | None = None) -> str:
    """Unified diff from snapshot ``a`` to ``b`` (default: to the best snapshot of a's problem), headed by a
    line saying so when their numbers were measured on different stacks."""
    for snapshot_id in (a, b) if b is not None else (a,):
        snapshots.check_id(snapshot_id)
    with Store(root, create=False) as store:
        first = store.get(a)
        if b is None:
            second = snapshots.best(store.all(), first.problem)
            if second is None:
                raise UsageError(f"no passed and trusted snapshot of {first.problem} to compare with")
        else:
            second = store.get(b)
        differ = snapshots.stack_differences(first, second)
        head = f"# measured on different stacks: {', '.join(differ)}\n" if differ else ""
        return head + store.diff(first, second)


def restore(root: str | Path, snapshot_id: str, force: bool = False) -> list[str]:
    """Write a snapshot's files into the working tree (refuses to overwrite unsaved changes unless forced)."""
    snapshots.check_id(snapshot_id)
    with Store(root, create=False) as store:
        return store.restore(store.get(snapshot_id), force=force)


def status(root: str | Path, problem: str, policy: StallPolicy | None = None,
           facts: RunFacts | None = None) -> StallStatus:
    """The stall signals for one problem's search and the ladder's suggested rung (kernel_mcp/history/stall.py), the
    same the orchestrator computes; the candidates' sources are read from the store for mode collapse."""
    name = problem_name(problem)
    history = [s for s in _all(root) if s.problem == name]
    sources = None
    if history:
        older = max(0, len(history) - NOVELTY_LOOKBACK)
        with Store(root, create=False) as store:  # one `git show` per snapshot read: the recent ones only
            sources = [""] * older + [_source(store, s) for s in history[older:]]
    facts = (facts or RunFacts()).model_copy(update={"sources": sources})  # a run adds what only it knows
    return assess(history, policy, facts)
