"""Slows the reference down (CPU cheat) where the candidate has no PID namespace of its own: a
double-forked daemon re-parents to the judge (a subreaper), leaves the candidate's process tree and so is
never sent SIGSTOP. It spins on every core while the candidate host is stopped (= the judge is timing
the reference). The kernel itself is honest."""
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
episodes = 0
while True:
    if os.environ.get('KERNEL_MCP_BURN','1')=='1' and stopped():
        episodes += 1
        if log and episodes == 1:
            with open(log, "a") as f:
                f.write(f"escaped: spinning while the host is stopped (ppid {os.getppid()})\n")
        t = time.monotonic()
        while time.monotonic() - t < 0.001:
            pass
    else:
        episodes = 0
        time.sleep(0.0002)
'''
LOG = ""
for _ in range(os.cpu_count()):
    subprocess.Popen([sys.executable, "-S", "-c", BURNER, str(os.getpid()), LOG]).wait()


def custom_kernel(data):
    a, b = data
    return a @ b if a.dim() == 2 else a + b
