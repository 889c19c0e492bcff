/*
 * s3-rdma-bench: what an S3 request by RDMA costs the server, end to end through the device, as a
 * host with KVM would see it (issue 27, item 1b): no guest and no QEMU. The real server runs with
 * --backend s3 and a TAP; this program is both sides of a client that uses S3 over RDMA:
 *
 *  - the RDMA side drives the device over vfio-user as ionic_rdma does (tests/lib): the RDMA LIF's
 *    queues and one memory registration of 1 MiB of "guest" memory (local write, remote read and
 *    write), whose rkey goes into each request's token;
 *  - the HTTP side is a plain TCP socket through the kernel and the TAP to the endpoint
 *    (192.168.200.1:9000; bench/s3_rdma_bench.sh makes the namespace and the TAP), one keep-alive
 *    connection, requests one at a time.
 *
 * Two paths for the HTTP side (S3_RDMA_BENCH_VIA):
 *
 *  - tap (the default): the server owns the TAP (--tap), as when the client is another host. Its
 *    TAP writes run the client's TCP receive and wake the client, all counted as the server's.
 *  - device: the client is a guest. The server has no TAP; this program relays the TAP to the
 *    device's Ethernet queue pair as the ionic driver would (bench/guest_relay.c), so the request
 *    reaches the endpoint through the device's TX ring and the answer comes back through its RX
 *    ring and an interrupt. The server's CPU per request is then what a host with KVM spends on a
 *    guest's request; the client's network stack is the guest's own cost, as the issue counts it.
 *    The TAP floor does not apply there (the server makes no TAP call); the denominator beside it
 *    is one posted vfio-user message answered by an interrupt (bench_posted_irq).
 *
 * A GET with x-amz-rdma-token (the cuObject descriptor) has the store RDMA-WRITE the object into the
 * registration and answer with no body; a PUT with one has it RDMA-READ the object out of it. Cases:
 * GET and PUT of 4 KiB and of 1 MiB, one request at a time (qd1) and several pipelined on the
 * connection (HTTP/1.1; qd16 at 4 KiB, qd4 at 1 MiB), each for a few seconds, the list and then the
 * list backwards (A B B A); each case's first and last GET's bytes are compared with what was stored,
 * its first and last PUT's ETag with the MD5 of what was in the buffer. Each case reports operations per second and the server's CPU
 * time per operation (/proc/PID/schedstat, every thread of the server). The denominators, measured
 * in the same run: a vfio-user REGION_READ round trip (the least a message costs the server), a TCP
 * round trip over loopback of the same request and answer sizes in the same process (what the
 * kernel's socket path costs the client per request, outside the server), memcpy of the bytes, and
 * the TAP's floor before the server starts and after it ends (bench/http_floor.c: the same GET
 * 4 KiB request through the same TAP, answered with as many bytes by a responder that parses
 * nothing; its CPU per request is what the kernel alone costs the side that owns the TAP).
 *
 * Usage: s3-rdma-bench path/to/rocm-ernic TAP [seconds-per-case] [csv-file]
 * S3_RDMA_BENCH_ONLY=NAME (get-4k, put-4k, get-1m, put-1m) runs that case alone, for a profile.
 * S3_RDMA_BENCH_VIA=device takes the HTTP through the device's Ethernet queues (above).
 * The CSV has one row per measurement (floor-get-4k-qd1/qd16: the responder's figures in the
 * server's columns): case,ops_per_s,server_us_per_op,server_cpu_pct,
 * server_user_us_per_op (the part in user space, from /proc/PID/stat's utime: the rest is the
 * kernel's, most of it the TAP's writes, whose receive path and wake-up of this client run in
 * the server's system calls).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "guest_relay.h"
#include "http_floor.h"
#include "ionic_rdma_guest.h"
#include "vfu_client.h"

#include "bench_clock.h"

#define EP_ADDR "192.168.200.1"
#define EP_PORT 9000
#define PD      1
#define MR_VA   (RG_SCRATCH + 0x100000)        /* the registration: the upper half of the scratch area */
#define MR_LEN  0x100000u
#define MR_KEY  RG_KEY(1, 0x42)
#define RESP_MAX 8192

static struct vfc_server srv;
static struct vfc cl;
static struct ionic_guest g;
static struct rg_eq eq;
static struct rg_cq acq;
static struct rg_aq aq;
static double seconds = 2.0;
static int http_fd = -1;
static bool via_device;           /* S3_RDMA_BENCH_VIA=device: HTTP through the device's Ethernet queues */
static struct guest_relay relay;

