#!/usr/bin/env bash
# pcap-ci: --pcap FILE, read back by Wireshark's own dissectors (tshark, a Debian package). Each part
# runs in a network namespace this test creates; nothing leaves it.
#  1. The S3 endpoint on a TAP, the kernel's curl its client: a PUT and a GET of one object. tshark
#     must read the file and show both HTTP requests (method, URI), their 200s, the endpoint's
#     address and ARP for it.
#  2. Two servers with --backend roce on a bridge, A capturing, the roce-ci client's connect and
#     WRITE tests between them: tshark must decode RoCEv2 (InfiniBand over UDP 4791) and show the
#     RDMA WRITE opcodes the client put on the wire (First, Middle, Last; First, Middle, Last with
#     Immediate) with consecutive PSNs, and the ACKs coming back.
#  2b. The same with both QPs on VLAN 100 at priority 5: every RoCEv2 frame tagged, ACKs too.
#  3. --pcap-max: a capture limited to 64K stops there (the file no larger, still readable) and
#     the exit line counts the frames left out.
# Usage: pcap-ci.sh path/to/rocm-ernic path/to/roce-ci-client
. "$(dirname "$0")/lib.sh"
CLIENT=${2:?usage: $0 path/to/rocm-ernic path/to/roce-ci-client}
NS=ernic-pcapci-$$
EP=192.168.200.1
URL=http://$EP:9000
PID_A= PID_B=
nsx() { ip netns exec "$NS" "$@"; }

