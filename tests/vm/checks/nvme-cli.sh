#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# What nvme-cli users run, against both kinds of namespace at once: two servers with
# --backend nvmeof, a RAM namespace (192.168.200.1, nvmet-test) and a file image on the host
# (192.168.201.1, nvmet-file, file=@WORK@/ns.img), each through its own emulated NIC. For each:
# connect with a 2 s keep-alive and stay connected past it, id-ctrl, id-ns, smart-log,
# error-log, fw-log, effects-log, get-feature, flush, 16 MiB by O_DIRECT, write-zeroes,
# blkdiscard (the range reads as zeroes, its neighbours intact; on the file image the host's
# blocks are freed), reset, ns-rescan, an ext4 file system made (mkfs discards), filled,
# emptied and fstrim'd (on the file image the host's blocks are freed again), and a disconnect
# while fio is writing (fio ends, the namespace goes, the kernel complains of nothing).
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

MIB=1048576

# host_blocks NAME: the bytes the host's file system holds for image NAME (run-vm-test "blocks").
host_blocks() { host_request blocks | awk -v n="$1" '$1 == n { print $2 }'; }

# digest DEV OFFSET_MIB COUNT_MIB
digest() { dd if="$1" bs=1M skip="$2" count="$3" iflag=direct status=none | sha256sum | cut -d' ' -f1; }
zeroes() { head -c $(($1 * MIB)) /dev/zero | sha256sum | cut -d' ' -f1; }

modprobe nvme-fabrics && modprobe nvme-rdma || { fail nvme-cli-setup "cannot load nvme-rdma"; finish; }
ionic_up 192.168.200.2/24 02:45:52:4e:49:43 && rdma_up 192.168.200.2 || { fail nvme-cli-setup "$WHY"; finish; }
ionic_up 192.168.201.2/24 02:45:52:4e:49:44 && rdma_up 192.168.201.2 || { fail nvme-cli-setup "$WHY"; finish; }
pass nvme-cli-setup

