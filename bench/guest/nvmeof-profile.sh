#!/bin/sh
# Guest side of bench/guest.sh --profile: where the time of a small random read goes, NVMe-oF over
# ionic beside virtio-blk in the same boot. For each device, one fio run (4 KiB randread, QD32 x 4
# jobs) between two snapshots of
#   - the guest: CPU time by kind (/proc/stat), interrupts of the device's vectors, context switches;
#   - the server (NVMe-oF only, through the runner's "stats" host request): its counters
#     (doorbells by queue type, work requests, completions, events, interrupts) and its CPU time.
# Writes /mnt/job/profile.csv: device,key,value (the host divides by the I/O count).
# shellcheck source=SCRIPTDIR/../../tests/vm/guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

CSV=/mnt/job/profile.csv
RUNTIME=${ERNIC_BENCH_RUNTIME:-10}
NQN=nvmet-test
echo "device,key,value" >$CSV

modprobe nvme-rdma 2>/dev/null
ionic_up 192.168.200.2/24 && rdma_up 192.168.200.2 || { fail profile-setup "$WHY"; finish; }
VB=$(serial_disk ernic-bench)
[ -n "$VB" ] || { fail profile-setup "no virtio-blk disk with serial ernic-bench"; finish; }
timeout 180 nvme connect -t rdma -a 192.168.200.1 -s 4420 -n $NQN >/dev/null 2>&1
wait_for 60 nsdev || { fail profile-setup "nvme connect failed"; finish; }
NV=/dev/$(nsdev)
pass profile-setup "$NV ($(($(cat /sys/class/nvme/nvme0/queue_count) - 1)) I/O queues), $VB, $(nproc) CPUs"

# Both devices start full of data, so no read is of a hole.
fill_devices "$NV" "$VB"

# guest_snap PREFIX: CPU jiffies by kind, the device's interrupts, context switches.
guest_snap() {
	awk -v p="$1" '/^cpu / { print p "user " $2 + $3; print p "system " $4; print p "irq " $7 + $8;
		print p "idle " $5 + $6 } /^ctxt/ { print p "ctxt " $2 }' /proc/stat
	awk -v p="$1" -v pat="$2" '$NF ~ pat || $(NF-1) ~ pat { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i }
		END { print p "interrupts " s + 0 }' /proc/interrupts
}
# server_snap PREFIX: the server's counters and CPU ticks, through the runner.
server_snap() {
	rm -f /mnt/job/host-request.done
	echo stats >/mnt/job/host-request.new && mv /mnt/job/host-request.new /mnt/job/host-request
	wait_for 20 test -f /mnt/job/host-request.done || return 1
	tr -d '\r' </mnt/job/host-request.done | awk -v p="$1" '
		/dev_cmds/ { for (i = 1; i < NF; i++) {
			if ($(i + 1) == "doorbells") print p "doorbells " $i
			if ($(i + 1) == "interrupts,") print p "dev_interrupts " $i } }
		/admin commands/ { gsub(/[;,()]/, " ");
			for (i = 1; i < NF; i++) {
				if ($(i + 1) == "admin" && $(i + 2) == "commands") print p "admin_cmds " $i
				if ($(i + 1) == "admin" && $(i + 2) != "commands") print p "db_admin " $i
				if ($(i + 1) == "send") print p "db_send " $i
				if ($(i + 1) == "receive") print p "db_receive " $i
				if ($(i + 1) == "CQ" && $(i + 2) == "consumer") print p "db_cq_consumer " $i
				if ($(i + 1) == "CQ" && $(i + 2) == "arm") print p "db_cq_arm " $i
				if ($(i + 1) == "work") print p "work_requests " $i
				if ($(i + 1) == "completions") print p "completions " $i
				if ($(i + 1) == "events") print p "events " $i } }
		/^cpu / { print p "server_cpu_ticks " $2 }'
}
# profile NAME DEVICE IRQ-PATTERN SERVER(0/1)
profile() {
	guest_snap "$1 a_" "$3" >/tmp/a
	[ "$4" = 1 ] && { server_snap "$1 a_" >>/tmp/a || { fail "profile-$1" "no answer to the stats request"; return 1; }; }
	fio --name=qd32x4 --filename="$2" --ioengine=libaio --direct=1 --time_based --runtime="$RUNTIME" \
		--rw=randread --bs=4k --iodepth=32 --numjobs=4 --group_reporting --output-format=json \
		--output=/tmp/fio.json >/dev/null 2>&1 || { fail "profile-$1" "fio failed on $2"; return 1; }
	guest_snap "$1 b_" "$3" >>/tmp/a
	[ "$4" = 1 ] && server_snap "$1 b_" >>/tmp/a
	ios=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["total_ios"])' /tmp/fio.json)
	echo "$1,ios,$ios" >>$CSV
	echo "$1,guest_clk_tck,$(getconf CLK_TCK)" >>$CSV
	# One row per key: after minus before.
	awk -v d="$1" '{ key = substr($2, 3); v[key, substr($2, 1, 1)] = $3; keys[key] = 1 }
		END { for (key in keys) print d "," key "," v[key, "b"] - v[key, "a"] }' /tmp/a >>$CSV
	pass "profile-$1" "$ios I/Os"
}
profile ionic-nvmeof "$NV" 'ion(ic|r)' 1
profile virtio-blk "$VB" "virtio[0-9]+-req" 0
grep -v '^device' $CSV | sort
nvme disconnect -n $NQN >/dev/null 2>&1
finish
