/*
 * roce-rc-unit: the RC responder of src/fabric/roce_rc.c against a fake
 * owner (a receive queue of fixed-size buffers and memory regions keyed by
 * R_Key). Requests are built with roce_build() and parsed with roce_parse()
 * as a device would receive them; every frame the responder sends is parsed
 * with roce_parse() too, and the tests assert on its wire fields and on the
 * memory and receive buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>

#include "fabric/roce_rc.h"
#include "roce_fake.h"

#define MTU 256
#define RQPN 0x000321
#define LQPN 0x000654
#define PKEY 0xffff
#define SPORT 0xc0de
#define RNR_TIMER 12

/* ---- the fake owner ---- */

#define NMR 3
#define MR_LEN 8192
#define RQ_MAX 64
#define RQ_BUF 2048
#define FRAMES 64

struct mr {
	uint8_t buf[MR_LEN];
};

struct cqe_rec {
	uint64_t handle;
	struct roce_rc_recv_cqe c;
};

struct fake {
	struct mr mr[NMR];
	struct roce_fake_mem mem;        /* R_Key 0x1000 + i at 0x100000 * (i + 1) over mr[i].buf */
	/* receive queue: posted[taken .. posted) are available */
	uint32_t rq_cap[RQ_MAX];
	uint8_t rq_buf[RQ_MAX][RQ_BUF];
	unsigned posted, taken;
	struct cqe_rec cqe[RQ_MAX];
	unsigned ncqe;
	/* sent frames, each checked by roce_parse() on arrival; a ring in the random test */
	uint8_t frame[FRAMES][ROCE_RC_FRAME_MAX];
	size_t flen[FRAMES];
	unsigned nframes;
	bool ring;
	unsigned atomics, invalidates;
	uint32_t inv_rkey;
	int invalidate_fails;
	unsigned peeks, peeks_refused, pieces; /* mem_peek and send_pieces (test_read_in_place) */
};

static struct fake F;

static bool f_recv_take(void *ctx, uint64_t *h)
{
	struct fake *f = ctx;

	if (f->taken == f->posted)
		return false;
	*h = f->taken++;
	return true;
}

static int f_recv_write(void *ctx, uint64_t h, uint32_t off, const void *data, uint32_t len)
{
	struct fake *f = ctx;

	assert_true(h < f->posted);
	if (off > f->rq_cap[h] || len > f->rq_cap[h] - off)
		return -1;
	memcpy(f->rq_buf[h] + off, data, len);
	return 0;
}

static void f_recv_complete(void *ctx, uint64_t h, const struct roce_rc_recv_cqe *c)
{
	struct fake *f = ctx;

	assert_true(h < f->taken);
	assert_true(f->ncqe < RQ_MAX);
	for (unsigned i = 0; i < f->ncqe; i++)
		assert_true(f->cqe[i].handle != h);     /* each receive completes once */
	f->cqe[f->ncqe].handle = h;
	f->cqe[f->ncqe].c = *c;
	f->ncqe++;
}

static int f_mem_write(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	struct fake *f = ctx;

	return roce_fake_mem_write(&f->mem, rkey, va, data, len);
}

static int f_mem_read(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	struct fake *f = ctx;

	return roce_fake_mem_read(&f->mem, rkey, va, buf, len);
}

static int f_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		    uint64_t *orig)
{
	struct fake *f = ctx;

	assert_int_equal(va & 7, 0);
	if (roce_fake_mem_atomic(&f->mem, rkey, va, cmp_swap, swap_add, compare, orig) != 0)
		return -1;
	f->atomics++;
	return 0;
}

static int f_invalidate(void *ctx, uint32_t rkey)
{
	struct fake *f = ctx;

	if (f->invalidate_fails)
		return -1;
	f->invalidates++;
	f->inv_rkey = rkey;
	return 0;
}

static void f_send_frame(void *ctx, uint8_t *frame, size_t len)
{
	struct fake *f = ctx;
	struct roce_pkt p;
	unsigned i;

	assert_true(len <= ROCE_RC_FRAME_MAX);
	/* Every frame the responder sends must be one roce_parse() accepts, addressed back to us. */
	assert_int_equal(roce_parse(frame, len, MTU, &p), ROCE_OK);
	assert_false(p.op->request);
	assert_int_equal(roce_bth_dqpn(p.bth), RQPN);
	assert_int_equal(be16_get(p.udp->sport), SPORT);
	assert_int_equal(roce_bth_pkey(p.bth), PKEY);
	assert_int_equal(be32_get(p.ip->dst), 0x0a000001);
	assert_int_equal(be32_get(p.ip->src), 0x0a000002);
	assert_int_equal(p.eth->dst[5], 0x01);
	assert_int_equal(p.eth->src[5], 0x02);
	if (f->ring) {
		i = f->nframes % FRAMES;
	} else {
		assert_true(f->nframes < FRAMES);
		i = f->nframes;
	}
	memcpy(f->frame[i], frame, len);
	f->flen[i] = len;
	f->nframes++;
}

static const struct roce_rc_ops fake_ops = {
	.recv_take = f_recv_take,
	.recv_write = f_recv_write,
	.recv_complete = f_recv_complete,
	.mem_write = f_mem_write,
	.mem_read = f_mem_read,
	.atomic = f_atomic,
	.invalidate = f_invalidate,
	.send_frame = f_send_frame,
};

/* Region i's bytes where they lie, but not every third time (then mem_read copies them). */
static const void *f_mem_peek(void *ctx, uint32_t rkey, uint64_t va, uint32_t len)
{
	struct fake *f = ctx;
	unsigned i = rkey - 0x1000;
	uint64_t base = 0x100000ull * (i + 1);

	assert_true(len > 0 && len <= MTU);
	if (f->peeks++ % 3 == 2 || i >= NMR || va < base || va - base > MR_LEN || len > MR_LEN - (va - base)) {
		f->peeks_refused++;
		return NULL;
	}
	return f->mr[i].buf + (va - base);
}

/* The pieces joined, then checked as any frame the responder sends. */
static void f_send_pieces(void *ctx, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			  const uint8_t *trailer, size_t tlen)
{
	struct fake *f = ctx;
	uint8_t buf[ROCE_RC_FRAME_MAX];
	size_t len = roce_fake_join(buf, sizeof(buf), hdr, hlen, payload, plen, trailer, tlen);

	assert_true(len > 0);
	f->pieces++;
	f_send_frame(ctx, buf, len);
}

static const struct roce_rc_ops fake_ops_in_place = {
	.recv_take = f_recv_take, .recv_write = f_recv_write, .recv_complete = f_recv_complete,
	.mem_write = f_mem_write, .mem_read = f_mem_read, .atomic = f_atomic, .invalidate = f_invalidate,
	.send_frame = f_send_frame, .mem_peek = f_mem_peek, .send_pieces = f_send_pieces,
};

static void post_recv(uint32_t cap)
{
	assert_true(F.posted < RQ_MAX && cap <= RQ_BUF);
	F.rq_cap[F.posted++] = cap;
}

static void setup_qp_type(struct roce_rc_resp *q, uint32_t epsn, bool uc)
{
	struct roce_rc_resp_cfg cfg = {
		.ops = &fake_ops, .ctx = &F, .rqpn = RQPN, .epsn = epsn, .pkey = PKEY, .pmtu = MTU,
		.min_rnr_timer = RNR_TIMER, .sport = SPORT, .tos = 0, .ttl = 0, .uc = uc,
	};

	memset(&F, 0, sizeof(F));
	for (unsigned i = 0; i < NMR; i++) {
		assert_non_null(roce_fake_mem_attach(&F.mem, 0x1000 + i, 0x100000ull * (i + 1), F.mr[i].buf, MR_LEN,
						     ROCE_FAKE_ALL));
		for (unsigned j = 0; j < MR_LEN; j++)
			F.mr[i].buf[j] = (uint8_t)(j * 13 + i);
	}
	assert_int_equal(roce_rc_resp_init(q, &cfg), 0);
}

static void setup_qp(struct roce_rc_resp *q, uint32_t epsn)
{
	setup_qp_type(q, epsn, false);
}

/* ---- requests ---- */

static uint8_t payload_src[4096];

static void fill_payload(unsigned seed)
{
	for (size_t i = 0; i < sizeof(payload_src); i++)
		payload_src[i] = (uint8_t)(i * 7 + seed);
}

static struct roce_frame_desc req(uint8_t opcode, uint32_t psn, uint32_t plen)
{
	struct roce_frame_desc d = {
		.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
		.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
		.src_ip = 0x0a000001, .dst_ip = 0x0a000002,
		.ttl = 64, .df = true, .sport = 0x1234,
		.opcode = opcode, .pkey = PKEY, .dqpn = LQPN, .psn = psn & ROCE_PSN_MASK,
		.payload = payload_src, .payload_len = plen,
	};

	d.pad = (uint8_t)((4 - plen % 4) % 4);
	return d;
}

