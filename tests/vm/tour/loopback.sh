#!/bin/sh
# The demo's tour of the loopback backend (scripts/demo.sh --backend loopback), run in the guest:
# the stock verbs tools see the ionic RDMA device and run both of their ends in this guest,
# queue pair to queue pair through the emulated NIC: ibv_devinfo, ibv_rc_pingpong, rping over
# rdma_cm (CM exchange through the GSI queue pair, data verified) and ib_write_bw.
# Every step prints one CHECK line with what it measured.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"
# shellcheck source=SCRIPTDIR/setup.sh
. "$(dirname "$0")/setup.sh"

modprobe rdma_ucm 2>/dev/null
if ! tour_net; then
	fail link-up "$WHY"
	finish
fi
pass link-up "$(link_summary), RoCE v2 GID index $GID"

if out=$(ibv_devinfo -d "$IB" 2>&1) && echo "$out" | grep -q 'state:.*PORT_ACTIVE'; then
	pass ibv-devinfo "$IB: firmware $(echo "$out" | sed -n 's/^[[:space:]]*fw_ver:[[:space:]]*//p'), port 1 $(echo "$out" | sed -n 's/^[[:space:]]*link_layer:[[:space:]]*//p') PORT_ACTIVE, active MTU $(echo "$out" | sed -n 's/^[[:space:]]*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p')"
else
	fail ibv-devinfo "$(echo "$out" | head -3 | tr '\n' ' ')"
fi

if both_ends rc 120 ibv_rc_pingpong -d "$IB" -g "$GID" -n 500 -s 4096; then
	pass ibv-rc-pingpong "RC SEND/RECV, 500 round trips of 4 KiB: $(echo "$OUT" | grep -m1 'usec/iter' | sed 's/^ *//')"
else
	fail ibv-rc-pingpong "$WHY"
fi

timeout 120 rping -s -a $GUEST_IP -C 50 -S 4096 >/tmp/rping.srv 2>&1 &
spid=$!
sleep 2
timeout 120 rping -c -a $GUEST_IP -C 50 -S 4096 -V -v >/tmp/rping.cli 2>&1
crc=$?
wait $spid
src=$?
if [ $crc = 0 ] && [ $src = 0 ] && [ "$(grep -c 'ping data' /tmp/rping.cli)" = 50 ]; then
	pass rping "rdma_cm connection to $GUEST_IP, 50 pings of 4 KiB (SEND, RDMA READ and WRITE), every payload verified"
else
	fail rping "server rc $src, client rc $crc: $(tail -2 /tmp/rping.cli | tr '\n' ' ')"
fi

if both_ends write_bw 180 ib_write_bw -d "$IB" -x "$GID" -s 65536 -n 2000 -F; then
	pass ib-write-bw "RDMA WRITE 64 KiB x 2000: average $(echo "$OUT" | awk '$1 == 65536 { print $4 }') MB/s under emulation"
else
	fail ib-write-bw "$WHY"
fi
finish
