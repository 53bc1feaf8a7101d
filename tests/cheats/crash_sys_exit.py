"""Crash kind: ``sys.exit(0)`` inside custom_kernel (a "clean" exit a naive harness reads as success)."""
import sys


def custom_kernel(data):
    sys.exit(0)
