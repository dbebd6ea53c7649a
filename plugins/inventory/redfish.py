# racksmith: Ansible inventory plugin over racksmith.redfish (a thin adapter; logic lives there).
from __future__ import annotations

DOCUMENTATION = r"""
name: redfish
short_description: Discover servers through their BMCs (Redfish, Dell iDRAC first)
description:
  - Queries every BMC in C(targets) concurrently (bounded by C(concurrency), each BMC within
    C(deadline) seconds) and adds one host per server with C(redfish_*) hardware facts. A BMC
    serving several servers (a multi-node chassis) gives one host per node, each with its
    C(redfish_system_uri) (what the C(redfish_*) modules take as C(system)).
  - A host whose facts were read but one could not be decided (no PXE NIC) keeps every fact
    read next to C(redfish_error), so it is named by its service tag like a healthy one.
  - A BMC that is dead, slow, rejects the credentials or answers with unusable data never fails
    the inventory. Its host lands in C(bmc_unreachable), C(bmc_timeout), C(bmc_auth_failed) or
    C(bmc_malformed) with C(redfish_error) saying why. Healthy hosts are in C(bmc_ok).
  - Two BMCs reporting the same MAC, serial, service tag or UUID are both put in
    C(bmc_duplicate) (not C(bmc_ok)); they are never merged into one host.
  - Each host also gets C(redfish_connection) (scheme, validate_certs, ca_bundle,
    credentials_file, username_env, password_env) so the C(redfish_*) modules reach the BMC the
    same way; it holds references, never a secret.
  - Credentials are taken by reference (environment variables, an env file, or a vault-encrypted
    C(password)); a plain-text password in the inventory file is refused. Cached data holds
    discovered facts only, never a credential.
  - A configuration error (bad target, plain-text password, missing credentials, a credentials
    file others can read) fails the inventory with a message naming the file; with
    C(unparsed_is_failed) set (racksmith's C(ansible.cfg) does) the run stops.
  - Options share names and defaults with the C(redfish_*) modules and
    C(racksmith redfish discover); they are defined once in C(racksmith.redfish.options).
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this file as a racksmith Redfish inventory.
    required: true
    choices: [redfish, racksmith.core.redfish]
  targets:
    description:
      - BMCs as C(ADDRESS[:PORT]), C(ADDRESS:PORT-PORT), CIDRs (C(10.0.0.0/28)), address ranges
        (C(10.0.0.10-10.0.0.40), C(10.0.0.10-40)) or C([IPv6]:PORT).
      - Addresses are dotted quads; C(127.1)-style shorthands are refused. DNS names only with
        C(allow_names).
    type: list
    elements: str
    required: true
  port:
    description: Port for targets that name none.
    type: int
    default: 443
  scheme:
    description: C(https) for real BMCs; C(http) only for emulators.
    type: str
    default: https
    choices: [https, http]
  username:
    description: BMC user name; when unset, C(username_env) (or C(credentials_file)) supplies it.
    type: str
  username_env:
    description: Environment variable holding the user name.
    type: str
    default: RACKSMITH_BMC_USERNAME
  password:
    description: A vault-encrypted password (C(!vault)). Plain text is refused.
    type: str
  password_env:
    description: Environment variable holding the password.
    type: str
    default: RACKSMITH_BMC_PASSWORD
  credentials_file:
    description:
      - A C(KEY=VALUE) file read for the two variables when the environment lacks them (the lab's
        C(secrets/bmc.env)). C(${VAR:-default}) and C(~) are expanded.
      - It must be readable by its owner only (mode 0600 or stricter); otherwise it is refused.
    type: str
  ca_bundle:
    description:
      - CA bundle used to verify BMC certificates (C(${VAR:-default}) expanded).
      - Default is the system store.
      - C(ca_path) is accepted as another name for it.
    type: str
    aliases: [ca_path]
  validate_certs:
    description:
      - Set to false only to opt out of TLS verification.
      - Every BMC is then logged as insecure.
    type: bool
    default: true
  auth:
    description:
      - C(session) (Redfish session; Basic when the BMC has no session service) or C(basic).
    type: str
    default: session
    choices: [session, basic]
  concurrency:
    description: BMCs queried at once.
    type: int
    default: 64
  deadline:
    description:
      - Seconds each BMC may take in total (all its requests, retries and backoff). Every request
        ends within it, however slowly a BMC trickles bytes.
    type: float
    default: 120
  allow_names:
    description:
      - Accept DNS names in C(targets). Each name is resolved once; C(redfish_address) is the
        address contacted.
    type: bool
    default: false
  max_answer_bytes:
    description: Largest answer read from a BMC, in bytes; a larger one is refused unread.
    type: int
    default: 16777216
  connect_timeout:
    description: Seconds to wait for a connection.
    type: float
    default: 5
  read_timeout:
    description:
      - Seconds one answer may take once connected, however slowly it trickles in, and the
        longest silence tolerated.
    type: float
    default: 30
  retries:
    description: Extra attempts after connection errors (safe requests only).
    type: int
    default: 2
  pxe_rules:
    description:
    - How to pick the PXE NIC, tried in order; C(redfish_pxe_rule) says which matched.
    - 'Rule kinds: C(id:<NIC id>), C(slot:<n>), C(prefix:<id prefix>), C(link:up), C(boot:pxe),
      C(first).'
    - 'Unset: each host''s vendor profile rules (docs/redfish.md, "Vendor profiles"); a list given,
      Dell''s included, is used as given for every host.'
    type: list
    elements: str
  vendor:
    description:
      - 'Vendor profile: what is read from where and how actions are written (boot-once
        payload, settings object, C(If-Match)).'
      - C(auto) chooses per server from its C(Manufacturer), then the service root; name a
        profile to override that for every BMC (docs/redfish.md, "Vendor profiles").
    type: str
    default: auto
    choices: [auto, dell, supermicro, lenovo, hpe, nvidia-dgx, nvidia-openbmc, generic]
  extras:
    description: Extra facts to collect (more requests per BMC).
    type: list
    elements: str
    default: []
    choices: [bios, bmc_health, firmware, infiniband, memory, pcie]
  progress_interval:
    description:
      - Seconds between two progress lines on stderr while BMCs are read (BMCs answered,
        failed and pending, and the time taken); failed BMCs are named at once.
      - C(RACKSMITH_PROGRESS_INTERVAL) sets every progress interval of a run (this one and the
        report callback's); C(RACKSMITH_DISCOVER_PROGRESS_INTERVAL), the older name, is still read.
    type: float
    default: 10
    env:
      # RACKSMITH_PROGRESS_INTERVAL is the one progress setting (the report callback's too); the
      # older discovery-only name is still read, and the shared one wins when both are set.
      - name: RACKSMITH_DISCOVER_PROGRESS_INTERVAL
      - name: RACKSMITH_PROGRESS_INTERVAL
  hostname:
    description:
      - Jinja2 template for the inventory hostname, over the un-prefixed facts
        (C(service_tag), C(serial), C(model), C(bmc), ...).
      - "Default: C({{ service_tag | lower }}), the name MAAS also uses."
    type: str
  failed_hostname:
    description:
      - Template for hosts whose BMC gave no service tag (C(bmc) and C(system_uri) are known).
      - "Default: C(bmc-{{ bmc | replace(':', '-') }})."
      - Names that collide get a suffix (the BMC, or the node's system id where one BMC has
        several hosts); hosts are never merged.
    type: str
"""

