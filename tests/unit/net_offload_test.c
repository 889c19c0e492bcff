/*
 * net-offload-unit: frames from the host TAP with a virtio_net_hdr, through
 * the receive path the server runs (net_offload_parse(), the segment switch,
 * the S3 endpoint with its in-band TCP stack, HTTP connection and store),
 * with no TAP device: the test plays the host kernel. It sends TCPv4
 * segmentation-offload super-frames with the TCP checksum left partial, as
 * Linux does after TUNSETOFFLOAD(TUN_F_CSUM | TUN_F_TSO4), and checks the
 * bytes stored, the ACKs the endpoint answers with, and what a port without
 * offloads (the guest's NIC) receives: MSS-sized frames whose IPv4 and TCP
 * checksums this file verifies with its own code. Hostile headers are
 * refused and counted; a fixed-seed fuzz loop runs under the sanitizers.
 * Last, the endpoint's RDMA path with fake DMA ops: transfers made a slice
 * per turn of the event loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net/net_offload.h"
#include "net/net_switch.h"
#include "s3/s3_conn.h"
#include "s3/s3_endpoint.h"
#include "s3/s3_target.h"
#include "s3/s3_token.h"
#include "util/backend_opts.h"
#include "util/evloop.h"
#include "util/inet_csum.h"
#include "../lib/wire_bytes.h"

#define VH        10            /* the legacy virtio_net_hdr */
#define HOST_IP   0xc0a8c802u   /* 192.168.200.2, the TAP side */
#define EP_IP     0xc0a8c801u   /* 192.168.200.1, the S3 endpoint */
#define GUEST_IP  0xc0a8c803u
#define HOST_PORT 40000
#define MSS       1460
#define MAX_SEGS  44            /* what fits a 64 KiB window at MSS 1460 */
#define QCAP      256

#define F_FIN 0x01u
#define F_SYN 0x02u
#define F_RST 0x04u
#define F_PSH 0x08u
#define F_ACK 0x10u

static const uint8_t host_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t guest_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
static uint8_t ep_mac[6];

/* ---- bytes and checksums, written here rather than taken from the code under test ---- */


static uint8_t pat(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;

	return (uint8_t)((x >> 13) ^ (i >> 16));
}

/* A deterministic generator (xorshift64*). */
static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

/* ---- the segment: switch, endpoint, and two wire ports that record what they get ---- */

struct rec {
	unsigned n;
	size_t len[QCAP];
	uint8_t *f[QCAP];
};

struct world {
	struct evloop *loop;
	struct net_switch *sw;
	struct s3_endpoint *ep;
	int tap, guest;
	struct rec to_tap, to_guest;
	bool count_only;        /* the fuzz loop: check lengths, keep nothing */
	struct net_offload_stats st;
	/* the host's side of the one connection */
	uint32_t snd_nxt, rcv_nxt;
	uint16_t ip_id;
};

static void rec_add(struct rec *r, const uint8_t *f, size_t len)
{
	assert_true(r->n < QCAP);
	assert_true(len <= NET_MAX_FRAME);
	r->f[r->n] = malloc(len);
	assert_non_null(r->f[r->n]);
	memcpy(r->f[r->n], f, len);
	r->len[r->n++] = len;
}

static void rec_clear(struct rec *r)
{
	for (unsigned i = 0; i < r->n; i++)
		free(r->f[i]);
	r->n = 0;
}

static void tap_deliver(void *ctx, const uint8_t *f, size_t len)
{
	struct world *w = ctx;

	if (w->count_only) {
		assert_true(len >= 14 && len <= 1514);
		return;
	}
	rec_add(&w->to_tap, f, len);
}

static void guest_deliver(void *ctx, const uint8_t *f, size_t len)
{
	struct world *w = ctx;

	if (w->count_only) {
		assert_true(len >= 14 && len <= NET_MAX_FRAME);
		return;
	}
	rec_add(&w->to_guest, f, len);
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct backend_config cfg;
	char err[128];
	struct net_port tap = { .name = "tap", .deliver = tap_deliver };
	struct net_port guest = { .name = "guest", .deliver = guest_deliver };

	if (w == NULL || backend_config_parse("s3:size=64M", &cfg, err, sizeof(err)))
		return -1;
	w->loop = evloop_new();
	w->sw = net_switch_new();
	if (w->loop == NULL || w->sw == NULL)
		return -1;
	tap.ctx = guest.ctx = w;
	w->tap = net_switch_attach(w->sw, &tap);
	w->guest = net_switch_attach(w->sw, &guest);
	w->ep = s3_endpoint_new(&cfg.s3, w->loop, w->sw, err, sizeof(err));
	if (w->ep == NULL)
		return -1;
	s3_endpoint_mac(EP_IP, ep_mac);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	s3_endpoint_free(w->ep);
	net_switch_free(w->sw);
	evloop_free(w->loop);
	rec_clear(&w->to_tap);
	rec_clear(&w->to_guest);
	free(w);
	return 0;
}

/* ---- frames from the host ---- */

/* A virtio_net_hdr field: legacy virtio, so the host's byte order. */
static void set_vh16(uint8_t *buf, size_t off, uint16_t v)
{
	memcpy(buf + off, &v, 2);
}

/*
 * An IPv4 TCP frame at buf + VH (headers, then len bytes of data), behind a
 * virtio_net_hdr. With gso_size the frame is a super-frame and the TCP
 * checksum holds only the pseudo-header sum, as the kernel leaves it
 * (NEEDS_CSUM); partial alone does the same for a plain frame; otherwise the
 * checksum is complete and the header says nothing. Returns the bytes at buf.
 */
static size_t host_frame(uint8_t *buf, const uint8_t *dmac, uint32_t dip, uint16_t id, uint32_t seq,
			 uint32_t ack, unsigned flags, const uint8_t *data, size_t len, uint16_t gso_size,
			 bool partial)
{
	uint8_t *f = buf + VH, *ip = f + 14, *tcp = ip + 20;
	size_t l4 = 20 + len;

	memset(buf, 0, VH);
	memcpy(f, dmac, 6);
	memcpy(f + 6, host_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint32_t)(20 + l4));
	put16(ip + 4, id);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 6;
	put16(ip + 10, 0);
	put32(ip + 12, HOST_IP);
	put32(ip + 16, dip);
	put16(ip + 10, fold(sum16(0, ip, 20)));
	put16(tcp, HOST_PORT);
	put16(tcp + 2, 9000);
	put32(tcp + 4, seq);
	put32(tcp + 8, ack);
	tcp[12] = 5 << 4;
	tcp[13] = (uint8_t)flags;
	put16(tcp + 14, 65535);
	put16(tcp + 16, 0);
	put16(tcp + 18, 0);
	if (len)
		memcpy(tcp + 20, data, len);
	if (gso_size || partial) {
		uint32_t p = pseudo(HOST_IP, dip, 6, l4);

		while (p >> 16)
			p = (p & 0xffff) + (p >> 16);
		put16(tcp + 16, p);             /* not complemented: the partial sum */
		buf[0] = 1;                     /* NEEDS_CSUM */
		set_vh16(buf, 6, 34);           /* csum_start: the TCP header */
		set_vh16(buf, 8, 16);           /* csum_offset: its checksum */
	} else {
		put16(tcp + 16, fold(pseudo(HOST_IP, dip, 6, l4) + sum16(0, tcp, l4)));
	}
	if (gso_size) {
		buf[1] = 1;                     /* GSO_TCPV4 */
		set_vh16(buf, 2, 14 + 20 + 20); /* hdr_len */
		set_vh16(buf, 4, gso_size);
	}
	return VH + 14 + 20 + l4;
}

