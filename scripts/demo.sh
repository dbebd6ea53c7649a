#!/usr/bin/env bash
# The README's demo command (`make demo`): start the simulated rack and run site.yml on it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/${RACKSMITH_VENV:-.venv}/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
ansible-playbook site.yml -i inventory/lab/ "$@"
