#!/bin/sh
# The demo's tour of the s3 backend (scripts/demo.sh --backend s3), run in the guest: the ionic
# link comes up, the endpoint answers ping, aws-cli lists the bucket and copies 16 MiB up and
# back down with the same SHA-256, then removes it, s3cmd lists the bucket, and the project's
# S3-over-RDMA client PUTs and GETs 1 MiB through tokens against its registered buffer.
# Every step prints one CHECK line with what it measured.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"
# shellcheck source=SCRIPTDIR/setup.sh
. "$(dirname "$0")/setup.sh"

if ! tour_net; then
	fail link-up "$WHY"
	finish
fi
pass link-up "$(link_summary)"

reach() { ping -c 1 -W 2 $PEER_IP; }
wait_for 30 reach
if out=$(ping -c 5 -i 0.2 -W 2 $PEER_IP 2>&1); then
	pass ping "$(echo "$out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')/5 replies from the endpoint $PEER_IP, rtt avg $(echo "$out" | sed -n 's|^rtt [^=]*= [^/]*/\([^/]*\)/.*|\1|p') ms"
else
	fail ping "$(echo "$out" | tail -2 | tr '\n' ' ')"
	finish
fi

s3_clients_config
note "aws-cli starts slowly under emulation (Python): expect some seconds per command"
if out=$(aws s3 ls 2>&1) && echo "$out" | grep -q " $S3_BUCKET\$"; then
	pass aws-s3-ls "bucket $S3_BUCKET listed by $(aws --version 2>&1 | cut -d' ' -f1)"
else
	fail aws-s3-ls "$(echo "$out" | tail -3 | tr '\n' ' ')"
fi

head -c 16777216 /dev/urandom >/tmp/demo.bin
want=$(sha256sum /tmp/demo.bin | cut -d' ' -f1)
t0=$(now_s)
if out=$(aws s3 cp /tmp/demo.bin "s3://$S3_BUCKET/demo/16MiB.bin" 2>&1); then
	pass aws-s3-cp-up "16 MiB uploaded in $(secs_since "$t0") s"
else
	fail aws-s3-cp-up "$(echo "$out" | tail -3 | tr '\n' ' ')"
fi
t0=$(now_s)
if out=$(aws s3 cp "s3://$S3_BUCKET/demo/16MiB.bin" /tmp/back.bin 2>&1) &&
	got=$(sha256sum /tmp/back.bin | cut -d' ' -f1) && [ "$got" = "$want" ]; then
	pass aws-s3-cp-down "16 MiB downloaded in $(secs_since "$t0") s, SHA-256 $(echo "$got" | cut -c1-16)... matches"
else
	fail aws-s3-cp-down "${got:+SHA-256 $got, want $want; }$(echo "$out" | tail -3 | tr '\n' ' ')"
fi
if out=$(aws s3 rm "s3://$S3_BUCKET/demo/16MiB.bin" 2>&1) && ! aws s3 ls "s3://$S3_BUCKET/demo/" 2>/dev/null | grep -q 16MiB; then
	pass aws-s3-rm "demo/16MiB.bin removed, no longer listed"
else
	fail aws-s3-rm "$(echo "$out" | tail -3 | tr '\n' ' ')"
fi

echo hello >/tmp/hello.txt
if s3cmd put -q /tmp/hello.txt "s3://$S3_BUCKET/demo/hello.txt" >/tmp/s3cmd.out 2>&1 &&
	out=$(s3cmd ls "s3://$S3_BUCKET/demo/" 2>&1) && echo "$out" | grep -q "s3://$S3_BUCKET/demo/hello.txt"; then
	pass s3cmd-ls "$(s3cmd --version 2>&1 | tr -d '\n') lists s3://$S3_BUCKET/demo/hello.txt"
else
	fail s3cmd-ls "$(cat /tmp/s3cmd.out 2>/dev/null; echo "$out" | tail -3 | tr '\n' ' ')"
fi
s3cmd del -q "s3://$S3_BUCKET/demo/hello.txt" >/dev/null 2>&1

# One object of 1 MiB PUT and GET by token: the store RDMA-READs the PUT from the client's
# registered buffer and RDMA-WRITEs the GET into it; the client compares every byte.
if out=$(timeout 120 s3_rdma_client -d "$IB" -a $PEER_IP -b $S3_BUCKET -s 1M -n 1 2>&1); then
	pass rdma-put "1 MiB by RDMA READ from the client's buffer: $(echo "$out" | sed -n 's/^PUT [^:]*: \([0-9.]*\) s.*/\1/p') s"
	pass rdma-get "1 MiB by RDMA WRITE into the client's buffer: $(echo "$out" | sed -n 's/^GET [^:]*: \([0-9.]*\) s.*/\1/p') s, every byte as PUT"
else
	fail rdma-put-get "$(echo "$out" | tail -3 | tr '\n' ' ')"
fi
finish
