"""What a run knows, durably: everything here survives ``kill -9`` and a ``--resume``.

    journal.py   the fsynced append-only journal, one record per event
    records.py   the records, one model per kind (strict when written, lenient to old fields when read)
    state.py     the state derived from the journal alone (incumbents, evaluations, spend)
    folder.py    the run folder: run.json, lock and heartbeat, the evaluation cache
    budget.py    evaluations, seconds and dollars a run may spend
    facts.py     what the journal establishes: confirmed gains, their ranking, epochs without a gain
"""
