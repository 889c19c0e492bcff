#!/usr/bin/env bash
# cli-ci: the command line outside the backend grammar, the socket's life cycle and signals.
. "$(dirname "$0")/lib.sh"

out=$("$BIN" --help 2>&1); rc=$?
[ $rc = 0 ] && grep -q '^Usage: rocm-ernic' <<<"$out" && pass cli-help || fail cli-help "rc $rc"
out=$("$BIN" -h 2>&1); rc=$?
[ $rc = 0 ] && grep -q -- '--backend SPEC' <<<"$out" && pass cli-help-short || fail cli-help-short "rc $rc"
out=$("$BIN" --version 2>&1); rc=$?
[ $rc = 0 ] && grep -qE '^rocm-ernic [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out" && pass cli-version || fail cli-version "$out"

expect_refused cli-unknown-long 2 "Error: unknown option '--bogus' (see --help)" --bogus
expect_refused cli-unknown-short 2 "Error: unknown option '-x' (see --help)" -x
expect_refused cli-missing-value 2 "Error: option '--backend' needs a value" --backend
expect_refused cli-positional 2 "Error: unexpected argument 'extra' (see --help)" extra
expect_refused cli-twice 2 "Error: option --backend given twice" -b s3 --backend nvmeof
expect_refused cli-bad-level 2 "Error: bad log level 'loud'" --log-level loud
expect_refused cli-bad-mac 2 "Error: bad MAC address '02:00:00:00:00'" --mac 02:00:00:00:00
expect_refused cli-mcast-mac 2 "Error: bad MAC address '01:00:5e:00:00:01'" -m 01:00:5e:00:00:01
expect_refused cli-zero-mac 2 "Error: bad MAC address '00:00:00:00:00:00'" -m 00:00:00:00:00:00
expect_refused cli-endpoint-mac 2 "Error: --mac 02:53:c0:a8:c8:01 is the s3 endpoint's own address" \
	-b s3 -m 02:53:c0:a8:c8:01
expect_refused cli-controller-mac 2 "Error: --mac 02:4e:0a:00:00:07 is the nvmeof controller's own address" \
	-b nvmeof:ip=10.0.0.7 -m 02:4e:0a:00:00:07
expect_refused cli-bad-tap 2 "Error: bad interface name 'a/b'" --tap a/b
expect_refused cli-long-tap 2 "Error: bad interface name 'abcdefghijklmnop'" -T abcdefghijklmnop
expect_refused cli-unknown-backend 2 "Error: unknown backend 'rdma'" -b rdma
expect_refused cli-doorbells-twice 2 "Error: --mmap-doorbells or --no-mmap-doorbells given twice" \
	--mmap-doorbells --no-mmap-doorbells
expect_refused cli-bad-poll 2 "Error: bad --poll-us '100001' (0..100000 microseconds)" --poll-us 100001
expect_refused cli-bad-poll-text 2 "Error: bad --poll-us '5us' (0..100000 microseconds)" --poll-us 5us
expect_refused cli-poll-twice 2 "Error: option --poll-us given twice" --poll-us 1 --poll-us 2

# Defaults: loopback, the stable default MAC.
expect_start cli-default-backend "ionic_datapath: loopback between the guest's own queue pairs"
expect_start cli-default-mac "ionic: guest NIC mac 02:45:52:4e:49:43"
expect_start cli-none "ionic_datapath: no backend" --backend none
expect_start cli-mac "ionic: guest NIC mac 02:11:22:33:44:55" --mac 02:11:22:33:44:55
expect_start cli-mac-upper "ionic: guest NIC mac 0a:bb:cc:dd:ee:ff" -m 0A:BB:CC:DD:EE:FF
expect_start cli-log-level "ionic_datapath: no backend" -L debug -b none
expect_start cli-mmap-doorbells "ionic: doorbell pages mapped by the client, polled (busy for 50 us after activity)" \
	-b none --mmap-doorbells
