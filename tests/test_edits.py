"""A model's edits to a candidate (kernel_mcp/agent/edits.py): all or nothing, never skipped silently."""
from kernel_mcp.agent.edits import apply_edit

SOURCE = "BLOCK = 1024\n\ndef custom_kernel(data):\n    a, b = data\n    return a + b\n"


def _block(search, replace):
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def test_blocks_apply_in_order():
    reply = "Two changes:\n" + _block("BLOCK = 1024\n", "BLOCK = 2048\n") + _block("    return a + b\n", "    return b + a\n")
    result = apply_edit(SOURCE, reply)
    assert result.ok and result.applied == 2
    assert result.source == SOURCE.replace("1024", "2048").replace("a + b", "b + a")


def test_a_block_that_does_not_match_fails_the_whole_edit_with_a_hint():
    reply = _block("BLOCK = 1024\n", "BLOCK = 2048\n") + _block("    return a+b\n", "    return b + a\n")
    result = apply_edit(SOURCE, reply)
    assert not result.ok and result.source == SOURCE  # the first block is not applied alone
    assert "block 2" in result.errors[0] and "closest line is 5" in result.errors[0]


def test_an_ambiguous_block_and_a_malformed_one_are_errors():
    twice = SOURCE + "    return a + b\n"
    assert "occurs 2 times" in apply_edit(twice, _block("    return a + b\n", "x\n")).errors[0]
    assert "no >>>>>>> REPLACE" in apply_edit(SOURCE, "<<<<<<< SEARCH\nBLOCK\n=======\nX\n").errors[0]
    assert "empty" in apply_edit(SOURCE, _block("", "x\n")).errors[0]


def test_a_whole_file_in_one_fence_replaces_the_file():
    result = apply_edit(SOURCE, "Here it is:\n```python\nBLOCK = 64\n```\n")
    assert result.ok and result.whole_file and result.source == "BLOCK = 64\n"
    assert not apply_edit(SOURCE, "```\na\n```\n```\nb\n```").ok  # which one?
    assert "nothing to apply" in apply_edit(SOURCE, "I think it is fine.").errors[0]
