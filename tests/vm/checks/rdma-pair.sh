#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for RDMA between two guests on one bridge (run-vm-test.sh --peer-guest): the same
# script runs in both, as the main guest (ERNIC_SIDE=main) and as the peer (ERNIC_SIDE=peer).
# Each side's RDMA device is chosen by its ERNIC_PAIR_DEV (--env for the main guest, --peer-env
# for the peer):
#   rxe    (the default) rdma_rxe (soft-RoCE) on the guest's virtio-net NIC (the peer always has
#          one; the main guest with --guest-nic): two of them are the rxe<->rxe pair, the
#          denominator of the interop benchmarks;
#   ionic  the emulated NIC (ionic_0 through ionic_rdma) whose server (--backend roce) has its
#          TAP on the bridge: the main guest's with --netns-tap, the peer's with
#          --peer-server-args. ionic against rxe is the interop test, ionic against ionic two
#          rocm-ernic hosts.
# Addresses: main ERNIC_MAIN_IP, peer ERNIC_PEER_IP (/24); each side uses the RoCE v2 GID index of
# its own address.
#
# Every tool runs in both directions, once with the peer's end as the server and the main
# guest's as the client ("TOOL.main-to-peer": main is the active side), then the other way:
#   rc-pingpong   ibv_rc_pingpong -c (RC SEND/RECV, every received buffer checked)
#   ud-pingpong   ibv_ud_pingpong -c (UD SEND/RECV with GRH, buffers checked)
#   rping         rping over rdma_cm, 20 pings verified (-V): CM MADs, SEND, RDMA READ and WRITE
#   write-bw, read-bw, send-bw, atomic-bw   perftest ib_*_bw
#   write-lat     perftest ib_write_lat
#   read-bw-1m, write-bw-1m, send-bw-1m, read-bw-16m, ...   perftest at 1 MiB and 16 MiB
#   nvme          nvme connect -t rdma to the stock nvmet-rdma target on the other side (below)
# Both sides report each step under the same name (the host shows them as runR.bootB.NAME and
# runR.peer.NAME); the client's figure is parsable: key=value pairs, also printed on a line
#   PAIR-FIGURE name=NAME client=DEV server=DEV bytes=B iters=N bw_MiBps=X msg_Mpps=Y
#   PAIR-FIGURE name=NAME client=DEV server=DEV bytes=B iters=N lat_avg_us=X lat_typical_us=Y ...
# in its boot-1.out.
#
# Coordination (check-lib.sh's sync_post/sync_wait in ERNIC_SYNC, which both guests see over
# 9p): each side posts up-SIDE ("ok DEV" or "fail: why") after its setup and waits for the
# other's. Step K's server side starts its end and posts K-NAME.ready once it listens (the
# tools' TCP port 18515, or an rdma_cm listener for rping); the client side waits for that, runs
# its end and posts K-NAME.client with its exit status; the server posts K-NAME.server with its
# own. A client that failed ends the server's wait early. Every wait is bounded, so a missing
# guest fails the steps instead of hanging them.
#
# Settings (--env / --peer-env): ERNIC_PAIR_MODE (tools, or bench or reads: below), ERNIC_PAIR_ROUNDS
# (rounds: bench 2, reads 3), ERNIC_PAIR_ITERS (perftest iterations, 300; 1 MiB runs a quarter of them),
# ERNIC_PAIR_QP_TIMEOUT (perftest's -u, the local ACK timeout exponent: 19, about 2 s; at
# perftest's default of 14, 67 ms, a loaded TCG host makes the requester retransmit spuriously,
# and rdma_rxe once failed ib_send_bw at both ends that way with remote invalid request),
# ERNIC_PAIR_TOOL_TIMEOUT (seconds per tool end, 180), ERNIC_PAIR_SKIP (names of tools to leave
# out, e.g. "ud-pingpong" under frame loss, where UD has nothing to recover with; give both
# guests the same list), ERNIC_IONIC_MAC (the ionic netdev's MAC when there are several),
# ERNIC_PAIR_NVME_CYCLES (nvme step: connects and disconnects after the verified one, 0; each
# one is a full rdma_cm exchange per queue, for hunting trouble in the admin path),
# ERNIC_PAIR_NO_TAP_DROPS (1: no frame may be dropped at a TAP during the large messages),
# ERNIC_PAIR_VLAN (an 802.1Q VLAN ID: every step over that VLAN, below).
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

