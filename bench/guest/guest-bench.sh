#!/bin/sh
# Guest side of bench/guest.sh: every measurement beside its denominator, in one boot.
#   device 1 (MAC ..:43, 192.168.200.2): the nvmeof backend, controller 192.168.200.1
#   device 2 (MAC ..:44, 192.168.201.2): the s3 backend, endpoint 192.168.201.1:9000
#   a virtio-blk disk with serial ernic-bench, backed by a file in the host's RAM (tmpfs)
#   device 3 (MAC ..:45, 192.168.202.2): the s3 backend with mapped doorbell pages, 192.168.202.1
#   rdma_rxe (Linux soft-RoCE) on a dummy netdev, 10.99.0.1: the perftest denominator
# Writes /mnt/job/guest-bench.csv: group,case,subject,value,unit (the host computes the ratios).
# Under TCG the absolute values mean little; pairs are measured back to back, in both orders.
# shellcheck source=SCRIPTDIR/../../tests/vm/guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

CSV=/mnt/job/guest-bench.csv
RUNTIME=${ERNIC_BENCH_RUNTIME:-10}
NQN=nvmet-test
echo "group,case,subject,value,unit" >$CSV
row() { echo "$1,$2,$3,$4,$5" >>$CSV; echo "  $1 $2 $3: $4 $5"; }

# --- the devices --------------------------------------------------------------------------
modprobe nvme-rdma 2>/dev/null
modprobe rdma_ucm 2>/dev/null
ionic_up 192.168.200.2/24 02:45:52:4e:49:43 && rdma_up 192.168.200.2 || { fail bench-setup "nvmeof NIC: $WHY"; finish; }
NV_IF=$IF
ionic_up 192.168.201.2/24 02:45:52:4e:49:44 && rdma_up 192.168.201.2 || { fail bench-setup "s3 NIC: $WHY"; finish; }
S3_IB=$IB S3_GID=$GID S3_IF=$IF
ionic_up 192.168.202.2/24 02:45:52:4e:49:45 || { fail bench-setup "mapped NIC: $WHY"; finish; }
MAP_IF=$IF
VB=$(serial_disk ernic-bench)
[ -n "$VB" ] || { fail bench-setup "no virtio-blk disk with serial ernic-bench"; finish; }
ip link add ernic-rxe0 type dummy && ip addr add 10.99.0.1/24 dev ernic-rxe0 && ip link set ernic-rxe0 up &&
	modprobe rdma_rxe && rdma link add rxe0 type rxe netdev ernic-rxe0 ||
	{ fail bench-setup "cannot create the rdma_rxe device"; finish; }
wait_for 30 gid_index rxe0 10.99.0.1 || { fail bench-setup "rxe0 has no RoCE v2 GID for 10.99.0.1"; finish; }
RXE_GID=$(gid_index rxe0 10.99.0.1)
timeout 180 nvme connect -t rdma -a 192.168.200.1 -s 4420 -n $NQN >/dev/null 2>&1
wait_for 60 nsdev || { fail bench-setup "nvme connect failed: $(dmesg | grep -i nvme | tail -2 | tr '\n' ' ')"; finish; }
NV=/dev/$(nsdev)
echo "nvmeof $NV, virtio-blk $VB, s3 RDMA device $S3_IB, rxe0"
pass bench-setup "$NV, $VB, $S3_IB, rxe0"

# --- NVMe-oF over ionic vs virtio-blk ------------------------------------------------------
# Both start full of the same kind of data, so no read is of a hole.
fill_devices "$NV" "$VB"
# fio_json FILE EXPR: a value from fio's JSON output (EXPR over j = jobs[0]).
fio_json() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))["jobs"][0]; print(eval(sys.argv[2]))' "$1" "$2"
}
# blk CASE FIO-ARGS...: the job on both devices, in both orders; one row per device and value.
blk() {
	b_case=$1
	shift
	for d in "$NV" "$VB" "$VB" "$NV"; do
		fio --name="$b_case" --filename="$d" --ioengine=libaio --direct=1 --time_based --runtime="$RUNTIME" \
			--group_reporting --output-format=json --output=/tmp/fio.json "$@" >/dev/null 2>&1 ||
			{ fail "nvmeof-$b_case" "fio failed on $d"; return 1; }
		subj=virtio-blk
		[ "$d" = "$NV" ] && subj=ionic-nvmeof
		case $b_case in
		randread-4k-qd1)
			row nvmeof "$b_case-mean" $subj "$(fio_json /tmp/fio.json 'round(j["read"]["clat_ns"]["mean"] / 1000, 1)')" us
			row nvmeof "$b_case-p99" $subj "$(fio_json /tmp/fio.json 'round(j["read"]["clat_ns"]["percentile"]["99.000000"] / 1000, 1)')" us ;;
		randread-4k-qd32x4)
			row nvmeof "$b_case" $subj "$(fio_json /tmp/fio.json 'round(j["read"]["iops"])')" IOPS ;;
		seqread-1m)
			row nvmeof "$b_case" $subj "$(fio_json /tmp/fio.json 'round(j["read"]["bw_bytes"] / 1e9, 3)')" GB/s ;;
		esac
	done
	pass "nvmeof-$b_case"
}
note "NVMe-oF vs virtio-blk: fio, ${RUNTIME}s per run, 4 runs per case"
blk randread-4k-qd1 --rw=randread --bs=4k --iodepth=1
blk randread-4k-qd32x4 --rw=randread --bs=4k --iodepth=32 --numjobs=4
blk seqread-1m --rw=read --bs=1M --iodepth=8
nvme disconnect -n $NQN >/dev/null 2>&1