# subsys NQN: sets SUBSYS (its sysfs directory), CTRL (nvmeN) and NS (the namespace's disk).
subsys() {
	for s in /sys/class/nvme-subsystem/nvme-subsys*; do
		[ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$1" ] || continue
		SUBSYS=$s
		CTRL=$(ls "$s" | grep -m1 '^nvme[0-9]*$')
		NS=$(ls "$s" | grep -m1 '^nvme[0-9]*n[0-9]*$')
		[ -n "$CTRL" ] && [ -n "$NS" ] && [ -e "/dev/$NS" ] && return 0
	done
	return 1
}
live() { [ "$(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null)" = live ]; }

# target KIND ADDR NQN IMAGE: the whole list against one controller.
target() {
	k=$1 addr=$2 nqn=$3 img=$4
	out=$(timeout 180 nvme connect -t rdma -a "$addr" -s 4420 -n "$nqn" -k 2 2>&1)
	if wait_for 60 subsys "$nqn"; then
		pass "$k-connect" "$CTRL, /dev/$NS"
	else
		fail "$k-connect" "$out; $(dmesg | grep -i -e nvme -e ionic | tail -4 | tr '\n' ';')"
		return
	fi
	# Keep-alive: 2 s asked; after three times that the controller is still live.
	sleep 6
	live && pass "$k-keep-alive" "kato $(cat "/sys/class/nvme/$CTRL/kato" 2>/dev/null) s" ||
		fail "$k-keep-alive" "state $(cat "/sys/class/nvme/$CTRL/state"); $(dmesg | grep -i nvme | tail -3 | tr '\n' ';')"

	out=$(nvme id-ctrl "/dev/$CTRL" 2>&1)
	echo "$out" | grep -q "^subnqn[[:space:]]*: $nqn" && echo "$out" | grep -q "^mn[[:space:]]*: rocm-ernic NVMe-oF target" &&
		[ $(($(echo "$out" | awk '/^oncs/ { print $3 }') & 4)) -ne 0 ] && pass "$k-id-ctrl" ||
		fail "$k-id-ctrl" "$(echo "$out" | grep -e '^subnqn' -e '^mn' -e '^oncs' | tr '\n' ';')"
	blocks=$(($(cat "/sys/block/$NS/size") * 512 / $(cat "/sys/block/$NS/queue/logical_block_size")))
	out=$(nvme id-ns "/dev/$NS" 2>&1)
	nsze=$(($(echo "$out" | awk '/^nsze/ { print $3 }')))
	[ "$nsze" = "$blocks" ] && echo "$out" | grep -q "^dlfeat[[:space:]]*: 9" && pass "$k-id-ns" "$nsze blocks" ||
		fail "$k-id-ns" "nsze $nsze, $blocks blocks; $(echo "$out" | grep '^dlfeat')"
	out=$(nvme smart-log "/dev/$CTRL" 2>&1)
	echo "$out" | grep -q "^critical_warning[[:space:]]*: 0$" && pass "$k-smart-log" || fail "$k-smart-log" "$(echo "$out" | head -3 | tr '\n' ';')"
	check "$k-error-log" nvme error-log "/dev/$CTRL" -e 8
	check "$k-fw-log" nvme fw-log "/dev/$CTRL"
	check "$k-effects-log" nvme effects-log "/dev/$CTRL"
	out=$(nvme get-feature "/dev/$CTRL" -f 7 2>&1)
	echo "$out" | grep -q "Number of Queues" && pass "$k-get-feature" "$(echo "$out" | head -1)" ||
		fail "$k-get-feature" "$out"
	check "$k-flush" nvme flush "/dev/$NS"

	# 16 MiB of random data, then write-zeroes over its first 8 blocks.
	head -c $((16 * MIB)) /dev/urandom >/tmp/data
	dd if=/tmp/data of="/dev/$NS" bs=1M oflag=direct status=none
	[ "$(digest "/dev/$NS" 0 16)" = "$(sha256sum </tmp/data | cut -d' ' -f1)" ] && pass "$k-data" ||
		fail "$k-data" "read back differs"
	[ -n "$img" ] && written=$(host_blocks "$img")
	lbs=$(cat "/sys/block/$NS/queue/logical_block_size")
	if nvme write-zeroes "/dev/$NS" -s 0 -c 7 >/dev/null 2>&1 &&
		[ "$(dd if="/dev/$NS" bs="$lbs" count=8 iflag=direct status=none | tr -d '\0' | wc -c)" = 0 ] &&
		[ "$(dd if="/dev/$NS" bs="$lbs" skip=8 count=1 iflag=direct status=none | sha256sum)" = \
		  "$(dd if=/tmp/data bs="$lbs" skip=8 count=1 status=none | sha256sum)" ]; then
		pass "$k-write-zeroes"
	else
		fail "$k-write-zeroes" "$(dmesg | grep -i nvme | tail -2 | tr '\n' ';')"
	fi

	# blkdiscard of MiB 2 to 10: reads as zeroes (DLFEAT), MiB 1 and 10 are what was written.
	if out=$(blkdiscard -o $((2 * MIB)) -l $((8 * MIB)) "/dev/$NS" 2>&1) &&
		[ "$(digest "/dev/$NS" 2 8)" = "$(zeroes 8)" ] &&
		[ "$(digest "/dev/$NS" 1 1)" = "$(dd if=/tmp/data bs=1M skip=1 count=1 status=none | sha256sum | cut -d' ' -f1)" ] &&
		[ "$(digest "/dev/$NS" 10 6)" = "$(dd if=/tmp/data bs=1M skip=10 count=6 status=none | sha256sum | cut -d' ' -f1)" ]; then
		pass "$k-blkdiscard"
	else
		fail "$k-blkdiscard" "$out $(dmesg | grep -i -e nvme -e blk | tail -3 | tr '\n' ';')"
	fi
	if [ -n "$img" ]; then
		freed=$(host_blocks "$img")
		echo "$img: $written bytes allocated after the writes, $freed after the discard"
		[ -n "$freed" ] && [ -n "$written" ] && [ $((written - freed)) -ge $((8 * MIB)) ] &&
			pass "$k-discard-frees-host-blocks" "$(((written - freed) / MIB)) MiB" ||
			fail "$k-discard-frees-host-blocks" "allocated $written then $freed"
	fi

	check "$k-reset" nvme reset "/dev/$CTRL"
	if wait_for 30 live && [ "$(digest "/dev/$NS" 10 6)" = "$(dd if=/tmp/data bs=1M skip=10 count=6 status=none | sha256sum | cut -d' ' -f1)" ]; then
		pass "$k-live-after-reset"
	else
		fail "$k-live-after-reset" "state $(cat "/sys/class/nvme/$CTRL/state" 2>&1)"
	fi
	nvme ns-rescan "/dev/$CTRL" >/dev/null 2>&1 && wait_for 10 test -e "/dev/$NS" && pass "$k-ns-rescan" ||
		fail "$k-ns-rescan" "/dev/$NS: $(ls /dev | grep nvme | tr '\n' ' ')"

	# ext4 (mkfs discards the whole namespace), 48 MiB of files removed, then fstrim.
	mkdir -p /mnt/fs
	if mkfs.ext4 -q -F "/dev/$NS" && mount "/dev/$NS" /mnt/fs; then
		pass "$k-mkfs"
		head -c $((48 * MIB)) /dev/urandom >/mnt/fs/f && sync
		[ -n "$img" ] && full=$(host_blocks "$img")
		rm /mnt/fs/f && sync
		out=$(fstrim -v /mnt/fs 2>&1)
		echo "$out"
		echo "$out" | grep -q "trimmed" && pass "$k-fstrim" "$out" || fail "$k-fstrim" "$out"
		if [ -n "$img" ]; then
			trimmed=$(host_blocks "$img")
			echo "$img: $full bytes allocated with the file, $trimmed after fstrim"
			[ -n "$full" ] && [ -n "$trimmed" ] && [ $((full - trimmed)) -ge $((32 * MIB)) ] &&
				pass "$k-fstrim-frees-host-blocks" "$(((full - trimmed) / MIB)) MiB" ||
				fail "$k-fstrim-frees-host-blocks" "allocated $full then $trimmed"
		fi
		umount /mnt/fs
	else
		fail "$k-mkfs" "$(dmesg | grep -i -e nvme -e ext4 | tail -3 | tr '\n' ';')"
	fi

	# A disconnect while fio writes: fio ends (with errors), the namespace goes, nothing hangs.
	fio --name=busy --filename="/dev/$NS" --direct=1 --rw=randwrite --bs=64k --size=32M --time_based \
		--runtime=120 --ioengine=libaio --iodepth=8 --output=/tmp/fio-busy.txt >/dev/null 2>&1 &
	fpid=$!
	sleep 3
	out=$(timeout 60 nvme disconnect -n "$nqn" 2>&1)
	gone() { [ ! -e "/sys/block/$NS" ]; }
	fio_done() { ! kill -0 "$fpid" 2>/dev/null; }
	if echo "$out" | grep -q "disconnected 1 controller" && wait_for 30 gone && wait_for 60 fio_done; then
		pass "$k-disconnect-under-fio"
	else
		fail "$k-disconnect-under-fio" "$out; fio $(fio_done && echo ended || echo running)"
		kill "$fpid" 2>/dev/null
	fi
	wait "$fpid" 2>/dev/null
}

target ram 192.168.200.1 nvmet-test ""
target file 192.168.201.1 nvmet-file ns.img

bad=$(dmesg | grep -e "BUG" -e "Oops" -e "WARNING" -e "Call Trace" | head -3)
[ -z "$bad" ] && pass nvme-cli-kernel-quiet || fail nvme-cli-kernel-quiet "$(echo "$bad" | tr '\n' ';')"
echo "--- kernel log"
dmesg | grep -i -e nvme -e ionic | tail -30
finish
