"""Decisions the phase playbooks make, as pure functions over inventory data.

Playbooks reach these through filter plugins (``plugins/filter/phases.py``); Jinja only wires
values through. Each function takes plain dicts/lists (host variables as Ansible hands them
over) and returns plain values, so it is unit-tested without Ansible and a playbook cannot
drift from the test.
"""
