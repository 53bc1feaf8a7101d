"""Results shown, never computed:

    render.py          rich tables for the command line
    summaries.py       the compact results the MCP server returns to an LLM (detail on request)
    roofline_chart.py  the roofline PNG
"""