/* The packet d describes, into the responder; what it owes stays in its outbox. */
static enum roce_rc_in feed_held(struct roce_rc_resp *q, const struct roce_frame_desc *d)
{
	uint8_t f[ROCE_RC_FRAME_MAX];
	struct roce_pkt p;
	size_t len;

	assert_int_equal(roce_build(d, f, sizeof(f), &len), ROCE_OK);
	assert_int_equal(roce_parse(f, len, MTU, &p), ROCE_OK);
	return roce_rc_resp_input(q, &p);
}

/* The same, and everything owed sent (the owner paces the outbox; here the wire takes all of it). */
static enum roce_rc_in feed(struct roce_rc_resp *q, const struct roce_frame_desc *d)
{
	enum roce_rc_in v = feed_held(q, d);

	roce_rc_resp_pump(q, UINT_MAX);
	assert_false(roce_rc_resp_pending(q));
	return v;
}

static enum roce_rc_in feed_op(struct roce_rc_resp *q, uint8_t opcode, uint32_t psn, uint32_t plen)
{
	struct roce_frame_desc d = req(opcode, psn, plen);

	return feed(q, &d);
}

static enum roce_rc_in feed_reth(struct roce_rc_resp *q, uint8_t opcode, uint32_t psn, uint32_t plen, uint32_t rkey,
				 uint64_t va, uint32_t len)
{
	struct roce_frame_desc d = req(opcode, psn, plen);

	d.reth.rkey = rkey;
	d.reth.va = va;
	d.reth.len = len;
	return feed(q, &d);
}

static enum roce_rc_in feed_atomic(struct roce_rc_resp *q, uint8_t opcode, uint32_t psn, uint32_t rkey, uint64_t va,
				   uint64_t swap_add, uint64_t compare)
{
	struct roce_frame_desc d = req(opcode, psn, 0);

	d.atomic.rkey = rkey;
	d.atomic.va = va;
	d.atomic.swap_add = swap_add;
	d.atomic.compare = compare;
	return feed(q, &d);
}

/* ---- looking at what was sent ---- */

static struct roce_pkt sent(unsigned i)
{
	struct roce_pkt p;

	assert_true(i < F.nframes);
	assert_int_equal(roce_parse(F.frame[i], F.flen[i], MTU, &p), ROCE_OK);
	return p;
}

static void expect_aeth(unsigned i, uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t msn)
{
	struct roce_pkt p = sent(i);

	assert_int_equal(p.bth->opcode, opcode);
	assert_int_equal(roce_bth_psn(p.bth), psn);
	assert_non_null(p.aeth);
	assert_int_equal(roce_aeth_syndrome(p.aeth), syndrome);
	assert_int_equal(roce_aeth_msn(p.aeth), msn);
}

static void expect_ack(unsigned i, uint32_t psn, uint32_t msn)
{
	expect_aeth(i, ROCE_RC_ACKNOWLEDGE, psn, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), msn);
}

static void expect_nak(unsigned i, uint32_t psn, enum roce_nak code, uint32_t msn)
{
	expect_aeth(i, ROCE_RC_ACKNOWLEDGE, psn, roce_syn_nak(code), msn);
}

static uint64_t mr_u64(unsigned m, uint64_t off)
{
	uint64_t v;

	memcpy(&v, F.mr[m].buf + off, 8);
	return v;
}

static void set_mr_u64(unsigned m, uint64_t off, uint64_t v)
{
	memcpy(F.mr[m].buf + off, &v, 8);
}

/* ---- SEND ---- */

static void test_send_only(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 100);
	fill_payload(1);
	post_recv(1024);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 100, 101), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(F.cqe[0].c.byte_len, 101);
	assert_false(F.cqe[0].c.has_imm);
	assert_false(F.cqe[0].c.has_inv);
	assert_memory_equal(F.rq_buf[0], payload_src, 101);
	/* the end of a message is always ACKed, AckReq or not */
	assert_int_equal(F.nframes, 1);
	expect_ack(0, 100, 1);
	assert_int_equal(q.epsn, 101);
	assert_int_equal(q.msn, 1);
	/* an empty SEND is a message too */
	post_recv(16);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 101, 0), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.cqe[1].c.byte_len, 0);
	expect_ack(1, 101, 2);
}

static void test_send_multi_imm(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp(&q, 0x1000);
	fill_payload(2);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 0x1000, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 0);        /* no AckReq, not the end: no ACK */
	assert_int_equal(F.ncqe, 0);
	d = req(ROCE_RC_SEND_MIDDLE, 0x1001, MTU);
	d.payload = payload_src + MTU;
	d.ackreq = true;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 1);        /* AckReq: ACKed, MSN still 0 */
	expect_ack(0, 0x1001, 0);
	d = req(ROCE_RC_SEND_LAST_WITH_IMMEDIATE, 0x1002, 50);
	d.payload = payload_src + 2 * MTU;
	d.imm = 0xfeedf00d;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 2);
	expect_ack(1, 0x1002, 1);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(F.cqe[0].c.byte_len, 2 * MTU + 50);
	assert_true(F.cqe[0].c.has_imm);
	assert_int_equal(F.cqe[0].c.imm, 0xfeedf00d);
	assert_memory_equal(F.rq_buf[0], payload_src, 2 * MTU + 50);
	assert_int_equal(F.taken, 1);
	assert_int_equal(q.epsn, 0x1003);
}

static void test_send_with_invalidate(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp(&q, 0);
	fill_payload(3);
	post_recv(64);
	d = req(ROCE_RC_SEND_ONLY_WITH_INVALIDATE, 0, 8);
	d.ieth_rkey = 0x1002;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.invalidates, 1);
	assert_int_equal(F.inv_rkey, 0x1002);
	assert_true(F.cqe[0].c.has_inv);
	assert_int_equal(F.cqe[0].c.inv_rkey, 0x1002);
	expect_ack(0, 0, 1);
	/* an R_Key that cannot be invalidated: invalid request, the receive completes in error */
	post_recv(64);
	F.invalidate_fails = 1;
	d.psn = 1;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_FATAL_NAK);
	expect_nak(1, 1, ROCE_NAK_INVALID_REQ, 1);
	assert_int_equal(F.cqe[1].c.status, ROCE_RC_WC_LOC_QP_OP_ERR);
	assert_int_equal(F.cqe[1].c.byte_len, 8);
	assert_true(roce_rc_resp_in_error(&q));
}

/* ---- RDMA WRITE ---- */

static void test_write_only(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 7);
	fill_payload(4);
	post_recv(64);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 7, 200, 0x1001, 0x200008, 200), ROCE_RC_IN_EXECUTED);
	assert_memory_equal(F.mr[1].buf + 8, payload_src, 200);
	assert_int_equal(F.mr[1].buf[7], (uint8_t)(7 * 13 + 1));        /* untouched around it */
	assert_int_equal(F.mr[1].buf[208], (uint8_t)(208 * 13 + 1));
	assert_int_equal(F.taken, 0);          /* no immediate: no receive */
	assert_int_equal(F.ncqe, 0);
	expect_ack(0, 7, 1);
	/* zero length: no memory touched, the R_Key not even looked at */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 8, 0, 0xdead, 0, 0), ROCE_RC_IN_EXECUTED);
	expect_ack(1, 8, 2);
	assert_false(roce_rc_resp_in_error(&q));
}

static void test_write_multi_imm(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp(&q, 50);
	fill_payload(5);
	post_recv(0);          /* WRITE with immediate carries no data into the receive */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 50, MTU, 0x1000, 0x100010, 600), ROCE_RC_IN_EXECUTED);
	d = req(ROCE_RC_RDMA_WRITE_MIDDLE, 51, MTU);
	d.payload = payload_src + MTU;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.taken, 0);          /* the receive is only taken by the LAST */
	d = req(ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 52, 600 - 2 * MTU);
	d.payload = payload_src + 2 * MTU;
	d.imm = 0x11223344;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_memory_equal(F.mr[0].buf + 0x10, payload_src, 600);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(F.cqe[0].c.byte_len, 600);
	assert_true(F.cqe[0].c.has_imm);
	assert_int_equal(F.cqe[0].c.imm, 0x11223344);
	assert_int_equal(F.nframes, 1);
	expect_ack(0, 52, 1);
	assert_int_equal(q.epsn, 53);
}

static void test_write_longer_than_reth(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	/* a MIDDLE beyond the DMA length */
	setup_qp(&q, 0);
	fill_payload(6);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 0, MTU, 0x1000, 0x100000, 300), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_MIDDLE, 1, MTU), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 1, ROCE_NAK_INVALID_REQ, 0);
	assert_true(roce_rc_resp_in_error(&q));
	/* a LAST that ends short of it */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 0, MTU, 0x1000, 0x100000, 600), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_LAST, 1, 4), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 1, ROCE_NAK_INVALID_REQ, 0);
	/* an ONLY whose payload is not its DMA length */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 0, 100, 0x1000, 0x100000, 50), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_INVALID_REQ, 0);
	assert_int_equal(F.mr[0].buf[0], 0);   /* nothing written */
	/* a DMA length beyond the largest message */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 0, MTU, 0x1000, 0x100000, 0x80000001u),
			 ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_INVALID_REQ, 0);
	/* a range that wraps the address space */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 0, 16, 0x1000, UINT64_MAX - 8, 16),
			 ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_REM_ACCESS_ERR, 0);
}

