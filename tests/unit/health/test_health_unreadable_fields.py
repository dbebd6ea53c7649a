"""Every field a GPU check reads fails closed (issue 23, item 2).

The real H200 captures (clean, and with a leftover process so that ``<processes>`` has
entries) are edited one element at a time: each element the parser reads (``smi_xml.FIELDS``,
the parser's own table, so the list cannot drift from the code) is replaced with each form
nvidia-smi prints when it cannot read a field. Which checks depend on which field is not
written down here either: each check is run on the unedited capture with the parser recording
the fields it reads. Then, for every replacement, every check that reads that field must
report an UNKNOWN finding naming the field, and none may say OK; the load checks' after-load
rule is held to the same.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from health_support import FIXTURES

from racksmith.gpu import rules
from racksmith.health.checks import Facts, all_checks, requirements
from racksmith.health.checks.sources import NVLINK_ERRORS, NVLINK_STATUS, SMI_XML
from racksmith.health.commands import CommandResult
from racksmith.health.host import Host
from racksmith.health.outcome import Severity
from racksmith.health.parsers import smi_xml
from racksmith.health.profile import load
from racksmith.health.runner import _run_one

CAPTURES = {
    "clean": FIXTURES / "h200-x1" / "smi_q.xml",
    "held": FIXTURES / "h200-x1-held" / "smi_q.xml",
}
FORMS = ("ERR!", "[Unknown Error]", "[Not Supported]", "")


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    """Every GPU check on: the one-GPU host's profile with Fabric Manager back on."""
    path = tmp_path_factory.mktemp("p") / "every-gpu-check.json"
    path.write_text(
        json.dumps(
            {
                "extends": "h200-x1-vm",
                "name": "every-gpu-check",
                "nvswitch": {"count": 0},
                "skip": {"fabric_manager": None},
            }
        )
    )
    return load(str(path), requirements())


def _host(tmp: Path, xml_text: str) -> Host:
    """The recorded ``nvidia-smi -q -x`` output is what the host's nvidia-smi answers; nothing
    else is on PATH (checks that need more say UNKNOWN for that, which this test ignores)."""
    (tmp / "sys/bus/pci/devices").mkdir(parents=True, exist_ok=True)
    host = Host(sysfs=tmp / "sys", env={"PATH": str(tmp / "empty-bin")})
    host._cache[SMI_XML] = CommandResult(SMI_XML, 0, stdout=xml_text, path="recorded")
    return host


def _run_each(profile, host: Host, record: bool = False):
    """Each non-skipped check, one after the other in this thread (so the parser's record of
    reads is per check): name -> (result, fields read)."""
    facts = Facts(host, profile)
    out = {}
    for name, spec in all_checks().items():
        if name in profile.skips:
            continue
        smi_xml.RECORD = set() if record else None
        try:
            result = _run_one(spec, facts)
            out[name] = (result, frozenset(smi_xml.RECORD or ()))
        finally:
            smi_xml.RECORD = None
    return out


def _dependencies(profile, tmp: Path) -> dict[str, dict[str, set[str]]]:
    """capture -> field -> the checks that read it, from the checks' own reads."""
    deps: dict[str, dict[str, set[str]]] = {}
    for capture, path in CAPTURES.items():
        fields: dict[str, set[str]] = {}
        for name, (_, read) in _run_each(
            profile, _host(tmp / capture, path.read_text()), True
        ).items():
            for field in read:
                fields.setdefault(field, set()).add(name)
        deps[capture] = fields
    return deps


def _replacements(text: str):
    """(field, element path, form, edited text) for every element of GPU 0 the parser reads."""
    root = ET.fromstring(text)  # noqa: S314 - a recorded capture from our own fixtures
    gpu = root.find("gpu")
    for field, paths in {**smi_xml.FIELDS, **smi_xml.LOG_FIELDS}.items():
        base = root if field in smi_xml.LOG_FIELDS else gpu
        for path in paths:
            for n, element in enumerate(base.findall(path)):
                for form in FORMS:
                    saved = element.text
                    element.text = form
                    edited = ET.tostring(root, encoding="unicode")
                    element.text = saved
                    yield field, f"{path}[{n}]", form, edited


def test_the_dependencies_are_found_and_cover_the_fields_checks_read(profile, tmp_path):
    deps = _dependencies(profile, tmp_path)
    read = set(deps["clean"]) | set(deps["held"])
    # the fields the issue names, and the new ones, are read by the checks that need them
    assert {"clock_events", "temperature_c", "ecc_volatile", "recovery_action"} <= read
    assert deps["held"]["processes"] >= {"gpu_processes"}
    assert deps["clean"]["persistence_mode"] == {"persistence_mode"}
    assert deps["clean"]["clock_events"] == {"clock_events"}
    assert {"vbios", "inforom_image"} <= set(deps["clean"]) and "firmware" in deps["clean"]["vbios"]


