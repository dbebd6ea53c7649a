# racksmith: options every maas_* module shares.
# GENERATED from racksmith/maas/options.py (python -m racksmith.maas.options); do not edit by
# hand: tests/unit/maas/test_maas_options.py fails when this text and the options differ.
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  maas_url:
    description: MAAS URL, e.g. C(http://maas:5240/MAAS/); default from C(MAAS_URL)
      or C(credentials_file).
    type: str
  maas_api_key:
    description: API key C(consumer:token:secret) (never logged); default from C(MAAS_API_KEY)
      or C(credentials_file). Prefer the environment or the file over a literal.
    type: str
  credentials_file:
    description:
    - C(KEY=VALUE) file with C(MAAS_URL) and C(MAAS_API_KEY), read when the environment
      lacks them; C(${VAR:-default}) is expanded.
    - It must be readable by its owner only (mode 0600 or stricter); otherwise it
      is refused.
    - C(maas_credentials_file) is the old spelling, still accepted.
    type: path
    aliases:
    - maas_credentials_file
  validate_certs:
    description: Verify MAAS's TLS certificate.
    type: bool
    default: true
  ca_bundle:
    description:
    - CA bundle to verify MAAS's certificate with.
    - C(ca_path) is accepted as another name for it.
    type: path
    aliases:
    - ca_path
  connect_timeout:
    description: Seconds to wait for a connection to MAAS.
    type: float
    default: 10.0
  read_timeout:
    description:
    - Seconds one request may take once connected (its whole answer, however slowly
      it trickles in).
    - C(timeout) is the old spelling, still accepted.
    type: float
    default: 30.0
    aliases:
    - timeout
  deadline:
    description: Seconds one API call may take with every retry and backoff; a MAAS
      that never answers fails within it. Status waits are bounded by C(wait_budgets)
      instead.
    type: float
    default: 55.0
  max_answer_bytes:
    description: Largest answer read from MAAS, in bytes; a larger one is refused
      unread.
    type: int
    default: 67108864
  poll_interval:
    description: Seconds between status polls (jittered +-25%); default 10-15.
    type: float
  wait_budgets:
    description: Minutes a machine may stay in each transitional state, by state name
      (commissioning 45, testing 45, allocated 10, deploying 60, releasing 15, disk_erasing
      360).
    type: dict
    default: {}
  power_actions_per_minute:
    description:
    - 'The fleet''s power pacing: commission, deploy and release (MAAS powers the
      machine for each) take a slot of one fleet-wide pace, shared with every BMC
      power action of the controller; C(0) turns pacing off.'
    - Default from C(RACKSMITH_POWER_ACTIONS_PER_MINUTE), else 20 per minute (the
      playbooks pass C(racksmith_power_actions_per_minute)).
    - A wait for the slot longer than the budget of the state the operation starts
      (see C(wait_budgets)) is refused before anything is sent.
    type: float
"""

    # racksmith_maas.selector: how maas_deploy and maas_release name their one machine.
    SELECTOR = r"""
options:
  pxe_mac:
    description: PXE MAC of the machine (preferred selector).
    type: str
  system_id:
    description: MAAS system id.
    type: str
  hostname:
    description: MAAS hostname.
    type: str
"""
