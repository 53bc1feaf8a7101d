"""System calls a process that runs candidate code may not make, refused by a seccomp filter installed before
its exec (inherited by everything it starts, and never removable).

The kernel's key retention service: ``add_key``, ``request_key``, ``keyctl``. Keys in the per-user keyring
belong to the user namespace, which a root candidate shares with every other check on the machine; they
outlive the process that added them. A writer left each answer there and a reader judged after it in the same
batch served them (a review's ``keyring`` pair, twenty-fourth session; tests/test_batch.py). Nothing a kernel
does needs them. Each is answered EPERM, for every ABI a process on this machine can call it through (x86-64,
its x32 numbers, i386 by ``int 0x80``; AArch64 and 32-bit ARM): the filter reads the call's architecture.
"""
from __future__ import annotations

import ctypes
import platform

# linux/audit.h architectures, and the keyring calls' numbers in each (arch/*/syscall tables)
_KEYRING_CALLS = {
    0xC000003E: (248, 249, 250, 0x40000000 | 248, 0x40000000 | 249, 0x40000000 | 250),  # x86-64 and x32
    0x40000003: (286, 287, 288),  # i386
    0xC00000B7: (217, 218, 219),  # AArch64
    0x40000028: (309, 310, 311),  # ARM (EABI)
}
_NATIVE = {"x86_64": (0xC000003E, 0x40000003), "aarch64": (0xC00000B7, 0x40000028)}

# linux/filter.h and linux/seccomp.h
_LD_W_ABS, _JEQ_K, _RET_K = 0x20, 0x15, 0x06
_ARCH_OFFSET, _NR_OFFSET = 4, 0  # struct seccomp_data: int nr; __u32 arch; ...
_ALLOW, _ERRNO_EPERM = 0x7FFF0000, 0x00050000 | 1
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter))]


def program() -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k): for each architecture this machine runs, a block that loads the call's
    architecture, skips the block on another, loads its number and jumps to the EPERM return on a keyring call;
    past the last block, ALLOW. BPF jumps count the instructions skipped."""
    arches = [a for a in _NATIVE.get(platform.machine(), ()) if a in _KEYRING_CALLS]
    size = sum(3 + len(_KEYRING_CALLS[a]) for a in arches)
    deny = size + 1  # the EPERM return, after ALLOW
    ops: list[tuple[int, int, int, int]] = []
    for arch in arches:
        calls = _KEYRING_CALLS[arch]
        ops += [(_LD_W_ABS, 0, 0, _ARCH_OFFSET), (_JEQ_K, 0, len(calls) + 1, arch), (_LD_W_ABS, 0, 0, _NR_OFFSET)]
        ops += [(_JEQ_K, deny - (len(ops) + i) - 1, 0, nr) for i, nr in enumerate(calls)]
    return ops + [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _ERRNO_EPERM)]


def deny_keyring() -> bool:
    """Install the filter in this process (after PR_SET_NO_NEW_PRIVS); whether the kernel took it."""
    ops = program()
    if len(ops) <= 2:  # an architecture not listed: nothing to refuse by number
        return False
    table = (_Filter * len(ops))(*[_Filter(*op) for op in ops])
    prog = _Program(len(ops), table)
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0
