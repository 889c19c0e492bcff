#!/usr/bin/env bash
# s3-clients-ci: the S3 endpoint as stock clients from Debian use it (issue 24), over a TAP in a
# network namespace this test creates: rclone (sync twice, a sync that only changes modification
# times, which rclone does with CopyObject onto the object itself, check, moveto, multipart),
# s3cmd (sync --delete-removed, del --recursive: DeleteObjects), the AWS CLI (cp between keys,
# metadata, a paging listing with a page size of 1 across common prefixes), s3fs (a FUSE mount:
# cp, mv, chmod, rm, mode and mtime kept), and two curl writers racing for one key with
# If-None-Match: *. Every object is compared byte for byte. A client that is not installed
# fails its check (scripts/install-deps.sh installs them all). A second bucket is made by s3cmd,
# listed by the CLI, filled and removed by rclone (buckets=4). Then the store with dir=: objects
# written, the server killed (-9) in the middle of two large PUTs, started again: what was
# acknowledged is back whole with its metadata, the rest whole or absent. Nothing leaves the
# namespace.
. "$(dirname "$0")/lib.sh"
NS=ernic-s3cl-$$
EP=192.168.200.1
URL=http://$EP:9000
MNT=
nsx() { ip netns exec "$NS" "$@"; }

cleanup_ns() {
	[ -n "$MNT" ] && { fusermount -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null; }
	[ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup_ns EXIT

s3_on_tap s3cl s3:size=1G,buckets=4 || finish
for _ in $(seq 50); do nsx curl -s -f --max-time 2 -o /dev/null $URL/ && break; sleep 0.2; done

# Credentials are not checked by the store; the clients want some.
export AWS_ACCESS_KEY_ID=ernic AWS_SECRET_ACCESS_KEY=ernicsecret AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
export RCLONE_CONFIG=/dev/null RCLONE_CONFIG_E_TYPE=s3 RCLONE_CONFIG_E_PROVIDER=Other \
	RCLONE_CONFIG_E_ENDPOINT=$URL RCLONE_CONFIG_E_ACCESS_KEY_ID=ernic \
	RCLONE_CONFIG_E_SECRET_ACCESS_KEY=ernicsecret RCLONE_CONFIG_E_FORCE_PATH_STYLE=true
export HOME=$TMP
unset AWS_CA_BUNDLE AWS_PROFILE # a CA bundle from the environment makes rclone refuse plain HTTP

need() { command -v "$1" >/dev/null || { fail "s3cl-$2" "$1 is not installed (scripts/install-deps.sh)"; return 1; }; }

# same_tree A B: the two directories hold the same files with the same bytes.
same_tree() {
	(cd "$1" && find . -type f | sort | xargs -r md5sum) >"$TMP/tree-a"
	(cd "$2" && find . -type f | sort | xargs -r md5sum) >"$TMP/tree-b"
	cmp -s "$TMP/tree-a" "$TMP/tree-b"
}

# ---- rclone ----
if need rclone rclone; then
	src=$TMP/rc-src
	mkdir -p "$src/dir/sub" "$src/other"
	head -c 1234 /dev/urandom >"$src/a"
	head -c 70000 /dev/urandom >"$src/dir/b"
	head -c 17 /dev/urandom >"$src/dir/sub/c"
	head -c $((12 << 20)) /dev/urandom >"$src/other/big" # multipart at a 5 MiB cutoff
	RC=(rclone --s3-upload-cutoff 5M --s3-chunk-size 5M --retries 1 --low-level-retries 2)
	nsx "${RC[@]}" sync "$src" e:ernic/rc >"$TMP/rc1" 2>&1 && pass s3cl-rclone-sync ||
		fail s3cl-rclone-sync "$(tail -3 "$TMP/rc1" | tr '\n' '|')"
	# Only the modification times change: rclone sets them with a copy onto itself.
	touch -d '2001-02-03 04:05:06' "$src/a" "$src/dir/b"
	nsx "${RC[@]}" sync "$src" e:ernic/rc >"$TMP/rc2" 2>&1 && pass s3cl-rclone-sync-again ||
		fail s3cl-rclone-sync-again "$(tail -3 "$TMP/rc2" | tr '\n' '|')"
	out=$(nsx rclone lsl e:ernic/rc/a 2>&1)
	grep -q "2001-02-03 04:05:06" <<<"$out" && pass s3cl-rclone-mtime || fail s3cl-rclone-mtime "$out"
	nsx rclone check "$src" e:ernic/rc >"$TMP/rc3" 2>&1 && pass s3cl-rclone-check ||
		fail s3cl-rclone-check "$(tail -3 "$TMP/rc3" | tr '\n' '|')"
	# A local file deleted: the next sync deletes it on the server.
	rm "$src/dir/sub/c"
	nsx "${RC[@]}" sync "$src" e:ernic/rc >"$TMP/rc4" 2>&1 && nsx rclone lsf -R e:ernic/rc >"$TMP/rc4-ls" 2>&1 &&
		! grep -qx dir/sub/c "$TMP/rc4-ls" && grep -qx dir/b "$TMP/rc4-ls" && pass s3cl-rclone-sync-delete ||
		fail s3cl-rclone-sync-delete "$(tail -3 "$TMP/rc4" | tr '\n' '|') listed: $(tr '\n' ' ' <"$TMP/rc4-ls")"
	# Server-side move (CopyObject, then DeleteObject).
	nsx rclone moveto e:ernic/rc/dir/b e:ernic/rc/dir/b2 >"$TMP/rc5" 2>&1 &&
		nsx rclone cat e:ernic/rc/dir/b2 >"$TMP/rc-b2" 2>/dev/null && cmp -s "$TMP/rc-b2" "$src/dir/b" &&
		nsx rclone lsf e:ernic/rc/dir >"$TMP/rc5-ls" 2>&1 && ! grep -qx b "$TMP/rc5-ls" && pass s3cl-rclone-moveto ||
		fail s3cl-rclone-moveto "$(tail -3 "$TMP/rc5" | tr '\n' '|') listed: $(tr '\n' ' ' <"$TMP/rc5-ls")"
	nsx rclone copyto e:ernic/rc/other/big "$TMP/rc-big" >/dev/null 2>&1 && cmp -s "$TMP/rc-big" "$src/other/big" &&
		pass s3cl-rclone-multipart || fail s3cl-rclone-multipart "the multipart object differs"
	nsx rclone purge e:ernic/rc >"$TMP/rc6" 2>&1 && [ -z "$(nsx rclone lsf -R e:ernic/rc 2>/dev/null)" ] &&
		pass s3cl-rclone-purge || fail s3cl-rclone-purge "$(tail -3 "$TMP/rc6" | tr '\n' '|')"
fi

# ---- s3cmd ----
if need s3cmd s3cmd; then
	cat >"$TMP/s3cfg" <<EOF
[default]
access_key = ernic
secret_key = ernicsecret
host_base = $EP:9000
host_bucket = $EP:9000
use_https = False
signature_v2 = False
EOF
	S3C=(s3cmd -c "$TMP/s3cfg" --no-progress)
	src=$TMP/s3c-src
	mkdir -p "$src/x/y"
	for i in 1 2 3 4 5; do head -c $((i * 1000)) /dev/urandom >"$src/x/f$i"; done
	head -c 10 /dev/urandom >"$src/x/y/g"
	nsx "${S3C[@]}" sync "$src/" s3://ernic/s3c/ >"$TMP/sc1" 2>&1 && pass s3cl-s3cmd-sync ||
		fail s3cl-s3cmd-sync "$(tail -3 "$TMP/sc1" | tr '\n' '|')"
	rm "$src/x/f2" "$src/x/f4"
	nsx "${S3C[@]}" sync --delete-removed "$src/" s3://ernic/s3c/ >"$TMP/sc2" 2>&1 && pass s3cl-s3cmd-sync-delete-removed ||
		fail s3cl-s3cmd-sync-delete-removed "$(tail -3 "$TMP/sc2" | tr '\n' '|')"
	mkdir -p "$TMP/s3c-back"
	nsx "${S3C[@]}" sync s3://ernic/s3c/ "$TMP/s3c-back/" >"$TMP/sc3" 2>&1 && same_tree "$src" "$TMP/s3c-back" &&
		pass s3cl-s3cmd-back || fail s3cl-s3cmd-back "$(tail -3 "$TMP/sc3" | tr '\n' '|')"
	nsx "${S3C[@]}" del --recursive --force s3://ernic/s3c/ >"$TMP/sc4" 2>&1 &&
		[ -z "$(nsx "${S3C[@]}" ls --recursive s3://ernic/s3c/ 2>/dev/null)" ] && pass s3cl-s3cmd-del-recursive ||
		fail s3cl-s3cmd-del-recursive "$(tail -3 "$TMP/sc4" | tr '\n' '|')"
fi

# ---- AWS CLI ----
# Debian's awscli (version 2), not another aws earlier in PATH.
AWSCLI=/usr/bin/aws
[ -x $AWSCLI ] || fail s3cl-aws "Debian's awscli is not installed (scripts/install-deps.sh)"
if [ -x $AWSCLI ]; then
	AWS=($AWSCLI --endpoint-url "$URL" --no-cli-pager)
	head -c 300000 /dev/urandom >"$TMP/aw"
	nsx "${AWS[@]}" s3 cp "$TMP/aw" s3://ernic/aw/x --metadata mode=644,owner=me --content-type text/x-aw \
		>"$TMP/aw1" 2>&1 && pass s3cl-aws-cp || fail s3cl-aws-cp "$(tail -2 "$TMP/aw1" | tr '\n' '|')"
	nsx "${AWS[@]}" s3 cp s3://ernic/aw/x s3://ernic/aw/y >"$TMP/aw2" 2>&1 &&
		nsx "${AWS[@]}" s3 cp s3://ernic/aw/y "$TMP/aw-back" >/dev/null 2>&1 && cmp -s "$TMP/aw" "$TMP/aw-back" &&
		pass s3cl-aws-copy || fail s3cl-aws-copy "$(tail -2 "$TMP/aw2" | tr '\n' '|')"
	out=$(nsx "${AWS[@]}" s3api head-object --bucket ernic --key aw/y 2>&1)
	grep -q '"mode": "644"' <<<"$out" && grep -q '"owner": "me"' <<<"$out" && grep -q 'text/x-aw' <<<"$out" &&
		pass s3cl-aws-metadata || fail s3cl-aws-metadata "$(tr '\n' ' ' <<<"$out")"
	for k in p/1 p/2 p/3 q r/s/1; do nsx "${AWS[@]}" s3api put-object --bucket ernic --key "aw/$k" >/dev/null 2>&1; done
	# One entry per page across common prefixes: every key and prefix once, and the listing ends.
	out=$(nsx timeout 120 "${AWS[@]}" s3api list-objects-v2 --bucket ernic --prefix aw/ --delimiter / --page-size 1 \
		--query '[CommonPrefixes[].Prefix, Contents[].Key]' --output text 2>&1)
	# The CLI prints each page (None where a page has no prefix or no key): in order, once each.
	got=$(tr '\t' '\n' <<<"$out" | grep -vx None | tr '\n' ' ')
	[ "$got" = "aw/p/ aw/q aw/r/ aw/x aw/y " ] && pass s3cl-aws-paging || fail s3cl-aws-paging "$(tr '\n\t' '| ' <<<"$out")"
	# Additional checksums: boto3's CRC32 of a multipart upload (composite, per part), a
	# SHA-256 given by value and returned with --checksum-mode, and a wrong one refused.
	head -c $((20 << 20)) /dev/urandom >"$TMP/aw-big"
	# boto3 (Debian's python3-boto3, as the CLI of this Debian release has no checksum option on cp)
	cat >"$TMP/cks.py" <<'PY'
import sys, boto3
from boto3.s3.transfer import TransferConfig
s3 = boto3.client("s3", endpoint_url=sys.argv[1])
cfg = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
s3.upload_file(sys.argv[2], "ernic", "aw/big", ExtraArgs={"ChecksumAlgorithm": "CRC32"}, Config=cfg)
h = s3.head_object(Bucket="ernic", Key="aw/big", ChecksumMode="ENABLED")
print(h.get("ChecksumCRC32", "none"))
PY
	out=$(nsx /usr/bin/python3 "$TMP/cks.py" "$URL" "$TMP/aw-big" 2>&1 | tail -1)
	nsx "${AWS[@]}" s3 cp s3://ernic/aw/big "$TMP/aw-big-back" >/dev/null 2>&1 && cmp -s "$TMP/aw-big" "$TMP/aw-big-back" &&
		grep -qx '[A-Za-z0-9+/=]*-4' <<<"$out" && pass s3cl-boto3-checksum-multipart ||
		fail s3cl-boto3-checksum-multipart "$out"
	sha=$(openssl dgst -sha256 -binary "$TMP/aw" | base64)
	nsx "${AWS[@]}" s3api put-object --bucket ernic --key aw/sum --body "$TMP/aw" --checksum-sha256 "$sha" >"$TMP/aw5" 2>&1 &&
		out=$(nsx "${AWS[@]}" s3api head-object --bucket ernic --key aw/sum --checksum-mode ENABLED 2>&1) &&
		grep -qF "\"ChecksumSHA256\": \"$sha\"" <<<"$out" && pass s3cl-aws-checksum-sha256 ||
		fail s3cl-aws-checksum-sha256 "$(tail -2 "$TMP/aw5" | tr '\n' '|') $(tr '\n' ' ' <<<"${out:-}")"
	wrong=$(head -c 32 /dev/zero | base64)
	if nsx "${AWS[@]}" s3api put-object --bucket ernic --key aw/bad --body "$TMP/aw" --checksum-sha256 "$wrong" >"$TMP/aw6" 2>&1; then
		fail s3cl-aws-checksum-wrong "a wrong SHA-256 was taken"
	else
		grep -q BadDigest "$TMP/aw6" && [ "$(nsx curl -s -o /dev/null -w '%{http_code}' "$URL/ernic/aw/bad")" = 404 ] &&
			pass s3cl-aws-checksum-wrong || fail s3cl-aws-checksum-wrong "$(tail -2 "$TMP/aw6" | tr '\n' '|')"
	fi
	nsx "${AWS[@]}" s3 rm --recursive s3://ernic/aw/ >"$TMP/aw3" 2>&1 &&
		[ -z "$(nsx "${AWS[@]}" s3 ls --recursive s3://ernic/aw/ 2>/dev/null)" ] && pass s3cl-aws-rm-recursive ||
		fail s3cl-aws-rm-recursive "$(tail -2 "$TMP/aw3" | tr '\n' '|')"
fi

# ---- buckets (buckets=4): made by s3cmd, listed by the CLI, filled and removed by rclone ----
if [ -n "$(command -v s3cmd)" ] && [ -x $AWSCLI ] && [ -n "$(command -v rclone)" ]; then
	out=$(nsx "${S3C[@]}" mb s3://second 2>&1) &&
		nsx "${AWS[@]}" s3 ls >"$TMP/ls" 2>&1 && grep -q ' second$' "$TMP/ls" && grep -q ' ernic$' "$TMP/ls" &&
		nsx rclone copyto "$TMP/aw" e:second/one >/dev/null 2>&1 &&
		nsx curl -s -f -o "$TMP/second-back" "$URL/second/one" && cmp -s "$TMP/aw" "$TMP/second-back" &&
		nsx rclone purge e:second >"$TMP/purge" 2>&1 &&
		[ "$(nsx curl -s -o /dev/null -w '%{http_code}' -I "$URL/second")" = 404 ] && pass s3cl-buckets ||
		fail s3cl-buckets "$out $(tr '\n' ' ' <"$TMP/ls" 2>/dev/null) $(tail -2 "$TMP/purge" 2>/dev/null | tr '\n' ' ')"
fi

# ---- s3fs ----
if need s3fs s3fs; then
	MNT=$TMP/mnt
	mkdir -p "$MNT"
	echo "ernic:ernicsecret" >"$TMP/passwd"
	chmod 600 "$TMP/passwd"
	# In the namespace's network only (nsenter, not ip netns exec, whose private mount namespace
	# would hide the mount): its traffic goes over the TAP. -f in the background keeps it there.
	nsenter --net="/run/netns/$NS" s3fs ernic "$MNT" -f -o url=$URL -o use_path_request_style -o passwd_file="$TMP/passwd" \
		-o stat_cache_expire=1 -o enable_noobj_cache -o dbglevel=warn >"$TMP/s3fs.log" 2>&1 &
	S3FS_PID=$!
	for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
	if mountpoint -q "$MNT"; then
		pass s3cl-s3fs-mount
		head -c 200000 /dev/urandom >"$TMP/fs"
		cp "$TMP/fs" "$MNT/fs1" && cmp -s "$TMP/fs" "$MNT/fs1" && pass s3cl-s3fs-cp || fail s3cl-s3fs-cp "copy differs"
		chmod 640 "$MNT/fs1" && [ "$(stat -c %a "$MNT/fs1")" = 640 ] && pass s3cl-s3fs-chmod ||
			fail s3cl-s3fs-chmod "mode $(stat -c %a "$MNT/fs1" 2>&1)"
		touch -d '2002-03-04 05:06:07' "$MNT/fs1" && [ "$(stat -c %Y "$MNT/fs1")" = "$(date -d '2002-03-04 05:06:07' +%s)" ] &&
			pass s3cl-s3fs-mtime || fail s3cl-s3fs-mtime "mtime $(stat -c %y "$MNT/fs1" 2>&1)"
		mv "$MNT/fs1" "$MNT/fs2" && cmp -s "$TMP/fs" "$MNT/fs2" && [ ! -e "$MNT/fs1" ] &&
			[ "$(stat -c %a "$MNT/fs2")" = 640 ] && pass s3cl-s3fs-mv || fail s3cl-s3fs-mv "after mv: $(ls -l "$MNT" 2>&1)"
		# What s3fs stored is what another client reads.
		nsx curl -s -f -D "$TMP/fs-head" -o "$TMP/fs-back" "$URL/ernic/fs2" && cmp -s "$TMP/fs" "$TMP/fs-back" &&
			grep -qi '^x-amz-meta-mode: ' "$TMP/fs-head" && pass s3cl-s3fs-stored ||
			fail s3cl-s3fs-stored "$(tr '\r\n' '  ' <"$TMP/fs-head")"
		rm "$MNT/fs2" && [ "$(nsx curl -s -o /dev/null -w '%{http_code}' "$URL/ernic/fs2")" = 404 ] &&
			pass s3cl-s3fs-rm || fail s3cl-s3fs-rm "still there"
		fusermount -u "$MNT" 2>/dev/null || umount "$MNT"
	else
		fail s3cl-s3fs-mount "$(tail -3 "$TMP/s3fs.log" | tr '\n' '|')"
	fi
	MNT=
	kill "$S3FS_PID" 2>/dev/null
	wait "$S3FS_PID" 2>/dev/null
fi

# ---- a lock taken by two writers at once ----
head -c $((4 << 20)) /dev/urandom >"$TMP/lock1"
head -c $((4 << 20)) /dev/urandom >"$TMP/lock2"
lockpids=()
for i in 1 2; do
	nsx curl -s -o /dev/null -w '%{http_code}' --max-time 60 -H 'If-None-Match: *' -T "$TMP/lock$i" \
		"$URL/ernic/lock" >"$TMP/lock-code$i" &
	lockpids+=($!)
done
wait "${lockpids[@]}"
codes=$(printf '%s\n%s\n' "$(cat "$TMP/lock-code1")" "$(cat "$TMP/lock-code2")" | sort | tr '\n' ' ')
nsx curl -s -f -o "$TMP/lock-back" "$URL/ernic/lock"
winner=0
grep -qx 200 "$TMP/lock-code1" && winner=1
grep -qx 200 "$TMP/lock-code2" && winner=2
if [ "$codes" = "200 412 " ] && cmp -s "$TMP/lock-back" "$TMP/lock$winner"; then
	pass s3cl-conditional-race
else
	fail s3cl-conditional-race "codes: $codes"
fi

kill -0 "$SERVER_PID" 2>/dev/null && pass s3cl-server-alive || fail s3cl-server-alive "$(tail -5 "$TMP/server.log")"
kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; rc=$?; SERVER_PID=
[ $rc = 0 ] && pass s3cl-server-stop || fail s3cl-server-stop "exit $rc"

# ---- dir=: kill -9 while objects are being written, then start again ----
STORE=$TMP/store
start_dir_server() { # log
	ip netns exec "$NS" "$BIN" --socket "$TMP/s3b.sock" --backend "s3:size=1G,dir=$STORE" --tap ernic0 2>"$TMP/$1" &
	SERVER_PID=$!
	for _ in $(seq 300); do has_line "$TMP/$1" "tap ernic0: joined to the segment" && break; sleep 0.1; done
	for _ in $(seq 50); do nsx curl -s -f --max-time 2 -o /dev/null $URL/ && return 0; sleep 0.2; done
	return 1
}
if start_dir_server dir1.log; then
	for i in 1 2 3; do head -c $((i * 100000)) /dev/urandom >"$TMP/kept$i"; done
	ok=1
	for i in 1 2 3; do
		nsx curl -s -f --max-time 60 -H "x-amz-meta-n: $i" -T "$TMP/kept$i" "$URL/ernic/kept$i" >/dev/null || ok=0
	done
	nsx curl -s -f --max-time 60 -T "$TMP/kept1" "$URL/ernic/swap" >/dev/null || ok=0
	# A large PUT of a new key and a replacement of "swap", both cut by kill -9 somewhere.
	head -c $((48 << 20)) /dev/urandom >"$TMP/big-new"
	nsx curl -s --max-time 60 -T "$TMP/big-new" "$URL/ernic/inflight" >/dev/null 2>&1 &
	c1=$!
	nsx curl -s --max-time 60 -T "$TMP/big-new" "$URL/ernic/swap" >/dev/null 2>&1 &
	c2=$!
	sleep 0.5
	kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
	wait $c1 $c2 2>/dev/null
	[ $ok = 1 ] && pass s3cl-dir-put || fail s3cl-dir-put "a PUT before the kill failed"
	if start_dir_server dir2.log; then
		bad=""
		for i in 1 2 3; do
			nsx curl -s -f -D "$TMP/h$i" -o "$TMP/back$i" "$URL/ernic/kept$i" && cmp -s "$TMP/kept$i" "$TMP/back$i" &&
				grep -qi "^x-amz-meta-n: $i" "$TMP/h$i" || bad="$bad kept$i"
		done
		[ -z "$bad" ] && pass s3cl-dir-restart || fail s3cl-dir-restart "differs after kill -9:$bad; $(grep 's3:' "$TMP/dir2.log")"
		# Whole or absent; the replaced object the old or the new, never a mix.
		code=$(nsx curl -s -o "$TMP/inflight-back" -w '%{http_code}' "$URL/ernic/inflight")
		nsx curl -s -f -o "$TMP/swap-back" "$URL/ernic/swap"
		if { [ "$code" = 404 ] || cmp -s "$TMP/inflight-back" "$TMP/big-new"; } &&
			{ cmp -s "$TMP/swap-back" "$TMP/kept1" || cmp -s "$TMP/swap-back" "$TMP/big-new"; }; then
			pass s3cl-dir-crash-consistent
		else
			fail s3cl-dir-crash-consistent "inflight HTTP $code, $(stat -c %s "$TMP/inflight-back") bytes; swap $(stat -c %s "$TMP/swap-back") bytes"
		fi
		kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; SERVER_PID=
	else
		fail s3cl-dir-restart "the server did not start again: $(tail -3 "$TMP/dir2.log")"
	fi
else
	fail s3cl-dir-put "the server with dir= did not start: $(tail -3 "$TMP/dir1.log")"
fi
finish