/* ---- RDMA READ ---- */

static void test_read(void **state)
{
	struct roce_rc_resp q;
	struct roce_pkt p;
	const uint32_t len = MTU * 5 / 2;

	(void)state;
	setup_qp(&q, 500);
	post_recv(64);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 500, 4), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 501, 0, 0x1002, 0x300020, len), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 4);
	/* FIRST and LAST carry the AETH (MSN counting the READ), MIDDLE none; one PSN each */
	expect_aeth(1, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 501, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 2);
	p = sent(1);
	assert_int_equal(p.payload_len, MTU);
	assert_memory_equal(p.payload, F.mr[2].buf + 0x20, MTU);
	p = sent(2);
	assert_int_equal(p.bth->opcode, ROCE_RC_RDMA_READ_RESPONSE_MIDDLE);
	assert_int_equal(roce_bth_psn(p.bth), 502);
	assert_null(p.aeth);
	assert_int_equal(p.payload_len, MTU);
	assert_memory_equal(p.payload, F.mr[2].buf + 0x20 + MTU, MTU);
	expect_aeth(3, ROCE_RC_RDMA_READ_RESPONSE_LAST, 503, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 2);
	p = sent(3);
	assert_int_equal(p.payload_len, MTU / 2);
	assert_memory_equal(p.payload, F.mr[2].buf + 0x20 + 2 * MTU, MTU / 2);
	/* ePSN moved past the three responses */
	assert_int_equal(q.epsn, 504);
	assert_int_equal(q.msn, 2);
	/* a READ that fits one packet: ONLY; an empty READ: ONLY without payload and no key check */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 504, 0, 0x1000, 0x100000, 3), ROCE_RC_IN_EXECUTED);
	expect_aeth(4, ROCE_RC_RDMA_READ_RESPONSE_ONLY, 504, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 3);
	assert_int_equal(sent(4).payload_len, 3);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 505, 0, 0xdead, 0, 0), ROCE_RC_IN_EXECUTED);
	expect_aeth(5, ROCE_RC_RDMA_READ_RESPONSE_ONLY, 505, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 4);
	assert_int_equal(sent(5).payload_len, 0);
	assert_int_equal(q.epsn, 506);
}

/*
 * READ responses whose payload is read where it lies (mem_peek) go in pieces, mixed with ones
 * copied (every third peek refused): the same responses, byte for byte, as test_read's; a
 * responder given one of the two callbacks without the other is refused.
 */
static void test_read_in_place(void **state)
{
	struct roce_rc_resp q;
	struct roce_rc_resp_cfg cfg = {
		.ops = &fake_ops_in_place, .ctx = &F, .rqpn = RQPN, .epsn = 501, .pkey = PKEY, .pmtu = MTU,
		.min_rnr_timer = RNR_TIMER, .sport = SPORT,
	};
	const uint32_t len = MTU * 11 / 2 + 1; /* six packets, the last 129 bytes with its pad */

	(void)state;
	setup_qp(&q, 501);
	assert_int_equal(roce_rc_resp_init(&q, &cfg), 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 501, 0, 0x1002, 0x300020, len), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 6);
	for (unsigned k = 0; k < 6; k++) {
		struct roce_pkt p = sent(k);

		assert_int_equal(roce_bth_psn(p.bth), 501 + k);
		assert_int_equal(p.bth->opcode, k == 0 ? ROCE_RC_RDMA_READ_RESPONSE_FIRST
					       : k == 5 ? ROCE_RC_RDMA_READ_RESPONSE_LAST : ROCE_RC_RDMA_READ_RESPONSE_MIDDLE);
		assert_int_equal(p.payload_len, k < 5 ? MTU : len - 5 * MTU);
		assert_memory_equal(p.payload, F.mr[2].buf + 0x20 + k * MTU, p.payload_len);
	}
	assert_int_equal(F.peeks, 6);
	assert_int_equal(F.peeks_refused, 2);
	assert_int_equal(F.pieces, 4);
	assert_int_equal(q.frames_in_place, 4);
	assert_int_equal(q.epsn, 507);
	{
		struct roce_rc_ops half = fake_ops_in_place;

		half.send_pieces = NULL;
		cfg.ops = &half;
		assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
		half = fake_ops_in_place;
		half.mem_peek = NULL;
		assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
	}
}

static void test_read_bad_rkey(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 9);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 9, 0, 0x7777, 0x100000, 64), ROCE_RC_IN_FATAL_NAK);
	assert_int_equal(F.nframes, 1);
	expect_nak(0, 9, ROCE_NAK_REM_ACCESS_ERR, 0);
	/* a READ running off the end of its region: refused whole before any response, NAK at its PSN */
	setup_qp(&q, 9);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 9, 0, 0x1000, 0x100000 + MR_LEN - MTU, 2 * MTU),
			 ROCE_RC_IN_FATAL_NAK);
	assert_int_equal(F.nframes, 1);
	expect_nak(0, 9, ROCE_NAK_REM_ACCESS_ERR, 0);
	assert_true(roce_rc_resp_in_error(&q));
}

/*
 * The region goes while a READ's responses are leaving (they leave at the owner's pace): the
 * responses before the fault went, then the NAK at the PSN of the one that could not be read,
 * carrying the MSN before the READ; the QP is in error and nothing more is sent.
 */
