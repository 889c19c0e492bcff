#!/usr/bin/env bash
# s3-tap-ci: the S3 endpoint as a host on a real segment. Inside a network namespace this test
# creates, the server joins a TAP device and the Linux kernel's own TCP stack is the peer:
# ping, curl, boto3 (Debian's python3-boto3), parallel clients, a reader that stalls, readers of
# an object being replaced, the byte-exact transfers again with a peer whose TCP offers no option
# and under 5% packet loss, with the TAP's receive offloads on (the kernel sends TCPv4 super-frames
# with partial checksums). Nothing leaves the namespace.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
NS=ernic-s3ci-$$
EP=192.168.200.1
URL=http://$EP:9000
nsx() { ip netns exec "$NS" "$@"; }

cleanup_ns() {
	[ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup_ns EXIT

s3_on_tap s3-tap s3:size=512M || finish

# ARP + ICMP: the endpoint is a host on the segment, nothing configured by hand.
nsx ping -c 3 -W 2 -i 0.2 $EP >"$TMP/ping" 2>&1 && pass s3-ping || fail s3-ping "$(tail -2 "$TMP/ping")"
out=$(nsx curl -s -f --max-time 20 $URL/)
grep -q "<Name>ernic</Name>" <<<"$out" && pass s3-curl-list-buckets || fail s3-curl-list-buckets "$out"
nsx ip neigh show $EP | grep -q "lladdr 02:53:c0:a8:c8:01" && pass s3-arp-mac ||
	fail s3-arp-mac "$(nsx ip neigh show $EP)"

# PUT/GET/HEAD of 0 B, 1 B, 1 MiB and 64 MiB, byte for byte; two connections per size (CONNS counts
# them). TAG names the checks of a repetition.
SIZES="0 1 1048576 67108864"
for size in $SIZES; do head -c "$size" /dev/urandom >"$TMP/obj-$size"; done
transfers() {
	local tag=$1 size f md5 code h
	for size in $SIZES; do
		f=$TMP/obj-$size
		md5=$(md5sum <"$f" | cut -d' ' -f1)
		code=$(nsx curl -s -o /dev/null -w '%{http_code}' --max-time 120 -T "$f" "$URL/ernic/obj-$size")
		[ "$code" = 200 ] && pass "s3-${tag}put-$size" || fail "s3-${tag}put-$size" "HTTP $code"
		rm -f "$TMP/back-$size"
		nsx curl -s -f --max-time 120 -o "$TMP/back-$size" "$URL/ernic/obj-$size" && cmp -s "$f" "$TMP/back-$size" &&
			pass "s3-${tag}get-$size" ||
			fail "s3-${tag}get-$size" "content differs ($(stat -c %s "$TMP/back-$size" 2>/dev/null) bytes)"
		h=$(nsx curl -s -I --max-time 20 "$URL/ernic/obj-$size" | tr -d '\r')
		grep -qi "^content-length: $size$" <<<"$h" && grep -qi "^etag: \"$md5\"$" <<<"$h" &&
			pass "s3-${tag}head-$size" || fail "s3-${tag}head-$size" "$h"
	done
}
transfers ""

code=$(nsx curl -s -o /dev/null -w '%{http_code}' --max-time 20 -X DELETE "$URL/ernic/obj-1")
[ "$code" = 204 ] && pass s3-delete || fail s3-delete "HTTP $code"
code=$(nsx curl -s -o "$TMP/err" -w '%{http_code}' --max-time 20 "$URL/ernic/obj-1")
[ "$code" = 404 ] && grep -q "<Code>NoSuchKey</Code>" "$TMP/err" && pass s3-get-deleted || fail s3-get-deleted "HTTP $code"

# A ranged GET.
nsx curl -s -f --max-time 20 -r 1024-1535 -o "$TMP/range" -w '%{http_code}' "$URL/ernic/obj-1048576" >"$TMP/code"
dd if="$TMP/obj-1048576" bs=1 skip=1024 count=512 status=none >"$TMP/range-want"
[ "$(cat "$TMP/code")" = 206 ] && cmp -s "$TMP/range" "$TMP/range-want" && pass s3-range-get ||
	fail s3-range-get "HTTP $(cat "$TMP/code")"

# Multipart and listings through boto3.
if nsx "$PY" "$HERE/s3_boto_check.py" "$URL" ernic >"$TMP/boto" 2>&1; then
	pass s3-boto3
else
	fail s3-boto3 "$(grep -v '^ok' "$TMP/boto" | head -5 | tr '\n' '|')"
fi

# A 64 MiB PUT in the background leaves the loop free for other connections: small GETs on their
# own connections answer within a second each while it runs.
head -c $((64 << 20)) /dev/urandom >"$TMP/big"
nsx curl -s -f --max-time 120 -T "$TMP/big" "$URL/ernic/big" >/dev/null &
bigpid=$!
slow=0
for _ in $(seq 10); do
	nsx curl -s -f --max-time 1 -o /dev/null "$URL/ernic/obj-0" || slow=$((slow + 1))
done
wait $bigpid && big=ok || big=failed
[ $slow = 0 ] && [ $big = ok ] && pass s3-put-responsive || fail s3-put-responsive "$slow slow GETs, PUT $big"

# Eight clients at once, each with its own object. A client's finished connection counts toward
# the eight until our FIN is acknowledged; its next SYN may come first and is refused (RST), as the
# stack documents for a ninth connection: the client retries then.
for i in 1 2 3 4 5 6 7 8; do head -c $((300000 + i)) /dev/urandom >"$TMP/par-$i"; done
pids=()
for i in 1 2 3 4 5 6 7 8; do
	nsx sh -c "curl -s -S -f --max-time 60 --retry 3 --retry-connrefused -T '$TMP/par-$i' '$URL/ernic/par-$i' \
			>/dev/null 2>'$TMP/par-err-$i' &&
		curl -s -S -f --max-time 60 --retry 3 --retry-connrefused -o '$TMP/par-back-$i' '$URL/ernic/par-$i' \
			2>>'$TMP/par-err-$i'" &
	pids+=($!)
done
bad=""
for i in 1 2 3 4 5 6 7 8; do
	wait "${pids[$((i - 1))]}" && cmp -s "$TMP/par-$i" "$TMP/par-back-$i" ||
		bad="$bad client $i: $(tr '\n' ' ' <"$TMP/par-err-$i")$(cmp "$TMP/par-$i" "$TMP/par-back-$i" 2>&1 | head -1);"
done
[ -z "$bad" ] && pass s3-eight-clients || fail s3-eight-clients "$bad"

# A reader that stalls mid-GET and then resumes: the window closes, nothing is lost.
head -c $((8 << 20)) /dev/urandom >"$TMP/slow"
nsx curl -s -f --max-time 60 -T "$TMP/slow" "$URL/ernic/slow" >/dev/null
if nsx "$PY" "$HERE/s3_slow_reader.py" $EP 9000 /ernic/slow "$(md5sum <"$TMP/slow" | cut -d' ' -f1)" 2 >"$TMP/slowout" 2>&1; then
	pass s3-slow-reader
else
	fail s3-slow-reader "$(cat "$TMP/slowout")"
fi

# A PUT replaces an object whole or not at all. GETs (each on a connection of its own) while a
# replacing PUT arrives slowly get the old object or the new one, each whole and with its own ETag;
# a PUT cut off mid-body (its curl killed) or with a wrong Content-MD5 leaves the object as it was.
for v in a b c; do head -c $((16 << 20)) /dev/urandom >"$TMP/at-$v"; done
md5a=$(md5sum <"$TMP/at-a" | cut -d' ' -f1)
md5b=$(md5sum <"$TMP/at-b" | cut -d' ' -f1)
# at_get: the object's ETag and the MD5 of the body that came with it, or "failed".
at_get() {
	if nsx curl -s -f --max-time 30 -D "$TMP/at-h" -o "$TMP/at-got" "$URL/ernic/atomic"; then
		echo "$(tr -d '\r"' <"$TMP/at-h" | awk 'tolower($1) == "etag:" { print $2 }')" \
			"$(md5sum <"$TMP/at-got" | cut -d' ' -f1)"
	else
		echo failed
	fi
}
nsx curl -s -f --max-time 60 -T "$TMP/at-a" "$URL/ernic/atomic" >/dev/null
ip netns exec "$NS" curl -s -f --max-time 60 --limit-rate 4M -T "$TMP/at-b" "$URL/ernic/atomic" >/dev/null &
putpid=$!
olds=0 news=0 bad=""
while kill -0 $putpid 2>/dev/null; do
	got=$(at_get)
	case $got in
	"$md5a $md5a") olds=$((olds + 1)) ;;
	"$md5b $md5b") news=$((news + 1)) ;;
	*) bad="$bad ${got:0:80};" ;;
	esac