/* Through the receive path: parse, then the switch; returns parse's status. */
static int from_tap(struct world *w, const uint8_t *buf, size_t n)
{
	struct net_offload off;
	int rc = net_offload_parse(buf, n, &off, &w->st);

	if (rc == 0)
		net_switch_input_offload(w->sw, w->tap, buf + VH, n - VH, &off);
	return rc;
}

/* ---- what comes back ---- */

struct seg {
	uint32_t seq, ack;
	unsigned flags;
	uint16_t wnd, id;
	size_t len;
	const uint8_t *data;
};

/* Checks one frame as a receiver would (lengths, IPv4 and TCP checksums) and parses it. */
static void check_tcp_frame(const uint8_t *f, size_t flen, uint32_t src, uint32_t dst, struct seg *s)
{
	const uint8_t *ip = f + 14, *tcp = ip + 20;
	size_t tot, l4, doff;

	assert_true(flen >= 60);
	assert_int_equal(get16(f + 12), 0x0800);
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[9], 6);
	tot = get16(ip + 2);
	assert_true(tot >= 40 && 14 + tot <= flen);
	assert_int_equal(flen, 14 + tot < 60 ? 60 : 14 + tot);
	assert_int_equal(fold(sum16(0, ip, 20)), 0);
	assert_int_equal(get32(ip + 12), src);
	assert_int_equal(get32(ip + 16), dst);
	l4 = tot - 20;
	assert_int_equal(fold(pseudo(src, dst, 6, l4) + sum16(0, tcp, l4)), 0);
	doff = (size_t)(tcp[12] >> 4) * 4;
	assert_true(doff >= 20 && doff <= l4);
	s->seq = get32(tcp + 4);
	s->ack = get32(tcp + 8);
	s->flags = tcp[13];
	s->wnd = get16(tcp + 14);
	s->id = get16(ip + 4);
	s->len = l4 - doff;
	s->data = tcp + doff;
}

/* The one frame the endpoint sent toward the TAP since the last call, once the batch of events is over: a pure ACK. */
static void expect_ack(struct world *w, uint32_t ack, uint16_t wnd)
{
	struct seg s;

	evloop_run_deferred(w->loop);
	assert_int_equal(w->to_tap.n, 1);
	check_tcp_frame(w->to_tap.f[0], w->to_tap.len[0], EP_IP, HOST_IP, &s);
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.len, 0);
	assert_int_equal(s.seq, w->rcv_nxt);
	assert_int_equal(s.ack, ack);
	assert_int_equal(s.wnd, wnd);
	rec_clear(&w->to_tap);
	assert_int_equal(w->to_guest.n, 0);
}

/* Host -> endpoint handshake with MSS 1460, on plain frames. */
static void connect_host(struct world *w)
{
	uint8_t buf[128];
	size_t n;
	struct seg s;

	w->snd_nxt = 1000;
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, 0, F_SYN, NULL, 0, 0, false);
	/* An MSS option would need a longer header; without one the stack assumes 536 for its own sending. */
	assert_int_equal(from_tap(w, buf, n), 0);
	assert_int_equal(w->to_tap.n, 1);
	check_tcp_frame(w->to_tap.f[0], w->to_tap.len[0], EP_IP, HOST_IP, &s);
	assert_int_equal(s.flags, F_SYN | F_ACK);
	assert_int_equal(s.ack, 1001);
	assert_int_equal(s.wnd, 65535);
	assert_int_equal(s.data[-4], 2);                /* the MSS we advertise is the wire's, offloads or not */
	assert_int_equal(get16(s.data - 2), 1460);
	rec_clear(&w->to_tap);
	w->snd_nxt = 1001;
	w->rcv_nxt = s.seq + 1;
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK, NULL, 0, 0, false);
	assert_int_equal(from_tap(w, buf, n), 0);
	assert_int_equal(w->to_tap.n, 0);
}

/* Plain data from the host (full checksum, no header flags). */
static void host_send_plain(struct world *w, const void *d, size_t len)
{
	uint8_t *buf = malloc(VH + 54 + len);
	size_t n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK | F_PSH, d, len, 0, false);

	assert_int_equal(from_tap(w, buf, n), 0);
	w->snd_nxt += (uint32_t)len;
	free(buf);
}

/*
 * The endpoint's HTTP response to the host once the batch of events is over (output waits for
 * its end): its data segments, concatenated (and ACKed by nobody).
 */
static size_t take_response(struct world *w, char *out, size_t cap)
{
	size_t n = 0;

	evloop_run_deferred(w->loop);
	for (unsigned i = 0; i < w->to_tap.n; i++) {
		struct seg s;

		check_tcp_frame(w->to_tap.f[i], w->to_tap.len[i], EP_IP, HOST_IP, &s);
		assert_int_equal(s.seq, w->rcv_nxt);
		assert_true(s.len <= 536);              /* no MSS option from the host: 536 */
		assert_true(n + s.len < cap);
		memcpy(out + n, s.data, s.len);
		n += s.len;
		w->rcv_nxt += (uint32_t)s.len;
	}
	out[n] = '\0';
	rec_clear(&w->to_tap);
	return n;
}

/* The stored object, read through a connection of its own. */
static uint8_t *stored(struct world *w, const char *key, size_t *len)
{
	struct s3_conn *c = s3_conn_new(s3_endpoint_store(w->ep));
	char req[128];
	int n = snprintf(req, sizeof(req), "GET /ernic/%s HTTP/1.1\r\nHost: s3\r\n\r\n", key);
	uint8_t *all = NULL, *body;
	size_t alen = 0, k;
	const uint8_t *p;
	const char *end;

	assert_int_equal(s3_conn_input(c, (const uint8_t *)req, (size_t)n), (size_t)n);
	while ((k = s3_conn_output(c, &p)) > 0) {
		all = realloc(all, alen + k);
		memcpy(all + alen, p, k);
		alen += k;
		s3_conn_output_done(c, k);
	}
	s3_conn_free(c);
	end = memmem(all, alen, "\r\n\r\n", 4);
	assert_non_null(end);
	assert_int_equal(memcmp(all, "HTTP/1.1 200", 12), 0);
	*len = alen - (size_t)((const uint8_t *)end + 4 - all);
	body = malloc(*len ? *len : 1);
	memcpy(body, end + 4, *len);
	free(all);
	return body;
}

static void md5_etag(const uint8_t *d, size_t n, char out[40])
{
	uint8_t md[16];
	unsigned int len = 16;

	EVP_Digest(d, n, md, &len, EVP_md5(), NULL);
	out[0] = '"';
	for (int i = 0; i < 16; i++)
		sprintf(out + 1 + 2 * i, "%02x", md[i]);
	strcat(out, "\"");
}

/* ---- tests ---- */

/*
 * A PUT whose body comes as super-frames of up to 44 segments: each is taken
 * whole (one ACK for all of it, the window open again), the object is stored
 * byte for byte, its ETag is the MD5 of the body.
 */
