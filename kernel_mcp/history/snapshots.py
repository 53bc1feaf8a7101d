"""Every attempt kept: snapshots are git commits under a private ref namespace of the workspace's repository.

A snapshot is a commit whose tree holds the candidate's files (paths relative to the workspace root) and
``.kernel_mcp/snapshot.json`` (its metrics), plus any attachments beside it (``.kernel_mcp/roofline.png``,
the chart of its evaluation; never restored into the working tree); its git parent is the snapshot it
was derived from. Each snapshot gets a ref of its own, ``refs/kernel_mcp/snapshots/<sha>``, created with git's
compare-and-swap (``update-ref <ref> <new> ""``), so concurrent writers (two agents, server and orchestrator) never
overwrite each other. Objects are written with plumbing (hash-object, a temporary index, write-tree, commit-tree): the
user's branch, index and working tree are never touched.
"""
from __future__ import annotations

import io
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kernel_mcp.errors import UsageError, shown
from kernel_mcp.reproducibility import Provenance

REF_PREFIX = "refs/kernel_mcp/snapshots/"
META_DIR = ".kernel_mcp"
META_PATH = f"{META_DIR}/snapshot.json"
IDENTITY = {"GIT_AUTHOR_NAME": "kernel_mcp", "GIT_AUTHOR_EMAIL": "kernel_mcp@localhost",
            "GIT_COMMITTER_NAME": "kernel_mcp", "GIT_COMMITTER_EMAIL": "kernel_mcp@localhost"}


class SnapshotMeta(BaseModel):
    """What a snapshot records besides the files."""

    problem: str
    candidate: str  # path of the candidate file, relative to the workspace root
    files: list[str]  # every file stored (the candidate first), relative to the root
    author: str = "unknown"  # who made it: an agent's or a person's name
    note: str = ""
    passed: bool | None = None
    trusted: bool | None = None
    verdict: str = ""
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    roofline_percent: float | None = None  # best % of the binding roof over the shapes, candidate
    compile: list[dict[str, Any]] = Field(default_factory=list)  # per kernel and target: registers, spills...
    lines: int = 0  # of the candidate file, filled in when saved (code growth is a stall signal)
    created: float = Field(default_factory=time.time)  # seconds since the epoch
    provenance: Provenance | None = None  # the device and stack its numbers were measured on


class Snapshot(SnapshotMeta):
    id: str  # the commit's sha
    parent: str | None = None  # the snapshot this one was derived from
    other_stack: list[str] = Field(default_factory=list)  # history only: how its stack differs from the first listed


def stack_differences(a: SnapshotMeta, b: SnapshotMeta) -> list[str]:
    """How the stacks two snapshots were measured on differ ("torch 2.11.0 -> 2.12.0"); [] when either has
    no record of its stack."""
    return a.provenance.differences(b.provenance) if a.provenance and b.provenance else []


def check_id(snapshot_id: str | None) -> None:
    """A snapshot id is 4 to 40 hex characters (a prefix of one): anything else is refused before any
    repository is opened, so the message is the same whether or not snapshots exist yet."""
    if not re.fullmatch(r"[0-9a-f]{4,40}", snapshot_id or ""):
        raise UsageError(f"bad snapshot id {shown(snapshot_id)}: give 4 to 40 hex characters of one "
                         "(history lists them)")


