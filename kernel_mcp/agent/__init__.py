"""The headless orchestrator behind ``kernel-mcp optimize`` and ``kernel-mcp report``:

    command.py                         open or resume a run folder, check the request, drive the loop
    loop.py tuning.py                  baseline, each candidate evaluated once, promotion on a confirmed
                                       significant gain; the tune agent on the baseline and after each win
    conversation.py islands.py         a model's sessions and the restart ladder between them (nudge, fresh
                                       session, from scratch, stop); several lineages, parents by the lower
                                       confidence bound, code moving only as confirmed incumbents
    runlog.py state.py run_folder.py   a run's durable record: the fsynced journal, the state derived from
                                       it alone, the folder (run.json, lock + heartbeat, evaluation cache)
    budget.py decide.py compare.py     budgets; paired speedups of interleaved timings, the significance
                                       rule; two candidate files timed against each other by profile
    edits.py lessons.py                a model's change (search/replace blocks or a whole file, all or
                                       nothing); structured lessons rendered into a restart's brief
    summary.py report.py report_plots.py progress.py   a run's outcome, its Markdown/HTML report and plots,
                                       the live terminal view
    decisions.py                       every timing decision (A/A run, tuner comparisons) and why none counted
    providers/                         one Session interface over Anthropic Messages, OpenAI Responses and
                                       Chat Completions; normalised usage; the pricing table
    tune/                              the model-free tuner: parameters from a Triton source, halving and
                                       coordinate descent, a driver over the real profile tool

The stall signals and the restart ladder live beside the snapshots (``kernel_mcp/stall.py``), shared with
the MCP server's ``status`` tool; duplicate detection in ``kernel_mcp/novelty.py``. Not yet here: whole CLI
agents (``claude -p``, ``codex exec``) as agents of the loop.
"""