static double now_s(void)
{
	return bench_now_s();
}

/* The server's time on a CPU so far (all its threads), in ns. */
static uint64_t server_ns(void)
{
	return bench_cpu_ns(srv.pid);
}

/* The server's user-space CPU time so far (every thread, /proc/PID/stat's utime), in ns. */
static uint64_t server_user_ns(void)
{
	char dir[32];

	snprintf(dir, sizeof(dir), "/proc/%d", (int)srv.pid);
	return bench_utime_ns(dir);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "s3-rdma-bench: %s (%d)\n", what, rc);
	vfc_server_remove(&srv);
	exit(1);
}

static uint8_t pat(uint64_t seed, size_t i)
{
	return (uint8_t)((seed * 2654435761u + i * 131u + (i >> 9)) >> 2);
}

/* ---- HTTP over one keep-alive connection ---- */

static int tcp_connect(const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	for (int tries = 0; tries < 100; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		usleep(100000); /* the endpoint's TAP may still be coming up */
	}
	return -1;
}

static bool send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		b += k;
		n -= (size_t)k;
	}
	return true;
}

struct resp {
	int status;
	size_t head_len;        /* the status line and headers, through the empty line */
	size_t length;          /* Content-Length */
	char etag[40];
};

/* What the connection has received and not yet parsed: rbuf[roff, rlen). */
static char rbuf[1 << 17];
static size_t roff, rlen;

/* The next response on the connection (its body read and dropped); false when the connection failed. */
static bool read_resp(int fd, struct resp *r)
{
	char *end, *p;
	size_t hl, have;

	for (;;) {
		rbuf[rlen] = '\0';
		if ((end = strstr(rbuf + roff, "\r\n\r\n")) != NULL)
			break;
		if (roff > 0) {
			memmove(rbuf, rbuf + roff, rlen - roff);
			rlen -= roff;
			roff = 0;
		}
		if (rlen >= sizeof(rbuf) - 1)
			return false;
		{
			ssize_t k = recv(fd, rbuf + rlen, sizeof(rbuf) - 1 - rlen, 0);

			if (k <= 0)
				return false;
			rlen += (size_t)k;
		}
	}
	p = rbuf + roff;
	hl = (size_t)(end - p) + 4;
	r->head_len = hl;
	r->status = atoi(p + 9);
	r->length = 0;
	r->etag[0] = '\0';
	*end = '\0';
	{
		char *h;

		if ((h = strcasestr(p, "\r\nContent-Length:")) != NULL)
			r->length = strtoul(h + 17, NULL, 10);
		if ((h = strcasestr(p, "\r\nETag: \"")) != NULL)
			sscanf(h + 9, "%32[0-9a-f]", r->etag);
	}
	roff += hl;
	/* the body: what is buffered, then the rest from the socket */
	have = rlen - roff < r->length ? rlen - roff : r->length;
	roff += have;
	while (have < r->length) {
		uint8_t tmp[65536];
		size_t want = r->length - have < sizeof(tmp) ? r->length - have : sizeof(tmp);
		ssize_t k = recv(fd, tmp, want, 0);

		if (k <= 0)
			return false;
		have += (size_t)k;
	}
	if (roff == rlen)
		roff = rlen = 0;
	return true;
}

/* A request (head, then body bytes) and its response; false when the connection failed. */
static bool http(int fd, const char *head, const void *body, size_t blen, struct resp *r)
{
	return send_all(fd, head, strlen(head)) && (blen == 0 || send_all(fd, body, blen)) && read_resp(fd, r);
}

/* The cuObject descriptor of the registration's first len bytes. */
static void token(char out[128], uint64_t len)
{
	snprintf(out, 128, "%016" PRIx64 ":%08" PRIx64 ":%08" PRIx32 ":0000:000001:1:00000000000000000000ffffc0a8c802",
		 (uint64_t)MR_VA, len, (uint32_t)MR_KEY);
}

