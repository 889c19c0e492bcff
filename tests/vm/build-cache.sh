#!/usr/bin/env bash
# build-cache.sh [--force]: bring the VM lane's cache ($ERNIC_VM_CACHE, by default
# /var/cache/rocm-ernic-vm) up to date. run-vm-test.sh calls it before every run; when nothing
# changed it returns at once.
#
# The build is four steps (build/*.sh), each idempotent. A step runs again when its stamp
# ($VM_CACHE/stamps/STEP) differs from the hash of its inputs (its own script, the previous
# step's hash, and what the table below adds) or when its output is missing. Editing the guest
# init therefore rebuilds the initramfs only; editing the guest package list reruns the guest
# root step (which installs what is missing) and the images. --force reruns every step.
# Deleting the cache directory starts over from nothing (about 3 minutes and 3.5 GB).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/common.sh
. "$(dirname "$0")/lib/common.sh"

FORCE=0
case ${1:-} in
--force) FORCE=1 ;;
"") ;;
*) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

STEPS=(10-hostroot 20-ionic-rdma 30-guestroot 40-images)

# Extra inputs of a step, printed for hashing.
step_inputs() {
	case $1 in
	10-hostroot) cat "$VM_LIB_DIR/common.sh"; echo "suite=$VM_SUITE" ;;
	20-ionic-rdma) echo "kver=$(guest_kver)" ;;
	30-guestroot) ;;
	40-images) cat "$VM_DIR/guest/init.sh" "$VM_DIR/guest/initramfs-init.sh" ;;
	esac
}

# Whether the output of a step is in place.
step_output_present() {
	local kver
	kver=$(guest_kver)
	case $1 in
	10-hostroot) [ -n "$kver" ] && [ -x "$HOSTROOT/usr/bin/qemu-system-x86_64" ] ;;
	20-ionic-rdma) [ -f "$VM_CACHE/ionic_rdma/ionic_rdma.ko" ] ;;
	30-guestroot) [ -f "$GUESTROOT/usr/lib/modules/$kver/updates/ionic_rdma.ko" ] ;;
	40-images) [ -f "$IMGDIR/vmlinux" ] && [ -f "$IMGDIR/initrd.cpio" ] && [ -f "$IMGDIR/rootfs.ext4" ] ;;
	esac
}

step_key() { { echo "$1"; cat "$VM_DIR/build/$2.sh"; step_inputs "$2"; } | sha256sum | cut -d' ' -f1; }

# up_to_date: every stamp matches and every output is there.
up_to_date() {
	local prev="" key step
	for step in "${STEPS[@]}"; do
		key=$(step_key "$prev" "$step")
		[ "$(cat "$STAMPDIR/$step" 2>/dev/null)" = "$key" ] && step_output_present "$step" || return 1
		prev=$key
	done
}

# The common case costs no lock: runs that only read the cache go on side by side.
[ $FORCE = 0 ] && up_to_date && exit 0

host_prereqs || die "$PREREQ_REASON"
mkdir -p "$VM_CACHE" "$STAMPDIR" "$VM_LOGDIR"
# One build at a time, and none while a run uses the cache (run-vm-test.sh holds the lock shared).
# A caller that waited here usually finds everything done.
exec 9>"$VM_CACHE/.build.lock"
flock 9

# Room: a build from nothing needs about 5 GiB, refreshing an existing cache far less.
need_gib=1
[ -e "$HOSTROOT/.ernic-debootstrap-done" ] && [ -e "$GUESTROOT/.ernic-debootstrap-done" ] || need_gib=5
avail=$(df -Pk "$VM_CACHE" | awk 'NR == 2 { print int($4 / 1048576) }')
[ "$avail" -ge $need_gib ] || die "only ${avail} GiB free under $VM_CACHE; the build needs about $need_gib GiB"

prev=
for step in "${STEPS[@]}"; do
	key=$(step_key "$prev" "$step")
	if [ $FORCE = 0 ] && [ "$(cat "$STAMPDIR/$step" 2>/dev/null)" = "$key" ] && step_output_present "$step"; then
		prev=$key
		continue
	fi
	note "cache: running build step $step (log: $VM_LOGDIR/$step.log)"
	rm -f "$STAMPDIR/$step"
	t0=$(date +%s)
	if ! "$VM_DIR/build/$step.sh" >"$VM_LOGDIR/$step.log" 2>&1; then
		note "cache: build step $step failed; end of its log:"
		tail -n 25 "$VM_LOGDIR/$step.log" | sed 's/^/#   /' >&2
		exit 1
	fi
	secs=$(($(date +%s) - t0))
	echo "$(date -u +%FT%TZ) $step ${secs}s" >>"$VM_LOGDIR/timings.txt"
	note "cache: $step done in ${secs}s"
	echo "$key" >"$STAMPDIR/$step"
	prev=$key
done
