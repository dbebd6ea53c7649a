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
``aliases`` (modules) or ``deprecated`` CLI flags, which still work but print a one-line notice
on stderr (never on stdout, so ``--json`` output stays pure JSON) and are left out of ``--help``.

One dialect on the command line (issue 27): ``--credentials-file``, ``--insecure``,
``--ca-bundle`` (``--ca-path`` beside it, as ``ca_path`` beside ``ca_bundle`` in modules and
inventory files: :func:`ca_bundle_option` is the one definition), ``--connect-timeout`` /
``--read-timeout`` / ``--deadline``, ``--progress-interval``, ``--yes`` for every destructive
action and ``--json`` on every command that reports.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
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
    aliases: tuple[str, ...] = ()  # other spellings, accepted silently (``--x``: CLI only)
    cli: bool = True  # offered on the command line
    cli_type: Any = None  # argparse type; default from ``type``
    metavar: str | None = None
    deprecated: tuple[str, ...] = ()  # old CLI flags: still work, with a notice on stderr
    cli_flag: str | None = None  # the command-line flag, where it is not ``--name``/``--no-name``
    cli_help: str | None = None  # help text for ``cli_flag`` (it may read opposite to the name)

    @property
    def flag(self) -> str:
        if self.cli_flag:
            return self.cli_flag
        if self.type == "bool" and self.default:
            return "--no-" + self.name.replace("_", "-")
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
        help_text = (self.cli_help or help_text).replace("%", "%%")
        aliases = [a for a in self.aliases if a.startswith("--")]
        if self.type == "bool":
            on = bool(self.default)  # on by default: the flag turns it off
            if on and not self.cli_help:
                help_text = f"turn off (on by default): {help_text}"
            action = parser.add_argument(
                self.flag,
                *aliases,
                dest=self.name,
                action="store_false" if on else "store_true",
                help=help_text,
            )
            add_deprecated(parser, action, *self.deprecated)
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
        action = parser.add_argument(self.flag, *aliases, **kwargs)
        add_deprecated(parser, action, *self.deprecated)


class _DeprecatedFlag(argparse.Action):
    """An old spelling of ``main``: does what ``main`` does, after a one-line notice on stderr
    (stdout is left alone: with ``--json`` it carries JSON only)."""

    def __init__(self, option_strings: list[str], dest: str, main: argparse.Action, **kwargs: Any):
        self.main = main
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        print(
            f"racksmith: {option_string} is deprecated; use {self.main.option_strings[0]}",
            file=sys.stderr,
        )
        self.main(parser, namespace, values, self.main.option_strings[0])


def add_deprecated(parser: argparse.ArgumentParser | Any, main: argparse.Action, *old: str) -> None:
    """Accept each of ``old`` as a hidden, deprecated spelling of the option ``main`` (what
    :meth:`argparse.ArgumentParser.add_argument` returned)."""
    if not old:
        return
    parser.add_argument(
        *old,
        dest=main.dest,
        action=_DeprecatedFlag,
        main=main,
        nargs=main.nargs,
        type=main.type,
        choices=main.choices,
        metavar=main.metavar,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def deprecated_flags(parser: argparse.ArgumentParser) -> set[str]:
    """The deprecated flags of ``parser`` (the CLI test keeps them out of the examples)."""
    return {
        flag
        for action in parser._actions
        if isinstance(action, _DeprecatedFlag)
        for flag in action.option_strings
    }


def set_examples(parser: argparse.ArgumentParser, *examples: str) -> None:
    """Give a command's ``--help`` its examples: whole command lines, ``# comment`` allowed.
    ``tests/unit/cli/test_cli_examples.py`` parses every one against its command's parser,
    and runs those that need nothing but the checkout."""
    parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


#: ``ca_path`` is the name most Ansible collections give a CA file; racksmith's is
#: ``ca_bundle``. Both are accepted everywhere (modules, inventory files, ``--ca-path``).
CA_PATH_ALIASES = ("ca_path", "--ca-path")


def ca_bundle_option(description: str) -> Option:
    """The one definition of the CA file option, with its ``ca_path`` alias: Ansible resolves
    the alias for modules (argument spec) and inventory plugins (documented ``aliases``),
    argparse for the command line (same ``dest``)."""
    return Option(
        "ca_bundle",
        "path",
        (description, "C(ca_path) is accepted as another name for it."),
        aliases=CA_PATH_ALIASES,
        metavar="FILE",
    )


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
