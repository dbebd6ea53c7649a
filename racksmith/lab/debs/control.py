"""Debian control paragraphs (``Packages`` indexes, dpkg status) and the recorded package
records the LAB STAND-IN repository is generated from (pure parsing, no I/O but reading the
records shipped beside this module).

A record is a ``Packages`` stanza read from a real repository index or package page, with three
fields of racksmith's own that apt ignores: ``X-Racksmith-Record`` (``recorded``,
``recorded-partial`` or ``documentation``), ``X-Racksmith-Source`` (where it was read, or from
what it was written) and ``X-Racksmith-Read`` (when). ``tests/fixtures/apt-indexes/README.md``
explains them; the stand-ins copy a record's relations verbatim so the lab's apt resolves what a
site's would.
"""

from __future__ import annotations

import re
from importlib import resources

RECORD_KINDS = ("recorded", "recorded-partial", "documentation")
#: The relation fields a stand-in copies from its record, in Debian's order.
RELATIONS = ("Pre-Depends", "Depends", "Provides", "Conflicts", "Breaks", "Replaces")
#: The lab's record files (``index/<name>.Packages.txt``), one per stand-in repository.
INDEXES = ("cuda-debian12", "nvidia-container-toolkit")


class RecordError(ValueError):
    """A record file that cannot be read as Debian control paragraphs, or lacks a field."""


def parse_stanzas(text: str, origin: str = "<text>") -> list[dict[str, str]]:
    """Control paragraphs -> one dict each (continuation lines joined with newlines)."""
    stanzas = []
    for number, block in enumerate(re.split(r"\n\s*\n", text.strip()), start=1):
        fields: dict[str, str] = {}
        last = None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line.strip()
            elif ":" in line and not line.startswith(("#", " ")):
                last, value = line.split(":", 1)
                fields[last] = value.strip()
            else:
                raise RecordError(f"{origin}: paragraph {number}: not a control line: {line!r}")
        stanzas.append(fields)
    return stanzas


def check_record(record: dict[str, str], origin: str) -> None:
    """A record names its package, version and architecture and says where it came from."""
    name = record.get("Package", "?")
    for key in ("Package", "Version", "Architecture", "X-Racksmith-Source", "X-Racksmith-Read"):
        if not record.get(key):
            raise RecordError(f"{origin}: {name}: no {key}")
    if record.get("X-Racksmith-Record") not in RECORD_KINDS:
        raise RecordError(
            f"{origin}: {name}: X-Racksmith-Record must be one of {', '.join(RECORD_KINDS)}"
        )


def load_index(name: str) -> dict[str, dict[str, str]]:
    """The lab's records of one repository, by package name (one version per name)."""
    if name not in INDEXES:
        raise RecordError(f"no lab record file {name!r} (known: {', '.join(INDEXES)})")
    origin = f"racksmith/lab/debs/index/{name}.Packages.txt"
    text = resources.files("racksmith.lab.debs").joinpath("index", f"{name}.Packages.txt")
    records: dict[str, dict[str, str]] = {}
    for record in parse_stanzas(text.read_text(), origin):
        check_record(record, origin)
        if record["Package"] in records:
            raise RecordError(f"{origin}: {record['Package']} recorded twice")
        records[record["Package"]] = record
    return records
