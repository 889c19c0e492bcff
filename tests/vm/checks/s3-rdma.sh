#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks for S3 over RDMA (server: --backend s3, endpoint 192.168.200.1:9000, bucket
# ernic): the guest reaches the endpoint over the ionic netdev, builds tests/s3_rdma_client.c
# (with s3_rdma_client.h, s3_rdma_checks.c and s3_rdma_dialects.c) in the guest with nothing
# from the tree but src/util/parse_int.h (all passed to the runner with --file, so they sit next
# to this script), and runs its functional checks (-F) in each mode: hipObject's token (4 KiB and
# 1 MiB round trips by RDMA, a ranged GET, a window shorter than the object, rkey 0, missing key,
# malformed token, wrong bucket, the body path, listing and deletion), cuObject's descriptor
# (round trips, range and partNumber, declines answered in the body, errors without a reply,
# HEAD moving nothing, a checksum and a condition), and the RC handshake hipObject's library
# makes toward the reply's server token, from the link-local GID and from the IPv4-mapped one.
# The store must then hold none of the client's objects.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

JOB=$(dirname "$0")
IP=192.168.200.2
EP=${ERNIC_S3_ADDR:-192.168.200.1}
PORT=${ERNIC_S3_PORT:-9000}
BUCKET=${ERNIC_S3_BUCKET:-ernic}
URL=http://$EP:$PORT
CLIENT=/tmp/s3_rdma_client

reach() { ping -c 1 -W 2 "$EP"; }

ionic_up $IP/24 && rdma_up $IP || { fail s3-rdma-setup "$WHY"; finish; }
echo "netdev $IF, RDMA device $IB"
pass s3-rdma-setup

if wait_for 30 reach; then
	pass s3-rdma-ping
else
	fail s3-rdma-ping "$(ping -c 2 -W 2 "$EP" 2>&1 | tail -2 | tr '\n' ';')"
	finish
fi

SRCS="s3_rdma_client.c s3_rdma_checks.c s3_rdma_dialects.c"
for f in $SRCS s3_rdma_client.h parse_int.h; do
	[ -r "$JOB/$f" ] || { fail s3-rdma-client-build "no $f in the job directory (the runner's --file)"; finish; }
done
# shellcheck disable=SC2086 # the list of sources
if out=$(cd "$JOB" && gcc -std=c17 -O2 -Wall -Wextra -Werror -I"$JOB" $SRCS -libverbs -o $CLIENT 2>&1); then
	pass s3-rdma-client-build
else
	fail s3-rdma-client-build "$(echo "$out" | head -5)"
	finish
fi

# functional MODE NAME: the client's -F checks of one mode.
functional() {
	timeout 300 $CLIENT -F -m "$1" -d "$IB" -a "$EP" -p "$PORT" -b "$BUCKET" >"/tmp/s3-$1.txt" 2>&1
	rc=$?
	cat "/tmp/s3-$1.txt"
	if [ $rc = 0 ] && grep -qx 'all checks passed' "/tmp/s3-$1.txt"; then
		pass "$2"
	else
		fail "$2" "exit status $rc: $(grep -e '^FAIL' "/tmp/s3-$1.txt" | head -3 | tr '\n' ';')"
	fi
}
functional hipobject s3-rdma-functional
functional cuobject s3-rdma-cuobject
functional rc s3-rdma-rc-handshake

# The benchmark mode once, briefly (it runs; under TCG its rate means nothing).
if timeout 120 $CLIENT -d "$IB" -a "$EP" -p "$PORT" -b "$BUCKET" -s 1M -n 4 >/tmp/s3-bench.txt 2>&1; then
	pass s3-rdma-bench
else
	fail s3-rdma-bench "$(tail -3 /tmp/s3-bench.txt | tr '\n' ';')"
fi
cat /tmp/s3-bench.txt

# Nothing of the client's is left behind: the store started empty, so the listing has no keys.
out=$(curl -s --max-time 60 "$URL/$BUCKET")
if echo "$out" | grep -q "<Name>$BUCKET</Name>" && ! echo "$out" | grep -q "<Key>"; then
	pass s3-rdma-store-empty
else
	fail s3-rdma-store-empty "listing: $(echo "$out" | head -c 300)"
fi

echo "--- kernel log"
dmesg | grep -i -e ionic -e infiniband | tail -10
finish
