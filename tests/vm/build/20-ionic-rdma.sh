#!/usr/bin/env bash
# Build step 2: ionic_rdma.ko. Debian's kernel leaves CONFIG_INFINIBAND_IONIC off, so the module
# is built out of tree from linux-source-X.Y of the same upload as the guest kernel, against
# that kernel's headers. The headers' Module.symvers already lists the NET_IONIC exports of
# Debian's ionic.ko and ib_core's, so nothing else has to be rebuilt.
# Output: $VM_CACHE/ionic_rdma/ionic_rdma.ko (debug info stripped).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

KVER=$(guest_kver)
[ -n "$KVER" ] || die "no guest kernel recorded; run build/10-hostroot.sh first"
KSERIES=$(echo "$KVER" | cut -d. -f1-2)
OUT=$VM_CACHE/ionic_rdma
mkdir -p "$OUT"

# Inside the chroot, $OUT is /build. The source extract is kept per kernel ABI; the object
# directory is rebuilt every time.
# shellcheck disable=SC2016 # expanded by the inner bash
chroot_run "$HOSTROOT" -b "$OUT:/build" -- /bin/bash -euo pipefail -c '
	kver=$1 series=$2
	src=/build/src-$kver/linux-source-$series
	if [ ! -f "$src/drivers/infiniband/hw/ionic/Makefile" ]; then
		rm -rf "/build/src-$kver"; mkdir -p "/build/src-$kver"
		tar -C "/build/src-$kver" -xf "/usr/src/linux-source-$series.tar.xz" \
			"linux-source-$series/drivers/infiniband/hw/ionic" \
			"linux-source-$series/drivers/net/ethernet/pensando/ionic"
	fi
	obj=/build/obj
	rm -rf "$obj"; mkdir -p "$obj/eth"
	cp "$src"/drivers/infiniband/hw/ionic/*.[ch] "$obj/"
	# The upstream Makefile adds -I$(srctree)/drivers/net/ethernet/pensando/ionic, which a
	# headers-only tree lacks: carry those headers along and point the include there instead.
	cp "$src"/drivers/net/ethernet/pensando/ionic/*.h "$obj/eth/"
	objs=$(sed -n "/^ionic_rdma-y/,/^\$/p" "$src/drivers/infiniband/hw/ionic/Makefile" |
		sed -e "s/^ionic_rdma-y[ :]*=//" -e "s/\\\\//g" | tr -s " \t\n" " ")
	printf "ccflags-y := -I\$(src)/eth\nobj-m := ionic_rdma.o\nionic_rdma-y := %s\n" "$objs" >"$obj/Kbuild"
	make -s -C "/usr/src/linux-headers-$kver" M="$obj" -j"$(nproc)" modules
	strip --strip-debug -o /build/ionic_rdma.ko.tmp "$obj/ionic_rdma.ko"
	mv /build/ionic_rdma.ko.tmp /build/ionic_rdma.ko
	modinfo -F vermagic /build/ionic_rdma.ko
' build "$KVER" "$KSERIES"