/*
 * The stack's checksum (util/inet_csum.h sums host-order words) against this
 * file's byte-pair sum: every length up to 300 bytes at every alignment, the
 * RFC 1071 example, sums that wrap many times, and a running sum continued
 * over chunks of even length.
 */
static void test_inet_csum(void **state)
{
	static const uint8_t rfc[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t buf[320], ones[4096];
	uint64_t run = 0;

	(void)state;
	assert_int_equal(inet_csum_fold(inet_csum_add(0, rfc, 8)), (uint16_t)~0xddf2);
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 300; len++)
			assert_int_equal(inet_csum_fold(inet_csum_add(5, buf + off, len)),
					 fold(sum16(5, buf + off, len)));
	memset(ones, 0xff, sizeof(ones));
	assert_int_equal(inet_csum_fold(inet_csum_add(0, ones, sizeof(ones))), fold(sum16(0, ones, sizeof(ones))));
	for (size_t at = 0; at < 300; at += 30)
		run = inet_csum_add(run, buf + at, 30);
	assert_int_equal(inet_csum_fold(run), fold(sum16(0, buf, 300)));
}

static unsigned turns_until_sent(struct world *w);

static void test_put_in_super_frames(void **state)
{
	struct world *w = *state;
	const size_t size = 5 * MAX_SEGS * MSS + 777;   /* five full super-frames and a short one */
	uint8_t *body = malloc(size), *buf = malloc(VH + NET_MAX_FRAME), *back;
	char head[160], resp[2048], etag[40];
	size_t off = 0, n, blen;
	unsigned frames = 0;

	for (size_t i = 0; i < size; i++)
		body[i] = pat(i);
	connect_host(w);
	n = (size_t)snprintf(head, sizeof(head), "PUT /ernic/gso HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n", size);
	host_send_plain(w, head, n);
	expect_ack(w, w->snd_nxt, 65535);
	while (off < size) {
		size_t len = size - off < MAX_SEGS * MSS ? size - off : MAX_SEGS * MSS;
		bool last = off + len == size;

		n = host_frame(buf, ep_mac, EP_IP, w->ip_id, w->snd_nxt, w->rcv_nxt, F_ACK | (last ? F_PSH : 0),
			       body + off, len, MSS, false);
		w->ip_id += (uint16_t)((len + MSS - 1) / MSS);
		assert_int_equal(from_tap(w, buf, n), 0);
		w->snd_nxt += (uint32_t)len;
		off += len;
		frames++;
		if (!last) {
			/* Taken whole by the store: one ACK of all of it, the full window again. */
			expect_ack(w, w->snd_nxt, 65535);
		}
	}
	assert_int_equal(w->st.gso_frames, frames);
	assert_int_equal(w->st.partial_csum, frames);
	/*
	 * The last super-frame completed the PUT. The body is large enough to be
	 * hashed on the store's MD5 thread: unless that was already done, its
	 * ACK goes alone and the response follows once the thread's eventfd
	 * fires and the loop turns.
	 */
	if (take_response(w, resp, sizeof(resp)) == 0) {
		struct pollfd pfd = { .fd = s3_store_md5_fd(s3_endpoint_store(w->ep)), .events = POLLIN };

		assert_int_equal(poll(&pfd, 1, 10000), 1);
		turns_until_sent(w);
		assert_true(take_response(w, resp, sizeof(resp)) > 0);
	}
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	md5_etag(body, size, etag);
	assert_non_null(strstr(resp, etag));
	back = stored(w, "gso", &blen);
	assert_int_equal(blen, size);
	assert_memory_equal(back, body, size);
	assert_int_equal(w->to_guest.n, 0);
	free(back);
	free(buf);
	free(body);
}

/*
 * A retransmitted super-frame that overlaps what was already taken (the
 * kernel resends from its oldest unacknowledged byte after a loss): only the
 * new bytes count, once.
 */
static void test_super_frame_overlap(void **state)
{
	struct world *w = *state;
	const size_t size = 3 * MAX_SEGS * MSS;
	uint8_t *body = malloc(size), *buf = malloc(VH + NET_MAX_FRAME), *back;
	char head[160], resp[2048];
	size_t n, blen, half = MAX_SEGS * MSS / 2;

	for (size_t i = 0; i < size; i++)
		body[i] = pat(i + 7);
	connect_host(w);
	n = (size_t)snprintf(head, sizeof(head), "PUT /ernic/ov HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n", size);
	host_send_plain(w, head, n);
	expect_ack(w, w->snd_nxt, 65535);
	/* Half a super-frame's worth as one. */
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK, body, half, MSS, false);
	assert_int_equal(from_tap(w, buf, n), 0);
	expect_ack(w, w->snd_nxt + (uint32_t)half, 65535);
	/* Then a full one from the start again: the first half is old, the rest is new. */
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK, body, MAX_SEGS * MSS, MSS,
		       false);
	assert_int_equal(from_tap(w, buf, n), 0);
	w->snd_nxt += MAX_SEGS * MSS;
	expect_ack(w, w->snd_nxt, 65535);
	/* A super-frame entirely behind: a duplicate, answered with the same ACK. */
	assert_int_equal(from_tap(w, buf, n), 0);
	expect_ack(w, w->snd_nxt, 65535);
	/* A super-frame ahead of what is expected: dropped (no reassembly), the ACK says where we are. */
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt + MSS, w->rcv_nxt, F_ACK,
		       body + MAX_SEGS * MSS + MSS, MAX_SEGS * MSS, MSS, false);
	assert_int_equal(from_tap(w, buf, n), 0);
	expect_ack(w, w->snd_nxt, 65535);
	/* The rest, in order. */
	for (size_t off = MAX_SEGS * MSS; off < size; off += MAX_SEGS * MSS) {
		n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK, body + off,
			       MAX_SEGS * MSS, MSS, false);
		assert_int_equal(from_tap(w, buf, n), 0);
		w->snd_nxt += MAX_SEGS * MSS;
		if (off + MAX_SEGS * MSS < size)
			expect_ack(w, w->snd_nxt, 65535);
	}
	assert_true(take_response(w, resp, sizeof(resp)) > 0);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	back = stored(w, "ov", &blen);
	assert_int_equal(blen, size);
	assert_memory_equal(back, body, size);
	free(back);
	free(buf);
	free(body);
}

/*
 * A partial checksum anywhere but at the TCP checksum is not the kernel's
 * TCP: the switch completes it where it says, and the stack then checks the
 * TCP checksum as for any frame (here it fails: dropped, no ACK, no data).
 * A plain frame whose checksum is wrong is dropped too; DATA_VALID is the
 * kernel's word that it is right.
 */
