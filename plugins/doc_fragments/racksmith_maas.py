# racksmith: options every maas_* module shares (racksmith.maas.ansible CONNECTION_ARGS, WAIT_ARGS).
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  maas_url:
    description:
      - MAAS URL, e.g. C(http://maas:5240/MAAS/); default from C(MAAS_URL) or
        C(maas_credentials_file).
    type: str
  maas_api_key:
    description:
      - API key C(consumer:token:secret) (never logged); default from C(MAAS_API_KEY) or
        C(maas_credentials_file). Prefer the environment or the file over a literal.
    type: str
  maas_credentials_file:
    description:
      - C(KEY=VALUE) file with C(MAAS_URL) and C(MAAS_API_KEY), read when the environment
        lacks them; C(${VAR:-default}) is expanded.
    type: str
  validate_certs:
    description: Verify MAAS's TLS certificate.
    type: bool
    default: true
  ca_bundle:
    description: CA bundle to verify MAAS's certificate with.
    type: path
  poll_interval:
    description: Seconds between status polls (jittered +-25%); default 10-15.
    type: float
  wait_budgets:
    description:
      - Minutes a machine may stay in each transitional state, by state name
        (commissioning 45, testing 45, allocated 10, deploying 60, releasing 15, disk_erasing 360).
    type: dict
    default: {}
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
