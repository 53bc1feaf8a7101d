"""kernel_mcp: compile, check, profile and keep GPU kernels written by AI agents (see README.md)."""

__version__ = "0.1.0"
