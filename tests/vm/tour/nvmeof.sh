#!/bin/sh
# The demo's tour of the nvmeof backend (scripts/demo.sh --backend nvmeof), run in the guest:
# the stock nvme-rdma host discovers the controller and connects over the ionic RDMA device, the
# namespace shows up as a block device, gets an ext4 file system that keeps a 16 MiB file across
# a remount with the same SHA-256, fio writes and verifies it, and the host disconnects.
# Every step prints one CHECK line with what it measured.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"
# shellcheck source=SCRIPTDIR/setup.sh
. "$(dirname "$0")/setup.sh"

NQN=nvmet-test

modprobe nvme-rdma 2>/dev/null
if ! tour_net; then
	fail link-up "$WHY"
	finish
fi
pass link-up "$(link_summary)"

if out=$(timeout 120 nvme discover -t rdma -a $PEER_IP -s 4420 2>&1) && echo "$out" | grep -q "subnqn: *$NQN"; then
	pass nvme-discover "$(echo "$out" | grep -c '^=====Discovery Log Entry') entry: $NQN at $PEER_IP:4420 over rdma"
else
	fail nvme-discover "$(echo "$out" | tail -3 | tr '\n' ' ')"
	finish
fi

t0=$(now_s)
out=$(timeout 180 nvme connect -t rdma -a $PEER_IP -s 4420 -n $NQN 2>&1)
if wait_for 60 nsdev; then
	NS=$(nsdev)
	ctrl=$(ls -d /sys/class/nvme/nvme* | head -1)
	pass nvme-connect "/dev/$NS in $(secs_since "$t0") s: $(cat "$ctrl/model" | sed 's/ *$//'), $(($(cat "$ctrl/queue_count") - 1)) I/O queues over $(cat "$ctrl/transport")"
else
	fail nvme-connect "$out $(dmesg | grep -i nvme | tail -3 | tr '\n' ' ')"
	finish
fi

if out=$(lsblk -n -o NAME,SIZE,TRAN "/dev/$NS" 2>&1); then
	pass lsblk "$(echo "$out" | tr -s ' ')"
else
	fail lsblk "$out"
fi

mkdir -p /mnt/nvme
if out=$(mkfs.ext4 -q -F "/dev/$NS" 2>&1) && mount "/dev/$NS" /mnt/nvme; then
	pass mkfs-ext4 "ext4 on /dev/$NS, $(df -h /mnt/nvme | awk 'NR == 2 { print $2 }') mounted at /mnt/nvme"
else
	fail mkfs-ext4 "$out"
	finish
fi
head -c 16777216 /dev/urandom >/tmp/file.bin
want=$(sha256sum /tmp/file.bin | cut -d' ' -f1)
if cp /tmp/file.bin /mnt/nvme/file.bin && umount /mnt/nvme && echo 3 >/proc/sys/vm/drop_caches &&
	mount "/dev/$NS" /mnt/nvme && got=$(sha256sum /mnt/nvme/file.bin | cut -d' ' -f1) && [ "$got" = "$want" ]; then
	pass file-roundtrip "16 MiB file written, unmounted, mounted again: SHA-256 $(echo "$got" | cut -c1-16)... matches"
else
	fail file-roundtrip "SHA-256 ${got:-none}, want $want"
fi
umount /mnt/nvme 2>/dev/null

if timeout 300 fio --name=verify --filename="/dev/$NS" --direct=1 --rw=randwrite --bs=4k --size=8M \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio.txt >/dev/null 2>&1; then
	pass fio-verify "8 MiB of 4 KiB random writes at queue depth 8 read back and checked (crc32c): $(grep -m1 -o 'IOPS=[^,]*' /tmp/fio.txt) under emulation"
else
	fail fio-verify "$(tail -3 /tmp/fio.txt | tr '\n' ' ')"
fi

out=$(timeout 60 nvme disconnect -n $NQN 2>&1)
gone() { [ ! -e "/sys/block/$NS" ]; }
if echo "$out" | grep -q "disconnected 1 controller" && wait_for 30 gone; then
	pass nvme-disconnect "$out; /dev/$NS is gone"
else
	fail nvme-disconnect "$out"
fi
finish
