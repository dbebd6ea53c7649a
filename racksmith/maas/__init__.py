"""Drive Canonical MAAS: a signed API client and the machine lifecycle racksmith needs.

``client`` talks HTTP (OAuth PLAINTEXT, retries where safe, typed errors); ``model`` parses
MAAS JSON; ``machines`` keeps machine records idempotent; ``lifecycle`` commissions, pins the
boot disk, deploys and releases with bounded waits; ``triage`` names why a machine failed.
The Ansible modules and inventory plugin under ``plugins/`` are thin adapters over these.
"""
