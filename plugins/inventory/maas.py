# racksmith: Ansible inventory plugin over racksmith.maas (a thin adapter; logic lives there).
from __future__ import annotations

DOCUMENTATION = r"""
name: maas
short_description: MAAS machines as hosts; deployed ones as SSH targets in group maas_deployed
description:
  - Lists MAAS machines (one C(GET machines/)) and adds one host per machine, named by its MAAS
    hostname (racksmith enlists machines under the Redfish inventory's hostname, so both
    inventories describe the same host).
  - Deployed machines with an address get C(ansible_host) (their first IP) and C(ansible_user)
    and join C(maas_deployed). Every machine joins C(maas_status_<status>) (e.g.
    C(maas_status_failed_deployment)), C(maas_tag_<tag>), C(maas_pool_<pool>) and
    C(maas_zone_<zone>), and gets C(maas_*) facts (system id, status, tags, boot disk...).
  - Credentials by reference only (C(MAAS_URL)/C(MAAS_API_KEY) or a C(KEY=VALUE) file); the
    cache holds machine facts, never the key.
  - Any configuration error, an unreachable or silent MAAS, or an answer that is not a machine
    listing fails the inventory with the reason (with racksmith's C(ansible.cfg) the run stops).
  - Options share names and defaults with the C(maas_*) modules and C(racksmith maas); they are
    defined once in C(racksmith.maas.options).
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this file as a racksmith MAAS inventory.
    required: true
    choices: [maas, racksmith.core.maas]
  credentials_file:
    description:
      - C(KEY=VALUE) file with C(MAAS_URL) and C(MAAS_API_KEY), read when the environment lacks
        them; C(${VAR:-default}) is expanded.
      - It must be readable by its owner only (mode 0600 or stricter); otherwise it is refused.
    type: str
  validate_certs:
    description: Verify MAAS's TLS certificate.
    type: bool
    default: true
  ca_bundle:
    description:
      - CA bundle for MAAS's certificate.
      - C(ca_path) is accepted as another name for it.
    type: str
    aliases: [ca_path]
  statuses:
    description: Only machines in these statuses (lowercase names, e.g. C(deployed)); default all.
    type: list
    elements: str
    default: []
  ansible_user:
    description: SSH user set on deployed machines.
    type: str
    default: ubuntu
  private_key_file:
    description: SSH key set on deployed machines (C(${VAR:-default}) is expanded); unset leaves it.
    type: str
  connect_timeout:
    description: Seconds to wait for a connection to MAAS.
    type: float
    default: 10
  read_timeout:
    description:
      - Seconds one request may take once connected (its whole answer, however slowly it
        trickles in).
      - C(timeout) is the old spelling, still accepted.
    type: float
    default: 30
    aliases: [timeout]
  deadline:
    description:
      - Seconds the listing may take with every retry and backoff; a MAAS that never answers
        fails the inventory within it.
    type: float
    default: 55
  max_answer_bytes:
    description: Largest answer read from MAAS, in bytes; a larger one is refused unread.
    type: int
    default: 67108864
  quarantine_tag:
    description:
      - Machines carrying this MAAS tag join group C(quarantine), with
        C(racksmith_quarantine_reason) naming the tag - the quarantine a sliced run's prepare job
        recorded (M(racksmith.core.maas_quarantine_tag); docs/awx.md section 8).
      - Set it in the inventory the slice jobs read (C(racksmith-quarantine)), not in the one the
        prepare job reads, which decides the quarantine afresh. Empty (the default) reads no
        quarantine from MAAS.
    type: str
    default: ""
"""

EXAMPLES = r"""
plugin: maas
credentials_file: ${RACKSMITH_LAB_DIR:-/var/lib/racksmith/lab}/secrets/maas.env
private_key_file: ${RACKSMITH_LAB_DIR:-/var/lib/racksmith/lab}/keys/id_ed25519
keyed_groups:
  - key: maas_hwe_kernel
    prefix: kernel
"""

import re

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

try:
    from racksmith.maas import options as maas_options
    from racksmith.maas.auth import resolve_credentials
    from racksmith.maas.errors import MaasError
    from racksmith.maas.model import NodeStatus, parse_machines
    from racksmith.secrets import expand_path
