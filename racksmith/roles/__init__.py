"""Decisions the Ansible roles make, one module per role (their filters in plugins/filter/ are thin adapters)."""
