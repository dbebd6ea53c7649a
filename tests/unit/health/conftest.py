"""Fixtures for the health agent's tests; the helpers live in health_support.py (a module
with a unique name, so test directories of other areas cannot shadow it)."""

from health_support import replay, unit_profile  # noqa: F401 - pytest fixtures
