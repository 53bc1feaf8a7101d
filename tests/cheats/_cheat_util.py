"""Shared by several fixtures (not a candidate): /proc walking in /proc's own pid numbering, and a double
fork + setsid daemon with a bounded lifetime, so a daemon that escapes the harness still ends on its own."""
import ctypes
import os
import time

# where daemons report (pids, heartbeats, markers): chosen by the tests (conftest.CHEATS_STATE) and passed in
# the environment; a fixture run without it fails rather than report where no test looks
STATE_DIR = os.environ["KERNEL_MCP_TEST_STATE_DIR"]


def write_atomic(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def parent_of(pid):
    stat_line = open(f"/proc/{pid}/stat").read()
    return int(stat_line[stat_line.rfind(")") + 2:].split()[1])


def own_pid():
    """This process's pid as /proc (and the tests) see it, also inside a PID namespace of the harness,
    where ``os.getpid()`` is a namespace-local number."""
    return int(os.readlink("/proc/self"))


def ancestors(levels=4):
    """(pid, command line) of this process's ancestors, nearest first, in /proc's numbering."""
    found, pid = [], own_pid()
    for _ in range(levels):
        try:
            pid = parent_of(pid)
            if pid <= 1:
                break
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found.append((pid, f.read()))
        except (OSError, ValueError, IndexError):
            break
    return found


MAX_REGION = 1 << 30  # larger writable mappings are reservations, not objects worth reading


def maps(pid):
    """(start, end, permissions, file offset, path) of each mapping of ``pid`` ("self" for this process)."""
    regions = []
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        start, end = (int(x, 16) for x in parts[0].split("-"))
        regions.append((start, end, parts[1], int(parts[2], 16), parts[5] if len(parts) > 5 else ""))
    return regions


def readable_regions(pid):
    """The bytes of each writable mapping of ``pid`` that /proc/<pid>/mem lets this process read: the heap,
    anonymous memory, the stack, loaded files' data, where a Python object or a buffer would be (not
    [vvar]/[vsyscall], which cannot be read this way)."""
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for start, end, perms, _, path in maps(pid):
            if not perms.startswith("rw") or end - start > MAX_REGION or path.startswith("[v"):
                continue
            try:
                mem.seek(start)
                yield mem.read(end - start)
            except OSError:
                continue


def scrub_environ():
    """Zero this process's initial environment block, the memory /proc/<pid>/environ shows, so that a
    harness looking for leftover processes by an inherited environment variable no longer finds it."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    env_start, env_end = int(fields[47]), int(fields[48])  # stat fields 50 and 51
    if 0 < env_start < env_end:
        ctypes.memset(env_start, 0, env_end - env_start)


def spawn_daemon(body, lifetime_s=60.0, heartbeat=None):
    """Run ``body()`` in a detached grandchild (new session, stdio on /dev/null, no inherited fds); the
    grandchild exits after ``lifetime_s`` whatever happens. Returns in the caller at once. While it lives
    it rewrites ``heartbeat`` every 0.1 s: a pid means nothing to the tests when the harness runs the
    candidate in its own PID namespace, a heartbeat that stops does."""
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork() == 0:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, 4096)
                deadline = time.monotonic() + lifetime_s
                body(deadline)
                while time.monotonic() < deadline:
                    if heartbeat:
                        write_atomic(heartbeat, str(time.time()))
                    time.sleep(0.1)
            finally:
                os._exit(0)
    finally:
        os._exit(0)
