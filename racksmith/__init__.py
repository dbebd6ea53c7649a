"""racksmith: turn racks of bare GPU servers into a golden set of hosts.

The package is the controller-side library; Ansible plugins under ``plugins/`` are thin
adapters over it. ``racksmith.health`` is the exception: it is shipped to GPU hosts and
uses only the standard library.
"""

__version__ = "0.1.0"