except ImportError as exc:  # pragma: no cover - depends on the controller's environment
    RACKSMITH_IMPORT_ERROR: ImportError | None = exc
else:
    RACKSMITH_IMPORT_ERROR = None

_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")
_TAG = re.compile(r"^[A-Za-z0-9_-]+$")


def _group(prefix: str, value: str) -> str:
    return f"maas_{prefix}_{_UNSAFE.sub('_', value).strip('_').lower()}"


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "maas"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("maas.yml", "maas.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        if RACKSMITH_IMPORT_ERROR is not None:
            raise AnsibleParserError(
                f"the maas inventory needs the racksmith package: {RACKSMITH_IMPORT_ERROR}"
            )
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache")
        summaries = None
        if use_cache and cache:
            summaries = self._cache.get(cache_key)
        if summaries is None:
            summaries = self._fetch(path)
            if use_cache:
                self._cache[cache_key] = summaries  # machine facts only, never the key
        self._populate(summaries)

    def _fetch(self, path):
        credentials_file = self.get_option("credentials_file")
        ca_bundle = self.get_option("ca_bundle")
        try:
            creds = resolve_credentials(
                credentials_file=expand_path(credentials_file) if credentials_file else None
            )
            verify = str(expand_path(ca_bundle)) if ca_bundle else self.get_option("validate_certs")
            statuses = [NodeStatus[s.upper()].filter_name for s in self.get_option("statuses")]
            limits = ("connect_timeout", "read_timeout", "deadline", "max_answer_bytes")
            settings = {name: self.get_option(name) for name in limits}
            with maas_options.client_for(creds, verify, settings) as client:
                data = client.get("machines/", {"status": statuses} if statuses else None)
                return [m.summary() for m in parse_machines(data)]
        except KeyError as exc:
            raise AnsibleParserError(f"{path}: unknown MAAS status {exc}") from None
        except MaasError as exc:
            raise AnsibleParserError(f"{path}: cannot list MAAS machines: {exc}") from None

    def _populate(self, summaries):
        self.inventory.add_group("maas_deployed")
        strict = self.get_option("strict")
        key_file = self.get_option("private_key_file")
        quarantine_tag = self.get_option("quarantine_tag") or ""
        if quarantine_tag and not _TAG.match(quarantine_tag):
            raise AnsibleParserError(
                f"quarantine_tag {quarantine_tag!r}: letters, digits, '-' and '_' only"
            )
        for machine in summaries:
            name = machine["hostname"] or machine["system_id"]
            host = self.inventory.add_host(name)
            hostvars = {f"maas_{k}": v for k, v in machine.items()}
            deployed = machine["status"] == NodeStatus.DEPLOYED and machine["ip_addresses"]
            if deployed:
                hostvars["ansible_host"] = machine["ip_addresses"][0]
                hostvars["ansible_user"] = self.get_option("ansible_user")
                if key_file:
                    hostvars["ansible_ssh_private_key_file"] = str(expand_path(key_file))
                self.inventory.add_child("maas_deployed", host)
            groups = [_group("status", NodeStatus(machine["status"]).filter_name)]
            groups += [_group("tag", t) for t in machine["tags"]]
            groups += [_group("pool", machine["pool"])] if machine["pool"] else []
            groups += [_group("zone", machine["zone"])] if machine["zone"] else []
            for group in groups:
                self.inventory.add_group(group)
                self.inventory.add_child(group, host)
            if quarantine_tag and quarantine_tag in machine["tags"]:
                self.inventory.add_group("quarantine")
                self.inventory.add_child("quarantine", host)
                hostvars["racksmith_quarantine_reason"] = (
                    f"quarantined by the run's prepare job (MAAS tag {quarantine_tag})"
                )
            for key, value in hostvars.items():
                self.inventory.set_variable(host, key, value)
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(
                self.get_option("groups"), hostvars, host, strict=strict
            )
            self._add_host_to_keyed_groups(
                self.get_option("keyed_groups"), hostvars, host, strict=strict
            )
