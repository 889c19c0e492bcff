/*
 * s3-tcp-unit: the in-band TCP/IP stack of net/inet.h, driven through a
 * loopback harness: a peer TCP written here (its own frame builder, parser
 * and checksums, with byte offsets straight from the RFCs rather than the
 * stack's wire structs), a fake application (echo, or a sink whose intake
 * is limited to model a slow reader, and a source of bytes) and a fake clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

#include "net/inet.h"
#include "../lib/wire_bytes.h"

#define OUR_IP    0x0a000002u   /* 10.0.0.2 */
#define OUR_PORT  80
#define PEER_IP   0x0a000001u   /* 10.0.0.1 */
#define OTHER_IP  0x0a000003u

#define QCAP      4096          /* frames the harness can hold */
#define FMAX      2048          /* bytes per held frame */
#define MAX_APPS  512

#define F_FIN 0x01u
#define F_SYN 0x02u
#define F_RST 0x04u
#define F_PSH 0x08u
#define F_ACK 0x10u

static const uint8_t our_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* ---- bytes and checksums, independent of the stack ---------------------------- */


/* Bytes of a stream, not periodic within the sizes used here. */
static uint8_t pat(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;

	return (uint8_t)((x >> 13) ^ (i >> 16) ^ (i >> 24));
}

static uint8_t *pattern(size_t n, size_t seed)
{
	uint8_t *b = malloc(n ? n : 1);

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i + seed);
	return b;
}

/* A deterministic generator (xorshift64*). */
static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static void append(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *d, size_t n)
{
	if (n == 0)
		return;
	if (*len + n > *cap) {
		size_t nc = *cap ? *cap : 4096;

		while (nc < *len + n)
			nc *= 2;
		*buf = realloc(*buf, nc);
		assert_non_null(*buf);
		*cap = nc;
	}
	memcpy(*buf + *len, d, n);
	*len += n;
}

/*
 * The stack draws its initial sequence numbers from getrandom(); this one,
 * linked ahead of libc's, makes every run the same (the fuzz loop included)
 * and can fail, to exercise the stack's fallback.
 */
static uint64_t entropy_state;
static bool entropy_fails;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	(void)flags;
	if (entropy_fails) {
		errno = ENOSYS;
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		entropy_state = entropy_state * 6364136223846793005ull + 1442695040888963407ull;
		((uint8_t *)buf)[i] = (uint8_t)(entropy_state >> 56);
	}
	return (ssize_t)len;
}

/* ---- the fake application ---------------------------------------------------------- */

struct harness;

struct app {
	struct harness *h;
	unsigned close_calls, eof_calls, input_calls;
	uint8_t *rx;
	size_t rx_len, rx_cap;
	size_t budget;          /* bytes it will still take; SIZE_MAX: everything */
	bool echo;              /* what it takes, it sends back */
	uint8_t *out;           /* out[acked..out_len) is not acknowledged yet */
	size_t out_len, out_cap, acked;
	size_t peek_chunk;      /* at most this many bytes per peek (0: no limit) */
	bool want_close;
};

struct frame {
	size_t len;
	uint8_t d[FMAX];
};

struct harness {
	struct inet_host *t;
	uint64_t now;
	struct frame *q;
	size_t qhead, qn;
	struct app *apps[MAX_APPS];
	unsigned napps, opens, closes;
	bool refuse;
	bool echo;              /* defaults for new applications */
	size_t budget;
	bool defer;             /* what defer_acks answers */
	unsigned defer_calls;
};

static void app_queue(struct app *a, const uint8_t *d, size_t n)
{
	append(&a->out, &a->out_len, &a->out_cap, d, n);
}

static struct app *last_app(struct harness *h)
{
	assert_true(h->napps > 0);
	return h->apps[h->napps - 1];
}

/* Every frame the stack sends is checked here, whatever the test. */
static void check_out_frame(const uint8_t *f, size_t len)
{
	assert_true(len >= 60 && len <= INET_TCP_MAX_FRAME);
	assert_memory_equal(f + 6, our_mac, 6);
	if (get16(f + 12) == 0x0806) {
		assert_int_equal(len, 60);
		return;
	}
	assert_int_equal(get16(f + 12), 0x0800);
	const uint8_t *ip = f + 14;
	size_t tot = get16(ip + 2);

	assert_int_equal(ip[0], 0x45);
	assert_true(tot >= 20 && 14 + tot <= len);
	assert_int_equal(len, 14 + tot < 60 ? 60 : 14 + tot);
	assert_int_equal(fold(sum16(0, ip, 20)), 0);
	assert_int_equal(ip[8], 64);
	assert_int_equal(get32(ip + 12), OUR_IP);
	assert_int_equal(get16(ip + 6) & 0x3fff, 0);    /* no fragments */
	if (ip[9] == 6) {
		const uint8_t *tcp = ip + 20;
		size_t tl = tot - 20;

		assert_true(get16(ip + 6) & 0x4000);      /* DF */
		assert_true(tl >= 20);
		assert_true((size_t)(tcp[12] >> 4) * 4 >= 20 && (size_t)(tcp[12] >> 4) * 4 <= tl);
		assert_int_equal(fold(pseudo(get32(ip + 12), get32(ip + 16), 6, tl) + sum16(0, tcp, tl)), 0);
	} else {
		assert_int_equal(ip[9], 1);
		assert_int_equal(fold(sum16(0, ip + 20, tot - 20)), 0);
	}
}

/* When set, every frame the stack sends is appended here too: a length (2 bytes), then the frame. */
static uint8_t *rec_buf;
static size_t rec_len, rec_cap;
static bool recording;

static void cb_send_frame(void *ctx, const uint8_t *f, size_t len)
{
	struct harness *h = ctx;
	struct frame *fr;

	check_out_frame(f, len);
	if (recording) {
		uint8_t l[2] = { (uint8_t)(len >> 8), (uint8_t)len };

		append(&rec_buf, &rec_len, &rec_cap, l, 2);
		append(&rec_buf, &rec_len, &rec_cap, f, len);
	}
	assert_true(h->qn < QCAP);
	fr = &h->q[(h->qhead + h->qn) % QCAP];
	memcpy(fr->d, f, len);
	fr->len = len;
	h->qn++;
}

/*
 * A super-segment (ops.send_super), cut here as the kernel's segmentation
 * cuts one, by this file's own reading of the offload's rules: the TCP
 * checksum field must hold the pseudo-header sum over the whole TCP length
 * (not inverted), and each piece gets the headers, its own IPv4 length,
 * identification (one more than the last), header checksum, sequence
 * number, TCP checksum, and PSH/FIN only on the last. The pieces then go
 * through cb_send_frame's checks as if the stack had sent them one by one.
 */
static unsigned super_calls, super_pieces;

static void cb_send_super(void *ctx, const struct iovec *piece, unsigned np, uint16_t gso)
{
	static uint8_t f[14 + 65535];
	const uint8_t *ip = f + 14, *tcp = ip + 20;
	size_t hdr, tot, payload, done = 0, len = 0;
	uint8_t seg[FMAX];
	unsigned i = 0;

	/* The headers whole in the first piece, then the payload in at most INET_TCP_SUPER_PIECES. */
	assert_true(np >= 2 && np <= 1 + INET_TCP_SUPER_PIECES);
	assert_true(piece[0].iov_len >= 54 && piece[0].iov_len <= 54 + 40);
	for (unsigned k = 0; k < np; k++) {
		assert_true(piece[k].iov_len > 0 && len + piece[k].iov_len <= sizeof(f));
		memcpy(f + len, piece[k].iov_base, piece[k].iov_len);
		len += piece[k].iov_len;
	}
	assert_int_equal(piece[0].iov_len, 34 + (size_t)(tcp[12] >> 4) * 4);
	assert_true(len > 54 && len <= 14 + 65535);
	assert_int_equal(get16(f + 12), 0x0800);
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[9], 6);
	assert_int_equal(fold(sum16(0, ip, 20)), 0);
	tot = get16(ip + 2);
	assert_int_equal(14 + tot, len);
	hdr = 34 + (size_t)(tcp[12] >> 4) * 4;
	payload = len - hdr;
	assert_true(gso >= 536 - 12 && gso <= 1460);  /* the least MSS, less the timestamps */
	assert_true(payload > gso);     /* several segments, or it would have gone alone */
	assert_int_equal(get16(tcp + 16), (uint16_t)~fold(pseudo(get32(ip + 12), get32(ip + 16), 6, tot - 20)));
	super_calls++;
	while (done < payload) {
		size_t n = payload - done < gso ? payload - done : gso, flen = hdr + n;
		uint8_t *sip = seg + 14, *stcp = sip + 20;
		bool last = done + n == payload;

		memcpy(seg, f, hdr);
		memcpy(seg + hdr, f + hdr + done, n);
		put16(sip + 2, (uint16_t)(flen - 14));
		put16(sip + 4, (uint16_t)(get16(ip + 4) + i));
		put16(sip + 10, 0);
		put16(sip + 10, fold(sum16(0, sip, 20)));
		put32(stcp + 4, get32(tcp + 4) + (uint32_t)done);
		if (!last)
			stcp[13] &= (uint8_t)~(F_PSH | F_FIN);
		put16(stcp + 16, 0);
		put16(stcp + 16, fold(pseudo(get32(sip + 12), get32(sip + 16), 6, flen - 34) + sum16(0, stcp, flen - 34)));
		if (flen < 60) {
			memset(seg + flen, 0, 60 - flen);
			flen = 60;
		}
		cb_send_frame(ctx, seg, flen);
		super_pieces++;
		done += n;
		i++;
	}
}

static void *cb_open(void *ctx)
{
	struct harness *h = ctx;
	struct app *a;

	if (h->refuse)
		return NULL;
	assert_true(h->napps < MAX_APPS);
	a = calloc(1, sizeof(*a));
	assert_non_null(a);
	a->h = h;
	a->budget = h->budget;
	a->echo = h->echo;
	h->apps[h->napps++] = a;
	h->opens++;
	return a;
}

static size_t cb_input(void *app, const uint8_t *d, size_t n)
{
	struct app *a = app;
	size_t take = n < a->budget ? n : a->budget;

	assert_int_equal(a->close_calls, 0);
	assert_int_equal(a->eof_calls, 0);
	assert_true(n > 0);
	a->input_calls++;
	if (a->budget != SIZE_MAX)
		a->budget -= take;
	append(&a->rx, &a->rx_len, &a->rx_cap, d, take);
	if (a->echo)
		app_queue(a, d, take);
	return take;
}

static void cb_input_eof(void *app)
{
	struct app *a = app;

	assert_int_equal(a->close_calls, 0);
	a->eof_calls++;
	assert_int_equal(a->eof_calls, 1);
}

static size_t cb_peek(void *app, uint64_t off, const uint8_t **data)
{
	struct app *a = app;
	size_t pending = a->out_len - a->acked, n;

	assert_int_equal(a->close_calls, 0);
	if (off >= pending)
		return 0;
	n = pending - (size_t)off;
	if (a->peek_chunk && n > a->peek_chunk)
		n = a->peek_chunk;
	*data = a->out + a->acked + off;
	return n;
}

static void cb_acked(void *app, size_t n)
{
	struct app *a = app;

	assert_int_equal(a->close_calls, 0);
	assert_true(n > 0 && n <= a->out_len - a->acked);
	a->acked += n;
}

static bool cb_wants_close(void *app)
{
	struct app *a = app;

	assert_int_equal(a->close_calls, 0);
	return a->want_close;
}

static void cb_close(void *app)
{
	struct app *a = app;

	a->close_calls++;
	a->h->closes++;
	assert_int_equal(a->close_calls, 1);
}

static bool cb_defer_acks(void *ctx)
{
	struct harness *h = ctx;

	h->defer_calls++;
	return h->defer;
}

static struct harness *harness_new(bool super)
{
	struct harness *h = calloc(1, sizeof(*h));
	struct inet_config cfg = { .ip = OUR_IP, .port = OUR_PORT };
	struct inet_ops ops = {
		.send_frame = cb_send_frame, .send_super = super ? cb_send_super : NULL, .open = cb_open,
		.input = cb_input, .input_eof = cb_input_eof, .peek = cb_peek, .acked = cb_acked,
		.wants_close = cb_wants_close, .close = cb_close, .defer_acks = cb_defer_acks,
	};

	if (h == NULL)
		return NULL;
	entropy_state = 0x5eed;
	entropy_fails = false;
	h->q = calloc(QCAP, sizeof(*h->q));
	if (h->q == NULL)
		return h;
	memcpy(cfg.mac, our_mac, 6);
	ops.ctx = h;
	h->budget = SIZE_MAX;
	h->now = 1000;
	h->t = inet_new(&cfg, &ops);
	return h;
}

static int setup(void **state)
{
	struct harness *h = harness_new(false);

	if (h == NULL || h->q == NULL || h->t == NULL)
		return -1;
	*state = h;
	return 0;
}

/* The same stack with segmentation offload: every test must see the very frames it saw without. */
static int setup_super(void **state)
{
	struct harness *h = harness_new(true);

	if (h == NULL || h->q == NULL || h->t == NULL)
		return -1;
	*state = h;
	return 0;
}

/* Frees the stack: every application opened must have been closed exactly once by then. */
static int harness_free(struct harness *h)
{
	int rc = 0;

	inet_free(h->t);
	if (h->closes != h->opens) {
		fprintf(stderr, "opened %u applications, closed %u\n", h->opens, h->closes);
		rc = -1;
	}
	for (unsigned i = 0; i < h->napps; i++) {
		if (h->apps[i]->close_calls != 1) {
			fprintf(stderr, "application %u closed %u times\n", i, h->apps[i]->close_calls);
			rc = -1;
		}
		free(h->apps[i]->rx);
		free(h->apps[i]->out);
		free(h->apps[i]);
	}
	free(h->q);
	free(h);
	return rc;
}

static int teardown(void **state)
{
	return harness_free(*state);
}

/* ---- frames in ------------------------------------------------------------------------ */

/* Each frame in its own allocation of exactly its size: under ASan, any read past it is caught. */
static void h_in(struct harness *h, const uint8_t *f, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	assert_non_null(copy);
	memcpy(copy, f, len);
	inet_input(h->t, copy, len, h->now);
	free(copy);
}

static void h_poll(struct harness *h)
{
	inet_poll(h->t, h->now);
}

static void h_drain_queue(struct harness *h)
{
	h->qhead = (h->qhead + h->qn) % QCAP;
	h->qn = 0;
}

static bool pop_frame(struct harness *h, struct frame *out)
{
	if (h->qn == 0)
		return false;
	*out = h->q[h->qhead];
	h->qhead = (h->qhead + 1) % QCAP;
	h->qn--;
	return true;
}

/* Ethernet and IPv4 (no options) headers; returns the offset of the transport header. */
static size_t build_ip(uint8_t *f, const uint8_t *smac, uint32_t sip, uint32_t dip, uint8_t proto,
		       size_t l4len)
{
	static uint16_t id;

	memcpy(f, our_mac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, 0x0800);
	f[14] = 0x45;
	f[15] = 0;
	put16(f + 16, (uint32_t)(20 + l4len));
	put16(f + 18, id++);
	put16(f + 20, 0x4000);
	f[22] = 64;
	f[23] = proto;
	put16(f + 24, 0);
	put32(f + 26, sip);
	put32(f + 30, dip);
	put16(f + 24, fold(sum16(0, f + 14, 20)));
	return 34;
}

static void fix_ip_csum(uint8_t *f)
{
	size_t ihl = (size_t)(f[14] & 0xf) * 4;

	put16(f + 24, 0);
	put16(f + 24, fold(sum16(0, f + 14, ihl)));
}

static void fix_tcp_csum(uint8_t *f)
{
	size_t ihl = (size_t)(f[14] & 0xf) * 4, tl = get16(f + 16) - ihl;
	uint8_t *tcp = f + 14 + ihl;

	put16(tcp + 16, 0);
	put16(tcp + 16, fold(pseudo(get32(f + 26), get32(f + 30), 6, tl) + sum16(0, tcp, tl)));
}

