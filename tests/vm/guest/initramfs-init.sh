#!/bin/busybox sh
# shellcheck shell=dash
# /init of the lane's initramfs. Loads what Debian builds as modules but the root disk needs
# (virtio_blk, ext4 and their dependencies, listed in /mods/order), mounts /dev/vda, puts the
# lane's init on a tmpfs at /run of the new root and switches to it. The root disk is opened
# by QEMU with snapshot=on, so mounting it read-write never changes the image.
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev
while read -r m; do
	insmod "/mods/$m" 2>/dev/null
done </mods/order
i=0
while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
if ! mount -t ext4 /dev/vda /newroot; then
	echo "ERNIC-VM: cannot mount the root disk /dev/vda"
	exec sh
fi
mount -t tmpfs -o mode=755 tmpfs /newroot/run
mkdir -p /newroot/run/ernic
cp /ernic-init /newroot/run/ernic/init
umount /proc
umount /dev
exec switch_root /newroot /run/ernic/init