def test_no_check_reading_an_unreadable_field_says_ok(profile, tmp_path):
    deps = _dependencies(profile, tmp_path)
    failures, covered = [], set()
    for capture, path in CAPTURES.items():
        for field, where, form, edited in _replacements(path.read_text()):
            dependents = deps[capture].get(field, set())
            if not dependents:
                continue
            results = _run_each(profile, _host(tmp_path / f"e-{capture}", edited))
            for name in dependents:
                result, _ = results[name]
                named = [
                    f
                    for f in result.findings
                    if f.severity is Severity.UNKNOWN and f"{field} could not be read" in f.reason
                ]
                if result.status is Severity.OK or not named:
                    failures.append(
                        f"{capture} {where}={form!r}: {name} {result.status.label} "
                        f"{[f.reason for f in result.findings]}"
                    )
                covered.add((field, name))
    assert not failures, "\n".join(failures[:20])
    every = {(f, n) for d in deps.values() for f, names in d.items() for n in names}
    assert covered == every  # every (field, dependent check) pair was replaced and held


def test_the_after_load_rule_fails_closed_too(tmp_path):
    text = CAPTURES["clean"].read_text()
    before = smi_xml.parse(text)
    smi_xml.RECORD = set()
    try:
        assert rules.after_load(before, smi_xml.parse(text), [smi_xml.parse(text)]).status is (
            Severity.OK
        )
        read = set(smi_xml.RECORD)
    finally:
        smi_xml.RECORD = None
    assert {"clock_events", "ecc_volatile", "remap_pending", "recovery_action"} <= read
    failures = []
    for field, where, form, edited in _replacements(text):
        if field not in read:
            continue
        log = smi_xml.parse(edited)
        result = rules.after_load(before, log, [log])
        if result.status is Severity.OK or not any(
            f"{field} could not be read" in f.reason for f in result.findings
        ):
            failures.append(f"{where}={form!r}: {result.status.label}")
    assert not failures, failures[:10]


def test_na_is_not_unreadable():
    """N/A means the field does not apply: the H200's retired-page counters and fabric state
    read N/A on the one-GPU host, and every check is OK there."""
    gpu = smi_xml.parse(CAPTURES["clean"].read_text()).gpus[0]
    assert gpu.unreadable == {}
    assert gpu.fabric_state == "N/A" and gpu.retired_pending is False


# -- the other GPU sources: `nvidia-smi nvlink -s/-e` text and the PCIe link in sysfs --------
X2 = FIXTURES / "h200-x2"


@pytest.fixture(scope="module")
def x2_profile():
    return load("h200-x2-vm", requirements())


def _x2_host(tmp: Path, status: str, errors: str) -> Host:
    host = _host(tmp, (X2 / "smi_q.xml").read_text())
    for argv, text in ((NVLINK_STATUS, status), (NVLINK_ERRORS, errors)):
        host._cache[argv] = CommandResult(argv, 0, stdout=text, path="recorded")
    return host


@pytest.mark.parametrize("form", FORMS)
def test_every_nvlink_value_unreadable_is_never_ok(x2_profile, tmp_path, form):
    """Each link's speed in ``nvlink -s`` and each counter in ``nvlink -e`` of the real
    two-GPU capture, one at a time: the check reading it is UNKNOWN and quotes the line."""
    status, errors = (X2 / "nvlink-s.txt").read_text(), (X2 / "nvlink-e.txt").read_text()
    specs = all_checks()
    edits = []
    for name, text in (("nvlink_state", status), ("nvlink_errors", errors)):
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if "Link " not in line:
                continue
            head = line.rsplit(": ", 1)[0] if name == "nvlink_errors" else line.split(": ")[0]
            edited = "\n".join([*lines[:n], f"{head}: {form}".rstrip(), *lines[n + 1 :]]) + "\n"
            edits.append((name, line.strip(), edited))
    assert len(edits) == 2 * 18 + 2 * 18 * 3  # every link of both GPUs, every counter
    failures = []
    for name, line, edited in edits:
        host = _x2_host(
            tmp_path / "h", *((edited, errors) if name == "nvlink_state" else (status, edited))
        )
        result = _run_one(specs[name], Facts(host, x2_profile))
        if result.status is not Severity.UNKNOWN or "cannot parse" not in result.findings[0].reason:
            failures.append(f"{line} -> {form!r}: {result.status.label}")
    assert not failures, failures[:10]


@pytest.mark.parametrize("attr", ["current_link_width", "current_link_speed"])
@pytest.mark.parametrize("form", ["Unknown", "", "0"])
def test_unreadable_pcie_link_is_unknown(x2_profile, tmp_path, attr, form):
    """The ``pcie`` check reads the GPUs' links from sysfs: a value the kernel could not read
    (``Unknown``, empty, width 0) is UNKNOWN for that device, never OK."""
    from racksmith.lab.standin import build_pci_tree, parse_pci_capture

    devices = parse_pci_capture((X2 / "pci-sysfs.txt").read_text())
    first = sorted(devices)[0]
    devices[first][attr] = form
    build_pci_tree(devices, tmp_path / "sys")
    host = Host(sysfs=tmp_path / "sys", env={"PATH": ""})
    result = _run_one(all_checks()["pcie"], Facts(host, x2_profile))
    assert result.status is Severity.UNKNOWN
    assert result.findings[0].subject == f"GPU {first}"
    assert "could not be read from sysfs" in result.findings[0].reason