static void test_read_region_gone(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp(&q, 9);
	d = req(ROCE_RC_RDMA_READ_REQUEST, 9, 0);
	d.reth.rkey = 0x1000;
	d.reth.va = 0x100000;
	d.reth.len = 3 * MTU;
	assert_int_equal(feed_held(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 0); /* nothing before the owner lets it out */
	assert_true(roce_rc_resp_pending(&q));
	assert_int_equal(roce_rc_resp_pump(&q, 1), 1);
	F.mem.mr[0].valid = false;
	assert_int_equal(roce_rc_resp_pump(&q, 10), 1);
	assert_int_equal(F.nframes, 2);
	assert_int_equal(sent(0).bth->opcode, ROCE_RC_RDMA_READ_RESPONSE_FIRST);
	expect_nak(1, 10, ROCE_NAK_REM_ACCESS_ERR, 0);
	assert_true(roce_rc_resp_in_error(&q));
	assert_false(roce_rc_resp_pending(&q));
	assert_int_equal(roce_rc_resp_pump(&q, 10), 0);
	F.mem.mr[0].valid = true;
}

/*
 * Responses leave in PSN order: what the responder answers after a READ waits behind the READ's
 * responses (a requester takes an ACK of a later PSN as the loss of the READ responses before
 * it). A READ of 3 MTUs, two SENDs and an atomic arrive before any response has left: the outbox
 * sends the three READ responses, one ACK for both SENDs (the later positive ACK stands in for the
 * earlier), then the ATOMIC ACKNOWLEDGE, each AETH with the MSN of its own time. A duplicate of
 * the READ while its responses are still owed adds nothing; once they have gone, the part asked
 * again goes again (as a READ of its own) and is counted as lost on the way.
 */
static void test_outbox_order(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;
	const uint8_t ack = roce_syn_ack(ROCE_AETH_CREDITS_INVALID);

	(void)state;
	setup_qp(&q, 100);
	post_recv(64);
	post_recv(64);
	d = req(ROCE_RC_RDMA_READ_REQUEST, 100, 0);
	d.reth.rkey = 0x1000;
	d.reth.va = 0x100000;
	d.reth.len = 3 * MTU;
	assert_int_equal(feed_held(&q, &d), ROCE_RC_IN_EXECUTED);
	d = req(ROCE_RC_SEND_ONLY, 103, 16);
	assert_int_equal(feed_held(&q, &d), ROCE_RC_IN_EXECUTED);
	d = req(ROCE_RC_SEND_ONLY, 104, 16);
	assert_int_equal(feed_held(&q, &d), ROCE_RC_IN_EXECUTED);
	d = req(ROCE_RC_FETCH_ADD, 105, 0);
	d.atomic.va = 0x100000;
	d.atomic.rkey = 0x1000;
	d.atomic.swap_add = 1;
	assert_int_equal(feed_held(&q, &d), ROCE_RC_IN_EXECUTED);
	/* The READ asked again from its second response, before any went: nothing new is owed. */
	d = req(ROCE_RC_RDMA_READ_REQUEST, 101, 0);
	d.reth.rkey = 0x1000;
	d.reth.va = 0x100000 + MTU;
	d.reth.len = 2 * MTU;
	assert_int_equal(feed_held(&q, &d), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(q.read_again, 0);
	assert_int_equal(F.nframes, 0);
	assert_int_equal(roce_rc_resp_pump(&q, UINT_MAX), 5);
	assert_int_equal(F.nframes, 5);
	expect_aeth(0, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 100, ack, 1);
	assert_int_equal(sent(1).bth->opcode, ROCE_RC_RDMA_READ_RESPONSE_MIDDLE);
	assert_int_equal(roce_bth_psn(sent(1).bth), 101);
	expect_aeth(2, ROCE_RC_RDMA_READ_RESPONSE_LAST, 102, ack, 1);
	expect_aeth(3, ROCE_RC_ACKNOWLEDGE, 104, ack, 3);
	expect_aeth(4, ROCE_RC_ATOMIC_ACKNOWLEDGE, 105, ack, 4);
	/* Asked again after the responses went: they go again from there, counted as lost. */
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(q.read_again, 1);
	assert_int_equal(F.nframes, 7);
	expect_aeth(5, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 101, ack, 4);
	expect_aeth(6, ROCE_RC_RDMA_READ_RESPONSE_LAST, 102, ack, 4);
	assert_int_equal(F.ncqe, 2);
}


/*
 * A READ asked for again after its responses had gone, while a later READ's
 * responses are leaving: the READ asked for goes first, and what remained of
 * the later one, and the ACK behind it, are dropped; the requester, gone back,
 * asks for them again and they go then, in order.
 */
static void test_read_again_first(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc r1, r2;
	const uint8_t ack = roce_syn_ack(ROCE_AETH_CREDITS_INVALID);

	(void)state;
	setup_qp(&q, 200);
	post_recv(64);
	r1 = req(ROCE_RC_RDMA_READ_REQUEST, 200, 0);
	r1.reth.rkey = 0x1000;
	r1.reth.va = 0x100000;
	r1.reth.len = 2 * MTU;
	assert_int_equal(feed_held(&q, &r1), ROCE_RC_IN_EXECUTED);
	r2 = req(ROCE_RC_RDMA_READ_REQUEST, 202, 0);
	r2.reth.rkey = 0x1000;
	r2.reth.va = 0x100000 + 4 * MTU;
	r2.reth.len = 3 * MTU;
	assert_int_equal(feed_held(&q, &r2), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 205, 8), ROCE_RC_IN_EXECUTED);
	/* that pumped everything; a second round, pumped in part */
	F.nframes = 0;
	r1.psn = 201;
	r1.reth.va = 0x100000 + MTU;
	r1.reth.len = MTU;
	assert_int_equal(feed_held(&q, &r1), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(q.read_again, 1);
	assert_int_equal(feed_held(&q, &r2), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(q.read_again, 2);
	assert_int_equal(roce_rc_resp_pump(&q, 2), 2);
	expect_aeth(0, ROCE_RC_RDMA_READ_RESPONSE_ONLY, 201, ack, 3);
	expect_aeth(1, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 202, ack, 3);
	/* READ 1 asked for again while READ 2's responses leave: it goes next, READ 2 waits to be asked */
	r1.psn = 200;
	r1.reth.va = 0x100000;
	r1.reth.len = 2 * MTU;
	assert_int_equal(feed_held(&q, &r1), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(q.read_again, 3);
	assert_int_equal(q.out_dropped, 1);
	assert_int_equal(roce_rc_resp_pump(&q, UINT_MAX), 2);
	expect_aeth(2, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 200, ack, 3);
	assert_memory_equal(sent(2).payload, F.mr[0].buf, MTU);
	expect_aeth(3, ROCE_RC_RDMA_READ_RESPONSE_LAST, 201, ack, 3);
	assert_false(roce_rc_resp_pending(&q));
	/* the requester goes on from there: READ 2 whole, the SEND's ACK again */
	assert_int_equal(feed_held(&q, &r2), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 205, 8), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(F.nframes, 8);
	expect_aeth(4, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 202, ack, 3);
	assert_memory_equal(sent(4).payload, F.mr[0].buf + 4 * MTU, MTU);
	assert_int_equal(roce_bth_psn(sent(5).bth), 203);
	expect_aeth(6, ROCE_RC_RDMA_READ_RESPONSE_LAST, 204, ack, 3);
	expect_ack(7, 205, 3);
	assert_int_equal(F.ncqe, 1);
}


/* ---- atomics ---- */

static void test_atomics(void **state)
{
	struct roce_rc_resp q;
	struct roce_pkt p;

	(void)state;
	setup_qp(&q, 30);
	set_mr_u64(1, 0x40, 5);
	/* CMP_SWAP that matches: swapped, the old value returned */
	assert_int_equal(feed_atomic(&q, ROCE_RC_COMPARE_SWAP, 30, 0x1001, 0x200040, 99, 5), ROCE_RC_IN_EXECUTED);
	expect_aeth(0, ROCE_RC_ATOMIC_ACKNOWLEDGE, 30, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 1);
	p = sent(0);
	assert_non_null(p.atomic_ack);
	assert_int_equal(be64_get(p.atomic_ack->orig), 5);
	assert_int_equal(mr_u64(1, 0x40), 99);
	/* CMP_SWAP that does not: unchanged, the current value returned */
	assert_int_equal(feed_atomic(&q, ROCE_RC_COMPARE_SWAP, 31, 0x1001, 0x200040, 7, 5), ROCE_RC_IN_EXECUTED);
	assert_int_equal(be64_get(sent(1).atomic_ack->orig), 99);
	assert_int_equal(mr_u64(1, 0x40), 99);
	/* FETCH_ADD */
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 32, 0x1001, 0x200040, 0x100000000ull, 0), ROCE_RC_IN_EXECUTED);
	expect_aeth(2, ROCE_RC_ATOMIC_ACKNOWLEDGE, 32, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 3);
	assert_int_equal(be64_get(sent(2).atomic_ack->orig), 99);
	assert_int_equal(mr_u64(1, 0x40), 0x100000000ull + 99);
	assert_int_equal(F.atomics, 3);
	/* the first CMP_SWAP again: its saved result, memory not touched, MSN unchanged */
	assert_int_equal(feed_atomic(&q, ROCE_RC_COMPARE_SWAP, 30, 0x1001, 0x200040, 99, 5), ROCE_RC_IN_DUPLICATE);
	expect_aeth(3, ROCE_RC_ATOMIC_ACKNOWLEDGE, 30, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 3);
	assert_int_equal(be64_get(sent(3).atomic_ack->orig), 5);
	/* and the FETCH_ADD again */
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 32, 0x1001, 0x200040, 0x100000000ull, 0), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(be64_get(sent(4).atomic_ack->orig), 99);
	assert_int_equal(F.atomics, 3);
	assert_int_equal(mr_u64(1, 0x40), 0x100000000ull + 99);
	assert_int_equal(q.epsn, 33);
}

static void test_atomic_errors(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 0);
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 0, 0x1000, 0x100004, 1, 0), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_INVALID_REQ, 0);
	assert_int_equal(F.atomics, 0);
	setup_qp(&q, 0);
	assert_int_equal(feed_atomic(&q, ROCE_RC_COMPARE_SWAP, 0, 0x4444, 0x100000, 1, 0), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_REM_ACCESS_ERR, 0);
	/* a duplicate atomic that was never executed */
	setup_qp(&q, 10);
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 5, 0x1000, 0x100000, 1, 0), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 5, ROCE_NAK_INVALID_REQ, 0);
	assert_int_equal(F.atomics, 0);
}

/* ---- duplicates ---- */

static void test_duplicate_send(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 10);
	fill_payload(7);
	post_recv(64);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 10, 12), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 10, 12), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(F.ncqe, 1);           /* delivered once */
	assert_int_equal(F.taken, 1);
	assert_int_equal(F.nframes, 2);
	expect_ack(1, 10, 1);                  /* PSN ePSN - 1, current MSN */
	/* an older duplicate gets the same answer: everything before ePSN was received */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 5, 4, 0x1000, 0x100000, 4), ROCE_RC_IN_DUPLICATE);
	expect_ack(2, 10, 1);
	assert_int_equal(F.mr[0].buf[0], 0);   /* not written */
	/* a duplicate in the middle of a multi-packet SEND does not disturb it */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 11, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 11, MTU), ROCE_RC_IN_DUPLICATE);
	expect_ack(3, 11, 1);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_LAST, 12, 4), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 2);
	assert_int_equal(F.cqe[1].c.byte_len, MTU + 4);
	assert_int_equal(q.stats[ROCE_RC_IN_DUPLICATE], 3);
}

