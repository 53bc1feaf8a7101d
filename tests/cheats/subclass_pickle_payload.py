"""Cheat: an output whose pickle runs code in the judge (pygpubench: forging the result channel).

``__reduce__`` asks the unpickler to call ``os.system`` with a command that would drop a marker file (and,
in a real attack, patch the judge). The judge's restricted unpickler must refuse it: expected verdict
forged, and the marker file never appears.
"""
import os

MARKER = "/tmp/kernel_mcp_cheats_pickle_payload.marker"


class Payload:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


def custom_kernel(data):
    return Payload()
