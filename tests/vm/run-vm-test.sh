#!/usr/bin/env bash
# run-vm-test.sh: boot a real Linux guest against rocm-ernic and run a guest check script.
#
#   tests/vm/run-vm-test.sh --binary build/rocm-ernic --check tests/vm/checks/ionic-probe.sh \
#       [--boots N] [--runs N] [--server-args "ARGS"]... [--fw-version V] [--env NAME=VALUE]...
#       [--file PATH]... [--timeout SECS] [--check-timeout SECS] [--keep] [--netns] [--tour]
#   tests/vm/run-vm-test.sh --no-device --check tests/vm/checks/lane-selftest.sh [...]
#   tests/vm/run-vm-test.sh [--binary B | --no-device] --shell [--check SETUP]
#                                                    interactive guest console
#   tests/vm/run-vm-test.sh --build-only             just bring the cache up to date
#   --server-args may be given several times: each one starts a server of its own (same binary,
#   those arguments, a socket of its own) and attaches one more vfio-user device to the guest,
#   in that order (server.log, server2.log, ... in the work directory).
#   A guest check may ask the host to signal the server: it writes "signal USR1" into
#   /mnt/job/host-request and waits for host-request.done (SIGUSR1 = a simulated firmware reset).
#   "stats" makes the first server log its counters (SIGUSR2); host-request.done then holds the
#   lines it logged and its CPU time so far ("cpu TICKS CLK_TCK"), for per-operation profiles.
#   "blocks" answers "NAME ALLOCATED SIZE" (bytes) for each file= image of the servers' arguments.
#   In --server-args, @WORK@ stands for the run's work directory (file=@WORK@/ns.img: an image
#   that lives and goes with the run).
#   --qemu-args "ARGS": extra QEMU arguments (split at spaces), e.g. a virtio-net NIC for comparisons.
#   --disk PATH (repeatable): attach the raw image PATH as a virtio-blk disk (host page cache,
#   writeback) whose serial is the file's name without its extension, e.g. a comparison disk.
#   --file PATH (repeatable): copy PATH into every run's job directory under its own name, next to
#   check.sh (the check finds it in "$(dirname "$0")"), e.g. a source file the guest compiles.
#   --server-log REGEX: after the servers stopped, the first one's log must match REGEX
#   (grep -E), e.g. its closing statistics (check server-log); --peer-server-log the same for the
#   peer's server (check server-log-peer).
#   After the runs, the frames the kernel dropped at each TAP of the run's namespace are printed
#   (tx_dropped: frames its queue toward a reader had no room for); a guest asks for them at any
#   time with the host request "tapdrops" (answer: "TAP COUNT" lines).
#   --netns-tap: run the server in a private network namespace joined (--tap ernic0) to a TAP
#   whose host side is 192.168.200.3/24; the guest checks see ERNIC_TAP_PEER=192.168.200.3, and a
#   host-side peer in the namespace pings the guest (192.168.200.2) while it runs (check
#   host-peer-ping) and serves /blob (16 MiB) and /blob.sha256 at ERNIC_TAP_PEER_HTTP.
#   --netns: run the servers and QEMU in a private network namespace without any link (nothing
#   they do can reach the host's network); --netns-tap implies it.
#   --peer-guest --peer-check PATH [--peer-env NAME=VALUE]... [--guest-nic] [--peer-loss PCT]:
#   a second guest in every run, booted from the same image next to the first: no vfio-user
#   device, 2 vCPUs and 1536M (ERNIC_VM_PEER_SMP/ERNIC_VM_PEER_MEM), a virtio-net NIC
#   (52:54:00:c8:00:04) on the TAP ernic-peer0 of a bridge, ernic-br0 (192.168.200.3/24), in the
#   run's network namespace (--peer-guest implies --netns; with --netns-tap the server's TAP
#   ernic0 is a port of the bridge and the address is the bridge's). It runs PATH once per run;
#   its checks are named runR.peer.CHECK (plus runR.peer.booted and runR.peer.qemu), and the
#   --file files are copied into its job directory too. --guest-nic gives the first guest a
#   virtio-net NIC on the same bridge (52:54:00:c8:00:02, TAP ernic-vm0). Both env files get
#   ERNIC_SIDE (main or peer), ERNIC_MAIN_IP=192.168.200.2, ERNIC_PEER_IP=192.168.200.4,
#   ERNIC_NIC_MAC (the guest's own virtio-net MAC, when it has one) and ERNIC_SYNC: the
#   directory through which the two checks coordinate, the peer's job directory's sync/ (the
#   first guest sees the peer's job directory as peer/ in its own). --peer-loss PCT drops PCT
#   percent of the frames the bridge forwards (nftables, bridge family; check peer-loss reports
#   how many; both guests see ERNIC_BRIDGE_LOSS=PCT). Takes --boots 1; not with --shell.
#   --peer-server-args "ARGS" (with --peer-guest): the peer guest gets a vfio-user device of its
#   own, from one more server (same binary, ARGS plus --tap ernic1, a TAP on the bridge; log
#   server-peer.log; checks server-start-peer, server-peer-alive-after-runR, server-stop-peer),
#   and shared memory for it. Give that server a MAC other than the first one's (--mac).
#   --host-load N: N processes that keep a host CPU busy (shell loops, nothing installed) run from
#   before the guests boot until the runs end: a loaded host, for tests whose point is that
#   nothing needs recovering there (late timers and slow guests are normal then).
#   --peer-vxlan (with --peer-guest): the peer guest, its TAP and its server (if any) stand for a
#   second host: a namespace of their own (ernic-vmb-PID) with a bridge of its own, joined to the
#   first namespace's bridge only by a VXLAN tunnel (VNI 4242, UDP 4789) over a veth pair, the
#   underlay (10.99.0.1/30 and .2, MTU 9000, so the tunnel carries 1500-byte frames whole). The
#   TAP drop counts cover both namespaces.
#   --tour: present the run to a person instead of a test harness: the guest's steps are shown
#   as they happen ("PASS name  figure", "FAIL name  why", and the text of "CHECK NOTE" lines),
#   the lane's own checks only when they fail, then one summary line.
#   --shell with --check: the script runs in the guest first (say, to configure the network and
#   print hints), then the console is handed over; the server's log path is printed, and the
#   server is stopped cleanly when QEMU ends (Ctrl-A X).
#
# What it does: checks the host prerequisites and brings the cache up to date (build-cache.sh),
# starts the server once (BINARY --socket SOCK ARGS, SOCK in a private temporary directory;
# one server per --server-args),
# then makes --runs QEMU runs against that same server process. In each run the guest boots
# --boots times (it reboots itself in between; QEMU is started without -no-reboot for that) and
# runs the check script on every boot. Finally the server gets SIGTERM.
#
# Output: one line per check, "ok - NAME" or "not ok - NAME: detail", then "N passed, N failed".
# Guest checks are named runR.bootB.CHECK; the lane's own are server-start, runR.bootB.booted,
# runR.qemu, server-alive-after-runR and server-stop. Exit status 0 only when everything passed,
# 77 when ERNIC_SKIP_VM=1 asks to skip. Lines starting with "#" are commentary.
#
# The job directory of a run (9p-shared with the guest, mounted at /mnt/job) keeps env,
# check.sh, boot-N.out, dmesg-boot-N.txt, serial.log and qemu.log; server.log sits next to the
# runs. It is under $TMPDIR (default /tmp), kept when something failed or with --keep, and
# the tails of its logs are printed on failure.
#
# Environment: ERNIC_VM_CACHE (cache dir), ERNIC_FW_VERSION (default of --fw-version),
# ERNIC_VM_ACCEL/ERNIC_VM_CPU (default tcg,thread=multi / max), ERNIC_VM_SMP (4),
# ERNIC_VM_MEM (2G), ERNIC_SKIP_VM=1 (skip), ERNIC_VM_LPJ (see guest_lpj), ERNIC_VM_APPEND (more
# kernel parameters, e.g. iomem=relaxed for a test that maps BARs a driver holds).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib/common.sh
. "$(dirname "$0")/lib/common.sh"

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