expect_start cli-mmap-poll "ionic: doorbell pages mapped by the client, polled (busy for 0 us after activity)" \
	-b none --mmap-doorbells --poll-us 0
expect_start cli-no-mmap-doorbells "ionic_datapath: no backend" -b none --no-mmap-doorbells --poll-us 100000
# A TAP that does not exist is a start-up error (the server never creates interfaces).
timeout 20 "$BIN" -s "$TMP/tap.sock" -T ernic-no0 2>"$TMP/tap.err" >/dev/null
rc=$?
if [ $rc = 1 ] && has_line "$TMP/tap.err" "error: tap ernic-no0: no such interface (create it first, e.g. ip tuntap add ernic-no0 mode tap)" &&
	[ ! -e "$TMP/tap.sock" ]; then
	pass cli-tap-missing
else
	fail cli-tap-missing "rc $rc: $(cat "$TMP/tap.err")"
fi
# At warn, info lines are not printed.
sock="$TMP/quiet.sock"
if READY=socket start_server quiet "$sock" -s "$sock" --log-level warn; then
	stop_server TERM
	[ ! -s "$TMP/quiet.log" ] && pass cli-warn-quiet || fail cli-warn-quiet "$(cat "$TMP/quiet.log")"
else
	fail cli-warn-quiet "did not start"
fi

# A stale socket file (its server is gone) is replaced.
sock="$TMP/stale.sock"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$sock"
if [ -S "$sock" ] && start_server stale "$sock" -s "$sock"; then
	has_line "$TMP/stale.log" "vfio-user: replaced stale socket $sock" && pass cli-stale-socket ||
		fail cli-stale-socket "$(cat "$TMP/stale.log")"
	# While it listens, a second server on the same path is refused and the first keeps it.
	expect_refused_live() {
		timeout 20 "$BIN" -s "$sock" 2>"$TMP/second.err" >/dev/null
		rc=$?
		[ $rc = 1 ] && grep -qxF "error: another server is listening on $sock" "$TMP/second.err" &&
			[ -S "$sock" ] && kill -0 "$SERVER_PID"
	}
	expect_refused_live && pass cli-live-socket || fail cli-live-socket "rc $rc: $(cat "$TMP/second.err")"
	# A client that connects and leaves without a word does not disturb the server.
	python3 - "$sock" <<'PY' && pass cli-client-leaves || fail cli-client-leaves "connect failed"
import socket, sys
for _ in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    s.close()
PY
	kill -0 "$SERVER_PID" && pass cli-survives-client || fail cli-survives-client "server gone"
	stop_server INT; rc=$?
	[ $rc = 0 ] && [ ! -e "$sock" ] && pass cli-sigint || fail cli-sigint "rc $rc"
else
	fail cli-stale-socket "did not start: $(cat "$TMP/stale.log" 2>/dev/null)"
fi

# A path that exists and is not a socket is never removed; a path too long for a socket is refused.
refused_path() { # name path message
	timeout 20 "$BIN" -s "$2" 2>"$TMP/$1.err" >/dev/null
	local rc=$?
	if [ $rc = 1 ] && has_line "$TMP/$1.err" "$3" && ! grep -q listening "$TMP/$1.err"; then pass "$1"; else fail "$1" "rc $rc: $(cat "$TMP/$1.err")"; fi
}
echo keep > "$TMP/file"
refused_path cli-not-socket "$TMP/file" "error: $TMP/file exists and is not a socket"
[ "$(cat "$TMP/file")" = keep ] && pass cli-not-socket-kept || fail cli-not-socket-kept "file changed"
long=$TMP/$(printf 'x%.0s' $(seq 120))
refused_path cli-long-socket "$long" "error: socket path '$long' is empty or longer than 107 bytes"
refused_path cli-no-dir "$TMP/nodir/x.sock" "error: cannot bind $TMP/nodir/x.sock: No such file or directory"

finish
