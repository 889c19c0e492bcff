#!/usr/bin/env bash
# roce-ci: two servers with --backend roce on one Linux bridge, inside a network namespace this
# test creates: server A on TAP ernicA (guest 192.168.200.10, pinned to it with ip=), server B on
# TAP ernicB (guest 192.168.200.11). The client program (tests/ci/roce_test.c) drives both devices over vfio-user,
# connects an RC QP of each to the other and checks every operation byte for byte in guest memory
# and frame by frame on ernicA; then again, in rounds, with the bridge dropping a tenth of the
# RoCEv2 frames (nftables). Nothing leaves the namespace.
# Usage: roce-ci.sh path/to/rocm-ernic path/to/roce-ci-client
. "$(dirname "$0")/lib.sh"
CLIENT=${2:?usage: $0 path/to/rocm-ernic path/to/roce-ci-client}
NS=ernic-roceci-$$
PID_A= PID_B=
nsx() { ip netns exec "$NS" "$@"; }

cleanup_ns() {
	[ -n "$PID_A" ] && kill -KILL "$PID_A" 2>/dev/null
	[ -n "$PID_B" ] && kill -KILL "$PID_B" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup_ns EXIT

# Jumbo frames: the bulk run's path MTU is 4096, and a 4 KiB RoCEv2 payload makes a 4.1 KiB frame.
if ! roce_bridge_up 9000; then
	fail roce-setup "needs root and network namespaces"
	finish
fi

# servers_up X Y BACKEND_A: server A on ernicA with BACKEND_A, server B on ernicB (lib.sh's roce_pair_up).
servers_up() { roce_pair_up "$1" "$2" "$3"; }

# servers_down [CHECK]: SIGTERM to both, each must exit 0 (passes CHECK-A, CHECK-B when given).
servers_down() {
	for s in A B; do
		pid=PID_$s
		kill -TERM "${!pid}" 2>/dev/null
		if wait "${!pid}"; then
			[ -n "${1:-}" ] && pass "$1-$s"
		else
			[ -n "${1:-}" ] && fail "$1-$s" "exit status $?"
		fi
		eval "PID_$s="
	done
}

servers_up a b roce:mtu=4096,timeout=14,retry=7,ip=192.168.200.10
if has_line "$TMP/a.log" "tap ernicA: joined to the segment" &&
	has_line "$TMP/b.log" "tap ernicB: joined to the segment"; then
	pass roce-servers-up
else
	fail roce-servers-up "$(cat "$TMP/a.log" "$TMP/b.log")"
	finish
fi
# Each server made the kernel's queue toward it long enough to ride out a while unscheduled.
if [ "$(nsx cat /sys/class/net/ernicA/tx_queue_len)" = 8192 ] && [ "$(nsx cat /sys/class/net/ernicB/tx_queue_len)" = 8192 ] &&
	has_line "$TMP/a.log" "tap ernicA: its queue toward us made 8192 frames long (was 1000)"; then
	pass roce-tap-queue
else
	fail roce-tap-queue "$(nsx cat /sys/class/net/ernicA/tx_queue_len) $(grep 'queue toward' "$TMP/a.log")"
fi

if nsx "$CLIENT" "$TMP/a.sock" "$TMP/b.sock" ernicA ernicB >"$TMP/client.log" 2>&1; then
	pass roce-client
else
	fail roce-client "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/client.log" | head -8 | tr '\n' '|')"
fi
sed 's/^/# /' "$TMP/client.log"

