# shellcheck shell=sh
# Helpers for guest check scripts (POSIX sh: the guest's /bin/sh is dash). The runner copies this
# file next to the check script in the job directory; a check script starts with
#   . "$(dirname "$0")/check-lib.sh"
#
# Every check prints exactly one result line, which the host turns into "ok"/"not ok":
#   CHECK PASS name
#   CHECK FAIL name detail...
# Names are single words. Other output is free-form and ends up in boot-N.out.
# Variables from the job's env file are set: ERNIC_BOOT (1, 2, ...), ERNIC_BOOTS, ERNIC_RUN,
# ERNIC_RUNS, ERNIC_DEVICE (1 when a vfio-user device is attached), ERNIC_FW_VERSION, ...

CHECK_FAILED=0

pass() { echo "CHECK PASS $1"; }
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

# ionic_if: the netdev of the emulated NIC (PCI function 1dd8:1002).
ionic_if() {
	for n in /sys/class/net/*; do
		d=$(readlink -f "$n/device" 2>/dev/null) || continue
		[ "$(cat "$d/vendor" 2>/dev/null)" = 0x1dd8 ] && [ "$(cat "$d/device" 2>/dev/null)" = 0x1002 ] &&
			{ basename "$n"; return 0; }
	done
	return 1
}

# ibdev: the ionic RDMA device (ionic_0), once ionic_rdma registered it.
ibdev() { ls /sys/class/infiniband 2>/dev/null | grep -m1 '^ionic'; }

# finish: exit status of the check script (non-zero when a check failed).
finish() { [ "$CHECK_FAILED" -eq 0 ]; exit $?; }
