#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for the RDMA function: the stock ionic_rdma driver probes the device's RDMA LIF
# (RDMA_RESET_LIF, event queues, the RDMA admin queue), registers an IB device whose port is
# active on the ionic netdev, and the IB core's MAD layer brings up the GSI queue pair on it
# through the admin queue. User space (libionic from rdma-core) sees the device too.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"


echo "auxiliary devices: $(ls /sys/bus/auxiliary/devices 2>&1 | tr '\n' ' ')"
lsmod | grep -e ionic -e ib_ || true
# ionic_rdma binds the ionic.rdma.N auxiliary device ionic creates when the LIF offers RDMA.
grep -q '^ionic_rdma ' /proc/modules || modprobe ionic_rdma || echo "modprobe ionic_rdma failed"
if wait_for 30 ionic_if; then
	IF=$(ionic_if)
else
	fail rdma-netdev "no ionic netdev: $(dmesg | grep -i ionic | tail -3)"
	finish
fi
ip addr add 192.168.200.2/24 dev "$IF"
ip link set "$IF" up

if wait_for 60 ibdev; then
	IB=$(ibdev)
	pass rdma-ibdev
else
	fail rdma-ibdev "no ionic IB device: $(dmesg | grep -i -e ionic -e rdma | tail -8 | tr '\n' ';')"
	finish
fi
wait_for 30 port_active "$IB" && pass rdma-port-active ||
	fail rdma-port-active "port state $(cat "/sys/class/infiniband/$IB/ports/1/state" 2>&1)"
grep -q "Ethernet" "/sys/class/infiniband/$IB/ports/1/link_layer" && pass rdma-link-layer ||
	fail rdma-link-layer "$(cat "/sys/class/infiniband/$IB/ports/1/link_layer")"
# The IB core derives RoCEv2 GIDs from the netdev's addresses: 192.168.200.2 as ::ffff:c0a8:c802.
wait_for 30 gid_index "$IB" 192.168.200.2 && pass rdma-gid-ipv4 || fail rdma-gid-ipv4 "$(cat /sys/class/infiniband/"$IB"/ports/1/gids/* 2>&1 | sort -u | tr '\n' ' ')"
out=$(ibv_devinfo -d "$IB" 2>&1)
echo "$out"
echo "$out" | grep -q "state:.*PORT_ACTIVE" && pass rdma-ibv-devinfo || fail rdma-ibv-devinfo "$(echo "$out" | head -5 | tr '\n' ';')"
# The driver's own complaints (its module taint notice aside).
errs=$(dmesg | grep -i ionic | grep -v "module verification" | grep -i -e "timeout" -e "fatal" -e "fail" -e "error" -e "bad ")
[ -z "$errs" ] && pass rdma-no-driver-errors || fail rdma-no-driver-errors "$(echo "$errs" | head -5 | tr '\n' ';')"
# Unloading the RDMA driver tears its resources down through the admin queue; loading it again
# resets the RDMA LIF and builds everything anew.
if rmmod ionic_rdma && ! ibdev && modprobe ionic_rdma && wait_for 60 ibdev && IB=$(ibdev) && wait_for 30 port_active "$IB"; then
	pass rdma-reload
else
	fail rdma-reload "$(dmesg | grep -i -e ionic -e rdma | tail -5 | tr '\n' ';')"
fi
# So does reloading the Ethernet driver underneath it (a new LIF, a new auxiliary device).
if rmmod ionic_rdma && rmmod ionic && modprobe ionic && modprobe ionic_rdma && wait_for 60 ibdev && IB=$(ibdev) &&
	IF=$(ionic_if) && ip link set "$IF" up && wait_for 30 port_active "$IB"; then
	pass rdma-reload-ionic
else
	fail rdma-reload-ionic "$(ls /sys/bus/auxiliary/devices | tr '\n' ' '); $(dmesg | grep -i -e ionic -e rdma | tail -5 | tr '\n' ';')"
fi
echo "--- ionic kernel log"
dmesg | grep -i -e ionic -e infiniband
finish
