#!/bin/busybox sh
# shellcheck shell=dash
# /init of the lane's initramfs. Loads what Debian builds as modules but the root disk needs
# (virtio_blk, ext4 and their dependencies, listed in /mods/order), mounts the root disk (the
# virtio disk labelled ernic-root), puts the lane's init on a tmpfs at /run of the new root and
# switches to it. The root disk is opened by QEMU with snapshot=on, so mounting it read-write
# never changes the image.
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev
while read -r m; do
	insmod "/mods/$m" 2>/dev/null
done </mods/order
# The root disk is the one labelled ernic-root (a run may attach more virtio disks, in any order).
i=0
while ! root=$(findfs LABEL=ernic-root 2>/dev/null) && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
if [ -z "$root" ] || ! mount -t ext4 "$root" /newroot; then
	echo "ERNIC-VM: cannot mount the root disk (label ernic-root): $(ls /dev/vd* 2>&1)"
	exec sh
fi
mount -t tmpfs -o mode=755 tmpfs /newroot/run
mkdir -p /newroot/run/ernic
cp /ernic-init /newroot/run/ernic/init
umount /proc
umount /dev
exec switch_root /newroot /run/ernic/init
