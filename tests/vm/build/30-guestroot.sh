#!/usr/bin/env bash
# Build step 3: the guest's root file system (a sid tree in $GUESTROOT): the guest kernel's
# modules and image, the RDMA user space, the tools guest checks and the demo's tour use, the
# project's S3-over-RDMA client (tests/s3_rdma_*, as /usr/local/bin/s3_rdma_client) and
# ionic_rdma.ko in updates/. No init system: the lane's own init (guest/init.sh) comes with the
# initramfs. Idempotent: only missing packages are installed.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

KVER=$(guest_kver)
[ -n "$KVER" ] || die "no guest kernel recorded; run build/10-hostroot.sh first"
KO=$VM_CACHE/ionic_rdma/ionic_rdma.ko
[ -f "$KO" ] || die "no $KO; run build/20-ionic-rdma.sh first"

GUEST_PACKAGES=(
	kmod iproute2 pciutils procps ethtool util-linux   # devices, drivers, links
	iputils-ping                                        # ICMP checks against the segment
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest libibverbs-dev
	python3-pyverbs                                     # rdma-core's own test suite (rdma-core-vm)
	nvme-cli fio curl e2fsprogs
	awscli s3cmd                                        # S3 clients of the demo's tour
	gcc libc6-dev                                       # checks may compile small verbs programs
	"linux-modules-$KVER" "linux-binary-$KVER"          # kernel without initramfs-tools/dracut
)

ensure_chroot "$GUESTROOT"
# rdma-core's test suite comes as python3-pyverbs's documentation: exempt from the no-doc rule.
printf 'path-include=/usr/share/doc/rdma-core/tests/*\n' >"$GUESTROOT/etc/dpkg/dpkg.cfg.d/91ernic-rdma-tests"
chroot_ensure_pkgs "$GUESTROOT" "${GUEST_PACKAGES[@]}"
[ -e "$GUESTROOT/usr/share/doc/rdma-core/tests/run_tests.py" ] ||
	chroot_apt "$GUESTROOT" install --reinstall python3-pyverbs
chroot_run "$GUESTROOT" apt-get clean

install -D -m 644 "$KO" "$GUESTROOT/usr/lib/modules/$KVER/updates/ionic_rdma.ko"
chroot_run "$GUESTROOT" depmod -a "$KVER"
[ -f "$GUESTROOT/usr/lib/modules/$KVER/vmlinuz" ] || die "linux-binary-$KVER has no vmlinuz where expected"

# The S3-over-RDMA client, built by the guest's own compiler against its libibverbs, from its
# sources and parse_int.h alone (as the s3-rdma check builds it in the guest).
SRCDIR=$(mktemp -d)
trap 'rm -rf "$SRCDIR"' EXIT
cp "$VM_DIR"/../s3_rdma_client.[ch] "$VM_DIR/../s3_rdma_checks.c" "$VM_DIR/../s3_rdma_dialects.c" \
	"$VM_DIR/../../src/util/parse_int.h" "$SRCDIR/"
chroot_run "$GUESTROOT" -b "$SRCDIR:/src:ro" -- \
	gcc -std=c17 -O2 -Wall -Wextra -Werror -I/src /src/s3_rdma_client.c /src/s3_rdma_checks.c \
	/src/s3_rdma_dialects.c -libverbs -o /usr/local/bin/s3_rdma_client

echo ernic-guest >"$GUESTROOT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 ernic-guest\n' >"$GUESTROOT/etc/hosts"
chroot_run "$GUESTROOT" passwd -d root >/dev/null
