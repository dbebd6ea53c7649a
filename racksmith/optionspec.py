"""One definition of each option, from which the Ansible argument spec, the command-line options
and the doc-fragment text are all produced.

Redfish and MAAS options used to be declared four times (module argument spec, doc fragment,
inventory plugin, CLI) and drifted: the deadline default was 120, 300 and 60 in different
places, and the credentials file had five spellings. Now each service lists its options once
(``racksmith/redfish/options.py``, ``racksmith/maas/options.py``); the argument spec and the
CLI are generated at import time, and the doc fragments under ``plugins/doc_fragments/`` are
generated text (they must stay plain files for ``ansible-doc``), checked by a unit test to
equal what :func:`doc_fragment` produces. ``python -m racksmith.redfish.options`` and
``python -m racksmith.maas.options`` print them.

The option name is the one spelling everywhere: ``credentials_file`` in a module or an
inventory file is ``--credentials-file`` on the command line. Older spellings stay accepted as
``aliases`` (modules) or hidden CLI flags, and are documented as such.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

_PY_TYPES = {"str": str, "path": str, "int": int}


def _checked(convert: Any, valid: Any, noun: str, rule: str) -> Any:
    """An argparse type: ``convert`` the text, then insist on ``valid`` (the message says why)."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if not valid(value):
            raise argparse.ArgumentTypeError(f"{text!r}: {rule}")
        return value

    return parse


#: Durations: positive and finite (``nan``/``inf`` would turn a deadline off).
seconds = _checked(
    float,
    lambda v: v > 0 and math.isfinite(v),
    "a number of seconds",
    "give a positive, finite number of seconds",
)
#: Counts and sizes: a whole number of at least 1.
positive_int = _checked(int, lambda v: v >= 1, "a whole number", "give a whole number >= 1")
#: Retry counts: a whole number, zero allowed.
count = _checked(int, lambda v: v >= 0, "a whole number", "cannot be negative")


@dataclass(frozen=True)
class Option:
    """One option of a service, as every surface sees it."""

    name: str
    type: str  # Ansible type: str, path, int, float, bool, list, dict
    description: tuple[str, ...]
    default: Any = None
    choices: tuple[Any, ...] = ()
    elements: str | None = None
    required: bool = False
    no_log: bool | None = None
    aliases: tuple[str, ...] = ()  # old spellings, still accepted
    cli: bool = True  # offered on the command line
    cli_type: Any = None  # argparse type; default from ``type``
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def spec(self) -> dict[str, Any]:
        """This option's entry in an Ansible ``argument_spec``."""
        out: dict[str, Any] = {"type": self.type}
        if self.required:
            out["required"] = True
        if self.default is not None:
            out["default"] = self.default
        if self.choices:
            out["choices"] = list(self.choices)
        if self.elements:
            out["elements"] = self.elements
        if self.no_log is not None:
            out["no_log"] = self.no_log
        if self.aliases:
            out["aliases"] = list(self.aliases)
        return out

    def doc(self) -> dict[str, Any]:
        """This option's entry in a doc fragment's ``options``."""
        out: dict[str, Any] = {
            "description": list(self.description)
            if len(self.description) > 1
            else self.description[0]
        }
        out.update({k: v for k, v in self.spec().items() if k != "no_log"})
        return out

    def add_to(self, parser: argparse.ArgumentParser | Any) -> None:
        """Add this option to an argparse parser (or argument group)."""
        # Ansible markup C(x) reads as plain x on a terminal; '%' is argparse's format marker.
        help_text = re.sub(r"\b[CIB]\(([^)]*)\)", r"\1", " ".join(self.description))
        help_text = help_text.replace("%", "%%")
        aliases = [a for a in self.aliases if a.startswith("--")]
        if self.type == "bool":
            if self.default:  # on by default: the flag turns it off
                flags = ["--no-" + self.name.replace("_", "-"), *aliases]
                parser.add_argument(
                    *flags,
                    dest=self.name,
                    action="store_false",
                    help=f"turn off (on by default): {help_text}",
                )
            else:
                parser.add_argument(
                    self.flag, *aliases, dest=self.name, action="store_true", help=help_text
                )
            return
        kwargs: dict[str, Any] = {"dest": self.name, "help": help_text}
        if self.metavar or self.cli_type is seconds:
            kwargs["metavar"] = self.metavar or "SECONDS"
        if self.choices:
            kwargs["choices"] = list(self.choices)
        if self.type == "list":
            kwargs["action"] = "append"
            kwargs["type"] = self.cli_type or str
            kwargs["help"] += " (repeat as needed)"
        else:
            kwargs["type"] = self.cli_type or _PY_TYPES.get(self.type, str)
            kwargs["default"] = self.default
        if self.default not in (None, [], {}) and self.type != "list":
            kwargs["help"] += " (default %(default)s)"
        if self.required:
            kwargs["required"] = True
        parser.add_argument(self.flag, *aliases, **kwargs)


def argument_spec(options: Iterable[Option]) -> dict[str, dict[str, Any]]:
    """The Ansible ``argument_spec`` entries of ``options`` (aliases starting ``--`` are CLI
    only and left out)."""
    spec = {}
    for option in options:
        entry = option.spec()
        module_aliases = [a for a in option.aliases if not a.startswith("--")]
        if module_aliases:
            entry["aliases"] = module_aliases
        else:
            entry.pop("aliases", None)
        spec[option.name] = entry
    return spec


def add_arguments(parser: argparse.ArgumentParser | Any, options: Iterable[Option]) -> None:
    for option in options:
        if option.cli:
            option.add_to(parser)


def doc_options(options: Iterable[Option]) -> dict[str, dict[str, Any]]:
    """The ``options`` mapping of a doc fragment (CLI-only aliases left out)."""
    out = {}
    for option in options:
        entry = option.doc()
        module_aliases = [a for a in option.aliases if not a.startswith("--")]
        if module_aliases:
            entry["aliases"] = module_aliases
        else:
            entry.pop("aliases", None)
        out[option.name] = entry
    return out


def doc_fragment(options: Sequence[Option]) -> str:
    """The YAML text of a doc fragment documenting ``options`` (what the fragment file holds)."""
    text = yaml.safe_dump(
        {"options": doc_options(options)}, sort_keys=False, width=80, allow_unicode=True
    )
    return "\n" + text


def print_fragments(name: str, fragments: dict[str, Sequence[Option]]) -> None:
    """Print a service's doc fragments (what ``plugins/doc_fragments/<name>.py`` holds); each
    service's options module calls it under ``python -m``, so this core module imports none."""
    for attribute, opts in fragments.items():
        print(f"# {name}.{attribute}")
        print(doc_fragment(opts))
