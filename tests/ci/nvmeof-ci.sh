#!/usr/bin/env bash
# nvmeof-ci: start the real server once per documented nvmeof option spelling; check the
# controller it reports, that a file-backed namespace appears on disk at the right size,
# that the image rules hold, and that malformed options are refused.
. "$(dirname "$0")/lib.sh"

line() { # nqn bytes bs ip port
	echo "ionic_datapath: nvmeof target '$1' $2 bytes bs=$3 at $4:$5"
}
fsize() { stat -c %s "$1" 2>/dev/null || echo missing; }

# The specification's examples.
expect_start nvmeof-default "$(line nvmet-test 67108864 512 192.168.200.1 4420)" --backend nvmeof
expect_start nvmeof-1g-4k "$(line nvmet-test 1073741824 4096 192.168.200.1 4420)" \
	--backend nvmeof:size=1G,bs=4096
img="$TMP/ns0.img"
expect_start nvmeof-file "$(line nvmet-test 1073741824 512 192.168.200.1 4420)" \
	--backend "nvmeof:file=$img,size=1G"
[ "$(fsize "$img")" = 1073741824 ] && pass nvmeof-file-on-disk || fail nvmeof-file-on-disk "size $(fsize "$img")"

# Sizes and block sizes.
for spec in 512:512:512 1024:1K:1024 2048:2MiB:2097152 4096:64M:67108864 4096:1T:1099511627776 \
	    512:3k:3072; do
	IFS=: read -r bs sz bytes <<<"$spec"
	expect_start "nvmeof-bs$bs-size$sz" "$(line nvmet-test "$bytes" "$bs" 192.168.200.1 4420)" \
		--backend "nvmeof:bs=$bs,size=$sz"
done

# Image rules. An existing image without size= keeps its own size.
old="$TMP/old.img"
truncate -s 8M "$old"
expect_start nvmeof-file-keeps "$(line nvmet-test 8388608 512 192.168.200.1 4420)" \
	--backend "nvmeof:file=$old"
[ "$(fsize "$old")" = 8388608 ] && pass nvmeof-file-keeps-on-disk || fail nvmeof-file-keeps-on-disk "$(fsize "$old")"
# A larger size= grows it; the data already there stays.
printf 'earlier run' | dd of="$old" bs=1 seek=4096 conv=notrunc status=none
expect_start nvmeof-file-grows "$(line nvmet-test 16777216 4096 192.168.200.1 4420)" \
	--backend "nvmeof:file=$old,size=16M,bs=4096"
[ "$(fsize "$old")" = 16777216 ] && pass nvmeof-file-grows-on-disk || fail nvmeof-file-grows-on-disk "$(fsize "$old")"
[ "$(dd if="$old" bs=1 skip=4096 count=11 status=none)" = "earlier run" ] &&
	pass nvmeof-file-grow-keeps-data || fail nvmeof-file-grow-keeps-data "data changed"
# A smaller one is refused when the namespace is created (status 1, image untouched).
expect_refused nvmeof-file-no-shrink 1 \
	"nvmeof backend: $old is 16777216 bytes; size=8388608 would truncate it" \
	--backend "nvmeof:file=$old,size=8M"
[ "$(fsize "$old")" = 16777216 ] && pass nvmeof-file-no-shrink-on-disk || fail nvmeof-file-no-shrink-on-disk "$(fsize "$old")"
# Without size=, the image must be a whole number of blocks.
odd="$TMP/odd.img"
truncate -s 4608 "$odd"
expect_refused nvmeof-file-partial-block 1 \
	"nvmeof backend: $odd is 4608 bytes, not a whole number of 4096-byte blocks" \
	--backend "nvmeof:file=$odd,bs=4096"
# An empty file is created at size= (or the default size).
empty="$TMP/empty.img"
: > "$empty"
expect_start nvmeof-file-empty "$(line nvmet-test 67108864 512 192.168.200.1 4420)" \
	--backend "nvmeof:file=$empty"
[ "$(fsize "$empty")" = 67108864 ] && pass nvmeof-file-empty-on-disk || fail nvmeof-file-empty-on-disk "$(fsize "$empty")"
expect_refused nvmeof-file-dir 1 "nvmeof backend: cannot open $TMP: Is a directory" \
	--backend "nvmeof:file=$TMP"
expect_refused nvmeof-file-dev 1 "nvmeof backend: /dev/null is not a regular file" \
	--backend "nvmeof:file=/dev/null"

# One image, two servers: the second is refused while the first runs.
sock="$TMP/first.sock"
if start_server nvmeof-first "$sock" --socket "$sock" --backend "nvmeof:file=$old"; then
	expect_refused nvmeof-file-in-use 1 "nvmeof backend: $old is in use by another process" \
		--backend "nvmeof:file=$old"
	kill -0 "$SERVER_PID" && pass nvmeof-first-still-running || fail nvmeof-first-still-running "gone"
	stop_server INT
	rc=$?
	[ "$rc" = 0 ] && pass nvmeof-sigint-exit || fail nvmeof-sigint-exit "status $rc"
	has_line "$TMP/nvmeof-first.log" "nvmeof backend: $old written back" &&
		pass nvmeof-flushed-on-exit || fail nvmeof-flushed-on-exit "$(tr '\n' '|' < "$TMP/nvmeof-first.log")"