struct peer {
	uint32_t ip;
	uint16_t port;
	uint8_t mac[6];
	uint32_t snd_nxt;       /* next sequence number to send */
	uint32_t rcv_nxt;       /* next expected from the stack */
	uint16_t wnd;           /* what the peer advertises */
	int syn_mss;            /* MSS option in the SYN, -1 for none */
	int syn_ws;             /* window scale offered in the SYN, -1 for none */
	bool syn_sack;          /* SACK-permitted offered */
	bool ts;                /* timestamps offered, and then sent on every segment */
	uint32_t tsval;         /* the peer's next TSval */
	uint32_t ts_recent;     /* the stack's last TSval, echoed */
	unsigned nsack;         /* SACK blocks to put on the next segments */
	uint32_t sack[4][2];
	uint32_t last_ack;      /* last acknowledgment and window from the stack */
	uint16_t last_wnd;
	unsigned last_flags;
	uint8_t *rx;            /* bytes received from the stack */
	size_t rx_len, rx_cap;
	bool fin_rcvd;
	struct app *app;
};

static void peer_init(struct peer *p, uint16_t port, uint32_t iss)
{
	memset(p, 0, sizeof(*p));
	p->ip = PEER_IP;
	p->port = port;
	memcpy(p->mac, peer_mac, 6);
	p->snd_nxt = iss;
	p->wnd = 65535;
	p->syn_mss = 1460;
	p->syn_ws = -1;
}

static void peer_free(struct peer *p)
{
	free(p->rx);
	p->rx = NULL;
}

static size_t build_tcp(uint8_t *f, const struct peer *p, uint16_t dport, uint32_t seq, uint32_t ack,
			unsigned flags, uint16_t wnd, const uint8_t *opt, size_t optlen,
			const uint8_t *data, size_t len)
{
	size_t off = build_ip(f, p->mac, p->ip, OUR_IP, 6, 20 + optlen + len);
	uint8_t *tcp = f + off;

	assert_true(optlen % 4 == 0 && off + 20 + optlen + len <= FMAX);
	put16(tcp, p->port);
	put16(tcp + 2, dport);
	put32(tcp + 4, seq);
	put32(tcp + 8, ack);
	tcp[12] = (uint8_t)(((20 + optlen) / 4) << 4);
	tcp[13] = (uint8_t)flags;
	put16(tcp + 14, wnd);
	put16(tcp + 16, 0);
	put16(tcp + 18, 0);
	if (optlen)
		memcpy(tcp + 20, opt, optlen);
	if (len)
		memcpy(tcp + 20 + optlen, data, len);
	put16(tcp + 16, fold(pseudo(p->ip, OUR_IP, 6, 20 + optlen + len) + sum16(0, tcp, 20 + optlen + len)));
	return off + 20 + optlen + len;
}

/* The timestamps option (RFC 7323 §3) after two NOPs: 12 bytes at opt, the count returned. */
static size_t put_ts_opt(uint8_t *opt, uint32_t tsval, uint32_t tsecr)
{
	opt[0] = 1;
	opt[1] = 1;
	opt[2] = 8;
	opt[3] = 10;
	put32(opt + 4, tsval);
	put32(opt + 8, tsecr);
	return 12;
}

/* The SYN's options, in the order given, each padded to 4 bytes with NOPs in front. */
static size_t build_syn(uint8_t *f, const struct peer *p, uint16_t dport)
{
	uint8_t opt[40];
	size_t n = 0;

	if (p->syn_mss >= 0) {
		opt[n++] = 2;
		opt[n++] = 4;
		put16(opt + n, (uint32_t)p->syn_mss);
		n += 2;
	}
	if (p->syn_sack) {
		opt[n++] = 1;
		opt[n++] = 1;
		opt[n++] = 4;
		opt[n++] = 2;
	}
	if (p->ts)
		n += put_ts_opt(opt + n, p->tsval, 0);
	if (p->syn_ws >= 0) {
		opt[n++] = 1;
		opt[n++] = 3;
		opt[n++] = 3;
		opt[n++] = (uint8_t)p->syn_ws;
	}
	return build_tcp(f, p, dport, p->snd_nxt, 0, F_SYN, p->wnd, opt, n, NULL, 0);
}

/* Options of the peer's later segments: timestamps if agreed, its SACK blocks if any. */
static size_t peer_opts(const struct peer *p, uint8_t *opt)
{
	size_t n = 0;

	if (p->ts)
		n += put_ts_opt(opt + n, p->tsval, p->ts_recent);
	if (p->nsack > 0) {
		opt[n++] = 1;
		opt[n++] = 1;
		opt[n++] = 5;
		opt[n++] = (uint8_t)(2 + 8 * p->nsack);
		for (unsigned k = 0; k < p->nsack; k++) {
			put32(opt + n, p->sack[k][0]);
			put32(opt + n + 4, p->sack[k][1]);
			n += 8;
		}
	}
	return n;
}

/* A segment at seq, acknowledging what the peer has received. */
static void peer_tx_at(struct harness *h, struct peer *p, uint32_t seq, unsigned flags,
		       const uint8_t *data, size_t len)
{
	uint8_t f[FMAX], opt[40];
	size_t ol = peer_opts(p, opt);

	h_in(h, f, build_tcp(f, p, OUR_PORT, seq, p->rcv_nxt, flags, p->wnd, opt, ol, data, len));
}

static void peer_tx(struct harness *h, struct peer *p, unsigned flags, const uint8_t *data, size_t len)
{
	peer_tx_at(h, p, p->snd_nxt, flags, data, len);
	p->snd_nxt += (uint32_t)len + ((flags & F_SYN) ? 1 : 0) + ((flags & F_FIN) ? 1 : 0);
}

static void peer_ack(struct harness *h, struct peer *p)
{
	peer_tx(h, p, F_ACK, NULL, 0);
}

/* ---- frames out ------------------------------------------------------------------------- */

struct seg {
	uint8_t dmac[6];
	uint32_t dip;
	uint16_t sport, dport;
	uint32_t seq, ack;
	unsigned flags;
	uint16_t wnd;
	int mss;
	int ws;                 /* window scale option, -1 if absent */
	bool sack_perm;
	bool ts;
	uint32_t tsval, tsecr;
	unsigned nsack;
	uint32_t sack[4][2];
	size_t optlen;
	size_t len;
	uint8_t data[1500];
};

static void parse_seg(const struct frame *fr, struct seg *s)
{
	const uint8_t *ip = fr->d + 14, *tcp = ip + 20;
	size_t tot = get16(ip + 2), hl;

	assert_int_equal(get16(fr->d + 12), 0x0800);
	assert_int_equal(ip[9], 6);
	memset(s, 0, sizeof(*s));
	memcpy(s->dmac, fr->d, 6);
	s->dip = get32(ip + 16);
	s->sport = get16(tcp);
	s->dport = get16(tcp + 2);
	s->seq = get32(tcp + 4);
	s->ack = get32(tcp + 8);
	s->flags = tcp[13];
	s->wnd = get16(tcp + 14);
	s->mss = -1;
	s->ws = -1;
	hl = (size_t)(tcp[12] >> 4) * 4;
	s->optlen = hl - 20;
	for (size_t i = 20; i < hl;) {
		if (tcp[i] == 0)
			break;
		if (tcp[i] == 1) {
			i++;
			continue;
		}
		assert_true(i + 1 < hl && tcp[i + 1] >= 2 && i + tcp[i + 1] <= hl);
		switch (tcp[i]) {
		case 2:
			assert_int_equal(tcp[i + 1], 4);
			s->mss = get16(tcp + i + 2);
			break;
		case 3:
			assert_int_equal(tcp[i + 1], 3);
			s->ws = tcp[i + 2];
			break;
		case 4:
			assert_int_equal(tcp[i + 1], 2);
			s->sack_perm = true;
			break;
		case 5:
			assert_true(tcp[i + 1] >= 10 && (tcp[i + 1] - 2) % 8 == 0);
			s->nsack = (tcp[i + 1] - 2u) / 8;
			for (unsigned k = 0; k < s->nsack; k++) {
				s->sack[k][0] = get32(tcp + i + 2 + 8 * k);
				s->sack[k][1] = get32(tcp + i + 6 + 8 * k);
			}
			break;
		case 8:
			assert_int_equal(tcp[i + 1], 10);
			s->ts = true;
			s->tsval = get32(tcp + i + 2);
			s->tsecr = get32(tcp + i + 6);
			break;
		default:
			fail_msg("unexpected option kind %u", tcp[i]);
		}
		i += tcp[i + 1];
	}
	s->len = tot - 20 - hl;
	assert_true(s->len <= sizeof(s->data));
	memcpy(s->data, tcp + hl, s->len);
}

static bool pop_seg(struct harness *h, struct seg *s)
{
	struct frame fr;

	if (!pop_frame(h, &fr))
		return false;
	parse_seg(&fr, s);
	return true;
}

static void expect_seg(struct harness *h, struct seg *s)
{
	assert_true(pop_seg(h, s));
}

static void expect_nothing(struct harness *h)
{
	assert_int_equal(h->qn, 0);
}

static void peer_note(struct peer *p, const struct seg *s)
{
	p->last_ack = s->ack;
	p->last_wnd = s->wnd;
	p->last_flags = s->flags;
	if (p->ts) {
		/* Every segment of a connection with timestamps carries them, echoing the peer's latest. */
		assert_true(s->ts);
		assert_int_equal(s->tsecr, p->tsval);
		p->ts_recent = s->tsval;
	} else {
		assert_false(s->ts);
	}
}

/* The peer sends len bytes of d at seq and notes the one segment that answers it in s. */
static void peer_tx_at_answered(struct harness *h, struct peer *p, uint32_t seq, unsigned flags, const uint8_t *d,
				size_t len, struct seg *s)
{
	peer_tx_at(h, p, seq, flags, d, len);
	expect_seg(h, s);
	peer_note(p, s);
}

/* Exactly one segment waits, and it carries the len bytes of d from off, at sequence b + off. */
static void expect_only_data(struct harness *h, uint32_t b, const uint8_t *d, size_t off, size_t len)
{
	struct seg s;

	expect_seg(h, &s);
	expect_nothing(h);
	assert_int_equal(s.seq, b + off);
	assert_int_equal(s.len, len);
	assert_memory_equal(s.data, d + off, len);
}

/* The loss-recovery counters so far. */
static void expect_recoveries(struct harness *h, uint64_t fast_retransmits, uint64_t retransmits, uint64_t timeouts)
{
	assert_int_equal(inet_stats(h->t)->fast_retransmits, fast_retransmits);
	assert_int_equal(inet_stats(h->t)->retransmits, retransmits);
	assert_int_equal(inet_stats(h->t)->timeouts, timeouts);
}

/* The peer sends count ACKs of p->rcv_nxt (with the SACK blocks set in p): duplicates after the first. */
static void peer_acks(struct harness *h, struct peer *p, unsigned count)
{
	while (count--)
		peer_ack(h, p);
}

/* The peer acknowledges everything up to end, without SACK blocks: nothing more goes, n bytes are acknowledged. */
static void peer_ack_all(struct harness *h, struct peer *p, const struct app *a, uint32_t end, size_t n)
{
	p->nsack = 0;
	p->rcv_nxt = end;
	peer_ack(h, p);
	expect_nothing(h);
	assert_int_equal(a->acked, n);
}

/* A pure ACK from the stack to p, acknowledging ack with window wnd. */
static void expect_ack(struct harness *h, struct peer *p, uint32_t ack, uint16_t wnd)
{
	struct seg s;

	expect_seg(h, &s);
	assert_int_equal(s.dport, p->port);
	assert_int_equal(s.sport, OUR_PORT);
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.len, 0);
	assert_int_equal(s.ack, ack);
	assert_int_equal(s.wnd, wnd);
	assert_int_equal(s.seq, p->rcv_nxt);
	peer_note(p, &s);
}

/*
 * Takes every frame the stack queued (all must be for p): data must come in
 * order, no segment above max_seg bytes; ACKs each data segment if ack_each.
 * Returns the number of data segments.
 */
static unsigned peer_rx(struct harness *h, struct peer *p, bool ack_each, size_t max_seg)
{
	struct seg s;
	unsigned n = 0;

	while (pop_seg(h, &s)) {
		assert_int_equal(s.dport, p->port);
		assert_int_equal(s.sport, OUR_PORT);
		assert_false(s.flags & (F_RST | F_SYN));
		assert_true(s.flags & F_ACK);
		assert_true(s.len <= max_seg);
		peer_note(p, &s);
		if (s.len == 0 && !(s.flags & F_FIN))
			continue;
		assert_int_equal(s.seq, p->rcv_nxt);
		append(&p->rx, &p->rx_len, &p->rx_cap, s.data, s.len);
		p->rcv_nxt += (uint32_t)s.len;
		if (s.flags & F_FIN) {
			p->rcv_nxt++;
			p->fin_rcvd = true;
		}
		n++;
		if (ack_each)
			peer_ack(h, p);
	}
	return n;
}

/* Three-way handshake; returns the application the stack opened for it. */
static struct app *peer_connect(struct harness *h, struct peer *p)
{
	uint8_t f[FMAX];
	unsigned opens = h->opens;
	struct seg s;

	h_in(h, f, build_syn(f, p, OUR_PORT));
	p->snd_nxt++;
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_SYN | F_ACK);
	assert_int_equal(s.sport, OUR_PORT);
	assert_int_equal(s.dport, p->port);
	assert_int_equal(s.ack, p->snd_nxt);
	assert_int_equal(s.mss, 1460);
	assert_int_equal(s.wnd, 65535);         /* a SYN's window is never scaled */
	assert_int_equal(s.len, 0);
	assert_int_equal(s.dip, p->ip);
	assert_memory_equal(s.dmac, p->mac, 6);
	/* Each option only when offered. */
	assert_int_equal(s.ws >= 0, p->syn_ws >= 0);
	assert_int_equal(s.sack_perm, p->syn_sack);
	assert_int_equal(s.ts, p->ts);
	if (p->ts)
		assert_int_equal(s.tsecr, p->tsval);
	p->ts_recent = s.tsval;
	expect_nothing(h);
	p->rcv_nxt = s.seq + 1;
	peer_ack(h, p);
	assert_int_equal(h->opens, opens + 1);
	p->app = last_app(h);
	expect_nothing(h);
	return p->app;
}

static uint64_t total_drops(const struct inet_stats *st)
{
	return st->drop_bad_eth + st->drop_bad_ip + st->drop_bad_csum + st->drop_fragment +
	       st->drop_ip_options + st->drop_not_mine + st->drop_bad_tcp + st->drop_out_of_order +
	       st->drop_paws;
}

/* ---- ARP, ICMP, frame filter -------------------------------------------------------------- */

static size_t build_arp(uint8_t *f, const uint8_t *dmac, uint16_t oper, const uint8_t *sha, uint32_t spa,
			uint32_t tpa)
{
	memset(f, 0, 60);
	memcpy(f, dmac, 6);
	memcpy(f + 6, sha, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);
	put16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, oper);
	memcpy(f + 22, sha, 6);
	put32(f + 28, spa);
	put32(f + 38, tpa);
	return 60;
}

static void test_arp(void **state)
{
	struct harness *h = *state;
	uint8_t f[64];
	struct frame fr;

	/* A request for our address: a reply to the sender with our MAC. */
	h_in(h, f, build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OUR_IP));
	assert_true(pop_frame(h, &fr));
	expect_nothing(h);
	assert_memory_equal(fr.d, peer_mac, 6);
	assert_int_equal(get16(fr.d + 12), 0x0806);
	assert_int_equal(get16(fr.d + 14), 1);
	assert_int_equal(get16(fr.d + 16), 0x0800);
	assert_int_equal(fr.d[18], 6);
	assert_int_equal(fr.d[19], 4);
	assert_int_equal(get16(fr.d + 20), 2);
	assert_memory_equal(fr.d + 22, our_mac, 6);
	assert_int_equal(get32(fr.d + 28), OUR_IP);
	assert_memory_equal(fr.d + 32, peer_mac, 6);
	assert_int_equal(get32(fr.d + 38), PEER_IP);
	assert_int_equal(inet_stats(h->t)->arp_replies, 1);

	/* For another address, a reply, a gratuitous announcement: no answer. */
	h_in(h, f, build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OTHER_IP));
	h_in(h, f, build_arp(f, our_mac, 2, peer_mac, PEER_IP, OUR_IP));
	h_in(h, f, build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, PEER_IP));
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->arp_replies, 1);
	assert_int_equal(total_drops(inet_stats(h->t)), 0);

	/* Malformed: wrong hardware type, truncated. */
	build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OUR_IP);
	put16(f + 14, 6);
	h_in(h, f, 60);
	build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OUR_IP);
	h_in(h, f, 41);
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->drop_bad_eth, 2);
}

