"""The only place candidate code runs, behind one door: ``runner.py``.

Processes, trust decreasing inward:

caller (CLI, MCP server; never imports problem or candidate code) holds a *runner* (runner.py): it
  guards the files the harness relies on where candidates could write them, takes the device's lease
  (lease.py: exclusive for timing, shared for checks while their memory fits), starts the processes below
  and reads their results. Messages are typed (protocol.py) and validated where they arrive. Judges and
  step hosts are forked from its fork server (fork_server.py: an isolated interpreter with torch and the
  harness imported, which never holds a secret), or started as fresh interpreters where it cannot be used.
  Several GPUs: a pool of runners, one per GPU, each pinned to it, behind one queue (pool.py); a Ray
  cluster: the runner and everything below it run on a worker node, one Ray task per judge (ray_pool.py).
  -> judge (``judge.py``; trusted): started isolated (``python -S -I``), non-dumpable. Boots first
     (judge_start.py imports torch and forks the factory its candidate hosts are forked from before it
     reads its boot line, then starts them from that line: host_factory.py; warm.py pays
     torch's and Triton's first-use costs), says Ready, then
     serves one JudgeRequest: imports reference.py (reference_runtime.py; kernelbench.py adapts
     KernelBench files), measures what the check needs of the device (footprint.py: the caller resizes
     its lease reservation), makes inputs from fresh secret seeds, measures what the reference does with
     each input on every case (roles.py), adds a shape the task does not list (shapes.py), computes
     float64 references (float64_run.py, counting each output's summed terms: reduction_trace.py;
     expected_leaves.py), runs each case (case_run.py) and compares (outputs.py), probes for a degenerate
     problem (degenerate.py), names a failure's cause (causes.py, precision_probe.py), applies the problem's
     benchmark's own contract beside its verdict (contract.py), decides (check_run.py, profile_run.py,
     profile_verdict.py). While timing it flushes
     the caches itself (flush.py) and fails a call that left code to run after the clock (aftercall.py).
     Reports on a private pipe, each line HMAC-signed (channel.py; client.py is the caller's side).
     -> candidate host (``candidate_host.py``; untrusted; session.py is the judge's side): boots with
        harness code only, then imports exactly one candidate and runs ``custom_kernel`` on tensors it
        receives (shared memory on CPU, CUDA IPC on GPU). What it sends back is unpickled by a restricted
        unpickler that rebuilds plain tensors only.
  -> step host (``step_host.py``; untrusted; steps.py is the caller's side): one compile step (record
     Triton launches, build them per target, capture C++ sources) for one candidate, JSON over a socket.

Every untrusted process (sandbox.py): allowlisted environment, a scratch HOME, its own kernel build caches
(kernel_cache.py), its own PID and mount namespace where the OS allows (every file system read-only
inside but its scratch and /dev: mounts.py), limits, a run token; it is killed with its whole tree
afterwards.
"""
