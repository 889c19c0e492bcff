#!/bin/sh
# shellcheck disable=SC2015 # "cond && pass || fail": pass never fails
# Guest checks of the lane itself, meant for a run without the vfio-user device
# (run-vm-test.sh --no-device): the job directory works both ways, boots and runs are numbered
# as the host expects, the guest has the shape ionic needs (4 vCPUs, 2G, the out-of-tree
# ionic_rdma.ko matching the kernel) and the user-space tools the device checks rely on.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

echo "run ${ERNIC_RUN:-?} boot $ERNIC_BOOT of $ERNIC_BOOTS, kernel $(uname -r)"

# The job directory: the env file arrived, and what the guest writes reads back.
[ -n "${ERNIC_FW_VERSION:-}" ] && pass env-file || fail env-file "ERNIC_FW_VERSION not set from env"
echo "written by boot $ERNIC_BOOT" >"$ERNIC_JOB/selftest-$ERNIC_BOOT.txt" &&
	grep -qx "written by boot $ERNIC_BOOT" "$ERNIC_JOB/selftest-$ERNIC_BOOT.txt" &&
	pass job-dir-write || fail job-dir-write "cannot write to $ERNIC_JOB"

# Boot numbering: boot N sees the results of boots 1..N-1 of the same QEMU run and nothing later.
ok=1
i=1
while [ $i -lt "$ERNIC_BOOT" ]; do
	[ "$(cat "$ERNIC_JOB/boot-$i.done" 2>/dev/null)" = 0 ] &&
		[ -s "$ERNIC_JOB/selftest-$i.txt" ] || ok=0
	i=$((i + 1))
done
[ -e "$ERNIC_JOB/boot-$((ERNIC_BOOT + 1)).started" ] && ok=0
[ $ok = 1 ] && pass boot-number || fail boot-number "boot $ERNIC_BOOT: earlier boots' results missing"
# A fresh kernel on every boot (a reboot, not a re-run of init).
up=$(cut -d. -f1 /proc/uptime)
[ "$up" -lt 120 ] && pass fresh-kernel || fail fresh-kernel "uptime ${up}s"

# Machine shape.
n=$(nproc)
[ "$n" -ge 4 ] && pass vcpus || fail vcpus "$n vCPUs, ionic_rdma needs 4"
mem=$(awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
[ "$mem" -ge 1800 ] && pass memory || fail memory "${mem} MiB"
if [ "${ERNIC_DEVICE:-0}" = 0 ]; then
	lspci -n | grep -q '1dd8:' && fail no-device "a Pensando device is present" || pass no-device
fi

# Modules: Debian's ionic and the lane's ionic_rdma, built for this kernel.
check ionic-module modinfo ionic
vm=$(modinfo -F vermagic ionic_rdma 2>/dev/null)
case $vm in
"$(uname -r) "*) pass ionic-rdma-vermagic ;;
*) fail ionic-rdma-vermagic "vermagic '$vm', kernel $(uname -r)" ;;
esac
modinfo -n ionic_rdma | grep -q /updates/ && pass ionic-rdma-updates ||
	fail ionic-rdma-updates "$(modinfo -n ionic_rdma 2>&1)"
check ionic-rdma-load modprobe ionic_rdma
[ -d /sys/bus/auxiliary/drivers/ionic_rdma.rdma ] && pass ionic-rdma-aux-driver ||
	fail ionic-rdma-aux-driver "no ionic_rdma.rdma auxiliary driver"

# User space the device checks rely on.
missing=
for t in lspci ethtool ip rdma ibv_devices ibv_devinfo ibv_rc_pingpong rping ib_write_bw \
	ib_read_lat nvme fio curl gcc; do
	command -v $t >/dev/null || missing="$missing $t"
done
[ -z "$missing" ] && pass tools || fail tools "missing:$missing"
ls /usr/lib/x86_64-linux-gnu/libibverbs/libionic-rdmav*.so >/dev/null 2>&1 && pass libionic-provider ||
	fail libionic-provider "no libionic provider in ibverbs-providers"
cat >/tmp/v.c <<'C'
#include <infiniband/verbs.h>
int main(void) { int n; ibv_free_device_list(ibv_get_device_list(&n)); return 0; }
C
check verbs-compile gcc -o /tmp/v /tmp/v.c -libverbs
check verbs-run /tmp/v
finish
