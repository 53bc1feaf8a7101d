"""A model's change to the candidate: search/replace blocks, or the whole file, applied all or nothing.

    <<<<<<< SEARCH
    text that occurs exactly once in the file
    =======
    what replaces it
    >>>>>>> REPLACE

Blocks apply in order, each to the result of the previous one. A block whose search text is missing, or
occurs more than once, fails the whole edit with a message the model can act on (where the closest
line is, or how many times the text occurs): a change is never applied in part and never skipped
silently (OpenEvolve skips a block that does not match; its users report loops that never progress).
A reply with no blocks but one fenced code block is taken as the whole new file.
"""
from __future__ import annotations

import difflib
import re

from pydantic import BaseModel, Field

from kernel_mcp.agent.providers.base import ToolSpec

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
FENCE = re.compile(r"```[\w+-]*\n(.*?)```", re.DOTALL)


class EditResult(BaseModel):
    ok: bool
    source: str  # the new file (the old one unchanged when not ok)
    applied: int = 0  # blocks applied (0 for a whole file)
    whole_file: bool = False
    errors: list[str] = Field(default_factory=list)


class Block(BaseModel):
    search: str
    replace: str


def parse_blocks(text: str) -> tuple[list[Block], list[str]]:
    """The search/replace blocks of a reply, and what is malformed (a block missing its divider or end)."""
    blocks, errors, lines, i = [], [], text.splitlines(keepends=True), 0
    while i < len(lines):
        if lines[i].strip() != SEARCH:
            i += 1
            continue
        start = i + 1
        divider = next((j for j in range(start, len(lines)) if lines[j].strip() == DIVIDER), None)
        end = next((j for j in range(divider + 1, len(lines)) if lines[j].strip() == REPLACE), None) \
            if divider is not None else None
        if divider is None or end is None:
            errors.append(f"block {len(blocks) + 1}: {'no =======' if divider is None else 'no >>>>>>> REPLACE'} "
                          "after its <<<<<<< SEARCH line")
            break
        blocks.append(Block(search="".join(lines[start:divider]), replace="".join(lines[divider + 1:end])))
        i = end + 1
    return blocks, errors


def apply_edit(source: str, reply: str) -> EditResult:
    """The file after the reply's blocks (or its whole fenced file), or the reasons it cannot be applied."""
    blocks, errors = parse_blocks(reply)
    if errors:
        return EditResult(ok=False, source=source, errors=errors)
    if not blocks:
        fenced = FENCE.findall(reply)
        if len(fenced) == 1:
            return EditResult(ok=True, source=fenced[0], whole_file=True)
        why = "several fenced code blocks: send one whole file" if fenced else "no SEARCH/REPLACE block or file"
        return EditResult(ok=False, source=source, errors=[f"nothing to apply: {why}"])
    current = source
    for number, block in enumerate(blocks, 1):
        count = current.count(block.search) if block.search else 0
        if count != 1:
            errors.append(f"block {number}: " + (_not_found(current, block.search) if count == 0 else
                                                 f"the search text occurs {count} times: include more lines "
                                                 "around it so it occurs once"))
            continue
        current = current.replace(block.search, block.replace, 1)
    if errors:
        return EditResult(ok=False, source=source, errors=errors)
    return EditResult(ok=True, source=current, applied=len(blocks))


def _not_found(source: str, search: str) -> str:
    if not search.strip():
        return "the search text is empty"
    first = search.strip().splitlines()[0].strip()
    lines = [line.strip() for line in source.splitlines()]
    close = difflib.get_close_matches(first, lines, n=1, cutoff=0.6)
    hint = f"; the closest line is {lines.index(close[0]) + 1}: {close[0]!r}" if close else ""
    return f"the search text is not in the file (its first line: {first!r}){hint}. Copy it exactly"


# The one tool a model agent is offered; its answer is the loop's verdict on the edit (loop/optimizer.py).
PROPOSE = ToolSpec(name="propose", description=(
    "Propose a new version of the kernel: `edit` holds SEARCH/REPLACE blocks against the current best "
    "version (or one fenced block with the whole file); `idea` says in a sentence what it should improve "
    "and why. The change is checked and timed; the answer gives the verdict and the speedup."),
    parameters={"type": "object", "properties": {"edit": {"type": "string"}, "idea": {"type": "string"}},
                "required": ["edit", "idea"]})
