#!/usr/bin/env bash
# guest-eth-bench: inside one guest run (TCG), a 64 MiB curl GET from the S3 endpoint over the
# emulated ionic NIC, beside the same GET from a host HTTP server over QEMU's virtio-net.
# Under TCG absolute rates mean little: the ratio is the figure.
# Usage: bench/guest_eth_bench.sh path/to/rocm-ernic [csv-file]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(readlink -f "$1")
CSV=${2:-}
TMP=$(mktemp -d)
PORT=8099
trap 'kill $HPID 2>/dev/null; rm -rf "$TMP"' EXIT
head -c $((64 << 20)) /dev/urandom >"$TMP/obj"
/usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$TMP" "$PORT" >/dev/null 2>&1 &
HPID=$!
out=$(tests/vm/run-vm-test.sh --binary "$BIN" --server-args "--backend s3" --keep \
	--qemu-args "-netdev user,id=n0 -device virtio-net-pci,netdev=n0" \
	--env ERNIC_BENCH_HTTP_PORT=$PORT --check bench/guest/eth-bench.sh --check-timeout 900 --timeout 1200)
echo "$out" | grep -E '^(ok|not ok)'
job=$(echo "$out" | sed -n 's/^# job files kept in //p')
res=$job/run1/eth-bench.csv
[ -f "$res" ] || { echo "no results"; exit 1; }
awk -F, 'NR==2{i=$2} NR==3{v=$2} END{printf "ionic (S3 endpoint) %.1f MB/s, virtio-net (host http) %.1f MB/s, ratio %.2f\n", i/1e6, v/1e6, i/v}' "$res"
[ -n "$CSV" ] && cp "$res" "$CSV"
rm -rf "$job"
