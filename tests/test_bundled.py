"""Every bundled baseline and solutions/correct passes; every solutions/wrong fails (real processes)."""
import pytest
from conftest import PROBLEMS

from kernel_mcp.tools.check import check

PASSING = sorted(PROBLEMS.glob("*/baseline.py")) + sorted(PROBLEMS.glob("*/solutions/correct/*.py"))
FAILING = sorted(PROBLEMS.glob("*/solutions/wrong/*.py"))


def _problem_of(candidate):
    return next(p for p in candidate.parents if (p / "task.yml").is_file())


def _id(path):
    return str(path.relative_to(PROBLEMS))


@pytest.mark.parametrize("candidate", PASSING, ids=_id)
def test_correct_candidates_pass(candidate, device):
    result = check(_problem_of(candidate), candidate, device=device)
    assert result.passed, (result.verdict, [c.message for c in result.cases if not c.passed], result.findings)
    assert result.verdict == "pass" and not result.problem_degenerate
    assert len(result.cases) >= 3 and result.cases[-1].name == "test 0 (repeated)"  # tests, secret copies, repeat
    assert any(c.params.get("seed") == "secret" for c in result.cases)


@pytest.mark.parametrize("candidate", FAILING, ids=_id)
def test_wrong_candidates_fail(candidate, device):
    result = check(_problem_of(candidate), candidate, device=device)
    assert not result.passed and result.verdict.startswith("fail"), result.verdict
    assert any(f.code in {"mismatch", "property", "check_implementation", "batch_variant"} for f in result.findings)
