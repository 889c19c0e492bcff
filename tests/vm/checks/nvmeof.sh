#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for the NVMe-oF controller (server: --backend nvmeof): its address answers ping and
# ARP, the stock nvme-rdma host discovers it with no neighbour entry of ours, connects (RDMA CM over the GSI queue pair, capsules by SEND, data by RDMA
# READ/WRITE on fast-registered keys), sees the namespace, writes 16 MiB of random data with
# O_DIRECT and reads it back with the same digest, runs a short fio verify job, and disconnects
# (the CM teardown); the namespace then goes away.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

IP=192.168.200.2
CTRL=192.168.200.1
NQN=${ERNIC_NVMEOF_NQN:-nvmet-test}
QUEUES=${ERNIC_NVMEOF_QUEUES:-8}
# Write queues (nvme connect -W): a second set of I/O queues, one per CPU again, so a guest with
# N vCPUs reaches 2N queues (the host caps each set at its online CPUs).
WQUEUES=${ERNIC_NVMEOF_WRITE_QUEUES:-0}

modprobe nvme-fabrics && modprobe nvme-rdma || { fail nvmeof-setup "cannot load nvme-rdma"; finish; }
ionic_up $IP/24 && rdma_up $IP || { fail nvmeof-setup "$WHY"; finish; }
pass nvmeof-setup

# The controller's address is a host on the segment: it answers ping, and ARP with 02:4e + address.
if ping -c 2 -W 2 $CTRL >/dev/null 2>&1 && ip neigh show $CTRL dev "$IF" | grep -q "lladdr 02:4e:c0:a8:c8:01"; then
	pass nvmeof-arp-ping "$CTRL is at $(ip neigh show $CTRL dev "$IF" | awk '{ print $3 }')"
else
	fail nvmeof-arp-ping "$(ping -c 1 -W 2 $CTRL 2>&1 | tail -2 | tr '\n' ' ') $(ip neigh show $CTRL)"
fi

out=$(timeout 120 nvme discover -t rdma -a $CTRL -s 4420 2>&1)
echo "$out"
if echo "$out" | grep -q "subnqn: *$NQN" && echo "$out" | grep -q "traddr: *$CTRL"; then
	pass nvmeof-discover
else
	fail nvmeof-discover "$(echo "$out" | tail -5 | tr '\n' ';') $(dmesg | grep -i nvme | tail -3 | tr '\n' ';')"
fi

wq=""
[ "$WQUEUES" -gt 0 ] && wq="-W $WQUEUES"
# A 30 s keep-alive timeout, not Linux's default 5 s: the host stops its keep-alives when it
# starts tearing the controller down, and a 16-vCPU guest on a loaded machine took 12 s to take
# down its 32 queues before the shutdown Property Set (with 5 s the target, as Linux nvmet would,
# lost the controller first and the Property Set timed out). Keep-alive itself is nvme-cli-vm's.
# shellcheck disable=SC2086 # $wq is empty or two words
out=$(timeout 180 nvme connect -t rdma -a $CTRL -s 4420 -n "$NQN" -i "$QUEUES" $wq -k 30 2>&1)
echo "$out"
if wait_for 60 nsdev; then
	NS=$(nsdev)
	pass nvmeof-connect
else
	fail nvmeof-connect "$out; $(dmesg | grep -i -e nvme -e ionic | tail -6 | tr '\n' ';')"
	finish
fi
nvme list
size=$(cat "/sys/block/$NS/size")
[ "$size" -gt 0 ] && pass nvmeof-namespace || fail nvmeof-namespace "/dev/$NS has $size sectors"
# The connect asks for the controller's ceiling (queues=); the host takes at most one I/O queue
# per online CPU in each set (I/O, write), so that is what it can reach.
ctrl=$(ls -d /sys/class/nvme/nvme* | head -1)
qc=$(cat "$ctrl/queue_count" 2>/dev/null)
cpus=$(nproc)
want=$(( (QUEUES < cpus ? QUEUES : cpus) + (WQUEUES < cpus ? WQUEUES : cpus) + 1 ))
echo "queue_count $qc (asked for $QUEUES I/O and $WQUEUES write queues, $cpus CPUs)"
[ "$qc" = "$want" ] && pass nvmeof-queue-count "$((qc - 1)) I/O queues" || fail nvmeof-queue-count "queue_count $qc, want $want"
# The hardware queues belong to the request-based disk of the path (nvme0c0n1 under native
# multipath, where nvme0n1 is the head; the disk itself otherwise).
MQ=$(ls /sys/block 2>/dev/null | grep -m1 '^nvme[0-9]*c[0-9]*n[0-9]*$')
MQ=${MQ:-$NS}
hctxs=$(ls "/sys/block/$MQ/mq" 2>/dev/null | wc -l)
[ "$hctxs" = "$((want - 1))" ] && pass nvmeof-hw-queues "$hctxs on $MQ" ||
	fail nvmeof-hw-queues "/sys/block/$MQ/mq has $hctxs entries, want $((want - 1))"

