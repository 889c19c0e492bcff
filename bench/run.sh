#!/usr/bin/env bash
# Build (Release) and run the benchmarks; results go to bench/results/*.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DERNIC_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" --target rocm-ernic vfu-bench s3-bench nvmeof-bench nvmeof-rdma-bench s3-rdma-bench rdma-bench roce-scale-bench tap-floor-bench tap-get-floor md5-bench >/dev/null
mkdir -p bench/results
echo "== vfio-user socket (bench/results/vfu.csv)"
build-bench/vfu-bench build-bench/rocm-ernic "${VFU_BENCH_ITERS:-20000}" bench/results/vfu.csv
echo "== S3 store RDMA path (bench/results/s3.csv)"
build-bench/s3-bench "${S3_BENCH_SECONDS:-1}" bench/results/s3.csv
echo "== NVMe-oF controller, capsules through fake DMA ops (bench/results/nvmeof.csv)"
build-bench/nvmeof-bench "${NVMEOF_BENCH_SECONDS:-1}" bench/results/nvmeof.csv
echo "== NVMe-oF 4 KiB reads through the device over vfio-user, as nvme-rdma drives it (bench/results/nvmeof-rdma.csv)"
build-bench/nvmeof-rdma-bench build-bench/rocm-ernic "${NVMEOF_BENCH_SECONDS:-1}" bench/results/nvmeof-rdma.csv
echo "== S3 GET and PUT by RDMA through the device over vfio-user, HTTP through the device's Ethernet queues: the client a guest (bench/results/s3-rdma-device.csv)"
S3_RDMA_BENCH_VIA=device bench/s3_rdma_bench.sh build-bench/rocm-ernic build-bench/s3-rdma-bench "${S3_RDMA_BENCH_SECONDS:-2}" bench/results/s3-rdma-device.csv
echo "== the same, HTTP through a TAP the server owns: the client another host (bench/results/s3-rdma.csv)"
S3_RDMA_BENCH_VIA=tap bench/s3_rdma_bench.sh build-bench/rocm-ernic build-bench/s3-rdma-bench "${S3_RDMA_BENCH_SECONDS:-2}" bench/results/s3-rdma.csv
echo "== RDMA engine over vfio-user, two RC QPs on the loopback fabric (bench/results/rdma.csv)"
build-bench/rdma-bench build-bench/rocm-ernic "${RDMA_BENCH_SECONDS:-1}" bench/results/rdma.csv
echo "== S3 endpoint over a TAP, 64 MiB (bench/results/tap.csv)"
TAP_BENCH_ROUNDS=8 bench/tap_bench.sh build-bench/rocm-ernic bench/results/tap.csv
echo "== guest Ethernet: ionic vs virtio-net in one TCG guest (bench/results/eth.csv)"
bench/guest_eth_bench.sh build-bench/rocm-ernic bench/results/eth.csv
echo "== RoCEv2 at scale: N servers on one bridge, all to all, no guests (bench/results/roce-scale.csv)"
bench/roce_scale.sh build-bench/rocm-ernic build-bench/roce-scale-bench bench/results/roce-scale.csv
echo "== RoCEv2 one way, 16 WRITEs in flight: each side's CPU per frame beside its floor on two cores (bench/results/roce-oneway.csv)"
ROCE_SCALE_ONEWAY=1 ROCE_SCALE_DEPTH=16 bench/roce_scale.sh build-bench/rocm-ernic build-bench/roce-scale-bench bench/results/roce-oneway.csv 3 2 4
echo "== RoCEv2 one way, 16 READs in flight: the responders send the payload (bench/results/roce-oneway-read.csv)"
ROCE_SCALE_OP=read ROCE_SCALE_ONEWAY=1 ROCE_SCALE_DEPTH=16 bench/roce_scale.sh build-bench/rocm-ernic build-bench/roce-scale-bench bench/results/roce-oneway-read.csv 3 2
echo "== the requester's way onto the bridge: its TAP, a packet socket, a transmit ring, a multiqueue TAP (bench/results/floor-via.csv)"
bench/tap_floor_via.sh build-bench/tap-floor-bench bench/results/floor-via.csv
echo "== RoCEv2 at scale, 4 KiB WRITEs (bench/results/roce-scale-4k.csv)"
ROCE_SCALE_LEN=4096 bench/roce_scale.sh build-bench/rocm-ernic build-bench/roce-scale-bench bench/results/roce-scale-4k.csv 3 2 4
echo "== RoCEv2 between two guests: rocm-ernic pair vs rdma_rxe pair in one boot (bench/results/roce-pair.csv)"
bench/roce-pair.sh build-bench/rocm-ernic
echo "== ib_read_bw both ways, rounds alternating: against rdma_rxe, rdma_rxe against itself, two rocm-ernic guests (bench/results/roce-reads-*.csv)"
bench/roce-reads.sh build-bench/rocm-ernic
ERNIC_READS_MAIN=rxe bench/roce-reads.sh build-bench/rocm-ernic
ERNIC_READS_PEER=ionic bench/roce-reads.sh build-bench/rocm-ernic