SIDE=${ERNIC_SIDE:-}
case $SIDE in
main) ME=${ERNIC_MAIN_IP:-} OTHER=${ERNIC_PEER_IP:-} THEM=peer DEV=${ERNIC_PAIR_DEV:-rxe} ;;
peer) ME=${ERNIC_PEER_IP:-} OTHER=${ERNIC_MAIN_IP:-} THEM=main DEV=${ERNIC_PAIR_DEV:-rxe} ;;
*) fail pair-setup "ERNIC_SIDE is '$SIDE': this check runs under run-vm-test.sh --peer-guest"; finish ;;
esac
T=${ERNIC_PAIR_TOOL_TIMEOUT:-180}
N=${ERNIC_PAIR_ITERS:-300}
QPT=${ERNIC_PAIR_QP_TIMEOUT:-19}
SKIP=" ${ERNIC_PAIR_SKIP:-} "
PORT=18515

# --- setup: address, RDMA device, GID; then both sides up -----------------------------------
modprobe rdma_ucm 2>/dev/null
echo "side $SIDE, device kind $DEV, address $ME, the $THEM guest at $OTHER"
# dev_up: IF, IB and GID for this side's device, or WHY.
WHY=""
dev_up() {
	case $DEV in
	ionic) ionic_up "$ME/24" "${ERNIC_IONIC_MAC:-}" && rdma_up "$ME" ;;
	rxe) rxe_up "${ERNIC_NIC_MAC:-none}" "$ME/24" ;;
	*) WHY="ERNIC_PAIR_DEV is '$DEV' (rxe or ionic)"; return 1 ;;
	esac
}
# ERNIC_PAIR_MODE=bench: each side also has rdma_rxe on its virtio-net NIC (the main guest with
# --guest-nic), on 192.168.201.0/24 (the same host number), so that the rxe<->rxe denominator is
# measured over the same bridge in the same boot; ARP is answered only on the NIC that holds the
# address (both subnets share the segment).
MODE=${ERNIC_PAIR_MODE:-tools}
if [ "$MODE" = bench ]; then
	sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
	if [ "$DEV" != ionic ]; then
		WHY="bench mode compares ionic with rxe: ERNIC_PAIR_DEV must be ionic, not '$DEV'"
	elif dev_up; then
		I_IB=$IB I_GID=$GID I_OTHER=$OTHER I_IF=$IF
		ME=192.168.201.${ME##*.} OTHER=192.168.201.${OTHER##*.} DEV=rxe
		dev_up && pass pair-setup-rxe "$IB on $IF, RoCE v2 GID index $GID"
		R_IB=$IB R_GID=$GID R_OTHER=$OTHER IB=$I_IB GID=$I_GID OTHER=$I_OTHER IF=$I_IF DEV=ionic
	fi
fi
# ERNIC_PAIR_VLAN=ID: the steps run over an 802.1Q VLAN on top of the device's netdev (IF.ID,
# 192.168.210.0/24 with the same host number): the RoCE v2 GID of that address, so every QP's
# header template and every address handle carries the tag (both guests must set it).
vlan_up() {
	[ -n "${ERNIC_PAIR_VLAN:-}" ] || return 0
	if ! ip link add link "$IF" name "$IF.$ERNIC_PAIR_VLAN" type vlan id "$ERNIC_PAIR_VLAN" 2>/tmp/vlan-up.txt; then
		WHY="cannot make VLAN $ERNIC_PAIR_VLAN on $IF: $(tr '\n' ' ' </tmp/vlan-up.txt)"
		return 1
	fi
	IF=$IF.$ERNIC_PAIR_VLAN ME=192.168.210.${ME##*.} OTHER=192.168.210.${OTHER##*.}
	ip addr add "$ME/24" dev "$IF" && ip link set "$IF" up
	port_gid "$ME"
}
if [ -z "$WHY" ] && { [ "$MODE" = bench ] || dev_up; } && vlan_up; then
	pass pair-setup "$IB on $IF, RoCE v2 GID index $GID"
	sync_post "up-$SIDE" "ok $DEV"
else
	fail pair-setup "$WHY"
	sync_post "up-$SIDE" "fail: $WHY"
	finish
fi
note "waiting for the $THEM guest"
THEM_UP=$(sync_wait "up-$THEM" 900)
case $THEM_UP in
"ok "*) THEM_DEV=${THEM_UP#ok } ;;
"") fail pair-peer "the $THEM guest did not come up within 900 s"; finish ;;
*) fail pair-peer "the $THEM guest's setup failed: $THEM_UP"; finish ;;
esac
pass pair-peer "the $THEM guest is up with $THEM_DEV"

