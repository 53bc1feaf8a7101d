"""The ``kernel-mcp`` command line (also ``python -m kernel_mcp``): ``launch.py`` is the entry point (it starts
a one-shot check's judge before anything heavy is imported, then calls ``main.py``), ``app.py`` the frame
every command registers on, and one module per family of commands:

    instruments.py   check, profile, roofline, compile, calibrate, serve, install
    snapshots.py     evaluate, snapshot, history, diff, restore, status
    optimize.py      optimize, report (the unattended loop)
    demo.py          demo (the bundled problems' baselines, checked)
"""
