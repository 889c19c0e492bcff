/*
 * RC responder (roce_rc.h). Tracks IBA Vol 1 release 1.4, ch. 9.7 (the
 * reliable service: PSN checks, execution, ACK/NAK generation, duplicates,
 * RNR), 9.4 (the operations: SEND, RDMA WRITE/READ, atomics) and 10.9
 * (P_Key matching).
 * Where the specification leaves a choice, the behaviour of Linux rxe was
 * taken as the reference: a sequence NAK carries the expected PSN, a
 * duplicate SEND/WRITE is ACKed with ePSN - 1.
 *
 * The order inside one ePSN packet is: sequence (opcode) checks, the
 * receive WQE if the packet needs one (RNR leaves everything untouched),
 * memory, then the state change and ePSN, then the answer. Nothing is
 * committed before the last check that can refuse the packet, so an RNR
 * or a NAK never leaves half a state change behind.
 */
#include <errno.h>
#include <string.h>

#include "fabric/roce_rc.h"

/* ---- name tables --------------------------------------------------------------- */

static const char *const roce_rc_in_names[ROCE_RC_IN_NUM] = {
	[ROCE_RC_IN_EXECUTED] = "executed",
	[ROCE_RC_IN_DUPLICATE] = "duplicate",
	[ROCE_RC_IN_RNR] = "rnr-nak",
	[ROCE_RC_IN_SEQ_NAK] = "seq-nak",
	[ROCE_RC_IN_SEQ_DROP] = "seq-drop",
	[ROCE_RC_IN_FATAL_NAK] = "fatal-nak",
	[ROCE_RC_IN_ERR_DROP] = "err-drop",
	[ROCE_RC_IN_PKEY_DROP] = "pkey-drop",
	[ROCE_RC_IN_NOT_REQUEST] = "not-request",
	[ROCE_RC_IN_UC_DROP] = "uc-drop",
};

static const char *const roce_rc_wc_names[ROCE_RC_WC_NUM] = {
	[ROCE_RC_WC_SUCCESS] = "success",
	[ROCE_RC_WC_LOC_LEN_ERR] = "loc-len-err",
	[ROCE_RC_WC_LOC_QP_OP_ERR] = "loc-qp-op-err",
	[ROCE_RC_WC_LOC_ACCESS_ERR] = "loc-access-err",
	[ROCE_RC_WC_FLUSH_ERR] = "flush-err",
};

const char *roce_rc_in_name(enum roce_rc_in v)
{
	if ((unsigned)v >= ROCE_RC_IN_NUM)
		return "unknown";
	return roce_rc_in_names[v];
}

const char *roce_rc_wc_name(enum roce_rc_wc v)
{
	if ((unsigned)v >= ROCE_RC_WC_NUM)
		return "unknown";
	return roce_rc_wc_names[v];
}

/* ---- init ---------------------------------------------------------------------- */

int roce_rc_resp_init(struct roce_rc_resp *q, const struct roce_rc_resp_cfg *cfg)
{
	const struct roce_rc_ops *o = cfg->ops;

	if (o == NULL || o->recv_take == NULL || o->recv_write == NULL || o->recv_complete == NULL ||
	    o->mem_write == NULL || o->mem_read == NULL || o->atomic == NULL || o->invalidate == NULL ||
	    o->send_frame == NULL || (o->mem_peek == NULL) != (o->send_pieces == NULL))
		return -EINVAL;
	/* The IBA path MTUs; the READ segmentation and the 2^23-packet bound below rely on them. */
	if (cfg->pmtu != 256 && cfg->pmtu != 512 && cfg->pmtu != 1024 && cfg->pmtu != 2048 && cfg->pmtu != 4096)
		return -EINVAL;
	if (cfg->rqpn > ROCE_QPN_MASK || cfg->epsn > ROCE_PSN_MASK || cfg->min_rnr_timer > ROCE_AETH_VAL_MASK)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	q->ops = o;
	q->ctx = cfg->ctx;
	q->rqpn = cfg->rqpn;
	q->pmtu = cfg->pmtu;
	q->pkey = cfg->pkey;
	q->sport = cfg->sport;
	q->min_rnr_timer = cfg->min_rnr_timer;
	q->tos = cfg->tos;
	q->ttl = cfg->ttl ? cfg->ttl : 64;
	q->epsn = cfg->epsn;
	q->uc = cfg->uc;
	return 0;
}

/* ---- sending ------------------------------------------------------------------- */

/*
 * Build and hand over one response, its AETH carrying msn, in frame
 * (ROCE_RC_FRAME_MAX bytes with ROCE_FRAME_HEADROOM before them; the payload
 * may already lie in place). The addresses are those of the latest request,
 * swapped: the responder has no address vector of its own.
 */