if wait_for 60 ping -c 1 -W 1 "$OTHER"; then
	pass pair-ping "rtt_avg_ms=$(ping -c 5 -i 0.2 -q "$OTHER" | awk -F/ '/^rtt/ { print $5 }')"
else
	fail pair-ping "no answer from $OTHER on $IF: $(ip neigh show dev "$IF" | tr '\n' ';')"
fi

# --- the steps -------------------------------------------------------------------------------
listening() {
	case $1 in
	cm) rdma resource show cm_id 2>/dev/null | grep -q LISTEN ;;
	*) ss -ltn 2>/dev/null | grep -q ":$PORT " ;;
	esac
}

# figure NAME OUTFILE CLIENT_DEV SERVER_DEV: the client's figure (FIG), from the tool's output.
figure() {
	f_tool=$1 f_out=$2
	case $f_tool in
	*-bw | *-bw-*) FIG=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { printf "bytes=%s iters=%s bw_MiBps=%s msg_Mpps=%s", $1, $2, $4, $5; exit }' "$f_out") ;;
	*-lat) FIG=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 { printf "bytes=%s iters=%s lat_avg_us=%s lat_typical_us=%s lat_min_us=%s lat_max_us=%s", $1, $2, $6, $5, $3, $4; exit }' "$f_out") ;;
	*-pingpong) FIG=$(awk '/bytes in .* seconds =/ { b = $7 } /iters in .* seconds =/ { i = $1; u = $7 }
		END { printf "iters=%s Mbit_s=%s usec_per_iter=%s", i, b, u }' "$f_out") ;;
	rping) FIG="verified_pings=$(grep -c 'ping data' "$f_out")" ;;
	esac
	FIG="client=$3 server=$4 $FIG"
	echo "PAIR-FIGURE name=$ST $FIG"
}

# lost_last_ack TOOL LOG: under bridge loss, one end of ib_write_lat failed on its last WRITE
# alone, with retry exceeded, and the other end finished cleanly. perftest's write_lat has no
# closing handshake: an end whose last WRITE landed in the other's memory and whose own WRITEs
# all completed destroys its QP at once. When the bridge drops the ACK of the other end's last
# WRITE, that end's resends reach no QP: any RC device, a real one too, ends there. It happens
# to the server end (the client goes as soon as the server's last WRITE lands) and to the
# client end (the server goes once its own last WRITE is acknowledged, while the ACK of the
# client's last WRITE was the frame lost). Everything before the last WRITE completed; anything
# else is a failure as before.
lost_last_ack() {
	[ -n "${ERNIC_BRIDGE_LOSS:-}" ] && [ "$1" = write-lat ] || return 1
	grep -Eq 'Failed status(-transport retry counter exceeded \(12\)| 12)[: ]' "$2" &&
		grep -q "scnt=$N, ccnt=$((N - 1))\$" "$2"
}
LOST_LAST_ACK="the server's last WRITE alone failed, retry exceeded: its ACK was lost after the client had gone"
LOST_LAST_ACK_CLIENT="the client's last WRITE alone failed, retry exceeded: its ACK was lost after the server had gone"
# rping's client, after its 20 pings were all verified and it had asked to disconnect, can hang
# in its own teardown: its CM thread may block in rdma_get_cm_event() for a DISCONNECTED event
# that its rdma_destroy_id() discarded between the thread's poll() and its read (seen with
# rdma_rxe's client twice in full-suite runs of roce-rxe-vlan-vm, its QP already destroyed,
# the main thread waiting on a futex: docs/testing.md). The exchange itself is complete; the
# step passes when the server end ended cleanly, and says so.
TEARDOWN_HANG="rping's client hung in its own teardown after all 20 pings were verified"

