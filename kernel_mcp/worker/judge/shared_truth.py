"""The float64 truth shared by the checks of one batch (issue 38), inside the judge.

A batch (``kernel-mcp judge``) hands every check of its problems one secret and one store folder
(``protocol.SharedReference``). From the secret each check derives its secret seeds and RNG seeds, so
every candidate of a problem is served the same inputs (fresh per batch, never shown); the reference's
float64 run on a case, the costly part of the truth (fp64 convolutions and matmuls run 10-100x slower
than the task dtype on a GPU), is then computed by the first check that needs it and read back by the
others. What is shared is a memo of a function: an entry is found by a key covering everything the run
reads (the inputs' bits, the RNG seed, the float64 model's state, the problem's source, torch and the
device), so an entry is only ever used for the same inputs; anything that differs (a nondeterministic
input generator, a drawn shape) is a miss and runs as it would alone.

Entries are encrypted and authenticated (AES-GCM, a key derived from the secret, the entry's name as
associated data): candidates may be able to read the store folder, never the secret (it travels in the
judge's request line, which no candidate process can read), so an entry tells them nothing, and one they
changed or planted fails authentication and is a miss. Sharing inputs between candidates is only safe
where they cannot pass notes: the judge uses the batch's seeds only when it has its own /dev/shm, IPC and
network (check_namespaces.py) and its candidate host its own PID and mount namespaces; else fresh seeds.
"""
from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import random
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernel_mcp.results import Finding
from kernel_mcp.worker import tensors

MAX_ENTRY_BYTES = 2 << 30  # a float64 truth larger than this is recomputed by every check (disk, host memory)
NONCE_BYTES = 12  # AES-GCM's standard nonce


@dataclass
class Truth:
    """What the float64 runs of one case give: the outputs and inputs compared after (float64_run.run), the
    terms traced, the run on |inputs| when the tolerance needs it, and the findings they made."""

    ref64: tuple[Any, list[torch.Tensor]] | None
    terms: list  # reduction_trace.Terms
    magnitude: tuple[Any, list[torch.Tensor]] | None
    findings: list[Finding]
    buffers_after: dict[str, torch.Tensor] | None = None  # a KernelBench float64 model's buffers after its run


class SharedTruth:
    """One batch's secret and store, as a judge uses them; counts what it found and kept."""

    def __init__(self, secret_hex: str, folder: str, problem_id: str):
        """``folder``: the batch's store for this problem (the batch removes it after the problem's last check)."""
        self.secret = bytes.fromhex(secret_hex)
        self.folder = Path(folder)
        self.problem_id = problem_id
        self.found = self.kept = self.looked = 0
        self.probe_recalled = False  # the degenerate-answer probe's result came from the store (degenerate.py)

    def _mac(self, *parts: str) -> str:
        return hmac.new(self.secret, "\0".join(parts).encode(), hashlib.sha256).hexdigest()

    def seed(self, *parts: str) -> int:
        """A 31-bit seed only this batch's secret gives (the same in every check of the batch)."""
        return int(self._mac("seed", self.problem_id, *parts)[:8], 16) >> 1

    def rng(self, purpose: str) -> random.Random:
        """Secret draws (of shapes) that are the same in every check of the batch: seeded with all 256 bits."""
        return random.Random(int(self._mac("draws", self.problem_id, purpose), 16))

    def key(self, fingerprint: str) -> str:
        return self._mac("entry", self.problem_id, fingerprint)

    # --- entries ---------------------------------------------------------------------------------------
    def load(self, key: str) -> dict | None:
        """The truth stored under ``key``, or None (counted for the finding)."""
        self.looked += 1
        entry = self.recall(key)
        self.found += entry is not None
        return entry

    def save(self, key: str, truth: Truth, complete: bool) -> None:
        """Keep ``truth`` under ``key`` (counted for the finding), unless it is too large to be worth a file or
        not ``complete``: a float64 run that failed here (out of memory beside other checks) is not the
        problem's answer, and the next check tries again rather than being held to the task-dtype reference."""
        if complete and tensors.nbytes([truth.ref64, truth.magnitude, truth.buffers_after]) <= MAX_ENTRY_BYTES:
            self.kept += self.keep(key, to_entry(truth))

    def recall(self, key: str) -> dict | None:
        """The entry stored under ``key``, or None (absent, torn, planted, changed: all a miss)."""
        try:
            blob = (self.folder / key).read_bytes()
            plain = _cipher(self.secret).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], key.encode())
            return torch.load(io.BytesIO(plain), weights_only=True)
        except Exception:  # noqa: BLE001  (InvalidTag, OSError, unpickling: each only costs a recomputation)
            return None

    def keep(self, key: str, entry: dict) -> bool:
        """Store ``entry`` (CPU tensors, lists, dicts, strings, numbers) under ``key``, in the store folder the
        batch made. Best effort: an entry that cannot be written (a full disk, a folder this machine lacks, a
        judge on another host, a value torch will not save) costs the other checks a recomputation, never this
        check's verdict. Whether it was kept."""
        target = self.folder / key
        if target.exists():
            return False  # a check beside this one kept it first (a batch's first --jobs checks all compute)
        try:
            buffer = io.BytesIO()
            torch.save(entry, buffer)
            nonce = secrets.token_bytes(NONCE_BYTES)
            blob = nonce + _cipher(self.secret).encrypt(nonce, buffer.getvalue(), key.encode())
            if shutil.disk_usage(self.folder).free < 4 * len(blob):
                return False
            part = self.folder / f".{key}.{secrets.token_hex(4)}"
            part.write_bytes(blob)
            os.replace(part, target)  # whole or absent: a reader never sees half an entry
        except Exception:  # noqa: BLE001  (see above: sharing is an optimisation, never a failure)
            return False
        return True

    def finding(self) -> Finding | None:
        if not self.looked:
            return None
        return Finding(code="shared_reference", severity="info", message=(
            f"{self.found} of the {self.looked} float64 truths this check needed came from this batch's store "
            "(computed once for the batch's candidates of this problem, which are served the same secret inputs, "
            f"and matched to this check's inputs by their bits); {self.kept} computed here were kept for the others"
            + ("; the trivial-answer probe of the first test came from the store too" if self.probe_recalled else "")))