/* A gratuitous ARP moves a peer: its connection's frames follow the new MAC. */
static void test_arp_learn_moves_peer(void **state)
{
	struct harness *h = *state;
	static const uint8_t moved[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
	struct peer p;
	struct app *a;
	uint8_t f[64];
	struct seg s;

	peer_init(&p, 41000, 1);
	a = peer_connect(h, &p);
	h_in(h, f, build_arp(f, bcast_mac, 1, moved, PEER_IP, PEER_IP));
	expect_nothing(h);
	app_queue(a, (const uint8_t *)"x", 1);
	h_poll(h);
	expect_seg(h, &s);
	assert_memory_equal(s.dmac, moved, 6);
	peer_free(&p);
}

static size_t build_icmp(uint8_t *f, uint8_t type, uint16_t id, uint16_t seq, const uint8_t *data, size_t len)
{
	size_t off = build_ip(f, peer_mac, PEER_IP, OUR_IP, 1, 8 + len);
	uint8_t *ic = f + off;

	ic[0] = type;
	ic[1] = 0;
	put16(ic + 2, 0);
	put16(ic + 4, id);
	put16(ic + 6, seq);
	memcpy(ic + 8, data, len);
	put16(ic + 2, fold(sum16(0, ic, 8 + len)));
	return off + 8 + len;
}

static void test_icmp_echo(void **state)
{
	struct harness *h = *state;
	uint8_t *payload = pattern(1600, 7);
	uint8_t f[FMAX];
	struct frame fr;
	size_t n;

	h_in(h, f, build_icmp(f, 8, 0x1234, 0x0042, payload, 56));
	assert_true(pop_frame(h, &fr));
	expect_nothing(h);
	assert_memory_equal(fr.d, peer_mac, 6);
	assert_int_equal(get16(fr.d + 12), 0x0800);
	assert_int_equal(fr.d[14 + 9], 1);
	assert_int_equal(get32(fr.d + 14 + 16), PEER_IP);
	assert_int_equal(get16(fr.d + 16), 20 + 8 + 56);
	assert_int_equal(fr.d[34], 0);
	assert_int_equal(fr.d[35], 0);
	assert_int_equal(get16(fr.d + 38), 0x1234);
	assert_int_equal(get16(fr.d + 40), 0x0042);
	assert_memory_equal(fr.d + 42, payload, 56);
	assert_int_equal(fold(sum16(0, fr.d + 34, 8 + 56)), 0);
	assert_int_equal(inet_stats(h->t)->icmp_echo_replies, 1);

	/* An empty echo, then one too big for a frame: its reply is cut to 1514 bytes. */
	h_in(h, f, build_icmp(f, 8, 1, 2, payload, 0));
	assert_true(pop_frame(h, &fr));
	assert_int_equal(get16(fr.d + 16), 28);
	n = build_icmp(f, 8, 7, 9, payload, 1600);
	assert_true(n > 1514);
	h_in(h, f, n);
	assert_true(pop_frame(h, &fr));
	assert_int_equal(fr.len, 1514);
	assert_int_equal(get16(fr.d + 16), 1500);
	assert_memory_equal(fr.d + 42, payload, 1472);
	assert_int_equal(get16(fr.d + 38), 7);

	/* Bad checksum, echo reply, truncated header: dropped. */
	n = build_icmp(f, 8, 1, 2, payload, 20);
	f[42] ^= 1;
	h_in(h, f, n);
	h_in(h, f, build_icmp(f, 0, 1, 2, payload, 20));
	n = build_icmp(f, 8, 1, 2, payload, 0);
	put16(f + 16, 24);
	fix_ip_csum(f);
	h_in(h, f, n);
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->icmp_echo_replies, 3);
	assert_int_equal(inet_stats(h->t)->drop_bad_csum, 1);
	assert_int_equal(inet_stats(h->t)->drop_not_mine, 1);
	assert_int_equal(inet_stats(h->t)->drop_bad_ip, 1);
	free(payload);
}

static void test_wants_frame(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;

	peer_init(&p, 1234, 1);
	assert_true(inet_wants_frame(h->t, f, build_syn(f, &p, OUR_PORT)));
	f[5] ^= 1;
	assert_false(inet_wants_frame(h->t, f, 60));
	assert_true(inet_wants_frame(h->t, f, build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OUR_IP)));
	assert_false(inet_wants_frame(h->t, f, build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OTHER_IP)));
	assert_false(inet_wants_frame(h->t, f, build_arp(f, bcast_mac, 2, peer_mac, PEER_IP, OUR_IP)));
	assert_false(inet_wants_frame(h->t, f, 41));
	build_icmp(f, 8, 1, 1, f, 0);
	memcpy(f, bcast_mac, 6);
	assert_false(inet_wants_frame(h->t, f, 60));
	assert_false(inet_wants_frame(h->t, f, 13));
	assert_false(inet_wants_frame(h->t, f, 0));
}

/* ---- TCP: handshake and segmentation -------------------------------------------------------- */

static void test_handshake(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;

	peer_init(&p, 40000, 0x12345678);
	a = peer_connect(h, &p);
	assert_non_null(a);
	assert_int_equal(inet_active_conns(h->t), 1);
	assert_int_equal(inet_stats(h->t)->conns_accepted, 1);
	/* The application's close is owed once, from inet_free (teardown checks). */
	assert_int_equal(a->close_calls, 0);
	peer_free(&p);
}

/* Initial sequence numbers differ between connections, from getrandom() or, failing that, the fallback. */
static void test_iss(void **state)
{
	struct harness *h = *state;
	struct peer p[4];
	uint32_t iss[4];

	for (unsigned i = 0; i < 4; i++) {
		entropy_fails = i >= 2;
		peer_init(&p[i], (uint16_t)(40010 + i), 1);
		peer_connect(h, &p[i]);
		iss[i] = p[i].rcv_nxt - 1;
		for (unsigned j = 0; j < i; j++)
			assert_int_not_equal(iss[i], iss[j]);
		peer_tx(h, &p[i], F_ACK, (const uint8_t *)"ok", 2);
		expect_ack(h, &p[i], p[i].snd_nxt, 65535);
		peer_free(&p[i]);
	}
	assert_int_equal(inet_active_conns(h->t), 4);
}

/* The SYN-ACK is retransmitted on the timer, and for a retransmitted SYN. */
static void test_synack_retransmit(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;
	struct seg s1, s2, s3;

	peer_init(&p, 40001, 5000);
	h_in(h, f, build_syn(f, &p, OUR_PORT));
	expect_seg(h, &s1);
	h->now += INET_TCP_RTO_MS - 1;
	h_poll(h);
	expect_nothing(h);
	h->now += 1;
	h_poll(h);
	expect_seg(h, &s2);
	assert_int_equal(s2.flags, F_SYN | F_ACK);
	assert_int_equal(s2.seq, s1.seq);
	assert_int_equal(s2.ack, 5001);
	h_in(h, f, build_syn(f, &p, OUR_PORT));
	expect_seg(h, &s3);
	assert_int_equal(s3.seq, s1.seq);
	assert_int_equal(inet_stats(h->t)->retransmits, 2);
	p.snd_nxt++;
	p.rcv_nxt = s1.seq + 1;
	peer_ack(h, &p);
	assert_int_equal(h->opens, 1);
	assert_int_equal(inet_active_conns(h->t), 1);
	expect_nothing(h);
	peer_free(&p);
}

/* n bytes queued by the application leave in segments of exactly mss (the last shorter, with PSH). */
static void check_segmentation(struct harness *h, uint16_t port, int syn_mss, size_t mss)
{
	const size_t n = 5000;
	uint8_t *d = pattern(n, port);
	struct peer p;
	struct app *a;
	struct seg s;
	size_t got = 0;

	peer_init(&p, port, 77u * port);
	p.syn_mss = syn_mss;
	a = peer_connect(h, &p);
	app_queue(a, d, n);
	h_poll(h);
	while (pop_seg(h, &s)) {
		size_t want = n - got < mss ? n - got : mss;

		assert_int_equal(s.dport, port);
		assert_int_equal(s.seq, p.rcv_nxt + got);
		assert_int_equal(s.len, want);
		assert_memory_equal(s.data, d + got, s.len);
		got += s.len;
		assert_int_equal(s.flags, got == n ? (F_ACK | F_PSH) : F_ACK);
	}
	assert_int_equal(got, n);
	p.rcv_nxt += (uint32_t)n;
	peer_ack(h, &p);
	assert_int_equal(a->acked, n);
	expect_nothing(h);
	free(d);
	peer_free(&p);
}

static void test_segmentation_mss(void **state)
{
	struct harness *h = *state;

	check_segmentation(h, 40101, 1460, 1460);
	check_segmentation(h, 40102, 536, 536);
	check_segmentation(h, 40103, 100, 536);     /* clamped up */
	check_segmentation(h, 40104, -1, 536);      /* no option: the RFC 879 default */
	check_segmentation(h, 40105, 9000, 1460);   /* clamped down to ours */
	check_segmentation(h, 40106, 1000, 1000);
}

/* 1 MiB to the peer, checked byte for byte, through peek/acked. */
static void test_bulk_send_1mib(void **state)
{
	struct harness *h = *state;
	const size_t n = 1u << 20;
	uint8_t *d = pattern(n, 11);
	struct peer p;
	struct app *a;
	unsigned segs;

	peer_init(&p, 40200, 0xfffff000u);
	a = peer_connect(h, &p);
	app_queue(a, d, n);
	h_poll(h);
	segs = peer_rx(h, &p, true, 1460);
	assert_int_equal(p.rx_len, n);
	assert_memory_equal(p.rx, d, n);
	assert_int_equal(a->acked, n);
	assert_true(segs >= (n + 1459) / 1460);
	assert_true(p.last_flags & F_PSH);
	assert_int_equal(inet_stats(h->t)->bytes_out, n);
	assert_int_equal(inet_stats(h->t)->retransmits, 0);
	h->now += 1000;
	h_poll(h);
	expect_nothing(h);
	free(d);
	peer_free(&p);
}

/*
 * A small peer window, short peeks: bursts of at most the window beyond what
 * the peer acknowledged, in full segments gathered from several peeks, PSH on
 * the last segment of each burst.
 */
static void test_peer_window_limits_flight(void **state)
{
	struct harness *h = *state;
	const size_t n = 20000;
	uint8_t *d = pattern(n, 13);
	struct peer p;
	struct app *a;
	struct seg s;
	uint32_t base;
	size_t acked = 0, got = 0;
	unsigned bursts = 0;

	peer_init(&p, 40210, 555);
	p.wnd = 3000;
	a = peer_connect(h, &p);
	a->peek_chunk = 700;
	base = p.rcv_nxt;
	app_queue(a, d, n);
	h_poll(h);
	while (got < n) {
		unsigned in_burst = 0;

		while (pop_seg(h, &s)) {
			size_t room = 3000 - (got - acked), want = n - got;

			want = want < room ? want : room;
			assert_int_equal(s.seq, base + got);
			assert_int_equal(s.len, want < 1460 ? want : 1460);
			assert_memory_equal(s.data, d + got, s.len);
			got += s.len;
			assert_true(got - acked <= 3000);
			assert_int_equal(s.flags & F_PSH, h->qn == 0 ? F_PSH : 0);
			in_burst++;
		}
		assert_true(in_burst > 0);
		assert_int_equal(got - acked, n - acked < 3000 ? n - acked : 3000);
		bursts++;
		p.rcv_nxt = base + (uint32_t)got;
		acked = got;
		peer_ack(h, &p);
	}
	assert_int_equal(a->acked, n);
	assert_true(bursts >= n / 3000);
	expect_nothing(h);
	free(d);
	peer_free(&p);
}

/* ---- TCP: receiving ---------------------------------------------------------------------- */

/*
 * A slow reader: the window closes, data beyond it is refused, the
 * application drains, window updates follow, the transfer resumes; nothing
 * is lost. The peer's sequence numbers wrap on the way.
 */
static void test_slow_reader(void **state)
{
	struct harness *h = *state;
	const size_t n = 200000;
	uint8_t *d = pattern(n, 5);
	struct peer p;
	struct app *a;
	uint32_t base;
	uint16_t wnd = 65535;

	peer_init(&p, 40300, 0xffff8000u);
	h->budget = 0;
	a = peer_connect(h, &p);
	base = p.snd_nxt;
	while (wnd > 0) {
		size_t off = p.snd_nxt - base, exp = off + 1460 < 65535 ? off + 1460 : 65535;

		/* Full segments even into a window smaller than one: the excess is cut off. */
		peer_tx(h, &p, F_ACK, d + off, 1460);
		expect_ack(h, &p, base + (uint32_t)exp, (uint16_t)(65535 - exp));
		wnd = p.last_wnd;
		p.snd_nxt = p.last_ack;
	}
	assert_int_equal(p.snd_nxt - base, 65535);
	assert_int_equal(a->rx_len, 0);
	assert_int_equal(inet_stats(h->t)->bytes_in, 65535);

	/* Beyond the closed window: not taken. */
	peer_tx(h, &p, F_ACK, d + 65535, 1000);
	expect_ack(h, &p, base + 65535, 0);
	p.snd_nxt = base + 65535;
	assert_int_equal(inet_stats(h->t)->bytes_in, 65535);
	h_poll(h);
	expect_nothing(h);

	/* 500 bytes taken: less than an MSS opened, no update yet. */
	a->budget = 500;
	h_poll(h);
	expect_nothing(h);
	assert_int_equal(a->rx_len, 500);
	/* The peer does not know: what it sends is still beyond the window it was told of. */
	peer_tx(h, &p, F_ACK, d + 65535, 300);
	expect_ack(h, &p, base + 65535, 500);
	p.snd_nxt = base + 65535;
	assert_int_equal(inet_stats(h->t)->bytes_in, 65535);
	/* 1500 more: 2000 open, 1500 more than advertised, an update. */
	a->budget = 1500;
	h_poll(h);
	expect_ack(h, &p, base + 65535, 2000);
	/* Everything: the window is whole again. */
	a->budget = SIZE_MAX;
	h_poll(h);
	expect_ack(h, &p, base + 65535, 65535);
	expect_nothing(h);
	assert_int_equal(a->rx_len, 65535);

	/* The transfer resumes and completes. */
	while (p.snd_nxt - base < n) {
		size_t off = p.snd_nxt - base, len = n - off < 1460 ? n - off : 1460;

		peer_tx(h, &p, F_ACK, d + off, len);
		expect_ack(h, &p, base + (uint32_t)(off + len), 65535);
	}
	assert_int_equal(a->rx_len, n);
	assert_memory_equal(a->rx, d, n);
	assert_int_equal(inet_stats(h->t)->bytes_in, n);
	free(d);
	peer_free(&p);
}

static void test_out_of_order_dropped(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(300, 17);
	struct peer p;
	struct app *a;
	uint32_t base;

	peer_init(&p, 40310, 0x7ffffff0u);
	a = peer_connect(h, &p);
	base = p.snd_nxt;
	/* Bytes 100..199 before 0..99: dropped, the ACK asks for byte 0. */
	peer_tx_at(h, &p, base + 100, F_ACK, d + 100, 100);
	expect_ack(h, &p, base, 65535);
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->drop_out_of_order, 1);
	assert_int_equal(a->rx_len, 0);
	/* In order, they are taken. */
	peer_tx(h, &p, F_ACK, d, 100);
	expect_ack(h, &p, base + 100, 65535);
	peer_tx(h, &p, F_ACK, d + 100, 100);
	expect_ack(h, &p, base + 200, 65535);
	assert_int_equal(a->rx_len, 200);
	assert_memory_equal(a->rx, d, 200);
	free(d);
	peer_free(&p);
}