# tapdrops: the frames the kernel dropped at the bridge's TAPs so far (the host's counts, asked for).
tapdrops() { host_request tapdrops 2>/dev/null | awk '{ s += $2 } END { print s + 0 }'; }

K=0
# step NAME SERVER_SIDE KIND CMD ARGS...: one tool between the guests; SERVER_SIDE (main or
# peer) runs CMD ARGS as the server end (KIND cm: with -s -a ITS_ADDRESS, for rping), the other
# side as the client end (KIND cm: -c -a SERVER_ADDRESS; else the server's address last).
step() {
	st_tool=$1 st_srv=$2 st_kind=$3
	shift 3
	K=$((K + 1))
	if [ "$st_srv" = peer ]; then ST=$st_tool.main-to-peer; else ST=$st_tool.peer-to-main; fi
	case $SKIP in *" $st_tool "*) echo "--- $ST left out (ERNIC_PAIR_SKIP)"; return 0 ;; esac
	sf=$K-$ST
	log=/tmp/$sf.out
	# Shortly before the tool's time is up, what its queue pairs and rdma_cm ids are doing (state,
	# PSNs) and where in the kernel the tool waits, for a step that hangs; the tools' output is
	# line-buffered so that a killed one leaves its lines.
	# (Its sleep outlives the kill below: it must not hold the check's output open, or the
	# guest's init waits for it after the last step.)
	( sleep $((T - 5)); { echo "--- $SIDE: still running after $((T - 5)) s"; rdma resource show qp; rdma resource show cm_id
	  for p in $(pgrep -x "${1##*/}"); do echo "--- $1 $p waits in:"; cat /proc/$p/stack; done; } >"$log.late" 2>&1 ) >/dev/null 2>&1 &
	st_wd=$!
	if [ "$st_srv" = "$SIDE" ]; then
		note "$ST: serving"
		if [ "$st_kind" = cm ]; then
			timeout -k 10 "$T" stdbuf -oL "$@" -s -a "$ME" >"$log" 2>&1 &
		else
			timeout -k 10 "$T" stdbuf -oL "$@" >"$log" 2>&1 &
		fi
		st_pid=$!
		if wait_for 30 listening "$st_kind"; then
			sync_post "$sf.ready" ok
		elif [ "$st_kind" = cm ] && kill -0 $st_pid 2>/dev/null; then
			sync_post "$sf.ready" ok # no listener list to see (rdma resource): it had 30 s
		else
			sync_post "$sf.ready" "fail: the server end does not listen: $(tail -2 "$log" | tr '\n' ' ')"
		fi
		# The server end ends by itself after the client's; a client that failed ends it sooner.
		# (-k: a tool that ignores SIGTERM is killed 10 s later; perftest once sat in its wait
		# for ever after its client failed, and with it this side's protocol.)
		while kill -0 $st_pid 2>/dev/null; do
			st_crc=$(cat "$ERNIC_SYNC/$sf.client" 2>/dev/null)
			if [ -n "$st_crc" ] && [ "$st_crc" != 0 ]; then
				sleep 5
				kill $st_pid 2>/dev/null
				break
			fi
			sleep 0.5
		done
		wait $st_pid
		st_src=$?
		[ "$st_src" = 1 ] && lost_last_ack "$st_tool" "$log" && st_src=lost-last-ack
		sync_post "$sf.server" "$st_src"
		st_crc=$(sync_wait "$sf.client" $((T + 60))) || st_crc="none (no word from the client)"
		if [ "$st_src" = 0 ] && [ "$st_crc" = 0 ]; then
			pass "$ST" "server end of $DEV, client $THEM_DEV"
		elif [ "$st_src" = lost-last-ack ] && [ "$st_crc" = 0 ]; then
			pass "$ST" "server end of $DEV, client $THEM_DEV; $LOST_LAST_ACK"
		elif [ "$st_src" = 0 ] && [ "$st_crc" = lost-last-ack ]; then
			pass "$ST" "server end of $DEV, client $THEM_DEV; $LOST_LAST_ACK_CLIENT"
		elif [ "$st_src" = 0 ] && [ "$st_crc" = teardown-hang ]; then
			pass "$ST" "server end of $DEV, client $THEM_DEV; $TEARDOWN_HANG"
		else
			fail "$ST" "server ($SIDE) rc $st_src, client ($THEM) rc $st_crc: $(tail -2 "$log" | tr '\n' ';')"
		fi
	else
		st_ready=$(sync_wait "$sf.ready" $((T + 60))) || st_ready="none (no word from the server)"
		if [ "$st_ready" = ok ]; then
			note "$ST: client"
			if [ "$st_kind" = cm ]; then
				timeout -k 10 "$T" stdbuf -oL "$@" -c -a "$OTHER" -V -v >"$log" 2>&1
			else
				timeout -k 10 "$T" stdbuf -oL "$@" "$OTHER" >"$log" 2>&1
			fi
			st_crc=$?
			[ "$st_crc" = 1 ] && lost_last_ack "$st_tool" "$log" && st_crc=lost-last-ack
			[ "$st_tool" = rping ] && [ $st_crc = 0 ] && [ "$(grep -c 'ping data' "$log")" != 20 ] && st_crc=verify
			[ "$st_tool" = rping ] && { [ $st_crc = 124 ] || [ $st_crc = 137 ]; } && [ "$(grep -c 'ping data' "$log")" = 20 ] &&
				! grep -q "mismatch" "$log" && st_crc=teardown-hang
		else
			st_crc="not run: $st_ready"
		fi
		sync_post "$sf.client" "$st_crc"
		st_src=$(sync_wait "$sf.server" $((T + 60))) || st_src="none (no word from the server)"
		if [ "$st_src" = 0 ] && [ "$st_crc" = 0 ]; then
			figure "$st_tool" "$log" "$DEV" "$THEM_DEV"
			pass "$ST" "$FIG"
		elif [ "$st_src" = lost-last-ack ] && [ "$st_crc" = 0 ]; then
			figure "$st_tool" "$log" "$DEV" "$THEM_DEV"
			pass "$ST" "$FIG; $LOST_LAST_ACK"
		elif [ "$st_src" = 0 ] && [ "$st_crc" = lost-last-ack ]; then
			pass "$ST" "client end of $DEV, server $THEM_DEV; $LOST_LAST_ACK_CLIENT"
		elif [ "$st_src" = 0 ] && [ "$st_crc" = teardown-hang ]; then
			figure "$st_tool" "$log" "$DEV" "$THEM_DEV"
			pass "$ST" "$FIG; $TEARDOWN_HANG"
		else
			fail "$ST" "client ($SIDE) rc $st_crc, server ($THEM) rc $st_src: $(tail -2 "$log" | tr '\n' ';')"
		fi
	fi
	kill $st_wd 2>/dev/null
	wait $st_wd 2>/dev/null
	echo "--- $ST ($SIDE's end)"
	tail -4 "$log"
	[ -s "$log.late" ] && cat "$log.late"
}

