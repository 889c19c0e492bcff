#!/usr/bin/env bash
# run-vm-test.sh: boot a real Linux guest against rocm-ernic and run a guest check script.
#
#   tests/vm/run-vm-test.sh --binary build/rocm-ernic --check tests/vm/checks/ionic-probe.sh \
#       [--boots N] [--runs N] [--server-args "ARGS"] [--fw-version V] [--env NAME=VALUE]...
#       [--file PATH]... [--timeout SECS] [--check-timeout SECS] [--keep]
#   tests/vm/run-vm-test.sh --no-device --check tests/vm/checks/lane-selftest.sh [...]
#   tests/vm/run-vm-test.sh [--binary B | --no-device] --shell     interactive guest console
#   tests/vm/run-vm-test.sh --build-only                           just bring the cache up to date
#   A guest check may ask the host to signal the server: it writes "signal USR1" into
#   /mnt/job/host-request and waits for host-request.done (SIGUSR1 = a simulated firmware reset).
#   --qemu-args "ARGS": extra QEMU arguments (split at spaces), e.g. a virtio-net NIC for comparisons.
#   --file PATH (repeatable): copy PATH into every run's job directory under its own name, next to
#   check.sh (the check finds it in "$(dirname "$0")"), e.g. a source file the guest compiles.
#   --server-log REGEX: after the server stopped, its log must match REGEX (grep -E), e.g. its
#   closing statistics (check server-log).
#   --netns-tap: run the server in a private network namespace joined (--tap ernic0) to a TAP
#   whose host side is 192.168.200.3/24; the guest checks see ERNIC_TAP_PEER=192.168.200.3, and a
#   host-side peer in the namespace pings the guest (192.168.200.2) while it runs (check
#   host-peer-ping).
#
# What it does: checks the host prerequisites and brings the cache up to date (build-cache.sh),
# starts the server once (BINARY --socket SOCK ARGS, SOCK in a private temporary directory),
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
# ERNIC_VM_MEM (2G), ERNIC_SKIP_VM=1 (skip).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib/common.sh
. "$(dirname "$0")/lib/common.sh"

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

BINARY="" CHECK="" BOOTS=1 RUNS=1 SERVER_ARGS="" SERVER_LOG_RE="" NO_DEVICE=0 SHELL_MODE=0 BUILD_ONLY=0 KEEP=0 NETNS_TAP=0 QEMU_EXTRA=""
FW_VERSION=${ERNIC_FW_VERSION:-1.0.0-ernic}
TIMEOUT=300 CHECK_TIMEOUT=180 SILENT_LIMIT=${ERNIC_VM_SILENT_LIMIT:-90}
EXTRA_ENV=() FILES=()
while [ $# -gt 0 ]; do
	case $1 in
	--binary) BINARY=${2:?}; shift 2 ;;
	--check) CHECK=${2:?}; shift 2 ;;
	--boots) BOOTS=${2:?}; shift 2 ;;
	--runs) RUNS=${2:?}; shift 2 ;;
	--server-args) SERVER_ARGS=${2?}; shift 2 ;;
	--server-log) SERVER_LOG_RE=${2:?}; shift 2 ;;
	--fw-version) FW_VERSION=${2:?}; shift 2 ;;
	--env) EXTRA_ENV+=("${2:?}"); shift 2 ;;
	--file) FILES+=("${2:?}"); shift 2 ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--check-timeout) CHECK_TIMEOUT=${2:?}; shift 2 ;;
	--no-device) NO_DEVICE=1; shift ;;
	--shell) SHELL_MODE=1; shift ;;
	--build-only) BUILD_ONLY=1; shift ;;
	--keep) KEEP=1; shift ;;
	--netns-tap) NETNS_TAP=1; shift ;;
	--qemu-args) QEMU_EXTRA=${2?}; shift 2 ;;
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
	[ -z "$CHECK" ] || [ -r "$CHECK" ] || { echo "no check script '$CHECK'" >&2; exit 2; }
	[ -z "$BINARY" ] || [ -x "$BINARY" ] || { echo "no executable '$BINARY'" >&2; exit 2; }
	[ -z "$BINARY" ] || BINARY=$(readlink -f "$BINARY")
fi
read -r -a SERVER_ARGV <<<"$SERVER_ARGS"

if [ "${ERNIC_SKIP_VM:-0}" = 1 ]; then
	echo "# skipped: ERNIC_SKIP_VM=1 is set, the guest test lane does not run"
	exit 77
fi

PASSED=0 FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $1: $2"; }
finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ] && exit 0
	exit 1
}

