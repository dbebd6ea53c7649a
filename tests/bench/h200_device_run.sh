#!/usr/bin/env bash
# One batched run on an H200 host (the device tool's nvidia-h200-x2 machine), from the repo
# root: capture raw outputs as fixtures, quick checks and their wall time, load checks and the
# smoke test on 1 and 2 GPUs, quick checks again after the load. Everything lands in
# $WORK/run, tarred to $OUT/h200-run.tar.gz; the end of the output is a summary.
#   OUT=/tmp/h200 PROFILE=h200-x2-vm STRESS_S=30 SMOKE_STEPS=300 tests/bench/h200_device_run.sh
set -uo pipefail
OUT=${OUT:-/tmp/h200-out}
PROFILE=${PROFILE:-h200-x2-vm}
W=${WORK:-/tmp/h200-work}/run
mkdir -p "$W" "$OUT"
# NVLink multicast stays off on shared hosts (KINDS.md): keep these in every multi-GPU run.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

step environment
{ nvidia-smi -L; uname -r; python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'; } 2>&1 | tee "$W/env.txt"

step capture
python3 -m racksmith.health capture "$W/capture" > "$W/capture.log" 2>&1; tail -1 "$W/capture.log"

step "quick checks (profile $PROFILE)"
python3 -m racksmith.health check --profile "$PROFILE" --json --prom "$W/quick.prom" > "$W/quick.json"
echo "exit $?"
python3 -m racksmith.health check --profile "$PROFILE" | tee "$W/quick.txt"
python3 -m racksmith.health check --profile hgx-h200-8gpu > "$W/quick-hgx-profile.txt"; echo "under hgx-h200-8gpu: exit $?"

step "quick-suite wall time"
python3 tests/bench/bench_health.py --live --profile "$PROFILE" --runs 5 --out "$W/bench-live.json" | tee "$W/bench-live.txt"

step "load checks and smoke test"
timeout "${LOAD_TIMEOUT_S:-420}" python3 -m racksmith.gpu run --profile "$PROFILE" --stress-seconds "${STRESS_S:-30}" \
  --smoke-steps "${SMOKE_STEPS:-300}" --smoke-gpus 1,2 --out "$W/load" > "$W/load.txt" 2>&1
echo "exit $?"

step "quick checks after load"
python3 -m racksmith.health check --profile "$PROFILE" --json > "$W/quick-after.json"; echo "exit $?"

tar czf "$OUT/h200-run.tar.gz" -C "$(dirname "$W")" run
step summary
grep -E "^\[smoke" "$W/load.txt" | awk 'NR % 25 == 0' | tail -24
sed -n '/NOT FIT\|: FIT/,$p' "$W/load.txt" | head -60
