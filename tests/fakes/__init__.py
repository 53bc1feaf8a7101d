"""Loopback stand-ins for model APIs, so that real coding clients (Claude Code, Codex) can be driven end to end
in tests without a network or an account. Each fake speaks the real wire protocol and plays a fixed script."""
