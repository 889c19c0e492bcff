#!/usr/bin/env bash
# tap-bench: curl GET and PUT of a 64 MiB object between the kernel's TCP stack and the S3
# endpoint over a TAP (in a private network namespace), beside the same transfers against nginx
# (Debian's nginx-light: sendfile for GET, the DAV module's PUT into tmpfs) in a second namespace
# joined to the first by a veth pair, and beside the single-core OpenSSL MD5 rate over 64 MiB
# (md5-bench, built next to the server; best of ten, around the S3 PUTs), all in the same run: a
# PUT's ETag is the MD5 of its body, so that rate is the ceiling of a PUT on one event-loop thread.
# Beside each S3 rate, the server's CPU time per transfer (least and most of three), which other
# tenants of the machine move less than the rates. Beside the GETs, the TAP's floor: tap-get-floor
# (built next to the server) on a second TAP of the client's namespace answers the same GET with
# the body from its memory by reference, as the server's stack sends it, and does nothing else;
# its rate is the most any server reaches through a TAP here. Goals: GET >= 1.2 x nginx (issue 27),
# PUT >= 0.8 x MD5.
# Usage: [TAP_BENCH_ROUNDS=n] bench/tap_bench.sh path/to/rocm-ernic [csv-file]   (with gnuplot, a chart beside it: csv-file's name, .png)   (root; scripts/install-deps.sh --bench)
set -euo pipefail
BIN=$(readlink -f "$1")
CSV=${2:-}
MD5_BENCH=${MD5_BENCH:-$(dirname "$BIN")/md5-bench}
[ -x "$MD5_BENCH" ] || { echo "tap-bench: $MD5_BENCH missing (build the md5-bench target)" >&2; exit 2; }
FLOOR=${FLOOR:-$(dirname "$BIN")/tap-get-floor}
[ -x "$FLOOR" ] || { echo "tap-bench: $FLOOR missing (build the tap-get-floor target)" >&2; exit 2; }
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[ -x "$NGINX" ] || { echo "tap-bench: nginx missing (scripts/install-deps.sh --bench)" >&2; exit 2; }
NS=ernic-bench-$$
NGX=ernic-bench-ngx-$$
TMP=$(mktemp -d)
SHM=$(mktemp -d /dev/shm/ernic-bench.XXXXXX)   # nginx's files and PUT bodies: memory, as the store's
SIZE=$((64 << 20))
cleanup() {
	[ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
	[ -n "${HPID:-}" ] && kill "$HPID" 2>/dev/null
	[ -n "${FPID:-}" ] && kill "$FPID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null || true
	ip netns del "$NGX" 2>/dev/null || true
	rm -rf "$TMP" "$SHM"
}
trap cleanup EXIT
nsx() { ip netns exec "$NS" "$@"; }

ip netns add "$NS"
ip netns add "$NGX"
nsx ip link set lo up
nsx ip tuntap add dev ernic0 mode tap
nsx ip addr add 192.168.200.2/24 dev ernic0
nsx ip link set ernic0 up
# The floor's TAP, in the client's namespace beside the server's.
nsx ip tuntap add dev ernic1 mode tap
nsx ip addr add 192.168.201.2/24 dev ernic1
nsx ip link set ernic1 up
# The client's namespace reaches nginx's over a veth pair (the kernel's TSO and GRO both ways).
nsx ip link add veth-c type veth peer name veth-n
nsx ip link set veth-n netns "$NGX"
nsx ip addr add 10.77.0.1/24 dev veth-c
nsx ip link set veth-c up
ip netns exec "$NGX" ip addr add 10.77.0.2/24 dev veth-n
ip netns exec "$NGX" ip link set veth-n up
ip netns exec "$NGX" ip link set lo up
ip netns exec "$NS" "$BIN" --socket "$TMP/s.sock" --backend s3:size=512M --tap ernic0 -L warn 2>"$TMP/server.log" &
SPID=$!
ip netns exec "$NS" "$FLOOR" ernic1 192.168.201.1 9000 $SIZE 2>"$TMP/floor.log" &
FPID=$!
head -c $SIZE /dev/urandom >"$TMP/obj"
mkdir -p "$SHM/www" "$SHM/body"
cp "$TMP/obj" "$SHM/www/obj"
cat >"$TMP/nginx.conf" <<NGINXCONF
user root;
worker_processes 1;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/nginx.log;
events { worker_connections 64; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	client_max_body_size 0;
	client_body_buffer_size 1m;
	client_body_temp_path $SHM/body;
	proxy_temp_path $TMP; fastcgi_temp_path $TMP; uwsgi_temp_path $TMP; scgi_temp_path $TMP;
	server {
		listen 10.77.0.2:8099;
		root $SHM/www;
		location / { dav_methods PUT; }
	}
}
NGINXCONF
ip netns exec "$NGX" "$NGINX" -c "$TMP/nginx.conf" -e "$TMP/nginx.log" &
HPID=$!
for _ in $(seq 50); do nsx curl -s -o /dev/null http://192.168.200.1:9000/ && nsx curl -s -o /dev/null http://10.77.0.2:8099/obj -r 0-0 &&
	nsx curl -s -o /dev/null http://192.168.201.1:9000/obj && break; sleep 0.2; done

rate() { # method url -> bytes per second as curl measured it
	if [ "$1" = PUT ]; then
		nsx curl -s -f -o /dev/null -w '%{speed_upload}' -T "$TMP/obj" "$2"
	else
		nsx curl -s -f -o /dev/null -w '%{speed_download}' "$2"
	fi
}
# The server's (or PID's) CPU time so far in us, every thread's run time from schedstat (the
# clock ticks of /proc/PID/stat are 10 ms, about one 64 MiB GET).
server_cpu() { cat /proc/"${1:-$SPID}"/task/*/schedstat | awk '{ns += $1} END {printf "%d", ns / 1000}'; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f-%.1f", a/1000, b/1000}'; }
best() { # method url -> BEST: best of three in GB/s; CPU_MS: the server's CPU per transfer, least-most of the three
	local b=0 r c0 c1 lo=999999999 hi=0
	for _ in 1 2 3; do
		c0=$(server_cpu)
		r=$(rate "$1" "$2")
		c1=$(( $(server_cpu) - c0 ))
		b=$(awk -v a="$b" -v c="$r" 'BEGIN{print (c>a)?c:a}')
		[ "$c1" -lt "$lo" ] && lo=$c1
		[ "$c1" -gt "$hi" ] && hi=$c1
	done
	CPU_MS=$(ms "$lo" "$hi") CPU_MIN=$((lo / 1000))
	BEST=$(awk -v v="$b" 'BEGIN{printf "%.3f", v/1e9}')
}
# The machine's single-core MD5 rate: the best of five before the S3 PUTs and five after them.
md5=$("$MD5_BENCH" $((SIZE >> 20)) 5)
best PUT http://192.168.200.1:9000/ernic/obj; put_s3=$BEST put_ms=$CPU_MS put_min=$CPU_MIN
md5=$(awk -v a="$md5" -v b="$("$MD5_BENCH" $((SIZE >> 20)) 5)" 'BEGIN{print (b>a)?b:a}')
md5_ms=$(awk -v m="$md5" -v s=$SIZE 'BEGIN{printf "%.0f", s/(m*1e9)*1000}')
best PUT http://10.77.0.2:8099/up; put_ng=$BEST
# GET: the three servers alternate (S3 nginx floor, then floor nginx S3, and so on for
# TAP_BENCH_ROUNDS rounds, 3 by default), so a change in the machine's load falls on all; each
# keeps its best, and the mean of its rounds is kept beside it (a best of a few transfers of
# about 15 ms each moves a lot between runs; the means of more rounds move less).
rounds=${TAP_BENCH_ROUNDS:-3}
get_s3=0 get_ng=0 get_fl=0 lo=999999999 hi=0 flo=999999999 fhi=0 sum_s3=0 sum_ng=0 sum_fl=0
for k in $(seq "$rounds"); do
	if [ $((k % 2)) = 1 ]; then order="s3 ngx flr"; else order="flr ngx s3"; fi
	for side in $order; do
		if [ "$side" = ngx ]; then
			r=$(rate GET http://10.77.0.2:8099/obj)
			get_ng=$(awk -v a="$get_ng" -v c="$r" 'BEGIN{print (c>a)?c:a}')
			sum_ng=$(awk -v a="$sum_ng" -v c="$r" 'BEGIN{print a+c}')
			continue
		fi
		if [ "$side" = flr ]; then
			c0=$(server_cpu "$FPID")
			r=$(rate GET http://192.168.201.1:9000/obj)
			c1=$(( $(server_cpu "$FPID") - c0 ))
			get_fl=$(awk -v a="$get_fl" -v c="$r" 'BEGIN{print (c>a)?c:a}')
			sum_fl=$(awk -v a="$sum_fl" -v c="$r" 'BEGIN{print a+c}')
			[ "$c1" -lt "$flo" ] && flo=$c1
			[ "$c1" -gt "$fhi" ] && fhi=$c1
			continue
		fi
		c0=$(server_cpu)
		r=$(rate GET http://192.168.200.1:9000/ernic/obj)
		c1=$(( $(server_cpu) - c0 ))
		get_s3=$(awk -v a="$get_s3" -v c="$r" 'BEGIN{print (c>a)?c:a}')
		sum_s3=$(awk -v a="$sum_s3" -v c="$r" 'BEGIN{print a+c}')
		[ "$c1" -lt "$lo" ] && lo=$c1
		[ "$c1" -gt "$hi" ] && hi=$c1
	done
done
mean_ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", (b>0)?a/b:0}'; }
mean_s3_ng=$(mean_ratio "$sum_s3" "$sum_ng") mean_fl_ng=$(mean_ratio "$sum_fl" "$sum_ng") mean_s3_fl=$(mean_ratio "$sum_s3" "$sum_fl")
get_ms=$(ms "$lo" "$hi") fl_ms=$(ms "$flo" "$fhi")
# PERF=FILE: a profile of the server (perf record -g) over twenty more S3 GETs, after the figures.
if [ -n "${PERF:-}" ]; then
	perf record -q -g -o "$PERF" -p "$SPID" 2>/dev/null &
	PERFPID=$!
	sleep 1
	for _ in $(seq 20); do rate GET http://192.168.200.1:9000/ernic/obj >/dev/null; done
	kill -INT "$PERFPID"
	wait "$PERFPID" || true
fi
get_s3=$(awk -v v="$get_s3" 'BEGIN{printf "%.3f", v/1e9}')
get_ng=$(awk -v v="$get_ng" 'BEGIN{printf "%.3f", v/1e9}')
get_fl=$(awk -v v="$get_fl" 'BEGIN{printf "%.3f", v/1e9}')
fl_ratio=$(awk -v s="$get_fl" -v n="$get_ng" 'BEGIN{printf "%.2f", (n>0)?s/n:0}')
s3_fl=$(awk -v s="$get_s3" -v f="$get_fl" 'BEGIN{printf "%.2f", (f>0)?s/f:0}')
ratio=$(awk -v p="$put_s3" -v m="$md5" 'BEGIN{printf "%.2f", (m>0)?p/m:0}')
cpu_ratio=$(awk -v p="$put_min" -v m="$md5_ms" 'BEGIN{printf "%.2f", (p>0)?m/p:0}')
get_ratio=$(awk -v s="$get_s3" -v n="$get_ng" 'BEGIN{printf "%.2f", (n>0)?s/n:0}')
printf '%-4s %-34s %8s  %s\n' op path GB/s "server CPU per 64 MiB, all threads (least-most of three)"
printf '%-4s %-34s %8s  %s\n' GET "S3 endpoint over TAP" "$get_s3" "${get_ms} ms" GET "nginx over veth" "$get_ng" "" \
	GET "the TAP's floor (tap-get-floor)" "$get_fl" "${fl_ms} ms"
printf '%-4s %-34s %8s  %s\n' PUT "S3 endpoint over TAP" "$put_s3" "${put_ms} ms" PUT "nginx over veth (DAV, tmpfs)" "$put_ng" ""
printf '%-4s %-34s %8s  %s\n' MD5 "OpenSSL, one core, 64 MiB" "$md5" "${md5_ms} ms"
printf '%-39s %8s  %s\n' "S3 GET / nginx GET (goal >= 1.2)" "$get_ratio" "(means of $rounds rounds: $mean_s3_ng)" \
	"floor GET / nginx GET" "$fl_ratio" "(the most a server reaches through this TAP; means: $mean_fl_ng)" \
	"S3 GET / floor GET" "$s3_fl" "(means: $mean_s3_fl)"
printf '%-39s %8s  %s\n' "S3 PUT / MD5 (goal >= 0.8)" "$ratio" "$cpu_ratio (MD5 time / least server CPU time, both threads: not a bound on the ratio)"
if [ -n "$CSV" ]; then
	{ echo "op,path,gbps,server_cpu_ms_range"; echo "GET,tap-s3,$get_s3,$get_ms"; echo "GET,veth-nginx,$get_ng,"; echo "GET,tap-floor,$get_fl,$fl_ms"
	  echo "PUT,tap-s3,$put_s3,$put_ms"; echo "PUT,veth-nginx,$put_ng,"; echo "MD5,openssl-one-core,$md5,$md5_ms"
	  echo "RATIO,get-s3-over-nginx,$get_ratio,"
	  echo "RATIO,get-floor-over-nginx,$fl_ratio,"; echo "RATIO,get-s3-over-floor,$s3_fl,"; echo "RATIO,put-s3-over-md5,$ratio,"
	  echo "RATIO,get-s3-over-nginx-means,$mean_s3_ng,"; echo "RATIO,get-floor-over-nginx-means,$mean_fl_ng,"
	  echo "RATIO,get-s3-over-floor-means,$mean_s3_fl,"; } >"$CSV"
fi
# The chart beside the CSV (gnuplot, where installed): each GB/s figure of the run.
if [ -n "$CSV" ] && command -v gnuplot >/dev/null; then
	printf '"GET S3/TAP" %s\n"GET nginx/veth" %s\n"GET floor/TAP" %s\n"PUT S3/TAP" %s\n"PUT nginx/veth" %s\n"MD5 one core" %s\n' \
		"$get_s3" "$get_ng" "$get_fl" "$put_s3" "$put_ng" "$md5" >"$TMP/chart.dat"
	gnuplot <<EOF
set terminal pngcairo size 800,400 font "sans,10" noenhanced
set output "${CSV%.csv}.png"
set title "64 MiB, one run: GET S3 / nginx $get_ratio (goal 1.2), PUT S3 / MD5 $ratio (goal 0.8)"
set style fill solid 0.7
set ylabel "GB/s"
set yrange [0:*]
set grid ytics
set boxwidth 0.6
unset key
plot "$TMP/chart.dat" using 0:2:xticlabels(1) with boxes lc rgb "#4169e1"
EOF
fi