static void resp_build_send(struct roce_rc_resp *q, uint8_t *frame, uint8_t opcode, uint32_t psn, uint8_t syndrome,
			    uint32_t msn, uint64_t orig, const void *payload, uint32_t len, bool in_place)
{
	struct roce_frame_desc d;
	size_t flen;

	memset(&d, 0, sizeof(d));
	memcpy(d.dst_mac, q->peer_mac, sizeof(d.dst_mac));
	memcpy(d.src_mac, q->local_mac, sizeof(d.src_mac));
	d.src_ip = q->local_ip;
	d.dst_ip = q->peer_ip;
	d.tos = q->tos;
	d.ttl = q->ttl;
	d.ip_id = q->ip_id++;
	d.df = true;
	d.sport = q->sport;
	d.opcode = opcode;
	d.pkey = q->pkey;
	d.dqpn = q->rqpn;
	d.psn = psn & ROCE_PSN_MASK;
	d.aeth.syndrome = syndrome;
	d.aeth.msn = msn & ROCE_AETH_MSN_MASK;
	d.atomic_orig = orig;
	d.payload = payload;
	d.payload_len = len;
	d.pad = (uint8_t)((4 - len % 4) % 4);
	if (in_place) {
		/* the payload where mem_peek found it: the frame goes in pieces around it */
		uint8_t trailer[ROCE_TRAILER_MAX];
		size_t hlen, tlen;

		if (roce_build_pieces(&d, frame, ROCE_RC_FRAME_MAX, &hlen, trailer, &tlen) != ROCE_OK) {
			q->build_errors++; /* as below */
			return;
		}
		q->frames_sent++;
		q->frames_in_place++;
		q->ops->send_pieces(q->ctx, frame, hlen, payload, len, trailer, tlen);
		return;
	}
	if (roce_build(&d, frame, ROCE_RC_FRAME_MAX, &flen) != ROCE_OK) {
		/* Only a bug of ours gets here (every field is in range); count it, send nothing. */
		q->build_errors++;
		return;
	}
	q->frames_sent++;
	q->ops->send_frame(q->ctx, frame, flen);
}

/* The same in a buffer of its own. */
static void resp_send_msn(struct roce_rc_resp *q, uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t msn,
			  uint64_t orig, const void *payload, uint32_t len)
{
	uint8_t buf[ROCE_FRAME_HEADROOM + ROCE_RC_FRAME_MAX];

	resp_build_send(q, buf + ROCE_FRAME_HEADROOM, opcode, psn, syndrome, msn, orig, payload, len, false);
}

static void resp_send(struct roce_rc_resp *q, uint8_t opcode, uint32_t psn, uint8_t syndrome, uint64_t orig,
		      const void *payload, uint32_t len)
{
	resp_send_msn(q, opcode, psn, syndrome, q->msn, orig, payload, len);
}

/*
 * The outbox. A READ's responses leave when the owner pumps them, at its
 * pace; everything answered after the READ queues behind them, since a
 * requester takes an ACK of a later PSN as a sign that the READ responses
 * before it were lost. Without a READ in the way, answers go at once.
 */
static struct roce_rc_out *out_at(struct roce_rc_resp *q, unsigned i)
{
	return &q->out[(q->out_head + i) % ROCE_RC_OUTBOX];
}

static void out_push(struct roce_rc_resp *q, const struct roce_rc_out *o)
{
	if (q->out_count == ROCE_RC_OUTBOX) {
		q->out_full++; /* beyond what a requester may have outstanding: it will ask again */
		return;
	}
	*out_at(q, q->out_count) = *o;
	q->out_count++;
}

static void out_pop(struct roce_rc_resp *q)
{
	q->out_head = (q->out_head + 1) % ROCE_RC_OUTBOX;
	q->out_count--;
}

/* Drop what the outbox holds for PSNs after psn (it is in PSN order). */
static void out_cut_after(struct roce_rc_resp *q, uint32_t psn)
{
	unsigned keep = 0;

	while (keep < q->out_count && roce_psn_diff(out_at(q, keep)->psn, psn) <= 0)
		keep++;
	q->out_dropped += q->out_count - keep;
	q->out_count = keep;
}

static void send_ack(struct roce_rc_resp *q, uint32_t psn, uint8_t syndrome)
{
	struct roce_rc_out *t;

	if (q->uc)
		return; /* UC answers nothing */
	if (roce_aeth_kind(syndrome) == ROCE_AETH_KIND_ACK)
		q->ack_behind = false;
	if (q->out_count == 0) {
		resp_send(q, ROCE_RC_ACKNOWLEDGE, psn, syndrome, 0, NULL, 0);
		return;
	}
	/* Behind READ responses: a positive ACK stands in for the positive ACK queued just before it. */
	t = out_at(q, q->out_count - 1);
	if (t->kind == ROCE_RC_OUT_ACK && roce_aeth_kind(t->syndrome) == ROCE_AETH_KIND_ACK &&
	    roce_aeth_kind(syndrome) == ROCE_AETH_KIND_ACK) {
		t->psn = psn;
		t->msn = q->msn;
		t->syndrome = syndrome;
		return;
	}
	out_push(q, &(struct roce_rc_out){ .kind = ROCE_RC_OUT_ACK, .syndrome = syndrome, .psn = psn, .msn = q->msn });
}

