#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for RDMA between two guests on one bridge (run-vm-test.sh --peer-guest): the same
# script runs in both, as the main guest (ERNIC_SIDE=main) and as the peer (ERNIC_SIDE=peer).
# The peer always uses rdma_rxe (soft-RoCE) on its virtio-net NIC. The main guest uses
#   ERNIC_PAIR_DEV=rxe    rdma_rxe on its own virtio-net NIC (--guest-nic): the rxe<->rxe pair,
#                         the denominator of the interop benchmarks;
#   ERNIC_PAIR_DEV=ionic  the emulated NIC (ionic_0 through ionic_rdma) whose server's TAP is on
#                         the bridge (--netns-tap): ionic against the stock rdma_rxe.
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
# Settings (--env / --peer-env): ERNIC_PAIR_ITERS (perftest iterations, 300),
# ERNIC_PAIR_QP_TIMEOUT (perftest's -u, the local ACK timeout exponent: 19, about 2 s; at
# perftest's default of 14, 67 ms, a loaded TCG host makes the requester retransmit spuriously,
# and rdma_rxe once failed ib_send_bw at both ends that way with remote invalid request),
# ERNIC_PAIR_TOOL_TIMEOUT (seconds per tool end, 180), ERNIC_PAIR_SKIP (names of tools to leave
# out, e.g. "ud-pingpong" under frame loss, where UD has nothing to recover with; give both
# guests the same list), ERNIC_IONIC_MAC (the ionic netdev's MAC when there are several).
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

SIDE=${ERNIC_SIDE:-}
case $SIDE in
main) ME=${ERNIC_MAIN_IP:-} OTHER=${ERNIC_PEER_IP:-} THEM=peer DEV=${ERNIC_PAIR_DEV:-rxe} ;;
peer) ME=${ERNIC_PEER_IP:-} OTHER=${ERNIC_MAIN_IP:-} THEM=main DEV=rxe ;;
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
dev_up() {
	case $DEV in
	ionic) ionic_up "$ME/24" "${ERNIC_IONIC_MAC:-}" && rdma_up "$ME" ;;
	rxe) rxe_up "${ERNIC_NIC_MAC:-none}" "$ME/24" ;;
	*) WHY="ERNIC_PAIR_DEV is '$DEV' (rxe or ionic)"; return 1 ;;
	esac
}
if dev_up; then
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
	*-bw) FIG=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { printf "bytes=%s iters=%s bw_MiBps=%s msg_Mpps=%s", $1, $2, $4, $5; exit }' "$f_out") ;;
	*-lat) FIG=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 { printf "bytes=%s iters=%s lat_avg_us=%s lat_typical_us=%s lat_min_us=%s lat_max_us=%s", $1, $2, $6, $5, $3, $4; exit }' "$f_out") ;;
	*-pingpong) FIG=$(awk '/bytes in .* seconds =/ { b = $7 } /iters in .* seconds =/ { i = $1; u = $7 }
		END { printf "iters=%s Mbit_s=%s usec_per_iter=%s", i, b, u }' "$f_out") ;;
	rping) FIG="verified_pings=$(grep -c 'ping data' "$f_out")" ;;
	esac
	FIG="client=$3 server=$4 $FIG"
	echo "PAIR-FIGURE name=$ST $FIG"
}

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
	# Shortly before the tool's time is up, what its queue pairs are doing (state, PSNs), for a
	# step that hangs; the tools' output is line-buffered so that a killed one leaves its lines.
	( sleep $((T - 5)); { echo "--- $SIDE: still running after $((T - 5)) s"; rdma resource show qp; } >"$log.late" 2>&1 ) &
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
		sync_post "$sf.server" "$st_src"
		st_crc=$(sync_wait "$sf.client" $((T + 60))) || st_crc="none (no word from the client)"
		if [ "$st_src" = 0 ] && [ "$st_crc" = 0 ]; then
			pass "$ST" "server end of $DEV, client $THEM_DEV"
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
			[ "$st_tool" = rping ] && [ $st_crc = 0 ] && [ "$(grep -c 'ping data' "$log")" != 20 ] && st_crc=verify
		else
			st_crc="not run: $st_ready"
		fi
		sync_post "$sf.client" "$st_crc"
		st_src=$(sync_wait "$sf.server" $((T + 60))) || st_src="none (no word from the server)"
		if [ "$st_src" = 0 ] && [ "$st_crc" = 0 ]; then
			figure "$st_tool" "$log" "$DEV" "$THEM_DEV"
			pass "$ST" "$FIG"
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
