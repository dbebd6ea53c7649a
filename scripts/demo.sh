#!/usr/bin/env bash
# The README's demo command (`make demo`): start the simulated rack and run site.yml on it.
#   1. `racksmith lab up`: bridge, apt cache, keys, lab CA, credentials, cached test-host
#      image (built on first use, about a minute), the emulated iDRACs and the MAAS simulator.
#   2. ansible-playbook site.yml -i inventory/lab/ (arguments to this script are passed on,
#      e.g. `scripts/demo.sh --tags discover`).
# The lab stays up afterwards so you can look around; `racksmith lab down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/${RACKSMITH_VENV:-.venv}/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
LAB_DIR=${RACKSMITH_LAB_DIR:-/var/lib/racksmith/lab}

if [[ $(id -u) -ne 0 ]]; then
  echo "make demo needs root: the lab uses a bridge, network namespaces and systemd-nspawn" >&2
  exit 1
fi

t0=$SECONDS
racksmith lab up
t_lab=$((SECONDS - t0))

# Credentials by reference: exported for the inventories and modules, never printed.
for env_file in "$LAB_DIR/secrets/bmc.env" "$LAB_DIR/secrets/maas.env"; do
  [[ -r $env_file ]] || { echo "missing $env_file; did \`racksmith lab up\` fail?" >&2; exit 1; }
  set -a
  # shellcheck disable=SC1090
  source "$env_file"
  set +a
done

# This run's results directory (the report callback would make one; naming it here lets the
# demo judge exactly this run).
export RACKSMITH_RUN_DIR=${RACKSMITH_RUN_DIR:-$PWD/runs/$(date -u +%Y%m%d-%H%M%S)-demo}
t1=$SECONDS
rc=0
ansible-playbook site.yml -i inventory/lab/ "$@" || rc=$?
t_play=$((SECONDS - t1))

# The demo rack injects faults, so the playbook exits non-zero on a correct run. The demo
# passes when every server ended as the rack file says (healthy -> GOLDEN, each fault in its
# phase, with a reason); partial runs (--tags, -l) are not judged.
echo
echo "Judging run $RACKSMITH_RUN_DIR against ${RACKSMITH_RACK:-inventory/lab/rack.yml}:"
verdict=0
if (($# == 0)); then
  racksmith lab check-run "$RACKSMITH_RUN_DIR" || verdict=$?
else
  echo "  (not judged: arguments given, the run is partial)"
  verdict=$rc
fi

cat <<EOT

racksmith demo: lab up ${t_lab}s, site.yml ${t_play}s, playbook exit code $rc (the rack's
injected faults fail some hosts on purpose; the demo's verdict is the check above).
The simulated rack is still running:
  racksmith lab status          what runs (BMC emulator, MAAS simulator, test hosts)
  ssh -i $LAB_DIR/keys/id_ed25519 ubuntu@<host IP>   log in to a deployed test host
  racksmith lab down            stop everything (or: make lab-down)
EOT
exit "$verdict"