/* Old bytes again: re-acknowledged, never delivered twice. The sequence numbers wrap in the middle. */
static void test_duplicate_and_overlap(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(300, 19);
	struct peer p;
	struct app *a;
	uint32_t base;

	peer_init(&p, 40320, 0xffffffbfu);
	a = peer_connect(h, &p);
	base = p.snd_nxt;
	peer_tx(h, &p, F_ACK, d, 100);
	expect_ack(h, &p, base + 100, 65535);
	/* The same segment again: acknowledged again, not delivered again. */
	peer_tx_at(h, &p, base, F_ACK, d, 100);
	expect_ack(h, &p, base + 100, 65535);
	expect_nothing(h);
	assert_int_equal(a->rx_len, 100);
	assert_int_equal(inet_stats(h->t)->drop_out_of_order, 1);
	/* Overlapping the front: only the new part is delivered. */
	peer_tx_at(h, &p, base + 50, F_ACK, d + 50, 150);
	expect_ack(h, &p, base + 200, 65535);
	assert_int_equal(a->rx_len, 200);
	assert_memory_equal(a->rx, d, 200);
	assert_int_equal(inet_stats(h->t)->bytes_in, 200);
	free(d);
	peer_free(&p);
}

/*
 * The ACK of in-order data waits for the end of the owner's batch when the
 * owner agrees (ops.defer_acks): an answer sent meanwhile carries it, and no
 * pure ACK goes; with no answer, inet_flush_acks() sends one for everything
 * taken. A gap, opened or filled, is reported at once all the same.
 */
static void test_deferred_acks(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(700, 23);
	struct peer p;
	struct app *a;
	struct seg s;
	uint32_t base;
	unsigned calls;

	peer_init(&p, 40330, 0x7fffff00u);
	p.syn_sack = true;
	a = peer_connect(h, &p);
	base = p.snd_nxt;
	/* Refused: the ACK goes at once, as it always did. */
	peer_tx(h, &p, F_ACK, d, 100);
	expect_ack(h, &p, base + 100, 65535);
	assert_true(h->defer_calls >= 1);
	calls = h->defer_calls;
	/* Granted: two segments taken, nothing sent until the flush, then one ACK of both. */
	h->defer = true;
	peer_tx(h, &p, F_ACK, d + 100, 100);
	peer_tx(h, &p, F_ACK, d + 200, 100);
	expect_nothing(h);
	assert_int_equal(h->defer_calls, calls + 1);    /* asked once per batch */
	inet_flush_acks(h->t);
	expect_ack(h, &p, base + 300, 65535);
	expect_nothing(h);
	inet_flush_acks(h->t);                  /* not granted again: nothing more */
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->acks_deferred_alone, 1);
	/* An answer made before the flush leaves at the flush (output waits for the batch's end too) and carries the ACK. */
	a->echo = true;
	peer_tx(h, &p, F_ACK, d + 300, 100);
	expect_nothing(h);
	inet_flush_acks(h->t);
	expect_seg(h, &s);
	assert_int_equal(s.flags & F_ACK, F_ACK);
	assert_int_equal(s.ack, base + 400);
	assert_int_equal(s.len, 100);
	assert_memory_equal(s.data, d + 300, 100);
	expect_nothing(h);
	a->echo = false;
	p.rcv_nxt = s.seq + 100;
	peer_ack(h, &p);
	expect_nothing(h);
	/* A gap is reported at once, and so is the segment that fills it. */
	peer_tx_at_answered(h, &p, base + 500, F_ACK, d + 500, 100, &s);
	assert_int_equal(s.ack, base + 400);
	assert_int_equal(s.nsack, 1);
	peer_tx_at_answered(h, &p, base + 400, F_ACK, d + 400, 100, &s);
	assert_int_equal(s.ack, base + 600);
	assert_int_equal(s.nsack, 0);
	expect_nothing(h);
	assert_int_equal(a->rx_len, 600);
	assert_memory_equal(a->rx, d, 600);
	inet_flush_acks(h->t);
	assert_int_equal(inet_stats(h->t)->acks_deferred_alone, 1);
	free(d);
	peer_free(&p);
}

/*
 * Every data segment waiting, in order from base + *got, each carrying the application's bytes
 * of d at its place and none empty (no pure ACK among them); *got grows by what they carry.
 * Returns how many there were.
 */
static unsigned take_data(struct harness *h, uint32_t base, const uint8_t *d, size_t *got)
{
	struct seg s;
	unsigned n = 0;

	while (pop_seg(h, &s)) {
		assert_int_equal(s.seq, base + *got);
		assert_true(s.len > 0);
		assert_memory_equal(s.data, d + *got, s.len);
		*got += s.len;
		n++;
	}
	return n;
}

/*
 * Output waits for the end of the batch like the ACK: ACKs read one after another in a batch
 * release nothing until the flush, and then the whole window they opened in one run, in order,
 * every byte the application's.
 */
static void test_output_waits_for_batch(void **state)
{
	struct harness *h = *state;
	const size_t n = 60000;
	uint8_t *d = pattern(n, 29);
	struct peer p;
	struct app *a;
	uint32_t base;
	size_t got = 0, first;

	peer_init(&p, 40335, 0x10000u);
	p.wnd = 20000;                              /* the peer's window binds: each ACK opens what it acknowledges */
	a = peer_connect(h, &p);
	base = p.rcv_nxt;
	app_queue(a, d, n);
	h_poll(h);
	take_data(h, base, d, &got);
	first = got;
	assert_int_equal(first, 20000);             /* the window, not all of it */
	/* Three ACKs in one batch, each of a third of what went: nothing leaves before the flush. */
	h->defer = true;
	for (unsigned i = 1; i <= 3; i++) {
		p.rcv_nxt = base + (uint32_t)(first * i / 3);
		peer_ack(h, &p);
		expect_nothing(h);
	}
	assert_int_equal(a->acked, first);
	inet_flush_acks(h->t);
	/* The window the three ACKs opened went at the flush, all of it, data only. */
	assert_true(take_data(h, base, d, &got) > 0);
	assert_int_equal(got, 2 * first);
	inet_flush_acks(h->t);                      /* not granted again: nothing more */
	expect_nothing(h);
	h->defer = false;
	p.rcv_nxt = base + (uint32_t)got;
	peer_ack(h, &p);
	assert_true(take_data(h, base, d, &got) > 0);  /* refused: the next at once */
	assert_true(got > 2 * first);
	free(d);
	peer_free(&p);
}

/*
 * Slow start with output at the batch's end: each ACK of a batch grows the window by what it
 * acknowledges, not only the first (the output that would say the window still binds comes
 * after them all). Ten ACKs of the initial window's ten segments in one batch: twenty go.
 */
static void test_slow_start_over_a_batch(void **state)
{
	struct harness *h = *state;
	const size_t n = 200000;
	uint8_t *d = pattern(n, 31);
	struct peer p;
	struct app *a;
	uint32_t base;
	size_t got = 0, first;

	peer_init(&p, 40336, 0x20000u);
	p.syn_sack = true;                          /* congestion control on */
	a = peer_connect(h, &p);
	base = p.rcv_nxt;
	app_queue(a, d, n);
	h_poll(h);
	take_data(h, base, d, &got);
	first = got;
	assert_int_equal(first, 10 * 1460);         /* the initial window (RFC 6928) */
	h->defer = true;
	for (unsigned i = 1; i <= 10; i++) {
		p.rcv_nxt = base + (uint32_t)(i * 1460);
		peer_ack(h, &p);
	}
	expect_nothing(h);
	inet_flush_acks(h->t);
	take_data(h, base, d, &got);
	assert_int_equal(got - first, 2 * first);   /* the window doubled in the round trip */
	assert_int_equal(a->acked, first);
	free(d);
	peer_free(&p);
}

/* ---- TCP: retransmission ------------------------------------------------------------------- */

/*
 * A peer whose SYN offers no option but MSS gets the specification's stack:
 * the whole 64 KiB window in the first flight and in every flight after it
 * (no congestion window; with any option the first flight would be ten
 * segments), in segments of the peer's MSS with the last one filling the window.
 */
static void test_plain_peer_whole_window(void **state)
{
	struct harness *h = *state;
	const size_t n = 3 * 65535 + 1000;
	uint8_t *d = pattern(n, 29);
	struct peer p;
	struct app *a;
	size_t got = 0;

	peer_init(&p, 40390, 4000);
	a = peer_connect(h, &p);
	app_queue(a, d, n);
	h_poll(h);
	for (unsigned round = 0; got < n; round++) {
		unsigned segs = peer_rx(h, &p, false, 1460);
		size_t flight = p.rx_len - got, want = n - got < 65535 ? n - got : 65535;

		assert_int_equal(flight, want);
		if (round == 0)
			assert_int_equal(segs, 45); /* 44 x 1460 + 1295 */
		got = p.rx_len;
		peer_ack(h, &p);
	}
	expect_nothing(h);
	assert_memory_equal(p.rx, d, n);
	assert_int_equal(a->acked, n);
	assert_int_equal(inet_stats(h->t)->retransmits, 0);
	free(d);
	peer_free(&p);
}

static void test_retransmit_lost_segment(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(3 * 1460, 23);
	struct peer p;
	struct app *a;
	struct seg s1, s2, s3, r;

	peer_init(&p, 40400, 100);
	a = peer_connect(h, &p);
	app_queue(a, d, 3 * 1460);
	h_poll(h);
	expect_seg(h, &s1);
	expect_seg(h, &s2);
	expect_seg(h, &s3);
	expect_nothing(h);
	assert_int_equal(s2.seq, s1.seq + 1460);
	assert_int_equal(s3.seq, s2.seq + 1460);

	/*
	 * The peer takes the first, loses the second, drops the third (out of
	 * order) and says so, then says it three times more: a peer without
	 * options gets no fast retransmit, only the timer resends.
	 */
	p.rcv_nxt += 1460;
	peer_ack(h, &p);
	peer_ack(h, &p);
	peer_acks(h, &p, 3);
	expect_nothing(h);
	assert_int_equal(a->acked, 1460);
	assert_int_equal(inet_stats(h->t)->fast_retransmits, 0);

	/* The timer goes back to the lost one and sends the window again from there (go-back-N). */
	h->now += INET_TCP_RTO_MS - 1;
	h_poll(h);
	expect_nothing(h);
	h->now += 1;
	h_poll(h);
	expect_seg(h, &r);
	assert_int_equal(r.seq, s2.seq);
	assert_int_equal(r.len, 1460);
	assert_memory_equal(r.data, s2.data, 1460);
	expect_seg(h, &r);
	expect_nothing(h);
	assert_int_equal(r.seq, s3.seq);
	assert_int_equal(r.len, 1460);
	assert_memory_equal(r.data, s3.data, 1460);

	/* Meanwhile the peer sends: the pure ACK carries the highest seq sent, not the rewound one. */
	peer_tx(h, &p, F_ACK, (const uint8_t *)"zz", 2);
	expect_seg(h, &r);
	expect_nothing(h);
	assert_int_equal(r.flags, F_ACK);
	assert_int_equal(r.len, 0);
	assert_int_equal(r.seq, s3.seq + 1460);
	assert_int_equal(r.ack, p.snd_nxt);
	assert_int_equal(a->rx_len, 2);

	/* Both arrive now. */
	p.rcv_nxt += 2 * 1460;
	peer_ack(h, &p);
	expect_nothing(h);
	assert_int_equal(a->acked, 3 * 1460);
	assert_int_equal(inet_stats(h->t)->bytes_out, 3 * 1460);
	/* Nothing outstanding: the timer is off. */
	h->now += 30000;
	h_poll(h);
	expect_nothing(h);
	free(d);
	peer_free(&p);
}

/* A peer that never answers: the RTO backs off, then the connection is reset. */
static void test_retransmit_gives_up(void **state)
{
	struct harness *h = *state;
	static const unsigned gaps[] = { 200, 400, 800, 1600, 3200, 3200 };
	uint8_t *d = pattern(100, 29);
	struct peer p;
	struct app *a;
	struct seg s, r;
	uint64_t last;
	unsigned rtx = 0;
	bool reset = false;

	peer_init(&p, 40410, 100);
	a = peer_connect(h, &p);
	app_queue(a, d, 100);
	h_poll(h);
	expect_seg(h, &s);
	last = h->now;
	for (unsigned i = 0; i < 10000 && !reset; i++) {
		h->now += 50;
		h_poll(h);
		while (pop_seg(h, &r)) {
			if (r.flags & F_RST) {
				assert_int_equal(r.seq, s.seq + 100);
				reset = true;
				continue;
			}
			assert_int_equal(r.seq, s.seq);
			assert_int_equal(r.len, 100);
			if (rtx < sizeof(gaps) / sizeof(gaps[0]))
				assert_int_equal(h->now - last, gaps[rtx]);
			last = h->now;
			rtx++;
		}
	}
	assert_true(reset);
	assert_int_equal(rtx, INET_TCP_MAX_RETRIES);
	assert_int_equal(a->close_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 0);
	assert_int_equal(inet_stats(h->t)->resets_sent, 1);
	free(d);
	peer_free(&p);
}

/* A zero window: probes of one byte on the timer, for as long as the peer answers; then the rest. */
static void test_zero_window_persist(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(3000, 31);
	struct peer p;
	struct app *a;
	struct seg s;

	peer_init(&p, 40420, 9);
	p.wnd = 0;
	a = peer_connect(h, &p);
	app_queue(a, d, 3000);
	h_poll(h);
	expect_nothing(h);
	for (unsigned i = 0; i < 3 * INET_TCP_MAX_RETRIES; i++) {
		h->now += 10000;
		h_poll(h);
		expect_seg(h, &s);
		expect_nothing(h);
		assert_int_equal(s.seq, p.rcv_nxt);
		assert_int_equal(s.len, 1);
		assert_int_equal(s.data[0], d[0]);
		peer_ack(h, &p);                 /* still closed: the byte is not taken */
		expect_nothing(h);
	}
	assert_int_equal(inet_active_conns(h->t), 1);
	assert_int_equal(a->acked, 0);
	p.wnd = 65535;
	peer_ack(h, &p);
	peer_rx(h, &p, true, 1460);
	assert_int_equal(p.rx_len, 3000);
	assert_memory_equal(p.rx, d, 3000);
	assert_int_equal(a->acked, 3000);
	free(d);
	peer_free(&p);
}

/* An idle connection is probed; a peer that answers stays, one that never does is reset. */
static void test_keepalive(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;
	struct seg s;
	unsigned probes = 0;
	bool reset = false;

	peer_init(&p, 40430, 3);
	a = peer_connect(h, &p);
	h->now += 50000;
	h_poll(h);
	expect_nothing(h);
	h->now += 10000;
	h_poll(h);
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.len, 0);
	assert_int_equal(s.seq, p.rcv_nxt - 1);     /* old: the peer must answer */
	assert_int_equal(s.ack, p.snd_nxt);
	peer_ack(h, &p);
	expect_nothing(h);
	h->now += 59000;
	h_poll(h);
	expect_nothing(h);
	/* Silence from now on. */
	for (unsigned i = 0; i < 1000 && !reset; i++) {
		h->now += 1000;
		h_poll(h);
		while (pop_seg(h, &s)) {
			if (s.flags & F_RST) {
				reset = true;
				continue;
			}
			assert_int_equal(s.seq, p.rcv_nxt - 1);
			probes++;
		}
	}
	assert_true(reset);
	assert_true(probes >= 3);
	assert_int_equal(a->close_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 0);
	peer_free(&p);
}

/* ---- TCP: closing ----------------------------------------------------------------------------- */

