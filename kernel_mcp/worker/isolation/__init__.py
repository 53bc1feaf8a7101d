"""What every untrusted process gets:

    sandbox.py       allowlisted environment, scratch HOME, limits, a run token, its own PID and mount
                     namespace where the OS allows; trusted processes hardened (non-dumpable, a subreaper)
    mounts.py        every file system read-only inside but the scratch; what a process can write, read by
                     the trusted side
    proctree.py      a process's whole tree found through /proc, and ended
    kernel_cache.py  kernel build caches per candidate, so no candidate plants a build another one uses
"""
