#!/usr/bin/env bash
# Build step 4: what QEMU boots, in $VM_CACHE/img:
#   vmlinux      the guest kernel, uncompressed: QEMU starts it directly through its PVH note,
#                which skips the decompressor (seconds under TCG)
#   rootfs.ext4  $GUESTROOT as an ext4 image (QEMU opens it with snapshot=on: never modified)
#   initrd.cpio  a small initramfs: busybox, the modules to reach the ext4 root (Debian builds
#                virtio_blk and ext4 as modules), and the lane's init scripts from guest/
# Each file is written under a temporary name and renamed, so a running QEMU is not disturbed.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

KVER=$(guest_kver)
[ -n "$KVER" ] || die "no guest kernel recorded; run build/10-hostroot.sh first"
mkdir -p "$IMGDIR"

IMG_BINDS=(-b "$GUESTROOT:/guest:ro" -b "$IMGDIR:/img" -b "$VM_DIR/guest:/lane:ro")

# Kernel: the vmlinuz payload is a zstd stream; find its magic and decompress.
# shellcheck disable=SC2016 # expanded by the inner bash
chroot_run "$HOSTROOT" "${IMG_BINDS[@]}" -- /bin/bash -euo pipefail -c '
	z=/guest/usr/lib/modules/$1/vmlinuz
	off=$(LC_ALL=C grep -obUaP "\x28\xb5\x2f\xfd" "$z" | head -1 | cut -d: -f1)
	[ -n "$off" ] || { echo "no zstd payload in $z" >&2; exit 1; }
	tail -c +$((off + 1)) "$z" | zstd -dcq >/img/vmlinux.tmp 2>/dev/null || true
	[ "$(head -c 4 /img/vmlinux.tmp | od -An -tx1 | tr -d " ")" = 7f454c46 ] ||
		{ echo "decompressed kernel is not an ELF file" >&2; exit 1; }
	mv /img/vmlinux.tmp /img/vmlinux
' kernel "$KVER"

# Root file system. 3G leaves room for what checks write (the overlay is thrown away).
# shellcheck disable=SC2016 # expanded by the inner bash
chroot_run "$HOSTROOT" "${IMG_BINDS[@]}" -- /bin/bash -euo pipefail -c '
	rm -f /img/rootfs.ext4.tmp
	mke2fs -q -t ext4 -L ernic-root -E root_owner=0:0 -d /guest /img/rootfs.ext4.tmp 3G
	mv /img/rootfs.ext4.tmp /img/rootfs.ext4
'

# Initramfs. Modules are stored uncompressed because busybox insmod cannot unpack them.
# shellcheck disable=SC2016 # expanded by the inner bash
chroot_run "$HOSTROOT" "${IMG_BINDS[@]}" -- /bin/bash -euo pipefail -c '
	kver=$1 w=/tmp/initrd
	mkdir -p "$w/bin" "$w/mods"
	cp /usr/bin/busybox "$w/bin/busybox"
	: >"$w/mods/order"
	modprobe -d /guest -S "$kver" --show-depends -a virtio_blk ext4 |
		awk "\$1 == \"insmod\" { print \$2 }" |
		while read -r ko; do
			f=/guest$ko; [ -e "$f" ] || f=$ko
			name=$(basename "$ko"); name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
			grep -qxF "$name" "$w/mods/order" && continue
			case $ko in
			*.xz) xz -dc "$f" ;; *.zst) zstd -dcq "$f" ;; *.gz) gzip -dc "$f" ;; *) cat "$f" ;;
			esac >"$w/mods/$name"
			echo "$name" >>"$w/mods/order"
		done
	[ -s "$w/mods/order" ] || echo "note: virtio_blk and ext4 are built into this kernel" >&2
	install -m 755 /lane/initramfs-init.sh "$w/init"
	install -m 755 /lane/init.sh "$w/ernic-init"
	(cd "$w" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >/img/initrd.cpio.tmp
	mv /img/initrd.cpio.tmp /img/initrd.cpio
' initrd "$KVER"
ls -l "$IMGDIR" >&2
