"""Redfish discovery and control of BMCs (Dell iDRAC first).

Layers, each in its own module so a reader finds one concern per file:

- ``targets``: BMC addresses, CIDRs and ranges expanded into ``host:port`` targets.
- ``credentials``: the user name and password, held so they cannot leak by ``repr`` or ``str``.
- ``client``: one BMC's HTTP session (Redfish session auth, TLS, timeouts, bounded retries).
- ``parse``: pure functions from Redfish JSON to typed facts (no I/O, tested on real captures).
- ``discover``: many BMCs at once, bounded concurrency, a deadline per BMC, typed outcomes.
- ``actions``: power, one-time PXE boot and clock, each reading back what it changed.

Ansible plugins under ``plugins/`` and the ``racksmith redfish`` command are thin adapters.
"""
