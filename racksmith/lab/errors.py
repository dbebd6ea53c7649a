"""The one exception type the host lab raises for conditions a user can act on.

Commands catch it at the CLI boundary and print its message without a traceback, so every
message must say what went wrong *and* what to do about it.
"""

from __future__ import annotations


class LabError(RuntimeError):
    """A lab step failed; the message names the input or resource and the fix."""
