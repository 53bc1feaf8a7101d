"""The headless orchestrator behind ``kernel-mcp optimize`` and ``kernel-mcp report``:

    command.py       open or resume a run folder, check the request, drive the loop
    run/             what a run knows, durably: the journal, the state derived from it, the folder, budgets
    loop/            the loop: baseline, evaluations, promotion, the model's sessions and the restart ladder,
                     islands, the tune agent's step; its parts see the driver through one Protocol (Ledger)
    report/          a run shown: its summary, timing decisions, Markdown/HTML report, plots, live view
    edits.py         a model's change (search/replace blocks or a whole file, all or nothing) and the
                     ``propose`` tool it arrives through
    decide.py        the significance rule for paired speedups of interleaved timings
    compare.py       two candidate files timed against each other by profile
    providers/       one Session interface over Anthropic Messages, OpenAI Responses and Chat Completions,
                     and whole CLI agents (claude -p, codex exec); normalised usage; the pricing table
    tune/            the model-free tuner: parameters from a Triton source, halving and coordinate descent, a
                     driver over the real profile tool

The stall signals and the restart ladder live with the snapshots (``kernel_mcp/history/``), shared with the
MCP server's ``status`` tool.
"""
