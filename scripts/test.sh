#!/usr/bin/env bash
# The README's test command (`make test`) and CI's only step (.ci/run). Lanes:
#   static       ruff + ansible-lint (production profile, offline)
#   unit         pytest tests/unit (no root, loopback only)
#   integration  pytest tests/integration, the tests that need no lab (emulators in-process)
#   sanity       ansible-test sanity on the built collection tarball (scripts/sanity.sh,
#                docs/collection.md)
#   lab          build/reuse the test-host image, `racksmith lab up`, pytest -m lab
#                tests/integration on real nspawn hosts, then `molecule test` per scenario
#   bench        every tests/bench/*.py with --quick (a smoke run: do the figures still print?)
#   vm           the VM lane: the VM's own test, then `molecule test -s vm` of zfs_pool (the
#                GPU-host roles on a qemu VM with its own kernel and disks), in the background
#                beside all other lanes (docs/roles.md "The VM lane").
#                RACKSMITH_TEST_VM=0 leaves it out of the default set.
#
# Usage: scripts/test.sh [LANE...]   (default: all lanes, in the order above)
#
# The VM lane is the longest (one emulated core), so it starts first: the images (cached by
# recipe; network and disk bound when not), `racksmith lab up` and the VM lane run in the
# background from the start, beside the static, unit, integration and sanity lanes; the lab
# lane waits for `lab up`. The other lanes run at nice RACKSMITH_TEST_NICE (default 5): on
# two cores the emulated VM, starved, took 45 min (docs/roles.md "The VM lane"). Every lane runs even after a failure; the command fails if any lane
# failed, prints a summary with each lane's wall time, and tears the lab down on exit
# (normal, failure or Ctrl-C). A missing prerequisite (root for the lab) is a failure with a
# reason, never a skip.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/${RACKSMITH_VENV:-.venv}/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
export PYTHONUNBUFFERED=1 ANSIBLE_FORCE_COLOR=0 PY_COLORS=0
LOGS=${RACKSMITH_TEST_LOGS:-runs/test-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$LOGS"
ALL_LANES=(static unit integration sanity lab bench vm)
DEFAULT_LANES=(static unit integration sanity lab bench)
[[ ${RACKSMITH_TEST_VM:-1} == 1 ]] && DEFAULT_LANES+=(vm)
LANES=("$@")
((${#LANES[@]})) || LANES=("${DEFAULT_LANES[@]}")
for l in "${LANES[@]}"; do
  [[ " ${ALL_LANES[*]} " == *" $l "* ]] || { echo "unknown lane '$l' (lanes: ${ALL_LANES[*]})" >&2; exit 2; }
done
wants() { [[ " ${LANES[*]} " == *" $1 "* ]]; }

T0=$SECONDS
ORDER=()        # step names in start order, for the summary
BG_PIDS=()      # background steps still to wait for
LAB_STARTED=0

# step NAME CMD...: run CMD, log to $LOGS/NAME.log, record rc and seconds in $LOGS/NAME.{rc,secs}
# (NAME is also a file name: no '/')
step() {
  local name=$1; shift
  local t0=$SECONDS rc
  echo "=== $name: $*"
  "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  echo "$rc" >"$LOGS/$name.rc"; echo $((SECONDS - t0)) >"$LOGS/$name.secs"
  if ((rc == 0)); then echo "--- $name ok ($((SECONDS - t0))s)"
  else echo "--- $name FAILED (rc $rc, $((SECONDS - t0))s); last lines of $LOGS/$name.log:"
       tail -n 25 "$LOGS/$name.log" | sed 's/^/    /'
  fi
  return "$rc"
}
run_step() { ORDER+=("$1"); step "$@"; }
bg_step() { ORDER+=("$1"); step "$@" & BG_PIDS+=($!); }
fail_step() {  # fail_step NAME REASON: a prerequisite is missing; that is a failure, not a skip
  ORDER+=("$1"); echo "$2" >"$LOGS/$1.log"; echo 1 >"$LOGS/$1.rc"; echo 0 >"$LOGS/$1.secs"
  echo "--- $1 FAILED: $2"
}

teardown() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${BG_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  if ((LAB_STARTED)); then
    echo "=== teardown: racksmith lab down"
    racksmith lab down >"$LOGS/teardown.log" 2>&1 || echo "teardown had problems: $LOGS/teardown.log"
  fi
  summary
  exit $((rc != 0 ? rc : FAILED))
}
FAILED=0
summary() {
  echo
  echo "=== summary (logs in $LOGS)"
  printf '  %-34s %-6s %6s\n' STEP RESULT SECONDS
  for name in "${ORDER[@]}"; do
    local rc secs
    rc=$(cat "$LOGS/$name.rc" 2>/dev/null || echo "-"); secs=$(cat "$LOGS/$name.secs" 2>/dev/null || echo "-")
    local result=ok
    [[ $rc == 0 ]] || { result=FAIL; FAILED=1; }
    [[ $rc == "-" ]] && result="n/a"
    printf '  %-34s %-6s %6s\n' "$name" "$result" "$secs"
  done
  printf '  %-34s %-6s %6s\n' total "$( ((FAILED)) && echo FAIL || echo ok)" $((SECONDS - T0))
}
trap teardown EXIT
trap 'exit 130' INT TERM

is_root() { [[ $(id -u) -eq 0 ]]; }
build_image() { python -c 'from racksmith.lab import image; print(image.ensure_tree())'; }
build_vm_image() { python -c 'from racksmith.lab import vm; print(vm.ensure_vm_image())'; }

# The non-VM lanes yield to the VM lane (its qemu pins one core and each of its Ansible tasks
# waits on the emulated guest): `nice` for their steps, not for the VM lane's.
NICE=(nice -n "${RACKSMITH_TEST_NICE:-5}")

# --- images, `lab up` and the VM lane, in the background from the start -----------------------
# The test-host image (network and disk bound), then the VM lane's image made from it (kernel,
# ZFS and driver DKMS modules compiled natively: minutes of CPU the first time, cached by recipe).
LAB_UP_PID=
if wants lab || wants vm; then
  if is_root; then
    # A lab someone already runs (say, after `make demo`) is used and left running; only a lab
    # this script started is torn down at the end.
    if racksmith lab status --json 2>/dev/null \
        | python -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["bridge"]["up"] else 1)'; then
      echo "=== lab: already running; it stays up after the tests"
    else
      LAB_STARTED=1
    fi
    wants vm && bg_step vm:image build_vm_image  # waits on the image build's lock for its tree
    ORDER+=(lab:image lab:up)
    wants vm && ORDER+=(vm:pytest vm:molecule)
    {
      if step lab:image build_image && step lab:up racksmith lab up; then
        # The VM lane: its VM pins one core (qemu's emulation); everything else shares the other.
        if wants vm; then
          until [[ -e "$LOGS/vm:image.rc" ]]; do sleep 5; done
          if [[ $(cat "$LOGS/vm:image.rc") == 0 ]]; then
            step vm:pytest pytest -q -p no:cacheprovider -m lab tests/integration/lab/test_lab_vm.py
            step vm:molecule env -u ANSIBLE_CONFIG bash -c "cd roles/zfs_pool && molecule test -s vm"
          else
            for v in vm:pytest vm:molecule; do echo 1 >"$LOGS/$v.rc"; echo 0 >"$LOGS/$v.secs"; done
            echo "--- vm:molecule FAILED: not run, the VM image build failed (see vm:image)"
          fi
        fi
      elif [[ ! -e "$LOGS/lab:up.rc" ]]; then
        echo "skipped running: the image build failed (see lab:image)" >"$LOGS/lab:up.log"
        echo 1 >"$LOGS/lab:up.rc"; echo 0 >"$LOGS/lab:up.secs"
        echo "--- lab:up FAILED: not run, the image build failed (see lab:image)"
      fi
      if wants vm && [[ ! -e "$LOGS/vm:molecule.rc" ]]; then
        for v in vm:pytest vm:molecule; do echo 1 >"$LOGS/$v.rc"; echo 0 >"$LOGS/$v.secs"; done
        echo "--- vm:molecule FAILED: not run, the lab did not come up (see lab:image, lab:up)"
      fi
    } &
    BG_PIDS+=($!)
  else
    fail_step lab:image "the lab lane needs root (debootstrap, bridge, netns, systemd-nspawn); run as root"
  fi
fi

# --- static, unit, integration and sanity lanes, meanwhile -------------------------------------
if wants static; then
  run_step static:ruff "${NICE[@]}" ruff check .
  run_step static:ansible-lint env ANSIBLE_INVENTORY="$PWD/tests/lint/inventory.ini" "${NICE[@]}" ansible-lint --offline
fi
wants unit && run_step unit "${NICE[@]}" pytest -q -n auto -p no:cacheprovider tests/unit
wants integration && run_step integration "${NICE[@]}" pytest -q -p no:cacheprovider --durations=25 -m "not lab" tests/integration
wants sanity && run_step sanity "${NICE[@]}" scripts/sanity.sh

# --- lab lane ----------------------------------------------------------------------------------
if wants lab && is_root; then
  until [[ -e "$LOGS/lab:up.rc" ]]; do sleep 2; done
  if [[ $(cat "$LOGS/lab:up.rc") == 0 ]]; then
    # Serial: the lab tests share one bridge per module and the machine has 2 cores.
    # The VM's own test belongs to the vm lane.
    run_step lab:pytest "${NICE[@]}" pytest -q -p no:cacheprovider --durations=25 -m lab tests/integration \
      --ignore=tests/integration/lab/test_lab_vm.py
    for scenario in roles/*/molecule/*/molecule.yml; do
      [[ -e $scenario ]] || continue
      role_dir=${scenario%/molecule/*}; name=$(basename "$(dirname "$scenario")")
      # These roles' own scenarios run their verifies inside container_runtime's gpu_host
      # scenario (all GPU-host roles converged together on two hosts): CI runs that one.
      case "$(basename "$role_dir"):$name" in
        node_exporter:default|dcgm:default|container_runtime:default|zfs_pool:default) continue ;;
        zfs_pool:vm) continue ;;  # the vm lane
      esac
      # Molecule writes its own ansible.cfg; the project's (fact cache, report callback)
      # must not leak into scenarios.
      run_step "molecule:$(basename "$role_dir"):$name" \
        env -u ANSIBLE_CONFIG "${NICE[@]}" bash -c "cd '$role_dir' && molecule test -s '$name'"
    done
  fi
fi

# --- bench smoke --------------------------------------------------------------------------------
if wants bench; then
  for bench in tests/bench/*.py; do
    [[ -e $bench ]] || continue
    run_step "bench:$(basename "$bench" .py)" "${NICE[@]}" python "$bench" --quick
  done
fi

# The VM lane (and its image build) may still be running: wait for it before the summary.
for pid in "${BG_PIDS[@]}"; do wait "$pid"; done
BG_PIDS=()
exit 0  # the EXIT trap tears down, prints the summary and sets the status