static void test_endpoint_trusts_only_the_kernels_tcp(void **state)
{
	struct world *w = *state;
	uint8_t buf[VH + 200];
	const char *d = "GET / HTTP/1.1\r\nHost: s3\r\n\r\n";
	size_t n, len = strlen(d);
	char resp[2048];

	connect_host(w);
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK | F_PSH, (const uint8_t *)d,
		       len, 0, true);
	set_vh16(buf, 6, 14 + 20 + 20);         /* csum_start at the payload, not the TCP header */
	set_vh16(buf, 8, 0);
	assert_int_equal(from_tap(w, buf, n), 0);
	evloop_run_deferred(w->loop);
	assert_int_equal(w->to_tap.n, 0);
	/* A full checksum, wrong by one bit. */
	n = host_frame(buf, ep_mac, EP_IP, w->ip_id++, w->snd_nxt, w->rcv_nxt, F_ACK | F_PSH, (const uint8_t *)d,
		       len, 0, false);
	buf[VH + 14 + 20 + 16] ^= 1;
	assert_int_equal(from_tap(w, buf, n), 0);
	evloop_run_deferred(w->loop);
	assert_int_equal(w->to_tap.n, 0);
	/* The same frame vouched for by DATA_VALID is taken (the kernel checked what it forwards). */
	buf[VH + 14 + 20 + 16] ^= 1;
	buf[0] = 2;
	assert_int_equal(from_tap(w, buf, n), 0);
	w->snd_nxt += (uint32_t)len;
	assert_true(take_response(w, resp, sizeof(resp)) > 0);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(resp, "<ListAllMyBucketsResult"));
}

/*
 * A super-frame for the guest, whose NIC takes no offloads: cut into frames
 * of at most MSS bytes, each with its own IPv4 length, identification and
 * checksum, TCP sequence number and checksum, PSH and FIN on the last only.
 */
static void test_segmented_toward_guest(void **state)
{
	struct world *w = *state;
	const size_t sizes[] = { 1, MSS, MSS + 1, MAX_SEGS * MSS, 65535 - 40 };
	uint8_t *data = malloc(65535), *buf = malloc(VH + NET_MAX_FRAME), *got = malloc(65535);

	for (size_t i = 0; i < 65535; i++)
		data[i] = pat(i * 3);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		const uint32_t seq0 = 0xfffff000u;       /* wraps inside the super-frame */
		size_t n = host_frame(buf, guest_mac, GUEST_IP, 0xfffe, seq0, 77, F_ACK | F_PSH | F_FIN, data,
				      sizes[k], MSS, false), got_len = 0;
		unsigned want = (unsigned)((sizes[k] + MSS - 1) / MSS);

		rec_clear(&w->to_guest);
		assert_int_equal(from_tap(w, buf, n), 0);
		assert_int_equal(w->to_tap.n, 0);       /* never back out of the port it came from */
		assert_int_equal(w->to_guest.n, want);
		for (unsigned i = 0; i < w->to_guest.n; i++) {
			struct seg s;
			bool last = i + 1 == w->to_guest.n;

			check_tcp_frame(w->to_guest.f[i], w->to_guest.len[i], HOST_IP, GUEST_IP, &s);
			assert_memory_equal(w->to_guest.f[i], guest_mac, 6);
			assert_memory_equal(w->to_guest.f[i] + 6, host_mac, 6);
			assert_true(w->to_guest.len[i] <= 14 + 20 + 20 + MSS);
			assert_int_equal(s.len, last ? sizes[k] - (size_t)i * MSS : MSS);
			assert_int_equal(s.seq, seq0 + (uint32_t)(i * MSS));
			assert_int_equal(s.ack, 77);
			assert_int_equal(s.flags, last ? (F_ACK | F_PSH | F_FIN) : F_ACK);
			assert_int_equal(s.id, (uint16_t)(0xfffe + i));
			assert_int_equal(get16(w->to_guest.f[i] + 14 + 6), 0x4000);   /* DF kept */
			memcpy(got + got_len, s.data, s.len);
			got_len += s.len;
		}
		assert_int_equal(got_len, sizes[k]);
		assert_memory_equal(got, data, sizes[k]);
	}
	/* A plain frame with its TCP checksum partial: completed. */
	rec_clear(&w->to_guest);
	{
		size_t n = host_frame(buf, guest_mac, GUEST_IP, 1, 5, 6, F_ACK, data, 333, 0, true);
		struct seg s;

		assert_int_equal(from_tap(w, buf, n), 0);
		assert_int_equal(w->to_guest.n, 1);
		check_tcp_frame(w->to_guest.f[0], w->to_guest.len[0], HOST_IP, GUEST_IP, &s);
		assert_int_equal(s.len, 333);
	}
	/* DATA_VALID or no flags: the frame as it came. */
	rec_clear(&w->to_guest);
	{
		size_t n = host_frame(buf, guest_mac, GUEST_IP, 1, 5, 6, F_ACK, data, 333, 0, false);

		buf[0] = 2;
		assert_int_equal(from_tap(w, buf, n), 0);
		buf[0] = 0;
		assert_int_equal(from_tap(w, buf, n), 0);
		assert_int_equal(w->to_guest.n, 2);
		assert_int_equal(w->to_guest.len[0], n - VH);
		assert_memory_equal(w->to_guest.f[0], buf + VH, n - VH);
		assert_memory_equal(w->to_guest.f[1], buf + VH, n - VH);
	}
	assert_int_equal(net_switch_stats(w->sw)->gso_segmented, sizeof(sizes) / sizeof(sizes[0]));
	assert_int_equal(net_switch_stats(w->sw)->csum_completed, 1);
	free(got);
	free(buf);
	free(data);
}

