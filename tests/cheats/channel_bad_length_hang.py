"""Cheat/DoS: write a frame header with an absurd length on the result socket, then stall.

The judge rejects the length (OSError "bad message length") and then waits up to 5 s for the candidate
process to exit; this one does not exit. Expected: a failed verdict that blames the candidate (crash,
forged or timeout), not a harness error.
"""
import os
import struct
import sys
import time

STALL_S = 12.0


def custom_kernel(data):
    a, b = data
    fd = int(sys.argv[1])
    os.write(fd, struct.pack("!i", 0x7FFFFFF0))
    time.sleep(STALL_S)
    return a + b
