"""`kernel-mcp install`: every client and scope into temporary folders (home overridden, never the real ~),
merges that keep the user's content, idempotence, refusals, the generated agent files, and the real
Claude Code and Codex CLIs reading what was written (skipped without node/npm)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from conftest import REPO, repo_pythonpath
from node_tools import node_cli_or_skip

from kernel_mcp.errors import UsageError
from kernel_mcp.install import agent_files as texts
from kernel_mcp.install import command as inst
from kernel_mcp.install.command import CLIENTS, InstallResult, install

SKILL_NAMES = [s.name for s in texts.load_skills()]


@pytest.fixture
def places(tmp_path):
    root, home = tmp_path / "workspace", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return root.resolve(), home.resolve()


def expected_command(root: Path) -> list[str]:
    return [sys.executable, "-m", "kernel_mcp", "serve", "--root", str(root)]


def snapshot_tree(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


def server_entry(path: Path) -> dict:
    return json.loads(path.read_text())["mcpServers"]["kernel-mcp"]


# ---------------------------------------------------------------- every client x scope

def check_claude_code(scope: str, root: Path, home: Path) -> None:
    config = root / ".mcp.json" if scope == "project" else home / ".claude.json"
    entry = server_entry(config)
    assert [entry["command"], *entry["args"]] == expected_command(root)
    skills = (root if scope == "project" else home) / ".claude" / "skills"
    assert sorted(p.parent.name for p in skills.glob("*/SKILL.md")) == sorted(SKILL_NAMES)
    loop = (skills / "kernel-optimization-loop" / "SKILL.md").read_text()
    assert "allowed-tools: mcp__kernel-mcp__compile" in loop and texts.SKILL_MARKER in loop
    settings = root / ".claude" / "settings.local.json" if scope == "project" else home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    assert "mcp__kernel-mcp" in data["permissions"]["allow"]
    if scope == "project":
        assert data["enabledMcpjsonServers"] == ["kernel-mcp"]


def check_codex(scope: str, root: Path, home: Path) -> None:
    folder = root / ".codex" if scope == "project" else home / ".codex"
    server = tomllib.loads((folder / "config.toml").read_text())["mcp_servers"]["kernel-mcp"]
    assert [server["command"], *server["args"]] == expected_command(root)
    assert server["required"] is True and server["default_tools_approval_mode"] == "approve"
    assert server["tool_timeout_sec"] >= 600  # evaluate takes minutes
    agents = ((root if scope == "project" else folder) / "AGENTS.md").read_text()
    assert agents.count("<!-- kernel-mcp:begin") == 1 and agents.count(texts.BLOCK_END) == 1
    assert "## The kernel optimization loop" in agents


def check_cursor(scope: str, root: Path, home: Path) -> None:
    entry = server_entry((root if scope == "project" else home) / ".cursor" / "mcp.json")
    assert [entry["command"], *entry["args"]] == expected_command(root)
    rules = sorted(p.name for p in (root / ".cursor" / "rules").glob("*.mdc")) if scope == "project" else []
    assert rules == (sorted(f"kernel-mcp-{n}.mdc" for n in SKILL_NAMES) if scope == "project" else [])


CHECKS = {"claude-code": check_claude_code, "codex": check_codex, "cursor": check_cursor}


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("client", CLIENTS)
def test_install_writes_config_and_skills_and_is_idempotent(client, scope, places):
    root, home = places
    first = install(client, scope=scope, root=root, home=home)
    assert isinstance(first, InstallResult) and first.client == client and first.scope == scope
    assert first.command == expected_command(root)
    assert sorted(first.changed) == sorted(first.files)
    written = snapshot_tree(root, home)
    assert set(first.files) == set(written), "every file written is reported, and nothing else is written"
    CHECKS[client](scope, root, home)
    again = install(client, scope=scope, root=root, home=home)
    assert again.changed == [] and sorted(again.files) == sorted(first.files)
    assert snapshot_tree(root, home) == written


def test_project_scope_writes_nothing_in_home_and_user_scope_nothing_in_root(places):
    root, home = places
    for client in CLIENTS:
        install(client, scope="project", root=root, home=home)
    assert snapshot_tree(home) == {}
    project_files = snapshot_tree(root)
    for client in CLIENTS:
        install(client, scope="user", root=root, home=home)
    assert snapshot_tree(root) == project_files


# ---------------------------------------------------------------- merges keep the user's content

def test_claude_code_merges_json_and_keeps_other_servers_and_keys(places):
    root, home = places
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "extra": 1}))
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.local.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(.env)"]}, "enabledMcpjsonServers": ["other"]}))
    (home / ".claude.json").write_text(json.dumps({"numStartups": 7, "projects": {"/x": {"a": 1}},
                                                   "mcpServers": {"kernel-mcp": {"command": "old"}}}))
    install("claude-code", "project", root=root, home=home)
    install("claude-code", "user", root=root, home=home)
    project = json.loads((root / ".mcp.json").read_text())
    assert project["extra"] == 1 and project["mcpServers"]["other"] == {"command": "x"}
    settings = json.loads((root / ".claude" / "settings.local.json").read_text())
    assert settings["permissions"] == {"allow": ["Bash(ls:*)", "mcp__kernel-mcp"], "deny": ["Read(.env)"]}
    assert settings["enabledMcpjsonServers"] == ["other", "kernel-mcp"]
    user = json.loads((home / ".claude.json").read_text())
    assert user["numStartups"] == 7 and user["projects"] == {"/x": {"a": 1}}
    assert server_entry(home / ".claude.json")["command"] == sys.executable


CODEX_USER_CONFIG = '''# my settings: keep this comment
model = "gpt-5"

[mcp_servers.other]
command = "other-server"  # inline comment
args = ["--flag"]

[mcp_servers.kernel-mcp]
command = "/old/python"
args = ["-m", "kernel_mcp", "serve"]

[mcp_servers.kernel-mcp.env]
OLD = "1"

[projects."/somewhere"]
trust_level = "trusted"
'''


def test_codex_replaces_only_its_table_and_keeps_comments(places):
    root, home = places
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_USER_CONFIG)
    install("codex", "user", root=root, home=home)
    text = config.read_text()
    assert "# my settings: keep this comment" in text and '# inline comment' in text
    data = tomllib.loads(text)
    assert data["model"] == "gpt-5" and data["mcp_servers"]["other"] == {"command": "other-server", "args": ["--flag"]}
    assert data["projects"] == {"/somewhere": {"trust_level": "trusted"}}
    ours = data["mcp_servers"]["kernel-mcp"]
    assert "env" not in ours and ours["command"] == sys.executable  # the old table and its sub-table are gone
    assert text.count("[mcp_servers.kernel-mcp]") == 1


def test_codex_refuses_an_entry_it_cannot_edit_and_writes_nothing(places):
    root, home = places
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('mcp_servers = { kernel-mcp = { command = "mine" } }\n')
    before = snapshot_tree(root, home)
    with pytest.raises(UsageError, match="cannot edit safely"):
        install("codex", "user", root=root, home=home)
    assert snapshot_tree(root, home) == before


def test_codex_agents_md_keeps_the_users_text_around_the_block(places):
    root, home = places
    (root / "AGENTS.md").write_text("# My project\n\nUse tabs.\n")
    install("codex", "project", root=root, home=home)
    text = (root / "AGENTS.md").read_text()
    assert text.startswith("# My project\n\nUse tabs.\n\n<!-- kernel-mcp:begin")
    (root / "AGENTS.md").write_text(text.replace("The kernel optimization loop", "OUTDATED-BLOCK-TEXT") + "\n## After\nmine\n")
    install("codex", "project", root=root, home=home)
    text = (root / "AGENTS.md").read_text()
    assert text.startswith("# My project\n\nUse tabs.\n") and text.endswith("## After\nmine\n")
    assert "OUTDATED-BLOCK-TEXT" not in text and text.count("<!-- kernel-mcp:begin") == 1


def test_codex_project_scope_says_whether_the_project_is_trusted(places):
    root, home = places
    untrusted = install("codex", "project", root=root, home=home)
    assert any("trusted" in note for note in untrusted.notes)
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(f'[projects."{root}"]\ntrust_level = "trusted"\n')
    trusted = install("codex", "project", root=root, home=home)
    assert not any("not marked trusted" in note for note in trusted.notes)


def test_cursor_keeps_other_servers(places):
    root, home = places
    (root / ".cursor").mkdir()
    (root / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"db": {"url": "http://x"}}}))
    install("cursor", "project", root=root, home=home)
    servers = json.loads((root / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers["db"] == {"url": "http://x"} and "kernel-mcp" in servers


# ---------------------------------------------------------------- refusals

def test_malformed_json_is_refused_before_anything_is_written(places):
    root, home = places
    (root / ".mcp.json").write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        install("claude-code", "project", root=root, home=home)
    assert sorted(snapshot_tree(root)) == [str(root / ".mcp.json")]


def test_a_skill_written_by_someone_else_is_not_overwritten(places):
    root, home = places
    mine = root / ".claude" / "skills" / "triton-kernels" / "SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("---\nname: triton-kernels\ndescription: my own\n---\nmine\n")
    with pytest.raises(UsageError, match="not written by kernel-mcp"):
        install("claude-code", "project", root=root, home=home)
    assert mine.read_text().endswith("mine\n") and not (root / ".mcp.json").exists()


@pytest.mark.parametrize("client, scope, message", [
    ("vscode", "project", "choose one of: claude-code, codex, cursor"),
    ("codex", "global", "choose one of: project, user"),
])
def test_bad_client_or_scope_lists_the_valid_ones(places, client, scope, message):
    root, home = places
    with pytest.raises(UsageError, match=message):
        install(client, scope=scope, root=root, home=home)


def test_root_must_be_a_directory(places):
    root, home = places
    with pytest.raises(UsageError, match="not a directory"):
        install("cursor", root=root / "missing", home=home)


def test_cli_install_and_its_usage_error(places):
    root, home = places
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    bad = subprocess.run([sys.executable, "-m", "kernel_mcp", "install", "vscode", "--root", str(root)],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "claude-code, codex, cursor" in bad.stderr
    good = subprocess.run([sys.executable, "-m", "kernel_mcp", "install", "codex", "--scope", "user", "--root",
                           str(root), "--home", str(home), "--json"], capture_output=True, text=True, env=env)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["command"] == expected_command(root)
    assert (home / ".codex" / "config.toml").exists()


# ---------------------------------------------------------------- the one source and its derived files

def test_generated_files_are_fresh():
    stale = texts.stale_generated(REPO)
    assert stale == [], f"run `python -m kernel_mcp.install --generate` and commit: {stale}"


def test_generation_is_deterministic_and_covers_every_skill(tmp_path):
    assert sorted(texts.write_generated(tmp_path)) == sorted(texts.generated_files())
    assert texts.write_generated(tmp_path) == [] and texts.stale_generated(tmp_path) == []
    for name in SKILL_NAMES:
        assert (tmp_path / f"plugins/kernel-mcp/skills/{name}/SKILL.md").exists()
        assert (tmp_path / f".cursor/rules/kernel-mcp-{name}.mdc").exists()


def test_the_agents_md_block_fits_codex_budget():
    # Codex reads at most project_doc_max_bytes (32 KiB by default) of AGENTS.md files, the user's own included
    assert len(texts.render_agents_block(texts.load_skills()).encode()) < 24 * 1024


def test_skills_name_only_tools_the_server_has(tmp_path):
    from kernel_mcp.server import build_server
    tools = {t.name for t in anyio.run(build_server(tmp_path).list_tools)}
    for skill in texts.load_skills():
        named = {t.removeprefix(texts.CLAUDE_TOOL_PREFIX) for t in skill.allowed_tools}
        assert all(t.startswith(texts.CLAUDE_TOOL_PREFIX) for t in skill.allowed_tools), skill.name
        assert named <= tools, f"{skill.name} allows unknown tools {named - tools}"
    plugin_skill = (REPO / "plugins/kernel-mcp/skills/kernel-optimization-loop/SKILL.md").read_text()
    assert "mcp__plugin_kernel-mcp_kernel-mcp__evaluate" in plugin_skill
    assert "mcp__kernel-mcp__" not in plugin_skill


# ---------------------------------------------------------------- the real clients read what we wrote

@pytest.fixture(scope="module")
def claude() -> Path:
    return node_cli_or_skip("@anthropic-ai/claude-code", "claude")


@pytest.fixture(scope="module")
def codex() -> Path:
    return node_cli_or_skip("@openai/codex", "codex")


def run_cli(args: list, cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}  # Codex then uses HOME/.codex
    environment.update(HOME=str(home), PYTHONPATH=repo_pythonpath(), **env)
    return subprocess.run([str(a) for a in args], cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("path", ["plugins/kernel-mcp", "."])
def test_claude_validates_the_plugin_and_marketplace_strictly(claude, path, tmp_path):
    done = run_cli([claude, "plugin", "validate", "--strict", REPO / path], REPO, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout


@pytest.mark.parametrize("scope", ["project", "user"])
def test_claude_connects_to_the_installed_server(claude, places, scope):
    root, home = places
    subprocess.run(["git", "init", "-q", str(root)], check=True)  # settings.local.json counts only in git repos
    install("claude-code", scope, root=root, home=home)
    done = run_cli([claude, "mcp", "get", "kernel-mcp"], root, home)
    assert "Connected" in done.stdout, done.stdout + done.stderr


def test_claude_installs_the_plugin_from_the_marketplace(claude, places):
    import shutil
    if shutil.which("kernel-mcp") is None:
        pytest.skip("the plugin runs the `kernel-mcp` console script, which is not on PATH")
    root, home = places
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for step in (["plugin", "marketplace", "add", REPO], ["plugin", "install", "kernel-mcp@kernel-mcp"]):
        done = run_cli([claude, *step], root, home)
        assert done.returncode == 0, done.stdout + done.stderr
    listed = run_cli([claude, "mcp", "list"], root, home)
    assert f"plugin:kernel-mcp:kernel-mcp: kernel-mcp serve --root {root}" in listed.stdout
    assert "Connected" in listed.stdout, listed.stdout + listed.stderr


def test_codex_reads_the_user_config(codex, places):
    root, home = places
    install("codex", "user", root=root, home=home)
    done = run_cli([codex, "mcp", "get", "kernel-mcp", "--json"], root, home)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["enabled"] is True
    assert [got["transport"]["command"], *got["transport"]["args"]] == expected_command(root)
    assert got["tool_timeout_sec"] == inst.CODEX_TOOL_TIMEOUT_S
    assert got["startup_timeout_sec"] == inst.CODEX_STARTUP_TIMEOUT_S


def test_codex_reads_the_project_config_once_trusted(codex, places):
    root, home = places
    install("codex", "project", root=root, home=home)
    assert "No MCP servers" in run_cli([codex, "mcp", "list"], root, home).stdout  # untrusted: ignored
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text(f'[projects."{root}"]\ntrust_level = "trusted"\n')
    done = run_cli([codex, "mcp", "get", "kernel-mcp", "--json"], root, home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["transport"]["args"][-1] == str(root)