/* Each hostile header: refused, its cause counted, nothing delivered anywhere. */
static void test_hostile_headers(void **state)
{
	struct world *w = *state;
	uint8_t *buf = malloc(VH + NET_MAX_FRAME + 64), *data = calloc(1, 65535);
	size_t n, good;
	struct net_offload off;
	const struct net_offload_stats zero = { 0 };

	unsigned refused = 0;
#define REFUSED(counter, len) do { \
		struct net_offload_stats before = w->st; \
		assert_true(from_tap(w, buf, (len)) < 0); \
		assert_int_equal(w->st.counter, before.counter + 1); \
		assert_int_equal(w->to_guest.n + w->to_tap.n, 0); \
		refused++; \
	} while (0)

	good = host_frame(buf, guest_mac, GUEST_IP, 1, 1, 1, F_ACK, data, 10 * MSS, MSS, false);
	assert_int_equal(net_offload_parse(buf, good, &off, &w->st), 0);
	w->st = zero;

	/* gso_size 0 */
	set_vh16(buf, 4, 0);
	REFUSED(drop_gso_size, good);
	set_vh16(buf, 4, MSS);
	/* hdr_len beyond the frame */
	set_vh16(buf, 2, (uint16_t)(good - VH + 1));
	REFUSED(drop_hdr_len, good);
	set_vh16(buf, 2, 0xffff);
	REFUSED(drop_hdr_len, good);
	set_vh16(buf, 2, 54);
	/* csum_start / csum_offset out of bounds, however they add up */
	set_vh16(buf, 6, (uint16_t)(good - VH - 1));
	set_vh16(buf, 8, 0);
	REFUSED(drop_csum_bounds, good);
	set_vh16(buf, 6, 0xffff);
	REFUSED(drop_csum_bounds, good);
	set_vh16(buf, 6, 34);
	set_vh16(buf, 8, 0xffff);
	REFUSED(drop_csum_bounds, good);
	set_vh16(buf, 8, (uint16_t)(good - VH - 34 - 1));
	REFUSED(drop_csum_bounds, good);
	set_vh16(buf, 6, 4);                    /* inside the Ethernet header */
	set_vh16(buf, 8, 0);
	REFUSED(drop_csum_bounds, good);
	set_vh16(buf, 6, 34);
	set_vh16(buf, 8, 16);
	/* gso_type unknown or never granted: UDP (fragmentation), TCPV6, TCPV4 with ECN, nonsense */
	{
		const uint8_t types[] = { 2, 3, 4, 0x81, 0x7f, 0xff };

		for (size_t i = 0; i < sizeof(types); i++) {
			buf[1] = types[i];
			REFUSED(drop_gso_type, good);
		}
		/* UDP_L4 is granted, but this frame is TCP */
		buf[1] = 5;
		REFUSED(drop_gso_frame, good);
		buf[1] = 1;
	}
	/* Flags: unknown bits, or NEEDS_CSUM and DATA_VALID together */
	buf[0] = 1 | 4;
	REFUSED(drop_flags, good);
	buf[0] = 3;
	REFUSED(drop_flags, good);
	buf[0] = 0x80 | 1;
	REFUSED(drop_flags, good);
	buf[0] = 1;
	/* A super-frame without NEEDS_CSUM, or partial somewhere else than the TCP checksum */
	buf[0] = 0;
	REFUSED(drop_gso_frame, good);
	buf[0] = 2;
	REFUSED(drop_gso_frame, good);
	buf[0] = 1;
	set_vh16(buf, 8, 6);
	REFUSED(drop_gso_frame, good);
	set_vh16(buf, 8, 16);
	/* A super-frame that is not a plain IPv4 TCP segment */
	buf[VH + 14 + 20 + 13] = F_SYN | F_ACK;
	REFUSED(drop_gso_frame, good);
	buf[VH + 14 + 20 + 13] = F_RST | F_ACK;
	REFUSED(drop_gso_frame, good);
	buf[VH + 14 + 20 + 13] = F_ACK;
	put16(buf + VH + 14 + 6, 0x2000);       /* MF */
	REFUSED(drop_gso_frame, good);
	put16(buf + VH + 14 + 6, 0x4000);
	put16(buf + VH + 14 + 2, (uint32_t)(good - VH - 14 + 1));      /* IPv4 length past the frame */
	REFUSED(drop_gso_frame, good);
	put16(buf + VH + 14 + 2, 40);
	buf[VH + 14 + 20 + 12] = 0xf0;          /* TCP header of 60 bytes in a 40-byte packet */
	REFUSED(drop_gso_frame, (size_t)VH + 14 + 40);
	buf[VH + 14 + 20 + 12] = 0x50;
	put16(buf + VH + 14 + 2, (uint32_t)(good - VH - 14));
	put16(buf + VH + 12, 0x0806);           /* ARP */
	REFUSED(drop_gso_frame, good);
	put16(buf + VH + 12, 0x0800);
	buf[VH + 14 + 9] = 17;                  /* UDP */
	REFUSED(drop_gso_frame, good);
	buf[VH + 14 + 9] = 6;
	/* Too short for a header and an Ethernet header; a frame over 64 KiB, or truncated by the reader */
	REFUSED(drop_short, 0);
	REFUSED(drop_short, VH - 1);
	REFUSED(drop_short, VH + 13);
	REFUSED(drop_too_long, VH + NET_MAX_FRAME + 1);
	REFUSED(drop_too_long, (size_t)1 << 20);
	REFUSED(drop_too_long, SIZE_MAX);
	/* After all that, the frame as it was is still good. */
	assert_int_equal(from_tap(w, buf, good), 0);
	assert_int_equal(w->to_guest.n, 10);
	n = w->st.drop_short + w->st.drop_too_long + w->st.drop_flags + w->st.drop_csum_bounds + w->st.drop_hdr_len +
	    w->st.drop_gso_type + w->st.drop_gso_size + w->st.drop_gso_frame;
	assert_int_equal(n, refused);
#undef REFUSED
	free(data);
	free(buf);
}

/* Random headers and frames through the whole path: nothing is read or written out of bounds. */
static void test_fuzz(void **state)
{
	struct world *w = *state;
	uint8_t *buf = malloc(VH + NET_MAX_FRAME), *data = malloc(65535);

	for (size_t i = 0; i < 65535; i++)
		data[i] = pat(i);
	connect_host(w);
	w->count_only = true;
	for (unsigned it = 0; it < 3000; it++) {
		size_t len = it % 64 == 0 ? rnd() % 65496 : rnd() % 3000;
		const uint8_t *dmac = (rnd() & 1) ? ep_mac : guest_mac;
		size_t n = host_frame(buf, dmac, dmac == ep_mac ? EP_IP : GUEST_IP, (uint16_t)rnd(),
				      w->snd_nxt + (rnd() % 3 == 0 ? rnd() : 0), w->rcv_nxt, F_ACK | (rnd() & 0x3f),
				      data, len, (uint16_t)(rnd() % 3 ? MSS : rnd()), rnd() & 1);
		unsigned flips = rnd() % 6;

		for (unsigned f = 0; f < flips; f++) {
			size_t at = rnd() % (rnd() % 2 ? VH : (n < 80 ? n : 80));

			buf[at] = (uint8_t)rnd();
		}
		if (rnd() % 8 == 0)
			n = rnd() % (n + 1);            /* cut anywhere */
		(void)from_tap(w, buf, n);
	}
	w->count_only = false;
	free(data);
	free(buf);
}

/* ---- the RDMA path through the endpoint: transfers in slices ---- */

/* The guest's registered memory as the store's DMA ops see it: one key over one buffer. */
#define FAKE_KEY  0x5151u
#define FAKE_ADDR 0x7d0000000000ull
#define FAKE_LEN  (16u << 20)
static uint8_t *fake_mem;

static int fake_range(uint32_t key, uint64_t addr, size_t len)
{
	if (key != FAKE_KEY)
		return -ENOKEY;
	if (addr < FAKE_ADDR || addr - FAKE_ADDR > FAKE_LEN || len > FAKE_LEN - (addr - FAKE_ADDR))
		return -EFAULT;
	return 0;
}

static int fake_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	int rc = fake_range(key, addr, len);

	(void)ctx;
	if (rc == 0)
		memcpy(dst, fake_mem + (addr - FAKE_ADDR), len);
	return rc;
}

static int fake_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	int rc = fake_range(key, addr, len);

	(void)ctx;
	if (rc == 0)
		memcpy(fake_mem + (addr - FAKE_ADDR), src, len);
	return rc;
}

/* One turn of the server's event loop (the test keeps an fd ready, so it never sleeps). */
static void stop_loop(void *arg)
{
	evloop_stop(arg);
}

static void nothing(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
}

static void one_turn(struct world *w)
{
	assert_int_equal(evloop_defer(w->loop, stop_loop, w->loop), 0);
	assert_int_equal(evloop_run(w->loop), 0);
}

/* Turns of the loop until the endpoint has sent something toward the TAP; how many it took. */
static unsigned turns_until_sent(struct world *w)
{
	unsigned turns = 0;

	while (w->to_tap.n == 0) {
		one_turn(w);
		assert_true(++turns < 10000);
	}
	return turns;
}

/*
 * x-amz-rdma-token requests through the endpoint as the server runs it: an
 * 8 MiB PUT by RDMA READ and an 8 MiB GET by RDMA WRITE are made a slice per
 * turn of the event loop (the response comes after several turns, not with
 * the request), byte for byte, with the whole object's MD5 as the ETag; a
 * HEAD pipelined behind the GET is taken and answered after it.
 */
