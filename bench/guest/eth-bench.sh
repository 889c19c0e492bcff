#!/bin/sh
# Guest side of bench/guest_eth_bench.sh: a 64 MiB curl GET from the S3 endpoint over the
# emulated ionic NIC (body path), then the same from a host HTTP server over QEMU's own
# virtio-net (user networking, host at 10.0.2.2), in the same guest run. Writes
# /mnt/job/eth-bench.csv; under TCG only the ratio means anything.
# shellcheck source=SCRIPTDIR/../../tests/vm/guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"
EP=192.168.200.1
ionic_if() {
	for n in /sys/class/net/*; do
		d=$(readlink -f "$n/device" 2>/dev/null) || continue
		[ "$(cat "$d/vendor" 2>/dev/null)" = 0x1dd8 ] && { basename "$n"; return 0; }
	done
	return 1
}
virtio_if() {
	for n in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")" = virtio_net ] && { basename "$n"; return 0; }
	done
	return 1
}
wait_for 30 ionic_if && wait_for 30 virtio_if || { fail eth-bench-nics "$(ls /sys/class/net)"; finish; }
IF=$(ionic_if)
VIF=$(virtio_if)
ip addr add 192.168.200.2/24 dev "$IF" && ip link set "$IF" up
ip addr add 10.0.2.15/24 dev "$VIF" && ip link set "$VIF" up
reach() { ping -c 1 -W 2 "$EP"; }
wait_for 30 reach || { fail eth-bench-ping "no answer from $EP"; finish; }
head -c 67108864 /dev/urandom >/tmp/obj
curl -s -f -T /tmp/obj "http://$EP:9000/ernic/bench" >/dev/null || { fail eth-bench-put "upload failed"; finish; }
rm -f /tmp/obj
ionic=$(curl -s -f -o /dev/null -w '%{speed_download}' "http://$EP:9000/ernic/bench") || { fail eth-bench-ionic "GET failed"; finish; }
virtio=$(curl -s -f -o /dev/null -w '%{speed_download}' "http://10.0.2.2:${ERNIC_BENCH_HTTP_PORT:-8099}/obj") ||
	{ fail eth-bench-virtio "GET over virtio-net failed"; finish; }
echo "path,bytes_per_s" >/mnt/job/eth-bench.csv
echo "ionic-s3,$ionic" >>/mnt/job/eth-bench.csv
echo "virtio-net-host-http,$virtio" >>/mnt/job/eth-bench.csv
cat /mnt/job/eth-bench.csv
pass eth-bench
finish
