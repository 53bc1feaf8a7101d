"""``python -m kernel_mcp.install --generate``: regenerate the agent files derived from skills/."""
import sys

from kernel_mcp.install.command import main

sys.exit(main(sys.argv[1:]))