def _cipher(secret: bytes):
    # imported here: only a batch's judges encrypt, and a one-shot check's judge boots without it
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    return AESGCM(hmac.new(secret, b"store encryption", hashlib.sha256).digest())


class NotFingerprinted(TypeError):
    """A value fingerprint cannot describe exactly (a NumPy array, an object): that case is not shared."""


def _exactly(value: Any) -> Any:
    raise NotFingerprinted(f"{type(value).__name__} is not fingerprinted")


def fingerprint(*parts: Any) -> str:
    """A digest of everything given: tensors by their dtype, shape, strides and bits (tensors.digest, on the
    device), everything else by its JSON text; raises NotFingerprinted for anything else (a NumPy array's repr
    is cut short, so two arrays could read the same). The bits' digest is a weighted sum modulo 2**64, not a
    cryptographic hash: the inputs come from trusted code, so it must tell apart values that differ by
    accident (a generator that is not deterministic), which it does."""
    digest = hashlib.sha256()
    for part in parts:
        leaves = tensors.leaves(part)
        shape = tensors.tree_map(lambda t: [str(t.dtype), list(t.shape), list(t.stride())], part)
        digest.update(json.dumps(shape, sort_keys=True, default=_exactly).encode())
        bits = [tensors.element_bits(t).reshape(-1) for _, t in leaves]
        digest.update(json.dumps(tensors.digest(bits)).encode())
    return digest.hexdigest()


# --- a Truth to and from an entry --------------------------------------------------------------------
def to_entry(truth: Truth) -> dict:
    cpu = lambda tree: tensors.tree_map(lambda t: t.detach().cpu(), tree)  # noqa: E731
    return {"ref64": cpu(truth.ref64), "magnitude": cpu(truth.magnitude),
            "terms": [[t.k, t.via] for t in truth.terms], "buffers_after": cpu(truth.buffers_after),
            "findings": [f.model_dump() for f in truth.findings]}


def from_entry(entry: dict, place, terms_type) -> Truth:
    """``place``: where each tensor goes (the device, or pinned host memory where memory is tight)."""
    moved = lambda tree: tensors.tree_map(place, tree)  # noqa: E731
    ref64, magnitude = entry["ref64"], entry["magnitude"]
    return Truth(ref64=moved(_as_pair(ref64)), magnitude=moved(_as_pair(magnitude)),
                 terms=[terms_type(float(k), str(via)) for k, via in entry["terms"]],
                 findings=[Finding(**f) for f in entry["findings"]], buffers_after=entry["buffers_after"])


def _as_pair(value: Any) -> tuple[Any, list[torch.Tensor]] | None:
    """float64_run.run's (output, inputs after) pair: saving made the tuple's list a list, kept so."""
    return None if value is None else (value[0], list(value[1]))
