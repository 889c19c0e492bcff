#!/usr/bin/env bash
# RoCEv2 at scale on one host (issue 28, item 5): N servers with --backend roce on one Linux bridge
# (jumbo frames, path MTU 4096) inside a network namespace made here, no guests; roce-scale-bench
# connects every server to every other and keeps 64 KiB RDMA WRITEs in flight on all of them.
# One CSV line per N: N, WRITEs/s, GB/s, frames/s (all servers), servers' mean CPU %, us per frame.
# Usage: roce_scale.sh path/to/rocm-ernic path/to/roce-scale-bench [csv] [seconds] [N...]
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
echo "servers,writes_per_s,gbps,frames_per_s,server_cpu_pct,server_us_per_frame" >"$CSV"
for n in $COUNTS; do
	ip netns exec "$NS" "$BENCH" "$BIN" "$n" "$SECS" "$CSV" || exit 1
done
