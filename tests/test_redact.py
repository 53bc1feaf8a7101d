"""worker/runners/redact.py: which values are secrets, and that no string of a result keeps one."""
from kernel_mcp.results import CheckResult, Finding
from kernel_mcp.worker.runners.redact import Redactor, remember, secrets_in


def test_secrets_are_named_like_secrets_and_long_enough():
    found = secrets_in({"OPENAI_API_KEY": "sk-abcdefgh", "GITHUB_TOKEN": "ghp_12345678", "DB_PASSWORD": "hunter2hunter2",
                        "HOME": "/root/secret-place", "DEBUG_AUTH": "1", "PATH": "/usr/bin"})
    # other tests in this process may have remembered secrets of their own (a batch's): only these names count
    names = set(found.values())
    assert {"OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD"} <= names and not names & {"HOME", "DEBUG_AUTH", "PATH"}


def test_every_string_of_a_result_is_redacted_json_escapes_included():
    key = 'sk-"quoted"\\key'  # a value whose JSON form differs from itself
    redactor = Redactor({"ANTHROPIC_API_KEY": key})
    result = CheckResult(passed=False, verdict="fail: exception", problem="p", candidate="c.py",
                         log_tail=f"printed {key}", findings=[Finding(code="x", message=f"raised {key}!")])
    clean = redactor.model(result)
    assert key not in clean.model_dump_json() and key not in str(clean.model_dump())
    assert clean.log_tail == "printed [redacted ANTHROPIC_API_KEY]"
    assert clean.findings[0].message == "raised [redacted ANTHROPIC_API_KEY]!"


def test_a_result_without_secrets_is_returned_as_is():
    result = CheckResult(passed=True, verdict="pass", problem="p", candidate="c.py")
    assert Redactor({"ANTHROPIC_API_KEY": "sk-abcdefgh"}).model(result) is result


def test_a_remembered_token_is_a_secret():
    remember("bearer-token-123456", "the HTTP bearer token")
    assert Redactor({}).text("Authorization: Bearer bearer-token-123456") == \
        "Authorization: Bearer [redacted the HTTP bearer token]"
