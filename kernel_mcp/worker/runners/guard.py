"""Files the harness relies on, copied before a run and restored after it (docs/threat-model.md, rule 7).

Lives in the caller, the outermost process, so a candidate that kills the judge still cannot keep an
edited reference.py, task helper or kernel_mcp module for the next run. What the guard finds is reported
as tampering and never lost: a changed file's new content and any planted file go to the quarantine
folder before the original is put back.

Planted files that would change what the next judge imports are caught too: a ``utils.py`` / ``task.py``
beside the problem, a module named like an installed package (``numpy.py``), a ``.pth`` or
``sitecustomize``, and any ``.pyc`` in a watched ``__pycache__`` that is not the compiled form of its
source. New files that shadow nothing (another candidate saved beside the problem) are left alone.
"""
from __future__ import annotations

import importlib.machinery
import marshal
import shutil
import site
import sys
import time
from pathlib import Path

import kernel_mcp
from kernel_mcp.files import cache_root
from kernel_mcp.results import Finding, ProfileResult
from kernel_mcp.worker.isolation import sandbox

IMPORTABLE = {".py", ".pyc", ".so", ".pth"}
ALWAYS_DANGEROUS = {"task", "utils", "reference", "sitecustomize", "usercustomize", "kernel_mcp"}
PYC_HEADER = 16  # bytes: magic, flags, source mtime, source size (PEP 552)


def package_dir() -> Path:
    return Path(kernel_mcp.__file__).resolve().parent


def quarantine_dir() -> Path:
    """Where changed content and planted files go: kernel_mcp's cache, which is the user's own (a folder
    in /tmp could belong to another user, or be a link another user planted) and read-only to candidates."""
    return cache_root() / "quarantine"


def _quarantine(path: Path, content: bytes | None = None) -> Path:
    folder = quarantine_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{time.time_ns()}-{path.name}"
    if content is None:
        shutil.move(str(path), target)
    else:
        target.write_bytes(content)
    return target


def _pyc_matches_source(pyc: Path) -> bool:
    """True if ``pyc`` holds exactly the code compiled from its source file (a legitimate cache)."""
    parts = pyc.name.split(".")  # module.cpython-311[.opt-1].pyc
    source = pyc.parent.parent / f"{parts[0]}.py"
    level = int(parts[2][4:]) if len(parts) == 5 and parts[2].startswith("opt-") else 0
    try:
        code = marshal.loads(pyc.read_bytes()[PYC_HEADER:])
        return source.is_file() and code == compile(source.read_bytes(), str(source), "exec",
                                                    dont_inherit=True, optimize=level)
    except (ValueError, EOFError, TypeError, SyntaxError, OSError):
        return False


def _shadows_a_module(path: Path, strict: bool) -> bool:
    """Would ``path`` change what some import resolves to? ``strict`` folders (the problem's) also treat
    the names GPU MODE references import from there as dangerous."""
    stem = path.name.split(".")[0]
    if path.suffix == ".pth" or stem in ALWAYS_DANGEROUS - ({"task", "utils", "reference"} if not strict else set()):
        return True
    if stem in sys.builtin_module_names or stem in sys.stdlib_module_names:
        return True
    elsewhere = [p for p in sys.path if p and Path(p).resolve() != path.parent.resolve()]
    try:
        return importlib.machinery.PathFinder.find_spec(stem, elsewhere) is not None
    except (ImportError, ValueError):
        return False


class FileGuard:
    def __init__(self, files: list[Path], import_dirs: list[Path], path_dirs: list[Path] = ()):
        """``files``: copied and compared byte for byte. ``import_dirs``: folders (with their __pycache__)
        where a planted importable file would change what the next judge imports. ``path_dirs``: sys.path
        folders (site-packages...), where only .pth, sitecustomize and shadowing modules count."""
        self.saved = {p: p.read_bytes() for p in files if p.is_file()}
        self.import_dirs = [d for d in import_dirs if d.is_dir()]
        self.strict = set(self.import_dirs)
        self.import_dirs += [d for d in path_dirs if d.is_dir() and d not in self.strict]
        self.before = self._importables()

    def _importables(self) -> dict[Path, float]:
        found = {}
        for folder in self.import_dirs:
            for sub in (folder, folder / "__pycache__"):
                if sub.is_dir():
                    found.update((p, p.stat().st_mtime) for p in sub.iterdir() if p.suffix in IMPORTABLE)
        return found

    def restore(self) -> list[str]:
        """Undo every harmful change; return a description of each (empty when nothing was touched)."""
        changes = []
        for path, content in self.saved.items():
            try:
                now = path.read_bytes()
            except OSError:
                now = None
            if now != content:
                kept = f", its new content kept at {_quarantine(path, now)}" if now is not None else ""
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
                changes.append(f"{path} was changed (restored{kept})")
        for path, mtime in self._importables().items():
            if path in self.saved or self.before.get(path) == mtime:
                continue
            folder = path.parent.parent if path.parent.name == "__pycache__" else path.parent
            planted = not _pyc_matches_source(path) if path.suffix == ".pyc" \
                else _shadows_a_module(path, strict=folder in self.strict)
            if planted:
                changes.append(f"{path} appeared (moved to {_quarantine(path)})")
        return changes


def tampering_finding(tampered: list[str]) -> Finding:
    return Finding(code="tampering", message="the candidate changed files the harness relies on: "
                   + "; ".join(tampered))


def guard_for(problem) -> FileGuard:
    """The guard for one run: the problem's files and kernel_mcp's own modules."""
    pkg = package_dir()
    own = [p for p in pkg.rglob("*.py") if p.is_file()]
    dirs = [problem.folder, problem.folder.parent, pkg] + [d for d in pkg.rglob("*") if d.is_dir()
                                                           and d.name != "__pycache__"]
    path_dirs = [Path(p).resolve() for p in [*sys.path, site.getusersitepackages()] if p]
    return FileGuard(problem.guarded_files() + own, dirs, path_dirs)


def apply_tampering(result, tampered: list[str]):
    """A result that was tampered with (files the harness relies on changed during the run) fails."""
    if tampered:
        result.passed = False
        result.verdict = "fail: tampering"
        if isinstance(result, ProfileResult):
            result.trusted = False
        result.findings.append(tampering_finding(tampered))
    return result


def sealed(problem, candidate: Path) -> bool:
    """Would a candidate see the problem (a Problem), its own folder, kernel_mcp, its cache and every import path
    read-only? (One probe per set of folders, kept for the process's life.)"""
    folders = [problem.folder, problem.folder.parent, candidate.resolve().parent, Path(sandbox.PACKAGE_ROOT),
               cache_root(), *(Path(p) for p in sys.path if p), Path(site.getusersitepackages())]
    return sandbox.sealed_for_candidates(tuple(sorted({str(f.resolve()) for f in folders if f.is_dir()})))