# The same servers (the client's departure reset both devices) with the bridge dropping one RoCEv2
# frame in ten, both ways: go-back-N, timeouts and duplicates through the whole engine.
if nsx nft -f - <<'NFT'
table bridge ernicloss {
	chain forward_drop {
		type filter hook forward priority 0;
		udp dport 4791 numgen random mod 10 == 0 counter drop
	}
}
NFT
then
	if nsx "$CLIENT" "$TMP/a.sock" "$TMP/b.sock" ernicA ernicB lossy >"$TMP/lossy.log" 2>&1; then
		pass roce-lossy
	else
		fail roce-lossy "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/lossy.log" | head -8 | tr '\n' '|')"
	fi
	sed 's/^/# /' "$TMP/lossy.log"
	dropped=$(nsx nft list ruleset | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
	[ "${dropped:-0}" -gt 0 ] && pass "roce-lossy-dropped-$dropped" || fail roce-lossy-dropped "nothing dropped"
else
	fail roce-lossy "nftables cannot filter the bridge here"
fi

servers_down roce-server-exit
# The node's counters at exit: A sent and resent packets (the lossy rounds), and the bad R_Key's
# failed WRITE was logged with its status.
if grep -Eq "roce: requesters: [1-9][0-9]* packets, [1-9][0-9]* resent" "$TMP/a.log" &&
	grep -q "a send work request failed: rem-access-err" "$TMP/a.log"; then
	pass roce-stats-logged
else
	fail roce-stats-logged "$(grep 'roce:' "$TMP/a.log" | tail -4 | tr '\n' '|')"
fi
# The client's guest memory is sealed, as QEMU's memfd backend seals it: the WRITEs' and SENDs'
# payloads went from where they lay in it, copied once, into the TAP's merged writes (the client
# checked every byte of them on the wire and in the peer's memory).
for l in a b; do
	if grep -Eq "roce: [0-9]+ frames in, [0-9]+ out \(802.1Q tagged: [0-9]+ in, [0-9]+ out; [1-9][0-9]* out in pieces" "$TMP/$l.log" &&
		grep -Eq "tap ernic[AB]: .* RoCEv2 datagrams carrying [0-9]+, [1-9][0-9]* RoCEv2 datagrams taken in pieces" "$TMP/$l.log"; then
		pass "roce-payload-in-place-$l"
	else
		fail "roce-payload-in-place-$l" "$(grep 'roce: [0-9]* frames in\|tap ernic.*frames in' "$TMP/$l.log" | tr '\n' '|')"
	fi
done
# Bulk: fresh servers on the same TAPs, the bridge clean again, 1 MiB and 16 MiB by WRITE, READ
# and SEND both ways. Nothing may be dropped at either TAP (the kernel's count of frames its queue
# toward a server had no room for) and no requester told of a lost packet (no sequence or implied
# NAK): the senders are paced to what the readers take, by the readers' CNPs. (A resend after a
# timeout is allowed: on a loaded host an ACK may come late, which loses nothing.)
nsx nft delete table bridge ernicloss 2>/dev/null
tapdrops() { nsx cat /sys/class/net/ernicA/statistics/tx_dropped /sys/class/net/ernicB/statistics/tx_dropped | awk '{ n += $1 } END { print n }'; }
drops0=$(tapdrops)
servers_up c d roce
if nsx "$CLIENT" "$TMP/c.sock" "$TMP/d.sock" ernicA ernicB bulk >"$TMP/bulk.log" 2>&1; then
	pass roce-bulk
else
	fail roce-bulk "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/bulk.log" | head -8 | tr '\n' '|')"
