#!/usr/bin/env bash
# Batched runs on an H200 host (the device tool's nvidia-h200-x2 machine), from the repo root.
# Everything lands in $WORK/run, tarred to $OUT/h200-run.tar.gz; the end of the output is a
# summary. STEPS picks what runs (default: the first session's whole run):
#   env       nvidia-smi -L, kernel, Python, torch
#   capture   python3 -m racksmith.health capture (the fixture layout)
#   topology  what `capture` does not take: nvidia-smi nvlink -p/-R/-gt d, topo -m/-p2p, every
#             PCI function's sysfs ids and links, lspci when present, /dev and /proc/driver
#             entries, fabric-manager binaries: enough to say whether NVSwitches join the GPUs
#   quick     quick checks: JSON, text, Prometheus, and under hgx-h200-8gpu
#   bench     quick-suite wall time (5 runs)
#   load      load checks and the smoke test on 1 and 2 GPUs (text report)
#   json      issue 8 item 7 on the real host: `gpu run -v --json` with torchrun running
#             (stress, NVLink, NCCL, smoke on every GPU) and `health check --json`: is stdout
#             exactly one JSON document?
#   fault     issue 14 item 3: a second process keeps one GPU busy with bf16 products during
#             `gpu run --only stress`, on each GPU index in FAULT_GPUS in turn; the summary
#             prints the verdict and the GPUs its findings name
#   after     quick checks after the load
#   probe     issue 23's raw inputs: `nvidia-smi -q -x`, --query-compute-apps, persistence
#             mode, /sys/class/infiniband/*/fw_ver, ofed_info -s / DOCA, the kernel module
#             flavour (open or proprietary), /proc/modules: saved as fixtures
#   leftover  issue 23 item 1: a process (setsid) takes ~HOLD_GIB GiB on GPU 0 and sleeps, as
#             one left over from a crashed job would; the same raw inputs are captured, the
#             quick checks run (JSON and text) and the load checks and smoke test are asked to
#             start on that host; the holder is killed by its pid after
#   smoke1    the smoke test on one GPU (its MFU) after the quick checks on the clean host
#   OUT=/tmp/h200 PROFILE=h200-x2-vm STEPS="env capture json fault" tests/bench/h200_device_run.sh
set -uo pipefail
OUT=${OUT:-/tmp/h200-out}
PROFILE=${PROFILE:-h200-x2-vm}
STEPS=${STEPS:-env capture quick bench load after}
W=${WORK:-/tmp/h200-work}/run
mkdir -p "$W" "$OUT"
# NVLink multicast stays off on shared hosts (KINDS.md): keep these in every multi-GPU run
# (racksmith.gpu's torchrun launcher forces them too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
# one JSON document and nothing else? prints a one-line answer; exit 1 when not
json_only() {
  python3 - "$1" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
try:
    doc, end = json.JSONDecoder().raw_decode(text.lstrip())
except ValueError as exc:
    print(f"{sys.argv[1]}: NOT JSON ({exc}); first line: {text.splitlines()[:1]}")
    sys.exit(1)
rest = text.lstrip()[end:].strip()
print(f"{sys.argv[1]}: {len(text.splitlines())} lines, {len(text)} bytes, one JSON document "
      f"and nothing else: {not rest and text.lstrip() == text}; verdict {doc.get('verdict')}, "
      f"exit_code {doc.get('exit_code')}")
sys.exit(0 if not rest and text.lstrip() == text else 1)
EOF
}

