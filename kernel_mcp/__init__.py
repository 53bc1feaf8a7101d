"""kernel_mcp: compile, check, profile and keep GPU kernels written by AI agents (see README.md)."""

__version__ = "0.1.0"
# the name MCP clients know the server by: their tools are mcp__kernel-mcp__<tool> (Codex: kernel_mcp)
SERVER_NAME = "kernel-mcp"
