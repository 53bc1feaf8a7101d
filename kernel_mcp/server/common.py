"""What every tool module of the server shares: annotations, the workspace with refusals as tool errors,
and running a blocking call off the event loop."""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from kernel_mcp.errors import UsageError
from kernel_mcp.problem import resolve_problem_path  # yaml and pydantic: not on the server's start
from kernel_mcp.workspace import Workspace

Shapes = Literal["benchmarks", "tests"]  # "tests": the problem's small test shapes (quick runs, CPU)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITES_SNAPSHOTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
OVERWRITES_FILES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


MAX_MESSAGE = 900  # characters of a tool error: every failure answers in under 1 kB
log = logging.getLogger("kernel_mcp.server")


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[:limit - 40] + f"... ({len(text)} characters in all)"


@contextmanager
def tool_errors() -> Iterator[None]:
    """Every failure becomes a ToolError with a message the model can act on, under 1 kB: misuse (a
    UsageError) as it is worded; the file system's refusals (OSError) by their reason; anything else as an
    internal error, named, and logged with its traceback (the SDK would answer a bare "Error executing
    tool")."""
    try:
        yield
    except ToolError:
        raise
    except UsageError as exc:
        raise ToolError(clip(str(exc))) from None
    except OSError as exc:
        raise ToolError(clip(f"the file system refused: {exc.strerror or exc}")) from None
    except Exception as exc:  # noqa: BLE001  (a bug of ours: said, bounded, and logged in full)
        log.exception("tool failed")
        raise ToolError(clip(f"internal error in kernel_mcp ({type(exc).__name__}): {exc}")) from None


class ToolSpace(Workspace):
    """The workspace, with refusals as tool errors the model can act on."""

    def path(self, name: str, must_exist: bool = True) -> Path:
        with tool_errors():
            return super().path(name, must_exist)

    def problem(self, name: str) -> Path:
        """A problem argument, by the rule of the command line (kernel_mcp.problem.resolve_problem_path): a path
        in the workspace first (one that leads out is refused, never replaced by a bundled problem), then the
        workspace's problems/NAME, then the bundled problem NAME."""

        def locate(rel: str) -> Path | None:
            full = self.path(rel, must_exist=False)  # refused before anything is looked at, if it leads out
            return full if full.exists() else None
        with tool_errors():
            return resolve_problem_path(name, where=self.root, locate=locate)


async def run_blocking(ctx: Context | None, work: Callable[[Callable], Any]) -> Any:
    """Run a blocking instrument in a worker thread, forwarding its progress as notifications to the
    caller (when there is a ctx); UsageError -> ToolError."""
    def progress(message: str, done: int = 0, total: int = 0) -> None:
        if ctx is not None:
            anyio.from_thread.run(ctx.report_progress, float(done), float(total) if total else None, message)

    with tool_errors():
        return await anyio.to_thread.run_sync(lambda: work(progress))
