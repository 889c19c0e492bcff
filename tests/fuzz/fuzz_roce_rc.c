/*
 * fuzz-roce-rc: the RC responder (src/fabric/roce_rc.c) driven by a stream
 * of requests, against a fake owner that bounds every copy and checks what
 * the responder does after each packet.
 *
 * input: a 56-byte header, then operations (one byte, op % 5, then its
 * arguments). All integers little-endian (fuzz.h).
 *
 *   header: pmtu_sel:u8 (256 << sel % 5)  rnr:u8 (& 31)  epsn:u32 (& 2^24-1)
 *           pkey:u16  nrecv:u8 (% 5 receives posted at the start)  recv_size:u16
 *           3 x region { rkey:u32 base:u64 len:u16 (% 8193) access:u8 }
 *             access: 1 remote write, 2 remote read, 4 atomic, 8 may be invalidated
 *   0 REQ     opsel:u8 flags:u8 delta:u16 len:u16 mr:u8 off:u32 dma_len:u32
 *             swap:u64 compare:u64 imm:u32
 *             opsel % 20 picks one of the 17 RC request opcodes, or ACK,
 *             READ RESPONSE ONLY, UD SEND ONLY (not requests). flags: 1 AckReq,
 *             2 SE, 4|8 the PSN: 0 ePSN, 1 ePSN - 1 - delta (duplicate),
 *             2 ePSN + 1 + delta (ahead), 3 ePSN + delta * 256 (anywhere);
 *             0x10 payload of the path MTU (else len % (pmtu + 1)); 0x20 P_Key
 *             bit 15 flipped; 0x40 P_Key + 1; 0x80 va = UINT64_MAX - off.
 *             mr & 3 picks region 0..2 for the RETH/AtomicETH/IETH R_Key and
 *             va = base + off (3: R_Key imm, va off). The frame is built with
 *             roce_build(), parsed with roce_parse() and, if accepted, input.
 *   1 POST    size:u16 (% 8193): post a receive of that many bytes
 *   2 ERROR   roce_rc_resp_set_error()
 *   3 RAW     fix:u8 len:u16 (% 4200) bytes[len]: a frame as given (fix & 1:
 *             IPv4 checksum and ICRC corrected first), parsed, input if accepted
 *   4 REPLAY  idx:u8: one of the last 8 frames REQ built, input again
 *
 * Invariants (abort() on violation): every frame sent parses at the path
 * MTU, is a response, carries DestQP rqpn and the QP's P_Key; ePSN moves by
 * the packets executed only (a READ: its response count, else 1) and not
 * at all otherwise; the MSN by one per message completed or READ/atomic
 * executed; an executed packet is answered as its kind requires (ACK at a
 * message's end or on AckReq, n READ responses with consecutive PSNs, one
 * ATOMIC ACKNOWLEDGE), a duplicate SEND/WRITE with an ACK of ePSN - 1;
 * memory and receive buffers are written only by a packet at ePSN that is
 * executed (or fails fatally part way), atomics never run for a duplicate;
 * each taken receive completes once, and between packets exactly the
 * receive of a SEND in progress is outstanding; data is placed in a
 * receive in order and byte_len of a SEND's completion is what was placed
 * (never beyond the buffer); a seq NAK carries ePSN (preceded by an ACK of
 * ePSN - 1 exactly when SEND/WRITE packets were executed since the last
 * positive ACK), an RNR NAK the
 * configured timer; after a fatal NAK the QP drops every request. Regions
 * and receive buffers are exact-size heap blocks, so any access outside
 * them is an ASan report.
 */
#include <stdlib.h>

#include "fabric/roce_rc.h"
#include "fuzz.h"
#include "fuzz_roce_rc.h"
#include "roce_fake.h"
#include "util/inet_csum.h"

