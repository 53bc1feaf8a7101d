"""What the checks of one batch share (issue 38): the candidates of a problem are served the same secret inputs
and read the reference's float64 truth from one store instead of each recomputing it (the judge's side:
worker/judge/shared_truth.py, which says why that is safe). The batch holds the secret and removes a problem's
store once its last candidate is judged; a new run of the batch (a resume) draws a new secret, so whatever an
earlier run left is unreadable, and is removed at the start.

Lanes: candidates judged at the same moment could pass notes live (a file one polls while the other writes
it, the GPU's memory figures), so no two candidates of a problem that run at once get the same inputs. Each
running candidate holds a lane of its problem, and each lane has its own secret and store; a candidate takes
the lowest lane free, so lane k serves one candidate after another, each reading the truths the last one
kept. With ``--jobs`` J, at most J candidates of a problem compute its truths, and the order (``scheduled``)
makes it about one: candidates running at once are mostly of different problems."""
from __future__ import annotations

import hashlib
import hmac
import itertools
import secrets
import shutil
import threading
from collections import Counter, defaultdict
from pathlib import Path

from kernel_mcp.worker import remember_secret
from kernel_mcp.worker.protocol import SharedReference

FOLDER = ".shared_truth"  # in the batch's OUT folder: a name no user folder is likely to have


class BatchSharing:
    def __init__(self, out: Path, problems: list[Path]):
        self.folder = (out / FOLDER).resolve()
        shutil.rmtree(self.folder, ignore_errors=True)  # an earlier run's entries: under a secret now gone
        self.folder.mkdir(parents=True, exist_ok=True)
        self._secret = secrets.token_bytes(32)
        self._index = {problem: i for i, problem in enumerate(dict.fromkeys(problems))}
        self._left = Counter(problems)
        self._busy: dict[Path, set[int]] = defaultdict(set)
        self._lock = threading.Lock()

    def take(self, problem: Path) -> tuple[SharedReference | None, int | None]:
        """A lane of ``problem`` no running candidate holds: its secret and store, and its number (for ``done``);
        (None, None) where its store cannot be made (the check then shares nothing: never a failure)."""
        with self._lock:
            lane = next(i for i in range(len(self._busy[problem]) + 1) if i not in self._busy[problem])
            self._busy[problem].add(lane)
        secret = hmac.new(self._secret, f"lane {lane}".encode(), hashlib.sha256).hexdigest()
        remember_secret(secret, "the batch's secret")  # never in a result (runners/redact.py)
        store = self._store(problem) / f"lane{lane}"
        try:
            store.mkdir(parents=True, exist_ok=True)  # a judge makes no folder above its own (shared_truth.py)
        except OSError:
            with self._lock:
                self._busy[problem].discard(lane)
            return None, None
        return SharedReference(secret=secret, store=str(store)), lane

    def _store(self, problem: Path) -> Path:
        return self.folder / f"{self._index[problem]:05d}-{problem.stem}"

    def done(self, problem: Path, lane: int | None) -> None:
        """One candidate of ``problem`` judged: its lane (if it took one) is free again; the problem's store goes
        with the last."""
        with self._lock:
            self._busy[problem].discard(lane)
            self._left[problem] -= 1
            last = self._left[problem] == 0
        if last:
            shutil.rmtree(self._store(problem), ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def scheduled(items: list, width: int) -> list:
    """The order to judge ``items`` in, ``width`` at a time: problems in blocks of ``width``, and within a block
    one candidate of each problem in turn. Candidates running at once are then mostly of different problems,
    so each takes its problem's first lane and a problem's truths are computed about once (not once per
    candidate running beside another of its problem); and only a block's stores are on disk at a time."""
    problems = list(dict.fromkeys(item.problem for item in items))
    of = {problem: [item for item in items if item.problem == problem] for problem in problems}
    order = []
    for start in range(0, len(problems), max(1, width)):
        for turn in itertools.zip_longest(*(of[problem] for problem in problems[start:start + width])):
            order.extend(item for item in turn if item is not None)
    return order