# ---------------------------------------------------------------------------------------------
# Processes this script starts, and their cleanup on every way out.
WORK="" SERVER_PID="" QEMU_PID="" NETNS="" PEER_PID="" WATCH_PID=""

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
	[ -n "$QEMU_PID" ] && stop_pid "$QEMU_PID" 5
	[ -n "$SERVER_PID" ] && stop_pid "$SERVER_PID" 5
	[ -n "$PEER_PID" ] && stop_pid "$PEER_PID" 1
	[ -n "$WATCH_PID" ] && stop_pid "$WATCH_PID" 1
	[ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null
	QEMU_PID="" SERVER_PID="" PEER_PID="" NETNS=""
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
	echo "$PASSED passed, $FAILED failed"
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
SOCK=$SOCK_DIR/ernic.sock
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
# The server: started once, for every run.
SERVER_PREFIX=()
if [ -n "$BINARY" ] && [ $NETNS_TAP = 1 ]; then
	NETNS=ernic-vm-$$
	if ! { ip netns add "$NETNS" && ip -n "$NETNS" link set lo up &&
	       ip netns exec "$NETNS" ip tuntap add dev ernic0 mode tap &&
	       ip -n "$NETNS" addr add 192.168.200.3/24 dev ernic0 && ip -n "$NETNS" link set ernic0 up; }; then
		fail netns-tap "cannot create the namespace and its TAP"
		finish
	fi
	SERVER_PREFIX=(ip netns exec "$NETNS")
	SERVER_ARGV+=(--tap ernic0)
	EXTRA_ENV+=("ERNIC_TAP_PEER=192.168.200.3")
fi
if [ -n "$BINARY" ]; then
	"${SERVER_PREFIX[@]}" "$BINARY" --socket "$SOCK" "${SERVER_ARGV[@]}" >"$WORK/server.log" 2>&1 8>&- &
	SERVER_PID=$!
	for ((i = 0; i < 300; i++)); do
		[ -S "$SOCK" ] && break
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -S "$SOCK" ]; then
		pass server-start
	else
		if kill -0 "$SERVER_PID" 2>/dev/null; then
			why="no socket after 30 s"
		else
			wait "$SERVER_PID"
			why="exited with status $?"
		fi
		SERVER_PID=""
		fail server-start "$why: $(tail -n 3 "$WORK/server.log" | tr '\n' '|')"
		finish
	fi
fi
if [ -n "$SERVER_PID" ]; then
	# Requests from the guest to the host side: a check writes "signal USR1" into host-request in
	# its job directory (the server then simulates a firmware reset); the answer is host-request.done.
	( while :; do
		for f in "$WORK"/run*/host-request; do
			[ -f "$f" ] || continue
			case $(cat "$f") in
			"signal USR1") kill -USR1 "$SERVER_PID" && echo done >"$f.done" ;;
			*) echo refused >"$f.done" ;;
			esac
			rm -f "$f"
		done
		sleep 0.2
	done ) 8>&- &
	WATCH_PID=$!
fi
if [ -n "$NETNS" ]; then
	# The host-side peer: keeps pinging the guest's address until one answer comes back.
	ip netns exec "$NETNS" sh -c 'while :; do ping -c 1 -W 1 192.168.200.2 >/dev/null 2>&1 && { echo ok; exit 0; }; sleep 1; done' \
		>"$WORK/host-peer-ping" 2>&1 8>&- &
	PEER_PID=$!
fi

# qemu_args JOB BOOTS: the QEMU command line (paths as seen inside the chroot).
qemu_args() {
	local boots=$2 mem=${ERNIC_VM_MEM:-2G} append="console=ttyS0 quiet panic=-1"
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
		QEMU+=(-serial file:/job/serial.log -monitor none -append "$append")
	fi
	if [ $NO_DEVICE = 0 ]; then
		QEMU+=(-device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"/sock/$(basename "$SOCK")\"}}")
	fi
}

BINDS=(-b "$IMGDIR:/img:ro" -b "$SOCK_DIR:/sock")

if [ $SHELL_MODE = 1 ]; then
	JOB=$WORK/run1
	mkdir -p "$JOB"
	qemu_args "$JOB" 1
	echo "# guest console follows (Ctrl-A X quits QEMU); the host directory $JOB is /mnt/job"
	chroot_run "$HOSTROOT" "${BINDS[@]}" -b "$JOB:/job" -- "${QEMU[@]}"
	KEEP=1
	exit 0
fi

