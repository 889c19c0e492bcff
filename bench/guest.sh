#!/usr/bin/env bash
# bench/guest.sh [BINARY | --report]: the guest-side benchmarks, every figure beside its denominator from
# the same TCG boot (under emulation absolute guest figures mean little; the ratios are the
# result). One guest gets two emulated NICs and a virtio-blk disk:
#   NIC 1: a server with --backend nvmeof (RAM namespace)     vs  the virtio-blk disk (tmpfs file)
#   NIC 2: a server with --backend s3                          S3 by RDMA token vs curl vs disk
#          and perftest between its own queue pairs            vs  Linux rdma_rxe in the same guest
#   NIC 3: a server with --backend s3 --mmap-doorbells         Ethernet (ping, curl) vs NIC 2's
#          trapped doorbells
# Writes bench/results/guest-raw.csv (every run), bench/results/guest.csv (medians and ratios,
# each against its goal where the project set one), bench/results/guest.png (the ratios) and
# bench/results/guest-boot.txt (what the guest printed).
# Without BINARY it builds the Release server in build-bench/. Needs root (the guest lane).
# --report: no guest; the medians, ratios and chart again from bench/results/guest-raw.csv.
# --profile [BINARY]: instead, where a small NVMe-oF read goes, beside virtio-blk in one boot: the
# guest (bench/guest/nvmeof-profile.sh) runs fio 4 KiB randread QD32 x 4 on each device between
# two snapshots of its CPU time by kind, the device's interrupts and context switches, and for
# NVMe-oF of the server's counters and CPU time (the runner's "stats" request, SIGUSR2); every
# difference per I/O goes to bench/results/nvmeof-profile.csv and a table on the terminal.
# ERNIC_BENCH_RUNTIME: seconds per fio run (10).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/install-deps.sh --bench
RES=$ROOT/bench/results
mkdir -p "$RES"
PROFILE=0
if [ "${1:-}" = --profile ]; then
	PROFILE=1
	shift
fi
if [ "${1:-}" != --report ]; then
	# shellcheck source=bench/lib.sh
	. bench/lib.sh
	bench_server "${1:-}"
	DISKDIR=$(mktemp -d /dev/shm/ernic-bench.XXXXXX)
	trap 'rm -rf "$DISKDIR"' EXIT
	truncate -s 256M "$DISKDIR/ernic-bench.img"

	if [ $PROFILE = 1 ]; then
		servers=(--server-args "--backend nvmeof:size=256M")
		check=bench/guest/nvmeof-profile.sh result=profile.csv
	else
		servers=(--server-args "--backend nvmeof:size=256M"
			--server-args "--backend s3:ip=192.168.201.1,size=512M --mac 02:45:52:4e:49:44"
			--server-args "--backend s3:ip=192.168.202.1 --mac 02:45:52:4e:49:45 --mmap-doorbells")
		check=bench/guest/guest-bench.sh result=guest-bench.csv
	fi
	out=$(tests/vm/run-vm-test.sh --binary "$BIN" --netns --keep "${servers[@]}" \
		--disk "$DISKDIR/ernic-bench.img" --env "ERNIC_BENCH_RUNTIME=${ERNIC_BENCH_RUNTIME:-10}" \
		--check "$check" --check-timeout 3000 --timeout 3600) || true
	echo "$out" | grep -E '^(ok|not ok)' || true
	job=$(echo "$out" | sed -n 's/^# job files kept in //p')
	raw=$job/run1/$result
	[ -n "$job" ] && [ -s "$raw" ] || { echo "bench/guest.sh: the guest wrote no results" >&2; exit 1; }
	if [ $PROFILE = 1 ]; then
		cp "$raw" "$RES/nvmeof-profile-raw.csv"
		rm -rf "$job"
		bench/guest/profile-report.py "$RES/nvmeof-profile-raw.csv" "$RES/nvmeof-profile.csv" "$(getconf CLK_TCK)"
		exit 0
	fi
	cp "$raw" "$RES/guest-raw.csv"
	tr -d '\r' <"$job/run1/boot-1.out" >"$RES/guest-boot.txt"
	rm -rf "$job"