static uint8_t syn_ack(void)
{
	/* RoCE responders do not advertise end-to-end credits ("invalid" = unlimited). */
	return roce_syn_ack(ROCE_AETH_CREDITS_INVALID);
}

/*
 * A NAK the requester cannot recover from (invalid request, remote access
 * error): PSN of the offending packet, the QP enters error, and the receive
 * the message holds (have_recv) completes with status and the byte_len
 * placed before the fault.
 */
static enum roce_rc_in fatal(struct roce_rc_resp *q, uint32_t psn, enum roce_nak code, bool have_recv, uint64_t recv,
			     enum roce_rc_wc status, uint32_t byte_len)
{
	if (q->uc) {
		/*
		 * UC: the message is dropped (the rest of it too), a receive it
		 * held is kept for the next message, and the QP goes on (IBA's
		 * class D and E responder errors; rdma_rxe does the same).
		 */
		if (have_recv) {
			q->recv = recv;
			q->recv_held = true;
		}
		q->cur = ROCE_RC_CUR_NONE;
		q->uc_dropping = true;
		return ROCE_RC_IN_UC_DROP;
	}
	send_ack(q, psn, roce_syn_nak(code));
	if (have_recv) {
		struct roce_rc_recv_cqe c = { .status = status, .byte_len = byte_len };

		q->ops->recv_complete(q->ctx, recv, &c);
	}
	q->cur = ROCE_RC_CUR_NONE;
	q->error = true;
	return ROCE_RC_IN_FATAL_NAK;
}

/* UC: a message was lost or dropped: the one in progress ends, a receive it began to fill is kept. */
static void uc_abandon(struct roce_rc_resp *q)
{
	if (q->cur == ROCE_RC_CUR_SEND)
		q->recv_held = true;
	q->cur = ROCE_RC_CUR_NONE;
}

/* The receive a message starts with: one a dropped UC SEND left behind, else the next posted. */
static bool recv_next(struct roce_rc_resp *q, uint64_t *recv)
{
	if (q->recv_held) {
		*recv = q->recv;
		q->recv_held = false;
		return true;
	}
	return q->ops->recv_take(q->ctx, recv);
}

/* No receive posted: RNR NAK (RC), or the message is dropped (UC). */
static enum roce_rc_in no_recv(struct roce_rc_resp *q, uint32_t psn)
{
	if (q->uc) {
		q->uc_dropping = true;
		return ROCE_RC_IN_UC_DROP;
	}
	send_ack(q, psn, roce_syn_rnr(q->min_rnr_timer));
	return ROCE_RC_IN_RNR;
}

/* A fatal NAK for a packet that owns no receive beyond the one in progress (if any). */
static enum roce_rc_in fatal_cur(struct roce_rc_resp *q, uint32_t psn, enum roce_nak code, enum roce_rc_wc status)
{
	return fatal(q, psn, code, q->cur == ROCE_RC_CUR_SEND, q->recv, status, q->recv_off);
}

void roce_rc_resp_set_error(struct roce_rc_resp *q)
{
	q->out_count = 0; /* nothing more goes out */
	if (q->cur == ROCE_RC_CUR_SEND || q->recv_held) {
		struct roce_rc_recv_cqe c = { .status = ROCE_RC_WC_FLUSH_ERR,
					      .byte_len = q->recv_held ? 0 : q->recv_off };

		q->ops->recv_complete(q->ctx, q->recv, &c);
	}
	q->recv_held = false;
	q->cur = ROCE_RC_CUR_NONE;
	q->error = true;
}

/* ---- ePSN and the READ/atomic ring ---------------------------------------------- */

/*
 * Move ePSN on by n packets (n <= 2^23: READs are bounded by ROCE_RC_MAX_MSG
 * at a path MTU of at least 256). Ring entries whose last PSN leaves the
 * duplicate window are retired now, measured before the move so that the
 * 24-bit distance cannot wrap: a PSN 2^24 old must never be taken for a
 * recent one.
 */
static void advance(struct roce_rc_resp *q, uint32_t n)
{
	for (unsigned i = 0; i < ROCE_RC_RD_RING; i++) {
		struct roce_rc_rd_entry *e = &q->rd[i];

		if (e->valid && ((q->epsn - e->last_psn) & ROCE_PSN_MASK) + n > ROCE_RC_PSN_WINDOW)
			e->valid = false;
	}
	q->epsn = roce_psn_add(q->epsn, n);
}

/* Remember a READ or atomic just executed (after advance(): its PSNs are then behind ePSN). */
static void rd_record(struct roce_rc_resp *q, const struct roce_rc_rd_entry *e)
{
	q->rd[q->rd_next] = *e;
	q->rd[q->rd_next].valid = true;
	q->rd_next = (q->rd_next + 1) % ROCE_RC_RD_RING;
}

