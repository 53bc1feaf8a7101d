"""The headless orchestrator, being built (``kernel-mcp optimize`` does not exist yet). What is here:

    loop.py conversation.py            one island: baseline, proposals evaluated once, promotion on a
                                       confirmed significant gain, lessons; a model's sessions and the
                                       restart ladder between them (nudge, fresh session, from scratch, stop)
    runlog.py state.py run_folder.py   a run's durable record: the fsynced journal, the state derived from
                                       it alone, the folder (run.json, lock + heartbeat, evaluation cache)
    decide.py compare.py               paired speedups of interleaved timings; the significance rule; two
                                       candidate files timed against each other by the profile tool
    edits.py                           a model's change: search/replace blocks or a whole file, all or nothing
    lessons.py                         structured lessons, rendered into a restart's brief
    providers/                         one Session interface over Anthropic Messages, OpenAI Responses and
                                       Chat Completions; normalised usage; the pricing table
    tune/                              the model-free tuner: parameters from a Triton source, halving and
                                       coordinate descent, a driver over the real profile tool

The stall signals and the restart ladder live beside the snapshots (``kernel_mcp/stall.py``), shared with
the MCP server's ``status`` tool; duplicate detection in ``kernel_mcp/novelty.py``. Still to come: the
islands, the tune agent inside the loop, the CLI agents (``claude -p``, ``codex exec``), the ``optimize`` and
``report`` commands.
"""
