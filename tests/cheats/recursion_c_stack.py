"""Crash kind: unbounded recursion in C with the recursion limit lifted: ``repr`` of a list nested two
million deep overflows the C stack (SIGSEGV), as a runaway recursive kernel launcher or a deep C++
template instantiation at run time would. (Plain Python recursion would not: since 3.11 it grows the
heap, not the C stack.)"""
import sys


def custom_kernel(data):
    sys.setrecursionlimit(1 << 30)
    nested = []
    for _ in range(2_000_000):
        nested = [nested]
    return repr(nested)