/*
 * The entry whose PSN range holds psn (a duplicate, so behind ePSN). Compared
 * as distances behind ePSN, which are plain integers below 2^24 for every
 * live entry.
 */
static const struct roce_rc_rd_entry *rd_find(const struct roce_rc_resp *q, uint32_t psn, bool atomic)
{
	uint32_t dp = (q->epsn - psn) & ROCE_PSN_MASK;

	for (unsigned i = 0; i < ROCE_RC_RD_RING; i++) {
		const struct roce_rc_rd_entry *e = &q->rd[i];
		uint32_t df, dl;

		if (!e->valid || e->atomic != atomic)
			continue;
		df = (q->epsn - e->first_psn) & ROCE_PSN_MASK;
		dl = (q->epsn - e->last_psn) & ROCE_PSN_MASK;
		if (dl <= dp && dp <= df)
			return e;
	}
	return NULL;
}

/* ---- helpers on the packet ------------------------------------------------------ */

static uint32_t pkt_psn(const struct roce_pkt *p) { return roce_bth_psn(p->bth); }

static bool pkey_match(uint16_t a, uint16_t b)
{
	/* IBA 10.9: the low 15 bits match, and not both are limited members (bit 15 clear). */
	return (a & 0x7fffu) != 0 && (a & 0x7fffu) == (b & 0x7fffu) && ((a | b) & 0x8000u);
}

/* Packets of a READ of len bytes: one for an empty READ, else ceil(len / pmtu). */
static uint32_t read_pkts(const struct roce_rc_resp *q, uint32_t len)
{
	return len == 0 ? 1 : (uint32_t)(((uint64_t)len + q->pmtu - 1) / q->pmtu);
}

/* ---- SEND ---------------------------------------------------------------------- */

static enum roce_rc_in do_send(struct roce_rc_resp *q, const struct roce_pkt *p)
{
	const uint8_t seg = p->op->seg;
	const uint32_t psn = pkt_psn(p);
	const bool first = seg == ROCE_SEG_FIRST || seg == ROCE_SEG_ONLY;
	const bool last = seg == ROCE_SEG_LAST || seg == ROCE_SEG_ONLY;
	uint64_t recv;
	uint32_t off;

	/* Opcode sequence: FIRST/ONLY start a message, MIDDLE/LAST continue a SEND; else invalid request. */
	if (first ? q->cur != ROCE_RC_CUR_NONE : q->cur != ROCE_RC_CUR_SEND)
		return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
	if (first) {
		if (!recv_next(q, &recv))
			return no_recv(q, psn);
		off = 0;
	} else {
		recv = q->recv;
		off = q->recv_off;
	}
	/* A message past 2^31 bytes, or past the receive's buffers: invalid request, length error. */
	if (p->payload_len > ROCE_RC_MAX_MSG - off ||
	    (p->payload_len > 0 && q->ops->recv_write(q->ctx, recv, off, p->payload, p->payload_len) != 0))
		return fatal(q, psn, ROCE_NAK_INVALID_REQ, true, recv, ROCE_RC_WC_LOC_LEN_ERR, off);
	off += p->payload_len;

	if (last) {
		struct roce_rc_recv_cqe c = { .status = ROCE_RC_WC_SUCCESS, .byte_len = off };

		if (p->ieth) {
			c.has_inv = true;
			c.inv_rkey = be32_get(p->ieth->rkey);
			if (q->ops->invalidate(q->ctx, c.inv_rkey) != 0)
				return fatal(q, psn, ROCE_NAK_INVALID_REQ, true, recv, ROCE_RC_WC_LOC_QP_OP_ERR, off);
		}
		if (p->imm) {
			c.has_imm = true;
			c.imm = be32_get(p->imm->imm);
		}
		c.solicited = roce_bth_se(p->bth);
		q->ops->recv_complete(q->ctx, recv, &c);
		q->cur = ROCE_RC_CUR_NONE;
		q->msn = (q->msn + 1) & ROCE_AETH_MSN_MASK;
	} else {
		q->cur = ROCE_RC_CUR_SEND;
		q->recv = recv;
		q->recv_off = off;
	}
	advance(q, 1);
	if (last || roce_bth_ackreq(p->bth))
		send_ack(q, psn, syn_ack());
	return ROCE_RC_IN_EXECUTED;
}

/* ---- RDMA WRITE ---------------------------------------------------------------- */

static enum roce_rc_in do_write(struct roce_rc_resp *q, const struct roce_pkt *p)
{
	const uint8_t seg = p->op->seg;
	const uint32_t psn = pkt_psn(p);
	const bool first = seg == ROCE_SEG_FIRST || seg == ROCE_SEG_ONLY;
	const bool last = seg == ROCE_SEG_LAST || seg == ROCE_SEG_ONLY;
	uint32_t rkey, left, total;
	uint64_t va, recv = 0;
	bool have_recv = false;

