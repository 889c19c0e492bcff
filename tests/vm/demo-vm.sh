#!/usr/bin/env bash
# demo-vm: the README's demo command, for every backend, as a test: scripts/demo.sh --backend X
# --ci --binary BINARY must exit 0, print a PASS line per step and no FAIL line, and end with
# "tour: N of N steps passed". Usage: tests/vm/demo-vm.sh BINARY
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BINARY=${1:?usage: $0 BINARY}
if [ "${ERNIC_SKIP_VM:-0}" = 1 ]; then
	echo "# skipped: ERNIC_SKIP_VM=1 is set, the guest test lane does not run"
	exit 77
fi
status=0
for backend in s3 nvmeof loopback; do
	out=$("$ROOT/scripts/demo.sh" --backend "$backend" --ci --binary "$BINARY" 2>&1)
	rc=$?
	echo "$out"
	steps=$(echo "$out" | grep -c '^  PASS  ')
	if [ $rc = 0 ] && ! echo "$out" | grep -q '^  FAIL  ' && [ "$steps" -gt 0 ] &&
		echo "$out" | grep -qx "tour: $steps of $steps steps passed"; then
		echo "ok - demo-$backend ($steps steps)"
	else
		echo "not ok - demo-$backend: exit status $rc, $steps steps passed"
		status=1
	fi
done
exit $status
