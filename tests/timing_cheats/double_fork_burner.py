"""Slows the reference down (CPU cheat) where the candidate has no PID namespace of its own: a
double-forked daemon re-parents to the judge (a subreaper), leaves the candidate's process tree and so is
never sent SIGSTOP. It spins on every core while the candidate host is stopped (= the judge is timing
the reference). The kernel itself is honest. Each time the host is seen stopped, it appends the CPU time it
then spent spinning to ``burner.log`` in the tests' state folder (KERNEL_MCP_TEST_STATE_DIR), so a test can
tell whether it ran while the reference was timed without reading a timing."""
import os
import subprocess
import sys


BURNER = r'''
import os, sys, threading, time
host, log = int(sys.argv[1]), sys.argv[2]
if os.fork():
    os._exit(0)  # double fork: the burner is an orphan now
os.setsid()
def stopped():
    try:
        with open(f"/proc/{host}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except OSError:
        os._exit(0)
spun = None  # CPU seconds spun in this episode (the host seen stopped), None between episodes
while True:
    if stopped():
        spun = spun or 0.0
        cpu, t = time.process_time(), time.monotonic()
        while time.monotonic() - t < 0.001:
            pass
        spun += time.process_time() - cpu
    else:
        if spun is not None and log:
            with open(log, "a") as f:
                f.write(f"{spun:.6f}\n")
        spun = None
        time.sleep(0.0002)
'''
STATE = os.environ.get("KERNEL_MCP_TEST_STATE_DIR", "")
LOG = os.path.join(STATE, "burner.log") if STATE else ""
for _ in range(os.cpu_count()):
    subprocess.Popen([sys.executable, "-S", "-c", BURNER, str(os.getpid()), LOG]).wait()


def custom_kernel(data):
    a, b = data
    return a @ b if a.dim() == 2 else a + b