	if (first ? q->cur != ROCE_RC_CUR_NONE : q->cur != ROCE_RC_CUR_WRITE)
		return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
	if (first) {
		/* roce_parse() gave WRITE FIRST/ONLY a RETH. */
		va = be64_get(p->reth->va);
		rkey = be32_get(p->reth->rkey);
		left = total = be32_get(p->reth->dma_len);
		if (total > ROCE_RC_MAX_MSG)
			return fatal(q, psn, ROCE_NAK_INVALID_REQ, false, 0, ROCE_RC_WC_SUCCESS, 0);
		/* A range that wraps the address space is no region of anyone's. */
		if (va > UINT64_MAX - total)
			return fatal(q, psn, ROCE_NAK_REM_ACCESS_ERR, false, 0, ROCE_RC_WC_SUCCESS, 0);
	} else {
		va = q->wr_va;
		rkey = q->wr_rkey;
		left = q->wr_left;
		total = q->wr_len;
	}
	/* FIRST/MIDDLE may not go beyond the DMA length, LAST/ONLY must end exactly on it. */
	if (last ? p->payload_len != left : p->payload_len > left)
		return fatal(q, psn, ROCE_NAK_INVALID_REQ, false, 0, ROCE_RC_WC_SUCCESS, 0);
	/* WITH_IMMEDIATE consumes a receive: take it before touching memory, so RNR changes nothing. */
	if (p->imm) {
		if (!recv_next(q, &recv))
			return no_recv(q, psn);
		have_recv = true;
	}
	/* A zero-length WRITE touches no memory, so its R_Key is not checked (as rxe and hardware do). */
	if (p->payload_len > 0 && q->ops->mem_write(q->ctx, rkey, va, p->payload, p->payload_len) != 0)
		return fatal(q, psn, ROCE_NAK_REM_ACCESS_ERR, have_recv, recv, ROCE_RC_WC_LOC_ACCESS_ERR, 0);
	va += p->payload_len;
	left -= p->payload_len;

	if (last) {
		if (have_recv) {
			struct roce_rc_recv_cqe c = { .status = ROCE_RC_WC_SUCCESS, .byte_len = total, .has_imm = true,
						      .imm = be32_get(p->imm->imm), .write_imm = true,
						      .solicited = roce_bth_se(p->bth) };

			q->ops->recv_complete(q->ctx, recv, &c);
		}
		q->cur = ROCE_RC_CUR_NONE;
		q->msn = (q->msn + 1) & ROCE_AETH_MSN_MASK;
	} else {
		q->cur = ROCE_RC_CUR_WRITE;
		q->wr_va = va;
		q->wr_rkey = rkey;
		q->wr_left = left;
		q->wr_len = total;
	}
	advance(q, 1);
	if (last || roce_bth_ackreq(p->bth))
		send_ack(q, psn, syn_ack());
	return ROCE_RC_IN_EXECUTED;
}

/* ---- RDMA READ ----------------------------------------------------------------- */

/*
 * Whether the memory of a READ of len bytes at rkey/va can be read: its first
 * and last bytes (a key names one contiguous range with one set of rights).
 * The responses themselves read it when they leave (roce_rc_resp_pump).
 */
static bool read_ok(struct roce_rc_resp *q, uint32_t rkey, uint64_t va, uint32_t len)
{
	uint8_t b;

	return len == 0 || (q->ops->mem_read(q->ctx, rkey, va, &b, 1) == 0 &&
			    q->ops->mem_read(q->ctx, rkey, va + len - 1, &b, 1) == 0);
}

/* Queue the responses of a READ of len bytes at rkey/va, the first with PSN psn, their AETHs with msn. */
static void read_queue(struct roce_rc_resp *q, uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len, uint32_t msn)
{
	out_push(q, &(struct roce_rc_out){ .kind = ROCE_RC_OUT_READ, .psn = psn, .msn = msn, .n = read_pkts(q, len),
					   .rkey = rkey, .len = len, .va = va });
}

static enum roce_rc_in do_read(struct roce_rc_resp *q, const struct roce_pkt *p)
{
	const uint32_t psn = pkt_psn(p);
	struct roce_rc_rd_entry e = { .atomic = false };
	uint32_t n;

