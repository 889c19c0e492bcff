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
	30-guestroot) cat "$VM_DIR"/../s3_rdma_client.[ch] "$VM_DIR/../s3_rdma_checks.c" "$VM_DIR/../s3_rdma_dialects.c" \
		"$VM_DIR/../../src/util/parse_int.h" ;;
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

# What a step makes, for the progress lines.
step_title() {
	case $1 in
	10-hostroot) echo "host tools: QEMU, compiler, kernel headers (Debian $VM_SUITE chroot)" ;;
	20-ionic-rdma) echo "the ionic_rdma kernel module, built out of tree" ;;
	30-guestroot) echo "the guest's root file system: kernel, drivers, RDMA and S3 tools" ;;
	40-images) echo "the boot images: kernel, initramfs, ext4 root" ;;
	esac
}

# progress_line LOG START: what a running step is doing, in a few words: how far debootstrap
# got, how much of what apt announced ("Need to get ...") has arrived (the .deb files the
# chroots' apt caches gained since START), how many packages are set up.
progress_line() {
	local log=$1 start=$2 got need retrieved total setup
	got=$(find "$HOSTROOT/var/cache/apt/archives" "$GUESTROOT/var/cache/apt/archives" -name '*.deb' \
		-newer "$start" -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.1f", s / 1e6 }')
	need=$(sed -n 's/^Need to get \([0-9.,]*\) \([kMG]\{0,1\}B\).* of archives.*/\1 \2/p' "$log" | tail -1 |
		awk '{ gsub(",", "", $1); m = ($2 == "kB") ? 1e-3 : ($2 == "MB") ? 1 : ($2 == "GB") ? 1e3 : 1e-6
		       printf "%.1f", $1 * m }')
	retrieved=$(grep -c '^I: Retrieving .* [0-9]' "$log" || true)
	total=$(sed -n 's/^[0-9]* upgraded, \([0-9]*\) newly installed.*/\1/p' "$log" | tail -1)
	setup=$(grep -c '^Setting up ' "$log" || true)
	if [ -n "$total" ] && [ "$setup" -gt 0 ]; then
		echo "packages set up: $setup of $total"
	elif [ -n "$need" ] && [ "$need" != 0.0 ]; then
		awk -v g="$got" -v n="$need" 'BEGIN { p = 100 * g / n; if (p > 100) p = 100
			printf "downloaded %.1f of %.1f MB (%d%%)\n", (g > n ? n : g), n, p }'
	elif [ "$retrieved" -gt 0 ]; then
		echo "debootstrap: $retrieved packages retrieved ($got MB)"
	fi
}

# watch_progress LOG START: a progress line every few seconds while it changes (stderr).
watch_progress() {
	local last="" line
	while sleep "${ERNIC_PROGRESS_INTERVAL:-5}"; do
		line=$(progress_line "$1" "$2")
		[ -n "$line" ] && [ "$line" != "$last" ] && note "cache:   $line"
		last=$line
	done
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

WATCH=""
trap '[ -z "$WATCH" ] || kill "$WATCH" 2>/dev/null' EXIT
prev="" n=0
for step in "${STEPS[@]}"; do
	n=$((n + 1))
	key=$(step_key "$prev" "$step")
	if [ $FORCE = 0 ] && [ "$(cat "$STAMPDIR/$step" 2>/dev/null)" = "$key" ] && step_output_present "$step"; then
		prev=$key
		continue
	fi
	note "cache: step $n of ${#STEPS[@]}, $step: $(step_title "$step") (log: $VM_LOGDIR/$step.log)"
	rm -f "$STAMPDIR/$step"
	t0=$(date +%s)
	log=$VM_LOGDIR/$step.log
	touch "$log.start"
	watch_progress "$log" "$log.start" &
	WATCH=$!
	rc=0
	"$VM_DIR/build/$step.sh" >"$log" 2>&1 || rc=$?
	kill "$WATCH" 2>/dev/null
	wait "$WATCH" 2>/dev/null || true
	WATCH=""
	if [ $rc != 0 ]; then
		note "cache: build step $step failed; end of its log:"
		tail -n 25 "$log" | sed 's/^/#   /' >&2
		exit 1
	fi
	rm -f "$log.start"
	secs=$(($(date +%s) - t0))
	echo "$(date -u +%FT%TZ) $step ${secs}s" >>"$VM_LOGDIR/timings.txt"
	note "cache: $step done in ${secs}s"
	echo "$key" >"$STAMPDIR/$step"
	prev=$key
done
