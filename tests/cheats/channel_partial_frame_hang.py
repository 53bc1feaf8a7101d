"""Cheat/DoS: write the start of a message frame on the result socket, then stall.

The judge talks to the candidate host over a ``multiprocessing.connection`` socket (4-byte length, then
the pickle). This writes a header announcing 1000 bytes and only 10 of them, then sleeps STALL_S before
writing the other 990 (garbage). A judge that reads a frame without a deadline once its first byte has
arrived is stuck past the task's call timeout for as long as the candidate likes (without the second
write: until the caller's overall timeout, half an hour by default). Expected: a failed verdict within
about the call timeout.
"""
import os
import struct
import sys
import time

STALL_S = 60.0
FRAME = 1000


def custom_kernel(data):
    a, b = data
    fd = int(sys.argv[1])  # the candidate host's end of the socket (candidate_host FD)
    head = b"\x80\x04" + b"\x00" * 8
    os.write(fd, struct.pack("!i", FRAME) + head)
    time.sleep(STALL_S)
    os.write(fd, b"\x00" * (FRAME - len(head)))  # complete the frame: the judge reads garbage, not a hang
    time.sleep(STALL_S)
    return a + b