cleanup_ns() {
	[ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null
	[ -n "$PID_A" ] && kill -KILL "$PID_A" 2>/dev/null
	[ -n "$PID_B" ] && kill -KILL "$PID_B" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup_ns EXIT

if ! command -v tshark >/dev/null; then
	fail pcap-setup "no tshark (scripts/install-deps.sh installs it)"
	finish
fi
# tshark as root reads files fine; keep it from looking for a user profile elsewhere.
export HOME=$TMP

# stop_server PID-VAR NAME: SIGTERM, exit status 0 (passes NAME).
stop_server() {
	local pid=${!1}
	kill -TERM "$pid" 2>/dev/null
	if wait "$pid"; then pass "$2"; else fail "$2" "exit status $?"; fi
	eval "$1="
}

# --- 1. S3 over the TAP ------------------------------------------------------------------------
s3_on_tap pcap-s3 s3 --pcap "$TMP/s3.pcap" || finish
head -c 10000 /dev/urandom >"$TMP/obj"
code=$(nsx curl -s -o /dev/null -w '%{http_code}' --max-time 60 -T "$TMP/obj" "$URL/ernic/captured")
[ "$code" = 200 ] || fail pcap-s3-put "HTTP $code"
nsx curl -s -f --max-time 60 -o "$TMP/back" "$URL/ernic/captured" && cmp -s "$TMP/obj" "$TMP/back" ||
	fail pcap-s3-get "the GET did not return the object"
stop_server SERVER_PID pcap-s3-server-exit
if grep -Eq "^pcap: $TMP/s3.pcap: [1-9][0-9]* frames written \([0-9]+ bytes\), 0 dropped with the writer behind, 0 past the size limit" "$TMP/server.log"; then
	pass pcap-s3-exit-line
else
	fail pcap-s3-exit-line "$(grep pcap "$TMP/server.log" | tr '\n' '|')"
fi
reqs=$(tshark -r "$TMP/s3.pcap" -Y http.request -T fields -e ip.dst -e http.request.method -e http.request.uri 2>"$TMP/tshark.err")
echo "$reqs" | sed 's/^/# /'
if grep -qP "^$EP\tPUT\t/ernic/captured$" <<<"$reqs" && grep -qP "^$EP\tGET\t/ernic/captured$" <<<"$reqs"; then
	pass pcap-s3-http-requests
else
	fail pcap-s3-http-requests "tshark shows: $(tr '\n' '|' <<<"$reqs") $(head -3 "$TMP/tshark.err")"
fi
codes=$(tshark -r "$TMP/s3.pcap" -Y http.response -T fields -e ip.src -e http.response.code 2>/dev/null | sort | uniq -c)
if grep -qP "^ +2 $EP\t200$" <<<"$codes"; then
	pass pcap-s3-http-responses
else
	fail pcap-s3-http-responses "tshark shows: $(tr '\n' '|' <<<"$codes")"
fi
arp=$(tshark -r "$TMP/s3.pcap" -Y 'arp.opcode == 2' -T fields -e arp.src.proto_ipv4 -e arp.src.hw_mac 2>/dev/null | head -1)
[ "$arp" = "$EP	02:53:c0:a8:c8:01" ] && pass pcap-s3-arp || fail pcap-s3-arp "tshark shows '$arp'"
ip netns del "$NS"

# --- 2. RoCEv2 between two servers -------------------------------------------------------------
if ! roce_bridge_up 1500; then
	fail pcap-roce-setup "cannot make the namespace again"
	finish
fi
roce_pair_up a b roce --pcap "$TMP/roce.pcap"
if nsx "$CLIENT" "$TMP/a.sock" "$TMP/b.sock" ernicA ernicB pcap >"$TMP/client.log" 2>&1; then
	pass pcap-roce-client
else
	fail pcap-roce-client "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/client.log" | head -8 | tr '\n' '|')"
fi
stop_server PID_A pcap-roce-server-exit
stop_server PID_B pcap-roce-peer-exit
# The RDMA WRITEs A sent (BTH opcodes 6 First, 7 Middle, 8 Last, 9 Last with Immediate) and their PSNs.
# First transmissions only (on a loaded host an ACK may come after the requester's timer, and the
# resent packet is the same packet again): the first frame of each PSN.
writes=$(tshark -r "$TMP/roce.pcap" -Y 'infiniband.bth.opcode >= 6 && infiniband.bth.opcode <= 9' \
	-T fields -e udp.dstport -e infiniband.bth.opcode -e infiniband.bth.psn 2>"$TMP/tshark.err" | awk '!seen[$3]++')
echo "$writes" | sed 's/^/# /'
ops=$(awk '{ printf "%s ", $2 }' <<<"$writes")
if [ "$ops" = "6 7 8 6 7 9 " ] && awk 'NR > 1 && $3 != prev + 1 { bad = 1 } { prev = $3 } END { exit bad }' <<<"$writes" &&
	! grep -qv '^4791	' <<<"$writes"; then
	pass pcap-roce-write-opcodes-psns
else
	fail pcap-roce-write-opcodes-psns "tshark shows opcodes '$ops': $(tr '\n' '|' <<<"$writes") $(head -3 "$TMP/tshark.err")"
fi
# B's ACKs (opcode 17, with the AETH's syndrome) come back to A: the capture has both directions.
acks=$(tshark -r "$TMP/roce.pcap" -Y 'infiniband.bth.opcode == 17' -T fields -e infiniband.aeth.syndrome 2>/dev/null | wc -l)
[ "$acks" -ge 1 ] && pass pcap-roce-acks || fail pcap-roce-acks "no ACK in the capture"

# --- 2b. The same over VLAN 100 at priority 5 (issue 28): both QPs' header templates carry the
#     802.1Q tag, as ionic_rdma builds them for a GID of a VLAN netdev. The capture must show the
#     WRITEs tagged (VLAN ID and priority), and B must have taken them (the client checks its memory).
roce_pair_up g h roce --pcap "$TMP/vlan.pcap"
if nsx "$CLIENT" "$TMP/g.sock" "$TMP/h.sock" ernicA ernicB vlan >"$TMP/vlan-client.log" 2>&1; then
	pass pcap-vlan-client
else
	fail pcap-vlan-client "$(grep -E 'FAILED|ERROR|Failure|error' "$TMP/vlan-client.log" | head -8 | tr '\n' '|')"
fi
stop_server PID_A pcap-vlan-server-exit
stop_server PID_B pcap-vlan-peer-exit
tagged=$(tshark -r "$TMP/vlan.pcap" -Y 'vlan && infiniband.bth.opcode >= 6 && infiniband.bth.opcode <= 9' \
	-T fields -e vlan.id -e vlan.priority -e infiniband.bth.opcode -e infiniband.bth.psn 2>"$TMP/tshark.err" |
	awk '!seen[$4]++')
echo "$tagged" | sed 's/^/# /'
if [ "$(awk '{ printf "%s ", $3 }' <<<"$tagged")" = "6 7 8 6 7 9 " ] && ! grep -qvP '^100\t5\t' <<<"$tagged"; then
	pass pcap-vlan-tagged
else
	fail pcap-vlan-tagged "tshark shows: $(tr '\n' '|' <<<"$tagged") $(head -3 "$TMP/tshark.err")"
fi
# Nothing untagged between the two QPs, and the ACKs came back tagged too.
untagged=$(tshark -r "$TMP/vlan.pcap" -Y '!vlan && infiniband' 2>/dev/null | wc -l)
acks=$(tshark -r "$TMP/vlan.pcap" -Y 'vlan.id == 100 && infiniband.bth.opcode == 17' 2>/dev/null | wc -l)
[ "$untagged" = 0 ] && [ "$acks" -ge 1 ] && pass pcap-vlan-acks-tagged ||
	fail pcap-vlan-acks-tagged "$untagged untagged RoCE frames, $acks tagged ACKs"

# --- 3. The size limit -------------------------------------------------------------------------
roce_pair_up c d roce --pcap "$TMP/small.pcap" --pcap-max 64K
nsx "$CLIENT" "$TMP/c.sock" "$TMP/d.sock" ernicA ernicB pcap >"$TMP/client2.log" 2>&1 ||
	fail pcap-max-client "$(grep -E 'FAILED|ERROR' "$TMP/client2.log" | head -3 | tr '\n' '|')"
# and frames enough to pass the limit: broadcast pings of 1.4 KB from the namespace's own stack,
# which the bridge floods into both TAPs
nsx ip addr add 192.168.200.50/24 dev br0
nsx ping -b -c 60 -i 0.02 -s 1400 -W 1 192.168.200.255 >/dev/null 2>&1
stop_server PID_A pcap-max-server-exit
stop_server PID_B pcap-max-peer-exit
size=$(stat -c %s "$TMP/small.pcap")
if [ "$size" -le 65536 ] && tshark -r "$TMP/small.pcap" >/dev/null 2>&1 &&
	grep -Eq "^pcap: $TMP/small.pcap: [1-9][0-9]* frames written \([0-9]+ bytes\), 0 dropped with the writer behind, [1-9][0-9]* past the size limit" "$TMP/c.log"; then
	pass pcap-max-bounded
else
	fail pcap-max-bounded "$size bytes; $(grep pcap "$TMP/c.log" | tr '\n' '|')"
fi
finish
