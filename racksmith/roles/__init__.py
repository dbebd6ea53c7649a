"""Decisions the Ansible roles make, one module per role.

Their filters in plugins/filter/ are thin adapters over these modules.
"""