static void test_peer_closes_first(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;
	struct seg s;

	peer_init(&p, 40500, 4242);
	a = peer_connect(h, &p);
	peer_tx(h, &p, F_ACK | F_FIN, (const uint8_t *)"bye", 3);
	expect_ack(h, &p, p.snd_nxt, 65535);
	assert_int_equal(a->rx_len, 3);
	assert_memory_equal(a->rx, "bye", 3);
	assert_int_equal(a->eof_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 1);

	/* CLOSE_WAIT: we still send. */
	app_queue(a, (const uint8_t *)"later", 5);
	h_poll(h);
	peer_rx(h, &p, true, 1460);
	assert_int_equal(p.rx_len, 5);
	assert_int_equal(a->acked, 5);

	/* Our FIN, its ACK: gone. */
	a->want_close = true;
	h_poll(h);
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_FIN | F_ACK);
	assert_int_equal(s.seq, p.rcv_nxt);
	assert_int_equal(s.ack, p.snd_nxt);
	assert_int_equal(a->close_calls, 0);
	p.rcv_nxt++;
	peer_ack(h, &p);
	expect_nothing(h);
	assert_int_equal(a->close_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 0);

	/* The connection is forgotten: another ACK gets an RST. */
	peer_ack(h, &p);
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_RST);
	assert_int_equal(s.seq, p.rcv_nxt);
	peer_free(&p);
}

/* The peer's FIN behind bytes the application has not taken: the EOF waits for them. */
static void test_fin_after_buffered_data(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;

	peer_init(&p, 40510, 1);
	h->budget = 0;
	a = peer_connect(h, &p);
	peer_tx(h, &p, F_ACK | F_FIN, (const uint8_t *)"hello", 5);
	expect_ack(h, &p, p.snd_nxt, 65530);
	assert_int_equal(a->eof_calls, 0);
	a->budget = 2;
	h_poll(h);
	assert_int_equal(a->rx_len, 2);
	assert_int_equal(a->eof_calls, 0);
	a->budget = SIZE_MAX;
	h_poll(h);
	assert_int_equal(a->rx_len, 5);
	assert_memory_equal(a->rx, "hello", 5);
	assert_int_equal(a->eof_calls, 1);
	peer_free(&p);
}

static void test_we_close_first_time_wait_reuse(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(1000, 37);
	struct peer p;
	struct app *a, *b;
	struct seg s, s2;

	peer_init(&p, 40600, 1000);
	a = peer_connect(h, &p);
	app_queue(a, d, 1000);
	a->want_close = true;
	h_poll(h);
	/* The data; the FIN waits until it is acknowledged. */
	expect_seg(h, &s);
	expect_nothing(h);
	assert_int_equal(s.len, 1000);
	assert_memory_equal(s.data, d, 1000);
	assert_false(s.flags & F_FIN);
	p.rcv_nxt += 1000;
	peer_ack(h, &p);
	expect_seg(h, &s);
	expect_nothing(h);
	assert_int_equal(s.flags, F_FIN | F_ACK);
	assert_int_equal(s.seq, p.rcv_nxt);
	/* Lost: sent again on the timer. */
	h->now += INET_TCP_RTO_MS;
	h_poll(h);
	expect_seg(h, &s2);
	assert_int_equal(s2.flags, F_FIN | F_ACK);
	assert_int_equal(s2.seq, s.seq);
	/* Acknowledged: FIN_WAIT_2, the application still open. */
	p.rcv_nxt++;
	peer_ack(h, &p);
	expect_nothing(h);
	assert_int_equal(a->close_calls, 0);
	assert_int_equal(inet_active_conns(h->t), 1);
	/* The peer's FIN: ACK, TIME_WAIT, the application closed. */
	peer_tx(h, &p, F_ACK | F_FIN, NULL, 0);
	expect_ack(h, &p, p.snd_nxt, 65535);
	assert_int_equal(a->eof_calls, 1);
	assert_int_equal(a->close_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 0);
	/* Its FIN again: acknowledged again. Other segments: silence. */
	peer_tx_at(h, &p, p.snd_nxt - 1, F_ACK | F_FIN, NULL, 0);
	expect_ack(h, &p, p.snd_nxt, 65535);
	peer_ack(h, &p);
	expect_nothing(h);

	/* A new SYN from the same port: a new connection at once, and it works. */
	p.snd_nxt += 1000000;
	h->echo = true;
	b = peer_connect(h, &p);
	assert_ptr_not_equal(a, b);
	assert_int_equal(inet_active_conns(h->t), 1);
	peer_tx(h, &p, F_ACK, (const uint8_t *)"again", 5);
	peer_rx(h, &p, true, 1460);
	assert_int_equal(p.rx_len, 5);
	assert_memory_equal(p.rx, "again", 5);
	assert_int_equal(b->acked, 5);
	free(d);
	peer_free(&p);
}

/* Our close, the peer's: TIME_WAIT. */
static void close_to_time_wait(struct harness *h, struct peer *p, struct app *a)
{
	struct seg s;

	a->want_close = true;
	h_poll(h);
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_FIN | F_ACK);
	p->rcv_nxt++;
	peer_tx(h, p, F_ACK | F_FIN, NULL, 0);
	expect_ack(h, p, p->snd_nxt, 65535);
	assert_int_equal(a->close_calls, 1);
}

/* TIME_WAIT holds no live slot: many in a row, each new connection still gets in (the oldest is recycled). */
static void test_time_wait_slots_recycled(void **state)
{
	struct harness *h = *state;
	struct peer p;

	for (unsigned i = 0; i < 5 * INET_TCP_MAX_CONNS; i++) {
		peer_init(&p, (uint16_t)(43000 + i), 1);
		close_to_time_wait(h, &p, peer_connect(h, &p));
		assert_int_equal(inet_active_conns(h->t), 0);
		h->now += 10;
		peer_free(&p);
	}
	assert_int_equal(inet_stats(h->t)->conns_refused, 0);
}

static void test_time_wait_expires(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;
	struct seg s;

	peer_init(&p, 40610, 1);
	a = peer_connect(h, &p);
	a->want_close = true;
	h_poll(h);
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_FIN | F_ACK);
	p.rcv_nxt++;
	peer_tx(h, &p, F_ACK | F_FIN, NULL, 0);
	expect_ack(h, &p, p.snd_nxt, 65535);
	assert_int_equal(a->close_calls, 1);
	h->now += INET_TCP_TIME_WAIT_MS - 1;
	h_poll(h);
	peer_ack(h, &p);
	expect_nothing(h);                          /* still held */
	h->now += 1;
	h_poll(h);
	peer_ack(h, &p);
	expect_seg(h, &s);                          /* forgotten */
	assert_int_equal(s.flags, F_RST);
	peer_free(&p);
}

/* Our FIN acknowledged, the peer never closes: reset once it falls silent, not held forever. */
static void test_fin_wait_2_bounded(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;
	struct seg s;

	peer_init(&p, 40620, 1);
	a = peer_connect(h, &p);
	a->want_close = true;
	h_poll(h);
	expect_seg(h, &s);
	p.rcv_nxt++;
	peer_ack(h, &p);
	h->now += 10000;
	h_poll(h);
	expect_nothing(h);
	/* Still sending: the half-open connection is kept while it is busy. */
	peer_tx(h, &p, F_ACK, (const uint8_t *)"more", 4);
	expect_ack(h, &p, p.snd_nxt, 65535);
	assert_int_equal(a->rx_len, 4);
	h->now += 10000;
	h_poll(h);
	expect_nothing(h);
	assert_int_equal(a->close_calls, 0);
	h->now += 120000;
	h_poll(h);
	expect_seg(h, &s);
	assert_true(s.flags & F_RST);
	assert_int_equal(a->close_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 0);
	peer_free(&p);
}

/* ---- TCP: resets ------------------------------------------------------------------------------ */

static void test_rst_unknown(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;
	struct seg s;

	peer_init(&p, 40700, 0x1000);
	/* A SYN to a closed port. */
	h_in(h, f, build_syn(f, &p, 81));
	expect_seg(h, &s);
	assert_int_equal(s.sport, 81);
	assert_int_equal(s.dport, 40700);
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.seq, 0);
	assert_int_equal(s.ack, 0x1001);
	/* Neither SYN nor ACK to our port, no connection: dropped (RFC 793, LISTEN). */
	h_in(h, f, build_tcp(f, &p, OUR_PORT, 0x2000, 0, F_FIN, 1000, NULL, 0, NULL, 0));
	h_in(h, f, build_tcp(f, &p, OUR_PORT, 0x2000, 0, F_PSH, 1000, NULL, 0, (const uint8_t *)"abcd", 4));
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->drop_bad_tcp, 2);
	assert_int_equal(inet_active_conns(h->t), 0);
	/* Data without ACK to a closed port: acknowledged through its end. */
	h_in(h, f, build_tcp(f, &p, 81, 0x2000, 0, F_PSH, 1000, NULL, 0, (const uint8_t *)"abcd", 4));
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.ack, 0x2004);
	/* A stray ACK to our port: RST at its acknowledgment number. */
	h_in(h, f, build_tcp(f, &p, OUR_PORT, 0x3000, 0xdeadbeef, F_ACK, 1000, NULL, 0, NULL, 0));
	expect_seg(h, &s);
	assert_int_equal(s.sport, OUR_PORT);
	assert_int_equal(s.flags, F_RST);
	assert_int_equal(s.seq, 0xdeadbeef);
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->resets_sent, 3);

	/* An RST is never answered. */
	h_in(h, f, build_tcp(f, &p, 81, 1, 0, F_RST, 0, NULL, 0, NULL, 0));
	h_in(h, f, build_tcp(f, &p, OUR_PORT, 1, 5, F_RST | F_ACK, 0, NULL, 0, NULL, 0));
	h_in(h, f, build_tcp(f, &p, 81, 1, 5, F_RST | F_ACK | F_PSH, 0, NULL, 0, (const uint8_t *)"x", 1));
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->resets_sent, 3);
	assert_int_equal(inet_active_conns(h->t), 0);
	assert_int_equal(h->opens, 0);
	peer_free(&p);
}

/*
 * A host without a TCP listener (port 0, as the NVMe-oF controller's address): the stack needs
 * no application callbacks, answers ARP and ping like any host, and refuses every SYN with RST,
 * creating no connection.
 */
static void test_no_listener(void **state)
{
	struct harness *h = *state;
	struct inet_config cfg = { .ip = OUR_IP, .port = 0 };
	struct inet_ops ops = { .ctx = h, .send_frame = cb_send_frame };
	struct inet_host *t;
	uint8_t f[FMAX];
	struct frame fr;
	struct peer p;
	struct seg s;

	memcpy(cfg.mac, our_mac, 6);
	/* A listener needs its application; without a port nothing more than send_frame. */
	cfg.port = OUR_PORT;
	assert_null(inet_new(&cfg, &ops));
	cfg.port = 0;
	ops.send_frame = NULL;
	assert_null(inet_new(&cfg, &ops));
	ops.send_frame = cb_send_frame;
	t = inet_new(&cfg, &ops);
	assert_non_null(t);
	inet_free(h->t);
	h->t = t;

	h_in(h, f, build_arp(f, bcast_mac, 1, peer_mac, PEER_IP, OUR_IP));
	assert_true(pop_frame(h, &fr));
	assert_int_equal(get16(fr.d + 20), 2);
	assert_memory_equal(fr.d + 22, our_mac, 6);
	h_in(h, f, build_icmp(f, 8, 0x77, 1, (const uint8_t *)"ping", 4));
	assert_true(pop_frame(h, &fr));
	assert_int_equal(fr.d[34], 0);
	assert_int_equal(get16(fr.d + 38), 0x77);

	peer_init(&p, 40800, 0x5000);
	h_in(h, f, build_syn(f, &p, 4420));
	expect_seg(h, &s);
	assert_int_equal(s.sport, 4420);
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.ack, 0x5001);
	/* Port 0 is no port: a SYN to it is malformed and dropped, never accepted. */
	h_in(h, f, build_syn(f, &p, 0));
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->drop_bad_tcp, 1);
	assert_int_equal(inet_active_conns(h->t), 0);
	assert_int_equal(h->opens, 0);
	inet_poll(h->t, h->now + 10000);
	expect_nothing(h);
	peer_free(&p);
}

static void test_rst_from_peer(void **state)
{
	struct harness *h = *state;
	struct peer p;
	struct app *a;

	peer_init(&p, 40710, 0xffffffd0u);         /* the window spans the wrap */
	a = peer_connect(h, &p);
	/* Outside the window: ignored. */
	peer_tx_at(h, &p, p.snd_nxt + 100000, F_RST, NULL, 0);
	peer_tx_at(h, &p, p.snd_nxt - 1, F_RST, NULL, 0);
	expect_nothing(h);
	assert_int_equal(a->close_calls, 0);
	assert_int_equal(inet_active_conns(h->t), 1);
	/* In it (past the wrap): the connection is gone, silently. */
	peer_tx_at(h, &p, p.snd_nxt + 0x100, F_RST, NULL, 0);
	expect_nothing(h);
	assert_int_equal(a->close_calls, 1);
	assert_int_equal(inet_active_conns(h->t), 0);
	peer_free(&p);
}

/* The application refuses the connection: RST once the handshake completes. */
static void test_open_refused(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;
	struct seg s;

	h->refuse = true;
	peer_init(&p, 40720, 1);
	h_in(h, f, build_syn(f, &p, OUR_PORT));
	p.snd_nxt++;
	expect_seg(h, &s);
	assert_int_equal(s.flags, F_SYN | F_ACK);
	p.rcv_nxt = s.seq + 1;
	peer_ack(h, &p);
	expect_seg(h, &s);
	assert_true(s.flags & F_RST);
	assert_int_equal(s.seq, p.rcv_nxt);
	assert_int_equal(inet_active_conns(h->t), 0);
	assert_int_equal(inet_stats(h->t)->conns_refused, 1);
	assert_int_equal(inet_stats(h->t)->conns_accepted, 0);
	peer_free(&p);
}

/* Eight connections work; the ninth is refused; all eight still carry data, unmixed. */
static void test_ninth_connection_refused(void **state)
{
	struct harness *h = *state;
	struct peer ps[INET_TCP_MAX_CONNS + 1];
	uint8_t *d[INET_TCP_MAX_CONNS];
	const size_t n = 5000;
	uint8_t f[FMAX];
	struct seg s;

	h->echo = true;
	for (unsigned i = 0; i < INET_TCP_MAX_CONNS; i++) {
		peer_init(&ps[i], (uint16_t)(42000 + i), 1000u * i);
		peer_connect(h, &ps[i]);
		d[i] = pattern(n, 1000 * i + 1);
	}
	assert_int_equal(inet_active_conns(h->t), INET_TCP_MAX_CONNS);

	peer_init(&ps[INET_TCP_MAX_CONNS], 42100, 0x4000);
	h_in(h, f, build_syn(f, &ps[INET_TCP_MAX_CONNS], OUR_PORT));
	expect_seg(h, &s);
	expect_nothing(h);
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.ack, 0x4001);
	assert_int_equal(inet_stats(h->t)->conns_refused, 1);
	assert_int_equal(inet_active_conns(h->t), INET_TCP_MAX_CONNS);

	/* Interleaved: one segment to each in turn, each echoes back its own bytes. */
	for (size_t off = 0; off < n; off += 1000) {
		for (unsigned i = 0; i < INET_TCP_MAX_CONNS; i++) {
			peer_tx(h, &ps[i], F_ACK, d[i] + off, 1000);
			peer_rx(h, &ps[i], true, 1460);
		}
	}
	for (unsigned i = 0; i < INET_TCP_MAX_CONNS; i++) {
		assert_int_equal(ps[i].rx_len, n);
		assert_memory_equal(ps[i].rx, d[i], n);
		assert_int_equal(ps[i].app->rx_len, n);
		assert_memory_equal(ps[i].app->rx, d[i], n);
		assert_int_equal(ps[i].app->acked, n);
	}

	/* One leaves: the ninth gets in. */
	peer_tx_at(h, &ps[0], ps[0].snd_nxt, F_RST, NULL, 0);
	assert_int_equal(inet_active_conns(h->t), INET_TCP_MAX_CONNS - 1);
	peer_connect(h, &ps[INET_TCP_MAX_CONNS]);
	assert_int_equal(inet_active_conns(h->t), INET_TCP_MAX_CONNS);
	for (unsigned i = 0; i <= INET_TCP_MAX_CONNS; i++) {
		if (i < INET_TCP_MAX_CONNS)
			free(d[i]);
		peer_free(&ps[i]);
	}
}

