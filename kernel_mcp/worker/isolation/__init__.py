"""What every untrusted process gets:

    sandbox.py       allowlisted environment, scratch HOME, limits, a run token, its own PID and mount
                     namespace where the OS allows; trusted processes hardened (non-dumpable, a subreaper)
    mounts.py        every file system read-only inside but the scratch, other processes' folders covered;
                     what a process can write, read by the trusted side
    folders.py       where such processes write (a scratch and a temporary folder each), and the roots of
                     those folders each must not see
    syscalls.py      a seccomp filter: the kernel keyring's calls refused
    proctree.py      a process's whole tree found through /proc, and ended
    kernel_cache.py  kernel build caches per candidate, so no candidate plants a build another one uses
"""
