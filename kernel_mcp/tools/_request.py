"""What every instrument builds before it runs: the candidate's path checked, and the request for a judge or
for a whole evaluation, validated where it is built so a bad value is a UsageError naming it."""
from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from kernel_mcp.errors import UsageError
from kernel_mcp.evaluation import EvaluateRequest
from kernel_mcp.results import ProfileSettings
from kernel_mcp.worker.protocol import JudgeRequest, field_problems, parse_device

M = TypeVar("M")


def resolve_candidate(candidate: str | Path) -> Path:
    path = Path(candidate).expanduser().resolve()
    if not path.is_file():
        raise UsageError(f"candidate not found: {candidate}")
    if path.suffix != ".py":
        raise UsageError(f"{candidate}: a candidate is a Python file defining custom_kernel(data) "
                         "(or ModelNew for a KernelBench problem)")
    return path


def _validated(model: type[M], said: str = "", /, **fields: Any) -> M:
    """``model`` from ``fields``; a bad value is a UsageError naming it (after ``said``)."""
    try:
        return model(**fields)
    except ValidationError as exc:
        raise UsageError(said + field_problems(exc)) from None


def judge_request(**fields: Any) -> JudgeRequest:
    """A JudgeRequest from the tool's arguments; a bad value is a UsageError naming it."""
    return _validated(JudgeRequest, **fields)


def settings_from(**values: Any) -> ProfileSettings:
    """ProfileSettings from keyword values; a bad value is a UsageError naming the setting."""
    return _validated(ProfileSettings, "bad profile settings: ", **values)


def evaluate_request(**fields: Any) -> EvaluateRequest:
    """An EvaluateRequest from a caller's arguments (``budget_s`` and ``shapes`` become its settings); a bad
    value, the device included, is a UsageError naming it."""
    settings = settings_from(**{k: fields.pop(k) for k in ("budget_s", "shapes") if k in fields})
    if "device" in fields:
        fields["device"] = parse_device(fields["device"])
    return _validated(EvaluateRequest, settings=settings, **fields)