/* ---- TCP options: negotiation, scaled windows, timestamps, SACK ----------------------------- */

/* Replaces the harness's stack with one whose receive window for scaling peers is window bytes. */
static void h_window(struct harness *h, uint32_t window)
{
	struct inet_config cfg = { .ip = OUR_IP, .port = OUR_PORT, .window = window };
	struct inet_ops ops = {
		.ctx = h, .send_frame = cb_send_frame, .open = cb_open, .input = cb_input,
		.input_eof = cb_input_eof, .peek = cb_peek, .acked = cb_acked,
		.wants_close = cb_wants_close, .close = cb_close,
	};

	memcpy(cfg.mac, our_mac, 6);
	inet_free(h->t);
	h->t = inet_new(&cfg, &ops);
	assert_non_null(h->t);
}

/* A peer offering everything: window scale 7, SACK, timestamps. */
static void peer_init_opts(struct peer *p, uint16_t port, uint32_t iss)
{
	peer_init(p, port, iss);
	p->syn_ws = 7;
	p->syn_sack = true;
	p->ts = true;
	p->tsval = 1000;
}

/*
 * Every combination of the three options in the SYN: the SYN-ACK offers
 * exactly those (peer_connect checks), and the connection uses exactly those:
 * timestamps on every segment or none, windows scaled or not, SACK blocks for
 * out-of-order data or the segment dropped.
 */
static void test_option_negotiation(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(3000, 43);

	for (unsigned m = 0; m < 8; m++) {
		struct peer p;
		struct app *a;
		struct seg s;
		uint32_t base;

		peer_init(&p, (uint16_t)(46000 + m), 0x10000u * m);
		p.syn_ws = (m & 1) ? 5 : -1;
		p.syn_sack = (m & 2) != 0;
		p.ts = (m & 4) != 0;
		p.tsval = 77;
		a = peer_connect(h, &p);
		base = p.snd_nxt;

		/* Our window: 4 MiB >> 7 when scaled (the default window, our shift 7), else 65535. */
		peer_tx(h, &p, F_ACK, d, 100);
		expect_seg(h, &s);
		peer_note(&p, &s);
		assert_int_equal(s.ack, base + 100);
		assert_int_equal(s.wnd, (m & 1) ? (4u << 20) >> 7 : 65535);   /* the 100 bytes were taken */
		assert_int_equal(s.optlen, (m & 4) ? 12 : 0);

		/* Bytes after a hole: held and reported with SACK, else dropped. */
		peer_tx_at_answered(h, &p, base + 1000, F_ACK, d + 1000, 500, &s);
		assert_int_equal(s.ack, base + 100);
		if (m & 2) {
			assert_int_equal(s.nsack, 1);
			assert_int_equal(s.sack[0][0], base + 1000);
			assert_int_equal(s.sack[0][1], base + 1500);
		} else {
			assert_int_equal(s.nsack, 0);
		}
		/* The hole filled: with SACK everything is delivered at once. */
		peer_tx_at_answered(h, &p, base + 100, F_ACK, d + 100, 900, &s);
		assert_int_equal(s.nsack, 0);
		assert_int_equal(s.ack, base + ((m & 2) ? 1500 : 1000));
		assert_int_equal(a->rx_len, (m & 2) ? 1500 : 1000);
		assert_memory_equal(a->rx, d, a->rx_len);

		/* Our data: 1460 bytes a segment, 1448 beside the timestamps. */
		app_queue(a, d, 3000);
		h_poll(h);
		expect_seg(h, &s);
		assert_int_equal(s.len, (m & 4) ? 1448 : 1460);
		assert_int_equal(s.optlen, (m & 4) ? 12 : 0);
		h_drain_queue(h);
		peer_free(&p);
	}
	assert_int_equal(inet_stats(h->t)->opts_ws, 4);
	assert_int_equal(inet_stats(h->t)->opts_sack, 4);
	assert_int_equal(inet_stats(h->t)->opts_ts, 4);
	free(d);
}

/* Options the SYN did not offer are ignored later: no SACK scoreboard, no timestamp echo, no scaling. */
static void test_options_not_negotiated_ignored(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(8 * 1460, 47);
	struct peer p;
	struct app *a;
	struct seg s;
	uint32_t base;
	unsigned n = 0;

	peer_init(&p, 46100, 5);
	a = peer_connect(h, &p);
	app_queue(a, d, 8 * 1460);
	h_poll(h);
	while (pop_seg(h, &s)) {
		assert_int_equal(s.optlen, 0);
		n++;
	}
	assert_int_equal(n, 8);
	base = p.rcv_nxt;
	/* SACK blocks on the ACKs (never agreed): three of them are only duplicate ACKs. */
	p.nsack = 1;
	p.sack[0][0] = base + 1460;
	p.sack[0][1] = base + 2 * 1460;
	peer_ack(h, &p);
	expect_nothing(h);
	p.sack[0][1] = base + 3 * 1460;
	peer_ack(h, &p);
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->sack_blocks_in, 0);
	/* The window field is taken as it is: 1000 bytes, not 1000 << anything. */
	p.nsack = 0;
	p.wnd = 1000;
	p.rcv_nxt = base + 8 * 1460;
	peer_ack(h, &p);
	app_queue(a, d, 5000);
	h_poll(h);
	expect_seg(h, &s);
	assert_int_equal(s.len, 1000);
	expect_nothing(h);
	assert_int_equal(inet_stats(h->t)->timeouts, 0);
	free(d);
	peer_free(&p);
}

/*
 * Sending with a scaled peer window: slow start opens the congestion window
 * (a window per round trip), and far more than 64 KiB is in flight, never
 * more than the peer's scaled window.
 */
static void test_scaled_window_send(void **state)
{
	struct harness *h = *state;
	const size_t n = 4u << 20;
	uint8_t *d = pattern(n, 53);
	struct peer p;
	struct app *a;
	size_t max_flight = 0, got = 0, cap_flight;
	unsigned rounds = 0;

	peer_init_opts(&p, 46200, 0xfffe0000u);
	p.wnd = 0x2000;                             /* << 7: 1 MiB */
	cap_flight = 0x2000u << 7;
	a = peer_connect(h, &p);
	app_queue(a, d, n);
	h_poll(h);
	while (got < n) {
		size_t flight;
		unsigned segs = peer_rx(h, &p, false, 1448);

		flight = p.rx_len - got;
		assert_true(segs > 0);
		if (rounds == 0)
			assert_int_equal(segs, 10);     /* the initial window, RFC 6928 */
		assert_true(flight <= cap_flight);
		if (flight > max_flight)
			max_flight = flight;
		got = p.rx_len;
		rounds++;
		p.tsval++;
		peer_ack(h, &p);                    /* one ACK per round trip, as a GRO receiver sends */
	}
	assert_memory_equal(p.rx, d, n);
	assert_int_equal(a->acked, n);
	assert_true(max_flight > 16 * 65535);
	assert_true(max_flight <= cap_flight);
	assert_true(rounds < 16);
	assert_int_equal(inet_stats(h->t)->retransmits, 0);
	free(d);
	peer_free(&p);
}

/*
 * Receiving with a scaled window: the window is the configured one, the
 * buffer never holds more, a slow reader closes it and reopens it; nothing
 * is lost.
 */
static void test_scaled_window_receive(void **state)
{
	struct harness *h = *state;
	const uint32_t win = 256u << 10;           /* our shift: 3 */
	const size_t n = 600000;
	uint8_t *d = pattern(n, 59);
	struct peer p;
	struct app *a;
	uint32_t base;
	struct seg s;

	h_window(h, win);
	peer_init(&p, 46300, 0xffffff00u);
	p.syn_ws = 2;
	h->budget = 0;
	a = peer_connect(h, &p);
	base = p.snd_nxt;
	/* The window field is scaled from the first segment after the SYN-ACK. */
	peer_tx(h, &p, F_ACK, d, 1000);
	expect_ack(h, &p, base + 1000, (uint16_t)((win - 1000) >> 3));
	/* Until it closes: exactly win bytes are taken. */
	while (p.last_wnd > 0) {
		size_t off = p.snd_nxt - base;

		peer_tx(h, &p, F_ACK, d + off, 1460);
		expect_seg(h, &s);
		peer_note(&p, &s);
		p.snd_nxt = s.ack;
		assert_true(s.ack - base <= win);
	}
	assert_int_equal(p.snd_nxt - base, win);
	assert_int_equal(inet_stats(h->t)->bytes_in, win);
	peer_tx(h, &p, F_ACK, d + win, 1460);
	expect_ack(h, &p, base + win, 0);
	p.snd_nxt = base + win;
	/* The reader takes everything: the whole window again. */
	a->budget = SIZE_MAX;
	h_poll(h);
	expect_ack(h, &p, base + win, (uint16_t)(win >> 3));
	while (p.snd_nxt - base < n) {
		size_t off = p.snd_nxt - base, len = n - off < 1460 ? n - off : 1460;

		peer_tx(h, &p, F_ACK, d + off, len);
		expect_seg(h, &s);
		peer_note(&p, &s);
		assert_int_equal(s.ack, base + (uint32_t)(off + len));
	}
	assert_int_equal(a->rx_len, n);
	assert_memory_equal(a->rx, d, n);
	free(d);
	peer_free(&p);
}

/*
 * The receiver's SACK blocks: out-of-order data held, reported range by range
 * (the one that grew last first, at most four, three beside timestamps),
 * across the sequence wrap; filling the holes delivers everything in order.
 */
static void test_sack_blocks(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(1200, 61);

	for (unsigned with_ts = 0; with_ts < 2; with_ts++) {
		struct peer p;
		struct app *a;
		struct seg s;
		uint32_t b;
		unsigned maxb = with_ts ? 3 : 4;
		static const unsigned order[] = { 2, 4, 6, 8, 10 };   /* hundreds sent ahead of the holes */

		peer_init(&p, (uint16_t)(46400 + with_ts), 0xfffffe80u);     /* byte 384 crosses the wrap */
		p.syn_sack = true;
		p.ts = with_ts;
		a = peer_connect(h, &p);
		b = p.snd_nxt;
		peer_tx(h, &p, F_ACK, d, 100);
		expect_ack(h, &p, b + 100, 65535 - 0);
		for (unsigned i = 0; i < 5; i++) {
			unsigned k = order[i];

			peer_tx_at_answered(h, &p, b + 100 * k, F_ACK, d + 100 * k, 100, &s);
			assert_int_equal(s.ack, b + 100);
			assert_int_equal(s.len, 0);
			assert_int_equal(s.nsack, i + 1 < maxb ? i + 1 : maxb);
			for (unsigned j = 0; j < s.nsack; j++) {
				assert_int_equal(s.sack[j][0], b + 100 * order[i - j]);
				assert_int_equal(s.sack[j][1], b + 100 * order[i - j] + 100);
			}
		}
		assert_int_equal(a->rx_len, 100);
		/* A range grows (500..599 joins 400..499 and 600..699): it is reported first, merged. */
		peer_tx_at_answered(h, &p, b + 500, F_ACK, d + 500, 100, &s);
		assert_int_equal(s.sack[0][0], b + 400);
		assert_int_equal(s.sack[0][1], b + 700);
		assert_int_equal(s.sack[1][0], b + 1000);
		/* The first hole: 100..199 brings 200..299 with it. */
		peer_tx_at_answered(h, &p, b + 100, F_ACK, d + 100, 100, &s);
		assert_int_equal(s.ack, b + 300);
		assert_int_equal(a->rx_len, 300);
		assert_int_equal(s.nsack, 3);
		/* An overlapping retransmission over 250..449 fills 300..399 and reaches 700. */
		peer_tx_at_answered(h, &p, b + 250, F_ACK, d + 250, 200, &s);
		assert_int_equal(s.ack, b + 700);
		assert_int_equal(s.nsack, 2);
		/* The rest, one hole at a time. */
		peer_tx_at_answered(h, &p, b + 700, F_ACK, d + 700, 100, &s);
		assert_int_equal(s.ack, b + 900);
		assert_int_equal(s.nsack, 1);
		assert_int_equal(s.sack[0][0], b + 1000);
		peer_tx_at_answered(h, &p, b + 900, F_ACK, d + 900, 100, &s);
		assert_int_equal(s.ack, b + 1100);
		assert_int_equal(s.nsack, 0);
		assert_int_equal(a->rx_len, 1100);
		assert_memory_equal(a->rx, d, 1100);
		/* A FIN after a hole waits for it. */
		peer_tx_at_answered(h, &p, b + 1150, F_ACK | F_FIN, d + 1150, 50, &s);
		assert_int_equal(s.ack, b + 1100);
		assert_int_equal(a->eof_calls, 0);
		peer_tx_at_answered(h, &p, b + 1100, F_ACK, d + 1100, 50, &s);
		assert_int_equal(s.ack, b + 1201);
		assert_int_equal(a->rx_len, 1200);
		assert_memory_equal(a->rx, d, 1200);
		assert_int_equal(a->eof_calls, 1);
		peer_free(&p);
	}
	assert_true(inet_stats(h->t)->ooo_held >= 12);
	assert_int_equal(inet_stats(h->t)->drop_out_of_order, 0);
	free(d);
}

/* The sender with SACK: after losses, only the holes go again, before any timeout. */
static void test_sack_retransmits_holes(void **state)
{
	struct harness *h = *state;
	const size_t seg = 1460, n = 10 * seg;
	uint8_t *d = pattern(n, 67);
	struct peer p;
	struct app *a;
	struct seg s, sent[10];
	uint32_t b;
	unsigned rtx[4], nrtx = 0;

	peer_init(&p, 46500, 0x7fffff00u);
	p.syn_sack = true;
	a = peer_connect(h, &p);
	b = p.rcv_nxt;
	app_queue(a, d, n);
	h_poll(h);
	for (unsigned i = 0; i < 10; i++) {
		expect_seg(h, &sent[i]);
		assert_int_equal(sent[i].seq, b + i * seg);
	}
	expect_nothing(h);
	/* Segments 2 and 6 are lost; the peer acknowledges 0-1 and SACKs the rest as it arrives. */
	p.rcv_nxt = b + 2 * seg;
	for (unsigned i = 3; i < 10; i++) {
		if (i == 6)
			continue;
		p.nsack = i < 6 ? 1 : 2;
		p.sack[0][0] = b + (i < 6 ? 3 : 7) * seg;
		p.sack[0][1] = b + (i + 1) * seg;
		p.sack[1][0] = b + 3 * seg;
		p.sack[1][1] = b + 6 * seg;
		peer_ack(h, &p);
		while (pop_seg(h, &s)) {
			assert_true(s.len > 0);
			assert_true(nrtx < 4);
			rtx[nrtx++] = (s.seq - b) / seg;
			assert_int_equal(s.len, seg);
			assert_memory_equal(s.data, d + (s.seq - b), seg);
		}
	}
	/* Exactly the two holes, in order, once each, without the timer. */
	assert_int_equal(nrtx, 2);
	assert_int_equal(rtx[0], 2);
	assert_int_equal(rtx[1], 6);
	expect_recoveries(h, 1, 2, 0);
	/* The holes arrive: everything is acknowledged, recovery ends. */
	p.nsack = 1;
	p.sack[0][0] = b + 7 * seg;
	p.sack[0][1] = b + 10 * seg;
	p.rcv_nxt = b + 6 * seg;
	peer_ack(h, &p);
	peer_ack_all(h, &p, a, b + 10 * seg, n);
	h->now += 5000;
	h_poll(h);
	expect_nothing(h);
	free(d);
	peer_free(&p);
}

/* Connects p, queues the n bytes of d and discards the first flight; *b is the sequence number of d[0]. */
static struct app *peer_connect_flight(struct harness *h, struct peer *p, const uint8_t *d, size_t n, uint32_t *b)
{
	struct app *a = peer_connect(h, p);

	*b = p->rcv_nxt;
	app_queue(a, d, n);
	h_poll(h);
	h_drain_queue(h);
	return a;
}

