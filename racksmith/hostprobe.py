"""One command that reads several things from a host, and the parser of what it prints.

Why: a role that needs the PCI bus, a filesystem type, a config file and apt's view of a few
packages used to read each with its own task. Every task costs the controller 35-68 ms per host
and a module start on the host (seconds under the emulated VM lane), so a role reads them all
with one ``/bin/sh`` command (:func:`probe_argv`) and the controller splits the output into its
sections (:func:`parse_sections`). The decisions stay in the roles' filters and lazy variables;
the host only runs the fixed snippets the role gives.

Each section is a shell snippet run in a subshell; its output follows a marker line
``### racksmith-probe:<name>``. A snippet that fails stops the command with a message on
stderr naming the section (fail closed: what could not be read is an error, not an empty
answer), and output without the closing ``end`` marker is refused (a truncated read).
Pure functions, standard library only; the probe only reads, so it may run in check mode.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

__all__ = ["MARK", "ParseError", "parse_sections", "probe_argv"]

#: The line that opens a section; ``end`` closes the output.
MARK = "### racksmith-probe:"
END = "end"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ParseError(ValueError):
    """The output is not what :func:`probe_argv` prints; the message says what is wrong."""


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or name == END:
        raise ValueError(
            f"a probe section name must match {_NAME.pattern} and not be {END!r}, got {name!r}"
        )
    return name


def probe_argv(sections: Mapping[str, str]) -> list[str]:
    """The argv (for ``ansible.builtin.command``) of one ``/bin/sh`` run of every snippet, in
    the order given, each in a subshell after its marker line."""
    if not isinstance(sections, Mapping) or not sections:
        raise ValueError(f"probe sections must be a non-empty mapping, got {sections!r}")
    lines = []
    for name, snippet in sections.items():
        _check_name(name)
        if not isinstance(snippet, str) or not snippet.strip():
            raise ValueError(f"probe section {name!r}: the snippet must be non-empty shell text")
        lines.append(f"echo {shlex.quote(MARK + name)}")
        failed = shlex.quote(f"probe section {name} failed")
        lines.append(f"(\n{snippet.rstrip()}\n) || {{ echo {failed} >&2; exit 1; }}")
    lines.append(f"echo {shlex.quote(MARK + END)}")
    return ["/bin/sh", "-c", "\n".join(lines)]


def parse_sections(text: str, expect: Iterable[str] = ()) -> dict[str, str]:
    """The probe's stdout -> {section: its output (lines joined, each ending in a newline)}.

    Refuses text before the first marker, a section given twice, output without the closing
    ``end`` marker or with anything after it, and a missing section named in ``expect``."""
    if not isinstance(text, str):
        raise ParseError(f"expected the probe's stdout (text), got {type(text).__name__}")
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    ended = False
    for number, line in enumerate(text.splitlines(), 1):
        if ended:
            raise ParseError(f"line {number}: output after the {END!r} marker: {line!r}")
        if line.startswith(MARK):
            name = line[len(MARK) :]
            if name == END:
                ended = True
                continue
            if not _NAME.match(name):
                raise ParseError(f"line {number}: bad section marker {line!r}")
            if name in sections:
                raise ParseError(f"line {number}: section {name!r} given twice")
            current = sections[name] = []
        elif current is None:
            if line.strip():
                raise ParseError(f"line {number}: output before the first section: {line!r}")
        else:
            current.append(line)
    if not ended:
        raise ParseError(f"the probe's output has no {END!r} marker (cut short?)")
    missing = [name for name in expect if name not in sections]
    if missing:
        raise ParseError(f"the probe's output lacks section(s) {missing}")
    return {name: "".join(f"{line}\n" for line in lines) for name, lines in sections.items()}
