"""``evaluate``'s request and result: the one call per attempt (compile, check, profile, roofline, optionally
sanitize, then a snapshot), as every caller asks for it and as it answers."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kernel_mcp.backends.sanitizer import SanitizeResult
from kernel_mcp.history.snapshots import Snapshot
from kernel_mcp.results import CompileResult, ProfileSettings, RooflineResult


class EvaluateRequest(BaseModel):
    """One evaluation as every caller asks for it (the MCP tool and its job form, the CLI, the optimize loop):
    built and validated once, where the caller builds it (tools/_request.evaluate_request), then passed down."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    root: Path = Field(description="the workspace whose snapshot store keeps the attempt")
    problem: Path
    candidate: Path
    device: str = "auto"
    settings: ProfileSettings = Field(default_factory=ProfileSettings)
    author: str = "agent"
    note: str = Field("", description="what this attempt tries, kept with its snapshot")
    parent: str | None = Field(None, description="the snapshot this attempt started from")
    sanitize: bool = Field(False, description="also run the kernels under Compute Sanitizer (slow: off by default)")


class EvaluateResult(BaseModel):
    verdict: str  # the profile's verdict, or "compile failed"
    passed: bool
    trusted: bool
    speedup: float | None = None
    compile: CompileResult | None = None
    roofline: RooflineResult | None = None  # holds the profile, which holds the check
    sanitize: SanitizeResult | None = None  # when asked for
    snapshot: Snapshot
