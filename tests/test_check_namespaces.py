"""The namespaces of each check's own (worker/isolation/check_namespaces.py): the user-namespace path, which a
process cannot leave once in it, is tried in a throwaway child first, so a machine that would leave the
judge unable to create a file (a map that cannot be written) keeps the machine's namespaces instead. What
the namespaces stop is tested through real checks in tests/test_batch.py (the colluding pair, the phone)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kernel_mcp.worker.isolation import check_namespaces, sandbox


def _user_namespaces_allowed() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).unshare(0x10000000))"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "0"


def test_a_throwaway_child_answers_and_changes_nothing_here():
    assert sandbox.true_in_a_child(lambda: True)
    assert not sandbox.true_in_a_child(lambda: False)
    assert not sandbox.true_in_a_child(lambda: 1 / 0)  # an exception in the child is a no

    def change_here() -> bool:
        os.environ["KERNEL_MCP_CHILD_ONLY"] = "1"
        return True
    assert sandbox.true_in_a_child(change_here) and "KERNEL_MCP_CHILD_ONLY" not in os.environ


@pytest.mark.skipif(not _user_namespaces_allowed(), reason="this machine allows no user namespace")
def test_the_user_namespace_path_is_tried_before_it_is_taken():
    before = os.readlink("/proc/self/ns/user"), os.readlink("/proc/self/ns/mnt")
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0 or check_namespaces._can_map_self(uid):
        assert check_namespaces._works_in_a_child(uid, gid)  # maps itself, mounts a tmpfs, creates a file
    # a map it may not write (another user's id): found out in the child, so the judge would not go in
    assert not check_namespaces._works_in_a_child(uid + 1, gid + 1)
    assert (os.readlink("/proc/self/ns/user"), os.readlink("/proc/self/ns/mnt")) == before
