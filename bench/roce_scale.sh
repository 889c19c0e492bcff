#!/usr/bin/env bash
# RoCEv2 at scale on one host (issue 28, item 5): N servers with --backend roce on one Linux bridge
# (jumbo frames, path MTU 4096) inside a network namespace made here, no guests; roce-scale-bench
# connects every server to every other and keeps 64 KiB RDMA WRITEs (ROCE_SCALE_LEN=4096: 4 KiB)
# in flight on all of them. One CSV line per N: N, WRITEs/s, GB/s, frames/s (all servers), servers'
# mean CPU %, us per frame, the WRITE's bytes, us per WRITE, memcpy of its bytes in us, the TAP
# floor per frame measured before and after that N, and the ratio of the two per frame.
# Usage: [ROCE_SCALE_LEN=bytes] roce_scale.sh path/to/rocm-ernic path/to/roce-scale-bench [csv] [seconds] [N...]
set -u
BIN=${1:?usage: $0 path/to/rocm-ernic path/to/roce-scale-bench [csv] [seconds] [N...]}
BENCH=${2:?usage}
CSV=${3:-bench/results/roce-scale.csv}
SECS=${4:-3}
shift 4 2>/dev/null || shift $#
COUNTS=${*:-2 4 8 16}
NS=ernic-scale-$$
trap 'ip netns del "$NS" 2>/dev/null' EXIT
[ "$(id -u)" = 0 ] && ip netns add "$NS" || { echo "needs root and network namespaces" >&2; exit 1; }
ip netns exec "$NS" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip link add br0 type bridge
for i in $(seq 0 15); do
	ip netns exec "$NS" ip tuntap add dev "ernic$i" mode tap
	ip netns exec "$NS" ip link set "ernic$i" mtu 9000 master br0
	ip netns exec "$NS" ip link set "ernic$i" up
done
ip netns exec "$NS" ip link set br0 mtu 9000 up
mkdir -p "$(dirname "$CSV")"
# The denominator, measured around each N (A B B A over the sweep): tap-floor-bench, the kernel's
# own CPU per frame for the system calls two servers make per WRITE, through ernic0, the bridge
# and ernic1, with nothing built or parsed (bench/tap_floor_bench.c).
FLOOR=${FLOOR:-$(dirname "$BENCH")/tap-floor-bench}
echo "servers,writes_per_s,gbps,frames_per_s,server_cpu_pct,server_us_per_frame,write_bytes,server_us_per_write,memcpy_us,tap_floor_us_per_frame,ratio_to_floor" >"$CSV"
TMPCSV=$(mktemp)
trap 'ip netns del "$NS" 2>/dev/null; rm -f "$TMPCSV"' EXIT
floor() { ip netns exec "$NS" "$FLOOR" 1 "$TMPCSV.floor" "${ROCE_SCALE_LEN:-65536}" | sed 's/^/# /'; }
for n in $COUNTS; do
	: >"$TMPCSV"; : >"$TMPCSV.floor"
	floor
	ip netns exec "$NS" "$BENCH" "$BIN" "$n" "$SECS" "$TMPCSV" || exit 1
	floor
	f=$(awk '{ s += $1; k++ } END { if (k) printf "%.3f", s / k }' "$TMPCSV.floor")
	awk -F, -v f="$f" '{ printf "%s,%s,%.2f\n", $0, f, (f > 0 ? $6 / f : 0) }' "$TMPCSV" | tee -a "$CSV" |
		awk -F, '{ printf "N=%s: %s us per frame against the TAP floor of %s us: %sx\n", $1, $6, $10, $11 }'
done
rm -f "$TMPCSV.floor"
# The chart beside the CSV (gnuplot, where installed): the servers' CPU per frame beside the floor's, per N.
if command -v gnuplot >/dev/null; then
	gnuplot <<GNUPLOT
set terminal pngcairo size 800,400 font "sans,10" noenhanced
set output "${CSV%.csv}.png"
set datafile separator ","
set title "RoCEv2 WRITEs of $(awk -F, 'NR == 2 { print $7 }' "$CSV") bytes: servers' CPU per frame (both ends) and the TAP floor's"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7
set ylabel "us per frame"
set xlabel "servers"
set yrange [0:*]
set grid ytics
set key top left
plot "$CSV" using 6:xtic(1) title "servers" lc rgb "#4169e1", "" using 10 title "TAP floor" lc rgb "#999999"
GNUPLOT
fi
