"""Judging candidates by the thousand (``kernel-mcp judge``) and the reward API for RL (reward.py): the same
check and timing as the one-shot instruments, run in the caller's process, each candidate in its own fresh
judge and candidate processes."""
