# shellcheck shell=bash
# Helpers for the tests that start the real binary. Source with the binary as $1.
# Each check prints "ok - NAME" or "not ok - NAME: why"; finish prints the counts
# and exits non-zero if anything failed.
set -u

BIN=${1:?usage: $0 path/to/rocm-ernic}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ernic-ci.XXXXXX")
PASSED=0
FAILED=0
SERVER_PID=
START_TIMEOUT=${START_TIMEOUT:-30}

cleanup() {
	[ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

pass() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $1: $2"; }

finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit $?
}

# has_line FILE LINE: FILE holds LINE as a whole line.
has_line() { grep -qxF -- "$2" "$1" 2>/dev/null; }

# start_server NAME SOCK ARGS...: start the binary in the background (stderr to $TMP/NAME.log),
# wait until it logs that it listens on SOCK (or, with READY=socket, until SOCK exists).
# Returns 0 when it is listening; SERVER_PID is its pid.
start_server() {
	local name=$1 sock=$2; shift 2
	"$BIN" "$@" 2>"$TMP/$name.log" >/dev/null &
	SERVER_PID=$!
	local i
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		if [ "${READY:-log}" = socket ]; then
			[ -S "$sock" ] && return 0
		else
			has_line "$TMP/$name.log" "vfio-user: listening on $sock" && return 0
		fi
		kill -0 "$SERVER_PID" 2>/dev/null || { wait "$SERVER_PID"; SERVER_PID=; return 1; }
		sleep 0.1
	done
	return 1
}

# stop_server [SIGNAL]: signal the server (TERM by default) and return its exit status.
stop_server() {
	local sig=${1:-TERM} rc
	[ -n "$SERVER_PID" ] || return 255
	kill -"$sig" "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID"
	rc=$?
	SERVER_PID=
	return $rc
}

# expect_start NAME EXPECTED-LINE ARGS...: one documented spelling. The server must start,
# log EXPECTED-LINE exactly, listen on its socket, stop with status 0 on SIGTERM and
# remove its socket.
expect_start() {
	local name=$1 want=$2; shift 2
	local sock="$TMP/$name.sock" rc
	rm -f "$sock"
	if ! start_server "$name" "$sock" --socket "$sock" "$@"; then
		fail "$name" "did not start: $(tr '\n' '|' < "$TMP/$name.log")"
		return 1
	fi
	if ! has_line "$TMP/$name.log" "$want"; then
		stop_server KILL
		fail "$name" "expected line '$want', log: $(tr '\n' '|' < "$TMP/$name.log")"
		return 1
	fi
	stop_server TERM
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$name" "exit status $rc after SIGTERM"
		return 1
	fi
	if [ -e "$sock" ]; then
		fail "$name" "socket $sock left behind"
		return 1
	fi
	pass "$name"
}

# expect_refused NAME STATUS MESSAGE ARGS...: the binary must exit with STATUS, print exactly
# MESSAGE as its only line on stderr, and never create its socket.
expect_refused() {
	local name=$1 want_rc=$2 want=$3; shift 3
	local sock="$TMP/$name.sock" rc out
	rm -f "$sock"
	timeout 20 "$BIN" --socket "$sock" "$@" 2>"$TMP/$name.err" >/dev/null
	rc=$?
	out=$(cat "$TMP/$name.err")
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$name" "exit status $rc, want $want_rc (stderr: $out)"
	elif [ "$out" != "$want" ]; then
		fail "$name" "stderr '$out', want '$want'"
	elif [ -e "$sock" ]; then
		fail "$name" "socket was created"
	else
		pass "$name"
	fi
}

# s3_on_tap NAME BACKEND-SPEC [ARGS...]: in the network namespace $NS (made here; needs root), a TAP
# ernic0 at 192.168.200.2/24 and the server on it with BACKEND-SPEC and any further ARGS (log
# $TMP/server.log, pid SERVER_PID).
# Passes or fails NAME-joined; returns non-zero when the server did not join its TAP.
s3_on_tap() {
	local name=$1 spec=$2 sock=$TMP/s3.sock
	shift 2
	if [ "$(id -u)" != 0 ] || ! ip netns add "$NS" 2>/dev/null; then
		fail "$name-setup" "needs root and network namespaces"
		return 1
	fi
	ip netns exec "$NS" ip link set lo up
	ip netns exec "$NS" ip tuntap add dev ernic0 mode tap
	ip netns exec "$NS" ip addr add 192.168.200.2/24 dev ernic0
	ip netns exec "$NS" ip link set ernic0 up
	ip netns exec "$NS" "$BIN" --socket "$sock" --backend "$spec" --tap ernic0 "$@" 2>"$TMP/server.log" &
	SERVER_PID=$!
	for _ in $(seq 300); do has_line "$TMP/server.log" "tap ernic0: joined to the segment" && break; sleep 0.1; done
	if has_line "$TMP/server.log" "tap ernic0: joined to the segment"; then
		pass "$name-joined"
	else
		fail "$name-joined" "$(cat "$TMP/server.log")"
		return 1
	fi
}

# roce_bridge_up MTU: the namespace $NS made (needs root) with IPv6 off, a bridge br0 and two TAPs
# ernicA and ernicB on it, all with MTU; non-zero when the namespace cannot be made.
roce_bridge_up() {
	local mtu=$1 t
	[ "$(id -u)" = 0 ] && ip netns add "$NS" 2>/dev/null || return 1
	ip netns exec "$NS" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
	ip netns exec "$NS" ip link set lo up
	ip netns exec "$NS" ip link add br0 type bridge
	for t in ernicA ernicB; do
		ip netns exec "$NS" ip tuntap add dev $t mode tap
		ip netns exec "$NS" ip link set $t mtu "$mtu" master br0
		ip netns exec "$NS" ip link set $t up
	done
	ip netns exec "$NS" ip link set br0 mtu "$mtu" up
}

# roce_pair_up X Y SPEC [ARGS...]: server A with --backend SPEC and ARGS (socket and log $TMP/X.*,
# on ernicA, MAC 02:00:00:00:00:0a) in the namespace ${NS_A:-$NS}, and server B with --backend
# ${SPEC_B:-roce} ($TMP/Y.*, on ernicB, 02:00:00:00:00:0b) in ${NS_B:-$NS} (their TAPs made by the
# caller), until both listen (30 s at most); their pids in PID_A and PID_B. Not through a function
# run in the background (a subshell): the pids must be the servers'.
roce_pair_up() {
	local x=$1 y=$2 spec=$3
	shift 3
	ip netns exec "${NS_A:-$NS}" "$BIN" --socket "$TMP/$x.sock" --backend "$spec" --tap ernicA \
		--mac 02:00:00:00:00:0a "$@" 2>"$TMP/$x.log" &
	PID_A=$!
	ip netns exec "${NS_B:-$NS}" "$BIN" --socket "$TMP/$y.sock" --backend "${SPEC_B:-roce}" --tap ernicB \
		--mac 02:00:00:00:00:0b 2>"$TMP/$y.log" &
	PID_B=$!
	for _ in $(seq 300); do
		has_line "$TMP/$x.log" "vfio-user: listening on $TMP/$x.sock" &&
			has_line "$TMP/$y.log" "vfio-user: listening on $TMP/$y.sock" && break
		sleep 0.1
	done
}