if has env; then
  step environment
  { nvidia-smi -L; uname -r; nproc; python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'; } 2>&1 | tee "$W/env.txt"
fi

if has capture; then
  step capture
  python3 -m racksmith.health capture "$W/capture" > "$W/capture.log" 2>&1; tail -1 "$W/capture.log"
fi

if has topology; then
  step "topology: NVLink peers, PCI functions, NVSwitch evidence"
  T=$W/topology; mkdir -p "$T"; : > "$T/commands.txt"
  cap() { local name=$1; shift; "$@" > "$T/$name" 2>&1; echo "$name rc=$? : $*" >> "$T/commands.txt"; }
  cap nvlink-h.txt nvidia-smi nvlink -h
  cap nvlink-p.txt nvidia-smi nvlink -p
  cap nvlink-R.txt nvidia-smi nvlink -R
  cap nvlink-gt-d.txt nvidia-smi nvlink -gt d
  cap topo-m.txt nvidia-smi topo -m
  cap topo-p2p-n.txt nvidia-smi topo -p2p n
  cap topo-p2p-r.txt nvidia-smi topo -p2p r
  cap query-fabric.csv nvidia-smi --query-gpu=index,pci.bus_id,fabric.state,fabric.status --format=csv
  if command -v lspci >/dev/null; then cap lspci-nn.txt lspci -nn; cap lspci-tv.txt lspci -tv; cap lspci-vv.txt lspci -vv
  else echo "lspci rc=127 : not installed" >> "$T/commands.txt"; fi
  cap dev.txt sh -c 'ls -l /dev | grep -i nvidia'
  cap proc-driver-nvidia.txt sh -c 'for f in /proc/driver/nvidia/gpus/*/information; do echo "== $f"; cat "$f"; done; ls -R /proc/driver/nvidia | head -50'
  cap fabricmanager.txt sh -c 'for b in nv-fabricmanager nvidia-fabricmanager nvlsm; do printf "%s: " $b; command -v $b || echo "not found"; done; ls /usr/share/nvidia/nvswitch 2>&1'
  cap pci-all-sysfs.txt python3 - <<'EOF'
import os
root = "/sys/bus/pci/devices"
names = ("vendor", "device", "class", "subsystem_vendor", "subsystem_device", "current_link_speed",
         "current_link_width", "max_link_speed", "max_link_width")
for dev in sorted(os.listdir(root)):
    attrs = {}
    for name in names:
        try:
            attrs[name] = open(os.path.join(root, dev, name)).read().strip()
        except OSError:
            pass
    driver = os.path.join(root, dev, "driver")
    attrs["driver"] = os.path.basename(os.readlink(driver)) if os.path.islink(driver) else "-"
    print(dev, " ".join(f"{k}={v.replace(' ', '_')}" for k, v in attrs.items()))
EOF
  cat "$T/commands.txt"
  grep -c . "$T/pci-all-sysfs.txt" | sed 's/^/PCI functions: /'
  grep -E "vendor=0x10de" "$T/pci-all-sysfs.txt"
  echo "NVSwitch functions (vendor 0x10de, class 0x0680xx): $(grep -cE 'vendor=0x10de .*class=0x0680' "$T/pci-all-sysfs.txt")"
  head -40 "$T/nvlink-R.txt"; head -8 "$T/nvlink-p.txt"; cat "$T/query-fabric.csv"
fi

if has quick; then
  step "quick checks (profile $PROFILE)"
  python3 -m racksmith.health check --profile "$PROFILE" --json --prom "$W/quick.prom" > "$W/quick.json"
  echo "exit $?"
  python3 -m racksmith.health check --profile "$PROFILE" | tee "$W/quick.txt"
  python3 -m racksmith.health check --profile hgx-h200-8gpu > "$W/quick-hgx-profile.txt"; echo "under hgx-h200-8gpu: exit $?"
fi

if has bench; then
  step "quick-suite wall time"
  python3 tests/bench/bench_health.py --live --profile "$PROFILE" --runs 5 --out "$W/bench-live.json" | tee "$W/bench-live.txt"
fi

if has load; then
  step "load checks and smoke test"
  timeout "${LOAD_TIMEOUT_S:-420}" python3 -m racksmith.gpu run -v --profile "$PROFILE" --stress-seconds "${STRESS_S:-30}" \
    --smoke-steps "${SMOKE_STEPS:-300}" --smoke-gpus 1,2 --out "$W/load" > "$W/load.txt" 2>&1
  echo "exit $?"
fi

if has json; then
  step "--json on the real host: health check, then gpu run -v --json with torchrun running"
  python3 -m racksmith.health check --profile "$PROFILE" --json > "$W/json-quick.stdout" 2> "$W/json-quick.stderr"
  echo "health check exit $?"; json_only "$W/json-quick.stdout"
  timeout "${LOAD_TIMEOUT_S:-420}" python3 -m racksmith.gpu run -v --json --profile "$PROFILE" \
    --stress-seconds "${STRESS_S:-15}" --smoke-steps "${SMOKE_STEPS:-60}" --out "$W/json-load" \
    > "$W/json-load.stdout" 2> "$W/json-load.stderr"
  echo "gpu run exit $?"; json_only "$W/json-load.stdout"
  echo "stderr: $(grep -c '' "$W/json-load.stderr") lines, of them torchrun/NCCL/smoke child lines: $(grep -cE '^\[(smoke[^]]*|nccl)\] ' "$W/json-load.stderr")"
  wc -l "$W"/json-load/*.log
  python3 - "$W/json-load.stdout" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["checks"]:
    print(f"  {c['status']:<8} {c['name']:<16} {c['findings'][0]['reason'][:150]}")
f = r.get("figures", {})
print("  nccl busbw", f.get("nccl", {}).get("busbw_gbs"), "algorithms", f.get("nccl", {}).get("algorithms"), "nvls", f.get("nccl", {}).get("nvls"))
EOF
fi

if has fault; then
  cat > "$W/busy.py" <<'EOF'
"""A second process on one GPU (CUDA_VISIBLE_DEVICES): bf16 8192^3 products back to back for
SECONDS, so the GPU is time-sliced between it and the stress test."""
import sys, time, torch
seconds, ready = float(sys.argv[1]), sys.argv[2]
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b, c = torch.randn_like(a), torch.empty_like(a)
for _ in range(10):
    torch.matmul(a, b, out=c)
torch.cuda.synchronize()
open(ready, "w").write("ready\n")
count, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    for _ in range(20):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    count += 20
took = time.monotonic() - start
print(f"busy: {count} products in {took:.1f} s = {2 * 8192**3 * count / took / 1e12:.0f} TFLOP/s", flush=True)
EOF
  for idx in ${FAULT_GPUS:-0 1}; do
    step "fault: GPU $idx kept busy by a second process during the stress test"
    rm -f "$W/busy-$idx.ready"
    CUDA_VISIBLE_DEVICES=$idx python3 "$W/busy.py" "${BUSY_S:-150}" "$W/busy-$idx.ready" > "$W/busy-$idx.log" 2>&1 &
    busy=$!
    for _ in $(seq 120); do [ -f "$W/busy-$idx.ready" ] && break; sleep 0.5; done
    [ -f "$W/busy-$idx.ready" ] && echo "busy process $busy running on GPU $idx" || echo "busy process not ready: $(cat "$W/busy-$idx.log")"
    timeout 300 python3 -m racksmith.gpu run --json --only stress --profile "$PROFILE" \
      --stress-seconds "${FAULT_STRESS_S:-20}" --out "$W/fault-$idx" > "$W/fault-$idx.json" 2> "$W/fault-$idx.stderr"
    echo "gpu run exit $?"
    kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null
    cat "$W/busy-$idx.log"
    json_only "$W/fault-$idx.json"
    python3 - "$W/fault-$idx.json" "$idx" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"verdict: {r['verdict']} (exit {r['exit_code']})")
for line in r["reasons"]:
    print("  reason:", line)
named = sorted({f["subject"] for c in r["checks"] for f in c["findings"]
                if f["severity"] not in ("OK", "SKIPPED") and f.get("subject")})
print(f"GPUs named by findings: {named}; expected only GPU {sys.argv[2]}: {named == ['GPU ' + sys.argv[2]]}")
for g in r.get("figures", {}).get("stress", {}).get("per_gpu", []):
    print(f"  GPU {g['index']}: sustained {g['tflops']:.0f} TFLOP/s, burst {g['ref_tflops']:.0f}, steady {g['steady_tflops']:.0f}, copy {g['copy_tbs']:.2f} TB/s (best {g['ref_copy_tbs']:.2f}), {g['batches']} batches")
EOF
  done
fi

if has after; then
  step "quick checks after load"
  python3 -m racksmith.health check --profile "$PROFILE" --json > "$W/quick-after.json"; echo "exit $?"
  json_only "$W/quick-after.json"
fi

probe_into() {  # raw inputs of the issue-23 checks, into directory $1
  local D=$1; mkdir -p "$D"; : > "$D/commands.txt"
  pc() { local name=$1; shift; "$@" > "$D/$name" 2> "$D/$name.stderr"; local rc=$?
         [ -s "$D/$name.stderr" ] || rm -f "$D/$name.stderr"; echo "$name rc=$rc : $*" >> "$D/commands.txt"; }
  pc smi_q.xml nvidia-smi -q -x
  pc smi_q.txt nvidia-smi -q
  pc compute-apps.csv nvidia-smi --query-compute-apps=gpu_bus_id,gpu_uuid,pid,process_name,used_memory --format=csv
  pc compute-apps-nounits.csv nvidia-smi --query-compute-apps=gpu_bus_id,gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits
  pc query-mem.csv nvidia-smi --query-gpu=index,pci.bus_id,persistence_mode,memory.total,memory.used,memory.reserved,memory.free,vbios_version,inforom.img,inforom.oem --format=csv
  pc nvidia-smi.txt nvidia-smi
  pc driver-version.txt cat /proc/driver/nvidia/version
  pc proc-modules.txt cat /proc/modules
  pc ib-fw.txt sh -c 'ls -la /sys/class/infiniband 2>&1; for f in /sys/class/infiniband/*/fw_ver; do echo "$f: $(cat "$f")"; done'
  pc ofed_info.txt sh -c 'command -v ofed_info && ofed_info -s; command -v doca-info; ls /opt/mellanox/doca 2>&1 | head; dpkg-query -W -f="\${Package} \${Version}\n" "doca-*" "mlnx-ofed*" "rdma-core" "ibverbs-providers" 2>&1 | head'
  pc smi-persistence.txt nvidia-smi -q -d PERFORMANCE,MEMORY,PIDS
  pc nvlink-s.txt nvidia-smi nvlink -s
}
if has probe; then
  step "probe: raw inputs of the issue-23 checks on the clean host"
  probe_into "$W/probe-clean"; cat "$W/probe-clean/commands.txt"; cat "$W/probe-clean/compute-apps.csv" "$W/probe-clean/query-mem.csv" "$W/probe-clean/ib-fw.txt" "$W/probe-clean/ofed_info.txt"
  head -2 "$W/probe-clean/driver-version.txt"; grep -i persistence "$W/probe-clean/smi_q.txt"; head -5 "$W/probe-clean/nvlink-s.txt"
