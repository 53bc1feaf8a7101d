"""What was tried, and whether the search is stuck (shared by the MCP tools and the optimize loop):

    snapshots.py   every attempt kept in git (private refs) with its numbers; the leaderboard
    stall.py       the stall signals S1-S8 and the restart ladder over them
    novelty.py     exact and near-duplicate candidates
"""
