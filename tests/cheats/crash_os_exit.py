"""Crash kind: ``os._exit(0)`` inside custom_kernel: the process vanishes with status 0 and no output."""
import os


def custom_kernel(data):
    os._exit(0)
