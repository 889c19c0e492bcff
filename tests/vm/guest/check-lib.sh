# shellcheck shell=sh
# Helpers for guest check scripts (POSIX sh: the guest's /bin/sh is dash). The runner copies this
# file next to the check script in the job directory; a check script starts with
#   . "$(dirname "$0")/check-lib.sh"
#
# Every check prints exactly one result line, which the host turns into "ok"/"not ok":
#   CHECK PASS name [figure...]
#   CHECK FAIL name detail...
# and a long step may announce itself first with "CHECK NOTE text" (the runner's --tour mode
# shows these as they come). Names are single words. Other output is free-form and ends up in
# boot-N.out.
# Variables from the job's env file are set: ERNIC_BOOT (1, 2, ...), ERNIC_BOOTS, ERNIC_RUN,
# ERNIC_RUNS, ERNIC_DEVICE (1 when a vfio-user device is attached), ERNIC_FW_VERSION, ...

CHECK_FAILED=0

# pass NAME [FIGURE...]: the figure is what the check measured or saw, in a few words.
pass() {
	n=$1
	shift
	if [ $# -gt 0 ]; then echo "CHECK PASS $n $(echo "$*" | tr '\n' ' ')"; else echo "CHECK PASS $n"; fi
}
note() { echo "CHECK NOTE $(echo "$*" | tr '\n' ' ')"; }
fail() {
	n=$1
	shift
	# one line: the host reads the first line only
	echo "CHECK FAIL $n $(echo "$*" | tr '\n' ' ')"
	CHECK_FAILED=$((CHECK_FAILED + 1))
}

# check NAME CMD ARGS...: pass when CMD succeeds, else fail with the last lines CMD printed.
check() {
	n=$1
	shift
	if out=$("$@" 2>&1); then
		pass "$n"
	else
		fail "$n" "'$*' failed: $(echo "$out" | tail -3)"
	fi
}

# wait_for SECONDS CMD ARGS...: retry CMD every 0.2 s until it succeeds or SECONDS pass.
wait_for() {
	w_deadline=$(($(cut -d. -f1 /proc/uptime) + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(cut -d. -f1 /proc/uptime)" -ge "$w_deadline" ] && return 1
		sleep 0.2
	done
	return 0
}

# ionic_if [MAC]: the netdev of the emulated NIC (PCI function 1dd8:1002); with several such
# functions, the one with that MAC.
ionic_if() {
	for n in /sys/class/net/*; do
		d=$(readlink -f "$n/device" 2>/dev/null) || continue
		[ "$(cat "$d/vendor" 2>/dev/null)" = 0x1dd8 ] && [ "$(cat "$d/device" 2>/dev/null)" = 0x1002 ] || continue
		[ -z "${1:-}" ] || [ "$(cat "$n/address")" = "$1" ] || continue
		basename "$n"
		return 0
	done
	return 1
}

# ibdev [NETDEV]: the ionic RDMA device (ionic_0), once ionic_rdma registered it; with a
# netdev, the RDMA device on top of that one.
ibdev() {
	if [ -z "${1:-}" ]; then
		ls /sys/class/infiniband 2>/dev/null | grep -m1 '^ionic'
		return
	fi
	for d in /sys/class/infiniband/*; do
		[ "$(cat "$d/ports/1/gid_attrs/ndevs/0" 2>/dev/null)" = "$1" ] && { basename "$d"; return 0; }
	done
	return 1
}

# port_active IBDEV: its port 1 is ACTIVE.
port_active() { grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null; }

# nsdev: the NVMe namespace's block device (the guests have no other NVMe device; under native
# multipath it is the head, nvmeXnY).
nsdev() { ls /sys/block 2>/dev/null | grep -m1 '^nvme[0-9]*n[0-9]*$'; }

# serial_disk SERIAL: /dev/vdX of the virtio-blk disk with that serial (the runner's --disk).
serial_disk() {
	for b in /sys/block/vd*; do
		[ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/$(basename "$b")"; return 0; }
	done
	return 1
}

# fill_devices DEV...: each device written once end to end, so that no later read is of a hole.
fill_devices() {
	for d in "$@"; do
		fio --name=fill --filename="$d" --rw=write --bs=1M --iodepth=8 --ioengine=libaio --direct=1 \
			--output=/dev/null >/dev/null 2>&1
	done
}

# gid_index IBDEV IPV4: the index of the RoCE v2 GID the IB core made of that address.
gid_index() {
	gi_want=$(echo "$2" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[ "$(cat "$g" 2>/dev/null)" = "$gi_want" ] || continue
		gi=$(basename "$g")
		[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$gi" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "$gi"
		return 0
	done
	return 1
}

# ionic_up IPV4/PREFIX [MAC]: the ionic netdev (IF) gets the address and is brought up; returns
# non-zero with the reason in WHY when there is no such netdev.
# dyndbg: ERNIC_DYNDBG (--env), a dynamic-debug query for the guest kernel, applied once the
# modules are loaded, e.g. "module ionic_rdma format post +pt" to have every RDMA admin command
# the driver posts in the kernel log, with its thread and time. The kernel log is then also
# streamed into kmsg.txt in the job directory (more than the ring buffer keeps).
dyndbg() {
	[ -n "${ERNIC_DYNDBG:-}" ] || return 0
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
	echo "$ERNIC_DYNDBG" >/sys/kernel/debug/dynamic_debug/control 2>/dev/null ||
		echo "dynamic debug: '$ERNIC_DYNDBG' refused"
	[ -n "${DYNDBG_STREAM:-}" ] && return 0
	DYNDBG_STREAM=1
	dmesg -w >"$(dirname "$0")/kmsg.txt" 2>&1 &
}

ionic_up() {
	grep -q '^ionic_rdma ' /proc/modules || modprobe ionic_rdma 2>/dev/null
	dyndbg
	if ! wait_for 30 ionic_if "${2:-}"; then
		WHY="no ionic netdev: $(ls /sys/class/net | tr '\n' ' ')$(dmesg | grep -i ionic | tail -3 | tr '\n' ';')"
		return 1
	fi
	IF=$(ionic_if "${2:-}")
	ip link set lo up
	ip addr add "$1" dev "$IF" 2>/dev/null
	ip link set "$IF" up
}

# rdma_up IPV4: after ionic_up, the RDMA device on IF (IB) has an active port and the RoCE v2
# GID of IPV4 (its index in GID); non-zero with WHY otherwise.
rdma_up() {
	if ! wait_for 60 ibdev "$IF"; then
		WHY="no RDMA device on $IF: $(dmesg | grep -i -e ionic -e rdma | tail -3 | tr '\n' ';')"
		return 1
	fi
	IB=$(ibdev "$IF")
	port_gid "$1"
}

# port_gid IPV4: IB's port 1 becomes active and has the RoCE v2 GID of IPV4 (its index in GID);
# non-zero with WHY otherwise.
port_gid() {
	if ! wait_for 30 port_active "$IB"; then
		WHY="$IB port 1 is $(cat "/sys/class/infiniband/$IB/ports/1/state" 2>&1)"
		return 1
	fi
	if ! wait_for 30 gid_index "$IB" "$1"; then
		WHY="no RoCE v2 GID for $1 on $IB"
		return 1
	fi
	GID=$(gid_index "$IB" "$1")
}

# both_ends NAME TIMEOUT CMD ARGS...: a verbs tool run as its server end, then as its client end
# against 127.0.0.1 (the tools' out-of-band exchange), both in this guest; both must exit 0. The
# client's output is in OUT (and /tmp/NAME.cli, the server's in /tmp/NAME.srv); on failure WHY
# has both exit statuses and what each end printed last.
both_ends() {
	be_name=$1 be_t=$2
	shift 2
	timeout "$be_t" "$@" >/tmp/"$be_name".srv 2>&1 &
	be_pid=$!
	sleep 2
	timeout "$be_t" "$@" 127.0.0.1 >/tmp/"$be_name".cli 2>&1
	be_crc=$?
	wait $be_pid
	be_src=$?
	OUT=$(cat /tmp/"$be_name".cli)
	[ $be_crc = 0 ] && [ $be_src = 0 ] && return 0
	WHY="server rc $be_src, client rc $be_crc: $(tail -2 /tmp/"$be_name".cli | tr '\n' ';') $(tail -2 /tmp/"$be_name".srv | tr '\n' ';')"
	return 1
}

# mac_if MAC: the netdev with that MAC address (e.g. the virtio-net NIC the runner gave a guest
# with --guest-nic or --peer-guest, ERNIC_NIC_MAC).
mac_if() {
	for n in /sys/class/net/*; do
		[ "$(cat "$n/address" 2>/dev/null)" = "$1" ] && { basename "$n"; return 0; }
	done
	return 1
}

# rxe_up MAC IPV4/PREFIX: the netdev with MAC (IF) gets the address and is brought up, rdma_rxe
# (soft-RoCE) is layered on it as rxe0 (IB) and its RoCE v2 GID of the address found (GID);
# non-zero with the reason in WHY otherwise.
rxe_up() {
	if ! wait_for 30 mac_if "$1"; then
		WHY="no netdev with MAC $1: $(ls /sys/class/net | tr '\n' ' ')"
		return 1
	fi
	IF=$(mac_if "$1")
	ip link set lo up
	ip addr add "$2" dev "$IF" 2>/dev/null
	ip link set "$IF" up
	if ! { modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$IF"; } >/tmp/rxe-up.txt 2>&1; then
		WHY="cannot create rxe0 on $IF: $(tail -2 /tmp/rxe-up.txt | tr '\n' ' ')"
		return 1
	fi
	IB=rxe0
	port_gid "${2%/*}"
}

# Two guests (run-vm-test.sh --peer-guest) coordinate through a directory both see over 9p,
# ERNIC_SYNC (the peer's job directory's sync/, which the main guest sees under its own job
# directory): one side posts a file, the other polls for it. Names are single words.
# sync_post NAME [TEXT]: the file NAME with TEXT (default "ok"), whole once visible (renamed
# into place).
sync_post() {
	printf '%s\n' "${2:-ok}" >"$ERNIC_SYNC/.$1.tmp" && mv "$ERNIC_SYNC/.$1.tmp" "$ERNIC_SYNC/$1"
}
# sync_wait NAME SECONDS: wait for NAME and print its text; non-zero when it did not come.
sync_wait() {
	wait_for "$2" test -s "$ERNIC_SYNC/$1" || return 1
	cat "$ERNIC_SYNC/$1"
}

# finish: exit status of the check script (non-zero when a check failed).
# host_request REQUEST: ask the host side (run-vm-test.sh: "signal USR1", "stats", "blocks",
# "tapdrops") and print its answer; non-zero without one within 60 s. The main guest's only.
host_request() {
	hr_job=$(dirname "$0")
	rm -f "$hr_job/host-request.done"
	echo "$1" >"$hr_job/host-request.new" && mv "$hr_job/host-request.new" "$hr_job/host-request"
	wait_for 60 test -f "$hr_job/host-request.done" || return 1
	cat "$hr_job/host-request.done"
}

finish() { [ "$CHECK_FAILED" -eq 0 ]; exit $?; }