else
	fail nvmeof-first "did not start"
fi

# The other options, reported on the namespace line.
sock="$TMP/all.sock"
if start_server nvmeof-all "$sock" -s "$sock" \
	-b "nvmeof:nqn=nqn.2026-11.io.example:ns7,ip=10.0.0.9,port=4421,queues=64,nsid=7,model=Model X 1,serial=SN-42,bs=2048,size=4M"; then
	has_line "$TMP/nvmeof-all.log" "$(line nqn.2026-11.io.example:ns7 4194304 2048 10.0.0.9 4421)" &&
	has_line "$TMP/nvmeof-all.log" "ionic_datapath: nvmeof namespace nsid=7 on RAM, queues=64, model 'Model X 1', serial 'SN-42'" &&
		pass nvmeof-all-options || fail nvmeof-all-options "$(tr '\n' '|' < "$TMP/nvmeof-all.log")"
	stop_server TERM || fail nvmeof-all-options-exit "status $?"
else
	fail nvmeof-all-options "did not start"
fi
m40=$(printf 'm%.0s' $(seq 40))
s20=$(printf 's%.0s' $(seq 20))
expect_start nvmeof-limits "ionic_datapath: nvmeof namespace nsid=4294967294 on RAM, queues=1, model '$m40', serial '$s20'" \
	--backend "nvmeof:queues=1,nsid=4294967294,model=$m40,serial=$s20"

# Malformed options.
bad() { # name spec message-after-"Error: nvmeof backend: "
	expect_refused "$1" 2 "Error: nvmeof backend: $3" --backend "$2"
}
bad nvmeof-bad-size-bogus nvmeof:size=bogus "bad size 'bogus'"
bad nvmeof-bad-size-empty nvmeof:size= "bad size ''"
bad nvmeof-bad-size-zero nvmeof:size=0 "bad size '0'"
bad nvmeof-bad-size-overflow nvmeof:size=99999999999999999999 "bad size '99999999999999999999'"
bad nvmeof-bad-size-blocks nvmeof:size=1000 "size 1000 is not a whole number of 512-byte blocks"
bad nvmeof-bad-size-blocks-4k nvmeof:size=6K,bs=4096 "size 6144 is not a whole number of 4096-byte blocks"
bad nvmeof-bad-bs nvmeof:bs=8192 "bad bs '8192'"
bad nvmeof-bad-bs-small nvmeof:bs=256 "bad bs '256'"
bad nvmeof-bad-bs-suffix nvmeof:bs=4K "bad bs '4K'"
bad nvmeof-bad-queues-0 nvmeof:queues=0 "bad queues '0'"
bad nvmeof-bad-queues-65 nvmeof:queues=65 "bad queues '65'"
bad nvmeof-bad-nsid-0 nvmeof:nsid=0 "bad nsid '0'"
bad nvmeof-bad-nsid-bcast nvmeof:nsid=4294967295 "bad nsid '4294967295'"
bad nvmeof-bad-model-empty nvmeof:model= "bad model ''"
bad nvmeof-bad-model-long "nvmeof:model=${m40}x" "bad model '${m40}x'"
bad nvmeof-bad-model-ctrl "nvmeof:model=a$(printf '\t')b" "bad model 'a$(printf '\t')b'"
bad nvmeof-bad-serial-empty nvmeof:serial= "bad serial ''"
bad nvmeof-bad-serial-long "nvmeof:serial=${s20}x" "bad serial '${s20}x'"
bad nvmeof-bad-nqn-empty nvmeof:nqn= "bad nqn ''"
bad nvmeof-bad-nqn-discovery nvmeof:nqn=nqn.2014-08.org.nvmexpress.discovery \
	"bad nqn 'nqn.2014-08.org.nvmexpress.discovery'"
bad nvmeof-bad-ip nvmeof:ip=192.168.200.01 "bad ip '192.168.200.01'"
bad nvmeof-bad-ip-v6 nvmeof:ip=::ffff:192.168.200.1 "bad ip '::ffff:192.168.200.1'"
bad nvmeof-bad-port nvmeof:port=0 "bad port '0'"
bad nvmeof-bad-file-empty nvmeof:file= "bad file ''"
bad nvmeof-unknown nvmeof:foo=bar "unknown option 'foo'"
bad nvmeof-unknown-s3-key nvmeof:bucket=abc "unknown option 'bucket'"
bad nvmeof-no-value nvmeof:bs "option 'bs' needs a value"
bad nvmeof-duplicate nvmeof:size=1G,bs=512,size=2G "duplicate option 'size'"
bad nvmeof-empty-list nvmeof: "empty option"
# A refused option never creates the file it names.
expect_refused nvmeof-bad-with-file 2 "Error: nvmeof backend: bad bs '3'" \
	--backend "nvmeof:file=$TMP/never.img,bs=3"
[ -e "$TMP/never.img" ] && fail nvmeof-bad-no-file "image created" || pass nvmeof-bad-no-file

finish
