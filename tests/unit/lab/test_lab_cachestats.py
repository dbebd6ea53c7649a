"""racksmith lab cache-stats: upstream vs served bytes from apt-cacher-ng's transfer log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from racksmith.lab import cachestats

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "aptcache" / "apt-cacher.log"

# Four hosts install one package through a cold cache: one upstream fetch, four deliveries.
FOUR_HOSTS = """\
1796083691|I|288950|192.168.250.22|debrep/pool/main/c/chrony/chrony_4.3-2+deb12u3_amd64.deb
1796083691|O|288927|192.168.250.22|debrep/pool/main/c/chrony/chrony_4.3-2+deb12u3_amd64.deb
1796083691|O|288927|192.168.250.23|debrep/pool/main/c/chrony/chrony_4.3-2+deb12u3_amd64.deb
1796087927|O|288927|192.168.250.20|debrep/pool/main/c/chrony/chrony_4.3-2+deb12u3_amd64.deb
1796087928|O|288927|192.168.250.21|debrep/pool/main/c/chrony/chrony_4.3-2+deb12u3_amd64.deb
1796086227|E|832|192.168.250.20| [HTTP error, code: 200]
"""


def test_one_upstream_fetch_serves_four_hosts():
    stats = cachestats.summarize(cachestats.parse(FOUR_HOSTS))
    assert (stats.upstream_bytes, stats.served_bytes) == (288950, 4 * 288927)
    assert (stats.upstream_transfers, stats.served_transfers) == (1, 4)
    assert (stats.misses, stats.hits, stats.hit_ratio) == (1, 3, 0.75)
    assert stats.byte_saving == pytest.approx(1 - 288950 / (4 * 288927))
    assert (stats.clients, stats.packages, stats.packages_refetched) == (4, 1, ())
    assert stats.errors == 1
    assert (stats.first, stats.last) == (1796083691, 1796087928)


def test_a_package_fetched_twice_is_named():
    twice = FOUR_HOSTS + FOUR_HOSTS.splitlines()[0] + "\n"
    stats = cachestats.summarize(cachestats.parse(twice))
    assert stats.packages_refetched == ("debrep/pool/main/c/chrony/chrony_4.3-2+deb12u3_amd64.deb",)
    assert stats.misses == 2


def test_the_short_format_without_verbose_log_parses():
    t = cachestats.parse_line("1796083691|O|288927")
    assert (t.kind, t.size, t.client, t.path) == ("O", 288927, None, None)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("1796083691|X|1|h|p", "unknown transfer kind 'X'"),
        ("1796083691|O|12k|h|p", "whole numbers"),
        ("1796083691|O", "got 2 field(s)"),
        ("GET /debrep/x HTTP/1.1", "got 1 field(s)"),
    ],
)
def test_a_line_not_in_the_format_is_an_error_naming_the_line(line, says):
    with pytest.raises(cachestats.LogFormatError) as err:
        cachestats.parse(FOUR_HOSTS + line + "\n", source="acng.log")
    assert str(err.value).startswith("acng.log:7: ") and says in str(err.value)


def test_nothing_served_has_no_ratio():
    stats = cachestats.summarize([])
    assert stats.hit_ratio is None and stats.byte_saving is None
    assert "n/a (nothing served)" in cachestats.format_text(stats, "x")


def test_the_recorded_demo_log_shows_the_cache_working():
    """The fixture is a real excerpt of the demo lab's log: its .deb files each crossed the
    uplink once while several hosts installed them."""
    stats = cachestats.read_stats(FIXTURE)
    assert stats.packages > 0 and stats.packages_refetched == ()
    assert stats.clients > 1
    assert stats.served_bytes > stats.upstream_bytes > 0
    assert 0 < stats.hit_ratio < 1


def test_cli_json_is_one_document_and_bad_input_exits_2(tmp_path, capsys):
    from racksmith import cli

    assert cli.main(["lab", "cache-stats", "--json", "--log", str(FIXTURE)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["log"] == str(FIXTURE)
    assert doc["upstream_bytes"] == cachestats.read_stats(FIXTURE).upstream_bytes
    assert cli.main(["lab", "cache-stats", "--lab-dir", str(tmp_path)]) == 2
    assert "no apt-cacher-ng log at" in capsys.readouterr().err
    bad = tmp_path / "bad.log"
    bad.write_text("1|O|1|h|p\nnot a log line\n")
    assert cli.main(["lab", "cache-stats", "--json", "--log", str(bad)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and f"{bad}:2: " in out.err
