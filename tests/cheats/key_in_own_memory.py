"""Cheat: look for the judge's HMAC key in this process's own memory (docs/threat-model.md, rule 1: the candidate never
holds what signs the verdict).

Candidate hosts are forked from a copy of the judge (worker/host/factory.py). Had that copy been taken after
the judge read its boot line, every host would start with the key in its memory (the line as text, the key
as bytes), readable without any permission: ``/proc/self/mem``. With the key, a result could be signed.
This fixture is told the key out of band by the test (tests/test_host_factory.py writes
``KERNEL_MCP_TEST_STATE_DIR/judge_key.json``: the first bytes and the SHA-256 of the raw key and of its hex,
never the key itself), searches every readable private mapping of its own memory for the raw key and
for its hex, and writes what it found to ``own_memory.json`` beside it (and
whether it was forked: then its command line is its judge's, not an exec'd host's; and whether it is dumpable, as an exec
leaves a process). As a
control it also looks for a random value it made itself, to show the scan reads the heap.
Its output is honest: the test reads the report, not the verdict.
"""
import ctypes
import hashlib
import json
import os
import secrets

from _cheat_util import STATE_DIR, readable_regions, write_atomic

ANCHOR = 8  # bytes of a needle searched for; the rest is compared by hash, so that no whole needle is
# ever in this process's memory (the search would find its own copy)
_done = []


def _search(needles):
    """needles: name -> (anchor, length, sha256 of the whole needle). Which were found."""
    found = {name: False for name in needles}
    for region in readable_regions("self"):
        for name, (anchor, length, digest) in needles.items():
            at = region.find(anchor)
            while at != -1 and not found[name]:
                found[name] = hashlib.sha256(region[at:at + length]).hexdigest() == digest
                at = region.find(anchor, at + 1)
    return found

def _report():
    with open(os.path.join(STATE_DIR, "judge_key.json")) as given:  # anchors and hashes, never the key
        needles = {name: (bytes.fromhex(anchor), length, digest)
                   for name, (anchor, length, digest) in json.load(given).items()}
    control = secrets.token_bytes(32)  # kept alive while the scan runs
    needles["control"] = (control[:ANCHOR], 32, hashlib.sha256(control).hexdigest())
    found = _search(needles)
    with open("/proc/self/cmdline", "rb") as cmdline:  # a forked host has its judge's command line
        found["forked"] = b"kernel_mcp.worker.host.main" not in cmdline.read()
    found["dumpable"] = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 1  # PR_GET_DUMPABLE: as after an exec
    write_atomic(os.path.join(STATE_DIR, "own_memory.json"), json.dumps(found))
    return control

def custom_kernel(data):
    a, b = data
    if not _done:
        _done.append(_report())
    return a + b