fi
if has quick-clean; then
  step "quick checks on the clean host (profile $PROFILE)"
  python3 -m racksmith.health check --profile "$PROFILE" --json > "$W/clean-quick.json"; echo "exit $?"
  python3 -m racksmith.health check --profile "$PROFILE" -v | tee "$W/clean-quick.txt"
  python3 tests/bench/bench_health.py --live --profile "$PROFILE" --runs 5 --out "$W/bench-live.json" | tee "$W/bench-live.txt"
fi
if has smoke1; then
  step "smoke test on one GPU (clean host)"
  timeout "${LOAD_TIMEOUT_S:-420}" python3 -m racksmith.gpu run -v --profile "$PROFILE" --only "${SMOKE_ONLY:-stress,smoke}" --stress-seconds "${STRESS_S:-15}" \
    --smoke-steps "${SMOKE_STEPS:-300}" --smoke-gpus 1 --out "$W/smoke1" > "$W/smoke1.txt" 2>&1
  echo "exit $?"; sed -n '/NOT FIT\|: FIT/,$p' "$W/smoke1.txt" | head -30
fi
if has leftover; then
  step "leftover: a process holds ${HOLD_GIB:-125} GiB of GPU 0 and sleeps"
  cat > "$W/hold.py" <<'EOF'
