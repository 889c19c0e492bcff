#!/usr/bin/env bash
# s3-ci: start the real server once per documented s3 option spelling; check the store,
# endpoint and derived MAC it reports, and that malformed options are refused before the
# device (its socket) appears.
. "$(dirname "$0")/lib.sh"

line() { # bucket bytes ip port mac
	echo "ionic_datapath: s3 bucket '$1' $2 bytes at http://$3:$4/ mac $5"
}
DEF_MAC=02:53:c0:a8:c8:01

# The spellings of the specification's own examples.
expect_start s3-default "$(line ernic 268435456 192.168.200.1 9000 $DEF_MAC)" --backend s3
expect_start s3-size-bucket "$(line bench 1073741824 192.168.200.1 9000 $DEF_MAC)" \
	--backend s3:size=1G,bucket=bench
expect_start s3-ip-port "$(line ernic 268435456 10.0.0.5 8080 02:53:0a:00:00:05)" \
	--backend s3:ip=10.0.0.5,port=8080

# Every size spelling.
for spec in 4096:4096 512K:524288 512KiB:524288 64M:67108864 64MiB:67108864 2G:2147483648 \
	    2GiB:2147483648 1T:1099511627776 1TiB:1099511627776 3k:3072 16m:16777216; do
	expect_start "s3-size-${spec%%:*}" "$(line ernic "${spec#*:}" 192.168.200.1 9000 $DEF_MAC)" \
		--backend "s3:size=${spec%%:*}"
done

# Bucket names at the edges of the DNS-label rule.
expect_start s3-bucket-3 "$(line abc 268435456 192.168.200.1 9000 $DEF_MAC)" --backend s3:bucket=abc
expect_start s3-bucket-dots "$(line a.b-c.0 268435456 192.168.200.1 9000 $DEF_MAC)" \
	--backend s3:bucket=a.b-c.0
b63=a$(printf 'b%.0s' $(seq 61))z
expect_start s3-bucket-63 "$(line "$b63" 268435456 192.168.200.1 9000 $DEF_MAC)" --backend "s3:bucket=$b63"

# Ports and addresses at the edges, and the MAC each address derives.
expect_start s3-port-1 "$(line ernic 268435456 192.168.200.1 1 $DEF_MAC)" --backend s3:port=1
expect_start s3-port-65535 "$(line ernic 268435456 192.168.200.1 65535 $DEF_MAC)" --backend s3:port=65535
expect_start s3-ip-high "$(line ernic 268435456 223.255.254.253 9000 02:53:df:ff:fe:fd)" \
	--backend s3:ip=223.255.254.253
expect_start s3-ip-low "$(line ernic 268435456 1.0.0.0 9000 02:53:01:00:00:00)" --backend s3:ip=1.0.0.0

# objects= and maxpart= are reported on the limits line.
expect_start s3-objects-1 "ionic_datapath: s3 store limits: objects=1 maxpart=268435456" \
	--backend s3:objects=1
expect_start s3-objects-65536 "ionic_datapath: s3 store limits: objects=65536 maxpart=268435456" \
	--backend s3:objects=65536
expect_start s3-maxpart "ionic_datapath: s3 store limits: objects=256 maxpart=5242880" \
	--backend s3:maxpart=5MiB

# Everything at once, in another order, with the short option spellings.
sock="$TMP/s3-all.sock"
if start_server s3-all "$sock" -s "$sock" -b s3:port=8081,maxpart=1G,ip=10.1.2.3,objects=1000,bucket=data.set-1,size=3G; then
	has_line "$TMP/s3-all.log" "$(line data.set-1 3221225472 10.1.2.3 8081 02:53:0a:01:02:03)" &&
	has_line "$TMP/s3-all.log" "ionic_datapath: s3 store limits: objects=1000 maxpart=1073741824" &&
		pass s3-all-options || fail s3-all-options "$(tr '\n' '|' < "$TMP/s3-all.log")"
	stop_server TERM || fail s3-all-options-exit "status $?"
else
	fail s3-all-options "did not start"
fi
# --backend=VALUE form.
expect_start s3-long-equals "$(line bench 268435456 192.168.200.1 9000 $DEF_MAC)" --backend=s3:bucket=bench

# Malformed options: refused with one line, status 2, no socket.
bad() { # name spec message-after-"Error: s3 backend: "
	expect_refused "$1" 2 "Error: s3 backend: $3" --backend "$2"
}
bad s3-bad-size-bogus s3:size=bogus "bad size 'bogus'"
bad s3-bad-size-empty s3:size= "bad size ''"
bad s3-bad-size-zero s3:size=0 "bad size '0'"
bad s3-bad-size-suffix s3:size=1MB "bad size '1MB'"
bad s3-bad-size-frac s3:size=1.5G "bad size '1.5G'"
bad s3-bad-size-neg s3:size=-1 "bad size '-1'"
bad s3-bad-size-overflow s3:size=16777216T "bad size '16777216T'"
bad s3-bad-size-overflow2 s3:size=18446744073709551616 "bad size '18446744073709551616'"
bad s3-bad-size-junk s3:size=64Mx "bad size '64Mx'"
bad s3-bad-maxpart s3:maxpart=0 "bad maxpart '0'"
bad s3-bad-maxpart-junk s3:maxpart=lots "bad maxpart 'lots'"
bad s3-bad-objects-0 s3:objects=0 "bad objects '0'"
bad s3-bad-objects-max s3:objects=65537 "bad objects '65537'"
bad s3-bad-objects-empty s3:objects= "bad objects ''"
bad s3-bad-objects-hex s3:objects=0x10 "bad objects '0x10'"
bad s3-bad-bucket-short s3:bucket=ab "bad bucket 'ab'"
bad s3-bad-bucket-long "s3:bucket=${b63}x" "bad bucket '${b63}x'"
bad s3-bad-bucket-upper s3:bucket=Ernic "bad bucket 'Ernic'"
bad s3-bad-bucket-dash s3:bucket=-ernic "bad bucket '-ernic'"
bad s3-bad-bucket-dot s3:bucket=ernic. "bad bucket 'ernic.'"
bad s3-bad-bucket-char s3:bucket=er_nic "bad bucket 'er_nic'"
bad s3-bad-bucket-empty s3:bucket= "bad bucket ''"
bad s3-bad-ip-short s3:ip=192.168.200 "bad ip '192.168.200'"
bad s3-bad-ip-octet s3:ip=192.168.200.256 "bad ip '192.168.200.256'"
bad s3-bad-ip-long s3:ip=1.2.3.4.5 "bad ip '1.2.3.4.5'"
bad s3-bad-ip-zero s3:ip=0.0.0.0 "bad ip '0.0.0.0'"
bad s3-bad-ip-mcast s3:ip=239.1.1.1 "bad ip '239.1.1.1'"
bad s3-bad-ip-name s3:ip=localhost "bad ip 'localhost'"
bad s3-bad-ip-v6 s3:ip=::1 "bad ip '::1'"
bad s3-bad-port-0 s3:port=0 "bad port '0'"
bad s3-bad-port-big s3:port=65536 "bad port '65536'"
bad s3-bad-port-name s3:port=http "bad port 'http'"
bad s3-unknown s3:foo=1 "unknown option 'foo'"
bad s3-unknown-nvmeof-key s3:bs=512 "unknown option 'bs'"
bad s3-no-value s3:size "option 'size' needs a value"
bad s3-duplicate s3:size=1G,size=2G "duplicate option 'size'"
bad s3-empty-list s3: "empty option"
bad s3-trailing-comma s3:size=1G, "empty option"
bad s3-double-comma s3:size=1G,,port=80 "empty option"
expect_refused s3-unknown-backend 2 "Error: unknown backend 's4'" --backend s4:size=1G

finish
