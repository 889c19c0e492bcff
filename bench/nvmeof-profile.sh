#!/usr/bin/env bash
# bench/nvmeof-profile.sh [BINARY]: where a small random read's time goes, NVMe-oF over ionic
# beside a virtio-blk disk (a file in the host's RAM) in one TCG boot. The guest
# (bench/guest/nvmeof-profile.sh) runs fio 4 KiB randread at QD32 x 4 jobs on each device between
# two snapshots of its own CPU time, interrupts and context switches and, for NVMe-oF, of the
# server's counters and CPU time (the runner's "stats" request, SIGUSR2). This script divides
# every difference by the I/O count and writes bench/results/nvmeof-profile.csv
# (device,key,per_io) and prints the table. Needs root (the guest lane).
# ERNIC_BENCH_RUNTIME: seconds per fio run (10). ERNIC_VM_SMP: guest vCPUs (4).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RES=$ROOT/bench/results
mkdir -p "$RES"
if [ $# -ge 1 ]; then
	BIN=$(readlink -f "$1")
else
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DERNIC_TESTS=OFF >/dev/null
	cmake --build build-bench -j "$(nproc)" --target rocm-ernic >/dev/null
	BIN=$ROOT/build-bench/rocm-ernic
fi
DISKDIR=$(mktemp -d /dev/shm/ernic-profile.XXXXXX)
trap 'rm -rf "$DISKDIR"' EXIT
truncate -s 256M "$DISKDIR/ernic-bench.img"

out=$(tests/vm/run-vm-test.sh --binary "$BIN" --netns --keep \
	--server-args "--backend nvmeof:size=256M" \
	--disk "$DISKDIR/ernic-bench.img" --env "ERNIC_BENCH_RUNTIME=${ERNIC_BENCH_RUNTIME:-10}" \
	--check bench/guest/nvmeof-profile.sh --check-timeout 1200 --timeout 1800) || true
echo "$out" | grep -E '^(ok|not ok)' || true
job=$(echo "$out" | sed -n 's/^# job files kept in //p')
[ -n "$job" ] && [ -s "$job/run1/profile.csv" ] || { echo "bench/nvmeof-profile.sh: the guest wrote no profile" >&2; exit 1; }
cp "$job/run1/profile.csv" "$RES/nvmeof-profile-raw.csv"
rm -rf "$job"

python3 - "$RES/nvmeof-profile-raw.csv" "$RES/nvmeof-profile.csv" "$(getconf CLK_TCK)" <<'EOF'
import csv, sys
raw, out, host_hz = sys.argv[1], sys.argv[2], float(sys.argv[3])
v = {}
for r in csv.DictReader(open(raw)):
    v.setdefault(r["device"], {})[r["key"]] = float(r["value"])
rows = []
for dev, k in v.items():
    ios, ghz = k.pop("ios"), k.pop("guest_clk_tck")
    for key, val in sorted(k.items()):
        if key in ("user", "system", "irq", "idle"):
            rows.append((dev, "guest_" + key + "_us", val / ghz * 1e6 / ios))
        elif key == "server_cpu_ticks":
            rows.append((dev, "server_cpu_us", val / host_hz * 1e6 / ios))
        else:
            rows.append((dev, key, val / ios))
    rows.append((dev, "ios", ios))
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["device", "key", "per_io"])
    for r in rows:
        w.writerow([r[0], r[1], f"{r[2]:.4g}"])
print(f"{'per I/O':28} {'ionic-nvmeof':>14} {'virtio-blk':>14}")
keys = sorted({r[1] for r in rows})
tab = {(r[0], r[1]): r[2] for r in rows}
for key in keys:
    a, b = tab.get(("ionic-nvmeof", key)), tab.get(("virtio-blk", key))
    fmt = lambda x: "" if x is None else f"{x:.4g}"
    print(f"{key:28} {fmt(a):>14} {fmt(b):>14}")
EOF
echo "bench/nvmeof-profile.sh: $RES/nvmeof-profile.csv"
