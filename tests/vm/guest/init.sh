#!/bin/sh
# PID 1 of the test guest (copied to /run/ernic/init by the initramfs; the rootfs has no init
# system). It mounts the host's job directory (9p tag "ernicjob") at /mnt/job, loads the drivers
# of the devices present (there is no udev), runs the job's check script and then reboots or
# powers off.
#
# Job directory protocol (the host side is tests/vm/run-vm-test.sh):
#   env              shell assignments, read before anything else: ERNIC_BOOTS (boots expected in
#                    this QEMU run), ERNIC_CHECK_TIMEOUT, plus anything for the check script
#   check.sh         the check script; check-lib.sh next to it
#   boot-N.started   created when boot N begins: the number of these tells a boot which one it is
#   boot-N.out       everything the check script printed during boot N
#   boot-N.done      created after boot N ran its checks; holds the check script's exit status
#   dmesg-boot-N.txt the kernel log at the end of boot N
# Boot N < ERNIC_BOOTS ends with a reboot (sysrq b), the last with a power-off (sysrq o).
# Kernel command line: ernic.shell=1 starts a shell on the console instead of the checks (after
# running check.sh, when the job has one, to prepare the guest).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1
hostname ernic-guest

say() { echo "ERNIC-VM: $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
cmdline_has() {
	read -r cmdline </proc/cmdline
	for w in $cmdline; do [ "$w" = "$1" ] && return 0; done
	return 1
}

# End this boot: reboot (sysrq b) or power off (sysrq o). Nothing may be executed from the root
# disk once the request is made, so the wait is a shell builtin loop.
finish() {
	sync
	mountpoint -q /mnt/job && umount /mnt/job
	mount -o remount,ro / 2>/dev/null
	echo "$1" >/proc/sysrq-trigger
	while :; do :; done
}

say "init started, uptime $(uptime_s)s"

job=/mnt/job
mkdir -p $job
modprobe -q 9pnet_virtio && modprobe -q 9p
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 ernicjob $job 2>/dev/null ||
	say "no job directory (9p tag ernicjob)"

# Drivers for every PCI and virtio device, then for the auxiliary devices their drivers create
# (ionic creates ionic.rdma.N, which loads ionic_rdma).
for m in /sys/bus/pci/devices/*/modalias /sys/bus/virtio/devices/*/modalias; do
	[ -r "$m" ] && modprobe -q -b "$(cat "$m")" 2>/dev/null
done
for m in /sys/bus/auxiliary/devices/*/modalias; do
	[ -r "$m" ] && modprobe -q -b "$(cat "$m")" 2>/dev/null
done
say "drivers loaded, uptime $(uptime_s)s"

ERNIC_BOOTS=1
ERNIC_CHECK_TIMEOUT=300
if [ -r $job/env ]; then
	set -a
	# shellcheck disable=SC1091 # written by the runner
	. $job/env
	set +a
fi

if cmdline_has ernic.shell=1; then
	# A check script given with the shell prepares the guest first (network, hints).
	[ -r $job/check.sh ] && (cd /root && timeout -k 5 "$ERNIC_CHECK_TIMEOUT" /bin/sh $job/check.sh </dev/null)
	say "shell; leave it to power off"
	(cd /root && setsid -c /bin/bash -l)
	finish o
fi
if ! [ -r $job/env ] || ! [ -r $job/check.sh ]; then
	say "no check to run; powering off"
	finish o
fi

boot=1
while [ -e $job/boot-$boot.started ]; do boot=$((boot + 1)); done
: >$job/boot-$boot.started
if [ $boot -gt 1 ] && ! [ -e $job/boot-$((boot - 1)).done ]; then
	say "boot $((boot - 1)) ended before its checks finished; powering off"
	finish o
fi
if [ $boot -gt "$ERNIC_BOOTS" ]; then
	say "boot $boot was not expected (ERNIC_BOOTS=$ERNIC_BOOTS); powering off"
	finish o
fi
export ERNIC_BOOT=$boot ERNIC_JOB=$job

say "boot $boot of $ERNIC_BOOTS: running the checks (timeout ${ERNIC_CHECK_TIMEOUT}s)"
echo "ERNIC-VM-CHECKS-BEGIN boot=$boot"
{
	cd /tmp && timeout -k 5 "$ERNIC_CHECK_TIMEOUT" /bin/sh $job/check.sh </dev/null
	echo $? >/tmp/check.rc
} 2>&1 | tee $job/boot-$boot.out
rc=$(cat /tmp/check.rc 2>/dev/null || echo 255)
echo "ERNIC-VM-CHECKS-END boot=$boot rc=$rc"
dmesg >$job/dmesg-boot-$boot.txt 2>&1
echo "$rc" >$job/boot-$boot.done

if [ $boot -lt "$ERNIC_BOOTS" ]; then
	say "boot $boot done, rebooting, uptime $(uptime_s)s"
	finish b
fi
say "boot $boot done, powering off, uptime $(uptime_s)s"
finish o