# --- S3: by RDMA token, by HTTP body (curl), and the same bytes read from virtio-blk ---------
EP=192.168.201.1
URL=http://$EP:9000/ernic
note "S3 GET and PUT: RDMA tokens vs curl's body path vs virtio-blk"
for size in 4K 64K 1M; do
	case $size in 4K) n=400 bytes=4096 ;; 64K) n=200 bytes=65536 ;; 1M) n=40 bytes=1048576 ;; esac
	head -c $bytes /dev/urandom >/tmp/obj
	# RDMA: the client PUTs n times, then GETs n times, and checks the bytes.
	if out=$(timeout 300 s3_rdma_client -d "$S3_IB" -a $EP -s $size -n $n 2>&1); then
		row s3 "put-$size" s3-rdma "$(echo "$out" | sed -n 's/^PUT .* \([0-9.]*\) MB\/s$/\1/p')" MB/s
		row s3 "get-$size" s3-rdma "$(echo "$out" | sed -n 's/^GET .* \([0-9.]*\) MB\/s$/\1/p')" MB/s
	else
		fail "s3-rdma-$size" "$(echo "$out" | tail -2 | tr '\n' ' ')"
	fi
	# curl: one process, one keep-alive connection, n requests.
	: >/tmp/put.cfg
	: >/tmp/get.cfg
	i=0
	while [ $i -lt $n ]; do
		printf 'url = "%s/curl-%s"\nupload-file = "/tmp/obj"\noutput = "/dev/null"\n' "$URL" $size >>/tmp/put.cfg
		printf 'url = "%s/curl-%s"\noutput = "/dev/null"\n' "$URL" $size >>/tmp/get.cfg
		i=$((i + 1))
	done
	for op in put get; do
		t0=$(cut -d' ' -f1 /proc/uptime)
		if curl -s -f -K /tmp/$op.cfg; then
			t1=$(cut -d' ' -f1 /proc/uptime)
			row s3 "$op-$size" s3-curl "$(awk -v b=$bytes -v n=$n -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", b * n / (z - a) / 1e6 }')" MB/s
		else
			fail "s3-curl-$op-$size" "curl failed"
		fi
	done
	curl -s -X DELETE "$URL/curl-$size" >/dev/null
	# virtio-blk: the same sizes and count, one at a time, with O_DIRECT.
	for op in put get; do
		rw=read
		[ $op = put ] && rw=write
		fio --name=s3-$op --filename="$VB" --rw=$rw --bs=$bytes --io_size=$((bytes * n)) --iodepth=1 \
			--ioengine=psync --direct=1 --output-format=json --output=/tmp/fio.json >/dev/null 2>&1 &&
			row s3 "$op-$size" virtio-blk "$(fio_json /tmp/fio.json "round(j[\"$rw\"][\"bw_bytes\"] / 1e6, 2)")" MB/s
	done
done
pass s3-bench

# --- Ethernet through mapped doorbell pages vs trapped ones (NIC 3 vs NIC 2, both s3) ----------
note "Ethernet: mapped doorbell pages vs trapped doorbells"
head -c 16777216 /dev/urandom >/tmp/obj16
for ep in 192.168.201.1 192.168.202.1; do
	curl -s -f -T /tmp/obj16 "http://$ep:9000/ernic/eth16" >/dev/null || fail "eth-put-$ep" "curl PUT failed"
done
for round in 1 2; do
	for ep in 192.168.201.1 192.168.202.1 192.168.202.1 192.168.201.1; do
		subj=trapped
		[ $ep = 192.168.202.1 ] && subj=mapped
		rtt=$(ping -c 50 -i 0.02 -q "$ep" | sed -n 's|^rtt [^=]*= [^/]*/\([^/]*\)/.*|\1|p')
		row doorbells ping-rtt $subj "$(awk -v r="$rtt" 'BEGIN { printf "%.1f", r * 1000 }')" us
		t0=$(cut -d' ' -f1 /proc/uptime)
		curl -s -f -o /dev/null "http://$ep:9000/ernic/eth16" || fail "eth-get-$ep" "curl GET failed"
		t1=$(cut -d' ' -f1 /proc/uptime)
		row doorbells curl-get-16M $subj "$(awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", 16.777216 / (z - a) }')" MB/s
	done
done
pass doorbells

# --- perftest: ionic (the s3 device, loopback between its QPs) vs rdma_rxe -------------------
# perf DEV GID CMD ARGS...: both ends of a perftest tool on that device (both_ends); OUT.
perf() {
	p_dev=$1 p_gid=$2
	shift 2
	both_ends perf 300 "$@" -d "$p_dev" -x "$p_gid"
}
note "perftest: ionic loopback vs rdma_rxe"
for dev in ionic rxe; do
	if [ $dev = ionic ]; then d=$S3_IB g=$S3_GID; else d=rxe0 g=$RXE_GID; fi
	for t in write read send; do
		for size in 4096 1048576; do
			n=2000
			[ $size = 1048576 ] && n=200
			if perf "$d" "$g" "ib_${t}_bw" -s $size -n $n -F; then
				row perftest "ib_${t}_bw-$size" "$dev" "$(echo "$OUT" | awk -v s=$size '$1 == s { print $4 }')" MiB/s
			else
				fail "perftest-$dev-$t-$size" "$(tail -2 /tmp/perf.cli | tr '\n' ' ')"
			fi
		done
	done
	for t in send write; do
		if perf "$d" "$g" "ib_${t}_lat" -s 64 -n 2000 -F; then
			row perftest "ib_${t}_lat-64" "$dev" "$(echo "$OUT" | awk '$1 == 64 { print $6 }')" us
		else
			fail "perftest-$dev-${t}-lat" "$(tail -2 /tmp/perf.cli | tr '\n' ' ')"
		fi
	done
done
pass perftest
finish
