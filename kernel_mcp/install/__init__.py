"""Setting up coding agents to use kernel_mcp (``kernel-mcp install``, ``python -m kernel_mcp.install
--generate``):

    command.py       install for one client; regenerate the checked-in agent files
    clients.py       Claude Code, Codex, Cursor: where each keeps its MCP config, skills and permissions
    files.py         editing their JSON and TOML files safely (a plan first, nothing half written)
    agent_files.py   the files derived from skills/ (AGENTS.md, .cursor/rules, the Claude Code plugin)
"""