	if (q->cur != ROCE_RC_CUR_NONE)
		return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
	e.va = be64_get(p->reth->va);
	e.rkey = be32_get(p->reth->rkey);
	e.len = be32_get(p->reth->dma_len);
	if (e.len > ROCE_RC_MAX_MSG)
		return fatal(q, psn, ROCE_NAK_INVALID_REQ, false, 0, ROCE_RC_WC_SUCCESS, 0);
	if (e.va > UINT64_MAX - e.len)
		return fatal(q, psn, ROCE_NAK_REM_ACCESS_ERR, false, 0, ROCE_RC_WC_SUCCESS, 0);
	n = read_pkts(q, e.len);
	if (!read_ok(q, e.rkey, e.va, e.len))
		return fatal(q, psn, ROCE_NAK_REM_ACCESS_ERR, false, 0, ROCE_RC_WC_SUCCESS, 0);
	/*
	 * The READ is a message, counted in the MSN as soon as it is accepted
	 * (IBA C9-148 allows it; rxe does the same), so its AETHs carry it. A
	 * memory fault part way (the region went while the responses were
	 * leaving) sends the NAK with the PSN of the response that could not be
	 * read: roce_rc_resp_pump().
	 */
	q->msn = (q->msn + 1) & ROCE_AETH_MSN_MASK;
	read_queue(q, psn, e.rkey, e.va, e.len, q->msn);
	q->reads_new++;
	advance(q, n);
	e.first_psn = psn;
	e.last_psn = roce_psn_add(psn, n - 1);
	rd_record(q, &e);
	return ROCE_RC_IN_EXECUTED;
}

/* ---- atomics ------------------------------------------------------------------- */

static void atomic_ack(struct roce_rc_resp *q, uint32_t psn, uint64_t orig)
{
	if (q->out_count == 0)
		resp_send(q, ROCE_RC_ATOMIC_ACKNOWLEDGE, psn, syn_ack(), orig, NULL, 0);
	else
		out_push(q, &(struct roce_rc_out){ .kind = ROCE_RC_OUT_ATOMIC, .psn = psn, .msn = q->msn, .va = orig });
}

static enum roce_rc_in do_atomic(struct roce_rc_resp *q, const struct roce_pkt *p)
{
	const uint32_t psn = pkt_psn(p);
	struct roce_rc_rd_entry e = { .atomic = true, .first_psn = psn, .last_psn = psn };
	uint64_t va = be64_get(p->atomic->va);

	if (q->cur != ROCE_RC_CUR_NONE)
		return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
	/* The address must be 8-byte aligned, else invalid request (not an access error). */
	if (va & 7)
		return fatal(q, psn, ROCE_NAK_INVALID_REQ, false, 0, ROCE_RC_WC_SUCCESS, 0);
	if (q->ops->atomic(q->ctx, be32_get(p->atomic->rkey), va, p->bth->opcode == ROCE_RC_COMPARE_SWAP,
			   be64_get(p->atomic->swap_add), be64_get(p->atomic->compare), &e.orig) != 0)
		return fatal(q, psn, ROCE_NAK_REM_ACCESS_ERR, false, 0, ROCE_RC_WC_SUCCESS, 0);
	e.va = va;
	e.rkey = be32_get(p->atomic->rkey);
	q->msn = (q->msn + 1) & ROCE_AETH_MSN_MASK;
	advance(q, 1);
	rd_record(q, &e);
	atomic_ack(q, psn, e.orig);
	return ROCE_RC_IN_EXECUTED;
}

/* ---- duplicates ---------------------------------------------------------------- */

static enum roce_rc_in do_duplicate(struct roce_rc_resp *q, const struct roce_pkt *p)
{
	const uint8_t opcode = p->bth->opcode;
	const uint32_t psn = pkt_psn(p);
	const struct roce_rc_rd_entry *e;

