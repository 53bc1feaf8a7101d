"""The UNTRUSTED candidate host: forked from the judge's factory (factory.py) before the judge knew any
secret, it boots with harness code only, imports exactly one candidate (load.py) and runs it on tensors it
receives (main.py). Nothing it says is believed; what it sends back is unpickled by a restricted unpickler.

    main.py       the host's loop: run, time, send back
    load.py       the candidate imported, the callable the harness runs (also used by worker/steps/)
    factory.py    the fork server inside the judge that hosts are forked from
    timing.py     one timed call (also the judge's clock for the reference), what a call left running
    aftercall.py  what a call may leave behind to run after the clock stops
    warm.py       torch's, CUDA's and Triton's first-use costs paid at boot
    device_wait.py  how the process waits for its GPU: asleep when booted for a check
"""
