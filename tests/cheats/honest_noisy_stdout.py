"""Honest control: computes correctly but prints a forged *failing* JSON result and a lot of noise to
stdout/stderr. The candidate's output is only logs, so this must still pass."""
import json
import sys


def custom_kernel(data):
    a, b = data
    print(json.dumps({"passed": False, "verdict": "fail: mismatch"}))
    sys.stderr.write("x" * 100_000 + "\n")
    return a + b