static void test_duplicate_read(void **state)
{
	struct roce_rc_resp q;
	struct roce_pkt p;

	(void)state;
	setup_qp(&q, 20);
	post_recv(64);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 20, 0, 0x1001, 0x200100, MTU + 44), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 22, 4), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 3);
	/* memory changes after the first answer: a duplicate READ reads it again */
	F.mr[1].buf[0x100] = 0xee;
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 20, 0, 0x1001, 0x200100, MTU + 44), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(F.nframes, 5);
	expect_aeth(3, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 20, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 2);
	p = sent(3);
	assert_int_equal(p.payload[0], 0xee);
	assert_memory_equal(p.payload, F.mr[1].buf + 0x100, MTU);
	expect_aeth(4, ROCE_RC_RDMA_READ_RESPONSE_LAST, 21, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 2);
	assert_memory_equal(sent(4).payload, F.mr[1].buf + 0x100 + MTU, 44);
	/* re-requested from its second response: the rest, as a READ of its own */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 21, 0, 0x1001, 0x200100 + MTU, 44),
			 ROCE_RC_IN_DUPLICATE);
	expect_aeth(5, ROCE_RC_RDMA_READ_RESPONSE_ONLY, 21, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 2);
	assert_memory_equal(sent(5).payload, F.mr[1].buf + 0x100 + MTU, 44);
	/* ePSN and MSN did not move */
	assert_int_equal(q.epsn, 23);
	assert_int_equal(q.msn, 2);
	assert_false(roce_rc_resp_in_error(&q));
	/* a duplicate READ beyond what the original covered */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 20, 0, 0x1001, 0x200100, MTU + 45),
			 ROCE_RC_IN_FATAL_NAK);
	expect_nak(6, 20, ROCE_NAK_INVALID_REQ, 2);
	/* a duplicate READ that was never executed (a SEND's PSN) */
	setup_qp(&q, 20);
	post_recv(64);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 20, 4), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 20, 0, 0x1001, 0x200100, 8), ROCE_RC_IN_FATAL_NAK);
	expect_nak(1, 20, ROCE_NAK_INVALID_REQ, 1);
}

/* ---- PSN sequence ---- */

static void test_out_of_order(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 0);
	for (unsigned i = 0; i < 8; i++)
		post_recv(64);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 2, 4), ROCE_RC_IN_SEQ_NAK);
	assert_int_equal(F.nframes, 1);
	expect_nak(0, 0, ROCE_NAK_PSN_SEQ_ERR, 0);      /* carries ePSN */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 3, 4), ROCE_RC_IN_SEQ_DROP);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 1, 4), ROCE_RC_IN_SEQ_DROP);
	assert_int_equal(F.nframes, 1);        /* exactly one NAK */
	assert_int_equal(F.taken, 0);
	assert_false(roce_rc_resp_in_error(&q));
	/* the ePSN packet is accepted, and so is what follows */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0, 4), ROCE_RC_IN_EXECUTED);
	expect_ack(1, 0, 1);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 1, 4), ROCE_RC_IN_EXECUTED);
	expect_ack(2, 1, 2);
	/* a new gap gets a new NAK */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 5, 4), ROCE_RC_IN_SEQ_NAK);
	expect_nak(3, 2, ROCE_NAK_PSN_SEQ_ERR, 2);
	/* the far edge of the window: 2^23 - 1 ahead is out of order, 2^23 ahead is a duplicate */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 2 + ROCE_RC_PSN_WINDOW - 1, 4), ROCE_RC_IN_SEQ_DROP);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 2 + ROCE_RC_PSN_WINDOW, 4), ROCE_RC_IN_DUPLICATE);
	expect_ack(4, 1, 2);
	assert_int_equal(F.ncqe, 2);
}

/*
 * A gap after SEND/WRITE packets that asked for no ACK: a positive ACK of
 * ePSN - 1 goes out before the sequence NAK (a requester still recovering
 * from an earlier NAK, as Linux rxe's, ignores a second NAK until something
 * positive arrives). Not when an ACK already covers ePSN - 1, and not after
 * a READ, whose PSNs only its responses may acknowledge.
 */
static void test_ack_before_nak(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp(&q, 0x100);
	post_recv(RQ_BUF);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 0x100, MTU), ROCE_RC_IN_EXECUTED);
	/*
	 * 0x101 executed, 0x102 lost: ACK 0x101, then the NAK for 0x102, and
	 * silence for later packets; the go-back executes 0x102 and 0x103 and
	 * loses 0x104: ACK 0x103, NAK 0x104.
	 */
	for (uint32_t k = 0; k < 2; k++) {
		const uint32_t psn = 0x101 + 2 * k;

		if (k == 1)
			assert_int_equal(feed_op(&q, ROCE_RC_SEND_MIDDLE, psn - 1, MTU), ROCE_RC_IN_EXECUTED);
		assert_int_equal(feed_op(&q, ROCE_RC_SEND_MIDDLE, psn, MTU), ROCE_RC_IN_EXECUTED);
		assert_int_equal(F.nframes, 2 * k);
		assert_int_equal(feed_op(&q, ROCE_RC_SEND_MIDDLE, psn + 2, MTU), ROCE_RC_IN_SEQ_NAK);
		assert_int_equal(feed_op(&q, ROCE_RC_SEND_MIDDLE, psn + 3, MTU), ROCE_RC_IN_SEQ_DROP);
		assert_int_equal(F.nframes, 2 * k + 2);
		expect_ack(2 * k, psn, 0);
		expect_nak(2 * k + 1, psn + 1, ROCE_NAK_PSN_SEQ_ERR, 0);
	}
	/* 0x104 with AckReq is ACKed itself: the next gap gets the NAK alone */
	d = req(ROCE_RC_SEND_MIDDLE, 0x104, MTU);
	d.ackreq = true;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 5);
	expect_ack(4, 0x104, 0);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_LAST, 0x106, 10), ROCE_RC_IN_SEQ_NAK);
	assert_int_equal(F.nframes, 6);
	expect_nak(5, 0x105, ROCE_NAK_PSN_SEQ_ERR, 0);
	/* the message ends (its LAST is ACKed); a SEND without a receive is refused (RNR): owes nothing */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_LAST, 0x105, 10), ROCE_RC_IN_EXECUTED);
	expect_ack(6, 0x105, 1);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0x106, 10), ROCE_RC_IN_EXECUTED);
	expect_ack(7, 0x106, 2);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0x107, 10), ROCE_RC_IN_RNR);
	assert_int_equal(F.nframes, 9);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0x108, 10), ROCE_RC_IN_SEQ_NAK);
	assert_int_equal(F.nframes, 10);
	expect_nak(9, 0x107, ROCE_NAK_PSN_SEQ_ERR, 2);
	/* WRITE packets owe an ACK as SEND packets do; a READ after them settles it */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 0x107, MTU, 0x1000, 0x100000, 2 * MTU),
			 ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0x109, 10), ROCE_RC_IN_SEQ_NAK);
	assert_int_equal(F.nframes, 12);
	expect_ack(10, 0x107, 2);
	expect_nak(11, 0x108, ROCE_NAK_PSN_SEQ_ERR, 2);
	d = req(ROCE_RC_RDMA_WRITE_LAST, 0x108, MTU);
	d.payload = payload_src + MTU;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	expect_ack(12, 0x108, 3);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 0x109, 0, 0x1000, 0x100000, 2 * MTU),
			 ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.nframes, 15);       /* two READ responses */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0x10c, 10), ROCE_RC_IN_SEQ_NAK);
	assert_int_equal(F.nframes, 16);
	expect_nak(15, 0x10b, ROCE_NAK_PSN_SEQ_ERR, 4);
}

static void test_psn_wrap(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	assert_int_equal(roce_psn_diff(0, 0xffffff), 1);
	assert_int_equal(roce_psn_diff(0xffffff, 0), -1);
	assert_int_equal(roce_psn_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(roce_psn_diff(0x800000, 0), -0x800000);
	assert_int_equal(roce_psn_add(0xffffff, 2), 1);

	setup_qp(&q, 0xfffffe);
	for (unsigned i = 0; i < 8; i++)
		post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0xfffffe, 4), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 0xffffff, MTU), ROCE_RC_IN_EXECUTED);
	d = req(ROCE_RC_SEND_LAST, 0, 4);
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	assert_int_equal(q.epsn, 1);
	expect_ack(1, 0, 2);
	/* 0xffffff is now behind ePSN 1: a duplicate, ACKed with ePSN - 1 = 0 */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 0xffffff, MTU), ROCE_RC_IN_DUPLICATE);
	expect_ack(2, 0, 2);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0xfffff0, 4), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 3, 4), ROCE_RC_IN_SEQ_NAK);
	expect_nak(4, 1, ROCE_NAK_PSN_SEQ_ERR, 2);
	/* a READ whose responses cross the wrap */
	setup_qp(&q, 0xffffff);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 0xffffff, 0, 0x1000, 0x100000, MTU * 5 / 2),
			 ROCE_RC_IN_EXECUTED);
	assert_int_equal(roce_bth_psn(sent(0).bth), 0xffffff);
	assert_int_equal(roce_bth_psn(sent(1).bth), 0);
	assert_int_equal(roce_bth_psn(sent(2).bth), 1);
	assert_int_equal(q.epsn, 2);
	/* and is found again from the far side of it */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 0x1000, 0x100000 + MTU, MTU * 3 / 2),
			 ROCE_RC_IN_DUPLICATE);
	expect_aeth(3, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 0, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 1);
	expect_aeth(4, ROCE_RC_RDMA_READ_RESPONSE_LAST, 1, roce_syn_ack(ROCE_AETH_CREDITS_INVALID), 1);
}

