"""racksmith.hostprobe (filters racksmith.core.host_probe_argv / host_probe_sections): the real
/bin/sh command run with the roles' kind of snippets, its output split into sections; a failing
snippet fails the command naming its section; output that is cut short or out of shape is
refused, never read as empty."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.hostprobe import MARK, ParseError, parse_sections, probe_argv
from racksmith.pci import count_kinds, parse_probe
from racksmith.pci import probe_argv as pci_argv
from racksmith.testing.plugins import plugin_filters
from racksmith.testing.sysfs import write_pci_tree

HGX = Path(__file__).resolve().parents[2] / "fixtures" / "ubuntu-22.04" / "pci-sysfs.txt"
FILTERS = plugin_filters("plugins/filter/host_probe.py")


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def test_sections_of_a_real_run(tmp_path):
    assert write_pci_tree(HGX, tmp_path / "sys") == 50
    config = tmp_path / "daemon.json"
    config.write_text('{"live-restore": true}\n')
    missing = tmp_path / "absent.json"
    argv = probe_argv(
        {
            "pci": pci_argv(str(tmp_path / "sys"))[-1],
            "daemon": f"if [ -e {config} ]; then cat {config}; fi",
            "absent": f"if [ -e {missing} ]; then cat {missing}; fi",
            "two": "echo one; echo 'two words'",
        }
    )
    done = run(argv)
    assert done.returncode == 0, done.stderr
    sections = parse_sections(done.stdout, ["pci", "daemon", "absent", "two"])
    assert list(sections) == ["pci", "daemon", "absent", "two"]
    assert count_kinds(parse_probe(sections["pci"])).gpu == 8
    assert sections["daemon"] == '{"live-restore": true}\n'
    assert sections["absent"] == ""
    assert sections["two"] == "one\ntwo words\n"


def test_a_failing_snippet_fails_the_command_naming_it():
    done = run(
        probe_argv({"first": "echo fine", "broken": "cat /nonexistent/file", "last": "echo x"})
    )
    assert done.returncode == 1
    assert "probe section broken failed" in done.stderr
    assert "### racksmith-probe:last" not in done.stdout
    with pytest.raises(ParseError, match="no 'end' marker"):
        parse_sections(done.stdout)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stray\n" + MARK + "end\n", "before the first section"),
        (MARK + "a\n" + MARK + "a\n" + MARK + "end\n", "given twice"),
        (MARK + "a\nx\n" + MARK + "end\nmore\n", "after the 'end' marker"),
        (MARK + "Bad-Name\n" + MARK + "end\n", "bad section marker"),
        (MARK + "a\nx\n", "cut short"),
    ],
)
def test_out_of_shape_output_is_refused(text, message):
    with pytest.raises(ParseError, match=message):
        parse_sections(text)


def test_an_expected_section_must_be_there():
    with pytest.raises(ParseError, match=r"lacks section\(s\) \['policy'\]"):
        parse_sections(MARK + "pci\n" + MARK + "end\n", ["pci", "policy"])


@pytest.mark.parametrize("sections", [{}, {"end": "true"}, {"Bad": "true"}, {"a": "  "}])
def test_bad_sections_are_refused(sections):
    with pytest.raises(ValueError):
        probe_argv(sections)


def test_filters_adapt_and_name_themselves():
    argv = FILTERS["host_probe_argv"]({"a": "echo hi"})
    done = run(argv)
    assert FILTERS["host_probe_sections"](done.stdout, ["a"]) == {"a": "hi\n"}
    with pytest.raises(AnsibleFilterError, match="host_probe_argv: "):
        FILTERS["host_probe_argv"]({"end": "true"})
    with pytest.raises(AnsibleFilterError, match=r"host_probe_sections: .*cut short"):
        FILTERS["host_probe_sections"](MARK + "a\n")
