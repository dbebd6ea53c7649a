"""Errors shared by every area of the command line.

``UsageError`` is what a command raises for bad input it was given (a malformed file, an
option out of range): ``racksmith`` prints it as one line naming the input and exits 2, the
exit code the docs promise for usage errors, never a traceback.
"""

from __future__ import annotations


class UsageError(ValueError):
    """Bad input from the user: the message names the input (and the line, for files)."""