static void md5_hex(const uint8_t *p, size_t n, char out[33])
{
	unsigned char d[16];
	unsigned int dl = 0;

	EVP_Digest(p, n, d, &dl, EVP_md5(), NULL);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* A plain PUT of size bytes of pattern seed (the objects the GETs read). */
static void put_plain(const char *key, size_t size, uint64_t seed)
{
	uint8_t *b = malloc(size);
	char head[256];
	struct resp r = { 0 };

	if (b == NULL)
		die("out of memory", 0);
	for (size_t i = 0; i < size; i++)
		b[i] = pat(seed, i);
	snprintf(head, sizeof(head), "PUT /ernic/%s HTTP/1.1\r\nHost: " EP_ADDR "\r\nContent-Length: %zu\r\n\r\n", key,
		 size);
	if (!http(http_fd, head, b, size, &r) || r.status != 200)
		die("a plain PUT failed", r.status);
	free(b);
}

/* The head of a GET by RDMA of key into the registration, or a PUT by RDMA of it to key, of size bytes. */
static void rdma_head(char out[512], bool put, const char *key, size_t size)
{
	char tok[128];

	token(tok, size);
	snprintf(out, 512, "%s /ernic/%s HTTP/1.1\r\nHost: " EP_ADDR "\r\nx-amz-rdma-token: %s\r\n%s\r\n",
		 put ? "PUT" : "GET", key, tok, put ? "Content-Length: 0\r\n" : "");
}

/* One request by RDMA, checked: a GET's bytes against pattern seed, a PUT's ETag against the buffer's MD5. */
static void rdma_checked(bool put, const char *key, size_t size, uint64_t seed)
{
	char head[512], md5[33];
	struct resp r;
	const uint8_t *m = guest_ptr(&g, MR_VA);

	rdma_head(head, put, key, size);
	if (!http(http_fd, head, NULL, 0, &r) || r.status != 200 || r.length != 0)
		die(put ? "a PUT by RDMA failed" : "a GET by RDMA failed", r.status);
	if (put) {
		md5_hex(m, size, md5);
		if (strcmp(md5, r.etag) != 0)
			die("a PUT by RDMA stored other bytes than the buffer's (ETag)", 0);
		return;
	}
	for (size_t i = 0; i < size; i++)
		if (m[i] != pat(seed, i))
			die("a GET by RDMA wrote the wrong bytes", (int)i);
}

/* ---- the cases ---- */

struct kase {
	const char *name;
	bool put;
	size_t size;
	unsigned qd;            /* requests in flight on the connection (HTTP/1.1 pipelining) */
};

/*
 * The kernel's floor under a GET 4 KiB (bench/http_floor.c): the same request through the same TAP
 * to a responder that answers it with as many bytes as the server does (FLOOR_ANSWER_LEN, checked
 * against the server's answers) and does nothing else; at qd1 and qd16, before the server starts
 * and after it ends. The server's CPU per request over this is what its own work costs.
 */
#define FLOOR_ANSWER_LEN 383
static size_t answer_len_seen;

static void floor_run(const char *tap, const char *when, FILE *csv)
{
	char head[512];
	struct http_floor_result r;
	struct in_addr a;

	rdma_head(head, false, "obj-4k", 4096);
	inet_pton(AF_INET, EP_ADDR, &a);
	for (unsigned qd = 1; qd <= 16; qd += 15) {
		if (http_floor_run(tap, ntohl(a.s_addr), EP_PORT, strlen(head), FLOOR_ANSWER_LEN, qd, seconds, &r))
			die("the TAP floor did not run", 0);
		printf("  TAP floor %-6s qd%-3u %9.0f ops/s, responder %5.2f us/op, %5.2f of them in user space "
		       "(the same request and answer through the TAP, nothing parsed)\n", when, qd, r.ops_per_s,
		       r.us_per_op, r.user_us_per_op);
		if (csv)
			fprintf(csv, "floor-get-4k-qd%u,%.0f,%.3f,%.1f,%.3f\n", qd, r.ops_per_s, r.us_per_op,
				r.ops_per_s * r.us_per_op / 1e4, r.user_us_per_op);
	}
}

static void run_case(const struct kase *k, FILE *csv)
{
	const char *key = k->put ? "put-target" : k->size == 4096 ? "obj-4k" : "obj-1m";
	const uint64_t seed = k->size;
	char head[512];
	size_t hlen;
	uint64_t n = 0, ns0, uns0, sent = 0;
	double t0, t;
	bool more = true;

	if (k->put) {
		uint8_t *m = guest_ptr(&g, MR_VA);

		for (size_t i = 0; i < k->size; i++)
			m[i] = pat(seed + 7, i);
	}
	rdma_checked(k->put, key, k->size, seed);
	rdma_head(head, k->put, key, k->size);
	hlen = strlen(head);
	ns0 = server_ns();
	uns0 = server_user_ns();
	t0 = t = now_s();
	for (; sent < k->qd; sent++)
		if (!send_all(http_fd, head, hlen))
			die("the connection failed", errno);
	while (n < sent) {
		struct resp r;

		if (!read_resp(http_fd, &r) || r.status != 200 || r.length != 0)
			die("a request by RDMA failed", r.status);
		if (!k->put && k->size == 4096)
			answer_len_seen = r.head_len;
		n++;
		if ((n & 15) == 0)
			more = (t = now_s()) - t0 < seconds;
		if (more) {
			if (!send_all(http_fd, head, hlen))
				die("the connection failed", errno);
			sent++;
		}
	}
	t = now_s();
	{
		double ops = (double)n / (t - t0), us = (double)(server_ns() - ns0) / 1e3 / (double)n;
		double uus = (double)(server_user_ns() - uns0) / 1e3 / (double)n;

		printf("  %-8s qd%-3u %9.0f ops/s, server %7.2f us/op, %6.2f of them in user space (CPU %5.1f%%)\n",
		       k->name, k->qd, ops, us, uus, ops * us / 1e4);
		fflush(stdout);
		if (csv)
			fprintf(csv, "%s-qd%u,%.0f,%.3f,%.1f,%.3f\n", k->name, k->qd, ops, us, ops * us / 1e4, uus);
	}
	/* and the bytes still right at the end */
	rdma_checked(k->put, key, k->size, seed);
}

/*
 * The client's own socket path: the same request head and a 200 answer of the same size over TCP
 * loopback to a thread-free echo in this process (a socketpair would skip TCP). Measures what one
 * request costs outside the server, on the client's side of the kernel, for comparison.
 */
static void loopback_rtt(FILE *csv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c, s, one = 1;
	char req[256], ans[256];
	uint64_t n = 0;
	double t0, t;

	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl))
		die("loopback listener", errno);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) || (s = accept(ls, NULL, NULL)) < 0)
		die("loopback connection", errno);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(req, 'q', sizeof(req));
	memset(ans, 'a', sizeof(ans));
	t0 = now_s();
	do {
		for (int i = 0; i < 64; i++) {
			char b[256];

			if (!send_all(c, req, sizeof(req)) || recv(s, b, sizeof(b), MSG_WAITALL) != (ssize_t)sizeof(b) ||
			    !send_all(s, ans, sizeof(ans)) || recv(c, b, sizeof(b), MSG_WAITALL) != (ssize_t)sizeof(b))
				die("loopback round trip", errno);
		}
		n += 64;
		t = now_s();
	} while (t - t0 < seconds);
	printf("  TCP loopback request/answer round trip (client side, both ends here): %.0f /s, %.2f us each\n",
	       (double)n / (t - t0), (t - t0) / (double)n * 1e6);
	if (csv)
		fprintf(csv, "tcp-loopback-rtt,%.0f,%.3f,\n", (double)n / (t - t0), (t - t0) / (double)n * 1e6);
	close(c);
	close(s);
	close(ls);
}