# 16 MiB of random data through O_DIRECT, read back and compared by digest.
head -c 16777216 /dev/urandom >/tmp/data
want=$(sha256sum </tmp/data | cut -d' ' -f1)
if dd if=/tmp/data of="/dev/$NS" bs=1M oflag=direct status=none &&
	got=$(dd if="/dev/$NS" bs=1M count=16 iflag=direct status=none | sha256sum | cut -d' ' -f1) &&
	[ "$got" = "$want" ]; then
	pass nvmeof-data-digest
else
	fail nvmeof-data-digest "write/read-back mismatch ($got vs $want): $(dmesg | grep -i nvme | tail -3 | tr '\n' ';')"
fi

if timeout 300 fio --name=verify --filename="/dev/$NS" --direct=1 --rw=randwrite --bs=4k --size=8M \
	--ioengine=psync --verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio.txt; then
	pass nvmeof-fio-verify
else
	fail nvmeof-fio-verify "$(tail -5 /tmp/fio.txt | tr '\n' ';')"
fi
grep -E "IOPS|err=" /tmp/fio.txt | head -4

# Every I/O queue carries verified I/O: one fio job pinned to each CPU (blk-mq sends a CPU's
# requests to its own hardware queue), each writing and verifying its own 1 MiB, while the nvme
# trace event records the queue of every command the host sets up.
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T 2>/dev/null
echo > $T/trace 2>/dev/null
echo 1 > $T/events/nvme/nvme_setup_cmd/enable 2>/dev/null
if timeout 600 fio --name=spread --filename="/dev/$NS" --direct=1 --rw=randwrite --bs=4k --size=1M \
	--offset_increment=1M --numjobs="$cpus" --cpus_allowed="0-$((cpus - 1))" --cpus_allowed_policy=split \
	--ioengine=psync --verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting --output=/tmp/fio-spread.txt; then
	echo 0 > $T/events/nvme/nvme_setup_cmd/enable 2>/dev/null
	used=$(grep -o 'qid=[0-9]*' $T/trace 2>/dev/null | sort -u | grep -vc '^qid=0$')
	echo "I/O seen on $used of $hctxs queues"
	[ "$used" = "$hctxs" ] && pass nvmeof-all-queues-io "$cpus jobs verified over $used queues" ||
		fail nvmeof-all-queues-io "I/O on $used of $hctxs queues: $(grep -o 'qid=[0-9]*' $T/trace | sort | uniq -c | tr '\n' ' ')"
else
	echo 0 > $T/events/nvme/nvme_setup_cmd/enable 2>/dev/null
	fail nvmeof-all-queues-io "$(tail -5 /tmp/fio-spread.txt | tr '\n' ';')"
fi

out=$(timeout 60 nvme disconnect -n "$NQN" 2>&1)
echo "$out"
gone() { [ ! -e "/sys/block/$NS" ]; }
if echo "$out" | grep -q "disconnected 1 controller" && wait_for 30 gone; then
	pass nvmeof-disconnect
else
	fail nvmeof-disconnect "$out; $(ls /sys/block | tr '\n' ' ')"
fi
# A static neighbour entry with any MAC still works (the connection is routed by queue pair).
ip neigh replace $CTRL lladdr 02:00:00:00:c0:01 dev "$IF" nud permanent
out=$(timeout 120 nvme discover -t rdma -a $CTRL -s 4420 2>&1)
echo "$out" | grep -q "subnqn: *$NQN" && pass nvmeof-static-neighbour ||
	fail nvmeof-static-neighbour "$(echo "$out" | tail -3 | tr '\n' ';')"
ip neigh del $CTRL dev "$IF"

echo "--- kernel log"
dmesg | grep -i -e nvme -e ionic | tail -20
finish