HOST_LOAD=0 LOAD_PIDS=()
BINARY="" CHECK="" BOOTS=1 RUNS=1 NO_DEVICE=0 SHELL_MODE=0 BUILD_ONLY=0 KEEP=0 NETNS_TAP=0 NETNS_ONLY=0 TOUR=0 QEMU_EXTRA=""
PEER_GUEST=0 PEER_CHECK="" PEER_ENV=() GUEST_NIC=0 PEER_LOSS="" PEER_SERVER_ARGS="" PEER_SRV="" PEER_VXLAN=0
SERVER_ARGS_LIST=() SERVER_LOG_RE="" PEER_SERVER_LOG_RE=""
FW_VERSION=${ERNIC_FW_VERSION:-1.0.0-ernic}
TIMEOUT=300 CHECK_TIMEOUT=180 SILENT_LIMIT=${ERNIC_VM_SILENT_LIMIT:-90}
EXTRA_ENV=() FILES=() DISKS=()
while [ $# -gt 0 ]; do
	case $1 in
	--binary) BINARY=${2:?}; shift 2 ;;
	--check) CHECK=${2:?}; shift 2 ;;
	--boots) BOOTS=${2:?}; shift 2 ;;
	--runs) RUNS=${2:?}; shift 2 ;;
	--server-args) SERVER_ARGS_LIST+=("${2?}"); shift 2 ;;
	--server-log) SERVER_LOG_RE=${2:?}; shift 2 ;;
	--peer-server-log) PEER_SERVER_LOG_RE=${2:?}; shift 2 ;;
	--fw-version) FW_VERSION=${2:?}; shift 2 ;;
	--env) EXTRA_ENV+=("${2:?}"); shift 2 ;;
	--file) FILES+=("${2:?}"); shift 2 ;;
	--disk) DISKS+=("${2:?}"); shift 2 ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--check-timeout) CHECK_TIMEOUT=${2:?}; shift 2 ;;
	--no-device) NO_DEVICE=1; shift ;;
	--shell) SHELL_MODE=1; shift ;;
	--build-only) BUILD_ONLY=1; shift ;;
	--keep) KEEP=1; shift ;;
	--netns-tap) NETNS_TAP=1; shift ;;
	--netns) NETNS_ONLY=1; shift ;;
	--tour) TOUR=1; shift ;;
	--qemu-args) QEMU_EXTRA=${2?}; shift 2 ;;
	--peer-guest) PEER_GUEST=1; shift ;;
	--peer-check) PEER_CHECK=${2:?}; shift 2 ;;
	--peer-env) PEER_ENV+=("${2:?}"); shift 2 ;;
	--guest-nic) GUEST_NIC=1; shift ;;
	--peer-loss) PEER_LOSS=${2:?}; shift 2 ;;
	--peer-server-args) PEER_SERVER_ARGS=${2:?}; shift 2 ;;
	--peer-vxlan) PEER_VXLAN=1; shift ;;
	--host-load) HOST_LOAD=${2:?}; shift 2 ;;
	-h | --help) usage ;;
	*) echo "unknown argument '$1'" >&2; usage ;;
	esac
done
for n in boots:BOOTS runs:RUNS timeout:TIMEOUT check-timeout:CHECK_TIMEOUT; do
	v=${n#*:}
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "--${n%%:*} must be a positive number" >&2; exit 2; }
done
for e in "${EXTRA_ENV[@]}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "--env wants NAME=VALUE, not '$e'" >&2; exit 2; }
done
for e in "${PEER_ENV[@]}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "--peer-env wants NAME=VALUE, not '$e'" >&2; exit 2; }
done
for f in "${DISKS[@]}"; do
	[ -f "$f" ] && [ -w "$f" ] || { echo "--disk: no writable file '$f'" >&2; exit 2; }
done
for f in "${FILES[@]}"; do
	if [ ! -f "$f" ] || [ ! -r "$f" ]; then echo "--file: no readable file '$f'" >&2; exit 2; fi
	case $(basename "$f") in
	env | check.sh | check-lib.sh | host-request* | boot-* | dmesg-boot-* | serial.log | qemu.log | qemu-cmdline.txt)
		echo "--file: '$(basename "$f")' is a name of the job directory's own" >&2; exit 2 ;;
	esac
