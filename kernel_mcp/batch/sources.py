"""What a batch judges: candidate files matched to their problems.

PROBLEMS is one problem (a folder with task.yml, GPU MODE style, or a KernelBench .py file), and then every
candidate is judged against it; or a KernelBench root (folders level1/, level2/, ...), and then each
candidate names its problem by where it lies, in one of the layouts generation runs write:

* KernelBench's own file names: ``level_1_problem_23_sample_0_kernel.py`` (any folder);
* folders: ``level1/23/0.py`` or ``level_1/23_Softmax/sample_0.py`` (level, then problem id or file stem);
* a manifest, JSON lines with ``id``, ``level``, ``problem`` (a file name in levelN/, or its id) and
  ``candidate`` (a path relative to the manifest's folder).

CANDIDATES are files, folders (walked for .py files; hidden folders and caches skipped) or manifests
(.jsonl). A file that matches no layout is a UsageError naming it: a batch never guesses a problem.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from kernel_mcp.errors import UsageError

KB_FILE = re.compile(r"level_?(\d+)_problem_?(\d+)_sample_?(\d+)", re.IGNORECASE)
LEVEL_DIR = re.compile(r"level_?(\d+)$", re.IGNORECASE)
PROBLEM_ID = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Item:
    id: str  # unique in the batch: the row's key in results.jsonl
    problem: Path  # a problem folder or a KernelBench .py file
    candidate: Path
    level: int | None = None


def find_items(problems: Path, candidates: list[Path]) -> list[Item]:
    """Every candidate under ``candidates`` with its problem, in a stable order; ids unique."""
    problems = problems.expanduser().resolve()
    if not problems.exists():
        raise UsageError(f"problems not found: {problems}")
    root = problems if is_kernelbench_root(problems) else None
    items: list[Item] = []
    for given in candidates:
        given = given.expanduser().resolve()
        if not given.exists():
            raise UsageError(f"candidates not found: {given}")
        if given.suffix == ".jsonl":
            items += _from_manifest(given, root or problems)
            continue
        for file in _python_files(given):
            items.append(_placed(file, given, root, problems))
    return _unique(items)


def is_kernelbench_root(path: Path) -> bool:
    return path.is_dir() and any(LEVEL_DIR.match(p.name) and p.is_dir() for p in path.iterdir())


def _python_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.py") if not any(part.startswith((".", "__")) for part in
                                                           p.relative_to(path).parts))


def _placed(file: Path, given: Path, root: Path | None, problem: Path) -> Item:
    base = given if given.is_dir() else given.parent
    name = file.relative_to(base).with_suffix("").as_posix()
    if root is None:  # one problem: every candidate is judged against it
        return Item(id=name, problem=problem, candidate=file)
    level, problem_id = _level_and_problem(file.relative_to(base))
    if level is None:
        raise UsageError(f"{file}: which KernelBench problem is this for? Name it "
                         "level_L_problem_P_sample_S_kernel.py, put it under levelL/P/, or list it in a manifest")
    return Item(id=name, problem=kernelbench_problem(root, level, problem_id), candidate=file, level=level)


def _level_and_problem(relative: Path) -> tuple[int | None, str]:
    found = KB_FILE.search(relative.name)
    if found:
        return int(found[1]), found[2]
    parts = relative.parts
    for i, part in enumerate(parts[:-2]):  # levelL / problem / sample.py
        level = LEVEL_DIR.match(part)
        if level:
            return int(level[1]), parts[i + 1]
    return None, ""


def kernelbench_problem(root: Path, level: int, problem: str | int) -> Path:
    """The problem file of ``level`` named ``problem``: its file name, its stem, or its id (the number it
    starts with)."""
    folder = next((p for p in sorted(root.iterdir()) if (m := LEVEL_DIR.match(p.name)) and int(m[1]) == level), None)
    if folder is None:
        raise UsageError(f"{root}: no level {level} folder")
    problem = str(problem)
    for file in sorted(folder.glob("*.py")):
        if problem in (file.name, file.stem):
            return file
    number = PROBLEM_ID.match(problem)
    if number:
        found = [f for f in sorted(folder.glob("*.py")) if f.name.split("_")[0] == str(int(number[1]))]
        if len(found) == 1:
            return found[0]
    raise UsageError(f"{folder}: no problem {problem!r}")


def _from_manifest(manifest: Path, problems: Path) -> list[Item]:
    items = []
    for n, line in enumerate(manifest.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            candidate = (manifest.parent / entry["candidate"]).resolve()
            level = entry.get("level")
            problem = (kernelbench_problem(problems, int(level), entry["problem"]) if level is not None
                       else (manifest.parent / entry["problem"]).resolve())
            items.append(Item(id=str(entry.get("id") or candidate.stem), problem=problem, candidate=candidate,
                              level=int(level) if level is not None else None))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{manifest}:{n}: a manifest line needs candidate and problem (and level for "
                             f"KernelBench): {type(exc).__name__}: {exc}") from None
    return items


def _unique(items: list[Item]) -> list[Item]:
    seen: dict[str, Item] = {}
    for item in items:
        if item.id in seen and seen[item.id].candidate != item.candidate:
            raise UsageError(f"two candidates share the id {item.id!r}: {seen[item.id].candidate} and {item.candidate}")
        seen[item.id] = item
    return list(seen.values())
