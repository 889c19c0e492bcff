#!/usr/bin/env bash
# bench/roce-reads.sh [BINARY | --report]: ib_read_bw at 1 MiB and 16 MiB in both directions between
# two TCG guests on one bridge (the guest lane's --peer-guest, in a network namespace of its own),
# several rounds in one boot with the order of the two directions alternating (A B, B A, A B, ...):
# the balance issue 29 asks for, measured with enough samples that one slow run on this host does
# not decide it. The main guest (4 vCPUs) is on the emulated NIC (a server with --backend roce),
# or with ERNIC_READS_MAIN=rxe on rdma_rxe over a virtio-net NIC (the yardstick: rxe's own pace
# both ways with the same peer); the peer guest on rdma_rxe over virtio-net (ERNIC_READS_PEER=rxe,
# the default, 2 vCPUs) or on a second rocm-ernic server (ERNIC_READS_PEER=ionic, 4 vCPUs).
# Direction names: main-to-peer is the main guest reading the peer's memory (the peer's device
# sends the READ responses), peer-to-main the other way.
# Writes bench/results/roce-reads-PAIR-raw.csv (every READ; PAIR is rxe, ionic or rxe-rxe),
# roce-reads-PAIR.csv (per size: the median of each direction, their ratio, the spread) and
# roce-reads-PAIR.png. Without BINARY it
# builds the Release server in build-bench/. Needs root (the lane).
# --report: no guests; the medians and chart again from the raw CSV.
# ERNIC_READS_ROUNDS (rounds, 3), ERNIC_PAIR_ITERS (perftest iterations: 1 MiB runs a tenth of
# them plus 2, 16 MiB runs 5; 300).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RES=$ROOT/bench/results
PEER=${ERNIC_READS_PEER:-rxe} MAIN=${ERNIC_READS_MAIN:-ionic}
case $PEER in rxe | ionic) ;; *) echo "bench/roce-reads.sh: ERNIC_READS_PEER is '$PEER' (rxe or ionic)" >&2; exit 2 ;; esac
case $MAIN-$PEER in ionic-* | rxe-rxe) ;; *) echo "bench/roce-reads.sh: ERNIC_READS_MAIN=rxe goes with an rxe peer" >&2; exit 2 ;; esac
PAIR=$PEER
[ "$MAIN" = rxe ] && PAIR=rxe-rxe
RAW=$RES/roce-reads-$PAIR-raw.csv
mkdir -p "$RES"
if [ "${1:-}" != --report ]; then
	scripts/install-deps.sh --bench
	# shellcheck source=bench/lib.sh
	. bench/lib.sh
	bench_server "${1:-}"
	env=(ERNIC_PAIR_MODE=reads "ERNIC_PAIR_ROUNDS=${ERNIC_READS_ROUNDS:-3}" "ERNIC_PAIR_ITERS=${ERNIC_PAIR_ITERS:-300}")
	args=(--env "ERNIC_PAIR_DEV=$MAIN")
	for e in "${env[@]}"; do args+=(--env "$e" --peer-env "$e"); done
	if [ "$PEER" = ionic ]; then
		args+=(--peer-env ERNIC_PAIR_DEV=ionic --peer-server-args "--backend roce --mac 02:45:52:4e:49:44")
		export ERNIC_VM_PEER_SMP=4 ERNIC_VM_PEER_MEM=2G
	fi
	if [ "$MAIN" = rxe ]; then
		args+=(--no-device --guest-nic)
	else
		args+=(--binary "$BIN" --server-args "--backend roce")
	fi
	out=$(tests/vm/run-vm-test.sh --keep --netns-tap --peer-guest "${args[@]}" \
		--check tests/vm/checks/rdma-pair.sh --peer-check tests/vm/checks/rdma-pair.sh \
		--check-timeout 3000 --timeout 3600) || true
	echo "$out" | grep -E '^(ok|not ok)' || true
	job=$(echo "$out" | sed -n 's/^# job files kept in //p')
	if [ -z "$job" ] || [ ! -s "$job/run1/boot-1.out" ]; then echo "bench/roce-reads.sh: the guest printed nothing" >&2; exit 1; fi
	# Each READ's figure is the client's: the main guest's for main-to-peer, the peer's for peer-to-main.
	# PAIR-FIGURE name=rR-read-bw-SIZE.DIRECTION client=... server=... bytes=B iters=N bw_MiBps=X ...
	{ tr -d '\r' <"$job/run1/boot-1.out"; tr -d '\r' <"$job/run1/peer/boot-1.out" 2>/dev/null; } |
		grep '^PAIR-FIGURE name=r[0-9]*-read-bw-' |
		awk 'BEGIN { print "round,size,direction,client,server,bytes,iters,MiBps" }
		{
			delete kv
			for (i = 2; i <= NF; i++) { split($i, a, "="); kv[a[1]] = a[2] }
			split(kv["name"], n, "."); split(n[1], p, "-")
			print substr(p[1], 2) "," p[4] "," n[2] "," kv["client"] "," kv["server"] "," kv["bytes"] "," kv["iters"] "," kv["bw_MiBps"]
		}' >"$RAW"
	grep -h -E "frames dropped at the TAPs|readers' queues|requesters:" "$job/run1/boot-1.out" "$job"/server*.log 2>/dev/null | tr -d '\r' || true
	rm -rf "$job"
	[ "$(wc -l <"$RAW")" -gt 1 ] || { echo "bench/roce-reads.sh: no figures" >&2; exit 1; }
