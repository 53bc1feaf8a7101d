"""A run shown to people, read from its journal (never from the loop's memory):

    summary.py     the outcome: the best kernel, its confirmed gain, spend, why the run ended
    decisions.py   every timing decision (the A/A run, the tuner's comparisons) and why none counted
    report.py      the Markdown and HTML report
    plots.py       speedup over evaluations and time, per island
    progress.py    the live terminal view of a running search
"""
