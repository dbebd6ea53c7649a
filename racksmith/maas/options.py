"""Every MAAS connection and wait option, defined once (see :mod:`racksmith.optionspec`).

``CONNECTION`` and ``WAIT`` are what each ``maas_*`` module accepts (``racksmith_maas`` doc
fragment), what ``racksmith maas`` offers on the command line, and (connection part) what the
``maas`` inventory plugin documents with the same names and defaults; a unit test compares them.
"""

from __future__ import annotations

import argparse
from typing import Any

from racksmith import pacing
from racksmith.maas import client
from racksmith.optionspec import Option, ca_bundle_option, positive_int, print_fragments, seconds


def _per_minute(text: str) -> float:
    """``--power-actions-per-minute``: a finite number >= 0 (the message names the setting)."""
    try:
        return pacing.rate_from(text)
    except pacing.PacingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


MAAS_URL = Option(
    "maas_url",
    "str",
    ("MAAS URL, e.g. C(http://maas:5240/MAAS/); default from C(MAAS_URL) or C(credentials_file).",),
    cli=False,
)
MAAS_API_KEY = Option(
    "maas_api_key",
    "str",
    (
        "API key C(consumer:token:secret) (never logged); default from C(MAAS_API_KEY) or"
        " C(credentials_file). Prefer the environment or the file over a literal.",
    ),
    no_log=True,
    cli=False,
)
CREDENTIALS_FILE = Option(
    "credentials_file",
    "path",
    (
        "C(KEY=VALUE) file with C(MAAS_URL) and C(MAAS_API_KEY), read when the environment lacks"
        " them; C(${VAR:-default}) is expanded.",
        "It must be readable by its owner only (mode 0600 or stricter); otherwise it is refused.",
        "C(maas_credentials_file) is the old spelling, still accepted.",
    ),
    aliases=("maas_credentials_file",),
    deprecated=("--credentials",),
    metavar="FILE",
)
VALIDATE_CERTS = Option(
    "validate_certs",
    "bool",
    ("Verify MAAS's TLS certificate.",),
    default=True,
    cli_flag="--insecure",
    cli_help="do not verify MAAS's TLS certificate",
    deprecated=("--no-validate-certs",),
)
CA_BUNDLE = ca_bundle_option("CA bundle to verify MAAS's certificate with.")
CONNECT_TIMEOUT = Option(
    "connect_timeout",
    "float",
    ("Seconds to wait for a connection to MAAS.",),
    default=client.DEFAULT_TIMEOUT[0],
    cli_type=seconds,
)
READ_TIMEOUT = Option(
    "read_timeout",
    "float",
    (
        "Seconds one request may take once connected (its whole answer, however slowly it"
        " trickles in).",
        "C(timeout) is the old spelling, still accepted.",
    ),
    default=client.DEFAULT_TIMEOUT[1],
    cli_type=seconds,
    aliases=("timeout",),
    deprecated=("--timeout",),
)
DEADLINE = Option(
    "deadline",
    "float",
    (
        "Seconds one API call may take with every retry and backoff; a MAAS that never answers"
        " fails within it. Status waits are bounded by C(wait_budgets) instead.",
    ),
    default=client.DEFAULT_DEADLINE,
    cli_type=seconds,
)
MAX_ANSWER_BYTES = Option(
    "max_answer_bytes",
    "int",
    ("Largest answer read from MAAS, in bytes; a larger one is refused unread.",),
    default=client.DEFAULT_MAX_ANSWER_BYTES,
    cli_type=positive_int,
)
POLL_INTERVAL = Option(
    "poll_interval",
    "float",
    ("Seconds between status polls (jittered +-25%); default 10-15.",),
    cli_type=seconds,
)
WAIT_BUDGETS = Option(
    "wait_budgets",
    "dict",
    (
        "Minutes a machine may stay in each transitional state, by state name (commissioning"
        " 45, testing 45, allocated 10, deploying 60, releasing 15, disk_erasing 360).",
    ),
    default={},
    cli=False,
)

CONNECTION = (
    MAAS_URL,
    MAAS_API_KEY,
    CREDENTIALS_FILE,
    VALIDATE_CERTS,
    CA_BUNDLE,
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    DEADLINE,
    MAX_ANSWER_BYTES,
)
POWER_ACTIONS_PER_MINUTE = Option(
    "power_actions_per_minute",
    "float",
    (
        "The fleet's power pacing: commission, deploy and release (MAAS powers the machine for"
        " each) take a slot of one fleet-wide pace, shared with every BMC power action of the"
        " controller; C(0) turns pacing off.",
        "Default from C(RACKSMITH_POWER_ACTIONS_PER_MINUTE), else 20 per minute (the playbooks"
        " pass C(racksmith_power_actions_per_minute)).",
        "A wait for the slot longer than the budget of the state the operation starts (see"
        " C(wait_budgets)) is refused before anything is sent.",
    ),
    cli_type=_per_minute,
)
WAIT = (POLL_INTERVAL, WAIT_BUDGETS, POWER_ACTIONS_PER_MINUTE)

PXE_MAC = Option("pxe_mac", "str", ("PXE MAC of the machine (preferred selector).",), cli=False)
SYSTEM_ID = Option("system_id", "str", ("MAAS system id.",), cli=False)
HOSTNAME = Option("hostname", "str", ("MAAS hostname.",), cli=False)
SELECTOR = (PXE_MAC, SYSTEM_ID, HOSTNAME)

#: The doc fragment attributes of plugins/doc_fragments/racksmith_maas.py.
FRAGMENTS = {"DOCUMENTATION": CONNECTION + WAIT, "SELECTOR": SELECTOR}


def client_for(creds: Any, verify: bool | str, settings: Any) -> client.MaasClient:
    """A client with the connection options of a module's params, a CLI namespace or an
    inventory plugin (any mapping or object holding connect_timeout/read_timeout/deadline/
    max_answer_bytes; ``timeout``, the old name of ``read_timeout``, is still read)."""
    get = settings.get if isinstance(settings, dict) else lambda k: getattr(settings, k, None)
    read = get("read_timeout") or get("timeout") or READ_TIMEOUT.default
    return client.MaasClient(
        creds,
        verify=verify,
        timeout=(get("connect_timeout") or CONNECT_TIMEOUT.default, read),
        deadline=get("deadline") or DEADLINE.default,
        max_answer_bytes=get("max_answer_bytes") or MAX_ANSWER_BYTES.default,
    )


if __name__ == "__main__":  # pragma: no cover - regenerates plugins/doc_fragments/racksmith_maas.py
    print_fragments("racksmith_maas", FRAGMENTS)
