"""Errors of the fabric tools.

``FabricInputError`` is a :class:`racksmith.errors.UsageError`: a malformed topology, plan,
hosts map or event log is bad input, so the CLI prints one line naming the file and line and
exits 2. A bad line is never skipped silently (fail closed: a triage that dropped the lines it
could not read would report a clean fabric).
"""

from __future__ import annotations

from racksmith.errors import UsageError


class FabricInputError(UsageError):
    """Bad input: ``source:line: message`` (line 0 when the problem is the whole file)."""

    def __init__(self, source: str, line: int, message: str):
        self.source = source
        self.line = line
        self.detail = message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


class UfmError(RuntimeError):
    """A UFM REST call failed (transport error or an unexpected status); never holds secrets."""
