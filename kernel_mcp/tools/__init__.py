"""One module per instrument: plain functions with typed results. No ``mcp`` import here."""