int main(int argc, char **argv)
{
	const char *bin = argc > 2 ? argv[1] : NULL, *tap = argc > 2 ? argv[2] : NULL;
	const char *csv_path = argc > 4 && argv[4][0] ? argv[4] : NULL;
	const char *args[] = { "--backend", "s3:size=256M", "--tap", tap, NULL };
	const char *via = getenv("S3_RDMA_BENCH_VIA");
	/* A B B A: the list, then the list backwards. */
	static const struct kase order[] = {
		{ "get-4k", false, 4096, 1 }, { "get-4k", false, 4096, 16 }, { "put-4k", true, 4096, 16 },
		{ "put-4k", true, 4096, 1 }, { "get-1m", false, MR_LEN, 1 }, { "get-1m", false, MR_LEN, 4 },
		{ "put-1m", true, MR_LEN, 4 }, { "put-1m", true, MR_LEN, 1 },
	};
	const unsigned ncases = sizeof(order) / sizeof(order[0]);
	FILE *csv = NULL;
	int rc;

	if (bin == NULL) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic TAP [seconds-per-case] [csv-file]\n", argv[0]);
		return 2;
	}
	if (argc > 3 && argv[3][0])
		seconds = atof(argv[3]);
	if (seconds <= 0)
		seconds = 2.0;
	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (csv)
			fprintf(csv, "case,ops_per_s,server_us_per_op,server_cpu_pct,server_user_us_per_op\n");
	}
	if (via && strcmp(via, "device") != 0 && strcmp(via, "tap") != 0) {
		fprintf(stderr, "s3-rdma-bench: S3_RDMA_BENCH_VIA is tap or device\n");
		return 2;
	}
	via_device = via && strcmp(via, "device") == 0;
	if (via_device)
		args[2] = NULL; /* no TAP for the server: the client is a guest behind the device */
	else
		floor_run(tap, "before", csv);
	if (vfc_server_start(&srv, "s3-rdma-bench", bin, args))
		die("cannot start the server", 0);
	if (vfc_open(&cl, srv.sock, 20000))
		die("cannot connect to the server", 0);
	eq.irq_fd = -1;
	ionic_guest_seal_memory(true); /* guest RAM as QEMU's memfd backend gives it (the server copies unguarded) */
	if (ionic_guest_setup(&g, &cl))
		die("device set-up", 0);
	if ((rc = rg_probe(&g, &eq, &acq, &aq, 8, 4)) != 0)
		die("RDMA LIF set-up", rc);
	if ((rc = rg_mr_create(&g, &aq, 1, (uint8_t)MR_KEY, PD, MR_VA, MR_LEN, 1, MR_VA,
			       RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12)) != 0)
		die("memory registration", rc);
	if (via_device && guest_relay_start(&relay, &g, tap))
		die("the guest's Ethernet queues", 0);
	if ((http_fd = tcp_connect(EP_ADDR, EP_PORT)) < 0)
		die("cannot reach the endpoint over the TAP", errno);
	put_plain("obj-4k", 4096, 4096);
	put_plain("obj-1m", MR_LEN, MR_LEN);
	printf("s3-rdma-bench: %.1f s per case, one keep-alive connection through the TAP %s%s\n", seconds, tap,
	       via_device ? " and the device's Ethernet queues (the client a guest)" : " (the server's)");
	for (unsigned i = 0; i < 2 * ncases; i++) {
		const struct kase *k = &order[i < ncases ? i : 2 * ncases - 1 - i];

		/* S3_RDMA_BENCH_ONLY=get-4k: that case alone (for a profile of it) */
		if (getenv("S3_RDMA_BENCH_ONLY") == NULL || strcmp(getenv("S3_RDMA_BENCH_ONLY"), k->name) == 0)
			run_case(k, csv);
	}
	if (via_device) {
		/*
		 * Close the connection while the relay still runs, so that the server is not left
		 * resending an answer whose ACK never reached it through the denominators below.
		 */
		struct timeval tv = { .tv_sec = 2 };
		char b[256];

		shutdown(http_fd, SHUT_WR);
		setsockopt(http_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (recv(http_fd, b, sizeof(b), 0) > 0)
			;
		close(http_fd);
		http_fd = -1;
		usleep(100000); /* the last ACK on its way */
		guest_relay_stop(&relay);
		printf("  the guest's queues: %" PRIu64 " frames to the device, %" PRIu64 " from it, %" PRIu64
		       " interrupts, %" PRIu64 " not taken by the TAP, %" PRIu64 " errors\n",
		       relay.to_device, relay.from_device, relay.wakeups, relay.tap_drops, relay.errors);
		if (relay.errors)
			die("bad completions on the guest's queues, or frames too long for them", (int)relay.errors);
	}
	/* the denominators: a message round trip to the server, the client's socket path, the copies */
	bench_region_read(&cl, srv.pid, seconds, csv);
	if (via_device) {
		if (bench_posted_irq(&cl, srv.pid, g.qirq_fd, 1, seconds, csv))
			die("a posted interrupt trigger was not signalled", 0);
	}
	loopback_rtt(csv);
	for (size_t size = 4096; size <= MR_LEN; size *= 256) {
		double us = bench_memcpy_us(size, seconds / 4);

		printf("  memcpy %zu bytes: %.2f us each\n", size, us);
		if (csv && us > 0)
			fprintf(csv, "memcpy-%zu,%.0f,%.4f,\n", size, 1e6 / us, us);
	}
	if (http_fd >= 0)
		close(http_fd);
	rg_eq_close(&eq);
	ionic_guest_teardown(&g);
	vfc_close(&cl);
	if (vfc_server_stop(&srv)) {
		fprintf(stderr, "s3-rdma-bench: the server did not exit cleanly\n");
		return 1;
	}
	if (!via_device)
		floor_run(tap, "after", csv);
	if (answer_len_seen && answer_len_seen != FLOOR_ANSWER_LEN)
		printf("  (the server answered a GET 4 KiB with %zu bytes, the floor with %d)\n", answer_len_seen,
		       FLOOR_ANSWER_LEN);
	if (csv)
		fclose(csv);
	return 0;
}
