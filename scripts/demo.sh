#!/usr/bin/env bash
# demo.sh: see rocm-ernic do its job. Builds the server, builds (or reuses) the stock Debian
# guest image of the test lane, starts the server, boots the guest with the emulated NIC attached
# and walks through what the chosen backend offers, one line per step.
#
#   scripts/demo.sh [--backend s3|nvmeof|loopback] [--shell] [--ci] [--binary PATH] [--keep]
#
#   --backend s3        (default) link, ping, aws-cli ls/cp up and down/rm, s3cmd, S3 by RDMA
#   --backend nvmeof    nvme discover/connect, lsblk, ext4 on the namespace, fio verify, disconnect
#   --backend loopback  ibv_devinfo, ibv_rc_pingpong, rping, ib_write_bw inside the guest
#   --shell             no tour: the guest's console with the device attached and set up
#                       (Ctrl-A X leaves; the server then stops and its log stays)
#   --ci                plain output for logs; the exit status says whether every step passed
#   --binary PATH       use this server binary instead of building build/rocm-ernic
#   --keep              keep the run's files (logs, console) even when every step passed
#
# Runs as root (network namespace, chroot, mount namespaces). The server and QEMU run in a
# network namespace of the demo's own, with no link to the host's network; both are stopped on
# every way out, Ctrl-C included. Exit status: 0 every step passed, 1 a step failed, 2 this
# machine lacks something the demo needs (one line says what).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

BACKEND=s3 SHELL_MODE=0 CI=0 BINARY="" KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
	--backend) BACKEND=${2:-}; shift 2 || usage ;;
	--shell) SHELL_MODE=1; shift ;;
	--ci) CI=1; shift ;;
	--binary) BINARY=${2:-}; shift 2 || usage ;;
	--keep) KEEP=1; shift ;;
	-h | --help) usage ;;
	*) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $BACKEND in
s3 | nvmeof | loopback) ;;
*) echo "demo: --backend is s3, nvmeof or loopback, not '$BACKEND'" >&2; exit 2 ;;
esac

# missing WHAT: the one line a machine that cannot run the demo gets, and exit status 2.
missing() {
	echo "demo: cannot run here: $*" >&2
	exit 2
}
step() { echo "[$1/4] $2"; }

# ---------------------------------------------------------------------------------------------
# What the machine must offer. The guest runs under QEMU's TCG (no KVM needed; ERNIC_VM_ACCEL
# may name another accelerator), 2 GiB of guest RAM plus the server.
[ "$(id -u)" -eq 0 ] || missing "run it as root (it creates a network namespace, chroots and mount namespaces): sudo $0 $*"
[ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] || missing "the guest lane needs Linux on x86_64, this is $(uname -s)/$(uname -m)"
command -v ip >/dev/null && command -v nsenter >/dev/null && command -v unshare >/dev/null ||
	missing "iproute2 and util-linux (ip, nsenter, unshare) are needed: run scripts/install-deps.sh"
ip netns add "ernic-demo-probe-$$" 2>/dev/null && ip netns del "ernic-demo-probe-$$" ||
	missing "cannot create a network namespace (ip netns add failed: no CAP_SYS_ADMIN/CAP_NET_ADMIN?)"
unshare --mount --propagation private true 2>/dev/null ||
	missing "cannot create a mount namespace (unshare --mount failed)"
mem_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
[ "${mem_kib:-0}" -ge $((3 * 1024 * 1024)) ] ||
	missing "$((${mem_kib:-0} / 1024)) MiB of memory available; the guest (2 GiB) and the server need 3 GiB"
# shellcheck source=../tests/vm/lib/common.sh
. "$ROOT/tests/vm/lib/common.sh"
if ! [ -f "$IMGDIR/rootfs.ext4" ]; then
	mkdir -p "$VM_CACHE" || missing "cannot create the guest image cache $VM_CACHE"
	avail=$(df -Pk "$VM_CACHE" | awk 'NR == 2 { print int($4 / 1048576) }')
	[ "$avail" -ge 5 ] || missing "only $avail GiB free under $VM_CACHE; building the guest image needs 5 GiB"
	debian_mirror >/dev/null || missing "no Debian mirror in this machine's apt configuration (set ERNIC_VM_MIRROR=URL)"
fi
avail=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 { print int($4 / 1024) }')
[ "$avail" -ge 512 ] || missing "only $avail MiB free in ${TMPDIR:-/tmp} for the run's files; 512 MiB needed"

# ---------------------------------------------------------------------------------------------
[ $CI = 1 ] && export ERNIC_PROGRESS_INTERVAL=${ERNIC_PROGRESS_INTERVAL:-15}
if [ -n "$BINARY" ]; then
	[ -x "$BINARY" ] || missing "no executable server binary '$BINARY'"
	step 1 "server: $BINARY"
else
	step 1 "server: building build/rocm-ernic (log: build/demo-build.log)"
	mkdir -p build
	if ! { cmake -S . -B build && cmake --build build -j "$(nproc)" --target rocm-ernic; } >build/demo-build.log 2>&1; then
		tail -n 20 build/demo-build.log >&2
		command -v cmake >/dev/null || missing "cmake is not installed: run scripts/install-deps.sh"
		echo "demo: the server did not build (build/demo-build.log)" >&2
		exit 1
	fi
	BINARY=$ROOT/build/rocm-ernic
fi

step 2 "guest image: Debian $VM_SUITE with the stock ionic drivers, in $VM_CACHE"
t0=$(date +%s)
if ! "$ROOT/tests/vm/build-cache.sh"; then
	echo "demo: building the guest image failed (logs in $VM_LOGDIR)" >&2
	exit 1
fi
if [ $(($(date +%s) - t0)) -gt 2 ]; then
	echo "      built in $(($(date +%s) - t0)) s; $(du -sh --apparent-size "$IMGDIR" | cut -f1) of images, later runs reuse it"
else
	echo "      up to date ($(du -sh "$IMGDIR" | cut -f1) on disk)"
fi
chroot_run "$HOSTROOT" qemu-system-x86_64 -device help 2>/dev/null | grep -q '"vfio-user-pci"' ||
	missing "the QEMU in $HOSTROOT has no vfio-user-pci device (QEMU 10.1 or later is needed)"

# ---------------------------------------------------------------------------------------------
case $BACKEND in
s3) SERVER_ARGS="--backend s3" ;;
nvmeof) SERVER_ARGS="--backend nvmeof" ;;
loopback) SERVER_ARGS="--backend loopback" ;;
esac
RUNNER=("$ROOT/tests/vm/run-vm-test.sh" --binary "$BINARY" --server-args "$SERVER_ARGS" --netns
	--file "$ROOT/tests/vm/tour/setup.sh" --env "ERNIC_DEMO_BACKEND=$BACKEND")
[ $KEEP = 1 ] && RUNNER+=(--keep)
if [ $SHELL_MODE = 1 ]; then
	step 3 "server: $SERVER_ARGS, in a private network namespace"
	step 4 "guest console: the ionic NIC is set up as 192.168.200.2; Ctrl-A X leaves"
	exec "${RUNNER[@]}" --shell --check "$ROOT/tests/vm/tour/shell.sh"
fi
step 3 "server: $SERVER_ARGS, in a private network namespace"
step 4 "tour of the $BACKEND backend in the guest"
exec "${RUNNER[@]}" --tour --check "$ROOT/tests/vm/tour/$BACKEND.sh" --check-timeout 900 --timeout 1200
