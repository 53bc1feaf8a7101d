"""The TRUSTED judge: an isolated interpreter (``python -S -I``, non-dumpable) that makes the verdict and
reports it on a private pipe, each line HMAC-signed. It never imports the untrusted host's main module.

    the process        start.py (torch and the host factory before the key), main.py (boot, Ready, one
                       request), context.py (the request, device, hosts, the signed reporter), warm.py
    its hosts          hosts.py (started before any candidate is known), session.py (one host: inputs in,
                       outputs and failures back)
    check              check.py (the plan and the verdict), case.py (one case), outputs.py (one output: form,
                       inputs untouched, values), footprint.py (device memory, known first), parking.py
                       (tensors parked in pinned host memory)
    the truth          reference.py (inputs, roles, expected outputs), roles.py (what the reference does with
                       each input), shapes.py (a shape the task does not list), float64_run.py,
                       reduction_trace.py, expected_leaves.py, dispatch_mode.py, numerics.py
    the comparison     tolerance.py (bounds derived from arithmetic), tally.py, noise_floor.py, properties.py,
                       contract.py (what the problem's own benchmark would say), degenerate.py (a problem a
                       trivial answer passes)
    why it failed      causes.py (from the output's values), precision_probe.py, reruns.py (from the
                       pattern of cases and calls made again)
    properties         repeat.py (the first test again, once every case passed, in fresh hosts where
                       needed), determinism.py, batch_invariance.py, properties.py
    profile            profile.py (turns, flushes, the reference timed here), verdict.py (figures, integrity
                       findings, the verdict), flush.py
"""