"""A leftover of a crashed job: holds GIB GiB of GPU memory (plain cudaMalloc through
PyTorch's allocator, written once) and sleeps until killed."""
import sys, time, torch
gib, ready = float(sys.argv[1]), sys.argv[2]
held = torch.ones(int(gib * 2**30), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
open(ready, "w").write(f"holding {held.numel() / 2**30:.1f} GiB\n")
while True:
    time.sleep(60)
EOF
  rm -f "$W/hold.ready"
  setsid python3 "$W/hold.py" "${HOLD_GIB:-125}" "$W/hold.ready" > "$W/hold.log" 2>&1 < /dev/null &
  holder=$!
  for _ in $(seq 240); do [ -f "$W/hold.ready" ] && break; sleep 0.5; done
  echo "holder pid $holder: $(cat "$W/hold.ready" 2>/dev/null || cat "$W/hold.log")"
  probe_into "$W/probe-held"; cat "$W/probe-held/compute-apps.csv" "$W/probe-held/query-mem.csv"
  python3 -m racksmith.health check --profile "$PROFILE" --json > "$W/held-quick.json"; echo "quick checks exit $?"
  python3 -m racksmith.health check --profile "$PROFILE" -v | tee "$W/held-quick.txt"
  timeout 300 python3 -m racksmith.gpu run --profile "$PROFILE" --only "${SMOKE_ONLY:-stress,smoke}" --stress-seconds 10 --smoke-steps 40 \
    --smoke-gpus 1 --out "$W/held-load" > "$W/held-load.txt" 2>&1
  echo "load checks exit $? ($(grep -c '' "$W/held-load/gpu-run.log" 2>/dev/null) lines of gpu-run.log)"; head -40 "$W/held-load.txt"
  kill "$holder"; for _ in $(seq 40); do kill -0 "$holder" 2>/dev/null || break; sleep 0.25; done
  kill -0 "$holder" 2>/dev/null && kill -9 "$holder"
  echo "holder $holder ended"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv
  python3 -m racksmith.health check --profile "$PROFILE" > "$W/held-after.txt"; echo "quick checks after the holder ended: exit $?"
  head -1 "$W/held-after.txt"
fi

tar czf "$OUT/h200-run.tar.gz" -C "$(dirname "$W")" run
if has load; then
  step summary
  grep -E "^\[smoke" "$W/load.txt" | awk 'NR % 25 == 0' | tail -24
  sed -n '/NOT FIT\|: FIT/,$p' "$W/load.txt" | head -60
fi