/* A READ leaves the ring once its PSNs leave the duplicate window. */
static void test_ring_window(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 0);
	post_recv(4);
	set_mr_u64(0, 0, 0);
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 0, 0x1000, 0x100000, 1, 0), ROCE_RC_IN_EXECUTED);
	/*
	 * ePSN is set by hand below, as if the packets in between had been
	 * executed. 2^23 - 1 packets later PSN 0 is still a duplicate and found.
	 */
	q.epsn = ROCE_RC_PSN_WINDOW - 1;
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 0, 0x1000, 0x100000, 1, 0), ROCE_RC_IN_DUPLICATE);
	assert_int_equal(be64_get(sent(1).atomic_ack->orig), 0);
	/* executing PSN 2^23 takes PSN 0 out of the window: its entry is retired */
	q.epsn = ROCE_RC_PSN_WINDOW;
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, ROCE_RC_PSN_WINDOW, 0), ROCE_RC_IN_EXECUTED);
	/* 2^24 packets after it, PSN 0 is behind ePSN again: not taken for the old atomic */
	q.epsn = 3;
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 0, 0x1000, 0x100000, 1, 0), ROCE_RC_IN_FATAL_NAK);
	expect_nak(3, 0, ROCE_NAK_INVALID_REQ, 2);
	assert_int_equal(F.atomics, 1);
}

/* ---- RNR ---- */

static void test_rnr(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 7);
	fill_payload(8);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 7, 16), ROCE_RC_IN_RNR);
	assert_int_equal(F.nframes, 1);
	expect_aeth(0, ROCE_RC_ACKNOWLEDGE, 7, roce_syn_rnr(RNR_TIMER), 0);
	assert_int_equal(q.epsn, 7);
	assert_false(roce_rc_resp_in_error(&q));
	/* WRITE with immediate: no memory written before the receive is there */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 7, 16, 0x1000, 0x100000, 16),
			 ROCE_RC_IN_RNR);
	assert_int_equal(F.mr[0].buf[0], 0);
	expect_aeth(1, ROCE_RC_ACKNOWLEDGE, 7, roce_syn_rnr(RNR_TIMER), 0);
	/* the requester retries after posting */
	post_recv(64);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 7, 16), ROCE_RC_IN_EXECUTED);
	expect_ack(2, 7, 1);
	assert_memory_equal(F.rq_buf[0], payload_src, 16);
	assert_int_equal(q.epsn, 8);
	/* a multi-packet WRITE with immediate: RNR on its LAST keeps the WRITE going */
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 8, MTU, 0x1000, 0x100000, MTU + 8), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 9, 8), ROCE_RC_IN_RNR);
	post_recv(0);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 9, 8), ROCE_RC_IN_EXECUTED);
	assert_memory_equal(F.mr[0].buf, payload_src, MTU);
	assert_memory_equal(F.mr[0].buf + MTU, payload_src, 8);
	assert_int_equal(F.cqe[1].c.byte_len, MTU + 8);
	assert_int_equal(q.msn, 2);
}

/* ---- fatal errors ---- */

static void test_bad_rkey(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 40);
	post_recv(64);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 40, 8, 0xbad, 0x100000, 8), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 40, ROCE_NAK_REM_ACCESS_ERR, 0);
	assert_true(roce_rc_resp_in_error(&q));
	/* later packets are dropped, whatever their PSN */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 40, 4), ROCE_RC_IN_ERR_DROP);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 41, 4), ROCE_RC_IN_ERR_DROP);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 39, 4), ROCE_RC_IN_ERR_DROP);
	assert_int_equal(F.nframes, 1);
	assert_int_equal(F.taken, 0);
	/* in range of the region at the FIRST, out of it at the MIDDLE */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 0, MTU, 0x1000, 0x100000 + MR_LEN - MTU, 3 * MTU),
			 ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_MIDDLE, 1, MTU), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 1, ROCE_NAK_REM_ACCESS_ERR, 0);
	/* WRITE with immediate into a bad key: the receive it took completes in error */
	setup_qp(&q, 0);
	post_recv(0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0, 8, 0xbad, 0, 8), ROCE_RC_IN_FATAL_NAK);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_LOC_ACCESS_ERR);
}

/*
 * The exact ends of a region (MR 0x1000 covers [0x100000, +MR_LEN)): the
 * last bytes can be written, read and swapped, one byte past the end is a
 * remote access error, whatever the operation.
 */
static void test_region_edges(void **state)
{
	const uint64_t end = 0x100000 + MR_LEN;
	struct roce_rc_resp q;
	uint64_t before, after;

	(void)state;
	setup_qp(&q, 0);
	fill_payload(9);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 0, 8, 0x1000, end - 8, 8), ROCE_RC_IN_EXECUTED);
	assert_memory_equal(F.mr[0].buf + MR_LEN - 8, payload_src, 8);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 1, 0, 0x1000, end - 8, 8), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 2, 0x1000, end - 8, 1, 0), ROCE_RC_IN_EXECUTED);
	memcpy(&before, payload_src, 8);
	memcpy(&after, F.mr[0].buf + MR_LEN - 8, 8);
	assert_true(after == before + 1);
	assert_int_equal(F.atomics, 1);
	assert_false(roce_rc_resp_in_error(&q));
	/* one byte past the end: a WRITE, a READ and an atomic (at the next aligned address) */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_ONLY, 0, 8, 0x1000, end - 7, 8), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_REM_ACCESS_ERR, 0);
	for (unsigned j = MR_LEN - 8; j < MR_LEN; j++)
		assert_int_equal(F.mr[0].buf[j], (uint8_t)(j * 13)); /* nothing of the refused write landed */
	setup_qp(&q, 0);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 0x1000, end - 7, 8), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_REM_ACCESS_ERR, 0);
	setup_qp(&q, 0);
	assert_int_equal(feed_atomic(&q, ROCE_RC_FETCH_ADD, 0, 0x1000, end, 1, 0), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_REM_ACCESS_ERR, 0);
	assert_int_equal(F.atomics, 0);
}

static void test_opcode_sequence(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	/* MIDDLE without FIRST */
	setup_qp(&q, 3);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_MIDDLE, 3, MTU), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 3, ROCE_NAK_INVALID_REQ, 0);
	assert_true(roce_rc_resp_in_error(&q));
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 3, 0), ROCE_RC_IN_ERR_DROP);
	setup_qp(&q, 3);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_LAST, 3, 4), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 3, ROCE_NAK_INVALID_REQ, 0);
	/* a WRITE MIDDLE inside a SEND: the SEND's receive completes in error */
	setup_qp(&q, 3);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 3, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_WRITE_MIDDLE, 4, MTU), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 4, ROCE_NAK_INVALID_REQ, 0);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_LOC_QP_OP_ERR);
	assert_int_equal(F.cqe[0].c.byte_len, MTU);
	/* a new ONLY while a SEND is in progress, and a READ while a WRITE is */
	setup_qp(&q, 3);
	post_recv(RQ_BUF);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 3, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 4, 4), ROCE_RC_IN_FATAL_NAK);
	assert_int_equal(F.taken, 1);
	setup_qp(&q, 3);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_WRITE_FIRST, 3, MTU, 0x1000, 0x100000, 2 * MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_reth(&q, ROCE_RC_RDMA_READ_REQUEST, 4, 0, 0x1000, 0x100000, 8), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 4, ROCE_NAK_INVALID_REQ, 0);
}

static void test_send_too_long(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp(&q, 0);
	post_recv(100);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 0, 200), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 0, ROCE_NAK_INVALID_REQ, 0);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_LOC_LEN_ERR);
	assert_int_equal(F.cqe[0].c.byte_len, 0);
	assert_true(roce_rc_resp_in_error(&q));
	/* overflowing at the second packet: the bytes placed before it are reported */
	setup_qp(&q, 0);
	post_recv(MTU + 10);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 0, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_MIDDLE, 1, MTU), ROCE_RC_IN_FATAL_NAK);
	expect_nak(0, 1, ROCE_NAK_INVALID_REQ, 0);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_LOC_LEN_ERR);
	assert_int_equal(F.cqe[0].c.byte_len, MTU);
}

static void test_pkey_and_foreign_opcodes(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp(&q, 0);
	post_recv(64);
	d = req(ROCE_RC_SEND_ONLY, 0, 4);
	d.pkey = 0x7fff;       /* limited member of the default partition: matches our full 0xffff */
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_EXECUTED);
	d = req(ROCE_RC_SEND_ONLY, 1, 4);
	d.pkey = 0x8001;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_PKEY_DROP);
	assert_int_equal(feed_op(&q, ROCE_RC_ACKNOWLEDGE, 1, 0), ROCE_RC_IN_NOT_REQUEST);
	assert_int_equal(feed_op(&q, ROCE_RC_RDMA_READ_RESPONSE_ONLY, 1, 8), ROCE_RC_IN_NOT_REQUEST);
	assert_int_equal(feed_op(&q, ROCE_UD_SEND_ONLY, 1, 8), ROCE_RC_IN_NOT_REQUEST);
	assert_int_equal(F.nframes, 1);
	assert_int_equal(q.epsn, 1);
	/* the owner's own move to error flushes a receive in progress */
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_FIRST, 1, MTU), ROCE_RC_IN_EXECUTED);
	roce_rc_resp_set_error(&q);
	assert_int_equal(F.cqe[1].c.status, ROCE_RC_WC_FLUSH_ERR);
	assert_int_equal(F.cqe[1].c.byte_len, MTU);
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_LAST, 2, 4), ROCE_RC_IN_ERR_DROP);
	/* responses still go to the requester side */
	assert_int_equal(feed_op(&q, ROCE_RC_ACKNOWLEDGE, 1, 0), ROCE_RC_IN_NOT_REQUEST);
}