static void test_rdma_in_slices(void **state)
{
	struct world *w = *state;
	const size_t size = 8u << 20;
	const struct dma_ops ops = { .read = fake_read, .write = fake_write };
	struct s3_token t = { .transport = S3_TRANSPORT_RC, .qpn = 0x11, .rkey = FAKE_KEY, .port = 1 };
	char hex[S3_TOKEN_HEX + 1], req[1024], resp[4096], etag[40];
	struct ev_watch *wt;
	unsigned turns;
	int always = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	size_t n;

	assert_true(always >= 0);
	wt = evloop_add_fd(w->loop, always, EPOLLIN, nothing, NULL);
	assert_non_null(wt);
	fake_mem = malloc(FAKE_LEN);
	assert_non_null(fake_mem);
	for (size_t i = 0; i < size; i++)
		fake_mem[i] = pat(i);
	memset(fake_mem + size, 0, FAKE_LEN - size);
	s3_store_set_dma(s3_endpoint_store(w->ep), &ops);
	connect_host(w);

	t.addr = FAKE_ADDR;
	t.len = size;
	s3_token_to_hex(&t, hex);
	n = (size_t)snprintf(req, sizeof(req), "PUT /ernic/rd HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n"
			     "x-amz-rdma-token: %s\r\n\r\n", hex);
	host_send_plain(w, req, n);
	expect_ack(w, w->snd_nxt, 65535); /* the request taken; its answer waits for the transfer */
	turns = turns_until_sent(w);
	assert_true(turns >= 2);
	assert_true(take_response(w, resp, sizeof(resp)) > 0);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(resp, "x-amz-rdma-bytes: 8388608\r\n"));
	md5_etag(fake_mem, size, etag);
	assert_non_null(strstr(resp, etag));
	print_message("[   INFO   ] 8 MiB RDMA PUT through the endpoint: %u turns of the loop\n", turns);

	/* GET into the upper half, a HEAD pipelined behind it in the same segment. */
	t.addr = FAKE_ADDR + size;
	s3_token_to_hex(&t, hex);
	n = (size_t)snprintf(req, sizeof(req), "GET /ernic/rd HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n"
			     "HEAD /ernic/rd HTTP/1.1\r\nHost: s3\r\n\r\n", hex);
	host_send_plain(w, req, n);
	evloop_run_deferred(w->loop); /* the batch ends with no answer yet: the ACK goes alone */
	assert_int_equal(w->to_tap.n, 1);
	rec_clear(&w->to_tap);
	turns = turns_until_sent(w);
	assert_true(turns >= 2);
	assert_true(take_response(w, resp, sizeof(resp)) > 0);
	{
		char *first = strstr(resp, "HTTP/1.1 200 OK\r\n"), *second;

		assert_non_null(first);
		assert_non_null(strstr(first, "x-amz-rdma-bytes: 8388608\r\n"));
		second = strstr(first + 1, "HTTP/1.1 200 OK\r\n");
		assert_non_null(second);
		assert_non_null(strstr(second, etag));
	}
	assert_memory_equal(fake_mem + size, fake_mem, size);
	print_message("[   INFO   ] 8 MiB RDMA GET through the endpoint: %u turns of the loop\n", turns);

	memset(fake_mem + 2 * size - 4096, 0, 4096);
	/*
	 * 4 KiB each way: the transfer ends in the turn that takes the request, so
	 * the answer carries the request's ACK, and no pure ACK goes before it.
	 */
	for (int get = 0; get < 2; get++) {
		struct seg sg;

		t.addr = FAKE_ADDR + (get ? 2 * size - 4096 : 0);
		t.len = 4096;
		s3_token_to_hex(&t, hex);
		n = (size_t)snprintf(req, sizeof(req), "%s /ernic/small HTTP/1.1\r\nHost: s3\r\n%s"
				     "x-amz-rdma-token: %s\r\n\r\n", get ? "GET" : "PUT",
				     get ? "" : "Content-Length: 0\r\n", hex);
		host_send_plain(w, req, n);
		assert_int_equal(w->to_tap.n, 0); /* the ACK waits for the end of the batch */
		one_turn(w);
		assert_int_equal(w->to_tap.n, 1);
		check_tcp_frame(w->to_tap.f[0], w->to_tap.len[0], EP_IP, HOST_IP, &sg);
		assert_true(sg.flags & F_ACK);
		assert_int_equal(sg.ack, w->snd_nxt);
		assert_true(sg.len > 0);
		assert_true(take_response(w, resp, sizeof(resp)) > 0);
		assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
		assert_non_null(strstr(resp, "x-amz-rdma-bytes: 4096\r\n"));
	}
	assert_memory_equal(fake_mem + 2 * size - 4096, fake_mem, 4096);
	evloop_del_fd(w->loop, wt);
	close(always);
	free(fake_mem);
}

/* A UDP super-frame as the kernel hands one over (UDP_L4, checksum partial) at buf: len bytes of payload. */
static size_t udp_super(uint8_t *buf, size_t len, uint16_t gso_size)
{
	uint8_t *f = buf + VH, *ip = f + 14, *udp = ip + 20;
	uint32_t p = pseudo(HOST_IP, GUEST_IP, 17, 8 + len);

	memset(buf, 0, VH + 42);
	memcpy(f, guest_mac, 6);
	memcpy(f + 6, host_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (uint32_t)(28 + len));
	put16(ip + 4, 0xfffe);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, HOST_IP);
	put32(ip + 16, GUEST_IP);
	put16(ip + 10, fold(sum16(0, ip, 20)));
	put16(udp, 49152);
	put16(udp + 2, 4791);
	put16(udp + 4, (uint32_t)(8 + len));
	while (p >> 16)
		p = (p & 0xffff) + (p >> 16);
	put16(udp + 6, p);
	for (size_t i = 0; i < len; i++)
		udp[8 + i] = pat(i);
	buf[0] = 1;
	buf[1] = 5;
	set_vh16(buf, 2, 42);
	set_vh16(buf, 4, gso_size);
	set_vh16(buf, 6, 34);
	set_vh16(buf, 8, 6);
	return VH + 42 + len;
}

struct cuts {
	unsigned n;
	size_t payload;
	bool bad;
};

static void take_cut(void *ctx, const uint8_t *f, size_t len)
{
	struct cuts *c = ctx;
	const uint8_t *ip = f + 14;
	size_t tot = get16(ip + 2), seg = tot - 28;

	/* Each datagram whole (padded to 60 bytes): its lengths, identification (wrapping), checksums, its payload. */
	if (len != (14 + tot < 60 ? 60 : 14 + tot) || get16(ip + 20 + 4) != tot - 20 || get16(ip + 4) != (uint16_t)(0xfffe + c->n) ||
	    fold(sum16(0, ip, 20)) != 0 || fold(pseudo(HOST_IP, GUEST_IP, 17, tot - 20) + sum16(0, ip + 20, tot - 20)) != 0)
		c->bad = true;
	for (size_t i = 0; i < seg; i++)
		if (f[42 + i] != pat(c->payload + i))
			c->bad = true;
	c->payload += seg;
	c->n++;
}

