#!/usr/bin/env bash
# s3-rdma-bench in a network namespace of its own with a TAP (192.168.200.2/24 on the host side, the
# endpoint 192.168.200.1 behind it): S3 GET and PUT by RDMA through the device, no guest (see
# bench/s3_rdma_bench.c). Nothing leaves the namespace.
# Usage: bench/s3_rdma_bench.sh path/to/rocm-ernic path/to/s3-rdma-bench [seconds-per-case] [csv]  (root)
set -euo pipefail
BIN=$(readlink -f "$1")
BENCH=$(readlink -f "$2")
SECS=${3:-2}
CSV=${4:-}
[ -n "$CSV" ] && CSV=$(readlink -f "$CSV")
NS=ernic-s3rdma-$$
trap 'ip netns del "$NS" 2>/dev/null || true' EXIT
ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip tuntap add dev ernic0 mode tap
ip netns exec "$NS" ip addr add 192.168.200.2/24 dev ernic0
ip netns exec "$NS" ip link set ernic0 up
ip netns exec "$NS" "$BENCH" "$BIN" ernic0 "$SECS" "$CSV"
