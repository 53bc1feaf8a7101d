"""The loop itself: ``optimizer.py`` drives a run (baseline, the A/A run, each candidate evaluated once,
promotion on a confirmed significant gain); the parts that act for an island see it only through the
``Ledger`` Protocol (ledger.py), so none of them imports the driver:

    conversation.py   a model's sessions on one island and the restart ladder between them (a CLI agent's too)
    islands.py        several lineages at once, each in its own thread
    migrate.py        code moving between islands only as a confirmed incumbent
    tune_step.py      the tune agent on an island's incumbent, its winner promoted
    lessons.py        structured lessons, rendered into a restart's brief
    run_endpoint.py   the run's own MCP endpoint that a CLI agent's ``propose`` calls come back through
"""