static void test_init_and_names(void **state)
{
	struct roce_rc_resp q;
	struct roce_rc_ops ops = fake_ops;
	struct roce_rc_resp_cfg cfg = { .ops = &fake_ops, .pmtu = 1024 };

	(void)state;
	assert_int_equal(roce_rc_resp_init(&q, &cfg), 0);
	assert_int_equal(q.ttl, 64);
	cfg.pmtu = 1000;
	assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
	cfg.pmtu = 256;
	cfg.epsn = 0x1000000;
	assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
	cfg.epsn = 0;
	cfg.rqpn = 0x1000000;
	assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
	cfg.rqpn = 0;
	cfg.min_rnr_timer = 32;
	assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
	cfg.min_rnr_timer = 0;
	ops.atomic = NULL;
	cfg.ops = &ops;
	assert_int_equal(roce_rc_resp_init(&q, &cfg), -EINVAL);
	for (int i = 0; i < ROCE_RC_IN_NUM; i++) {
		assert_string_not_equal(roce_rc_in_name((enum roce_rc_in)i), "unknown");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(roce_rc_in_name((enum roce_rc_in)i), roce_rc_in_name((enum roce_rc_in)j));
	}
	for (int i = 0; i < ROCE_RC_WC_NUM; i++)
		assert_string_not_equal(roce_rc_wc_name((enum roce_rc_wc)i), "unknown");
	assert_string_equal(roce_rc_in_name(ROCE_RC_IN_NUM), "unknown");
	assert_string_equal(roce_rc_wc_name((enum roce_rc_wc)-1), "unknown");
}

/* ---- random packets ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64*: fixed seed, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32) % n;
}

static const uint8_t rc_requests[] = {
	ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST, ROCE_RC_SEND_LAST_WITH_IMMEDIATE,
	ROCE_RC_SEND_ONLY, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_FIRST, ROCE_RC_RDMA_WRITE_MIDDLE,
	ROCE_RC_RDMA_WRITE_LAST, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_ONLY,
	ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_READ_REQUEST, ROCE_RC_COMPARE_SWAP, ROCE_RC_FETCH_ADD,
	ROCE_RC_SEND_LAST_WITH_INVALIDATE, ROCE_RC_SEND_ONLY_WITH_INVALIDATE,
	/* not requests: must be passed over */
	ROCE_RC_ACKNOWLEDGE, ROCE_RC_RDMA_READ_RESPONSE_MIDDLE, ROCE_UD_SEND_ONLY,
};

static const uint8_t rc_new[] = {
	ROCE_RC_SEND_FIRST, ROCE_RC_SEND_ONLY, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_RC_SEND_ONLY_WITH_INVALIDATE,
	ROCE_RC_RDMA_WRITE_FIRST, ROCE_RC_RDMA_WRITE_ONLY, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
	ROCE_RC_RDMA_READ_REQUEST, ROCE_RC_COMPARE_SWAP, ROCE_RC_FETCH_ADD,
};
static const uint8_t rc_send_next[] = {
	ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST, ROCE_RC_SEND_LAST_WITH_IMMEDIATE, ROCE_RC_SEND_LAST_WITH_INVALIDATE,
};
static const uint8_t rc_write_next[] = {
	ROCE_RC_RDMA_WRITE_MIDDLE, ROCE_RC_RDMA_WRITE_LAST, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
};

static uint64_t rnd_va(void)
{
	static const uint64_t base[] = { 0x100000, 0x200000, 0x300000, 0, UINT64_MAX - 64 };
	uint64_t b = base[rnd(5)];

	return rnd(4) == 0 ? b + rnd(MR_LEN + 512) : b + 8 * rnd(MR_LEN / 8);
}

/* On a UC QP, the UC twin of an RC SEND or WRITE opcode; every other opcode as it is. */
static uint8_t as_uc(uint8_t opcode)
{
	return opcode <= ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ? (uint8_t)(opcode | ROCE_TRANSPORT_UC) : opcode;
}

/*
 * Valid-by-roce_parse packets of every RC request (and a few that are not),
 * PSNs around ePSN and at random, keys good and bad, receives posted now and
 * then: nothing may crash or trip the sanitizers, every frame sent must parse
 * (f_send_frame checks it), the QP is re-created when it reaches error, and
 * ePSN only moves on an executed packet. With uc the same mix, its SENDs and
 * WRITEs as UC opcodes, goes to a UC responder: then not one frame is sent,
 * an executed packet leaves ePSN one past its own PSN, and any other leaves
 * ePSN where it was or at the PSN of the FIRST/ONLY it resynchronized on.
 */
static void random_packets(bool uc, unsigned *counts)
{
	struct roce_rc_resp q;

	fill_payload(9);
	setup_qp_type(&q, rnd(1u << 24), uc);
	F.ring = true;
	for (unsigned iter = 0; iter < 40000; iter++) {
		uint8_t opcode = rc_requests[rnd(sizeof(rc_requests))];
		const struct roce_opcode_info *op;
		struct roce_frame_desc d;
		uint32_t plen = 0, epsn = q.epsn, msn = q.msn, psn;
		enum roce_rc_in v;

		/* half the time an opcode that may legally follow, so that messages get executed */
		if (rnd(2)) {
			if (q.cur == ROCE_RC_CUR_SEND)
				opcode = rc_send_next[rnd(sizeof(rc_send_next))];
			else if (q.cur == ROCE_RC_CUR_WRITE)
				opcode = rc_write_next[rnd(sizeof(rc_write_next))];
			else
				opcode = rc_new[rnd(sizeof(rc_new))];
		}
		if (uc)
			opcode = as_uc(opcode);
		op = roce_opcode_info(opcode);
		if (op->payload) {
			if (op->seg == ROCE_SEG_FIRST || op->seg == ROCE_SEG_MIDDLE)
				plen = MTU;
			else
				plen = rnd(4) == 0 ? MTU : rnd(64);
		}
		switch (rnd(8)) {
		case 0:
			psn = rnd(1u << 24);
			break;
		case 1:
			psn = epsn - 1 - rnd(40);
			break;
		case 2:
			psn = epsn + 1 + rnd(4);
			break;
		default:
			psn = epsn;
		}
		d = req(opcode, psn, plen);
		d.ackreq = rnd(2);
		d.pkey = rnd(50) == 0 ? 0x1234 : PKEY;
		d.reth.rkey = 0x1000 + rnd(4);
		d.reth.va = rnd_va();
		d.reth.len = rnd(8) == 0 ? rnd(UINT32_MAX) : rnd(4 * MTU);
		d.atomic.rkey = 0x1000 + rnd(4);
		d.atomic.va = rnd_va();
		d.atomic.swap_add = rnd(100);
		d.atomic.compare = rnd(100);
		d.imm = rnd(UINT32_MAX);
		d.ieth_rkey = rnd(8);
		F.invalidate_fails = rnd(20) == 0;
		if (rnd(3) == 0 && F.posted < RQ_MAX)
			post_recv(rnd(RQ_BUF + 1));
		v = feed(&q, &d);
		assert_true((unsigned)v < ROCE_RC_IN_NUM);
		counts[v]++;
		if (uc) {
			assert_int_equal(F.nframes, 0);
			if (v == ROCE_RC_IN_EXECUTED)
				assert_int_equal(q.epsn, roce_psn_add(d.psn, 1));
			else
				assert_true(q.epsn == epsn || q.epsn == d.psn);
		} else if (v != ROCE_RC_IN_EXECUTED) {
			assert_int_equal(q.epsn, epsn);
			assert_int_equal(q.msn, msn);
		} else {
			assert_true(roce_psn_diff(q.epsn, epsn) > 0);
		}
		/* a QP in error stays a while (its drops are part of the mix), then a fresh one */
		if ((roce_rc_resp_in_error(&q) && rnd(3) == 0) || F.posted == RQ_MAX) {
			uint32_t e = rnd(1u << 24);

			if (!roce_rc_resp_in_error(&q))
				roce_rc_resp_set_error(&q);
			setup_qp_type(&q, e, uc);
			F.ring = true;
		}
		/* a UC QP never goes to error by itself: the owner moves it now and then (a held receive
		 * is then flushed) */
		if (uc && rnd(500) == 0)
			roce_rc_resp_set_error(&q);
	}
	for (unsigned i = 0; i < ROCE_RC_IN_NUM; i++)
		print_message("%s %-12s %u\n", uc ? "UC" : "RC", roce_rc_in_name((enum roce_rc_in)i), counts[i]);
}