#define RQPN 0x000321
#define LQPN 0x000654
#define SPORT 0xc0de
#define NMR 3
#define MR_MAX 8192
#define RQ_MAX 64
#define RQ_BUF_MAX 8192
#define HIST 8
#define FRAME_MAX (ROCE_L2L4_LEN + 64 + 4096 + 4 + 4)

struct rq {
	uint32_t cap;
	uint8_t *buf;
	uint32_t placed;
	bool taken, done;
};

static struct fake {
	uint32_t pmtu, pkey;
	uint8_t rnr;
	struct roce_fake_mem mem;        /* the NMR regions of the header, exact-size heap blocks */
	struct rq rq[RQ_MAX];
	unsigned posted, taken, completed;
	/* the packet being input */
	bool in_input, at_epsn, write_imm;
	unsigned frames;
	uint8_t last_syn, last_opcode, first_syn;
	uint32_t last_psn, first_psn;
	unsigned naks;
	bool ack_owed;          /* model: SEND/WRITE packets executed since the last positive ACK */
	unsigned stores;        /* bytes stored: receive writes, memory writes, atomics */
	/* frames REQ built, for REPLAY */
	uint8_t hist[HIST][FRAME_MAX];
	size_t hist_len[HIST];
	unsigned nhist;
} F;

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static bool f_recv_take(void *ctx, uint64_t *h)
{
	struct fake *f = ctx;

	CHECK(f->in_input && f->at_epsn);
	if (f->taken == f->posted)
		return false;
	f->rq[f->taken].taken = true;
	*h = f->taken++;
	return true;
}

static int f_recv_write(void *ctx, uint64_t h, uint32_t off, const void *data, uint32_t len)
{
	struct fake *f = ctx;
	struct rq *r;

	CHECK(f->in_input && f->at_epsn && h < f->taken && len <= f->pmtu);
	r = &f->rq[h];
	CHECK(r->taken && !r->done);
	CHECK(off == r->placed);        /* a SEND's data arrives in order */
	if (off > r->cap || len > r->cap - off)
		return -1;
	memcpy(r->buf + off, data, len);
	r->placed += len;
	f->stores++;
	return 0;
}

static void f_recv_complete(void *ctx, uint64_t h, const struct roce_rc_recv_cqe *c)
{
	struct fake *f = ctx;
	struct rq *r;

	CHECK(h < f->taken);
	r = &f->rq[h];
	CHECK(r->taken && !r->done);    /* once per taken receive */
	CHECK((unsigned)c->status < ROCE_RC_WC_NUM);
	r->done = true;
	f->completed++;
	if (f->write_imm && c->has_imm && r->placed == 0) {
		/* RDMA WRITE with immediate: byte_len is the RETH DMA length, nothing is placed */
		return;
	}
	CHECK(c->byte_len == r->placed && c->byte_len <= r->cap);
}

static int f_mem_write(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	struct fake *f = ctx;

	CHECK(f->in_input && f->at_epsn && len <= f->pmtu);
	if (roce_fake_mem_write(&f->mem, rkey, va, data, len) != 0)
		return -1;
	f->stores++;
	return 0;
}

static int f_mem_read(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	struct fake *f = ctx;

	CHECK(f->in_input && len <= f->pmtu);
	return roce_fake_mem_read(&f->mem, rkey, va, buf, len);
}

static int f_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		    uint64_t *orig)
{
	struct fake *f = ctx;

	/* executed once: never for a duplicate; the alignment is the responder's to check */
	CHECK(f->in_input && f->at_epsn && (va & 7) == 0);
	if (roce_fake_mem_atomic(&f->mem, rkey, va, cmp_swap, swap_add, compare, orig) != 0)
		return -1;
	f->stores++;
	return 0;
}

static int f_invalidate(void *ctx, uint32_t rkey)
{
	struct fake *f = ctx;

	CHECK(f->in_input && f->at_epsn);
	return roce_fake_mem_invalidate(&f->mem, rkey);
}

