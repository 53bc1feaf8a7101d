"""The only place candidate code runs.

Three processes, trust decreasing inward:

caller (CLI / MCP server; never imports problem or candidate code)
  -> judge (``python -m kernel_mcp.worker.judge``; trusted): imports reference.py, makes inputs from fresh
     secret seeds, computes float64 references, compares, decides. Non-dumpable, so a same-user candidate
     cannot read its memory or file descriptors. Reports to the caller on a private pipe, every message
     authenticated with an HMAC key the caller sent on stdin.
     -> candidate host (``python -m kernel_mcp.worker.candidate_host``; untrusted): imports the candidate and
        only ever runs ``custom_kernel`` on tensors it receives (shared memory on CPU, CUDA IPC on GPU).
        Allowlisted environment, scratch directory as cwd/HOME/TMPDIR, no ptrace capability when root.
        What it sends back is unpickled by a restricted unpickler that only rebuilds plain tensors.
"""