fi
sed 's/^/# /' "$TMP/bulk.log"
servers_down roce-bulk-server-exit
drops=$(( $(tapdrops) - drops0 ))
[ "$drops" = 0 ] && pass roce-bulk-tap-drops-0 || fail roce-bulk-tap-drops "$drops frames dropped at the TAPs"
for l in c d; do
	grep 'roce: \(requesters\|congestion\)' "$TMP/$l.log" | sed 's/^/# /'
	# Where the kernel takes UDP segmentation (6.2 and later), each server wrote its RoCEv2 packets in
	# merged writes and read the other's as UDP super-frames, which the switch handed whole to the
	# RoCEv2 node and the node cut, handling datagrams where they lay while its ring was empty: the
	# transfers above checked them byte for byte.
	if grep -q "tap ernic[AB]: receive offloads on (checksum, TCPv4 and UDP segmentation" "$TMP/$l.log"; then
		grep "tap ernic[AB]: .* frames in" "$TMP/$l.log" | sed 's/^/# /'
		if grep -Eq "tap ernic[AB]: [0-9]+ frames in \([0-9]+ of them segmentation-offload super-frames, [1-9][0-9]* of those UDP, 0 refused\), [0-9]+ out \([0-9]+ of them merged segmentation-offload writes, [1-9][0-9]* of RoCEv2 datagrams carrying [1-9][0-9]*," "$TMP/$l.log"; then
			pass "roce-bulk-udp-offload-$l"
		else
			fail "roce-bulk-udp-offload-$l" "$(grep 'tap ernic' "$TMP/$l.log" | tr '\n' '|')"
		fi
		if grep -Eq "roce: [0-9]+ frames in, .*; [1-9][0-9]* super-frames cut \([1-9][0-9]* datagrams handled where they lay" "$TMP/$l.log"; then
			pass "roce-bulk-udp-whole-$l"
		else
			fail "roce-bulk-udp-whole-$l" "$(grep 'roce: [0-9]* frames in' "$TMP/$l.log")"
		fi
	fi
	# The bulk area is a memfd the client did not seal: no payload was read in place from it (a
	# client could shrink the file under a read), every one was copied under the SIGBUS guard.
	if grep -Eq "roce: [0-9]+ frames in, [1-9][0-9]* out \(802.1Q tagged: [0-9]+ in, [0-9]+ out; 0 out in pieces" "$TMP/$l.log"; then
		pass "roce-bulk-unsealed-copied-$l"
	else
		fail "roce-bulk-unsealed-copied-$l" "$(grep 'roce: [0-9]* frames in' "$TMP/$l.log")"
	fi
	if grep -Eq "roce: requesters: [0-9]+ packets, [0-9]+ resent, [0-9]+ timeouts; responses:( (ack|read-resp|atomic-ack|rnr-nak|stale|echo)=[0-9]+)*;" "$TMP/$l.log"; then
		pass "roce-bulk-no-loss-$l"
	else
		fail "roce-bulk-no-loss-$l" "$(grep 'roce: requesters' "$TMP/$l.log")"
	fi
done

# ECN: fresh servers, the bridge marking every RoCEv2 frame Congestion Experienced (as a congested
# switch would), the client's connect and WRITE tests: each receiver counts CE frames and answers
# them with CNPs, each sender counts those CNPs and cuts its rate; the transfers are exact.
if nsx nft -f - <<'NFT'
table bridge ernicce {
	chain forward_mark {
		type filter hook forward priority 0;
		udp dport 4791 ip ecn set ce counter
	}
}
NFT
then
	servers_up e f roce
	if nsx "$CLIENT" "$TMP/e.sock" "$TMP/f.sock" ernicA ernicB pcap >"$TMP/ecn.log" 2>&1; then
		pass roce-ecn-client
	else
		fail roce-ecn-client "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/ecn.log" | head -8 | tr '\n' '|')"
	fi
	servers_down roce-ecn-server-exit
	nsx nft delete table bridge ernicce 2>/dev/null
	for l in e f; do
		grep 'roce: congestion' "$TMP/$l.log" | sed 's/^/# /'
		if grep -Eq "roce: congestion: [1-9][0-9]* CNPs sent, [1-9][0-9]* received, [1-9][0-9]* frames marked CE, [1-9][0-9]* rate cuts" "$TMP/$l.log"; then
			pass "roce-ecn-cnp-$l"
		else
			fail "roce-ecn-cnp-$l" "$(grep 'roce: congestion' "$TMP/$l.log")"
		fi
	done
else
	fail roce-ecn "nftables cannot mark ECN on the bridge here"
fi

# B refused five UD datagrams: the wrong Q_Key of test_ud, and for its UD QP and its GSI QP each
# the datagram longer than the receive and the one that came after it, to the QP in error.
if grep -q "roce: .*UD [0-9]* in.* ud_refused=5\b" "$TMP/b.log"; then
	pass roce-ud-refused
else
	fail roce-ud-refused "$(grep 'roce:' "$TMP/b.log" | head -1)"
fi
# A runs with ip=192.168.200.10: test_ip_pinned's QP naming 192.168.200.99 was refused and said so
# (twice: at RTR and again at RTS), then its datagram from .99 and B's datagram to .98: four.
if grep -q "roce: the template of QP 11 names 192.168.200.99, not ip=192.168.200.10: refused" "$TMP/a.log" &&
	grep -q "roce: 4 QPs and datagrams refused for an address other than ip=192.168.200.10" "$TMP/a.log"; then
	pass roce-ip-pinned
else
	fail roce-ip-pinned "$(grep 'ip=' "$TMP/a.log" | tr '\n' '|')"
fi
finish