static void f_send_frame(void *ctx, uint8_t *frame, size_t len)
{
	struct fake *f = ctx;
	struct roce_pkt p;

	CHECK(f->in_input && len <= ROCE_RC_FRAME_MAX);
	CHECK(roce_parse(frame, len, f->pmtu, &p) == ROCE_OK);
	CHECK(!p.op->request && (p.bth->opcode & ROCE_TRANSPORT_MASK) == ROCE_TRANSPORT_RC);
	CHECK(roce_bth_dqpn(p.bth) == RQPN);
	CHECK(roce_bth_pkey(p.bth) == f->pkey);
	CHECK(be16_get(p.udp->sport) == SPORT);
	if (f->frames++ == 0) {
		f->first_psn = roce_bth_psn(p.bth);
		f->first_syn = p.aeth ? roce_aeth_syndrome(p.aeth) : 0;
	}
	f->last_opcode = p.bth->opcode;
	f->last_psn = roce_bth_psn(p.bth);
	f->last_syn = p.aeth ? roce_aeth_syndrome(p.aeth) : 0;
	if (p.aeth && roce_aeth_kind(f->last_syn) != ROCE_AETH_KIND_ACK)
		f->naks++;
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

/* Between packets: exactly the receive of a SEND in progress is taken and not complete. */
static void check_recvs(const struct roce_rc_resp *q)
{
	unsigned open = 0;

	for (unsigned i = 0; i < F.taken; i++) {
		if (!F.rq[i].done) {
			open++;
			CHECK(q->cur == ROCE_RC_CUR_SEND && q->recv == i);
		}
	}
	CHECK(open == (q->cur == ROCE_RC_CUR_SEND ? 1u : 0u));
	CHECK(F.taken - F.completed == open);
}

static void deliver(struct roce_rc_resp *q, const uint8_t *frame, size_t len)
{
	struct roce_pkt p;
	uint32_t epsn = q->epsn, msn = q->msn, psn, n = 1;
	bool was_error = q->error;
	enum roce_rc_in v;
	uint8_t opcode;

	if (roce_parse(frame, len, F.pmtu, &p) != ROCE_OK)
		return;
	opcode = p.bth->opcode;
	psn = roce_bth_psn(p.bth);
	if (opcode == ROCE_RC_RDMA_READ_REQUEST) {
		uint32_t rl = be32_get(p.reth->dma_len);

		n = rl == 0 ? 1 : (uint32_t)(((uint64_t)rl + F.pmtu - 1) / F.pmtu);
	}
	F.in_input = true;
	F.at_epsn = psn == epsn;
	F.write_imm = opcode == ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE || opcode == ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
	F.frames = 0;
	F.naks = 0;
	F.stores = 0;
	v = roce_rc_resp_input(q, &p);
	/* The owner paces what is owed; this model lets all of it out at once, as the wire would take it. */
	(void)roce_rc_resp_pump(q, UINT32_MAX);
	CHECK(!roce_rc_resp_pending(q));
	F.in_input = false;

	CHECK((unsigned)v < ROCE_RC_IN_NUM);
	CHECK(q->epsn <= ROCE_PSN_MASK && q->msn <= ROCE_AETH_MSN_MASK);
	if (v == ROCE_RC_IN_EXECUTED) {
		CHECK(psn == epsn && !was_error && !q->error);
		CHECK(q->epsn == roce_psn_add(epsn, n));
		CHECK(q->msn == msn || q->msn == ((msn + 1) & ROCE_AETH_MSN_MASK));
		CHECK(F.naks == 0);
		if (opcode == ROCE_RC_RDMA_READ_REQUEST) {
			/* n responses, PSNs psn .. psn + n - 1, the READ counted in the MSN */
			CHECK(F.frames == n && F.last_psn == roce_psn_add(psn, n - 1) &&
			      F.last_opcode == (n == 1 ? ROCE_RC_RDMA_READ_RESPONSE_ONLY : ROCE_RC_RDMA_READ_RESPONSE_LAST));
			CHECK(q->msn == ((msn + 1) & ROCE_AETH_MSN_MASK));
		} else if (opcode == ROCE_RC_COMPARE_SWAP || opcode == ROCE_RC_FETCH_ADD) {
			CHECK(F.frames == 1 && F.last_opcode == ROCE_RC_ATOMIC_ACKNOWLEDGE && F.last_psn == psn);
			CHECK(q->msn == ((msn + 1) & ROCE_AETH_MSN_MASK));
		}
		if (opcode == ROCE_RC_RDMA_READ_REQUEST || opcode == ROCE_RC_COMPARE_SWAP || opcode == ROCE_RC_FETCH_ADD) {
			F.ack_owed = false;
		} else {
			/* SEND/WRITE: ACK at the end of the message or on AckReq, MSN counts messages */
			bool last = p.op->seg == ROCE_SEG_LAST || p.op->seg == ROCE_SEG_ONLY;

			CHECK(F.frames == (last || roce_bth_ackreq(p.bth) ? 1u : 0u));
			if (F.frames)
				CHECK(F.last_opcode == ROCE_RC_ACKNOWLEDGE && F.last_psn == psn &&
				      F.last_syn == roce_syn_ack(ROCE_AETH_CREDITS_INVALID));
			F.ack_owed = F.frames == 0;
			CHECK(q->msn == (last ? (msn + 1) & ROCE_AETH_MSN_MASK : msn));
		}
	} else {
		CHECK(q->epsn == epsn && q->msn == msn);
		/* only an executed packet stores anything (a fatal one may have placed data first) */
		if (v != ROCE_RC_IN_FATAL_NAK)
			CHECK(F.stores == 0);
	}
	switch (v) {
	case ROCE_RC_IN_DUPLICATE:
		CHECK(roce_psn_diff(psn, epsn) < 0 && !q->error && F.naks == 0);
		if (opcode == ROCE_RC_COMPARE_SWAP || opcode == ROCE_RC_FETCH_ADD)
			CHECK(F.frames == 1 && F.last_opcode == ROCE_RC_ATOMIC_ACKNOWLEDGE && F.last_psn == psn);
		else if (opcode != ROCE_RC_RDMA_READ_REQUEST) {
			CHECK(F.frames == 1 && F.last_opcode == ROCE_RC_ACKNOWLEDGE &&
			      F.last_psn == roce_psn_add(epsn, ROCE_PSN_MASK));
			F.ack_owed = false;
		}
		break;
	case ROCE_RC_IN_RNR:
		CHECK(psn == epsn && F.frames == 1 && F.last_syn == roce_syn_rnr(F.rnr) && F.last_psn == psn);
		break;
	case ROCE_RC_IN_SEQ_NAK:
		/* after unacknowledged SEND/WRITE packets, an ACK of ePSN - 1 first */
		CHECK(roce_psn_diff(psn, epsn) > 0 && F.frames == 1u + F.ack_owed && F.last_psn == epsn &&
		      F.last_syn == roce_syn_nak(ROCE_NAK_PSN_SEQ_ERR));
		if (F.ack_owed)
			CHECK(F.first_psn == roce_psn_add(epsn, ROCE_PSN_MASK) &&
			      F.first_syn == roce_syn_ack(ROCE_AETH_CREDITS_INVALID));
		F.ack_owed = false;
		break;
	case ROCE_RC_IN_SEQ_DROP:
	case ROCE_RC_IN_ERR_DROP:
	case ROCE_RC_IN_PKEY_DROP:
	case ROCE_RC_IN_NOT_REQUEST:
		CHECK(F.frames == 0);
		break;
	case ROCE_RC_IN_FATAL_NAK:
		CHECK(q->error && !was_error && F.frames >= 1 && F.naks == 1 && roce_aeth_kind(F.last_syn) == ROCE_AETH_KIND_NAK);
		break;
	default:
		break;
	}
	if (was_error)
		CHECK(v == ROCE_RC_IN_ERR_DROP || v == ROCE_RC_IN_NOT_REQUEST);
	if (v != ROCE_RC_IN_FATAL_NAK)
		CHECK(q->error == was_error);
	check_recvs(q);
}

/* ---- operations ---- */


static uint8_t payload[4096];

static void op_req(struct fz *z, struct roce_rc_resp *q)
{
	uint8_t opsel, flags, mr;
	uint16_t delta, len;
	uint32_t off, dma_len, imm, rkey, plen;
	uint64_t swap, compare, va;
	struct roce_frame_desc d;
	uint8_t *frame = F.hist[F.nhist % HIST];
	size_t flen;

	opsel = fz_u8(z);
	flags = fz_u8(z);
	delta = fz_u16(z);
	len = fz_u16(z);
	mr = fz_u8(z);
	off = fz_u32(z);
	dma_len = fz_u32(z);
	swap = fz_u64(z);
	compare = fz_u64(z);
	imm = fz_u32(z);
	if ((mr & 3) < NMR) {
		rkey = F.mem.mr[mr & 3].rkey;
		va = F.mem.mr[mr & 3].va + off;
	} else {
		rkey = imm;
		va = off;
	}
	if (flags & 0x80)
		va = UINT64_MAX - off;
	plen = (flags & 0x10) ? F.pmtu : len % (F.pmtu + 1);

	memset(&d, 0, sizeof(d));
	d.dst_mac[0] = d.src_mac[0] = 0x02;
	d.dst_mac[5] = 2;
	d.src_mac[5] = 1;
	d.src_ip = 0x0a000001;
	d.dst_ip = 0x0a000002;
	d.ttl = 64;
	d.df = true;
	d.sport = 0x1234;
	d.opcode = fuzz_roce_rc_opcodes[opsel % FUZZ_ROCE_RC_NOPS];
	d.ackreq = flags & 1;
	d.se = flags & 2;
	d.pkey = (uint16_t)F.pkey;
	if (flags & 0x20)
		d.pkey ^= 0x8000;
	if (flags & 0x40)
		d.pkey++;
	d.dqpn = LQPN;
	switch ((flags >> 2) & 3) {
	case 0: d.psn = q->epsn; break;
	case 1: d.psn = roce_psn_add(q->epsn, ROCE_PSN_MASK - delta); break;
	case 2: d.psn = roce_psn_add(q->epsn, 1u + delta); break;
	default: d.psn = roce_psn_add(q->epsn, (uint32_t)delta << 8); break;
	}
	d.reth.va = va;
	d.reth.rkey = rkey;
	d.reth.len = dma_len;
	d.atomic.va = va;
	d.atomic.rkey = rkey;
	d.atomic.swap_add = swap;
	d.atomic.compare = compare;
	d.aeth.syndrome = roce_syn_ack(31);
	d.imm = imm;
	d.ieth_rkey = rkey;
	{
		const struct roce_opcode_info *oi = roce_opcode_info(d.opcode);

		if (oi && oi->payload) {
			for (uint32_t i = 0; i < plen; i++)
				payload[i] = (uint8_t)(i * 7 + imm);
			d.payload = payload;
			d.payload_len = plen;
			d.pad = (uint8_t)((4 - plen % 4) % 4);
		}
	}
	if (roce_build(&d, frame, FRAME_MAX, &flen) != ROCE_OK)
		return;
	F.hist_len[F.nhist % HIST] = flen;
	F.nhist++;
	deliver(q, frame, flen);
}

static void op_post(struct fz *z)
{
	uint32_t cap = fz_u16(z) % (RQ_BUF_MAX + 1);
	struct rq *r;

	if (F.posted == RQ_MAX)
		return;
	r = &F.rq[F.posted];
	r->cap = cap;
	r->buf = malloc(cap ? cap : 1);
	CHECK(r->buf != NULL);
	F.posted++;
}

static void op_raw(struct fz *z, struct roce_rc_resp *q)
{
	uint8_t fix = fz_u8(z);
	size_t len = fz_u16(z) % 4200, got;
	const uint8_t *src = fz_ptr(z, len, &got);
	uint8_t *frame;

	frame = malloc(got ? got : 1);
	CHECK(frame != NULL);
	memcpy(frame, src, got);
	if ((fix & 1) && got >= ROCE_MIN_FRAME) {
		struct net_ip_hdr *ip = (struct net_ip_hdr *)(frame + sizeof(struct net_eth_hdr));

		ip->csum = be16_set(0);
		ip->csum = be16_set(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))));
		roce_icrc_put(frame + got - ROCE_ICRC_LEN,
			      roce_icrc(frame + sizeof(struct net_eth_hdr), got - sizeof(struct net_eth_hdr) - ROCE_ICRC_LEN));
	}
	deliver(q, frame, got);
	free(frame);
}

