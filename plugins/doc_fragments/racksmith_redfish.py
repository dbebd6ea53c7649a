# racksmith: options every redfish_* module shares.
# GENERATED from racksmith/redfish/options.py (python -m racksmith.redfish.options); do not edit by
# hand: tests/unit/redfish/test_redfish_options.py fails when this text and the options differ.
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  bmc:
    description: The BMC as C(HOST) or C(HOST:PORT) (exactly one BMC; no ranges).
    type: str
    required: true
  username:
    description: BMC user name; default from C(username_env) or C(credentials_file).
    type: str
  password:
    description:
    - BMC password (never logged); default from C(password_env) or C(credentials_file).
    - Prefer the environment or the file over a literal.
    type: str
  username_env:
    description: Environment variable holding the user name.
    type: str
    default: RACKSMITH_BMC_USERNAME
  password_env:
    description: Environment variable holding the password.
    type: str
    default: RACKSMITH_BMC_PASSWORD
  credentials_file:
    description:
    - C(KEY=VALUE) file read for the user name and password variables when the environment
      lacks them (the lab's C(secrets/bmc.env)).
    - It must be readable by its owner only (mode 0600 or stricter); otherwise it
      is refused.
    type: path
  ca_bundle:
    description:
    - CA bundle to verify BMC certificates with (default the system store).
    - C(ca_path) is accepted as another name for it.
    type: path
    aliases:
    - ca_path
  validate_certs:
    description: Verify BMC certificates. Set to false only to opt out; every BMC
      is then logged as insecure.
    type: bool
    default: true
  scheme:
    description: C(https) for real BMCs; C(http) only for emulators.
    type: str
    default: https
    choices:
    - https
    - http
  auth:
    description: C(session) (a Redfish session; Basic when the BMC has no session
      service) or C(basic).
    type: str
    default: session
    choices:
    - session
    - basic
  connect_timeout:
    description: Seconds to wait for a connection.
    type: float
    default: 5.0
  read_timeout:
    description: Seconds one answer may take once connected, however slowly it trickles
      in, and the longest silence tolerated.
    type: float
    default: 30.0
  retries:
    description: Extra attempts after connection errors (safe requests only).
    type: int
    default: 2
  deadline:
    description: 'Seconds each BMC may take in total: every request, retry and backoff
      (an action''s C(wait) comes on top). The error says which limit ran out.'
    type: float
    default: 120.0
  allow_names:
    description: Accept DNS names as BMCs. Each name is resolved once and the address
      contacted is reported; off by default so that nothing but an address can choose
      where the password goes.
    type: bool
    default: false
  max_answer_bytes:
    description: Largest answer read from a BMC, in bytes; a larger one is refused
      unread (malformed).
    type: int
    default: 16777216
  vendor:
    description: 'Vendor profile: what is read from where and how actions are written
      (boot-once payload, settings object, C(If-Match)). C(auto) chooses per server
      from its C(Manufacturer), then the service root; name a profile to override
      that for every BMC (docs/redfish.md, "Vendor profiles").'
    type: str
    default: auto
    choices:
    - auto
    - dell
    - supermicro
    - lenovo
    - hpe
    - nvidia-dgx
    - nvidia-openbmc
    - generic
  system:
    description: 'The ComputerSystem that power and boot act on, by C(@odata.id) or
      C(Id), where one BMC serves several hosts (a multi-node chassis): the inventory''s
      C(redfish_system_uri). Without it such a BMC is refused, never guessed. A DGX''s
      baseboard system is not a host and needs none.'
    type: str
"""
