"""What reprovision announces is what maas_release is given (issue 24: the erase text lived in
reprovision.yml and in ReleaseOptions)."""

from __future__ import annotations

import pytest

from racksmith.maas.lifecycle import ReleaseOptions
from racksmith.testing.plugins import plugin_filters

FILTERS = plugin_filters("plugins/filter/phases.py")


@pytest.mark.parametrize(
    ("erase", "quick", "said"),
    [
        (True, True, "with quick disk erase"),
        (True, False, "with full disk erase"),
        (False, True, "without erasing disks"),  # quick alone is not an erase (MAAS refuses it)
    ],
)
def test_release_text_is_release_options_describe(erase, quick, said):
    assert FILTERS["maas_release_text"](erase, quick) == said
    assert ReleaseOptions(erase=erase, quick_erase=erase and quick).describe() == said