/* UDP super-frames (UDP_L4): what parse takes and refuses, and the datagrams they are cut into. */
static void test_udp_super_frames(void **state)
{
	static uint8_t buf[VH + NET_MAX_FRAME], out[NET_MAX_FRAME];
	struct net_offload_stats st = { 0 };
	struct net_offload off;
	struct cuts c = { 0 };
	size_t n = udp_super(buf, 5 * 1028 + 7, 1028);

	(void)state;
	assert_int_equal(net_offload_parse(buf, n, &off, &st), 0);
	assert_true(off.gso_udp);
	assert_int_equal(off.gso_size, 1028);
	assert_int_equal(off.hdr_len, 42);
	assert_int_equal(off.pkt_len, n - VH);
	assert_int_equal(st.gso_udp_frames, 1);
	assert_int_equal(net_offload_segment(buf + VH, n - VH, &off, out, sizeof(out), take_cut, &c), 6);
	assert_false(c.bad);
	assert_int_equal(c.payload, 5 * 1028 + 7);
	/* A datagram is never cut: a buffer too small for one refuses the frame. */
	c = (struct cuts){ 0 };
	assert_int_equal(net_offload_segment(buf + VH, n - VH, &off, out, 42 + 1027, take_cut, &c), 0);
	assert_int_equal(c.n, 0);
	/* Refused: gso_size 0; not partial; partial elsewhere; a UDP length not the packet's; a fragment; TCP. */
	set_vh16(buf, 4, 0);
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	assert_int_equal(st.drop_gso_size, 1);
	set_vh16(buf, 4, 1028);
	buf[0] = 0;
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	buf[0] = 1;
	set_vh16(buf, 8, 16);
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	set_vh16(buf, 8, 6);
	set_vh16(buf, 6, 14);
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	set_vh16(buf, 6, 34);
	put16(buf + VH + 34 + 4, 100);
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	put16(buf + VH + 34 + 4, (uint32_t)(n - VH - 34));
	put16(buf + VH + 14 + 6, 0x2000);
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	put16(buf + VH + 14 + 6, 0x4000);
	buf[VH + 14 + 9] = 6;
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	buf[VH + 14 + 9] = 17;
	assert_int_equal(st.drop_gso_frame, 6);
	/* Put back, it is good again. */
	assert_int_equal(net_offload_parse(buf, n, &off, &st), 0);
}

struct cuts6 {
	unsigned n;
	size_t payload;
	bool bad;
};

static void take_cut6(void *ctx, const uint8_t *f, size_t len)
{
	struct cuts6 *c = ctx;
	const uint8_t *ip = f + 14, *udp = ip + 40;
	size_t l4 = get16(ip + 4), seg = l4 - 8;
	uint32_t sum = sum16(0, ip + 8, 32) + 17 + (uint32_t)l4;

	if (len != 14 + 40 + l4 || get16(udp + 4) != l4 || get16(udp + 6) == 0 || fold(sum + sum16(0, udp, l4)) != 0)
		c->bad = true;
	for (size_t i = 0; i < seg; i++)
		if (udp[8 + i] != pat(c->payload + i))
			c->bad = true;
	c->payload += seg;
	c->n++;
}

/* A UDPv6 super-frame (the kernel grants USO for both families at once): its datagrams, checked. */
static void test_udp6_super_frame(void **state)
{
	static uint8_t buf[VH + NET_MAX_FRAME], out[NET_MAX_FRAME];
	uint8_t *f = buf + VH, *ip = f + 14, *udp = ip + 40;
	struct net_offload_stats st = { 0 };
	struct net_offload off;
	struct cuts6 c = { 0 };
	size_t len = 3 * 1200 + 11, n = VH + 14 + 40 + 8 + len;
	uint32_t p;

	(void)state;
	memset(buf, 0, VH + 62);
	memcpy(f, guest_mac, 6);
	memcpy(f + 6, host_mac, 6);
	put16(f + 12, 0x86dd);
	ip[0] = 0x60;
	put16(ip + 4, (uint32_t)(8 + len));
	ip[6] = 17;
	ip[7] = 64;
	ip[8] = 0xfd;
	ip[23] = 2;
	ip[24] = 0xfd;
	ip[39] = 3;
	put16(udp, 5000);
	put16(udp + 2, 6000);
	put16(udp + 4, (uint32_t)(8 + len));
	for (size_t i = 0; i < len; i++)
		udp[8 + i] = pat(i);
	p = sum16(0, ip + 8, 32) + 17 + (uint32_t)(8 + len);
	while (p >> 16)
		p = (p & 0xffff) + (p >> 16);
	put16(udp + 6, p);
	buf[0] = 1;
	buf[1] = 5;
	set_vh16(buf, 2, 62);
	set_vh16(buf, 4, 1200);
	set_vh16(buf, 6, 54);
	set_vh16(buf, 8, 6);
	assert_int_equal(net_offload_parse(buf, n, &off, &st), 0);
	assert_true(off.gso_udp);
	assert_int_equal(off.hdr_len, 62);
	assert_int_equal(net_offload_segment(f, n - VH, &off, out, sizeof(out), take_cut6, &c), 4);
	assert_false(c.bad);
	assert_int_equal(c.payload, len);
	/* An extension header (hop-by-hop) before the UDP header: refused. */
	ip[6] = 0;
	assert_int_not_equal(net_offload_parse(buf, n, &off, &st), 0);
	assert_int_equal(st.drop_gso_frame, 1);
}

/* What net_offload_udp_each() hands over, each datagram joined into its own buffer. */
struct joined {
	unsigned n;
	uint8_t f[8][1100];
	size_t len[8];
};

static void take_joined(void *ctx, const uint8_t *hdr, size_t hlen, const uint8_t *payload, size_t plen)
{
	struct joined *j = ctx;

	assert_true(j->n < 8 && hlen + plen <= sizeof(j->f[0]));
	memcpy(j->f[j->n], hdr, hlen);
	memcpy(j->f[j->n] + hlen, payload, plen);
	j->len[j->n++] = hlen + plen;
}

static struct joined cut_frames;

static void take_frame(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx;
	assert_true(cut_frames.n < 8 && len <= sizeof(cut_frames.f[0]));
	memcpy(cut_frames.f[cut_frames.n], f, len);
	cut_frames.len[cut_frames.n++] = len;
}

/*
 * net_offload_udp_each(): the datagrams net_offload_segment() builds, byte
 * for byte, but for the UDP checksum, which is none (0); nothing for IPv6 or
 * a super-frame with no payload.
 */
static void test_udp_each(void **state)
{
	static uint8_t buf[VH + NET_MAX_FRAME], out[NET_MAX_FRAME];
	struct net_offload_stats st = { 0 };
	struct net_offload off;
	struct joined j = { 0 };
	size_t n = udp_super(buf, 5 * 1028 + 7, 1028);

	(void)state;
	assert_int_equal(net_offload_parse(buf, n, &off, &st), 0);
	memset(&cut_frames, 0, sizeof(cut_frames));
	assert_int_equal(net_offload_segment(buf + VH, n - VH, &off, out, sizeof(out), take_frame, NULL), 6);
	assert_int_equal(net_offload_udp_each(buf + VH, n - VH, &off, take_joined, &j), 6);
	assert_int_equal(j.n, 6);
	for (unsigned i = 0; i < 6; i++) {
		assert_int_equal(j.len[i], i < 5 ? 42 + 1028 : 42 + 7);
		assert_int_equal(cut_frames.len[i], j.len[i] < 60 ? 60 : j.len[i]);
		assert_int_equal(get16(j.f[i] + 14 + 20 + 6), 0);
		put16(cut_frames.f[i] + 14 + 20 + 6, 0);
		assert_memory_equal(j.f[i], cut_frames.f[i], j.len[i]);
	}
	/* Not IPv4: nothing (the caller cuts it the usual way). */
	put16(buf + VH + 12, 0x86dd);
	j.n = 0;
	assert_int_equal(net_offload_udp_each(buf + VH, n - VH, &off, take_joined, &j), 0);
	put16(buf + VH + 12, 0x0800);
	/* Not UDP, or no payload past the headers: nothing. */
	off.gso_udp = false;
	assert_int_equal(net_offload_udp_each(buf + VH, n - VH, &off, take_joined, &j), 0);
	off.gso_udp = true;
	off.pkt_len = off.hdr_len;
	assert_int_equal(net_offload_udp_each(buf + VH, n - VH, &off, take_joined, &j), 0);
	assert_int_equal(j.n, 0);
}

