#!/bin/sh
# rdma-core's own test suite against the device, unmodified: Debian's python3-pyverbs ships it as
# documentation (/usr/share/doc/rdma-core/tests, the files gzipped), the same version as the
# guest's rdma-core and libionic. It runs against ionic_0 on the loopback backend, both players
# of each test in this guest, and rdma_core_verdict.py judges the outcome against
# rdma-core-expect.txt: every failure, error and skip must be owed to the driver, the provider,
# another vendor or the environment, and every test listed there as passing must pass.
#
# ERNIC_RDMA_CM_LOOPS=N (--env): afterwards, the suite's rdma_cm tests N more times in a row (the
# rdma_cm create/destroy cycle as a stress of the RDMA admin queue), each run judged the same
# way, and the kernel log checked for the driver declaring its admin queue dead.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

JOB=$(dirname "$0")
IP=192.168.200.2
modprobe rdma_ucm 2>/dev/null
# The suite's huge-page traffic test needs 2 MiB pages.
echo 32 >/proc/sys/vm/nr_hugepages
ionic_up $IP/24 && rdma_up $IP || { fail rdma-setup "$WHY"; finish; }
echo "device $IB, RoCE v2 GID index $GID"
pass rdma-setup

SUITE=/tmp/rdma-core-tests
rm -rf "$SUITE" && mkdir -p "$SUITE" && cp -r /usr/share/doc/rdma-core/tests "$SUITE/" &&
	gunzip -f "$SUITE"/tests/*.gz || { fail rdma-core-suite "cannot unpack /usr/share/doc/rdma-core/tests"; finish; }
echo "rdma-core $(dpkg-query -W -f '${Version}' python3-pyverbs)"

# run NAME ARGS...: the suite (or part of it) with its verbose output in the job directory, judged.
run() {
	name=$1
	shift
	(cd "$SUITE/tests" && timeout 1500 python3 run_tests.py --dev "$IB" --gid "$GID" -v "$@") \
		>"$JOB/$name.out" 2>&1
	echo "$name: run_tests.py exited $? ($(tail -1 "$JOB/$name.out"))"
	python3 "$JOB/rdma_core_verdict.py" "$JOB/$name.out" "$JOB/rdma-core-expect.txt" | sed "s/^CHECK \(PASS\|FAIL\) rdma-core/CHECK \1 $name/"
}

run rdma-core
loops=${ERNIC_RDMA_CM_LOOPS:-0}
i=1
while [ "$i" -le "$loops" ]; do
	run "rdma-cm-$i" tests.test_rdmacm
	i=$((i + 1))
done
dead=$(dmesg | grep -i ionic | grep -i -e "admin command timed out" -e "killed" -e "admin.*dead")
[ -z "$dead" ] && pass rdma-core-admin-queue-alive ||
	fail rdma-core-admin-queue-alive "$(echo "$dead" | head -3 | tr '\n' ';')"
echo "--- ionic kernel log"
dmesg | grep -i -e ionic -e infiniband | tail -20
finish