# ---------------------------------------------------------------------------------------------
# The runs.
for ((run = 1; run <= RUNS; run++)); do
	JOB=$WORK/run$run
	mkdir -p "$JOB"
	install -m 755 "$CHECK" "$JOB/check.sh"
	install -m 644 "$VM_DIR/guest/check-lib.sh" "$JOB/check-lib.sh"
	for f in "${FILES[@]}"; do install -m 644 "$f" "$JOB/$(basename "$f")"; done
	{
		sh_assign ERNIC_BOOTS "$BOOTS"
		sh_assign ERNIC_RUN "$run"
		sh_assign ERNIC_RUNS "$RUNS"
		sh_assign ERNIC_CHECK_TIMEOUT "$CHECK_TIMEOUT"
		sh_assign ERNIC_DEVICE "$((1 - NO_DEVICE))"
		sh_assign ERNIC_FW_VERSION "$FW_VERSION"
		for e in "${EXTRA_ENV[@]}"; do sh_assign "${e%%=*}" "${e#*=}"; done
	} >"$JOB/env"
	qemu_args "$JOB" "$BOOTS"
	printf '%q ' "${QEMU[@]}" >"$JOB/qemu-cmdline.txt"

	limit=$((BOOTS * TIMEOUT))
	for attempt in 1 2; do
		rm -f "$JOB"/boot-*.started "$JOB"/boot-*.done "$JOB"/boot-*.out "$JOB/serial.log"
		t0=$(date +%s)
		chroot_exec "$HOSTROOT" "${BINDS[@]}" -b "$JOB:/job" -- "${QEMU[@]}" >"$JOB/qemu.log" 2>&1 8>&- &
		QEMU_PID=$!
		timed_out=0 silent=0 last_size=-1 last_change=$t0
		while kill -0 "$QEMU_PID" 2>/dev/null; do
			now=$(date +%s)
			el=$((now - t0))
			if [ $el -ge "$limit" ]; then
				timed_out=1
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
				stop_pid "$QEMU_PID" 5
				break
			fi
			sleep 0.5
		done
		wait "$QEMU_PID" 2>/dev/null
		qrc=$?
		QEMU_PID=""
		[ $silent = 1 ] || break
		echo "# run $run: the guest's console was silent for ${SILENT_LIMIT}s outside its checks (a TCG hang in firmware or early boot); starting the run again"
	done
	wall=$(($(date +%s) - t0))
	if [ $timed_out = 1 ]; then
		echo "# run $run: QEMU killed after ${wall}s ($BOOTS boot(s) expected)"
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
		while read -r verdict check detail; do
			seen=$((seen + 1))
			if [ "$verdict" = PASS ]; then
				pass "$name.$check"
			else
				failed_here=1
				fail "$name.$check" "${detail:-failed}"
			fi
		done < <(tr -d '\r' <"$JOB/boot-$boot.out" 2>/dev/null | sed -n 's/^CHECK \(PASS\|FAIL\) /\1 /p')
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

	server_gone=0
	if [ -n "$SERVER_PID" ]; then
		if kill -0 "$SERVER_PID" 2>/dev/null; then
			pass "server-alive-after-run$run"
		else
			wait "$SERVER_PID"
			fail "server-alive-after-run$run" "the server exited with status $?"
			SERVER_PID=""
			server_gone=1
		fi
	fi

	if [ "$FAILED" -gt "$failed_before" ]; then
		tail_file "run $run serial console" "$JOB/serial.log" 40
		for ((b = BOOTS; b >= 1; b--)); do
			[ -e "$JOB/dmesg-boot-$b.txt" ] || continue
			tail_file "run $run boot $b guest kernel log" "$JOB/dmesg-boot-$b.txt" 25
			break
		done
		tail_file "run $run QEMU" "$JOB/qemu.log" 10
		tail_file "server" "$WORK/server.log" 15
	fi
	[ $server_gone = 1 ] && break
done

# ---------------------------------------------------------------------------------------------
if [ -n "$NETNS" ]; then
	grep -qx ok "$WORK/host-peer-ping" && pass host-peer-ping || fail host-peer-ping "the guest never answered the host-side peer"
	stop_pid "$PEER_PID" 1
	PEER_PID=""
fi
if [ -n "$SERVER_PID" ]; then
	stop_pid "$SERVER_PID" 15
	src=$?
	SERVER_PID=""
	if [ $src = 0 ]; then
		pass server-stop
	else
		fail server-stop "exit status $src after SIGTERM"
		tail_file "server" "$WORK/server.log" 15
	fi
	if [ -n "$SERVER_LOG_RE" ]; then
		if grep -Eq -- "$SERVER_LOG_RE" "$WORK/server.log"; then
			pass server-log
		else
			fail server-log "the server's log has no line matching '$SERVER_LOG_RE'"
			tail_file "server" "$WORK/server.log" 5
		fi
	fi
fi
finish