/* An endpoint that takes UDP super-frames whole, or refuses them (it then gets the datagrams). */
struct whole_ep {
	bool take;
	unsigned supers, frames;
};

static bool whole_wants(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx;
	return len >= 42 && memcmp(f, guest_mac, 6) == 0 && get16(f + 12) == 0x0800 && f[23] == 17 &&
	       get16(f + 36) == 4791;
}

static void whole_deliver(void *ctx, const uint8_t *f, size_t len)
{
	struct whole_ep *e = ctx;

	(void)f, (void)len;
	e->frames++;
}

static bool whole_super(void *ctx, const uint8_t *f, size_t len, const struct net_offload *off)
{
	struct whole_ep *e = ctx;

	(void)f, (void)len, (void)off;
	e->supers += e->take;
	return e->take;
}

static unsigned monitored;

static void count_monitor(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx, (void)f, (void)len;
	monitored++;
}

/*
 * The switch hands a UDP super-frame whole to the endpoint it is for when that
 * endpoint takes it: not with a monitor set (it must see each datagram), not
 * to a group address, and the datagrams when the endpoint refuses it.
 */
static void test_udp_super_to_endpoint(void **state)
{
	static uint8_t buf[VH + NET_MAX_FRAME];
	struct net_offload_stats st = { 0 };
	struct net_offload off;
	struct whole_ep e = { .take = true };
	struct net_port tap = { .name = "tap", .deliver = whole_deliver, .ctx = &(struct whole_ep){ 0 } };
	struct net_port ep = { .name = "roce", .ctx = &e, .wants = whole_wants, .deliver = whole_deliver,
			       .deliver_udp_super = whole_super };
	struct net_switch *sw = net_switch_new();
	size_t n = udp_super(buf, 5 * 1028 + 7, 1028);
	int t;

	(void)state;
	assert_non_null(sw);
	t = net_switch_attach(sw, &tap);
	assert_true(net_switch_attach(sw, &ep) >= 0);
	assert_int_equal(net_offload_parse(buf, n, &off, &st), 0);
	net_switch_input_offload(sw, t, buf + VH, n - VH, &off);
	assert_int_equal(e.supers, 1);
	assert_int_equal(e.frames, 0);
	assert_int_equal(net_switch_stats(sw)->udp_whole, 1);
	/* Refused: the six datagrams instead. */
	e.take = false;
	net_switch_input_offload(sw, t, buf + VH, n - VH, &off);
	assert_int_equal(e.frames, 6);
	/* A monitor sees every datagram, so the endpoint gets them one by one. */
	e = (struct whole_ep){ .take = true };
	net_switch_set_monitor(sw, count_monitor, NULL);
	net_switch_input_offload(sw, t, buf + VH, n - VH, &off);
	assert_int_equal(monitored, 6);
	assert_int_equal(e.supers, 0);
	assert_int_equal(e.frames, 6);
	net_switch_set_monitor(sw, NULL, NULL);
	/* Not for the endpoint (another MAC): cut, and nobody takes it whole. */
	buf[VH + 5] ^= 1;
	e = (struct whole_ep){ .take = true };
	net_switch_input_offload(sw, t, buf + VH, n - VH, &off);
	assert_int_equal(e.supers + e.frames, 0);
	assert_int_equal(net_switch_stats(sw)->udp_whole, 1);
	net_switch_free(sw);
}

/* An endpoint that answers the sender of a super-frame while it takes it (as a RoCEv2 node ACKs). */
struct answering_ep {
	struct net_switch *sw;
	int id;
};

static bool answer_super(void *ctx, const uint8_t *f, size_t len, const struct net_offload *off)
{
	struct answering_ep *a = ctx;
	uint8_t ack[60] = { 0 };

	(void)len, (void)off;
	memcpy(ack, f + 6, 6); /* to the super-frame's sender */
	memcpy(ack + 6, guest_mac, 6);
	put16(ack + 12, 0x0800);
	net_switch_input(a->sw, a->id, ack, sizeof(ack));
	return true;
}

/*
 * The sender of a super-frame is learned before the endpoint takes it: the
 * answer the endpoint sends from inside that call goes to the sender's port
 * alone, even the first time the switch hears of the sender, and not flooded
 * to the other ports (the guest's Ethernet would see it).
 */
static void test_udp_super_sender_learned(void **state)
{
	static uint8_t buf[VH + NET_MAX_FRAME];
	struct net_offload_stats st = { 0 };
	struct net_offload off;
	struct whole_ep tap_seen = { 0 }, other_seen = { 0 };
	struct net_port tap = { .name = "tap", .deliver = whole_deliver, .ctx = &tap_seen };
	struct net_port other = { .name = "guest", .deliver = whole_deliver, .ctx = &other_seen };
	struct answering_ep a;
	struct net_port ep = { .name = "roce", .ctx = &a, .wants = whole_wants, .deliver = whole_deliver,
			       .deliver_udp_super = answer_super };
	struct net_switch *sw = net_switch_new();
	size_t n = udp_super(buf, 5 * 1028 + 7, 1028);
	int t;

	(void)state;
	assert_non_null(sw);
	a.sw = sw;
	t = net_switch_attach(sw, &tap);
	assert_true(net_switch_attach(sw, &other) >= 0);
	a.id = net_switch_attach(sw, &ep);
	assert_true(a.id >= 0);
	assert_int_equal(net_offload_parse(buf, n, &off, &st), 0);
	net_switch_input_offload(sw, t, buf + VH, n - VH, &off);
	assert_int_equal(net_switch_stats(sw)->udp_whole, 1);
	assert_int_equal(tap_seen.frames, 1);
	assert_int_equal(other_seen.frames, 0);
	assert_int_equal(net_switch_stats(sw)->flooded, 0);
	net_switch_free(sw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inet_csum),
		cmocka_unit_test(test_udp_super_frames),
		cmocka_unit_test(test_udp6_super_frame),
		cmocka_unit_test(test_udp_each),
		cmocka_unit_test(test_udp_super_to_endpoint),
		cmocka_unit_test(test_udp_super_sender_learned),
		cmocka_unit_test_setup_teardown(test_put_in_super_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_super_frame_overlap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_endpoint_trusts_only_the_kernels_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_segmented_toward_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_in_slices, setup, teardown),
	};

	return cmocka_run_group_tests_name("net-offload-unit", tests, NULL, NULL);
}