static void op_replay(struct fz *z, struct roce_rc_resp *q)
{
	uint8_t idx = fz_u8(z);
	unsigned n = F.nhist < HIST ? F.nhist : HIST;
	uint8_t copy[FRAME_MAX];
	size_t len;

	if (n == 0)
		return;
	idx %= n;
	len = F.hist_len[idx];
	memcpy(copy, F.hist[idx], len);
	deliver(q, copy, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size, 0 };
	struct roce_rc_resp q;
	struct roce_rc_resp_cfg cfg;
	unsigned nrecv;
	uint16_t recv_size;

	memset(&F, 0, sizeof(F));
	F.pmtu = 256u << (fz_u8(&z) % 5);
	F.rnr = fz_u8(&z) & 31;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ops = &fake_ops;
	cfg.ctx = &F;
	cfg.rqpn = RQPN;
	cfg.epsn = fz_u32(&z) & ROCE_PSN_MASK;
	F.pkey = cfg.pkey = fz_u16(&z);
	cfg.pmtu = F.pmtu;
	cfg.min_rnr_timer = F.rnr;
	cfg.sport = SPORT;
	nrecv = fz_u8(&z) % 5;
	recv_size = fz_u16(&z);
	for (unsigned i = 0; i < NMR; i++) {
		uint32_t rkey = fz_u32(&z);
		uint64_t base = fz_u64(&z);
		uint32_t len = fz_u16(&z) % (MR_MAX + 1);
		struct roce_fake_mr *m = roce_fake_mem_add(&F.mem, rkey, base, len, fz_u8(&z));

		CHECK(m != NULL);
		for (uint32_t j = 0; j < m->len; j++)
			m->buf[j] = (uint8_t)(j * 13 + i);
	}
	CHECK(roce_rc_resp_init(&q, &cfg) == 0);
	for (unsigned i = 0; i < nrecv; i++) {
		uint8_t b[2] = { (uint8_t)recv_size, (uint8_t)(recv_size >> 8) };
		struct fz one = { b, 2, 0 };

		op_post(&one);
	}

	for (unsigned steps = 0; fz_more(&z) && steps < 256; steps++) {
		switch (fz_u8(&z) % 5) {
		case 0:
			op_req(&z, &q);
			break;
		case 1:
			op_post(&z);
			break;
		case 2: {
			bool sending = q.cur == ROCE_RC_CUR_SEND;
			unsigned done = F.completed;

			roce_rc_resp_set_error(&q);
			CHECK(q.error && q.cur == ROCE_RC_CUR_NONE);
			CHECK(F.completed == done + (sending ? 1u : 0u));
			check_recvs(&q);
			break;
		}
		case 3:
			op_raw(&z, &q);
			break;
		default:
			op_replay(&z, &q);
			break;
		}
	}
	CHECK(q.build_errors == 0);

	roce_fake_mem_free(&F.mem);
	for (unsigned i = 0; i < F.posted; i++)
		free(F.rq[i].buf);
	return 0;
}