class Store:
    """The snapshots of one workspace (a directory; made a git repository if it is not one)."""

    def __init__(self, root: str | Path, create: bool = True):
        """``create=False`` for readers: a folder without a repository then has no snapshots, and reading
        the history must not turn the user's folder into a git repository."""
        import git  # GitPython takes ~0.2 s to import: here, not at module level, so the server starts fast
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise UsageError(f"workspace {root} is not a directory")
        try:
            self.repo = git.Repo(self.root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            if not create:
                raise UsageError(f"no snapshots yet: {self.root} is not a git repository") from None
            self.repo = git.Repo.init(self.root)
        self.top = Path(self.repo.working_tree_dir).resolve()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the git processes GitPython keeps for reading objects (``cat-file --batch``): left to the
        garbage collector, a long-lived server gathers them call after call."""
        self.repo.close()

    # --- writing ------------------------------------------------------------------------------------
    def save(self, meta: SnapshotMeta, parent: str | None = None, attachments: dict[str, bytes] | None = None,
             contents: dict[str, bytes] | None = None) -> Snapshot:
        """Store the files named in ``meta`` with the metrics, and ``attachments`` (name -> bytes) under
        .kernel_mcp/. A file's content is ``contents[name]`` when given (the exact bytes an evaluation
        used), else read from the working tree now."""
        if parent is not None:
            self.get(parent)  # raises for an unknown parent
        contents = contents or {}
        if meta.candidate not in meta.files:
            raise UsageError(f"the candidate {meta.candidate} must be one of the files stored")
        source = contents.get(meta.candidate)
        if source is None and self._inside(meta.candidate).is_file():
            source = self._inside(meta.candidate).read_bytes()
        meta = meta.model_copy(update={"lines": len(source.decode(errors="replace").splitlines()) if source else 0})
        entries = [(self._repo_path(self._inside(f)), self._hash_bytes(contents[f]) if f in contents
                    else self._hash_file(self._inside(f))) for f in meta.files]
        entries.append((self._repo_path(self.root / META_PATH), self._hash_text(meta.model_dump_json(indent=1))))
        for name, data in (attachments or {}).items():
            if "/" in name or name in ("", ".", "..", "snapshot.json"):
                raise UsageError(f"bad attachment name {name!r}")
            entries.append((self._repo_path(self.root / META_DIR / name), self._hash_bytes(data)))
        tree = self._write_tree(entries)
        message = f"{meta.problem}: {meta.verdict or 'snapshot'} {_speedup_text(meta)} by {meta.author}\n\n" \
                  f"{meta.note}".strip() + "\n"
        with tempfile.NamedTemporaryFile("w", suffix=".msg", encoding="utf-8") as file:
            file.write(message)  # from a file, not argv: a long note would exceed the kernel's argument limit
            file.flush()
            args = [tree, "-F", file.name] + (["-p", parent] if parent else [])
            sha = self.repo.git.commit_tree(*args, env={**os.environ, **IDENTITY})
        self.repo.git.update_ref(REF_PREFIX + sha, sha, "")  # "" = the ref must not exist yet
        return self.get(sha)

    def _write_tree(self, entries: list[tuple[str, str]]) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
            for path, blob in entries:
                self.repo.git.update_index("--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
            return self.repo.git.write_tree(env=env)

    def _hash_file(self, path: Path) -> str:
        if not path.is_file():
            raise UsageError(f"cannot snapshot {path}: not a file")
        return self.repo.git.hash_object("-w", str(path))

    def _hash_text(self, text: str) -> str:
        return self._hash_bytes(text.encode())

    def _hash_bytes(self, data: bytes) -> str:
        import git
        from gitdb import IStream
        return self.repo.odb.store(IStream(git.Blob.type, len(data), io.BytesIO(data))).hexsha.decode()

    # --- reading ------------------------------------------------------------------------------------
    def ids(self) -> list[str]:
        out = self.repo.git.for_each_ref("--format=%(objectname)", REF_PREFIX)
        return [line for line in out.splitlines() if line]

    def get(self, snapshot_id: str) -> Snapshot:
        check_id(snapshot_id)
        matches = [s for s in self.ids() if s.startswith(snapshot_id)]
        if len(matches) != 1:
            raise UsageError(f"no snapshot id {snapshot_id!r}" if not matches else
                             f"snapshot id {snapshot_id!r} is ambiguous; give more characters")
        commit = self.repo.commit(matches[0])
        meta = json.loads(self.repo.git.show(f"{commit.hexsha}:{self._repo_path(self.root / META_PATH)}"))
        parent = commit.parents[0].hexsha if commit.parents else None
        return Snapshot(id=commit.hexsha, parent=parent, **meta)

    def all(self) -> list[Snapshot]:
        return sorted((self.get(i) for i in self.ids()), key=lambda s: s.created)

    def file_at(self, snapshot: Snapshot, path: str) -> bytes:
        return self.repo.git.show(f"{snapshot.id}:{self._repo_path(self._inside(path))}",
                                  stdout_as_string=False, strip_newline_in_stdout=False)

    def attachment(self, snapshot: Snapshot, name: str) -> bytes | None:
        """An attachment's bytes, or None when the snapshot has none of that name."""
        import git
        try:
            return self.file_at(snapshot, f"{META_DIR}/{name}")
        except git.GitCommandError:
            return None

    def diff(self, a: Snapshot, b: Snapshot) -> str:
        """Unified diff of the stored files (metrics and attachments left out)."""
        meta = self._repo_path(self.root / META_DIR)
        return self.repo.git.diff(a.id, b.id, "--", ".", f":(exclude){meta}")

    # --- restoring ----------------------------------------------------------------------------------
    def restore(self, snapshot: Snapshot, force: bool = False) -> list[str]:
        """Write the snapshot's files into the working tree. A file whose current content is neither in a
        snapshot nor in git's object store would be lost: refused unless ``force``."""
        unsaved = []
        for name in snapshot.files:
            path = self._inside(name)
            if path.is_file() and not self._known(path):
                unsaved.append(name)
        if unsaved and not force:
            raise UsageError(f"restoring {snapshot.id[:10]} would overwrite unsaved changes in {', '.join(unsaved)}; "
                             "snapshot them first, or pass force=True")
        for name in snapshot.files:
            path = self._inside(name)
            if path.is_dir():
                raise UsageError(f"cannot restore {name}: a directory of that name is in the way")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(self.file_at(snapshot, name))
            except OSError as exc:
                raise UsageError(f"cannot restore {name}: {exc.strerror or exc}") from None
        return snapshot.files

    def _known(self, path: Path) -> bool:
        import git
        blob = self.repo.git.hash_object(str(path))  # without -w: only computes the id
        try:
            self.repo.git.cat_file("-e", blob)
            return True
        except git.GitCommandError:
            return False

    # --- paths --------------------------------------------------------------------------------------
    def _inside(self, name: str | Path) -> Path:
        path = (self.root / name).resolve()
        if not path.is_relative_to(self.root):
            raise UsageError(f"{name} is outside the workspace {self.root}")
        return path

    def _repo_path(self, path: Path) -> str:
        return path.resolve().relative_to(self.top).as_posix()


def _speedup_text(meta: SnapshotMeta) -> str:
    return f"{meta.speedup:.3f}x" if meta.speedup else ""


def leaderboard(snapshots: list[Snapshot], problem: str | None = None, passed_only: bool = False,
                author: str | None = None) -> list[Snapshot]:
    """Best first: passed and trusted before the rest, then by speedup, then newest."""
    chosen = [s for s in snapshots if (problem is None or s.problem == problem)
              and (not passed_only or s.passed) and (author is None or s.author == author)]
    return sorted(chosen, key=lambda s: (bool(s.passed and s.trusted), s.speedup or 0.0, s.created), reverse=True)


def best(snapshots: list[Snapshot], problem: str | None = None) -> Snapshot | None:
    ranked = [s for s in leaderboard(snapshots, problem) if s.passed and s.trusted]
    return ranked[0] if ranked else None
