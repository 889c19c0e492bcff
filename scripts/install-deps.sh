#!/usr/bin/env bash
# Install the Debian packages rocm-ernic needs to build and test, if any are missing; with
# --bench also what the benchmarks need (gnuplot for bench/guest.sh's chart, nginx-light for
# bench/tap_bench.sh's comparison).
# Uses the machine's own apt configuration; runs apt-get update only when something is missing.
set -euo pipefail

PACKAGES=(
	gcc make cmake pkg-config           # toolchain
	libjson-c-dev                       # vfio-user VERSION capabilities
	libssl-dev                          # MD5 for S3 ETags
	libexpat1-dev                       # S3 XML request bodies
	zlib1g-dev                          # the tests' own CRC-32, independent of ISA-L's
	libisal-dev                         # CRC-32 and CRC-32C for S3's checksums, the RoCEv2 ICRC (src/fabric)
	libcmocka-dev                       # unit tests
	clang libclang-rt-dev               # fuzz targets (tests/fuzz): clang and its libFuzzer runtime
	python3 iproute2 procps coreutils   # tests that start the binary
	curl python3-boto3 nftables         # s3-tap-ci: real HTTP and S3 clients, packet loss
	iputils-ping                        # s3-tap-ci: ICMP echo
	rclone s3cmd s3fs awscli            # s3-clients-ci: the stock S3 clients users run
	tshark                              # pcap-ci: the capture decoded by Wireshark's own dissectors
	debootstrap util-linux              # guest test lane (tests/vm): chroots, mount namespaces
)
case ${1:-} in
--bench) PACKAGES+=(gnuplot-nox         # bench/guest.sh: the chart of the ratios
		  nginx-light) ;;       # bench/tap_bench.sh: the HTTP server to compare with
"") ;;
*) echo "usage: $0 [--bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
