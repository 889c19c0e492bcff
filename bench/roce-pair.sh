#!/usr/bin/env bash
# bench/roce-pair.sh [BINARY | --report]: two hosts over RoCEv2, rocm-ernic against Linux soft-RoCE,
# in one run. Two TCG guests on one bridge (the guest lane's --peer-guest, in a network namespace
# of its own), each with
#   the emulated NIC: a server of its own with --backend roce, its TAP on the bridge (192.168.200.x)
#   a virtio-net NIC on the same bridge with the stock rdma_rxe on it (192.168.201.x)
# and perftest between them over each in turn, in the same boot: ib_write_bw with 64 KiB and
# 1 MiB messages, ib_read_bw with 1 MiB both ways (1m-read-bw-to-main: the main guest reads the
# peer's memory; -to-peer the other way) and ib_write_lat with 64 B, rounds alternating the order
# (ionic rxe, rxe ionic).
# The rxe<->rxe figures are the denominator of the ionic<->ionic ones: under emulation absolute
# guest figures mean little, the ratios are the result.
# Writes bench/results/roce-pair-raw.csv (every run), bench/results/roce-pair.csv (medians and
# ratios), bench/results/roce-pair.png and bench/results/roce-pair-boot.txt (the client guest's
# output). Without BINARY it builds the Release server in build-bench/. Needs root (the lane).
# --report: no guests; the medians, ratios and chart again from the last run's roce-pair-boot.txt
# (or roce-pair-raw.csv alone).
# ERNIC_PAIR_ROUNDS (rounds, 3), ERNIC_PAIR_ITERS (perftest iterations, 300; 1 MiB a quarter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RES=$ROOT/bench/results
mkdir -p "$RES"
# parse_boot: roce-pair-raw.csv from the guests' lines kept in roce-pair-boot.txt.
parse_boot() {
	# PAIR-FIGURE name=rR-DEV-CASE.main-to-peer client=... bytes=B iters=N bw_MiBps=X ... | lat_avg_us=X lat_typical_us=Y ...
	# (CASE.peer-to-main: the peer was the client; a READ brings the main guest's memory to it.)
	awk 'BEGIN { print "round,device,case,bytes,iters,value,unit" }
	/^PAIR-FIGURE name=r[0-9]+-/ {
		delete kv
		for (i = 2; i <= NF; i++) { split($i, a, "="); kv[a[1]] = a[2] }
		split(kv["name"], n, "."); split(n[1], p, "-")
		c = substr(n[1], length(p[1]) + length(p[2]) + 3)
		if (c ~ /-bw$/) { v = kv["bw_MiBps"]; u = "MiB/s" } else { v = kv["lat_typical_us"]; u = "us" }
		if (c ~ /read-bw$/) c = c (n[2] == "peer-to-main" ? "-to-peer" : "-to-main")
		print substr(p[1], 2) "," p[2] "," c "," kv["bytes"] "," kv["iters"] "," v "," u
	}' "$RES/roce-pair-boot.txt" >"$RES/roce-pair-raw.csv"
}
if [ "${1:-}" != --report ]; then
	scripts/install-deps.sh --bench
	# shellcheck source=bench/lib.sh
	. bench/lib.sh
	bench_server "${1:-}"
	env=(ERNIC_PAIR_MODE=bench "ERNIC_PAIR_ROUNDS=${ERNIC_PAIR_ROUNDS:-3}" "ERNIC_PAIR_ITERS=${ERNIC_PAIR_ITERS:-300}"
		ERNIC_PAIR_DEV=ionic)
	args=()
	for e in "${env[@]}"; do args+=(--env "$e" --peer-env "$e"); done
	out=$(ERNIC_VM_PEER_SMP=4 ERNIC_VM_PEER_MEM=2G tests/vm/run-vm-test.sh --binary "$BIN" --keep \
		--server-args "--backend roce" --netns-tap --guest-nic \
		--peer-guest --peer-server-args "--backend roce --mac 02:45:52:4e:49:44" "${args[@]}" \
		--check tests/vm/checks/rdma-pair.sh --peer-check tests/vm/checks/rdma-pair.sh \
		--check-timeout 3000 --timeout 3600) || true
	echo "$out" | grep -E '^(ok|not ok)' || true
	job=$(echo "$out" | sed -n 's/^# job files kept in //p')
	if [ -z "$job" ] || [ ! -s "$job/run1/boot-1.out" ]; then echo "bench/roce-pair.sh: the guest printed nothing" >&2; exit 1; fi
	# The client's figures: the main guest's, and the peer's for the READ it makes of the main's memory.
	tr -d '\r' <"$job/run1/boot-1.out" >"$RES/roce-pair-boot.txt"
	tr -d '\r' <"$job/run1/peer/boot-1.out" 2>/dev/null | grep '^PAIR-FIGURE' >>"$RES/roce-pair-boot.txt" || true
	parse_boot
	rm -rf "$job"
	[ "$(wc -l <"$RES/roce-pair-raw.csv")" -gt 1 ] || { echo "bench/roce-pair.sh: no figures (see $RES/roce-pair-boot.txt)" >&2; exit 1; }
elif [ -s "$RES/roce-pair-boot.txt" ]; then
	parse_boot
fi

# Medians per (case, device), then ionic over rxe.
python3 - "$RES/roce-pair-raw.csv" "$RES/roce-pair.csv" "$RES/roce-pair.dat" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
val, unit, order = {}, {}, []
for r in rows:
    if not r["value"]:
        continue
    val.setdefault((r["case"], r["device"]), []).append(float(r["value"]))
    unit[r["case"]] = r["unit"]
    if r["case"] not in order:
        order.append(r["case"])
out = csv.writer(open(sys.argv[2], "w", newline=""))
out.writerow(["case", "unit", "ionic", "rxe", "runs", "ratio", "times_better"])
dat = open(sys.argv[3], "w")
for c in order:
    if (c, "ionic") not in val or (c, "rxe") not in val:
        continue
    a, b = statistics.median(val[(c, "ionic")]), statistics.median(val[(c, "rxe")])
    ratio = a / b if b else float("nan")
    better = 1 / ratio if unit[c] == "us" else ratio  # latencies: lower is better
    out.writerow([c, unit[c], f"{a:g}", f"{b:g}", len(val[(c, "ionic")]), f"{ratio:.3f}", f"{better:.2f}"])
    dat.write(f'"{c}" {better:.4f}\n')
    print(f"{c:14} ionic {a:10g} {unit[c]:6} rxe {b:10g} {unit[c]:6} ratio {ratio:7.3f}  ({better:.1f}x better)")
EOF
gnuplot <<EOF
set terminal pngcairo size 800,400 font "sans,10" noenhanced
set output "$RES/roce-pair.png"
set title "Two guests over RoCEv2 on one bridge, one boot: rocm-ernic pair over rdma_rxe pair"
set style fill solid 0.7
set ylabel "times better than rdma_rxe (latency inverted)"
set logscale y 2
set grid ytics
set boxwidth 0.6
unset key
plot "$RES/roce-pair.dat" using 0:2:xticlabels(1) with boxes lc rgb "#2e8b57"
EOF
rm -f "$RES/roce-pair.dat"
echo "bench/roce-pair.sh: $RES/roce-pair.csv, $RES/roce-pair.png"
