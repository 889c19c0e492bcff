#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for the Ethernet function: the stock ionic driver's netdev comes up with the MAC
# the server was given, its link is up, it reaches the S3 endpoint (ARP, ICMP, TCP) on the
# emulated segment, carries a 16 MiB object both ways over curl's body path with matching
# digests, survives an MTU change, ip link down/up, an unload/reload of the driver and a
# firmware reset.
# Server: --backend s3 (endpoint 192.168.200.1:9000, bucket ernic).
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

MAC=${ERNIC_GUEST_MAC:-02:45:52:4e:49:43}
EP=192.168.200.1
URL=http://$EP:9000

carrier() { [ "$(cat "/sys/class/net/$IF/carrier" 2>/dev/null)" = 1 ]; }
reach() { ping -c 1 -W 2 "$EP"; }
bring_up() {
	ip addr flush dev "$IF"
	ip addr add 192.168.200.2/24 dev "$IF" && ip link set "$IF" up
}

if wait_for 30 ionic_if; then
	IF=$(ionic_if)
	pass eth-netdev
else
	fail eth-netdev "no netdev for 1dd8:1002: $(ls /sys/class/net | tr '\n' ' '); $(dmesg | grep -i ionic | tail -3)"
	finish
fi
addr=$(cat "/sys/class/net/$IF/address")
[ "$addr" = "$MAC" ] && pass eth-mac || fail eth-mac "$IF has $addr, want $MAC"
ethtool -i "$IF" | grep -q '^driver: ionic$' && pass eth-ethtool-driver || fail eth-ethtool-driver "$(ethtool -i "$IF" | head -2)"

bring_up
wait_for 20 carrier && pass eth-link-up || fail eth-link-up "no carrier on $IF: $(ip -br link show "$IF")"
wait_for 30 reach && pass eth-ping || fail eth-ping "$(ping -c 2 -W 2 $EP 2>&1 | tail -2)"
ip neigh show "$EP" | grep -q "lladdr 02:53:c0:a8:c8:01" && pass eth-arp || fail eth-arp "$(ip neigh show $EP)"

out=$(curl -s -f --max-time 60 "$URL/")
echo "$out" | grep -q "<Name>ernic</Name>" && pass eth-curl-list || fail eth-curl-list "$out"

head -c 16777216 /dev/urandom >/tmp/obj
want=$(sha256sum </tmp/obj | cut -d' ' -f1)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 600 -T /tmp/obj "$URL/ernic/guest-16m")
[ "$code" = 200 ] && pass eth-curl-put || fail eth-curl-put "HTTP $code"
curl -s -f --max-time 600 -o /tmp/back "$URL/ernic/guest-16m"
got=$(sha256sum </tmp/back | cut -d' ' -f1)
[ "$got" = "$want" ] && pass eth-curl-get-digest || fail eth-curl-get-digest "$got != $want ($(stat -c %s /tmp/back) bytes)"

# MTU changes up to 9000 are accepted by the device.
if ip link set "$IF" mtu 9000 && [ "$(cat "/sys/class/net/$IF/mtu")" = 9000 ] && wait_for 20 reach; then
	pass eth-mtu-9000
else
	fail eth-mtu-9000 "mtu $(cat "/sys/class/net/$IF/mtu"); $(dmesg | grep -i ionic | tail -2)"
fi
ip link set "$IF" mtu 1500

ip link set "$IF" down
ip link set "$IF" up
wait_for 20 carrier && wait_for 30 reach && pass eth-down-up || fail eth-down-up "$(ip -br link show "$IF")"

# With the server joined to a TAP (--netns-tap), a host-side peer shares the segment.
if [ -n "${ERNIC_TAP_PEER:-}" ]; then
	peer() { ping -c 1 -W 2 "$ERNIC_TAP_PEER"; }
	wait_for 30 peer && pass eth-tap-peer-ping || fail eth-tap-peer-ping "$(ping -c 2 -W 2 "$ERNIC_TAP_PEER" 2>&1 | tail -2)"
	# A TCP stream from the host's kernel: it sends segmentation-offload super-frames into the
	# TAP, which the server cuts into MSS-sized frames with their own checksums for the guest.
	if [ -n "${ERNIC_TAP_PEER_HTTP:-}" ]; then
		want=$(curl -s -f --max-time 30 "$ERNIC_TAP_PEER_HTTP/blob.sha256" | cut -d' ' -f1)
		got=$(curl -s -f --max-time 120 "$ERNIC_TAP_PEER_HTTP/blob" | sha256sum | cut -d' ' -f1)
		[ -n "$want" ] && [ "$got" = "$want" ] && pass eth-tap-peer-stream "16 MiB from the host peer, SHA-256 matches" ||
			fail eth-tap-peer-stream "SHA-256 $got, want ${want:-nothing}; $(ip -s link show "$IF" | tail -4 | tr '\n' ' ')"
	fi
	sleep 3 # give the host-side peer its turn while the link is up
fi

# Unload and reload the driver: the device comes back and works.
modprobe -r ionic_rdma 2>/dev/null
if rmmod ionic && modprobe ionic && wait_for 30 ionic_if; then
	IF=$(ionic_if)
	bring_up
	wait_for 20 carrier && wait_for 30 reach && curl -s -f --max-time 60 "$URL/" | grep -q "<Name>ernic</Name>" &&
		pass eth-reload || fail eth-reload "after reload: $(ip -br link show "$IF"); $(dmesg | grep -i ionic | tail -3)"
else
	fail eth-reload "rmmod/modprobe failed: $(dmesg | grep -i ionic | tail -3)"
fi

# A firmware reset (the server simulates one on SIGUSR1): the driver sees the firmware stop and
# come back with a new generation, re-initialises the LIF and its queues, and traffic flows again.
if [ -d /mnt/job ]; then
	fw_stopped() { dmesg | grep -q "ionic .*FW stopped"; }
	fw_running() { dmesg | grep -q "ionic .*FW running"; }
	echo "signal USR1" >/mnt/job/host-request.new && mv /mnt/job/host-request.new /mnt/job/host-request
	if wait_for 20 test -f /mnt/job/host-request.done && wait_for 60 fw_stopped && wait_for 90 fw_running &&
		wait_for 30 carrier && wait_for 60 reach && curl -s -f --max-time 60 "$URL/" | grep -q "<Name>ernic</Name>"; then
		pass eth-fw-reset
	else
		fail eth-fw-reset "$(ip -br link show "$IF"); $(dmesg | grep -i ionic | tail -4)"
	fi
fi

echo "--- ionic kernel log"
dmesg | grep -i ionic | tail -20
finish