done
if [ $BUILD_ONLY = 0 ]; then
	[ -n "$BINARY" ] || [ $NO_DEVICE = 1 ] || { echo "--binary or --no-device is required" >&2; exit 2; }
	[ -n "$CHECK" ] || [ $SHELL_MODE = 1 ] || { echo "--check is required" >&2; exit 2; }
	[ ${#SERVER_ARGS_LIST[@]} -le 1 ] || [ $NETNS_TAP = 0 ] || { echo "--netns-tap takes one server" >&2; exit 2; }
	[ -z "$CHECK" ] || [ -r "$CHECK" ] || { echo "no check script '$CHECK'" >&2; exit 2; }
	[ -z "$BINARY" ] || [ -x "$BINARY" ] || { echo "no executable '$BINARY'" >&2; exit 2; }
	[ -z "$BINARY" ] || BINARY=$(readlink -f "$BINARY")
	if [ $PEER_GUEST = 1 ]; then
		if [ -z "$PEER_CHECK" ] || [ ! -r "$PEER_CHECK" ]; then echo "--peer-guest wants a readable --peer-check" >&2; exit 2; fi
		[ "$BOOTS" = 1 ] || { echo "--peer-guest takes --boots 1" >&2; exit 2; }
		[ $SHELL_MODE = 0 ] || { echo "--peer-guest does not go with --shell" >&2; exit 2; }
		[ -z "$PEER_LOSS" ] || [[ $PEER_LOSS =~ ^([1-9]|[1-9][0-9])$ ]] ||
			{ echo "--peer-loss wants a percentage from 1 to 99" >&2; exit 2; }
		[ -z "$PEER_LOSS" ] || command -v nft >/dev/null || { echo "--peer-loss needs nft on the host" >&2; exit 2; }
		[ -z "$PEER_SERVER_ARGS" ] || [ -n "$BINARY" ] || { echo "--peer-server-args wants --binary" >&2; exit 2; }
		NETNS_ONLY=1
		# Two TCG guests share the host: give a slow boot more time before calling it a hang.
		[ -n "${ERNIC_VM_SILENT_LIMIT:-}" ] || SILENT_LIMIT=180
	else
		if [ -n "$PEER_CHECK$PEER_LOSS$PEER_SERVER_ARGS" ] || [ ${#PEER_ENV[@]} != 0 ] || [ $GUEST_NIC = 1 ] ||
		   [ $PEER_VXLAN = 1 ]; then
			echo "--peer-check, --peer-env, --guest-nic, --peer-loss, --peer-server-args and --peer-vxlan go with --peer-guest" >&2; exit 2
		fi
	fi
fi
[ -z "$BINARY" ] || [ ${#SERVER_ARGS_LIST[@]} -gt 0 ] || SERVER_ARGS_LIST=("")
# The peer guest's server is the last one; PEER_SRV is its index.
if [ -n "$PEER_SERVER_ARGS" ]; then
	PEER_SRV=${#SERVER_ARGS_LIST[@]}
	SERVER_ARGS_LIST+=("$PEER_SERVER_ARGS --tap ernic1")
fi

if [ "${ERNIC_SKIP_VM:-0}" = 1 ]; then
	echo "# skipped: ERNIC_SKIP_VM=1 is set, the guest test lane does not run"
	exit 77
fi

PASSED=0 FAILED=0
# pass NAME [FIGURE], fail NAME DETAIL. In --tour mode the lane's own passes are not shown, and
# QUIET=1 counts a result without showing it (the guest's, already shown as they came).
QUIET=0
pass() {
	PASSED=$((PASSED + 1))
	if [ $TOUR = 1 ]; then return 0; fi
	[ $QUIET = 1 ] && return 0
	echo "ok - $1${2:+ ($2)}"
}
fail() {
	FAILED=$((FAILED + 1))
	[ $QUIET = 1 ] && return 0
	if [ $TOUR = 1 ]; then tour_line FAIL "$1" "$2"; else echo "not ok - $1: $2"; fi
}
# tour_line VERDICT NAME TEXT: one step as a person reads it.
tour_line() { printf '  %-4s  %-22s %s\n' "$1" "$2" "$3"; }
STEPS_PASSED=0 STEPS_FAILED=0 # --tour: the guest's steps alone, counted as they are shown
summary() {
	if [ $TOUR = 1 ]; then
		local lane=$((FAILED - STEPS_FAILED)) more=""
		[ $lane -gt 0 ] && more="; $lane failure(s) of the run itself (above)"
		echo "tour: $STEPS_PASSED of $((STEPS_PASSED + STEPS_FAILED)) steps passed$more"
	else
		echo "$PASSED passed, $FAILED failed"
	fi
}
finish() {
	summary
	[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ] && exit 0
	exit 1
}

# ---------------------------------------------------------------------------------------------
# Processes this script starts, and their cleanup on every way out. SERVER_PIDS[i] is the server
# of device i ("" once it is gone); server i logs to SERVER_LOGS[i] and listens on SOCKS[i].
WORK="" QEMU_PID="" NETNS="" PEER_NETNS="" PEER_PID="" HTTP_PID="" WATCH_PID="" PEER_QEMU_PID=""
SERVER_PIDS=() SERVER_LOGS=() SOCKS=()

# stop_pid PID SECONDS: SIGTERM, then SIGKILL after SECONDS; returns the exit status.
stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	local i
	[ -n "$QEMU_PID" ] && stop_pid "$QEMU_PID" 5
	[ -n "$PEER_QEMU_PID" ] && stop_pid "$PEER_QEMU_PID" 5
	for i in "${!SERVER_PIDS[@]}"; do
		[ -n "${SERVER_PIDS[i]}" ] && stop_pid "${SERVER_PIDS[i]}" 5
		SERVER_PIDS[i]=""
	done
	[ -n "$PEER_PID" ] && stop_pid "$PEER_PID" 1
	[ -n "$HTTP_PID" ] && stop_pid "$HTTP_PID" 1
	[ -n "$WATCH_PID" ] && stop_pid "$WATCH_PID" 1
	for i in "${!LOAD_PIDS[@]}"; do
		kill -KILL "${LOAD_PIDS[i]}" 2>/dev/null
		wait "${LOAD_PIDS[i]}" 2>/dev/null
	done
	LOAD_PIDS=()
	[ -n "$PEER_NETNS" ] && [ "$PEER_NETNS" != "$NETNS" ] && ip netns del "$PEER_NETNS" 2>/dev/null
	[ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null
	QEMU_PID="" PEER_PID="" HTTP_PID="" WATCH_PID="" NETNS="" PEER_NETNS="" PEER_QEMU_PID=""
	if [ -n "$WORK" ] && [ -d "$WORK" ]; then
		if [ "$KEEP" = 1 ] || [ "$FAILED" -gt 0 ]; then
			echo "# job files kept in $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
}
# A signal ends the run as a failure (the job files stay for a look).
# shellcheck disable=SC2317 # called from the signal traps
interrupted() {
	trap - INT TERM HUP
	fail interrupted "received SIG$1"
	summary
	exit "$2"
}
trap cleanup EXIT
trap 'interrupted INT 130' INT
trap 'interrupted TERM 143' TERM
trap 'interrupted HUP 129' HUP

# ---------------------------------------------------------------------------------------------
if ! host_prereqs; then
	fail prerequisites "$PREREQ_REASON"
	finish
fi
if ! "$VM_DIR/build-cache.sh"; then
	fail cache-build "building the VM cache in $VM_CACHE failed (logs in $VM_LOGDIR)"
	finish
fi
[ $BUILD_ONLY = 1 ] && { echo "# cache up to date in $VM_CACHE (guest kernel $(guest_kver))"; exit 0; }
# Hold the cache shared while QEMU uses it: a concurrent build waits for the runs to end.
exec 8>"$VM_CACHE/.build.lock"
flock -s 8

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ernic-vm.XXXXXX")
chmod 755 "$WORK"
SOCK_DIR=$WORK/sock
mkdir -p "$SOCK_DIR"

# sh_quote NAME VALUE: an assignment that dash reads back verbatim.
sh_assign() { printf "%s='%s'\n" "$1" "$(printf %s "$2" | sed "s/'/'\\\\''/g")"; }

# tail_file TITLE FILE LINES: the end of a log, as commentary.
tail_file() {
	[ -s "$2" ] || return 0
	echo "# --- $1 (last $3 lines of $2)"
	tail -n "$3" "$2" | tr -d '\r' | sed 's/^/#   /'
}

# ---------------------------------------------------------------------------------------------
# The servers: started once, for every run. With --netns or --netns-tap they and QEMU live in a
# private network namespace.
NS_PREFIX=()
if [ $NETNS_TAP = 1 ] || [ $NETNS_ONLY = 1 ]; then
	NETNS=ernic-vm-$$
	if ! { ip netns add "$NETNS" && ip -n "$NETNS" link set lo up; }; then
		NETNS=""
		fail netns "cannot create a network namespace (ip netns add failed)"
		finish
	fi
	NS_PREFIX=(ip netns exec "$NETNS")
fi
PEER_NETNS=$NETNS PEER_NS_PREFIX=("${NS_PREFIX[@]}")
# --peer-guest: a bridge in the namespace with the host side's address, and a TAP for each
# guest's virtio-net NIC on it (QEMU opens them by name).
PEER_TAPS=(ernic-peer0)
[ $GUEST_NIC = 1 ] && PEER_TAPS+=(ernic-vm0)
[ -n "$PEER_SRV" ] && PEER_TAPS+=(ernic1)
if [ $PEER_GUEST = 1 ]; then
	if ! { ip -n "$NETNS" link add ernic-br0 type bridge stp_state 0 forward_delay 0 &&
	       ip -n "$NETNS" addr add 192.168.200.3/24 dev ernic-br0 && ip -n "$NETNS" link set ernic-br0 up; }; then
		fail peer-bridge "cannot create the bridge in the namespace"
		finish
	fi
	# --peer-vxlan: the peer guest (and its server) stand for a second host, a namespace of their
	# own with a bridge of its own, joined to the first only by a VXLAN tunnel over a veth pair
	# (the underlay, 10.99.0.1 and .2, jumbo frames: the tunnel's MTU leaves 1500-byte frames whole).
	if [ $PEER_VXLAN = 1 ]; then
		PEER_NETNS=ernic-vmb-$$
		if ! { ip netns add "$PEER_NETNS" && ip -n "$PEER_NETNS" link set lo up &&
		       ip -n "$PEER_NETNS" link add ernic-br0 type bridge stp_state 0 forward_delay 0 &&
		       ip -n "$PEER_NETNS" link set ernic-br0 up &&
		       ip -n "$NETNS" link add ernic-u0 mtu 9000 type veth peer name ernic-u1 mtu 9000 netns "$PEER_NETNS" &&
		       ip -n "$NETNS" addr add 10.99.0.1/30 dev ernic-u0 && ip -n "$NETNS" link set ernic-u0 up &&
		       ip -n "$PEER_NETNS" addr add 10.99.0.2/30 dev ernic-u1 && ip -n "$PEER_NETNS" link set ernic-u1 up &&
		       ip -n "$NETNS" link add ernic-vx0 type vxlan id 4242 local 10.99.0.1 remote 10.99.0.2 dstport 4789 dev ernic-u0 &&
		       ip -n "$NETNS" link set ernic-vx0 master ernic-br0 && ip -n "$NETNS" link set ernic-vx0 up &&
		       ip -n "$PEER_NETNS" link add ernic-vx1 type vxlan id 4242 local 10.99.0.2 remote 10.99.0.1 dstport 4789 dev ernic-u1 &&
		       ip -n "$PEER_NETNS" link set ernic-vx1 master ernic-br0 && ip -n "$PEER_NETNS" link set ernic-vx1 up; }; then
			fail peer-vxlan "cannot join a second namespace to the first by VXLAN"
			finish
		fi
		PEER_NS_PREFIX=(ip netns exec "$PEER_NETNS")
		echo "# peer guest: in namespace $PEER_NETNS, its bridge joined to ernic-br0 by VXLAN 4242 over a veth underlay (MTU 9000; the tunnel's $(ip -n "$NETNS" -o link show ernic-vx0 | grep -o 'mtu [0-9]*'))"
	fi
	for tap in "${PEER_TAPS[@]}"; do
		ns=$PEER_NETNS
		[ "$tap" = ernic-vm0 ] && ns=$NETNS # the main guest's own virtio-net NIC stays on its side
		if ! { ip netns exec "$ns" ip tuntap add dev "$tap" mode tap &&
		       ip -n "$ns" link set "$tap" master ernic-br0 && ip -n "$ns" link set "$tap" up; }; then
			fail peer-bridge "cannot put the TAP $tap on the bridge"
			finish
		fi
	done
	if [ -n "$PEER_LOSS" ] && ! ip netns exec "$NETNS" nft -f - <<-EOF
		table bridge ernic_loss {
			chain forward {
				type filter hook forward priority 0; policy accept;
				numgen random mod 100 < $PEER_LOSS counter drop
			}
		}
	EOF
	then
		fail peer-loss "cannot install the nftables rule dropping $PEER_LOSS% on the bridge"
		finish
	fi
	echo "# peer guest: bridge ernic-br0 (192.168.200.3/24) with ${PEER_TAPS[*]}${PEER_LOSS:+, $PEER_LOSS% of forwarded frames dropped}"
fi
if [ -n "$BINARY" ] && [ $NETNS_TAP = 1 ]; then
	if [ $PEER_GUEST = 1 ]; then
		# The server's TAP is a port of the bridge, which holds the host side's address.
		tap_ok() { ip netns exec "$NETNS" ip tuntap add dev ernic0 mode tap &&
			ip -n "$NETNS" link set ernic0 master ernic-br0 && ip -n "$NETNS" link set ernic0 up; }
	else
		tap_ok() { ip netns exec "$NETNS" ip tuntap add dev ernic0 mode tap &&
			ip -n "$NETNS" addr add 192.168.200.3/24 dev ernic0 && ip -n "$NETNS" link set ernic0 up; }
	fi
	if ! tap_ok; then
		fail netns-tap "cannot create the TAP in the namespace"
		finish
	fi
	SERVER_ARGS_LIST[0]+=" --tap ernic0"
	EXTRA_ENV+=("ERNIC_TAP_PEER=192.168.200.3" "ERNIC_TAP_PEER_HTTP=http://192.168.200.3:8080")
fi
# start_server I: server I with its arguments; passes or fails server-start (server-start-I for
# the second and later ones).
start_server() {
	local i=$1 name=server-start sock log argv why n
	[ "$i" -gt 0 ] && name=server-start-$((i + 1))
	sock=$SOCK_DIR/ernic.sock log=$WORK/server.log
	if [ "$i" = "$PEER_SRV" ]; then
		name=server-start-peer sock=$SOCK_DIR/ernic-peer.sock log=$WORK/server-peer.log
	elif [ "$i" -gt 0 ]; then
		sock=$SOCK_DIR/ernic$((i + 1)).sock log=$WORK/server$((i + 1)).log
	fi
	SOCKS[i]=$sock SERVER_LOGS[i]=$log
	read -r -a argv <<<"${SERVER_ARGS_LIST[i]//@WORK@/$WORK}"
	if [ "$i" = "$PEER_SRV" ]; then
		"${PEER_NS_PREFIX[@]}" "$BINARY" --socket "$sock" "${argv[@]}" >"$log" 2>&1 8>&- &
	else
		"${NS_PREFIX[@]}" "$BINARY" --socket "$sock" "${argv[@]}" >"$log" 2>&1 8>&- &
	fi
	SERVER_PIDS[i]=$!
	for ((n = 0; n < 300; n++)); do
		[ -S "$sock" ] && break
		kill -0 "${SERVER_PIDS[i]}" 2>/dev/null || break
		sleep 0.1
	done
	if [ -S "$sock" ]; then
		pass "$name"
		return 0
	fi
	if kill -0 "${SERVER_PIDS[i]}" 2>/dev/null; then
		why="no socket after 30 s"
	else
		wait "${SERVER_PIDS[i]}"
		why="exited with status $?"
	fi
	SERVER_PIDS[i]=""
	fail "$name" "$why: $(tail -n 3 "$log" | tr '\n' '|')"
	finish
}
# server_stats PID LOG: SIGUSR2 to the server, then the counter lines it logged and its CPU time.
server_stats() {
	local pid=$1 log=$2 n t lines
	n=$(grep -c 'dev_cmds' "$log") lines=$(wc -l <"$log")
	kill -USR2 "$pid" || return 1
	for ((t = 0; t < 50; t++)); do
		[ "$(grep -c 'dev_cmds' "$log")" -gt "$n" ] && break
		sleep 0.05
	done
	sleep 0.05 # the RDMA line follows the first one
	tail -n +$((lines + 1)) "$log" | grep -E 'dev_cmds|ionic rdma: .* admin commands'
	echo "cpu $(awk '{ print $14 + $15 }' "/proc/$pid/stat") $(getconf CLK_TCK)"
}
# tap_drops: "TAP COUNT" for each TAP of the run's namespace: the frames the kernel dropped there,
# its queue toward the reader (a server, or QEMU for a virtio-net NIC) being full (tx_dropped).
tap_drops() {
	local t ns spaces=("$NETNS")
	[ -n "$NETNS" ] || return 0
	[ -n "$PEER_NETNS" ] && [ "$PEER_NETNS" != "$NETNS" ] && spaces+=("$PEER_NETNS")
	for ns in "${spaces[@]}"; do
		for t in $(ip -n "$ns" -o link show type tun 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
			echo "$t $(ip netns exec "$ns" cat "/sys/class/net/$t/statistics/tx_dropped" 2>/dev/null || echo 0)"
		done
	done
	return 0
}
# image_blocks: for every file= image in the servers' arguments, "NAME ALLOCATED SIZE" (bytes the
# host's file system holds for it, and its size), to show a guest what its discards freed.
image_blocks() {
	local a f
	for a in "${SERVER_ARGS_LIST[@]}"; do
		for f in $(grep -o 'file=[^, ]*' <<<"${a//@WORK@/$WORK}"); do
			f=${f#file=}
			[ -f "$f" ] && echo "$(basename "$f") $(($(stat -c '%b * %B' "$f"))) $(stat -c %s "$f")"
		done
	done
	return 0
}
if [ -n "$BINARY" ]; then
	for i in "${!SERVER_ARGS_LIST[@]}"; do start_server "$i"; done
	# Requests from the guest to the host side: a check writes "signal USR1" into host-request in
	# its job directory (the first server then simulates a firmware reset); the answer is
	# host-request.done. A request is read once it is whole: over 9p the file can be seen
	# created but still empty (a request was once refused that way).
	( while :; do
		for f in "$WORK"/run*/host-request; do
			[ -f "$f" ] || continue
			req=$(cat "$f")
			[ -n "$req" ] || continue
			case $req in
			"signal USR1") kill -USR1 "${SERVER_PIDS[0]}" && echo done >"$f.done" ;;
			stats) server_stats "${SERVER_PIDS[0]}" "${SERVER_LOGS[0]}" >"$f.tmp" && mv "$f.tmp" "$f.done" ;;
			blocks) image_blocks >"$f.tmp" && mv "$f.tmp" "$f.done" ;;
			tapdrops) tap_drops >"$f.tmp" && mv "$f.tmp" "$f.done" ;;
			*) echo refused >"$f.done" ;;
			esac
			rm -f "$f"
		done
		sleep 0.2
	done ) 8>&- &
	WATCH_PID=$!
fi
if [ $NETNS_TAP = 1 ]; then
	# The host-side peer: keeps pinging the guest's address until one answer comes back.
	ip netns exec "$NETNS" sh -c 'while :; do ping -c 1 -W 1 192.168.200.2 >/dev/null 2>&1 && { echo ok; exit 0; }; sleep 1; done' \
		>"$WORK/host-peer-ping" 2>&1 8>&- &
	PEER_PID=$!
	# ... and serves 16 MiB over HTTP from the namespace's kernel TCP (super-frames into the TAP).
	mkdir -p "$WORK/peer-www"
	head -c 16777216 /dev/urandom >"$WORK/peer-www/blob"
	sha256sum "$WORK/peer-www/blob" >"$WORK/peer-www/blob.sha256"
	ip netns exec "$NETNS" python3 -m http.server --bind 192.168.200.3 --directory "$WORK/peer-www" 8080 \
		>"$WORK/peer-http.log" 2>&1 8>&- &
	HTTP_PID=$!
fi

# guest_lpj: the guests' delay-loop constant (every guest, the peer too). Under TCG the kernel
# derives the boot CPU's from the TSC (which is the host's), but calibrates every other CPU
# against the timer, and with vCPUs sharing few host CPUs that comes out wrong by large factors:
# ionic_rdma's 2 s busy-wait for an admin command (2000 x mdelay(1), in atomic context, as for
# the address handles of the CM's MADs) then lasted a few milliseconds on such a CPU, less than
# the server takes to be scheduled on a loaded host, and the driver declared its admin queue
# dead. Seen with 16 vCPUs, and with two 4-vCPU guests on two host cores (the cross-host NVMe-oF
# step). The host's TSC rate (measured; /proc/cpuinfo's "cpu MHz" when there is no compiler)
# over the guest kernel's HZ (its config in the cache, else 250) is right for every CPU.
# ERNIC_VM_LPJ overrides it (0: leave calibration alone). Computed once per runner.
GUEST_LPJ="unset"
guest_lpj() {
	local khz="" hz=250 cfg
	if [ -n "${ERNIC_VM_LPJ:-}" ]; then
		[ "$ERNIC_VM_LPJ" != 0 ] && echo "$ERNIC_VM_LPJ"
		return 0
	fi
	if [ "$GUEST_LPJ" = unset ]; then
		GUEST_LPJ=""
		if grep -qw constant_tsc /proc/cpuinfo; then
			khz=$(host_tsc_khz)
			[ -n "$khz" ] || khz=$(awk -F: '/^cpu MHz/ { printf "%d\n", $2 * 1000; exit }' /proc/cpuinfo)
			cfg=$VM_CACHE/hostroot/usr/src/linux-headers-$(cat "$VM_CACHE/kver" 2>/dev/null)/.config
			[ -r "$cfg" ] && hz=$(sed -n 's/^CONFIG_HZ=\([0-9]*\)$/\1/p' "$cfg")
			[ -n "$khz" ] && [ "${hz:-0}" -gt 0 ] && GUEST_LPJ=$((khz * 1000 / hz))
		fi
	fi
	[ -n "$GUEST_LPJ" ] && echo "$GUEST_LPJ"
	return 0
}
# host_tsc_khz: the host's TSC rate in kHz, counted over 200 ms of CLOCK_MONOTONIC_RAW by a
# few lines of C (nothing when there is no compiler or the count fails).
host_tsc_khz() {
	local src=$WORK/tsc-khz.c
	cat >"$src" <<'EOC'
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
int main(void)
{
	double t0 = now(), t1;
	unsigned long long c0 = __rdtsc(), c1;
	while (now() - t0 < 0.2)
		;
	c1 = __rdtsc();
	t1 = now();
	printf("%.0f\n", (double)(c1 - c0) / (t1 - t0) / 1e3);
	return 0;
}
EOC
	"${CC:-cc}" -O2 -o "$WORK/tsc-khz" "$src" 2>/dev/null && "$WORK/tsc-khz"
}
# qemu_args JOB BOOTS: the QEMU command line (paths as seen inside the chroot).
qemu_args() {
	local boots=$2 mem=${ERNIC_VM_MEM:-2G} append="console=ttyS0 quiet panic=-1" lpj
	[ "${ERNIC_VM_VERBOSE:-0}" = 1 ] && append="console=ttyS0 earlyprintk=serial,ttyS0 panic=-1"
	lpj=$(guest_lpj)
	[ -n "$lpj" ] && append="$append lpj=$lpj"
	[ -n "${ERNIC_VM_APPEND:-}" ] && append="$append $ERNIC_VM_APPEND"
	# shellcheck disable=SC2054 # the commas belong to QEMU option values
	QEMU=(qemu-system-x86_64 -name ernic-vm
		-accel "${ERNIC_VM_ACCEL:-tcg,thread=multi}" -cpu "${ERNIC_VM_CPU:-max}"
		-smp "${ERNIC_VM_SMP:-4}" -m "$mem"
		-object "memory-backend-memfd,id=ram,size=$mem,share=on"
		-machine q35,memory-backend=ram
		-nodefaults -display none
		-kernel /img/vmlinux -initrd /img/initrd.cpio
		-drive file=/img/rootfs.ext4,if=virtio,format=raw,snapshot=on
		-virtfs local,path=/job,mount_tag=ernicjob,security_model=none,id=job)
	# Without -no-reboot a guest reboot restarts the machine in the same QEMU process; runs of a
	# single boot keep it, so that an unexpected reboot (a panic) ends QEMU at once.
	[ "$boots" -gt 1 ] || QEMU+=(-no-reboot)
	if [ -n "$QEMU_EXTRA" ]; then
		local extra
		read -r -a extra <<<"$QEMU_EXTRA"
		QEMU+=("${extra[@]}")
	fi
	if [ $SHELL_MODE = 1 ]; then
		QEMU+=(-serial mon:stdio -append "$append ernic.shell=1")
	else
		QEMU+=(-serial file:/job/serial.log -monitor unix:/job/monitor.sock,server=on,wait=off -append "$append")
	fi
	local i serial
	for i in "${!DISKS[@]}"; do
		serial=$(basename "${DISKS[i]}")
		serial=${serial%.*}
		QEMU+=(-drive "file=/disk$i/$(basename "${DISKS[i]}"),if=none,id=disk$i,format=raw,cache=writeback,aio=threads"
			-device "virtio-blk-pci,drive=disk$i,serial=${serial:0:20}")
	done
	# shellcheck disable=SC2054 # the commas belong to QEMU option values
	[ $GUEST_NIC = 1 ] && QEMU+=(-netdev tap,id=gnic,ifname=ernic-vm0,script=no,downscript=no
		-device virtio-net-pci,netdev=gnic,mac=52:54:00:c8:00:02)
	if [ $NO_DEVICE = 0 ]; then
		local i
		for i in "${!SOCKS[@]}"; do
			[ "$i" = "$PEER_SRV" ] || QEMU+=(-device "$(vfio_user_dev "${SOCKS[i]}")")
		done
	fi
}

# vfio_user_dev SOCK: QEMU's -device value for the vfio-user device served on SOCK (under /sock).
vfio_user_dev() { echo "{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"/sock/$(basename "$1")\"}}"; }
BINDS=(-b "$IMGDIR:/img:ro" -b "$SOCK_DIR:/sock")
for i in "${!DISKS[@]}"; do BINDS+=(-b "$(cd "$(dirname "${DISKS[i]}")" && pwd):/disk$i"); done

# prepare_job JOB RUN: the job directory of a run: the check script and its library, the
# --file files, and the env file the guest's init reads first.
prepare_job() {
	local job=$1 f e
	mkdir -p "$job"
	[ -z "$CHECK" ] || install -m 755 "$CHECK" "$job/check.sh"
	install -m 644 "$VM_DIR/guest/check-lib.sh" "$job/check-lib.sh"
	for f in "${FILES[@]}"; do install -m 644 "$f" "$job/$(basename "$f")"; done
	{
		sh_assign ERNIC_BOOTS "$BOOTS"
		sh_assign ERNIC_RUN "$2"
		sh_assign ERNIC_RUNS "$RUNS"
		sh_assign ERNIC_CHECK_TIMEOUT "$CHECK_TIMEOUT"
		sh_assign ERNIC_DEVICE "$((1 - NO_DEVICE))"
		sh_assign ERNIC_FW_VERSION "$FW_VERSION"
		for e in "${EXTRA_ENV[@]}"; do sh_assign "${e%%=*}" "${e#*=}"; done
		if [ $PEER_GUEST = 1 ]; then
			sh_assign ERNIC_SIDE main
			sh_assign ERNIC_SYNC /mnt/job/peer/sync
			sh_assign ERNIC_MAIN_IP 192.168.200.2
			sh_assign ERNIC_PEER_IP 192.168.200.4
			[ $GUEST_NIC = 1 ] && sh_assign ERNIC_NIC_MAC 52:54:00:c8:00:02
			[ -n "$PEER_LOSS" ] && sh_assign ERNIC_BRIDGE_LOSS "$PEER_LOSS"
		fi
	} >"$job/env"
}

# ---------------------------------------------------------------------------------------------
# The peer guest (--peer-guest): its job directory is JOB/peer (the first guest sees it at
# /mnt/job/peer), its coordination directory JOB/peer/sync.
# prepare_peer_job DIR RUN: a fresh job directory for the peer.
prepare_peer_job() {
	local job=$1 f e
	rm -rf "$job"
	mkdir -p "$job/sync"
	chmod 777 "$job/sync"
	install -m 755 "$PEER_CHECK" "$job/check.sh"
	install -m 644 "$VM_DIR/guest/check-lib.sh" "$job/check-lib.sh"
	for f in "${FILES[@]}"; do install -m 644 "$f" "$job/$(basename "$f")"; done
	{
		sh_assign ERNIC_BOOTS 1
		sh_assign ERNIC_RUN "$2"
		sh_assign ERNIC_RUNS "$RUNS"
		sh_assign ERNIC_CHECK_TIMEOUT "$CHECK_TIMEOUT"
		sh_assign ERNIC_DEVICE 0
		sh_assign ERNIC_FW_VERSION "$FW_VERSION"
		sh_assign ERNIC_SIDE peer
		sh_assign ERNIC_SYNC /mnt/job/sync
		sh_assign ERNIC_MAIN_IP 192.168.200.2
		sh_assign ERNIC_PEER_IP 192.168.200.4
		sh_assign ERNIC_NIC_MAC 52:54:00:c8:00:04
		[ -n "$PEER_LOSS" ] && sh_assign ERNIC_BRIDGE_LOSS "$PEER_LOSS"
		for e in "${PEER_ENV[@]}"; do sh_assign "${e%%=*}" "${e#*=}"; done
	} >"$job/env"
}
# start_peer JOB: boots the peer guest of the run whose job directory is JOB (PEER_QEMU_PID).
start_peer() {
	local pjob=$1/peer append="console=ttyS0 quiet panic=-1" mem=${ERNIC_VM_PEER_MEM:-1536M} lpj
	[ "${ERNIC_VM_VERBOSE:-0}" = 1 ] && append="console=ttyS0 earlyprintk=serial,ttyS0 panic=-1"
	lpj=$(guest_lpj)
	[ -n "$lpj" ] && append="$append lpj=$lpj"
	prepare_peer_job "$pjob" "$run"
	# shellcheck disable=SC2054 # the commas belong to QEMU option values
	local q=(qemu-system-x86_64 -name ernic-peer
		-accel "${ERNIC_VM_ACCEL:-tcg,thread=multi}" -cpu "${ERNIC_VM_CPU:-max}"
		-smp "${ERNIC_VM_PEER_SMP:-2}" -m "$mem" -machine q35
		-nodefaults -display none -no-reboot
		-kernel /img/vmlinux -initrd /img/initrd.cpio
		-drive file=/img/rootfs.ext4,if=virtio,format=raw,snapshot=on
		-virtfs local,path=/job,mount_tag=ernicjob,security_model=none,id=job
		-netdev tap,id=pnic,ifname=ernic-peer0,script=no,downscript=no
		-device virtio-net-pci,netdev=pnic,mac=52:54:00:c8:00:04
		-serial file:/job/serial.log -monitor unix:/job/monitor.sock,server=on,wait=off
		-append "$append")
	# A device of its own (--peer-server-args): the server reaches guest memory through a memfd.
	# shellcheck disable=SC2054 # the commas belong to QEMU option values
	[ -n "$PEER_SRV" ] && q+=(-object "memory-backend-memfd,id=ram,size=$mem,share=on"
		-machine memory-backend=ram -device "$(vfio_user_dev "${SOCKS[PEER_SRV]}")")
	printf '%q ' "${q[@]}" >"$pjob/qemu-cmdline.txt"
	CHROOT_NETNS=$PEER_NETNS chroot_exec "$HOSTROOT" -b "$IMGDIR:/img:ro" -b "$SOCK_DIR:/sock" -b "$pjob:/job" -- "${q[@]}" \
		>"$pjob/qemu.log" 2>&1 8>&- &
	PEER_QEMU_PID=$!
}

# stop_servers: SIGTERM to every server; each must exit 0 (server-stop, server-stop-2, ...).
stop_servers() {
	local i name src
	for i in "${!SERVER_PIDS[@]}"; do
		[ -n "${SERVER_PIDS[i]}" ] || continue
		name=server-stop
		[ "$i" -gt 0 ] && name=server-stop-$((i + 1))
		[ "$i" = "$PEER_SRV" ] && name=server-stop-peer
		stop_pid "${SERVER_PIDS[i]}" 15
		src=$?
		SERVER_PIDS[i]=""
		if [ $src = 0 ]; then
			pass "$name"
		else
			fail "$name" "exit status $src after SIGTERM"
			tail_file "server" "${SERVER_LOGS[i]}" 15
		fi
	done
}

guest_lpj >/dev/null # once, here: the command substitutions in qemu_args and start_peer reuse it

if [ $SHELL_MODE = 1 ]; then
	JOB=$WORK/run1
	prepare_job "$JOB" 1
	qemu_args "$JOB" 1
	KEEP=1
	for log in "${SERVER_LOGS[@]}"; do echo "# server log: $log"; done
	echo "# guest console follows (Ctrl-A X quits QEMU); the host directory $JOB is /mnt/job"
	CHROOT_NETNS=$NETNS chroot_run "$HOSTROOT" "${BINDS[@]}" -b "$JOB:/job" -- "${QEMU[@]}"
	stop_servers
	[ $FAILED = 0 ] && [ ${#SERVER_LOGS[@]} -gt 0 ] && echo "# the server stopped cleanly; its log stays in ${SERVER_LOGS[0]}"
	[ $FAILED = 0 ]
	exit
fi

# hang_report JOB WHY: before a stuck QEMU is killed, where its vCPUs are (HMP "info cpus" and
# "info registers -a" through the run's monitor socket) into JOB/hang-N.txt, and one # line.
hang_report() {
	local n=1 f
	while [ -e "$1/hang-$n.txt" ]; do n=$((n + 1)); done
	f=$1/hang-$n.txt
	python3 - "$1/monitor.sock" "info cpus" "info registers -a" >"$f" 2>&1 <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
def until_prompt():
    b = b""
    while not b.endswith(b"(qemu) "):
        d = s.recv(65536)
        if not d:
            break
        b += d
    return b.decode(errors="replace")
until_prompt()
for cmd in sys.argv[2:]:
    s.sendall(cmd.encode() + b"\n")
    out = until_prompt().replace("\r", "").rsplit("(qemu) ", 1)[0]
    print("(qemu) " + cmd + "\n" + out.split("\n", 1)[-1])  # without the monitor's echo
PY
	echo "# $2: vCPU state in $f: $(grep -o 'RIP=[0-9a-f]*' "$f" | tr '\n' ' ')"
}

# live_print JOB: in --tour mode, the guest's CHECK lines that came since the last call.
declare -A LIVE_SEEN=()
live_print() {
	local f have n verdict name rest
	[ $TOUR = 1 ] || return 0
	for f in "$1"/boot-*.out; do
		[ -f "$f" ] || continue
		have=$(wc -l <"$f")
		n=${LIVE_SEEN[$f]:-0}
		[ "$have" -gt "$n" ] || continue
		LIVE_SEEN[$f]=$have
		while read -r verdict name rest; do
			case $verdict in
			PASS) STEPS_PASSED=$((STEPS_PASSED + 1)); tour_line "$verdict" "$name" "$rest" ;;
			FAIL) STEPS_FAILED=$((STEPS_FAILED + 1)); tour_line "$verdict" "$name" "$rest" ;;
			NOTE) printf '        %s %s\n' "$name" "$rest" ;;
			esac
		done < <(sed -n "$((n + 1)),${have}p" "$f" | tr -d '\r' | sed -n 's/^CHECK \(PASS\|FAIL\|NOTE\) /\1 /p')
	done
}

# pair_progress JOB: with --peer-guest, one "#" line when a guest reaches its checks and one per
# "CHECK NOTE" either guest's check prints (in --tour mode the first guest's are shown already).
declare -A NOTES_SEEN=()
pair_progress() {
	local who f have n rest
	[ $PEER_GUEST = 1 ] || return 0
	for who in main peer; do
		f=$1/boot-1.out
		[ $who = peer ] && f=$1/peer/boot-1.out
		if [ -z "${NOTES_SEEN[$who.up]:-}" ] && [ -e "${f%.out}.started" ]; then
			NOTES_SEEN[$who.up]=1
			echo "# run $run: $who guest up after $(($(date +%s) - t0))s, running its checks"
		fi
		[ $TOUR = 1 ] && [ $who = main ] && continue
		[ -f "$f" ] || continue
		have=$(wc -l <"$f")
		n=${NOTES_SEEN[$who]:-0}
		[ "$have" -gt "$n" ] || continue
		NOTES_SEEN[$who]=$have
		while read -r rest; do
			echo "# $who: $rest"
		done < <(sed -n "$((n + 1)),${have}p" "$f" | tr -d '\r' | sed -n 's/^CHECK NOTE //p')
	done
}

# peer_wait JOB SECONDS [restart]: after the first guest's QEMU ended, the peer's gets SECONDS
# to end by itself (it is killed then, where its vCPUs were recorded unless the run is being
# restarted); PEER_RC its status, PEER_KILLED 1 when it had to be killed.
peer_wait() {
	local deadline=$(($(date +%s) + $2))
	PEER_KILLED=0
	while kill -0 "$PEER_QEMU_PID" 2>/dev/null; do
		pair_progress "$1"
		if [ "$(date +%s)" -ge $deadline ]; then
			PEER_KILLED=1
			[ "${3:-}" = restart ] ||
				hang_report "$1/peer" "peer QEMU still running ${2}s after the first guest's ended"
			stop_pid "$PEER_QEMU_PID" 5
			break
		fi
		sleep 0.5
	done
	wait "$PEER_QEMU_PID" 2>/dev/null
	PEER_RC=$?
	PEER_QEMU_PID=""
	pair_progress "$1"
}

# guest_checks OUT NAME: each "CHECK PASS|FAIL check detail" line of a guest's output OUT as the
# check NAME.check; counts them in the caller's seen, and sets its failed_here on a failure.
guest_checks() {
	local verdict check detail
	while read -r verdict check detail; do
		seen=$((seen + 1))
		if [ "$verdict" = PASS ]; then
			pass "$2.$check" "$detail"
		else
			failed_here=1
			fail "$2.$check" "${detail:-failed}"
		fi
	done < <(tr -d '\r' <"$1" 2>/dev/null | sed -n 's/^CHECK \(PASS\|FAIL\) /\1 /p')
}

# peer_results JOB: the peer guest's checks (runR.peer.CHECK), runR.peer.booted, .checks, .qemu.
peer_results() {
	local pjob=$1/peer name=run$run.peer seen=0 failed_here=0 rc
	if [ ! -e "$pjob/boot-1.done" ]; then
		if [ -e "$pjob/boot-1.started" ]; then
			fail "$name.booted" "the peer's checks never finished (QEMU exit status $PEER_RC)"
		else
			fail "$name.booted" "the peer guest never got to its checks (QEMU exit status $PEER_RC)"
		fi
		[ -s "$pjob/boot-1.out" ] && tail_file "peer check output" "$pjob/boot-1.out" 15
	else
		pass "$name.booted"
		rc=$(cat "$pjob/boot-1.done")
		guest_checks "$pjob/boot-1.out" "$name"
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			fail "$name.checks" "the peer's check script timed out after ${CHECK_TIMEOUT}s ($seen CHECK lines before)"
		elif [ $seen = 0 ]; then
			fail "$name.checks" "the peer's check script printed no CHECK line (exit status $rc)"
		elif [ "$rc" != 0 ] && [ $failed_here = 0 ]; then
			fail "$name.checks" "the peer's check script exited with status $rc"
		fi
	fi
	if [ "$PEER_KILLED" = 1 ]; then
		fail "$name.qemu" "still running after the first guest's QEMU ended, killed"
	elif [ "$PEER_RC" != 0 ]; then
		fail "$name.qemu" "exit status $PEER_RC: $(grep -v '^$' "$pjob/qemu.log" | tail -n 2 | tr '\n' '|')"
	else
		pass "$name.qemu"
	fi
}

# ---------------------------------------------------------------------------------------------
# The host's load (--host-load): busy loops beside the guests, stopped by cleanup.
case $HOST_LOAD in '' | *[!0-9]*) echo "run-vm-test.sh: --host-load takes a number, not '$HOST_LOAD'" >&2; exit 2 ;; esac
for ((i = 0; i < HOST_LOAD; i++)); do
	( while :; do :; done ) 8>&- &
	LOAD_PIDS+=($!)
done
[ "$HOST_LOAD" -gt 0 ] && echo "# host load: $HOST_LOAD busy loops beside the guests"

# ---------------------------------------------------------------------------------------------
# The runs.
for ((run = 1; run <= RUNS; run++)); do
	JOB=$WORK/run$run
	prepare_job "$JOB" "$run"
	qemu_args "$JOB" "$BOOTS"
	printf '%q ' "${QEMU[@]}" >"$JOB/qemu-cmdline.txt"

	limit=$((BOOTS * TIMEOUT))
	for attempt in 1 2; do
		rm -f "$JOB"/boot-*.started "$JOB"/boot-*.done "$JOB"/boot-*.out "$JOB/serial.log"
		LIVE_SEEN=() STEPS_PASSED=0 STEPS_FAILED=0
		t0=$(date +%s)
		if [ $TOUR = 1 ]; then
			accel=${ERNIC_VM_ACCEL:-tcg}
			echo "guest: booting (QEMU ${accel%%,*}, ${ERNIC_VM_SMP:-4} vCPUs, ${ERNIC_VM_MEM:-2G} of RAM)"
		fi
		if [ $PEER_GUEST = 1 ]; then
			# The peer first (it has less to load), in every attempt: a restarted run restarts both.
			NOTES_SEEN=()
			start_peer "$JOB"
			echo "# run $run: peer guest booting (${ERNIC_VM_PEER_SMP:-2} vCPUs, ${ERNIC_VM_PEER_MEM:-1536M}, virtio-net on ernic-br0${PEER_SRV:+, a vfio-user device of its own}), then the guest (${ERNIC_VM_SMP:-4} vCPUs, ${ERNIC_VM_MEM:-2G})"
		fi
		CHROOT_NETNS=$NETNS chroot_exec "$HOSTROOT" "${BINDS[@]}" -b "$JOB:/job" -- "${QEMU[@]}" >"$JOB/qemu.log" 2>&1 8>&- &
		QEMU_PID=$!
		timed_out=0 silent=0 last_size=-1 last_change=$t0 announced=0 peer_size=-1 peer_change=$t0
		while kill -0 "$QEMU_PID" 2>/dev/null; do
			now=$(date +%s)
			el=$((now - t0))
			pair_progress "$JOB"
			if [ $TOUR = 1 ] && [ $announced = 0 ] && [ -e "$JOB/boot-1.started" ]; then
				echo "guest: up after ${el}s; the steps follow"
				announced=1
			fi
			live_print "$JOB"
			if [ $el -ge "$limit" ]; then
				timed_out=1
				hang_report "$JOB" "QEMU still running after ${el}s"
				stop_pid "$QEMU_PID" 5
				break
			fi
			# Under TCG a guest now and then hangs with its console silent: at the first start, or
			# in the firmware after a reboot (all vCPUs spinning, no device access, the server
			# idle). Outside a boot's checks (as many boots started as done) a console silent for
			# SILENT_LIMIT seconds is such a hang; the run is started again from its first boot,
			# once.
			size=$(stat -c %s "$JOB/serial.log" 2>/dev/null || echo 0)
			if [ "$size" != "$last_size" ]; then
				last_size=$size last_change=$now
			fi
			if [ $attempt = 1 ] && [ $((now - last_change)) -ge "$SILENT_LIMIT" ] &&
				[ "$(find "$JOB" -maxdepth 1 -name 'boot-*.started' | wc -l)" = \
				  "$(find "$JOB" -maxdepth 1 -name 'boot-*.done' | wc -l)" ]; then
				silent=1
				hang_report "$JOB" "console silent for ${SILENT_LIMIT}s"
				stop_pid "$QEMU_PID" 5
				break
			fi
			# The peer guest can hang the same way before its checks.
			if [ $PEER_GUEST = 1 ]; then
				size=$(stat -c %s "$JOB/peer/serial.log" 2>/dev/null || echo 0)
				if [ "$size" != "$peer_size" ]; then
					peer_size=$size peer_change=$now
				fi
				if [ $attempt = 1 ] && [ $((now - peer_change)) -ge "$SILENT_LIMIT" ] &&
					[ ! -e "$JOB/peer/boot-1.started" ]; then
					silent=1
					hang_report "$JOB/peer" "the peer's console silent for ${SILENT_LIMIT}s"
					stop_pid "$QEMU_PID" 5
					break
				fi
			fi
			sleep 0.5
		done
		wait "$QEMU_PID" 2>/dev/null
		qrc=$?
		QEMU_PID=""
		live_print "$JOB"
		# A guest kernel that panicked in early boot, before its checks began and with no ionic
		# code anywhere on its console, is the emulator's fault, not the device's (seen once with
		# the machine loaded: "Oops: int3" inside kernel text the kernel was patching on another
		# vCPU, TCG's cross-modifying code): the run is started again from its first boot, once.
		early_panic=0
		if [ $attempt = 1 ] && [ $silent = 0 ] && [ $timed_out = 0 ] && [ ! -e "$JOB/boot-1.started" ] &&
			grep -q 'Kernel panic - not syncing' "$JOB/serial.log" 2>/dev/null &&
			! grep -qi 'ionic' "$JOB/serial.log"; then
			early_panic=1 silent=1
			cp "$JOB/serial.log" "$JOB/early-panic.log" # the next attempt starts a new console log
		fi
		if [ $PEER_GUEST = 1 ]; then
			# The peer ends its checks about when the first guest does; a killed or restarted
			# first guest takes the peer with it.
			if [ $silent = 1 ]; then
				peer_wait "$JOB" 0 restart
			elif [ $timed_out = 1 ]; then
				peer_wait "$JOB" 0
			else
				peer_wait "$JOB" 180
			fi
		fi
		[ $silent = 1 ] || break
		if [ $early_panic = 1 ]; then
			echo "# run $run: the guest kernel panicked before its checks, with no ionic code on its console (an emulator fault under TCG); starting the run again"
		else
			echo "# run $run: a console was silent for ${SILENT_LIMIT}s outside its checks (a TCG hang in firmware or early boot); starting the run again"
		fi
	done
	wall=$(($(date +%s) - t0))
	if [ $timed_out = 1 ]; then
		echo "# run $run: QEMU killed after ${wall}s ($BOOTS boot(s) expected)"
	elif [ $TOUR = 1 ]; then
		echo "guest: powered off after ${wall}s"
	else
		echo "# run $run: QEMU ran ${wall}s for $BOOTS boot(s), exit status $qrc"
	fi
	failed_before=$FAILED

	for ((boot = 1; boot <= BOOTS; boot++)); do
		name=run$run.boot$boot
		if [ ! -e "$JOB/boot-$boot.done" ]; then
			if [ -e "$JOB/boot-$boot.started" ]; then
				why="the checks of this boot never finished"
			else
				why="the guest never got to its checks"
			fi
			if [ $timed_out = 1 ]; then
				why="$why (QEMU killed after the ${limit}s limit)"
			else
				why="$why (QEMU exit status $qrc)"
			fi
			fail "$name.booted" "$why"
			# Whatever the check script printed before it got stuck.
			[ -s "$JOB/boot-$boot.out" ] && tail_file "boot $boot check output" "$JOB/boot-$boot.out" 15
			break
		fi
		pass "$name.booted"
		rc=$(cat "$JOB/boot-$boot.done")
		seen=0 failed_here=0
		QUIET=$TOUR # --tour showed them as they came
		guest_checks "$JOB/boot-$boot.out" "$name"
		QUIET=0
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			fail "$name.checks" "the check script timed out after ${CHECK_TIMEOUT}s ($seen CHECK lines before)"
		elif [ $seen = 0 ]; then
			fail "$name.checks" "the check script printed no CHECK line (exit status $rc)"
		elif [ "$rc" != 0 ] && [ $failed_here = 0 ]; then
			fail "$name.checks" "the check script exited with status $rc"
		fi
	done

	if [ $timed_out = 1 ]; then
		fail "run$run.qemu" "still running after ${limit}s (${BOOTS} x --timeout $TIMEOUT), killed"
	elif [ $qrc != 0 ]; then
		fail "run$run.qemu" "exit status $qrc: $(grep -v '^$' "$JOB/qemu.log" | tail -n 2 | tr '\n' '|')"
	else
		pass "run$run.qemu"
	fi
	if [ $PEER_GUEST = 1 ]; then
		peer_failed_before=$FAILED
		peer_results "$JOB"
		if [ "$FAILED" -gt "$peer_failed_before" ]; then
			tail_file "run $run peer serial console" "$JOB/peer/serial.log" 30
			tail_file "run $run peer guest kernel log" "$JOB/peer/dmesg-boot-1.txt" 20
			tail_file "run $run peer QEMU" "$JOB/peer/qemu.log" 10
		fi
	fi

	server_gone=0
	for i in "${!SERVER_PIDS[@]}"; do
		[ -n "${SERVER_PIDS[i]}" ] || continue
		name=server-alive-after-run$run
		[ "$i" -gt 0 ] && name=server-$((i + 1))-alive-after-run$run
		[ "$i" = "$PEER_SRV" ] && name=server-peer-alive-after-run$run
		if kill -0 "${SERVER_PIDS[i]}" 2>/dev/null; then
			pass "$name"
		else
			wait "${SERVER_PIDS[i]}"
			fail "$name" "the server exited with status $?"
			SERVER_PIDS[i]=""
			server_gone=1
		fi
	done

	if [ "$FAILED" -gt "$failed_before" ]; then
		tail_file "run $run serial console" "$JOB/serial.log" 40
		for ((b = BOOTS; b >= 1; b--)); do
			[ -e "$JOB/dmesg-boot-$b.txt" ] || continue
			tail_file "run $run boot $b guest kernel log" "$JOB/dmesg-boot-$b.txt" 25
			break
		done
		tail_file "run $run QEMU" "$JOB/qemu.log" 10
		for log in "${SERVER_LOGS[@]}"; do tail_file "server" "$log" 15; done
	fi
	[ $server_gone = 1 ] && break
done

# ---------------------------------------------------------------------------------------------
if [ $NETNS_TAP = 1 ]; then
	grep -qx ok "$WORK/host-peer-ping" && pass host-peer-ping || fail host-peer-ping "the guest never answered the host-side peer"
	stop_pid "$PEER_PID" 1
	PEER_PID=""
fi
if [ -n "$PEER_LOSS" ]; then
	# How many frames the loss rule dropped (its counter), and of how many the bridge forwarded.
	dropped=$(ip netns exec "$NETNS" nft list chain bridge ernic_loss forward 2>/dev/null |
		sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' | head -n 1)
	if [ "${dropped:-0}" -gt 0 ]; then
		pass peer-loss "$dropped frames dropped ($PEER_LOSS%)"
	else
		fail peer-loss "the nftables rule dropped nothing"
	fi
fi
[ -n "$NETNS" ] && echo "# frames dropped at the TAPs (tx_dropped): $(tap_drops | tr '\n' ' ')"
# --peer-vxlan: the guests' traffic went through the tunnel, both ways (its packet counters).
if [ $PEER_VXLAN = 1 ] && [ -n "$NETNS" ]; then
	vx_rx=$(ip netns exec "$NETNS" cat /sys/class/net/ernic-vx0/statistics/rx_packets 2>/dev/null || echo 0)
	vx_tx=$(ip netns exec "$NETNS" cat /sys/class/net/ernic-vx0/statistics/tx_packets 2>/dev/null || echo 0)
	if [ "$vx_rx" -gt 0 ] && [ "$vx_tx" -gt 0 ]; then
		pass peer-vxlan-traffic "$vx_tx packets into the tunnel, $vx_rx out of it"
	else
		fail peer-vxlan-traffic "the tunnel carried $vx_tx packets in and $vx_rx out"
	fi
fi
stop_servers
if [ -n "$SERVER_LOG_RE" ] && [ ${#SERVER_LOGS[@]} -gt 0 ]; then
	if grep -Eq -- "$SERVER_LOG_RE" "${SERVER_LOGS[0]}"; then
		pass server-log
	else
		fail server-log "the server's log has no line matching '$SERVER_LOG_RE'"
		tail_file "server" "${SERVER_LOGS[0]}" 5
	fi
fi
if [ -n "$PEER_SERVER_LOG_RE" ] && [ -n "$PEER_SRV" ] && [ -n "${SERVER_LOGS[PEER_SRV]:-}" ]; then
	if grep -Eq -- "$PEER_SERVER_LOG_RE" "${SERVER_LOGS[PEER_SRV]}"; then
		pass server-log-peer
	else
		fail server-log-peer "the peer's server's log has no line matching '$PEER_SERVER_LOG_RE'"
		tail_file "server-peer" "${SERVER_LOGS[PEER_SRV]}" 5
	fi
fi
finish
