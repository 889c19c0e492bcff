#!/usr/bin/env bash
# Build step 1: the sid chroot everything else runs in. It provides QEMU (sid's has
# vfio-user-pci), and the compiler, kernel headers and kernel source for ionic_rdma.ko, plus the
# tools that pack the guest images. Also resolves the guest kernel ABI once, from what
# linux-image-amd64 depends on in the suite, into $VM_CACHE/kver.
# Idempotent: only what is missing is installed.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

ensure_chroot "$HOSTROOT"

# Mount points for the binds the runner uses (the chroot's /tmp is private tmpfs per call).
mkdir -p "$HOSTROOT/img" "$HOSTROOT/job" "$HOSTROOT/sock" "$HOSTROOT/build" "$HOSTROOT/guest"

KVER=$(guest_kver)
if [ -z "$KVER" ]; then
	compgen -G "$HOSTROOT/var/lib/apt/lists/*_Packages" >/dev/null || chroot_apt "$HOSTROOT" update
	KVER=$(chroot_run "$HOSTROOT" apt-cache depends linux-image-amd64 |
		sed -n 's/^ *Depends: linux-image-\([0-9].*\)$/\1/p' | head -1)
	[ -n "$KVER" ] || die "cannot tell which kernel linux-image-amd64 points to in $VM_SUITE"
	echo "$KVER" >"$VM_CACHE/kver"
fi
KSERIES=$(echo "$KVER" | cut -d. -f1-2)
note "guest kernel $KVER"

chroot_ensure_pkgs "$HOSTROOT" qemu-system-x86 \
	gcc make libc6-dev binutils kmod xz-utils zstd cpio e2fsprogs busybox-static \
	"linux-headers-$KVER" "linux-source-$KSERIES"

chroot_run "$HOSTROOT" qemu-system-x86_64 -device help 2>/dev/null | grep -q '"vfio-user-pci"' ||
	die "the chroot's QEMU has no vfio-user-pci device"
chroot_run "$HOSTROOT" qemu-system-x86_64 --version | head -1 >&2