# Bench mode: ib_write_bw at 64 KiB and 1 MiB, ib_read_bw at 1 MiB both ways and ib_write_lat at
# 64 B, the main guest the client (for the second READ the peer), on both device kinds in turn
# (rounds alternate the order: A B, B A, ...), then done.
if [ "$MODE" = bench ]; then
	r=1
	while [ $r -le "${ERNIC_PAIR_ROUNDS:-2}" ]; do
		order="ionic rxe"
		[ $((r % 2)) = 0 ] && order="rxe ionic"
		for d in $order; do
			if [ "$d" = rxe ]; then
				IB=$R_IB GID=$R_GID OTHER=$R_OTHER DEV=rxe THEM_DEV=rxe
			else
				IB=$I_IB GID=$I_GID OTHER=$I_OTHER DEV=ionic THEM_DEV=ionic
			fi
			step "r$r-$d-64k-write-bw" peer tcp ib_write_bw -d "$IB" -x "$GID" -s 65536 -n "$N" -u "$QPT" -F
			step "r$r-$d-1m-write-bw" peer tcp ib_write_bw -d "$IB" -x "$GID" -s 1048576 -n "$((N / 4 + 1))" -u "$QPT" -F
			# READ both ways: the main guest reads the peer's memory, then the peer the main's
			step "r$r-$d-1m-read-bw" peer tcp ib_read_bw -d "$IB" -x "$GID" -s 1048576 -n "$((N / 4 + 1))" -u "$QPT" -F
			step "r$r-$d-1m-read-bw" main tcp ib_read_bw -d "$IB" -x "$GID" -s 1048576 -n "$((N / 4 + 1))" -u "$QPT" -F
			step "r$r-$d-write-lat" peer tcp ib_write_lat -d "$IB" -x "$GID" -s 64 -n "$N" -u "$QPT" -F
		done
		r=$((r + 1))
	done
	finish