/* Without SACK: three duplicate ACKs retransmit the first segment; a partial ACK the next hole (NewReno). */
static void test_newreno_fast_retransmit(void **state)
{
	struct harness *h = *state;
	const size_t seg = 1460, n = 10 * seg;
	uint8_t *d = pattern(n, 71);
	struct peer p;
	struct app *a;
	uint32_t b;

	peer_init(&p, 46600, 42);
	p.syn_ws = 0;           /* an option (scale factor 1): congestion control; without any, none */
	a = peer_connect_flight(h, &p, d, n, &b);
	/* 2 and 6 lost: ACK of 0-1, then a duplicate for each of 3, 4, 5. */
	p.rcv_nxt = b + 2 * seg;
	peer_acks(h, &p, 3);
	expect_nothing(h);
	peer_ack(h, &p);
	expect_only_data(h, b, d, 2 * seg, seg);
	/* Duplicates for 7, 8, 9: nothing new to send. */
	peer_acks(h, &p, 3);
	expect_nothing(h);
	/* The retransmission fills 2: a partial ACK up to 6, which goes at once. */
	p.rcv_nxt = b + 6 * seg;
	peer_ack(h, &p);
	expect_only_data(h, b, d, 6 * seg, seg);
	peer_ack_all(h, &p, a, b + 10 * seg, n);
	expect_recoveries(h, 1, 2, 0);
	free(d);
	peer_free(&p);
}

/*
 * A timeout with SACK: everything unacknowledged goes again from the first
 * hole, in slow start, skipping what the peer SACKed.
 */
static void test_sack_timeout_skips_sacked(void **state)
{
	struct harness *h = *state;
	const size_t seg = 1460, n = 6 * seg;
	uint8_t *d = pattern(n, 73);
	struct peer p;
	struct app *a;
	struct seg s;
	uint32_t b;

	peer_init(&p, 46700, 9);
	p.syn_sack = true;
	a = peer_connect_flight(h, &p, d, n, &b);
	/* 0 and 3 lost, 4-5 late; one ACK SACKs 1-2: too little to call a loss, the timer does. */
	p.nsack = 1;
	p.sack[0][0] = b + 1 * seg;
	p.sack[0][1] = b + 3 * seg;
	peer_ack(h, &p);
	expect_nothing(h);
	h->now += INET_TCP_RTO_MS;
	h_poll(h);
	expect_seg(h, &s);
	expect_nothing(h);                          /* a window of one segment */
	assert_int_equal(s.seq, b);
	/* 0 in, so 1-2 are acknowledged; 4-5 arrived meanwhile and are SACKed: only 3 goes again. */
	p.sack[0][0] = b + 4 * seg;
	p.sack[0][1] = b + 6 * seg;
	p.rcv_nxt = b + 3 * seg;
	peer_ack(h, &p);
	expect_only_data(h, b, d, 3 * seg, seg);
	peer_ack_all(h, &p, a, b + n, n);
	expect_recoveries(h, 0, 2, 1);
	free(d);
	peer_free(&p);
}

/* 100 bytes of d go out at once, then nothing until rto_ms have passed, then the same segment again (r). */
static void expect_rto(struct harness *h, struct app *a, const uint8_t *d, uint64_t rto_ms, struct seg *r)
{
	struct seg s;

	app_queue(a, d, 100);
	h_poll(h);
	expect_seg(h, &s);
	h->now += rto_ms - 1;
	h_poll(h);
	expect_nothing(h);
	h->now += 1;
	h_poll(h);
	expect_seg(h, r);
	assert_int_equal(r->seq, s.seq);
}

/*
 * Timestamps: echoed, our clock in ms, the peer's clock across its wrap, old
 * ones refused (PAWS), ours across its wrap; the RTO follows the RTT.
 */
static void test_timestamps(void **state)
{
	struct harness *h = *state;
	uint8_t *d = pattern(4000, 79);
	struct peer p;
	struct app *a;
	struct seg s, r;
	uint32_t b, t0;
	uint64_t now0;

	peer_init(&p, 46800, 100);
	p.ts = true;
	p.tsval = 0xfffffff0u;
	now0 = h->now;
	a = peer_connect(h, &p);
	t0 = p.ts_recent;
	/* Our clock is one of its own: random per connection, so 2^32 ms needn't pass for it to wrap. */
	b = p.snd_nxt;
	p.tsval += 5;
	h->now += 7;
	peer_tx(h, &p, F_ACK, d, 10);
	expect_seg(h, &s);
	peer_note(&p, &s);
	assert_int_equal(s.tsval, t0 + 7);
	/* Across the peer's wrap: 0xfffffffe, then 5. */
	p.tsval = 0xfffffffeu;
	peer_tx(h, &p, F_ACK, d + 10, 10);
	expect_ack(h, &p, b + 20, 65535);
	p.tsval = 5;
	peer_tx(h, &p, F_ACK, d + 20, 10);
	expect_ack(h, &p, b + 30, 65535);
	assert_int_equal(a->rx_len, 30);
	/* An old one (before 5, across the wrap): refused, answered with an ACK echoing 5. */
	p.tsval = 0xfffffff8u;
	peer_tx_at(h, &p, b + 30, F_ACK, d + 30, 10);
	expect_seg(h, &s);
	assert_int_equal(s.ack, b + 30);
	assert_int_equal(s.tsecr, 5);
	assert_int_equal(a->rx_len, 30);
	assert_int_equal(inet_stats(h->t)->drop_paws, 1);
	p.tsval = 6;
	peer_tx_at(h, &p, b + 30, F_ACK, d + 30, 10);
	expect_ack(h, &p, b + 40, 65535);
	p.snd_nxt = b + 40;

	/* The RTO from the RTT: answered after 300 ms, the next timeout waits 300 + 4 x 150 = 900 ms. */
	app_queue(a, d, 100);
	h_poll(h);
	expect_seg(h, &s);
	peer_note(&p, &s);
	h->now += 300;
	p.rcv_nxt += 100;
	peer_ack(h, &p);
	expect_nothing(h);
	expect_rto(h, a, d, 900, &r);
	assert_int_equal(inet_stats(h->t)->timeouts, 1);
	peer_note(&p, &r);
	p.rcv_nxt += 100;
	peer_ack(h, &p);
	expect_nothing(h);

	/* Our clock past its wrap (2^32 ms later): still echoed, and still an RTT sample (of 1 ms). */
	h->now += 0x100000000ull - 1000;
	p.tsval = 100;
	peer_tx(h, &p, F_ACK, d, 10);
	expect_seg(h, &s);
	peer_note(&p, &s);
	assert_int_equal(s.tsval, t0 + (uint32_t)(h->now - now0));
	assert_true(h->now - now0 > 0xffffffffull);  /* so the 32-bit clock wrapped */
	app_queue(a, d, 100);
	h_poll(h);
	expect_seg(h, &s);
	peer_note(&p, &s);
	h->now += 1;
	p.rcv_nxt += 100;
	peer_ack(h, &p);
	/*
	 * Samples so far: 300 ms, 0 (the ACK of the retransmission echoes it), 1:
	 * srtt x 8 = 2400, 2100, 1839; rttvar x 4 = 600, 750, 824; so the RTO is
	 * 229 + 824 = 1053 ms (without the last sample it would be 1012).
	 */
	expect_rto(h, a, d, 1053, &r);
	free(d);
	peer_free(&p);
}

/*
 * Bounded memory: a reader that takes nothing on every connection, each peer
 * sending into the scaled window, in order and out of order: no connection
 * ever takes more than its window.
 */
static void test_buffer_bounded(void **state)
{
	struct harness *h = *state;
	const uint32_t win = 128u << 10;
	uint8_t *d = pattern(300000, 83);
	struct peer p[INET_TCP_MAX_CONNS];

	h_window(h, win);
	h->budget = 0;
	for (unsigned i = 0; i < INET_TCP_MAX_CONNS; i++) {
		uint32_t b;

		peer_init_opts(&p[i], (uint16_t)(46900 + i), 1000u * i);
		p[i].tsval = 1;
		peer_connect(h, &p[i]);
		b = p[i].snd_nxt;
		/* Far ahead, then everything in order, well past the window. */
		peer_tx_at(h, &p[i], b + win - 1000, F_ACK, d, 1000);
		peer_tx_at(h, &p[i], b + win, F_ACK, d, 1000);
		for (size_t off = 0; off < 2 * win; off += 1448)
			peer_tx_at(h, &p[i], b + (uint32_t)off, F_ACK, d + off, 1448);
		h_drain_queue(h);
	}
	assert_int_equal(inet_stats(h->t)->bytes_in, (uint64_t)INET_TCP_MAX_CONNS * win);
	for (unsigned i = 0; i < INET_TCP_MAX_CONNS; i++)
		peer_free(&p[i]);
	free(d);
}

/* ---- hostile frames ------------------------------------------------------------------------- */

/* Feeds one frame that must be dropped: no output, exactly one drop counted, by the counter named. */
#define EXPECT_DROP(h, f, n, counter)                                               \
	do {                                                                        \
		const struct inet_stats *st_ = inet_stats((h)->t);              \
		uint64_t total_ = total_drops(st_), c_ = st_->counter;              \
		h_in((h), (f), (n));                                                \
		expect_nothing(h);                                                  \
		assert_int_equal(st_->counter, c_ + 1);                             \
		assert_int_equal(total_drops(st_), total_ + 1);                     \
	} while (0)

static void test_bad_checksums(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;
	struct app *a;
	size_t n;

	peer_init(&p, 40800, 1);
	n = build_syn(f, &p, OUR_PORT);
	f[24] ^= 0x40;                              /* IPv4 header checksum */
	EXPECT_DROP(h, f, n, drop_bad_csum);
	n = build_syn(f, &p, OUR_PORT);
	f[34 + 16] ^= 0x01;                         /* TCP checksum */
	EXPECT_DROP(h, f, n, drop_bad_csum);
	n = build_syn(f, &p, OUR_PORT);
	f[34 + 4] ^= 0x80;                          /* a covered byte (seq) */
	EXPECT_DROP(h, f, n, drop_bad_csum);
	assert_int_equal(inet_active_conns(h->t), 0);

	/* A corrupted payload byte on a connection: not delivered, not acknowledged. */
	a = peer_connect(h, &p);
	n = build_tcp(f, &p, OUR_PORT, p.snd_nxt, p.rcv_nxt, F_ACK, 65535, NULL, 0,
		      (const uint8_t *)"data", 4);
	f[n - 1] ^= 0x20;
	EXPECT_DROP(h, f, n, drop_bad_csum);
	assert_int_equal(a->rx_len, 0);
	f[n - 1] ^= 0x20;
	h_in(h, f, n);
	expect_ack(h, &p, p.snd_nxt + 4, 65535);
	assert_int_equal(a->rx_len, 4);
	peer_free(&p);
}

static void test_bad_ip(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX], g[FMAX];
	struct peer p;
	size_t n;

	peer_init(&p, 40810, 1);
	/* Fragments: MF, or an offset. */
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 20, 0x2000);
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_fragment);
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 20, 0x0001);
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_fragment);

	/* Options: IHL 6, with a valid header checksum. */
	n = build_syn(f, &p, OUR_PORT);
	memcpy(g, f, 34);
	memset(g + 34, 1, 4);
	memcpy(g + 38, f + 34, n - 34);
	g[14] = 0x46;
	put16(g + 16, get16(f + 16) + 4);
	fix_ip_csum(g);
	EXPECT_DROP(h, g, n + 4, drop_ip_options);

	/* Version, header length, total length. */
	n = build_syn(f, &p, OUR_PORT);
	f[14] = 0x65;
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_ip);
	n = build_syn(f, &p, OUR_PORT);
	f[14] = 0x44;
	EXPECT_DROP(h, f, n, drop_bad_ip);
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 16, (uint32_t)(n - 14 + 1));
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_ip);
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 16, 19);
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_ip);
	/* A broadcast source. */
	n = build_syn(f, &p, OUR_PORT);
	put32(f + 26, 0xffffffffu);
	fix_ip_csum(f);
	fix_tcp_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_ip);

	/* Not for us: another address, another MAC, UDP, IPv4 to the broadcast MAC. */
	n = build_syn(f, &p, OUR_PORT);
	put32(f + 30, OTHER_IP);
	fix_ip_csum(f);
	fix_tcp_csum(f);
	EXPECT_DROP(h, f, n, drop_not_mine);
	n = build_syn(f, &p, OUR_PORT);
	f[0] ^= 0x02;
	EXPECT_DROP(h, f, n, drop_not_mine);
	n = build_syn(f, &p, OUR_PORT);
	f[23] = 17;
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_not_mine);
	n = build_syn(f, &p, OUR_PORT);
	memcpy(f, bcast_mac, 6);
	EXPECT_DROP(h, f, n, drop_not_mine);

	/* Not Ethernet II IPv4/ARP: 802.1Q, IPv6, an 802.3 length; a group source address. */
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 12, 0x8100);
	EXPECT_DROP(h, f, n, drop_bad_eth);
	put16(f + 12, 0x86dd);
	EXPECT_DROP(h, f, n, drop_bad_eth);
	put16(f + 12, 60);
	EXPECT_DROP(h, f, n, drop_bad_eth);
	n = build_syn(f, &p, OUR_PORT);
	f[6] |= 1;
	EXPECT_DROP(h, f, n, drop_bad_eth);

	/* Ethernet padding after the IPv4 packet is ignored: this SYN is answered. */
	n = build_syn(f, &p, OUR_PORT);
	memset(f + n, 0xa5, 16);
	h_in(h, f, n + 16);
	assert_int_equal(h->qn, 1);
	h_drain_queue(h);
	peer_free(&p);
}

static void test_bad_tcp(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;
	size_t n;
	static const uint8_t bad_opts[][8] = {
		{ 2, 4, 5, 0xb4, 0, 0, 0, 0 },          /* control: valid (see below) */
		{ 1, 1, 1, 1, 1, 1, 8, 0 },             /* length 0 */
		{ 1, 1, 1, 1, 1, 1, 8, 1 },             /* length 1 */
		{ 1, 1, 1, 1, 1, 1, 1, 8 },             /* kind without room for its length */
		{ 1, 1, 1, 1, 1, 8, 9, 1 },             /* runs past the header */
		{ 2, 3, 5, 0, 0, 0, 0, 0 },             /* MSS of length 3 */
		{ 2, 6, 5, 0xb4, 0, 0, 0, 0 },          /* MSS of length 6 */
	};

	peer_init(&p, 40820, 1);
	/* Data offset below 5, beyond the segment. */
	n = build_syn(f, &p, OUR_PORT);
	f[34 + 12] = 4 << 4;
	fix_tcp_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_tcp);
	n = build_syn(f, &p, OUR_PORT);
	f[34 + 12] = 15 << 4;
	fix_tcp_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_tcp);
	/* Shorter than a TCP header. */
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 16, 20 + 19);
	fix_ip_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_tcp);
	/* Port 0; SYN with FIN. */
	n = build_syn(f, &p, OUR_PORT);
	put16(f + 34, 0);
	fix_tcp_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_tcp);
	n = build_syn(f, &p, OUR_PORT);
	f[34 + 13] |= F_FIN;
	fix_tcp_csum(f);
	EXPECT_DROP(h, f, n, drop_bad_tcp);
	/* Malformed options. */
	for (size_t i = 1; i < sizeof(bad_opts) / sizeof(bad_opts[0]); i++) {
		n = build_tcp(f, &p, OUR_PORT, 1, 0, F_SYN, 1000, bad_opts[i], 8, NULL, 0);
		EXPECT_DROP(h, f, n, drop_bad_tcp);
	}
	assert_int_equal(inet_active_conns(h->t), 0);
	/* The control: the same shape, well formed, is answered. */
	n = build_tcp(f, &p, OUR_PORT, 1, 0, F_SYN, 1000, bad_opts[0], 8, NULL, 0);
	h_in(h, f, n);
	assert_int_equal(h->qn, 1);
	h_drain_queue(h);
	peer_free(&p);
}