done
wait $putpid && put=ok || put=failed
echo "# while the PUT arrived: $olds GETs of the old object, $news of the new"
[ "$(at_get)" = "$md5b $md5b" ] || bad="$bad not the new object after the PUT;"
[ -z "$bad" ] && [ $put = ok ] && [ $olds -gt 0 ] && pass s3-put-atomic-readers ||
	fail s3-put-atomic-readers "PUT $put, $olds GETs of the old object, $news of the new, wrong:$bad"
ip netns exec "$NS" curl -s --max-time 60 --limit-rate 2M -T "$TMP/at-c" "$URL/ernic/atomic" >/dev/null 2>&1 &
putpid=$!
sleep 1
kill -KILL $putpid 2>/dev/null
wait $putpid 2>/dev/null
sleep 0.5
got=$(at_get)
[ "$got" = "$md5b $md5b" ] && pass s3-put-cut-off-keeps-old || fail s3-put-cut-off-keeps-old "$got"
wrong=$("$PY" -c 'import base64, hashlib, sys
print(base64.b64encode(hashlib.md5(open(sys.argv[1], "rb").read()).digest()).decode())' "$TMP/at-a")
code=$(nsx curl -s -o "$TMP/at-err" -w '%{http_code}' --max-time 60 -H "Content-MD5: $wrong" -T "$TMP/at-c" \
	"$URL/ernic/atomic")
got=$(at_get)
[ "$code" = 400 ] && grep -q "<Code>BadDigest</Code>" "$TMP/at-err" && [ "$got" = "$md5b $md5b" ] &&
	pass s3-put-bad-md5-keeps-old || fail s3-put-bad-md5-keeps-old "HTTP $code, then $got"

# A peer that offers no TCP option (the sysctls are the namespace's own): the same transfers, with
# the stack's 64 KiB window, no SACK, no timestamps. Each of its connections is counted at exit.
NOOPT_CONNS=0
noopts() { nsx sysctl -q -w net.ipv4.tcp_window_scaling="$1" net.ipv4.tcp_sack="$1" net.ipv4.tcp_timestamps="$1"; }
if noopts 0; then
	transfers "noopts-"
	NOOPT_CONNS=$((NOOPT_CONNS + 3 * $(wc -w <<<"$SIZES")))
	noopts 1
else
	fail s3-noopts "cannot turn the namespace's TCP options off"
fi

# 5% packet loss both ways: the same transfers, byte for byte. Our segments are dropped by nftables
# on the namespace's input (a loss on the wire: the kernel's receiver sees the gap, SACK reports it);
# the kernel's own segments by netem on the TAP's egress where the kernel has it, else by nftables
# on output (a drop its sender is told of, so it sends again). Then a short transfer under loss with
# the peer without options (the specification's stack: our side resends only on its timer, going
# back to the oldest unacknowledged byte; out-of-order segments dropped).
loss=""
if nsx nft -f - <<'NFT' 2>/dev/null
table inet ernicloss {
	chain in { type filter hook input priority 0; iifname "ernic0" numgen random mod 20 == 0 drop; }
}
NFT
then
	if nsx tc qdisc add dev ernic0 root netem loss 5% 2>/dev/null; then
		loss="nftables in, netem out"
	elif nsx nft add chain inet ernicloss out '{ type filter hook output priority 0; }' &&
		nsx nft add rule inet ernicloss out oifname ernic0 numgen random mod 20 == 0 drop; then
		loss="nftables both ways"
	fi
fi
if [ -n "$loss" ]; then
	echo "# 5% loss both ways on ernic0 ($loss)"
	transfers "loss-"
	head -c $((4 << 20)) /dev/urandom >"$TMP/lossy"
	if noopts 0; then
		nsx curl -s -f --max-time 120 -T "$TMP/lossy" "$URL/ernic/lossy" >/dev/null &&
			nsx curl -s -f --max-time 120 -o "$TMP/lossy-back" "$URL/ernic/lossy" &&
			cmp -s "$TMP/lossy" "$TMP/lossy-back" && pass s3-loss-noopts-transfer ||
			fail s3-loss-noopts-transfer "failed or differs"
		NOOPT_CONNS=$((NOOPT_CONNS + 2))
		noopts 1
	fi
	nsx tc qdisc del dev ernic0 root 2>/dev/null
	nsx nft delete table inet ernicloss 2>/dev/null
else
	fail s3-loss-transfer "nftables cannot drop packets here"
fi

kill -0 "$SERVER_PID" 2>/dev/null && pass s3-server-alive || fail s3-server-alive "server died: $(tail -5 "$TMP/server.log")"

# The TAP goes away under the server: logged, and the server goes on.
nsx ip link del ernic0
for _ in $(seq 50); do grep -q "^warning: tap ernic0: .*the segment goes on without it" "$TMP/server.log" && break; sleep 0.1; done
if grep -q "^warning: tap ernic0: .*the segment goes on without it" "$TMP/server.log" && kill -0 "$SERVER_PID" 2>/dev/null; then
	pass s3-tap-removed
else
	fail s3-tap-removed "$(tail -3 "$TMP/server.log" | tr '\n' '|')"
fi
kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; rc=$?; SERVER_PID=
[ $rc = 0 ] && pass s3-server-exit || fail s3-server-exit "status $rc"
# Bulk data from the TAP came in as segmentation-offload super-frames (TUNSETOFFLOAD granted).
# (UDP too where the kernel grants it, Linux 6.2 and later.)
grep -Eqx "tap ernic0: receive offloads on \(checksum, TCPv4( and UDP)? segmentation up to 64 KiB per read\)" "$TMP/server.log" &&
	pass s3-tap-rx-offloads || fail s3-tap-rx-offloads "$(grep '^tap ernic0:' "$TMP/server.log" | tr '\n' '|')"
sfr=$(grep -o '(\([0-9]*\) of them segmentation-offload super-frames' "$TMP/server.log" | grep -o '[0-9]*' | head -1)
[ "${sfr:-0}" -gt 0 ] && pass s3-tap-gso-reads || fail s3-tap-gso-reads "$(grep '^tap ernic0:' "$TMP/server.log")"
# The endpoint's stack sent its GETs as super-segments (segmentation offload), which the TAP
# wrote whole for the kernel to cut: the byte-exact GETs above went that way.
sup=$(grep -o ', \([0-9]*\) super-segments of the in-process hosts)' "$TMP/server.log" | grep -o '[0-9]*' | head -1)
[ "${sup:-0}" -gt 0 ] && pass s3-tap-gso-writes || fail s3-tap-gso-writes "$(grep '^tap ernic0:' "$TMP/server.log")"
# The stack's counters at exit: every connection but the option-less peer's agreed on window
# scaling, SACK and timestamps, and those had none; the losses were repaired by fast recovery
# (SACK blocks came in) or tail probes, not by the retransmission timer alone.
tcp=$(grep '^s3: tcp: ' "$TMP/server.log")
num() { sed -n "s/.*$1.*/\\1/p" <<<"$tcp"; }
acc=$(num 'tcp: \([0-9]*\) connections accepted') ws=$(num 'window scaling \([0-9]*\)')
sack=$(num 'SACK \([0-9]*\), timestamps') ts=$(num 'timestamps \([0-9]*\))')
fr=$(num '(\([0-9]*\) fast recoveries') sin=$(num 'SACK blocks \([0-9]*\) in')
[ -n "$acc" ] && [ $((acc - ws)) = "$NOOPT_CONNS" ] && [ $((acc - sack)) = "$NOOPT_CONNS" ] &&
	[ $((acc - ts)) = "$NOOPT_CONNS" ] && pass s3-tcp-options-negotiated ||
	fail s3-tcp-options-negotiated "expected $NOOPT_CONNS connections without options: $tcp"
[ -n "$loss" ] && [ "${fr:-0}" -gt 0 ] && [ "${sin:-0}" -gt 0 ] && pass s3-tcp-loss-recovery ||
	fail s3-tcp-loss-recovery "$tcp"
finish