fi

# ERNIC_PAIR_MODE=reads (bench/roce-reads.sh): ib_read_bw at 1 MiB and 16 MiB both ways, the two
# directions alternating from round to round (main-to-peer first, then peer-to-main first, ...),
# on the device ERNIC_PAIR_DEV gives each side (rocm-ernic against rdma_rxe, or two of either);
# each READ's figure as a PAIR-FIGURE line, then done. No TAP may drop a frame (as above).
if [ "$MODE" = reads ]; then
	[ "$SIDE" = main ] && TD0=$(tapdrops)
	r=1
	while [ $r -le "${ERNIC_PAIR_ROUNDS:-3}" ]; do
		order="peer main"
		[ $((r % 2)) = 0 ] && order="main peer"
		for srv in $order; do
			step "r$r-read-bw-1m" $srv tcp ib_read_bw -d "$IB" -x "$GID" -s 1048576 -n "$((N / 10 + 2))" -u "$QPT" -F
			step "r$r-read-bw-16m" $srv tcp ib_read_bw -d "$IB" -x "$GID" -s 16777216 -n 5 -u "$QPT" -F
		done
		r=$((r + 1))
	done
	if [ "$SIDE" = main ]; then
		TD1=$(tapdrops)
		TL=$(host_request tapdrops 2>/dev/null | tr '\n' ' ')
		echo "frames dropped at the TAPs during the READs: $((TD1 - TD0)) ($TL)"
		if [ -z "$(echo "$TL" | tr -d ' ')" ]; then
			note "reads-tap-drops: the host lists no TAP of ours (no namespace of the lane's): not checked"
		elif [ "$TD1" = "$TD0" ]; then
			pass reads-tap-drops "none"
		else
			fail reads-tap-drops "$((TD1 - TD0)) frames dropped"
		fi
	fi
	finish
fi

# The peer serves first (the main guest is the client), then the other way round.
for srv in peer main; do
	step rc-pingpong $srv tcp ibv_rc_pingpong -d "$IB" -g "$GID" -n 200 -s 4096 -c
done
for srv in peer main; do
	step ud-pingpong $srv tcp ibv_ud_pingpong -d "$IB" -g "$GID" -n 200 -s 1024 -c
done
for srv in peer main; do
	step rping $srv cm rping -C 20 -S 2048
done
for t in write read send atomic; do
	for srv in peer main; do
		step "$t-bw" $srv tcp "ib_${t}_bw" -d "$IB" -x "$GID" -n "$N" -u "$QPT" -F
	done
done
for srv in peer main; do
	step write-lat $srv tcp ib_write_lat -d "$IB" -x "$GID" -n "$N" -u "$QPT" -s 64 -F
done
# Large messages, the pacing's case: 1 MiB and 16 MiB READs, WRITEs and SENDs both ways (a READ's
# responses leave the responder as fast as it can read memory, unless its rate says otherwise).
# The main guest asks the host for the frames the kernel dropped at the bridge's TAPs before and
# after them and reports them; with ERNIC_PAIR_NO_TAP_DROPS=1 not one may be lost (large-tap-drops).
[ "$SIDE" = main ] && TD0=$(tapdrops)
for t in read write send; do
	for srv in peer main; do
		step "$t-bw-1m" $srv tcp "ib_${t}_bw" -d "$IB" -x "$GID" -s 1048576 -n "$((N / 10 + 2))" -u "$QPT" -F
		step "$t-bw-16m" $srv tcp "ib_${t}_bw" -d "$IB" -x "$GID" -s 16777216 -n 5 -u "$QPT" -F
	done
done
if [ "$SIDE" = main ]; then
	TD1=$(tapdrops)
	echo "frames dropped at the TAPs during the large messages: $((TD1 - TD0)) ($(host_request tapdrops | tr '\n' ' '))"
	if [ "${ERNIC_PAIR_NO_TAP_DROPS:-0}" = 1 ]; then
		[ "$TD1" = "$TD0" ] && pass large-tap-drops "none" || fail large-tap-drops "$((TD1 - TD0)) frames dropped"
	fi