	if (opcode == ROCE_RC_RDMA_READ_REQUEST) {
		uint64_t va = be64_get(p->reth->va);
		uint32_t rkey = be32_get(p->reth->rkey), len = be32_get(p->reth->dma_len);
		uint32_t room;

		/*
		 * A re-requested READ may start anywhere inside the
		 * original (the requester resumes where responses went missing).
		 * It must fit in what remains of the original, in bytes and in
		 * PSNs; otherwise, or when it is no longer in the ring, it is an
		 * invalid request here (rxe drops such a packet silently).
		 */
		e = rd_find(q, psn, false);
		if (e == NULL || rkey != e->rkey || va < e->va || va - e->va > e->len || len > e->len - (va - e->va))
			return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
		room = ((e->last_psn - psn) & ROCE_PSN_MASK) + 1;
		if (read_pkts(q, len) > room)
			return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
		/*
		 * Responses of that READ still owed: those from psn on go (again).
		 * Ones that had gone were lost on the way; ones not yet sent were
		 * only slow (the outbox is paced), and need nothing more.
		 */
		for (unsigned i = 0; i < q->out_count; i++) {
			struct roce_rc_out *o = out_at(q, i);
			uint32_t k = (psn - o->psn) & ROCE_PSN_MASK;

			if (o->kind != ROCE_RC_OUT_READ || k >= o->n)
				continue;
			if (k < o->next) {
				o->next = k;
				q->read_again++;
			} else {
				q->read_waited++;
			}
			return ROCE_RC_IN_DUPLICATE;
		}
		if (!read_ok(q, rkey, va, len))
			return fatal_cur(q, psn, ROCE_NAK_REM_ACCESS_ERR, ROCE_RC_WC_LOC_QP_OP_ERR);
		/*
		 * Its responses had all gone. The requester, going back to this
		 * READ, takes no answer to a later PSN before the READ's own
		 * responses (rdma_rxe even goes back again for each one past the
		 * READ) and asks for those again itself (go-back-N): the ones
		 * the outbox holds are dropped, and the READ goes next.
		 */
		q->read_again++;
		out_cut_after(q, psn);
		read_queue(q, psn, rkey, va, len, q->msn);
		return ROCE_RC_IN_DUPLICATE;
	}
	if (opcode == ROCE_RC_COMPARE_SWAP || opcode == ROCE_RC_FETCH_ADD) {
		/* Executed exactly once: the saved original value goes back, memory is not touched. */
		e = rd_find(q, psn, true);
		if (e == NULL || e->first_psn != psn)
			return fatal_cur(q, psn, ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
		atomic_ack(q, psn, e->orig);
		return ROCE_RC_IN_DUPLICATE;
	}
	/* SEND or WRITE: acknowledge everything before ePSN again, at once, whatever AckReq says. */
	send_ack(q, roce_psn_add(q->epsn, ROCE_PSN_MASK), syn_ack());
	return ROCE_RC_IN_DUPLICATE;
}

/* ---- entry --------------------------------------------------------------------- */

/*
 * A SEND or WRITE packet at ePSN. Executed, it leaves a positive ACK owed
 * unless it asked for one (AckReq: its ACK, sent meanwhile, cleared the debt);
 * not executed (RNR, a fatal NAK), it changes nothing.
 */
static enum roce_rc_in send_or_write(struct roce_rc_resp *q, const struct roce_pkt *p, bool write)
{
	const bool owed = q->ack_behind;
	enum roce_rc_in v;

	q->ack_behind = true;
	v = write ? do_write(q, p) : do_send(q, p);
	if (v != ROCE_RC_IN_EXECUTED)
		q->ack_behind = owed;
	return v;
}

static enum roce_rc_in classify(struct roce_rc_resp *q, const struct roce_pkt *p)
{
	uint8_t opcode = p->bth->opcode;
	int32_t d;

	if (!p->op->request || (opcode & ROCE_TRANSPORT_MASK) != (q->uc ? ROCE_TRANSPORT_UC : ROCE_TRANSPORT_RC))
		return ROCE_RC_IN_NOT_REQUEST;
	if (q->error)
		return ROCE_RC_IN_ERR_DROP;
	if (!pkey_match(roce_bth_pkey(p->bth), q->pkey))
		return ROCE_RC_IN_PKEY_DROP;

	/* Answer whoever sent this: its source addresses become our destination. */
	memcpy(q->peer_mac, p->eth->src, sizeof(q->peer_mac));
	memcpy(q->local_mac, p->eth->dst, sizeof(q->local_mac));
	q->peer_ip = be32_get(p->ip->src);
	q->local_ip = be32_get(p->ip->dst);

	d = roce_psn_diff(pkt_psn(p), q->epsn);
	if (q->uc) {
		const bool start = p->op->seg == ROCE_SEG_FIRST || p->op->seg == ROCE_SEG_ONLY;

		/* No duplicates, no NAKs: a gap ends the message; a FIRST or ONLY starts afresh at its PSN. */
		if (d != 0 || q->uc_dropping) {
			uc_abandon(q);
			if (!start) {
				q->uc_dropping = true;
				return ROCE_RC_IN_UC_DROP;
			}
			q->uc_dropping = false;
			q->epsn = pkt_psn(p);
		}
		/* The UC table holds SENDs and RDMA WRITEs only, each handled as its RC twin. */
		opcode = ROCE_UC_TO_RC(opcode);
		d = 0;
	}
	if (d > 0) {
		/* One NAK per gap: the requester goes back to ePSN, so later packets are noise until it does. */
		if (q->nak_sent)
			return ROCE_RC_IN_SEQ_DROP;
		q->nak_sent = true;
		/*
		 * SEND/WRITE packets executed since the last positive ACK: say so
		 * first. The NAK acknowledges them too, but a requester that is
		 * still recovering from an earlier NAK may ignore a second one
		 * until something positive arrives (Linux rxe does, and then waits
		 * for its ACK timeout). Not after a READ or atomic: an ACK at
		 * their PSNs would stand in for responses that may have been lost.
		 */
		if (q->ack_behind)
			send_ack(q, roce_psn_add(q->epsn, ROCE_PSN_MASK), syn_ack());
		send_ack(q, q->epsn, roce_syn_nak(ROCE_NAK_PSN_SEQ_ERR));
		return ROCE_RC_IN_SEQ_NAK;
	}
	if (d < 0)
		return do_duplicate(q, p);

