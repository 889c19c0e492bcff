#!/usr/bin/env bash
# The requester's way onto the bridge (issue 27, item 3: a packet-socket ring or a multiqueue TAP,
# whichever measures better): tap-floor-bench's pipelined floor (64 KiB WRITEs, 16 in flight, two
# threads) with the requester's frames written to its TAP, sent on a packet socket on a veth, built
# in that socket's transmit ring, or written to two queues of a multiqueue TAP (TAP_FLOOR_VIA),
# alternated (tap packet ring mq mq ring packet tap). The responder reads a TAP in all four (two
# queues of a multiqueue one with mq). Inside a network namespace made here; nothing leaves it.
# One CSV line per run: via, the requester's us per frame, the responder's.
# Usage: tap_floor_via.sh path/to/tap-floor-bench [csv] [seconds]
set -u
FLOOR=${1:?usage: $0 path/to/tap-floor-bench [csv] [seconds]}
CSV=${2:-bench/results/floor-via.csv}
SECS=${3:-2}
NS=ernic-via-$$
[ "$(id -u)" = 0 ] && ip netns add "$NS" || { echo "needs root and network namespaces" >&2; exit 1; }
TMP=$(mktemp)
trap 'ip netns del "$NS" 2>/dev/null; rm -f "$TMP"' EXIT
ip netns exec "$NS" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip link add br0 type bridge
for i in 0 1; do
	ip netns exec "$NS" ip tuntap add dev "ernic$i" mode tap
	ip netns exec "$NS" ip link set "ernic$i" mtu 9000 master br0 up
done
for i in 0 1; do
	ip netns exec "$NS" ip tuntap add dev "mq$i" mode tap multi_queue
	ip netns exec "$NS" ip link set "mq$i" mtu 9000 master br0 up
done
ip netns exec "$NS" ip link add va type veth peer name vb
ip netns exec "$NS" ip link set va mtu 9000 up
ip netns exec "$NS" ip link set vb mtu 9000 master br0 up
ip netns exec "$NS" ip link set br0 mtu 9000 up
mkdir -p "$(dirname "$CSV")"
echo "via,requester_us_per_frame,responder_us_per_frame" >"$CSV"
for v in tap packet ring mq mq ring packet tap; do
	: >"$TMP"
	TAP_FLOOR_VIA=$v ip netns exec "$NS" "$FLOOR" "$SECS" "$TMP" 65536 16 || exit 1
	awk -F, -v v="$v" '{ printf "%s,%s,%s\n", v, $2, $3 }' "$TMP" >>"$CSV"
done