fi

# --- NVMe over Fabrics across the hosts: the stock nvmet-rdma target on the server side's device
# (a 64 MiB file as namespace 1, buffered), the stock nvme-rdma host on the client's. The client
# writes 16 MiB of random data with O_DIRECT through nvme connect's namespace, reads it back and
# disconnects; the target side then reads its backing file: both digests must be the written one.
NQN=nqn.2026-12.org.rocm-ernic:pair
NVT=/sys/kernel/config/nvmet
nvme_target_up() {
	modprobe nvmet-rdma 2>/dev/null
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config 2>/dev/null
	[ -d $NVT ] || { WHY="no nvmet configfs (modprobe nvmet-rdma)"; return 1; }
	rm -f /tmp/nvme-backing
	truncate -s 64M /tmp/nvme-backing
	if ! { mkdir -p $NVT/subsystems/$NQN/namespaces/1 $NVT/ports/1 &&
		echo 1 >$NVT/subsystems/$NQN/attr_allow_any_host &&
		echo /tmp/nvme-backing >$NVT/subsystems/$NQN/namespaces/1/device_path &&
		echo 1 >$NVT/subsystems/$NQN/namespaces/1/buffered_io &&
		echo 1 >$NVT/subsystems/$NQN/namespaces/1/enable &&
		echo rdma >$NVT/ports/1/addr_trtype && echo ipv4 >$NVT/ports/1/addr_adrfam &&
		echo "$ME" >$NVT/ports/1/addr_traddr && echo 4420 >$NVT/ports/1/addr_trsvcid &&
		ln -s $NVT/subsystems/$NQN $NVT/ports/1/subsystems/$NQN; }; then
		WHY="configuring nvmet failed: $(dmesg | grep -i nvmet | tail -2 | tr '\n' ';')"
		return 1
	fi
}
nvme_target_down() {
	rm -f $NVT/ports/1/subsystems/$NQN
	rmdir $NVT/ports/1 $NVT/subsystems/$NQN/namespaces/1 $NVT/subsystems/$NQN 2>/dev/null
	rm -f /tmp/nvme-backing
}
nvme_client() {
	modprobe nvme-rdma 2>/dev/null
	if ! out=$(timeout 120 nvme connect -t rdma -a "$OTHER" -s 4420 -n $NQN 2>&1); then
		NV_RES="nvme connect failed: $(echo "$out" | tail -1)"; return 1
	fi
	if ! wait_for 60 nsdev; then
		NV_RES="no namespace after nvme connect"; timeout 60 nvme disconnect -n $NQN >/dev/null 2>&1; return 1
	fi
	NS=/dev/$(nsdev)
	head -c 16777216 /dev/urandom >/tmp/nvme-data
	want=$(sha256sum </tmp/nvme-data | cut -d' ' -f1)
	NV_RES=""
	dd if=/tmp/nvme-data of="$NS" bs=1M oflag=direct status=none || NV_RES="writing $NS failed"
	got=$(dd if="$NS" bs=1M count=16 iflag=direct status=none | sha256sum | cut -d' ' -f1)
	[ -n "$NV_RES" ] || [ "$got" = "$want" ] || NV_RES="read back $got, wrote $want"
	out=$(timeout 60 nvme disconnect -n $NQN 2>&1) || NV_RES="${NV_RES:+$NV_RES; }nvme disconnect failed: $out"
	rm -f /tmp/nvme-data
	[ -z "$NV_RES" ] || return 1
	c=0
	while [ $c -lt "${ERNIC_PAIR_NVME_CYCLES:-0}" ]; do
		c=$((c + 1))
		if ! out=$(timeout 120 nvme connect -t rdma -a "$OTHER" -s 4420 -n $NQN 2>&1); then
			NV_RES="nvme connect failed in cycle $c: $(echo "$out" | tail -1)"; return 1
		fi
		wait_for 60 nsdev || { NV_RES="no namespace in cycle $c"; timeout 60 nvme disconnect -n $NQN >/dev/null 2>&1; return 1; }
		out=$(timeout 60 nvme disconnect -n $NQN 2>&1) || { NV_RES="nvme disconnect failed in cycle $c: $out"; return 1; }
	done
	# The host had nothing to recover from: no error recovery, no reconnection (nvme-rdma logs both).
	rec=$(dmesg | grep -c -i -e "starting error recovery" -e "reconnecting in" -e "Reconnecting")
	if [ "$rec" != 0 ]; then
		NV_RES="the nvme-rdma host recovered $rec times: $(dmesg | grep -i -e "error recovery" -e reconnect | tail -2 | tr '\n' ';')"
		return 1
	fi
	NV_RES="0 $want"
}
# nvme_step SERVER_SIDE: the target on SERVER_SIDE, the host on the other.
nvme_step() {
	K=$((K + 1))
	if [ "$1" = peer ]; then ST=nvme.main-to-peer; else ST=nvme.peer-to-main; fi
	case $SKIP in *" nvme "*) echo "--- $ST left out (ERNIC_PAIR_SKIP)"; return 0 ;; esac
	sf=$K-$ST
	if [ "$1" = "$SIDE" ]; then
		note "$ST: nvmet-rdma target on $IB"
		if nvme_target_up; then sync_post "$sf.ready" ok; else sync_post "$sf.ready" "fail: $WHY"; fi
		res=$(sync_wait "$sf.client" $((T + 60))) || res="none (no word from the client)"
		case $res in
		"0 "*)
			have=$(head -c 16777216 /tmp/nvme-backing | sha256sum | cut -d' ' -f1)
			if [ "$have" = "${res#0 }" ]; then
				pass "$ST" "target on $DEV: the backing file holds the host's 16 MiB"
			else
				fail "$ST" "the backing file's digest $have, the host wrote ${res#0 }"
			fi ;;
		*) fail "$ST" "target on $DEV; the host ($THEM) says: $res" ;;
		esac
		nvme_target_down
		sync_post "$sf.server" finished
	else
		ready=$(sync_wait "$sf.ready" $((T + 60))) || ready="none (no word from the target)"
		if [ "$ready" = ok ]; then
			note "$ST: nvme connect -t rdma to $OTHER"
			t0=$(date +%s)
			if nvme_client; then
				pass "$ST" "host on $DEV, target on $THEM_DEV: 16 MiB written and read back in $(($(date +%s) - t0)) s"
			else
				fail "$ST" "$NV_RES"
			fi
		else
			NV_RES="not run: $ready"
			fail "$ST" "$NV_RES"
		fi
		sync_post "$sf.client" "$NV_RES"
		sync_wait "$sf.server" $((T + 60)) >/dev/null
	fi
}
for srv in peer main; do
	nvme_step $srv
