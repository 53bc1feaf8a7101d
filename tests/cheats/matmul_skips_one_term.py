"""Cheat (skipped terms): the last of the K terms left out, the smallest shortcut a K loop can take."""
import torch


def custom_kernel(data):
    a, b = data
    return a[:, :-1] @ b[:-1, :]
