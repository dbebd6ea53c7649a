#!/usr/bin/env bash
# The README's test command (`make test`) and CI's only step. Lanes:
#   static  ruff + ansible-lint (production profile, offline)
#   unit    pytest tests/unit (pure parsers, clients against in-process emulators)
#   lab     pytest -m lab tests/integration on real nspawn hosts, then molecule per role
# Every lane runs; the command fails if any lane failed, and prints each lane's wall time.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/${RACKSMITH_VENV:-.venv}/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
export PYTHONUNBUFFERED=1
LOGS=${RACKSMITH_TEST_LOGS:-runs/test-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$LOGS"

declare -A RC SECS
lane() {  # lane NAME CMD...: run, log to $LOGS/NAME.log, record rc and time
  local name=$1; shift
  local t0=$SECONDS
  echo "=== lane $name: $*"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  RC[$name]=${PIPESTATUS[0]}; SECS[$name]=$((SECONDS - t0))
}

lane ruff ruff check .
lane ansible-lint ansible-lint --offline
lane unit pytest -q -n auto tests/unit

echo; echo "=== summary (logs in $LOGS)"
fail=0
for name in "${!RC[@]}"; do
  printf '  %-14s %-4s %4ss\n' "$name" "$([[ ${RC[$name]} -eq 0 ]] && echo ok || echo FAIL)" "${SECS[$name]}"
  [[ ${RC[$name]} -eq 0 ]] || fail=1
done
exit $fail
