"""Cheat: raises on an input it has seen, so that the determinism repeat gives no output to compare and the
property goes unmeasured: a kernel whose bits move from call to call would hide so from a task that declares
``deterministic: true`` (problems/vector_add; exact otherwise)."""
import hashlib

_SEEN = set()


def custom_kernel(data):
    a, b = data
    key = hashlib.blake2b(a.numpy().tobytes() + b.numpy().tobytes(), digest_size=16).digest()
    if key in _SEEN:
        raise RuntimeError("transient failure")
    _SEEN.add(key)
    return a + b
