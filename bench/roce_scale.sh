#!/usr/bin/env bash
# RoCEv2 at scale on one host (issue 28, item 5): N servers with --backend roce on one Linux bridge
# (jumbo frames, path MTU 4096) inside a network namespace made here, no guests; roce-scale-bench
# connects every server to every other and keeps 64 KiB RDMA WRITEs (ROCE_SCALE_LEN=4096: 4 KiB)
# in flight on all of them. One CSV line per N: N, WRITEs/s, GB/s, frames/s (all servers), servers'
# mean CPU %, us per frame (its two ends together), the WRITE's bytes, us per WRITE, memcpy of its
# bytes in us, frames sent or received per server-core second, the requesters' and responders' us
# per frame (ROCE_SCALE_ONEWAY=1 only: server 2k writes to 2k + 1, nothing comes back but ACKs),
# the TAP floor per frame measured before and after that N (both ends, then the requester's
# calls and the responder's), and the ratio of the servers' cost per frame to the floor's.
# ROCE_SCALE_OP=read: RDMA READs instead (the responders send the payload; one way, each side is
# set beside the floor of the side that sends the payload, or the requests and ACKs). The CSV's
# columns keep their names: writes_per_s and the per-WRITE figures are then per READ.
# Usage: [ROCE_SCALE_LEN=bytes] [ROCE_SCALE_ONEWAY=1] [ROCE_SCALE_OP=read] roce_scale.sh path/to/rocm-ernic path/to/roce-scale-bench [csv] [seconds] [N...]
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
echo "servers,writes_per_s,gbps,frames_per_s,server_cpu_pct,server_us_per_frame,write_bytes,server_us_per_write,memcpy_us,frames_per_core_s,requester_us_per_frame,responder_us_per_frame,tap_floor_us_per_frame,tap_floor_requester_us,tap_floor_responder_us,ratio_to_floor" >"$CSV"
TMPCSV=$(mktemp)
trap 'ip netns del "$NS" 2>/dev/null; rm -f "$TMPCSV"' EXIT
# One way, the floor is pipelined on two threads at the bench's depth: each side's cost on a core
# of its own.
DEPTH=0
[ "${ROCE_SCALE_ONEWAY:-0}" = 1 ] && DEPTH=${ROCE_SCALE_DEPTH:-4}
floor() { ip netns exec "$NS" "$FLOOR" 1 "$TMPCSV.floor" "${ROCE_SCALE_LEN:-65536}" "$DEPTH" | sed 's/^/# /'; }
for n in $COUNTS; do
	: >"$TMPCSV"; : >"$TMPCSV.floor"
	floor
	ip netns exec "$NS" "$BENCH" "$BIN" "$n" "$SECS" "$TMPCSV" || exit 1
	floor
	# READs (ROCE_SCALE_OP=read): the responder sends the payload, the requester the request; each
	# side beside the floor of the side that does its work (the floor's WRITE requester sends the payload).
	f=$(awk -F, -v rd="${ROCE_SCALE_OP:-write}" '{ s += $1; r += $2; p += $3; k++ }
		END { if (k && rd == "read") printf "%.3f,%.3f,%.3f", s / k, p / k, r / k; else if (k) printf "%.3f,%.3f,%.3f", s / k, r / k, p / k }' "$TMPCSV.floor")
	awk -F, -v f="$f" '{ split(f, x, ","); printf "%s,%s,%.2f\n", $0, f, (x[1] > 0 ? $6 / x[1] : 0) }' "$TMPCSV" | tee -a "$CSV" |
		awk -F, '{ printf "N=%s: %s us per frame against the TAP floor of %s us: %sx; %s frames per server-core second\n", $1, $6, $13, $16, $10
			   if ($11 != "") printf "N=%s, one way: requesters %s us per frame (the floor %s), responders %s (the floor %s)\n", $1, $11, $14, $12, $15 }'
done
rm -f "$TMPCSV.floor"
# The chart beside the CSV (gnuplot, where installed): the servers' CPU per frame beside the floor's, per N.
# One way, each side beside its own floor.
PLOT="plot \"$CSV\" using 6:xtic(1) title \"servers\" lc rgb \"#4169e1\", \"\" using 13 title \"TAP floor\" lc rgb \"#999999\""
TITLE="servers' CPU per frame (both ends) and the TAP floor's"
if [ "$DEPTH" != 0 ]; then
	PLOT="plot \"$CSV\" using 11:xtic(1) title \"requesters\" lc rgb \"#4169e1\", \"\" using 14 title \"their floor\" lc rgb \"#9db4f0\", \"\" using 12 title \"responders\" lc rgb \"#d2691e\", \"\" using 15 title \"their floor\" lc rgb \"#f0c8a0\""
	TITLE="one way, $DEPTH in flight: each side's CPU per frame, and its floor's"
fi
if command -v gnuplot >/dev/null; then
	gnuplot <<GNUPLOT
set terminal pngcairo size 800,400 font "sans,10" noenhanced
set output "${CSV%.csv}.png"
set datafile separator ","
set title "RoCEv2 WRITEs of $(awk -F, 'NR == 2 { print $7 }' "$CSV") bytes: $TITLE"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7
set ylabel "us per frame"
set xlabel "servers"
set yrange [0:*]
set grid ytics
set key top left
$PLOT
GNUPLOT
fi
