#!/usr/bin/env bash
# s3-rdma-bench in a network namespace of its own with a TAP (192.168.200.2/24 on the host side, the
# endpoint 192.168.200.1 behind it): S3 GET and PUT by RDMA through the device, no guest (see
# bench/s3_rdma_bench.c). Nothing leaves the namespace. S3_RDMA_BENCH_VIA=device takes the HTTP through
# the device's Ethernet queues, the client a guest (the server then owns no TAP); tap (the default)
# gives the server the TAP. With a CSV and gnuplot, a chart beside it (the CSV's name, .png): the
# server's CPU per request of every case, each case's two runs side by side, and the run's
# denominators as lines.
# Usage: [S3_RDMA_BENCH_VIA=tap|device] bench/s3_rdma_bench.sh path/to/rocm-ernic path/to/s3-rdma-bench [seconds-per-case] [csv]  (root)
set -euo pipefail
BIN=$(readlink -f "$1")
BENCH=$(readlink -f "$2")
SECS=${3:-2}
CSV=${4:-}
[ -n "$CSV" ] && CSV=$(readlink -f "$CSV")
NS=ernic-s3rdma-$$
trap 'ip netns del "$NS" 2>/dev/null || true; rm -f "${DAT:-}"' EXIT
ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip tuntap add dev ernic0 mode tap
ip netns exec "$NS" ip addr add 192.168.200.2/24 dev ernic0
ip netns exec "$NS" ip link set ernic0 up
ip netns exec "$NS" "$BENCH" "$BIN" ernic0 "$SECS" "$CSV"
[ -n "$CSV" ] && command -v gnuplot >/dev/null || exit 0
# The cases' rows (case-qdN), the first run and the second (the list backwards) side by side.
DAT=$(mktemp)
awk -F, '$1 ~ /^(get|put)-/ { if (!($1 in first)) { first[$1] = $3; order[++n] = $1 } else second[$1] = $3 }
	END { for (i = 1; i <= n; i++) printf "%s %s %s\n", order[i], first[order[i]], second[order[i]] }' "$CSV" >"$DAT"
VIA=${S3_RDMA_BENCH_VIA:-tap}
if [ "$VIA" = device ]; then
	REF=$(awk -F, '$1 == "posted-irq" { print $3 }' "$CSV")
	REFNAME="one posted message and its interrupt"
else
	REF=$(awk -F, '$1 == "floor-get-4k-qd16" { s += $3; k++ } END { if (k) printf "%.3f", s / k }' "$CSV")
	REFNAME="the TAP floor of a GET 4 KiB at qd16"
fi
gnuplot <<GNUPLOT
set terminal pngcairo size 900,420 font "sans,10" noenhanced
set output "${CSV%.csv}.png"
set title "S3 by RDMA, HTTP through $([ "$VIA" = device ] && echo "the device's Ethernet queues (the client a guest)" || echo "the server's TAP"): server CPU per request"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7
set logscale y
set ylabel "server us per request (log)"
set grid ytics
set key top left
plot "$DAT" using 2:xtic(1) title "first run" lc rgb "#4169e1", "" using 3 title "second run" lc rgb "#87ceeb", \
     ${REF:-0} title "$REFNAME (${REF:-?} us)" with lines lw 2 lc rgb "#999999", \
     5 title "the issue's goal for GET 4 KiB (5 us)" with lines dt 2 lc rgb "#cc0000"
GNUPLOT