done

# rdma_rxe's counters of recovery: sequence errors seen by the responder, NAKs and timeouts the
# requester retried on. With frames dropped on the bridge (ERNIC_BRIDGE_LOSS, from the runner's
# --peer-loss) some must have been needed, or the loss did not reach RDMA.
echo "--- $IB: counters and kernel log"
rdma statistic show link "$IB/1" 2>/dev/null | tee /tmp/counters.txt
if [ "$DEV" = rxe ]; then
	ctr() { tr -s ' \n' '\n' </tmp/counters.txt | awk -v k="$1" 'p { print; exit } $0 == k { p = 1 }'; }
	c_oos=$(ctr out_of_seq_request) c_seq=$(ctr rcvd_seq_err) c_retry=$(ctr completer_retry_err)
	c_dup=$(ctr duplicate_request) c_exc=$(ctr retry_exceeded_err)
	fig="out_of_seq_request=${c_oos:-?} rcvd_seq_err=${c_seq:-?} completer_retry_err=${c_retry:-?} duplicate_request=${c_dup:-?} retry_exceeded_err=${c_exc:-?}"
	if [ -n "${ERNIC_BRIDGE_LOSS:-}" ] && [ $((${c_oos:-0} + ${c_seq:-0} + ${c_retry:-0})) = 0 ]; then
		fail pair-recovery "${ERNIC_BRIDGE_LOSS}% loss on the bridge but no recovery counted: $fig"
	else
		pass pair-recovery "$fig"
	fi
fi
dmesg | grep -i -e rxe -e ionic -e infiniband | tail -15
finish