	q->nak_sent = false;
	switch (opcode) {
	case ROCE_RC_SEND_FIRST:
	case ROCE_RC_SEND_MIDDLE:
	case ROCE_RC_SEND_LAST:
	case ROCE_RC_SEND_LAST_WITH_IMMEDIATE:
	case ROCE_RC_SEND_ONLY:
	case ROCE_RC_SEND_ONLY_WITH_IMMEDIATE:
	case ROCE_RC_SEND_LAST_WITH_INVALIDATE:
	case ROCE_RC_SEND_ONLY_WITH_INVALIDATE:
		return send_or_write(q, p, false);
	case ROCE_RC_RDMA_WRITE_FIRST:
	case ROCE_RC_RDMA_WRITE_MIDDLE:
	case ROCE_RC_RDMA_WRITE_LAST:
	case ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE:
	case ROCE_RC_RDMA_WRITE_ONLY:
	case ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE:
		return send_or_write(q, p, true);
	case ROCE_RC_RDMA_READ_REQUEST:
		q->ack_behind = false;
		return do_read(q, p);
	case ROCE_RC_COMPARE_SWAP:
	case ROCE_RC_FETCH_ADD:
		q->ack_behind = false;
		return do_atomic(q, p);
	default:
		/* Every RC request of the opcode table is handled above. */
		return fatal_cur(q, pkt_psn(p), ROCE_NAK_INVALID_REQ, ROCE_RC_WC_LOC_QP_OP_ERR);
	}
}

enum roce_rc_in roce_rc_resp_input(struct roce_rc_resp *q, const struct roce_pkt *pkt)
{
	enum roce_rc_in v = classify(q, pkt);

	q->stats[v]++;
	return v;
}

unsigned roce_rc_resp_pump(struct roce_rc_resp *q, unsigned budget)
{
	uint8_t buf[ROCE_FRAME_HEADROOM + ROCE_RC_FRAME_MAX];
	uint8_t *frame = buf + ROCE_FRAME_HEADROOM;
	unsigned sent = 0;

	while (sent < budget && q->out_count > 0) {
		struct roce_rc_out *o = out_at(q, 0);

		sent++;
		if (o->kind == ROCE_RC_OUT_ACK) {
			resp_send_msn(q, ROCE_RC_ACKNOWLEDGE, o->psn, o->syndrome, o->msn, 0, NULL, 0);
			out_pop(q);
		} else if (o->kind == ROCE_RC_OUT_ATOMIC) {
			resp_send_msn(q, ROCE_RC_ATOMIC_ACKNOWLEDGE, o->psn, syn_ack(), o->msn, o->va, NULL, 0);
			out_pop(q);
		} else {
			uint32_t off = o->next * q->pmtu;       /* < len <= 2^31, no wrap */
			uint32_t chunk = o->len - off < q->pmtu ? o->len - off : q->pmtu;
			uint32_t psn = roce_psn_add(o->psn, o->next);
			uint8_t opcode, *data;
			const void *in_place;

			if (o->len == 0)
				chunk = 0;
			if (o->n == 1)
				opcode = ROCE_RC_RDMA_READ_RESPONSE_ONLY;
			else if (o->next == 0)
				opcode = ROCE_RC_RDMA_READ_RESPONSE_FIRST;
			else if (o->next == o->n - 1)
				opcode = ROCE_RC_RDMA_READ_RESPONSE_LAST;
			else
				opcode = ROCE_RC_RDMA_READ_RESPONSE_MIDDLE;
			/*
			 * The bytes read where they lie (the owner copies them once, into what it sends),
			 * or read straight into their place in the frame (chunk <= pmtu <= 4096).
			 */
			in_place = chunk > 0 && q->ops->mem_peek != NULL ? q->ops->mem_peek(q->ctx, o->rkey, o->va + off, chunk)
									 : NULL;
			data = frame + roce_payload_offset(opcode);
			if (chunk > 0 && in_place == NULL && q->ops->mem_read(q->ctx, o->rkey, o->va + off, data, chunk) != 0) {
				/* The memory went while the responses were leaving: NAK this one, the QP to error. */
				resp_send_msn(q, ROCE_RC_ACKNOWLEDGE, psn, roce_syn_nak(ROCE_NAK_REM_ACCESS_ERR),
					      o->msn - 1, 0, NULL, 0);
				roce_rc_resp_set_error(q);
				break;
			}
			resp_build_send(q, frame, opcode, psn, syn_ack(), o->msn, 0,
					chunk == 0 ? NULL : in_place != NULL ? in_place : data, chunk, in_place != NULL);
			q->read_bytes_sent += chunk;
			if (++o->next == o->n) {
				q->reads_sent++;
				out_pop(q);
			}
		}
	}
	return sent;
}

bool roce_rc_resp_next_is_read(const struct roce_rc_resp *q)
{
	return q->out_count > 0 && q->out[q->out_head].kind == ROCE_RC_OUT_READ;
}

uint32_t roce_rc_resp_head_read_len(const struct roce_rc_resp *q)
{
	return roce_rc_resp_next_is_read(q) ? q->out[q->out_head].len : 0;
}