fi

# Per size: the median of each direction over the rounds, and main-to-peer over peer-to-main.
python3 - "$RAW" "$RES/roce-reads-$PAIR.csv" "$RES/roce-reads-$PAIR.dat" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["MiBps"]]
out = csv.writer(open(sys.argv[2], "w", newline=""))
out.writerow(["size", "main_to_peer_MiBps", "peer_to_main_MiBps", "runs_each", "ratio", "within_20pct",
              "main_to_peer_range", "peer_to_main_range"])
dat = open(sys.argv[3], "w")
for size in sorted({r["size"] for r in rows}, key=lambda s: int(s[:-1])):
    v = {d: [float(r["MiBps"]) for r in rows if r["size"] == size and r["direction"] == d]
         for d in ("main-to-peer", "peer-to-main")}
    if not v["main-to-peer"] or not v["peer-to-main"]:
        continue
    a, b = statistics.median(v["main-to-peer"]), statistics.median(v["peer-to-main"])
    ratio = a / b if b else float("nan")
    ok = "yes" if 1 / 1.2 <= ratio <= 1.2 else "no"
    rng = lambda x: f"{min(x):g}-{max(x):g}"
    out.writerow([size, f"{a:g}", f"{b:g}", min(len(v["main-to-peer"]), len(v["peer-to-main"])), f"{ratio:.3f}", ok,
                  rng(v["main-to-peer"]), rng(v["peer-to-main"])])
    dat.write(f'"{size}" {a:.3f} {b:.3f}\n')
    print(f"READ {size:4}: main-to-peer {a:8g} MiB/s ({rng(v['main-to-peer'])}), "
          f"peer-to-main {b:8g} MiB/s ({rng(v['peer-to-main'])}), ratio {ratio:.3f}, within 20%: {ok}")
EOF
gnuplot <<EOF
set terminal pngcairo size 700,400 font "sans,10" noenhanced
set output "$RES/roce-reads-$PAIR.png"
set title "ib_read_bw both ways, main guest on $MAIN, peer on $PEER: median of the rounds"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7
set ylabel "MiB/s (TCG guests: compare the two bars, not the rates)"
set grid ytics
set key top left
plot "$RES/roce-reads-$PAIR.dat" using 2:xticlabels(1) title "main reads peer", "" using 3 title "peer reads main"
EOF
rm -f "$RES/roce-reads-$PAIR.dat"
echo "bench/roce-reads.sh: $RES/roce-reads-$PAIR.csv, $RES/roce-reads-$PAIR.png"
