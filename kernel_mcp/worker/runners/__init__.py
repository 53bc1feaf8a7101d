"""The CALLER choosing where a request runs (the CLI, the MCP server, optimize: never imports problem or
candidate code). Every runner keeps the contract in base.py:

    local.py    this machine: the file guard, the device's lease, judges and step hosts started (warm ahead of
                need for a long-lived caller), results read from their signed channels
    pool.py     a warm LocalRunner per GPU behind one queue; ``runner_for`` picks what a command asked for
    ray.py      judges as Ray tasks on a cluster, the runner and everything below it on a worker node
    guard.py    files the harness relies on, copied before a run and restored after it
    redact.py   the caller's secrets kept out of every result
"""
