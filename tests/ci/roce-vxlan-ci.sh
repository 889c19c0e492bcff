#!/usr/bin/env bash
# roce-vxlan-ci: two machines on the standard network (issue 28, item 1), as two network
# namespaces this test creates, joined only by a VXLAN tunnel over a veth pair (the underlay).
# Each "host" has a bridge with its server's TAP and its VXLAN device on it; server A (--backend
# roce, 192.168.200.10) runs in host A, server B (192.168.200.11) in host B. The roce-ci client
# drives both devices over vfio-user (their sockets are files, which namespaces do not hide) and
# runs in host A, where it watches A's TAP:
#  1. underlay MTU 1500, so the tunnel carries 1450-byte frames and the QPs use a 1024-byte path
#     MTU (a RoCEv2 packet of 1024 payload bytes is at most 1084 bytes of IP with its headers): the connect and
#     WRITE tests, opcodes and consecutive PSNs checked on A's TAP, bytes in B's memory;
#  2. underlay MTU 9000 (jumbo frames: the tunnel carries 8950), path MTU 4096: 1 MiB and 16 MiB
#     by WRITE, READ and SEND both ways, byte for byte, nothing dropped at either TAP;
#  3. the arithmetic's other side: path MTU 4096 over the 1500-byte underlay loses every full
#     frame, and the requester says so (retry exceeded), rather than anything arriving corrupted.
# Nothing leaves the two namespaces.
# Usage: roce-vxlan-ci.sh path/to/rocm-ernic path/to/roce-ci-client
. "$(dirname "$0")/lib.sh"
CLIENT=${2:?usage: $0 path/to/rocm-ernic path/to/roce-ci-client}
NSA=ernic-vxa-$$
NSB=ernic-vxb-$$
PID_A= PID_B=

cleanup_ns() {
	[ -n "$PID_A" ] && kill -KILL "$PID_A" 2>/dev/null
	[ -n "$PID_B" ] && kill -KILL "$PID_B" 2>/dev/null
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup_ns EXIT

# hosts_up UNDERLAY_MTU: the two hosts, the underlay at that MTU and the tunnel 50 bytes below it.
hosts_up() {
	local mtu=$1 h ns peer tap
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	ip netns add "$NSA" && ip netns add "$NSB" || return 1
	ip link add vxu-a-$$ netns "$NSA" type veth peer name vxu-b-$$ netns "$NSB" || return 1
	for h in A B; do
		if [ $h = A ]; then ns=$NSA peer=10.99.0.2 tap=ernicA; else ns=$NSB peer=10.99.0.1 tap=ernicB; fi
		local me=10.99.0.$([ $h = A ] && echo 1 || echo 2) under=vxu-$([ $h = A ] && echo a || echo b)-$$
		ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
		ip netns exec "$ns" ip link set lo up
		ip netns exec "$ns" ip link set "$under" mtu "$mtu" up
		ip netns exec "$ns" ip addr add "$me/24" dev "$under"
		ip netns exec "$ns" ip link add vxlan0 type vxlan id 42 dstport 4789 local "$me" remote "$peer" dev "$under" || return 1
		ip netns exec "$ns" ip link add br0 type bridge
		ip netns exec "$ns" ip tuntap add dev "$tap" mode tap
		ip netns exec "$ns" ip link set vxlan0 mtu $((mtu - 50)) master br0 up
		ip netns exec "$ns" ip link set "$tap" mtu $((mtu - 50)) master br0 up
		ip netns exec "$ns" ip link set br0 mtu $((mtu - 50)) up
	done
}

# servers_up X Y: server A in host A on ernicA, server B in host B on ernicB (lib.sh's roce_pair_up).
servers_up() { NS_A=$NSA NS_B=$NSB SPEC_B=roce:timeout=14,retry=3 roce_pair_up "$1" "$2" roce:timeout=14,retry=3; }

servers_down() {
	for s in A B; do
		pid=PID_$s
		kill -TERM "${!pid}" 2>/dev/null
		if wait "${!pid}"; then pass "$1-$s"; else fail "$1-$s" "exit status $?"; fi
		eval "PID_$s="
	done
}

# run_client NAME SOCKA SOCKB MODE: the client in host A; passes or fails NAME.
run_client() {
	if ip netns exec "$NSA" "$CLIENT" "$TMP/$2.sock" "$TMP/$3.sock" ernicA ernicB "$4" >"$TMP/$1.log" 2>&1; then
		pass "$1"
	else
		fail "$1" "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/$1.log" | head -8 | tr '\n' '|')"
	fi
	sed 's/^/# /' "$TMP/$1.log"
}

tapdrops() {
	{ ip netns exec "$NSA" cat /sys/class/net/ernicA/statistics/tx_dropped
	  ip netns exec "$NSB" cat /sys/class/net/ernicB/statistics/tx_dropped; } | awk '{ n += $1 } END { print n }'
}

if [ "$(id -u)" != 0 ] || ! hosts_up 1500; then
	fail vxlan-setup "needs root, network namespaces and VXLAN"
	finish
fi
pass vxlan-setup
# The underlay carries the tunnel: host A reaches host B's address over it.
ip netns exec "$NSA" ping -c 2 -W 2 -i 0.2 10.99.0.2 >/dev/null 2>&1 && pass vxlan-underlay || fail vxlan-underlay "no ping"

# 1. Path MTU 1024 through a 1450-byte tunnel.
servers_up a b
run_client vxlan-rc-1024 a b pcap
servers_down vxlan-1024-exit
enc=$(ip netns exec "$NSA" ip -s link show vxlan0 | awk '/TX:/ { getline; print $2 }')
[ "${enc:-0}" -gt 0 ] && pass "vxlan-frames-through-the-tunnel-$enc" || fail vxlan-frames-through-the-tunnel "vxlan0 sent nothing"

# 2. Jumbo underlay, path MTU 4096: the bulk transfers, nothing dropped at the TAPs.
if hosts_up 9000; then
	d0=$(tapdrops)
	servers_up c d
	run_client vxlan-bulk-4096 c d bulk
	servers_down vxlan-bulk-exit
	d=$(( $(tapdrops) - d0 ))
	[ "$d" = 0 ] && pass vxlan-bulk-tap-drops-0 || fail vxlan-bulk-tap-drops "$d frames dropped at the TAPs"
else
	fail vxlan-jumbo-setup "cannot make the hosts again"
fi

# 3. Path MTU 4096 over the 1500-byte underlay: too big for the tunnel, so the WRITE fails with
#    retry exceeded at the requester (the client's WRITE check fails), and nothing corrupt lands.
if hosts_up 1500; then
	servers_up e f
	if ip netns exec "$NSA" "$CLIENT" "$TMP/e.sock" "$TMP/f.sock" ernicA ernicB bulk >"$TMP/toobig.log" 2>&1; then
		fail vxlan-mtu-too-big "4096-byte frames crossed a 1450-byte tunnel"
		servers_down vxlan-toobig-exit
	else
		servers_down vxlan-toobig-exit
		if grep -q 'a send work request failed: retry-exc' "$TMP/e.log"; then
			pass vxlan-mtu-too-big
		else
			fail vxlan-mtu-too-big "$(grep -i 'work request\|roce: req' "$TMP/e.log" | head -3 | tr '\n' '|')"
		fi
	fi
fi
finish
