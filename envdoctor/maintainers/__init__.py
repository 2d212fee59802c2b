"""Maintainers' tools: never imported on a user's path (`check`, `install`, `matrix`)."""