EXAMPLES = r"""
plugin: redfish
targets: [10.20.0.0/26, 10.20.1.10-10.20.1.40]
ca_bundle: /etc/racksmith/bmc-ca.pem
concurrency: 64
deadline: 90
keyed_groups:
  - key: redfish_model
    prefix: model
"""

import logging
import re
import time

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core < 2.19: templates from inventory config are trusted anyway

    def trust_as_template(value):
        return value


try:
    from racksmith import credentials as rs_credentials
    from racksmith.redfish import hostnames as rs_hostnames
    from racksmith.redfish import targets as rs_targets
    from racksmith.redfish.client import ClientOptions
    from racksmith.redfish.discover import DiscoveryOptions, discover
    from racksmith.redfish.progress import DiscoveryPrinter
    from racksmith.secrets import expand_path
except ImportError as exc:  # pragma: no cover - depends on the controller's environment
    RACKSMITH_IMPORT_ERROR: ImportError | None = exc
else:
    RACKSMITH_IMPORT_ERROR = None

FAILURE_GROUPS = (
    "bmc_unreachable",
    "bmc_auth_failed",
    "bmc_malformed",
    "bmc_timeout",
    "bmc_duplicate",
)
PREFIX = "redfish_"
# Defaults live here, not in DOCUMENTATION: Ansible templates string defaults at load time.
DEFAULT_HOSTNAME = "{{ service_tag | lower }}"
DEFAULT_FAILED_HOSTNAME = "bmc-{{ bmc | replace(':', '-') }}"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class _DisplayHandler(logging.Handler):
    """racksmith's log records -> Ansible's display (warnings stay warnings, detail at -vvv)."""

    def __init__(self, display):
        super().__init__()
        self.display = display

    def emit(self, record):
        message = f"redfish: {record.getMessage()}"
        if record.levelno >= logging.WARNING:
            self.display.warning(message)
        elif record.levelno >= logging.INFO:
            self.display.vv(message)
        else:
            self.display.vvvv(message)


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "redfish"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("redfish.yml", "redfish.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        if RACKSMITH_IMPORT_ERROR is not None:
            raise AnsibleParserError(
                f"the redfish inventory needs the racksmith package: {RACKSMITH_IMPORT_ERROR}"
            )
        config = self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache")
        records = None
        if use_cache and cache:
            try:
                records = self._cache[cache_key]
            except KeyError:
                records = None
        if records is None:
            records = self._discover(config, path)
            if use_cache:
                self._cache[cache_key] = records  # facts and reasons only: never a credential
        self._populate(records)

    # -- discovery ---------------------------------------------------------------------------------

    def _vault_password(self, config, path):
        """The password from a ``!vault`` value in the file, None when unset; plain text is
        refused."""
        raw = config.get("password")
        if raw is None:
            return None
        try:
            from ansible.parsing.vault import VaultHelper

            vaulted = VaultHelper.get_ciphertext(raw, with_tags=False) is not None
        except ImportError:  # pragma: no cover - ansible-core < 2.19
            vaulted = type(raw).__name__ == "AnsibleVaultEncryptedUnicode"
        if not vaulted:
            raise AnsibleParserError(
                f"{path}: 'password' is plain text; use password_env, credentials_file or !vault"
            )
        return str(raw)

    def _credentials(self, config, path):
        password = self._vault_password(config, path)
        try:
            return rs_credentials.bmc(
                username=self.get_option("username"),
                password=password,
                username_env=self.get_option("username_env"),
                password_env=self.get_option("password_env"),
                credentials_file=self.get_option("credentials_file"),
            )
        except rs_credentials.CredentialsError as exc:
            raise AnsibleParserError(f"{path}: {exc}") from None

    def _discovery_options(self, path):
        """The targets, the discovery options and the CA bundle's path from the plugin's
        options; a bad option is a parser error naming the file."""
        try:
            found = rs_targets.expand(
                self.get_option("targets") or [],
                default_port=self.get_option("port"),
                allow_names=bool(self.get_option("allow_names")),
            )
            ca_bundle = self.get_option("ca_bundle")
            ca_path = str(expand_path(ca_bundle)) if ca_bundle else None
            if ca_path and self.get_option("validate_certs"):
                with open(ca_path, "rb"):
                    pass
            options = DiscoveryOptions(
                client=ClientOptions.from_params(
                    {
                        **{name: self.get_option(name) for name in ClientOptions.PARAMS},
                        "ca_bundle": ca_path,
                    }
                ),
                concurrency=int(self.get_option("concurrency")),
                deadline=float(self.get_option("deadline")),
                pxe_rules=tuple(rules) if (rules := self.get_option("pxe_rules")) else None,
                extras=frozenset(self.get_option("extras") or ()),
                vendor=self.get_option("vendor"),
            )
        except OSError as exc:
            raise AnsibleParserError(f"{path}: ca_bundle {exc.filename}: {exc.strerror}") from None
        except (rs_targets.TargetError, ValueError, TypeError) as exc:
            raise AnsibleParserError(f"{path}: {exc}") from None
        return found, options, ca_path

    def _discover(self, config, path):
        found, options, ca_path = self._discovery_options(path)
        creds = self._credentials(config, path)
        handler = _DisplayHandler(self.display)
        logger = logging.getLogger("racksmith.redfish")
        logger.addHandler(handler)
        previous_level = logger.level
        logger.setLevel(logging.DEBUG if self.display.verbosity >= 4 else logging.INFO)
        started = time.monotonic()
        try:
            printer = DiscoveryPrinter(float(self.get_option("progress_interval")))
        except (TypeError, ValueError) as exc:
            raise AnsibleParserError(f"{path}: progress_interval: {exc}") from None

        def progress(snapshot):
            # answered / failed / pending on stderr while hundreds of BMCs are read
            for line in printer.feed(snapshot, time.monotonic()):
                self.display.display(line, stderr=True)

        try:
            results = discover(found, creds, options, progress=progress)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(previous_level)
        # How modules reach the same BMCs with the same trust settings: references only.
        connection = {
            "scheme": options.client.scheme,
            "validate_certs": options.client.verify,
            "ca_bundle": ca_path,
            "credentials_file": str(expand_path(self.get_option("credentials_file")))
            if self.get_option("credentials_file")
            else None,
            "username_env": self.get_option("username_env"),
            "password_env": self.get_option("password_env"),
            "allow_names": bool(self.get_option("allow_names")),
        }
        records = []
        for result in results:
            record = result.as_dict()
            record["connection"] = connection
            record["group"] = result.group
            records.append(record)
        self._say_outcome(records, len(found), started)
        return records

    def _say_outcome(self, records, targets, started):
        failed = [r for r in records if r["group"] != "bmc_ok"]
        # tests/bench/bench_redfish.py reads this line: keep "N/M BMCs ok in Ts" first
        nodes = f" ({len(records)} hosts)" if len(records) != targets else ""
        self.display.v(
            f"redfish: {len(records) - len(failed)}/{len(records)} BMCs ok in "
            f"{time.monotonic() - started:.1f}s{nodes}"
        )
        if failed:
            by_group = {}
            for r in failed:
                by_group[r["group"]] = by_group.get(r["group"], 0) + 1
            summary = ", ".join(f"{n} in {g}" for g, n in sorted(by_group.items()))
            self.display.warning(
                f"redfish: {len(failed)} of {len(records)} BMCs failed ({summary}); see "
                "redfish_error"
            )

    # -- inventory

    def _render(self, template, variables):
        self.templar.available_variables = variables
        return str(self.templar.template(trust_as_template(template))).strip()

    def _hostname(self, record):
        facts = {k: v for k, v in record.items() if k != "group"}
        if record.get("service_tag"):
            try:
                name = self._render(self.get_option("hostname") or DEFAULT_HOSTNAME, facts)
            except Exception as exc:
                return None, f"hostname template failed: {exc}"
            if _SAFE_NAME.match(name or ""):
                return name, None
            return None, f"hostname template gave {name!r}, not a usable host name"
        return None, None

    def _populate(self, records):
        for group in ("bmc_ok", *FAILURE_GROUPS):
            self.inventory.add_group(group)
        named = []
        for record in records:
            record = dict(record)
            name, problem = self._hostname(record)
            if problem:
                record["group"] = "bmc_malformed"
                record["error"] = "; ".join(filter(None, (record.get("error"), problem)))
                record["error_kind"] = "malformed"
            if name is None:
                name = self._render(
                    self.get_option("failed_hostname") or DEFAULT_FAILED_HOSTNAME,
                    {"bmc": record["bmc"], "system_uri": record.get("system_uri")},
                )
            named.append((name, record))
        strict = self.get_option("strict")
        # never merge two hosts: colliding names get the BMC or the node as a suffix
        names = rs_hostnames.distinct(named)
        for name, (_template_name, record) in zip(names, named, strict=True):
            group = record.pop("group")
            host = self.inventory.add_host(name, group=group)
            hostvars = {PREFIX + key: value for key, value in record.items()}
            for key, value in hostvars.items():
                self.inventory.set_variable(host, key, value)
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(
                self.get_option("groups"), hostvars, host, strict=strict
            )
            self._add_host_to_keyed_groups(
                self.get_option("keyed_groups"), hostvars, host, strict=strict
            )
