"""The CALLER's handles on every process it starts (with worker/isolation/sandbox.py, host/factory.py and
judge/session.py, the only modules that start processes):

    judge.py        a judge: started (or taken warm), one request sent, its signed messages read, its tree
                    ended; ``prestart`` starts a one-shot check's judge before the CLI imports anything heavy
    env.py          a judge's boot command, sys.path and environment
    step.py         a compile step's untrusted host (worker/steps/)
    fork_client.py  the caller's fork server: judges and step hosts forked from a clean, isolated copy of the
    fork_server.py  harness with torch imported (the server itself never holds a secret)
    toolchain.py    trusted compilers and binary tools (nvcc, hipcc, cuobjdump...): never raise, never hang
    counters.py     ncu / rocprofv3 around worker/steps/counter_target.py
    agent.py        a CLI agent's process (claude -p, codex exec) for one episode
"""
