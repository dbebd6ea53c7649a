"""Every Redfish option, defined once (see :mod:`racksmith.optionspec`).

``MODULE`` is what each ``redfish_*`` module accepts (its argument spec and the
``racksmith_redfish`` doc fragment); ``DISCOVERY`` adds what the inventory plugin and
``racksmith redfish discover`` need. The inventory plugin documents the same names with the
same defaults (a unit test compares them), and the CLI options are generated from here.
"""

from __future__ import annotations

from racksmith import credentials
from racksmith.optionspec import (
    Option,
    ca_bundle_option,
    count,
    positive_int,
    print_fragments,
    seconds,
)
from racksmith.redfish import pxe, vendors
from racksmith.redfish.discover import DEFAULT_CONCURRENCY, DEFAULT_DEADLINE, EXTRAS
from racksmith.transport import DEFAULT_MAX_BYTES

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_RETRIES = 2

BMC = Option(
    "bmc",
    "str",
    ("The BMC as C(HOST) or C(HOST:PORT) (exactly one BMC; no ranges).",),
    required=True,
    cli=False,
)
USERNAME = Option(
    "username",
    "str",
    ("BMC user name; default from C(username_env) or C(credentials_file).",),
)
PASSWORD = Option(
    "password",
    "str",
    (
        "BMC password (never logged); default from C(password_env) or C(credentials_file).",
        "Prefer the environment or the file over a literal.",
    ),
    no_log=True,
    cli=False,
)
USERNAME_ENV = Option(
    "username_env",
    "str",
    ("Environment variable holding the user name.",),
    default=credentials.BMC_USERNAME_ENV,
    metavar="VAR",
)
PASSWORD_ENV = Option(
    "password_env",
    "str",
    ("Environment variable holding the password.",),
    default=credentials.BMC_PASSWORD_ENV,
    no_log=False,
    metavar="VAR",
)
CREDENTIALS_FILE = Option(
    "credentials_file",
    "path",
    (
        "C(KEY=VALUE) file read for the user name and password variables when the environment"
        " lacks them (the lab's C(secrets/bmc.env)).",
        "It must be readable by its owner only (mode 0600 or stricter); otherwise it is refused.",
    ),
    deprecated=("--env-file",),
    metavar="FILE",
)
CA_BUNDLE = ca_bundle_option(
    "CA bundle to verify BMC certificates with (default the system store)."
)
VALIDATE_CERTS = Option(
    "validate_certs",
    "bool",
    (
        "Verify BMC certificates. Set to false only to opt out; every BMC is then logged as"
        " insecure.",
    ),
    default=True,
    cli_flag="--insecure",
    cli_help="do not verify BMC certificates (each BMC is then logged as insecure)",
    deprecated=("--no-validate-certs",),
)
SCHEME = Option(
    "scheme",
    "str",
    ("C(https) for real BMCs; C(http) only for emulators.",),
    default="https",
    choices=("https", "http"),
)
AUTH = Option(
    "auth",
    "str",
    ("C(session) (a Redfish session; Basic when the BMC has no session service) or C(basic).",),
    default="session",
    choices=("session", "basic"),
)
CONNECT_TIMEOUT = Option(
    "connect_timeout",
    "float",
    ("Seconds to wait for a connection.",),
    default=DEFAULT_CONNECT_TIMEOUT,
    cli_type=seconds,
)
READ_TIMEOUT = Option(
    "read_timeout",
    "float",
    (
        "Seconds one answer may take once connected, however slowly it trickles in, and the"
        " longest silence tolerated.",
    ),
    default=DEFAULT_READ_TIMEOUT,
    cli_type=seconds,
)
RETRIES = Option(
    "retries",
    "int",
    ("Extra attempts after connection errors (safe requests only).",),
    default=DEFAULT_RETRIES,
    cli_type=count,
)
DEADLINE = Option(
    "deadline",
    "float",
    (
        "Seconds each BMC may take in total: every request, retry and backoff (an action's"
        " C(wait) comes on top). The error says which limit ran out.",
    ),
    default=DEFAULT_DEADLINE,
    cli_type=seconds,
)
ALLOW_NAMES = Option(
    "allow_names",
    "bool",
    (
        "Accept DNS names as BMCs. Each name is resolved once and the address contacted is"
        " reported; off by default so that nothing but an address can choose where the"
        " password goes.",
    ),
    default=False,
)
MAX_ANSWER_BYTES = Option(
    "max_answer_bytes",
    "int",
    ("Largest answer read from a BMC, in bytes; a larger one is refused unread (malformed).",),
    default=DEFAULT_MAX_BYTES,
    cli_type=positive_int,
)

VENDOR = Option(
    "vendor",
    "str",
    (
        "Vendor profile: what is read from where and how actions are written (boot-once"
        " payload, settings object, C(If-Match)). C(auto) chooses per server from its"
        " C(Manufacturer), then the service root; name a profile to override that for every"
        ' BMC (docs/redfish.md, "Vendor profiles").',
    ),
    default=vendors.AUTO,
    choices=(vendors.AUTO, *vendors.PROFILES),
)
SYSTEM = Option(
    "system",
    "str",
    (
        "The ComputerSystem that power and boot act on, by C(@odata.id) or C(Id), where one BMC"
        " serves several"
        " hosts (a multi-node chassis): the inventory's C(redfish_system_uri). Without it such a"
        " BMC is refused, never guessed. A DGX's baseboard system is not a host and needs none.",
    ),
    cli=False,
)

#: What every redfish_* module takes (order = documentation order).
MODULE = (
    BMC,
    USERNAME,
    PASSWORD,
    USERNAME_ENV,
    PASSWORD_ENV,
    CREDENTIALS_FILE,
    CA_BUNDLE,
    VALIDATE_CERTS,
    SCHEME,
    AUTH,
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    RETRIES,
    DEADLINE,
    ALLOW_NAMES,
    MAX_ANSWER_BYTES,
    VENDOR,
    SYSTEM,
)

PORT = Option("port", "int", ("Port for targets that name none.",), default=443)
CONCURRENCY = Option(
    "concurrency",
    "int",
    ("BMCs queried at once.",),
    default=DEFAULT_CONCURRENCY,
    cli_type=positive_int,
)
PXE_RULES = Option(
    "pxe_rules",
    "list",
    (
        "How to pick the PXE NIC, tried in order; C(redfish_pxe_rule) says which matched.",
        "Rule kinds: " + ", ".join(f"C({kind})" for kind in pxe.RULE_KINDS) + ".",
        'Unset: each host\'s vendor profile rules (docs/redfish.md, "Vendor profiles"); a list'
        " given, Dell's included, is used as given for every host.",
    ),
    elements="str",
    aliases=("--pxe-rule",),
    metavar="RULE",
)
EXTRAS_OPTION = Option(
    "extras",
    "list",
    ("Extra facts to collect (more requests per BMC).",),
    default=[],
    elements="str",
    choices=tuple(sorted(EXTRAS)),
    aliases=("--extra",),
)

#: What discovery takes on top of the connection options (inventory plugin, CLI discover).
DISCOVERY = (PORT, CONCURRENCY, PXE_RULES, EXTRAS_OPTION)

#: Connection options a command-line user sets (the password never comes from argv).
CLI_CONNECTION = tuple(o for o in MODULE if o.cli)

#: The doc fragment attributes of plugins/doc_fragments/racksmith_redfish.py.
FRAGMENTS = {"DOCUMENTATION": MODULE}


if (
    __name__ == "__main__"
):  # pragma: no cover - regenerates plugins/doc_fragments/racksmith_redfish.py
    print_fragments("racksmith_redfish", FRAGMENTS)
