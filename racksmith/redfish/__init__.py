"""Redfish discovery and control of BMCs (Dell iDRAC first).

Layers, each in its own module so a reader finds one concern per file:

- ``targets``: BMC addresses, CIDRs and ranges expanded into ``host:port`` targets.
- ``credentials``: the user name and password, held so they cannot leak by ``repr`` or ``str``.
- ``client``: one BMC's HTTP session (Redfish session auth, TLS, timeouts, bounded retries).
- ``parse``: pure functions from Redfish JSON to typed facts (no I/O, tested on real captures).
- ``vendors``: vendor profiles (Dell, Supermicro, Lenovo, HPE, NVIDIA DGX, NVIDIA OpenBMC,
  generic): what is read from where, and how each vendor wants a boot override written (pure
  data).
- ``pxe``: the PXE rules and the choice of the PXE NIC (unset rules: the vendor profile's).
- ``firmware``: the firmware inventory keyed by a stable component identity, a version order.
- ``baseline``: the site's firmware/BIOS baselines per host type and the verdict per host
  (COMPLIANT, PENDING, DRIFT, UNKNOWN; the fleet rule); ``compliance`` runs it on BMCs.
- ``discover``: many BMCs at once, bounded concurrency, a deadline per BMC, typed outcomes
  (one per host: a multi-node chassis gives several).
- ``actions``: power, one-time PXE boot and clock, each reading back what it changed, each
  following the host's vendor profile.
- ``hostnames``: distinct inventory names for discovered hosts (never two merged into one).
- ``options``: every option, defined once for modules, the CLI and the inventory plugin.

Ansible plugins under ``plugins/`` and the ``racksmith redfish`` command are thin adapters.
"""