static void test_random_packets(void **state)
{
	unsigned counts[ROCE_RC_IN_NUM] = { 0 };

	(void)state;
	random_packets(false, counts);
	/* the mix reached every verdict an RC packet can have (UC's own is not one) */
	for (unsigned i = 0; i < ROCE_RC_IN_NUM; i++)
		assert_true(i == ROCE_RC_IN_UC_DROP ? counts[i] == 0 : counts[i] > 0);
}

static void test_random_uc_packets(void **state)
{
	static const enum roce_rc_in uc_verdicts[] = {
		ROCE_RC_IN_EXECUTED, ROCE_RC_IN_UC_DROP, ROCE_RC_IN_ERR_DROP, ROCE_RC_IN_PKEY_DROP,
		ROCE_RC_IN_NOT_REQUEST,
	};
	unsigned counts[ROCE_RC_IN_NUM] = { 0 }, seen = 0;

	(void)state;
	random_packets(true, counts);
	/* every UC verdict occurred, and no RC one (duplicates, sequence NAKs, RNR) */
	for (unsigned i = 0; i < sizeof(uc_verdicts) / sizeof(uc_verdicts[0]); i++) {
		assert_true(counts[uc_verdicts[i]] > 0);
		seen += counts[uc_verdicts[i]];
	}
	assert_int_equal(seen, 40000);
}

/* ---- UC ---- */

/* UC: messages in order are executed as on RC, and nothing at all is sent back. */
static void test_uc_in_order(void **state)
{
	struct roce_rc_resp q;

	(void)state;
	setup_qp_type(&q, 500, true);
	fill_payload(3);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_FIRST, 500, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_MIDDLE, 501, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_LAST_WITH_IMMEDIATE, 502, 10), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(F.cqe[0].c.byte_len, 2 * MTU + 10);
	assert_true(F.cqe[0].c.has_imm);
	assert_memory_equal(F.rq_buf[0], payload_src, 10); /* each packet carries payload_src from its start */
	assert_memory_equal(F.rq_buf[0] + MTU, payload_src, MTU);
	/* an RDMA WRITE of two packets lands in the region */
	assert_int_equal(feed_reth(&q, ROCE_UC_RDMA_WRITE_FIRST, 503, MTU, 0x1001, 0x200010, MTU + 20),
			 ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_UC_RDMA_WRITE_LAST, 504, 20), ROCE_RC_IN_EXECUTED);
	assert_memory_equal(F.mr[1].buf + 0x10, payload_src, MTU);
	assert_memory_equal(F.mr[1].buf + 0x10 + MTU, payload_src, 20);
	assert_int_equal(q.epsn, 505);
	/* RC opcodes, responses and UD are not a UC QP's */
	assert_int_equal(feed_op(&q, ROCE_RC_SEND_ONLY, 505, 4), ROCE_RC_IN_NOT_REQUEST);
	assert_int_equal(feed_op(&q, ROCE_RC_ACKNOWLEDGE, 505, 0), ROCE_RC_IN_NOT_REQUEST);
	assert_int_equal(feed_op(&q, ROCE_UD_SEND_ONLY, 505, 4), ROCE_RC_IN_NOT_REQUEST);
	assert_int_equal(F.nframes, 0);
}

/*
 * UC loss and failures: a gap drops the rest of the message and the receive
 * it had begun is reused by the next one; no receive, a bad R_Key or a SEND
 * too long drop the message and leave the QP usable; an older PSN is a new
 * message, not a duplicate. Nothing is ever sent.
 */
static void test_uc_loss(void **state)
{
	struct roce_rc_resp q;
	struct roce_frame_desc d;

	(void)state;
	setup_qp_type(&q, 10, true);
	fill_payload(4);
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_FIRST, 10, MTU), ROCE_RC_IN_EXECUTED);
	/* 11 lost: 12 ends the message, silently */
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_LAST, 12, 8), ROCE_RC_IN_UC_DROP);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_MIDDLE, 13, MTU), ROCE_RC_IN_UC_DROP);
	assert_int_equal(F.ncqe, 0);
	/* the next message (a later PSN) gets the same receive, from its start */
	fill_payload(5);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_ONLY, 20, 30), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].handle, 0);
	assert_int_equal(F.cqe[0].c.byte_len, 30);
	assert_memory_equal(F.rq_buf[0], payload_src, 30);
	assert_int_equal(q.epsn, 21);
	/* no receive posted: the message is dropped, no RNR */
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_FIRST, 21, MTU), ROCE_RC_IN_UC_DROP);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_LAST, 22, 4), ROCE_RC_IN_UC_DROP);
	/* an older PSN on a FIRST/ONLY is a new message on UC (there are no duplicates) */
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_ONLY, 5, 7), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 2);
	assert_int_equal(F.cqe[1].handle, 1);
	assert_int_equal(q.epsn, 6);
	/* a WRITE with an R_Key never given: dropped with the rest of its message; memory untouched */
	assert_int_equal(feed_reth(&q, ROCE_UC_RDMA_WRITE_FIRST, 6, MTU, 0x7777, 0x100000, 2 * MTU),
			 ROCE_RC_IN_UC_DROP);
	assert_int_equal(feed_op(&q, ROCE_UC_RDMA_WRITE_LAST, 7, MTU), ROCE_RC_IN_UC_DROP);
	assert_false(roce_rc_resp_in_error(&q));
	assert_int_equal(feed_reth(&q, ROCE_UC_RDMA_WRITE_ONLY, 8, 16, 0x1000, 0x100000, 16), ROCE_RC_IN_EXECUTED);
	assert_memory_equal(F.mr[0].buf, payload_src, 16);
	/* P_Key still matters */
	post_recv(RQ_BUF);
	d = req(ROCE_UC_SEND_ONLY, 9, 4);
	d.pkey = 0x8001;
	assert_int_equal(feed(&q, &d), ROCE_RC_IN_PKEY_DROP);
	/* a receive held for reuse is flushed when the owner moves the QP to error */
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_FIRST, 9, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_LAST, 15, 4), ROCE_RC_IN_UC_DROP);
	roce_rc_resp_set_error(&q);
	assert_int_equal(F.ncqe, 3);
	assert_int_equal(F.cqe[2].handle, 2);
	assert_int_equal(F.cqe[2].c.status, ROCE_RC_WC_FLUSH_ERR);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_ONLY, 16, 4), ROCE_RC_IN_ERR_DROP);
	/* a SEND longer than its receive: dropped, the receive kept for the next message, which fits */
	setup_qp_type(&q, 40, true);
	post_recv(100);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_ONLY, 40, 200), ROCE_RC_IN_UC_DROP);
	assert_int_equal(F.ncqe, 0);
	assert_false(roce_rc_resp_in_error(&q));
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_ONLY, 41, 60), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 1);
	assert_int_equal(F.cqe[0].handle, 0);
	assert_int_equal(F.cqe[0].c.status, ROCE_RC_WC_SUCCESS);
	assert_int_equal(F.cqe[0].c.byte_len, 60);
	/* an opcode out of sequence inside a SEND: the message dropped, its receive kept */
	post_recv(RQ_BUF);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_FIRST, 42, MTU), ROCE_RC_IN_EXECUTED);
	assert_int_equal(feed_reth(&q, ROCE_UC_RDMA_WRITE_MIDDLE, 43, MTU, 0x1000, 0x100000, MTU),
			 ROCE_RC_IN_UC_DROP);
	assert_int_equal(feed_op(&q, ROCE_UC_SEND_ONLY, 44, 8), ROCE_RC_IN_EXECUTED);
	assert_int_equal(F.ncqe, 2);
	assert_int_equal(F.cqe[1].handle, 1);
	assert_int_equal(F.cqe[1].c.byte_len, 8);
	assert_false(roce_rc_resp_in_error(&q));
	assert_int_equal(F.nframes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_only),
		cmocka_unit_test(test_send_multi_imm),
		cmocka_unit_test(test_send_with_invalidate),
		cmocka_unit_test(test_write_only),
		cmocka_unit_test(test_write_multi_imm),
		cmocka_unit_test(test_write_longer_than_reth),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_read_in_place),
		cmocka_unit_test(test_read_bad_rkey),
		cmocka_unit_test(test_read_region_gone),
		cmocka_unit_test(test_outbox_order),
		cmocka_unit_test(test_read_again_first),
		cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_atomic_errors),
		cmocka_unit_test(test_duplicate_send),
		cmocka_unit_test(test_duplicate_read),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_ack_before_nak),
		cmocka_unit_test(test_psn_wrap),
		cmocka_unit_test(test_ring_window),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_bad_rkey),
		cmocka_unit_test(test_region_edges),
		cmocka_unit_test(test_opcode_sequence),
		cmocka_unit_test(test_send_too_long),
		cmocka_unit_test(test_pkey_and_foreign_opcodes),
		cmocka_unit_test(test_init_and_names),
		cmocka_unit_test(test_random_packets),
		cmocka_unit_test(test_random_uc_packets),
		cmocka_unit_test(test_uc_in_order),
		cmocka_unit_test(test_uc_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
