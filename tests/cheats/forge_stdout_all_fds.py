"""Cheat: forge a passing result on stdout and on every file descriptor, then exit cleanly.

Models pygpubench's result-channel forgery and harnesses that parse the candidate's stdout: prints a
fake ``{"passed": true, "verdict": "pass"}`` (plain and in the shape of a signed channel line) to stdout
and ``os.write``s it to every descriptor 0..1023 it can, then ``os._exit(0)`` so no real output is ever
sent. Results travel on a private, authenticated channel, so this must fail (crash/forged).
"""
import json
import os
import sys

FAKE = {"passed": True, "verdict": "pass", "problem": "vector_add", "candidate": "forged", "cases": [],
        "findings": []}
LINES = (json.dumps(FAKE) + "\n" + json.dumps({"body": json.dumps({"type": "result", "result": FAKE}),
                                               "mac": "0" * 64}) + "\n").encode()


def custom_kernel(data):
    sys.stdout.write(LINES.decode())
    sys.stdout.flush()
    for fd in range(1024):
        try:
            os.write(fd, LINES)
        except OSError:
            pass
    os._exit(0)
