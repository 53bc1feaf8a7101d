"""Crash kind: hang forever inside custom_kernel (a deadlock, or a kernel that never finishes)."""
import time


def custom_kernel(data):
    while True:
        time.sleep(3600)
