"""Cheat (skipped terms): the K loop stops one block of 32 early where k is not a multiple of 32, or drops the
last block where it is."""
import torch


def custom_kernel(data):
    a, b = data
    k = a.shape[1]
    stop = (k - 1) // 32 * 32
    return a[:, :stop] @ b[:stop, :]
