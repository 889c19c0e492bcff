#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for RDMA between queue pairs of the same guest (the loopback backend): the stock
# verbs tools run both ends in this guest against ionic_0 and check what arrived.
#   ibv_rc_pingpong / ibv_ud_pingpong (libionic user queues: RC SEND/RECV, UD with GRH),
#   rping over rdma_cm (the CM's MADs through the kernel's GSI queue pair, then RC SEND and
#   RDMA READ/WRITE with data verification), perftest write/read/send/atomic bandwidth runs.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

IP=192.168.200.2
modprobe rdma_ucm 2>/dev/null
# lo carries the tools' out-of-band TCP exchange and rdma_cm's own-address routing.
ionic_up $IP/24 && rdma_up $IP || { fail rdma-setup "$WHY"; finish; }
G=$GID
echo "device $IB, RoCE v2 GID index $G"
pass rdma-setup

# pair NAME TIMEOUT CMD ARGS...: both ends of one tool (both_ends); the check passes when both
# exit 0.
pair() {
	if both_ends "$@"; then
		pass "$1"
	else
		fail "$1" "$WHY"
	fi
	echo "--- $1"
	tail -5 /tmp/"$1".srv /tmp/"$1".cli
}

pair rdma-rc-pingpong 120 ibv_rc_pingpong -d "$IB" -g "$G" -n 200 -s 4096 -c
pair rdma-ud-pingpong 120 ibv_ud_pingpong -d "$IB" -g "$G" -n 200 -s 1024 -c

# rping: rdma_cm resolves our own address, the CM exchange runs through the GSI queue pair,
# then each ping is a SEND plus RDMA READ and WRITE of the payload, verified (-V).
timeout 120 rping -s -a $IP -C 20 -S 2048 >/tmp/rping.srv 2>&1 &
spid=$!
sleep 2
timeout 120 rping -c -a $IP -C 20 -S 2048 -V -v >/tmp/rping.cli 2>&1
crc=$?
wait $spid
src=$?
tail -3 /tmp/rping.cli
if [ $crc = 0 ] && [ $src = 0 ] && [ "$(grep -c 'ping data' /tmp/rping.cli)" = 20 ]; then
	pass rdma-rping
else
	fail rdma-rping "server rc $src, client rc $crc: $(tail -3 /tmp/rping.cli | tr '\n' ';') $(tail -3 /tmp/rping.srv | tr '\n' ';')"
fi

for t in write read send atomic; do
	pair "rdma-perftest-$t" 180 "ib_${t}_bw" -d "$IB" -x "$G" -n 200 -F
done

echo "--- ionic kernel log"
dmesg | grep -i -e ionic -e infiniband | tail -20
finish