/* Every proper prefix of the n-byte frame f is dropped, counted once, and answered with nothing. */
static void expect_cuts_dropped(struct harness *h, const uint8_t *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t before = total_drops(inet_stats(h->t));

		h_in(h, f, i);
		expect_nothing(h);
		assert_int_equal(total_drops(inet_stats(h->t)), before + 1);
	}
}

/* A valid frame cut at every length: each is dropped and counted once; the whole one works. */
static void test_truncated_frames(void **state)
{
	struct harness *h = *state;
	uint8_t f[FMAX];
	struct peer p;
	struct app *a;
	size_t n;

	peer_init(&p, 40830, 1);
	n = build_syn(f, &p, OUR_PORT);
	expect_cuts_dropped(h, f, n);
	assert_int_equal(inet_active_conns(h->t), 0);
	a = peer_connect(h, &p);
	n = build_tcp(f, &p, OUR_PORT, p.snd_nxt, p.rcv_nxt, F_ACK, 65535, NULL, 0,
		      (const uint8_t *)"0123456789", 10);
	expect_cuts_dropped(h, f, n);
	assert_int_equal(a->rx_len, 0);
	h_in(h, f, n);
	expect_ack(h, &p, p.snd_nxt + 10, 65535);
	assert_int_equal(a->rx_len, 10);
	peer_free(&p);
}

/* Random bytes of every length 0..100, some dressed as ours, IPv4 or ARP: dropped, counted, no crash. */
static void test_garbage(void **state)
{
	struct harness *h = *state;
	uint8_t f[128];
	uint64_t before = total_drops(inet_stats(h->t)), fed = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	for (size_t len = 0; len <= 100; len++) {
		for (unsigned v = 0; v < 64; v++) {
			for (size_t i = 0; i < sizeof(f); i++)
				f[i] = (uint8_t)rnd();
			if (v % 4 >= 1 && len >= 6)
				memcpy(f, v % 8 == 1 ? bcast_mac : our_mac, 6);
			if (len >= 14) {
				f[6] &= 0xfe;
				if (v % 4 == 2)
					put16(f + 12, 0x0800);
				if (v % 4 == 3)
					put16(f + 12, 0x0806);
			}
			if (v % 4 == 2 && len >= 15)
				f[14] = 0x45;
			h_in(h, f, len);
			fed++;
			expect_nothing(h);
		}
	}
	assert_int_equal(total_drops(inet_stats(h->t)), before + fed);
	assert_int_equal(inet_active_conns(h->t), 0);
}

/* ---- fuzz ------------------------------------------------------------------------------------ */

#define FUZZ_PORTS 24

struct fuzz_peer {
	bool known;             /* the stack sent us a SYN-ACK on this port */
	uint32_t snd_nxt, rcv_nxt;
};

static void fuzz_answer(struct harness *h, struct fuzz_peer *fp, unsigned *budget)
{
	struct frame fr;

	while (pop_frame(h, &fr)) {
		uint8_t f[FMAX];
		struct peer p;
		struct seg s;
		unsigned port;

		if (get16(fr.d + 12) != 0x0800 || fr.d[23] != 6)
			continue;
		parse_seg(&fr, &s);
		if (s.dport < 45000 || s.dport >= 45000 + FUZZ_PORTS)
			continue;
		port = s.dport - 45000u;
		if (s.flags & F_RST) {
			fp[port].known = false;
			continue;
		}
		if ((s.flags & (F_SYN | F_ACK)) == (F_SYN | F_ACK)) {
			fp[port].known = true;
			fp[port].snd_nxt = s.ack;
			fp[port].rcv_nxt = s.seq + 1;
		} else if (fp[port].known) {
			if (s.seq == fp[port].rcv_nxt)
				fp[port].rcv_nxt += (uint32_t)s.len + ((s.flags & F_FIN) ? 1 : 0);
			if (s.flags & F_ACK)
				fp[port].snd_nxt = s.ack;
		}
		if (*budget == 0 || !fp[port].known || (s.len == 0 && !(s.flags & (F_SYN | F_FIN))))
			continue;
		if (rnd() % 4 == 0)
			continue;           /* this one is "lost" */
		(*budget)--;
		peer_init(&p, (uint16_t)(45000 + port), 0);
		h_in(h, f, build_tcp(f, &p, OUR_PORT, fp[port].snd_nxt, fp[port].rcv_nxt, F_ACK,
				     (uint16_t)(rnd() % 4 ? 65535 : rnd() % 3000), NULL, 0, NULL, 0));
	}
}

static void test_fuzz(void **state)
{
	struct harness *h = *state;
	struct fuzz_peer fp[FUZZ_PORTS];
	uint8_t *payload = pattern(2000, 41);
	uint8_t f[FMAX];

	memset(fp, 0, sizeof(fp));
	rng_state = 0x0123456789abcdefull;
	for (unsigned iter = 0; iter < 6000; iter++) {
		unsigned port = rnd() % FUZZ_PORTS, kind = rnd() % 8, budget = 64;
		struct peer p;
		size_t n;

		peer_init(&p, (uint16_t)(45000 + port), rnd());
		p.syn_mss = (int)(rnd() % 2000) - 100;
		p.syn_ws = rnd() % 2 ? -1 : (int)(rnd() % 20);
		p.syn_sack = rnd() % 2;
		p.ts = rnd() % 2;
		p.tsval = rnd() % 4 ? 1000 + iter : rnd();
		h->echo = rnd() % 2;
		h->budget = rnd() % 3 ? SIZE_MAX : rnd() % 5000;
		if (kind == 0 || (!fp[port].known && kind < 5)) {
			n = build_syn(f, &p, rnd() % 16 ? OUR_PORT : (uint16_t)rnd());
		} else if (kind < 5) {
			static const unsigned fl[] = {
				F_ACK, F_ACK | F_PSH, F_ACK | F_FIN, F_RST, F_ACK | F_SYN, 0,
			};
			size_t len = rnd() % 3 ? rnd() % 1449 : 0, ol;
			uint8_t opt[40];

			/* Timestamps (fresh, or stale), SACK blocks near what the stack sent. */
			p.ts_recent = rnd();
			p.nsack = rnd() % 3 ? 0 : 1 + rnd() % 3;
			for (unsigned k = 0; k < p.nsack; k++) {
				p.sack[k][0] = fp[port].rcv_nxt + rnd() % 20000 - 2000;
				p.sack[k][1] = p.sack[k][0] + rnd() % 5000 - 100;
			}
			ol = peer_opts(&p, opt);
			n = build_tcp(f, &p, OUR_PORT, fp[port].snd_nxt + (rnd() % 8 ? 0 : rnd() % 70000),
				      fp[port].rcv_nxt, fl[rnd() % 6], (uint16_t)rnd(), opt, ol,
				      payload + rnd() % 500, len);
		} else if (kind == 5) {
			n = build_arp(f, rnd() % 2 ? bcast_mac : our_mac, (uint16_t)(rnd() % 3), peer_mac,
				      rnd() % 2 ? PEER_IP : rnd(), rnd() % 2 ? OUR_IP : rnd());
		} else if (kind == 6) {
			n = build_icmp(f, (uint8_t)(rnd() % 2 ? 8 : rnd()), (uint16_t)rnd(), (uint16_t)rnd(),
				       payload, rnd() % 1600);
		} else {
			uint8_t opt[40];
			size_t ol = 4 * (rnd() % 11);

			for (size_t i = 0; i < ol; i++)
				opt[i] = (uint8_t)(rnd() % 4 ? rnd() % 4 : rnd());
			n = build_tcp(f, &p, OUR_PORT, p.snd_nxt, 0, F_SYN, 1000, opt, ol, NULL, 0);
		}

		/* Mutate: flip bytes, cut, extend; often fix the checksums so the damage goes deeper. */
		if (rnd() % 4) {
			unsigned k = 1 + rnd() % 4;

			for (unsigned i = 0; i < k && n > 0; i++)
				f[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
		}
		if (rnd() % 8 == 0 && n > 0)
			n = rnd() % n;
		if (rnd() % 8 == 0) {
			size_t extra = rnd() % 64;

			for (size_t i = 0; i < extra && n < FMAX; i++)
				f[n++] = (uint8_t)rnd();
		}
		if (rnd() % 2 && n >= 34 && get16(f + 12) == 0x0800 && (f[14] & 0xf) == 5 &&
		    get16(f + 16) >= 20 && 14 + (size_t)get16(f + 16) <= n) {
			fix_ip_csum(f);
			if (f[23] == 6 && get16(f + 16) >= 40)
				fix_tcp_csum(f);
		}
		h_in(h, f, n);
		fuzz_answer(h, fp, &budget);
		if (rnd() % 16 == 0) {
			h->now += rnd() % 3000;
			for (unsigned i = 0; i < h->napps; i++) {
				struct app *a = h->apps[i];

				if (a->close_calls)
					continue;
				if (rnd() % 4 == 0)
					a->budget = SIZE_MAX;
				if (rnd() % 8 == 0)
					a->want_close = true;
				if (rnd() % 4 == 0)
					app_queue(a, payload, rnd() % 2000);
			}
			h_poll(h);
			fuzz_answer(h, fp, &budget);
		}
		assert_true(inet_active_conns(h->t) <= INET_TCP_MAX_CONNS);
		assert_true(h->opens - h->closes <= inet_active_conns(h->t));
	}
	/* Time runs out for everything left: each application is closed exactly once (teardown). */
	for (unsigned i = 0; i < 100; i++) {
		h->now += 5000;
		h_poll(h);
		h_drain_queue(h);
	}
	{
		const struct inet_stats *st = inet_stats(h->t);

		print_message("fuzz: in %llu out %llu accepted %llu refused %llu rst %llu rtx %llu "
			      "bytes in %llu out %llu drops %llu (ooo %llu bad_tcp %llu csum %llu)\n",
			      (unsigned long long)st->frames_in, (unsigned long long)st->frames_out,
			      (unsigned long long)st->conns_accepted, (unsigned long long)st->conns_refused,
			      (unsigned long long)st->resets_sent, (unsigned long long)st->retransmits,
			      (unsigned long long)st->bytes_in, (unsigned long long)st->bytes_out,
			      (unsigned long long)total_drops(st), (unsigned long long)st->drop_out_of_order,
			      (unsigned long long)st->drop_bad_tcp, (unsigned long long)st->drop_bad_csum);
		/* The mutations reached the state machine, not only the checksum checks. */
		assert_true(st->frames_in >= 6000);
		assert_true(st->conns_accepted >= 10);
		assert_true(st->bytes_in > 0 && st->bytes_out > 0);
		assert_true(st->drop_out_of_order > 0 && st->retransmits > 0);
	}
	free(payload);
}

/*
 * 1 MiB to a peer with every option, its window scaled to 1 MiB, the
 * application's bytes peeked 700 at a time: a super-segment runs out of
 * pieces (INET_TCP_SUPER_PIECES) long before 64 KiB and ends at a whole
 * segment, the rest following in the next one.
 */
static void scenario_short_pieces(void **state)
{
	struct harness *h = *state;
	const size_t n = 1u << 20;
	uint8_t *d = pattern(n, 71);
	struct peer p;
	struct app *a;

	peer_init_opts(&p, 46300, 0x7fff0000u);
	p.wnd = 0x2000;
	a = peer_connect(h, &p);
	a->peek_chunk = 700;
	app_queue(a, d, n);
	h_poll(h);
	while (p.rx_len < n) {
		assert_true(peer_rx(h, &p, false, 1448) > 0);
		p.tsval++;
		peer_ack(h, &p);
	}
	assert_memory_equal(p.rx, d, n);
	assert_int_equal(a->acked, n);
	free(d);
	peer_free(&p);
}

/*
 * Segmentation offload changes nothing on the wire: each scenario runs on a
 * stack without send_super and on one with it (the same seeds and clock),
 * and the frames sent, the super-segments cut as cb_send_super cuts them,
 * are the same bytes in the same order. The bulk scenarios must have sent
 * super-segments (windows of whole segments, a short tail in the receive
 * window, the congestion window's rounding), the loss ones go back segment by
 * segment as before.
 */
static void test_super_same_frames(void **state)
{
	static const struct {
		const char *name;
		void (*fn)(void **);
		bool supers;    /* must have used super-segments */
	} sc[] = {
		{ "bulk 1 MiB", test_bulk_send_1mib, true },
		{ "plain peer, whole window", test_plain_peer_whole_window, true },
		{ "scaled window", test_scaled_window_send, true },
		{ "scaled window, short peeks", scenario_short_pieces, true },
		{ "small window, short peeks", test_peer_window_limits_flight, false },
		{ "slow reader", test_slow_reader, false },
		{ "lost segment", test_retransmit_lost_segment, false },
		{ "SACK holes", test_sack_retransmits_holes, false },
		{ "SACK after a timeout", test_sack_timeout_skips_sacked, false },
		{ "timestamps", test_timestamps, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
		uint8_t *plain;
		size_t plain_len;
		unsigned calls0 = super_calls;

		for (int mode = 0; mode < 2; mode++) {
			struct harness *h = harness_new(mode == 1);
			void *st = h;

			assert_non_null(h);
			assert_non_null(h->t);
			rec_buf = NULL;
			rec_len = rec_cap = 0;
			recording = true;
			sc[i].fn(&st);
			recording = false;
			assert_int_equal(harness_free(h), 0);
			if (mode == 0) {
				plain = rec_buf;
				plain_len = rec_len;
				continue;
			}
			print_message("%s: %zu bytes of frames, %u super-segments\n", sc[i].name, rec_len,
				      super_calls - calls0);
			assert_int_equal(rec_len, plain_len);
			assert_memory_equal(rec_buf, plain, plain_len);
			free(rec_buf);
			free(plain);
		}
		if (sc[i].supers)
			assert_true(super_calls > calls0);
	}
	rec_buf = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_arp),
		T(test_arp_learn_moves_peer),
		T(test_icmp_echo),
		T(test_wants_frame),
		T(test_handshake),
		T(test_iss),
		T(test_synack_retransmit),
		T(test_segmentation_mss),
		T(test_bulk_send_1mib),
		T(test_peer_window_limits_flight),
		T(test_slow_reader),
		T(test_out_of_order_dropped),
		T(test_duplicate_and_overlap),
		T(test_deferred_acks),
		T(test_output_waits_for_batch),
		T(test_slow_start_over_a_batch),
		T(test_plain_peer_whole_window),
		T(test_retransmit_lost_segment),
		T(test_retransmit_gives_up),
		T(test_zero_window_persist),
		T(test_keepalive),
		T(test_peer_closes_first),
		T(test_fin_after_buffered_data),
		T(test_we_close_first_time_wait_reuse),
		T(test_time_wait_expires),
		T(test_time_wait_slots_recycled),
		T(test_fin_wait_2_bounded),
		T(test_rst_unknown),
	T(test_no_listener),
		T(test_rst_from_peer),
		T(test_open_refused),
		T(test_ninth_connection_refused),
		T(test_option_negotiation),
		T(test_options_not_negotiated_ignored),
		T(test_scaled_window_send),
		T(test_scaled_window_receive),
		T(test_sack_blocks),
		T(test_sack_retransmits_holes),
		T(test_newreno_fast_retransmit),
		T(test_sack_timeout_skips_sacked),
		T(test_timestamps),
		T(test_buffer_bounded),
		T(test_bad_checksums),
		T(test_bad_ip),
		T(test_bad_tcp),
		T(test_truncated_frames),
		T(test_garbage),
		T(test_fuzz),
		cmocka_unit_test(test_super_same_frames),
#undef T
	};
	struct CMUnitTest super[sizeof(tests) / sizeof(tests[0])];
	int rc;

	/* Everything again on a stack with segmentation offload (send_super): the same outcomes. */
	memcpy(super, tests, sizeof(tests));
	for (size_t i = 0; i < sizeof(super) / sizeof(super[0]); i++)
		if (super[i].setup_func == setup)
			super[i].setup_func = setup_super;
	rc = cmocka_run_group_tests_name("s3-tcp-unit", tests, NULL, NULL);
	return rc | cmocka_run_group_tests_name("s3-tcp-unit (segmentation offload)", super, NULL, NULL);
}
