"""Errors that end a command with exit code 2 and one line, never a traceback."""


class UsageError(Exception):
    """Bad option or input (exit 2). The message is one line that names the problem."""
