from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fabric"


@pytest.fixture
def fixture_path():
    return lambda name: FIXTURES / name


@pytest.fixture
def fixture_text():
    return lambda name: (FIXTURES / name).read_text()