fi

# Medians per (group, case, subject); then each ratio against its denominator and goal.
python3 - "$RES/guest-raw.csv" "$RES/guest.csv" "$RES/guest.dat" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
val, unit = {}, {}
for r in rows:
    if not r["value"]:
        continue
    val.setdefault((r["group"], r["case"], r["subject"]), []).append(float(r["value"]))
    unit[(r["group"], r["case"])] = r["unit"]
med = {k: statistics.median(v) for k, v in val.items()}
# (group, subject, denominator, higher is better, goal or None) per comparison; goals as issued.
pairs = [("nvmeof", "ionic-nvmeof", "virtio-blk"), ("s3", "s3-rdma", "s3-curl"),
         ("s3", "s3-rdma", "virtio-blk"), ("s3", "s3-curl", "virtio-blk"),
         ("perftest", "ionic", "rxe"), ("doorbells", "mapped", "trapped")]
goals = {("nvmeof", "randread-4k-qd1-mean"): ("<=", 1.25), ("nvmeof", "randread-4k-qd32x4"): (">=", 1.0),
         ("nvmeof", "seqread-1m"): (">=", 1.0), ("s3", "get-1M", "s3-curl"): (">=", 5.0)}
out = csv.writer(open(sys.argv[2], "w", newline=""))
out.writerow(["group", "case", "subject", "value", "denominator", "denominator_value", "unit", "ratio",
              "goal", "met"])
dat = open(sys.argv[3], "w")
cases = sorted({(g, c) for g, c, _ in med}, key=lambda k: [r["group"] + r["case"] for r in rows].index(k[0] + k[1]))
for g, c in cases:
    for pg, subj, den in pairs:
        if pg != g or (g, c, subj) not in med or (g, c, den) not in med:
            continue
        a, b = med[(g, c, subj)], med[(g, c, den)]
        ratio = a / b if b else float("nan")
        goal = goals.get((g, c, den)) or (goals.get((g, c)) if g == "nvmeof" else None)
        met = ""
        if goal:
            met = "yes" if (ratio <= goal[1] if goal[0] == "<=" else ratio >= goal[1]) else "no"
        out.writerow([g, c, subj, f"{a:g}", den, f"{b:g}", unit[(g, c)], f"{ratio:.2f}",
                      f"{goal[0]} {goal[1]:g}" if goal else "", met])
        # The chart shows how many times better the first is: for times, the inverse ratio.
        adv = (1 / ratio) if unit[(g, c)] == "us" else ratio
        dat.write(f'"{g}: {c}, {subj} over {den}" {adv:.4f} {0x2e8b57 if adv >= 1 else 0xcd5c5c}\n')
        print(f"{g:9} {c:22} {subj:13} {a:10g} {unit[(g, c)]:5} vs {den:11} {b:10g}  ratio {ratio:6.2f}"
              + (f"  goal {goal[0]} {goal[1]:g}: {'met' if met == 'yes' else 'NOT met'}" if goal else ""))
EOF

gnuplot <<EOF
set terminal pngcairo size 1100,900 font "sans,9" noenhanced
set output "$RES/guest.png"
set title "rocm-ernic in one TCG guest boot: each figure against its denominator measured beside it"
set style fill solid 0.7
set logscale x 2
set xlabel "times better (right, green) or worse (left, red) than the denominator (latencies inverted)"
set grid xtics
set yrange [-1:*] reverse
set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb "black"
unset key
plot "$RES/guest.dat" using (\$2 > 1 ? 1 : \$2):0:(\$2 > 1 ? 1 : \$2):(\$2 > 1 ? \$2 : 1):(\$0 - 0.35):(\$0 + 0.35):3:yticlabels(1) \\
	with boxxyerrorbars lc rgb variable
EOF
rm -f "$RES/guest.dat"
echo "bench/guest.sh: $RES/guest.csv, $RES/guest.png"
