/*
 * RC requester (roce_rc_req.h). Tracks IBA Vol 1 release 1.4, ch. 9.7.1-9.7.6
 * (requester side of the reliable service) and 9.4 (the operations).
 * Where the specification leaves a choice, Linux rxe was the reference:
 * an ACK past a READ or atomic whose responses have not all arrived means
 * they were lost and the READ is requested again ("implied NAK"), and
 * sequence NAKs spend the same retry count as timeouts.
 *
 * PSNs are fixed at post time, so every decision is made on PSNs alone:
 * una (oldest unacknowledged), send_psn (the next one pump sends),
 * sent_max (one past the highest sent) and next_psn (one past the last
 * posted). They are kept inside one 2^23 window (post refuses more), in
 * which roce_psn_diff() is a total order.
 */
#include <errno.h>
#include <string.h>

#include "fabric/roce_rc_req.h"

/* ---- name tables --------------------------------------------------------------- */

static const char *const roce_rc_req_in_names[ROCE_RC_REQ_IN_NUM] = {
	[ROCE_RC_REQ_IN_ACK] = "ack",
	[ROCE_RC_REQ_IN_READ_RESP] = "read-resp",
	[ROCE_RC_REQ_IN_ATOMIC_ACK] = "atomic-ack",
	[ROCE_RC_REQ_IN_SEQ_NAK] = "seq-nak",
	[ROCE_RC_REQ_IN_IMPLIED_NAK] = "implied-nak",
	[ROCE_RC_REQ_IN_ECHO] = "echo",
	[ROCE_RC_REQ_IN_RNR_NAK] = "rnr-nak",
	[ROCE_RC_REQ_IN_FATAL] = "fatal",
	[ROCE_RC_REQ_IN_STALE] = "stale",
	[ROCE_RC_REQ_IN_ERR_DROP] = "err-drop",
	[ROCE_RC_REQ_IN_PKEY_DROP] = "pkey-drop",
	[ROCE_RC_REQ_IN_NOT_RESPONSE] = "not-response",
};

static const char *const roce_rc_req_wc_names[ROCE_RC_REQ_WC_NUM] = {
	[ROCE_RC_REQ_WC_SUCCESS] = "success",
	[ROCE_RC_REQ_WC_LOC_PROT_ERR] = "loc-prot-err",
	[ROCE_RC_REQ_WC_REM_INV_REQ_ERR] = "rem-inv-req-err",
	[ROCE_RC_REQ_WC_REM_ACCESS_ERR] = "rem-access-err",
	[ROCE_RC_REQ_WC_REM_OP_ERR] = "rem-op-err",
	[ROCE_RC_REQ_WC_REM_INV_RD_REQ_ERR] = "rem-inv-rd-req-err",
	[ROCE_RC_REQ_WC_BAD_RESP_ERR] = "bad-resp-err",
	[ROCE_RC_REQ_WC_RETRY_EXC_ERR] = "retry-exc-err",
	[ROCE_RC_REQ_WC_RNR_RETRY_EXC_ERR] = "rnr-retry-exc-err",
	[ROCE_RC_REQ_WC_FLUSH_ERR] = "flush-err",
};

static const char *const roce_rc_req_op_names[ROCE_RC_REQ_OP_NUM] = {
	[ROCE_RC_REQ_SEND] = "send",
	[ROCE_RC_REQ_SEND_IMM] = "send-imm",
	[ROCE_RC_REQ_SEND_INV] = "send-inv",
	[ROCE_RC_REQ_WRITE] = "write",
	[ROCE_RC_REQ_WRITE_IMM] = "write-imm",
	[ROCE_RC_REQ_READ] = "read",
	[ROCE_RC_REQ_CMP_SWAP] = "cmp-swap",
	[ROCE_RC_REQ_FETCH_ADD] = "fetch-add",
};

const char *roce_rc_req_in_name(enum roce_rc_req_in v)
{
	if ((unsigned)v >= ROCE_RC_REQ_IN_NUM)
		return "unknown";
	return roce_rc_req_in_names[v];
}

const char *roce_rc_req_wc_name(enum roce_rc_req_wc v)
{
	if ((unsigned)v >= ROCE_RC_REQ_WC_NUM)
		return "unknown";
	return roce_rc_req_wc_names[v];
}

const char *roce_rc_req_op_name(enum roce_rc_req_op v)
{
	if ((unsigned)v >= ROCE_RC_REQ_OP_NUM)
		return "unknown";
	return roce_rc_req_op_names[v];
}

/* IBA Table 45, in microseconds (the table gives milliseconds: 0.01 .. 491.52, code 0 the longest). */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760,
	327680, 491520,
};

uint32_t roce_rnr_timer_us(uint8_t code)
{
	return rnr_us[code & ROCE_AETH_VAL_MASK];
}

/* ---- helpers ------------------------------------------------------------------- */

static bool op_is_rd(enum roce_rc_req_op op)
{
	return op == ROCE_RC_REQ_READ || op == ROCE_RC_REQ_CMP_SWAP || op == ROCE_RC_REQ_FETCH_ADD;
}

static bool op_is_atomic(enum roce_rc_req_op op)
{
	return op == ROCE_RC_REQ_CMP_SWAP || op == ROCE_RC_REQ_FETCH_ADD;
}

static bool pkey_match(uint16_t a, uint16_t b)
{
	/* IBA 10.9: the low 15 bits match, and not both are limited members (bit 15 clear). */
	return (a & 0x7fffu) != 0 && (a & 0x7fffu) == (b & 0x7fffu) && ((a | b) & 0x8000u);
}

static struct roce_rc_req_wqe *wqe_at(struct roce_rc_req *q, unsigned i)
{
	return &q->wqe[(q->head + i) % ROCE_RC_REQ_MAX_WR];
}

/* The queued WR whose PSN range holds psn, or NULL. */
static struct roce_rc_req_wqe *wqe_of_psn(struct roce_rc_req *q, uint32_t psn)
{
	for (unsigned i = 0; i < q->count; i++) {
		struct roce_rc_req_wqe *w = wqe_at(q, i);

		if (roce_psn_diff(psn, w->first_psn) >= 0 && roce_psn_diff(psn, w->last_psn) <= 0)
			return w;
	}
	return NULL;
}

/* PSNs (packets) a message of len bytes takes: one for an empty one, else ceil(len / pmtu). */
static uint32_t msg_pkts(const struct roce_rc_req *q, uint32_t len)
{
	return len == 0 ? 1 : (uint32_t)(((uint64_t)len + q->cfg.pmtu - 1) / q->cfg.pmtu);
}

/* Sent packets not yet acknowledged exist: the ACK timer has something to guard. */
static bool outstanding(const struct roce_rc_req *q)
{
	return roce_psn_diff(q->sent_max, q->una) > 0;
}

/* ---- init and post ------------------------------------------------------------- */

int roce_rc_req_init(struct roce_rc_req *q, const struct roce_rc_req_cfg *cfg)
{
	const struct roce_rc_req_ops *o = cfg->ops;

	if (o == NULL || o->local_read == NULL || o->local_write == NULL || o->complete == NULL ||
	    o->send_frame == NULL || (o->local_peek == NULL) != (o->send_pieces == NULL))
		return -EINVAL;
	/* The IBA path MTUs; the 2^23-PSN window below relies on at least 256 (2^31 / 256 = 2^23). */
	if (cfg->pmtu != 256 && cfg->pmtu != 512 && cfg->pmtu != 1024 && cfg->pmtu != 2048 && cfg->pmtu != 4096)
		return -EINVAL;
	if (cfg->dqpn > ROCE_QPN_MASK || cfg->sq_psn > ROCE_PSN_MASK || cfg->max_rd_atomic == 0 ||
	    cfg->max_rd_atomic > ROCE_RC_REQ_MAX_RD_ATOMIC || cfg->timeout > 31 || cfg->retry_cnt > 7 ||
	    cfg->rnr_retry > 7)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	q->cfg = *cfg;
	q->ops = o;
	q->ctx = cfg->ctx;
	if (q->cfg.ttl == 0)
		q->cfg.ttl = 64;
	/* 4.096 us * 2^timeout, rounded up so that a short timeout is never 0 (= no timer). UC: no timer. */
	q->timeout_us = cfg->timeout && !cfg->uc ? ((4096ull << cfg->timeout) + 999) / 1000 : 0;
	q->una = q->send_psn = q->sent_max = q->next_psn = cfg->sq_psn;
	q->retry_left = cfg->retry_cnt;
	q->rnr_left = cfg->rnr_retry;
	return 0;
}

int roce_rc_req_post(struct roce_rc_req *q, const struct roce_rc_req_wr *wr)
{
	struct roce_rc_req_wqe *w;
	uint32_t n, used;

	if ((unsigned)wr->op >= ROCE_RC_REQ_OP_NUM)
		return -EINVAL;
	if (q->cfg.uc && wr->op != ROCE_RC_REQ_SEND && wr->op != ROCE_RC_REQ_SEND_IMM && wr->op != ROCE_RC_REQ_WRITE &&
	    wr->op != ROCE_RC_REQ_WRITE_IMM)
		return -EINVAL;
	if (!op_is_atomic(wr->op) && wr->len > ROCE_RC_MAX_MSG)
		return -EINVAL;
	if (q->error)
		return -EPIPE;
	if (q->count == ROCE_RC_REQ_MAX_WR)
		return -ENOSPC;
	n = op_is_atomic(wr->op) ? 1 : msg_pkts(q, wr->len);
	/* Keep una .. next_psn inside the window where roce_psn_diff() orders PSNs. */
	used = (q->next_psn - q->una) & ROCE_PSN_MASK;
	if (n > ROCE_RC_PSN_WINDOW - 1 - used)
		return -ENOSPC;
	w = wqe_at(q, q->count);
	memset(w, 0, sizeof(*w));
	w->wr = *wr;
	if (op_is_atomic(wr->op))
		w->wr.len = 8;
	w->first_psn = q->next_psn;
	w->npsn = n;
	w->last_psn = roce_psn_add(q->next_psn, n - 1);
	w->status = ROCE_RC_REQ_WC_FLUSH_ERR;
	q->next_psn = roce_psn_add(q->next_psn, n);
	q->count++;
	return 0;
}

/* ---- completion and the error state --------------------------------------------- */

/* The head WR is done with status; an unsignaled success is silent but frees its slot all the same. */
static void complete_head(struct roce_rc_req *q, enum roce_rc_req_wc status)
{
	struct roce_rc_req_wqe w = *wqe_at(q, 0);

	q->head = (q->head + 1) % ROCE_RC_REQ_MAX_WR;
	q->count--;
	if (op_is_rd(w.wr.op) && w.sent)
		q->rd_out--;
	if (status != ROCE_RC_REQ_WC_SUCCESS || w.wr.signaled)
		q->ops->complete(q->ctx, w.wr.wr_id, status,
				 status == ROCE_RC_REQ_WC_SUCCESS ? w.wr.len : 0, w.orig);
}

/*
 * Enter the error state: every queued WR completes, in order, with the
 * status an error path put in it (the one that failed) or FLUSH_ERR.
 * Nothing is sent any more; responses are dropped.
 */
static void enter_error(struct roce_rc_req *q)
{
	q->error = true;
	q->timer_armed = false;
	q->rnr_wait = false;
	while (q->count > 0)
		complete_head(q, wqe_at(q, 0)->status);
}

void roce_rc_req_set_error(struct roce_rc_req *q)
{
	enter_error(q);
}

/* The WR holding psn (the head if none does) fails with status and the QP goes to error. */
static void fail_at(struct roce_rc_req *q, uint32_t psn, enum roce_rc_req_wc status)
{
	struct roce_rc_req_wqe *w = wqe_of_psn(q, psn);

	if (w == NULL && q->count > 0)
		w = wqe_at(q, 0);
	if (w != NULL)
		w->status = status;
	enter_error(q);
}

/* ---- acknowledgement ----------------------------------------------------------- */

/* una moved: the retry budgets refill, the go-back is over, the timer restarts if needed. */
static void progress(struct roce_rc_req *q, uint64_t now)
{
	q->retry_left = q->cfg.retry_cnt;
	q->rnr_left = q->cfg.rnr_retry;
	q->went_back = false;
	/* An ACK may overtake a go-back's resend: never send again what is acknowledged. */
	if (roce_psn_diff(q->send_psn, q->una) < 0)
		q->send_psn = q->una;
	q->timer_armed = q->timeout_us != 0 && !q->rnr_wait && outstanding(q);
	q->ack_deadline = now + q->timeout_us;
	q->una_moved_us = now;
	q->responses_since = 0;
	q->stale_since = 0;
}

/*
 * Acknowledge every PSN up to and including last (behind sent_max; may be
 * una - 1, which acknowledges nothing). SEND/WRITE WRs that end at or
 * before last complete, one that spans it is acknowledged up to it.
 * Returns false when a READ or atomic that ends at or before last is still
 * incomplete: the responder executed it and its responses were lost.
 */
static bool ack_upto(struct roce_rc_req *q, uint32_t last, uint64_t now)
{
	bool moved = false, ok = true;

	while (q->count > 0) {
		struct roce_rc_req_wqe *w = wqe_at(q, 0);

		if (roce_psn_diff(w->first_psn, last) > 0)
			break;
		if (op_is_rd(w->wr.op)) {
			/* A READ/atomic at the head is incomplete (its last response completes it). */
			if (roce_psn_diff(w->last_psn, last) <= 0)
				ok = false;
			break;
		}
		if (roce_psn_diff(w->last_psn, last) <= 0) {
			q->una = roce_psn_add(w->last_psn, 1);
			complete_head(q, ROCE_RC_REQ_WC_SUCCESS);
			moved = true;
			continue;
		}
		/* An AckReq part-way through a message: the PSNs so far are acknowledged. */
		if (roce_psn_diff(last, q->una) >= 0) {
			q->una = roce_psn_add(last, 1);
			moved = true;
		}
		break;
	}
	if (moved)
		progress(q, now);
	return ok;
}

/*
 * Go back to una (go-back-N), as a NAK or an implied NAK asks. Only the
 * first sign of a loss at this una goes back; the rest (responses of the
 * packets sent after the lost one, a NAK for them) are echoes. Spends
 * retry_cnt; returns false when that was exhausted and the QP is in error.
 */
static bool go_back(struct roce_rc_req *q)
{
	if (q->went_back)
		return true;
	if (q->retry_left == 0) {
		fail_at(q, q->una, ROCE_RC_REQ_WC_RETRY_EXC_ERR);
		return false;
	}
	q->retry_left--;
	q->went_back = true;
	q->send_psn = q->una;
	return true;
}

static enum roce_rc_req_in implied_nak(struct roce_rc_req *q)
{
	if (q->went_back)
		return ROCE_RC_REQ_IN_ECHO;
	return go_back(q) ? ROCE_RC_REQ_IN_IMPLIED_NAK : ROCE_RC_REQ_IN_FATAL;
}

/* ---- responses ----------------------------------------------------------------- */

static enum roce_rc_req_in on_read_resp(struct roce_rc_req *q, const struct roce_pkt *p, uint32_t psn, uint64_t now)
{
	const uint8_t opcode = p->bth->opcode;
	struct roce_rc_req_wqe *w;
	uint32_t k, off, want;
	bool last;

	if (!ack_upto(q, roce_psn_add(psn, ROCE_PSN_MASK), now))
		return implied_nak(q);
	w = q->count > 0 ? wqe_at(q, 0) : NULL;
	/* Inside the outstanding range a READ response can only have a READ's PSN. */
	if (w == NULL || w->wr.op != ROCE_RC_REQ_READ || roce_psn_diff(psn, w->first_psn) < 0 ||
	    roce_psn_diff(psn, w->last_psn) > 0) {
		fail_at(q, psn, ROCE_RC_REQ_WC_BAD_RESP_ERR);
		return ROCE_RC_REQ_IN_FATAL;
	}
	/* A response ahead of the next one expected: the ones between were lost. */
	if (psn != q->una)
		return implied_nak(q);
	k = (psn - w->first_psn) & ROCE_PSN_MASK;
	last = k == w->npsn - 1;
	/*
	 * Opcodes: a (re-)request is answered FIRST..LAST or ONLY from
	 * wherever it started, so FIRST may come at any index but the last,
	 * ONLY only at the last; MIDDLE neither first nor last, LAST only last.
	 * Lengths: full packets before the last (the parser checked FIRST and
	 * MIDDLE), the remainder on the last.
	 */
	off = k * q->cfg.pmtu;  /* k < npsn, so off < len <= 2^31 (or 0) */
	want = last ? w->wr.len - off : q->cfg.pmtu;
	if ((opcode == ROCE_RC_RDMA_READ_RESPONSE_FIRST && last) ||
	    (opcode == ROCE_RC_RDMA_READ_RESPONSE_MIDDLE && (last || k == 0)) ||
	    (opcode == ROCE_RC_RDMA_READ_RESPONSE_LAST && (!last || k == 0)) ||
	    (opcode == ROCE_RC_RDMA_READ_RESPONSE_ONLY && !last) || p->payload_len != want) {
		fail_at(q, psn, ROCE_RC_REQ_WC_BAD_RESP_ERR);
		return ROCE_RC_REQ_IN_FATAL;
	}
	if (want > 0 && q->ops->local_write(q->ctx, w->wr.wr_id, off, p->payload, want) != 0) {
		fail_at(q, psn, ROCE_RC_REQ_WC_LOC_PROT_ERR);
		return ROCE_RC_REQ_IN_FATAL;
	}
	q->una = roce_psn_add(psn, 1);
	if (last)
		complete_head(q, ROCE_RC_REQ_WC_SUCCESS);
	progress(q, now);
	return ROCE_RC_REQ_IN_READ_RESP;
}

static enum roce_rc_req_in on_atomic_ack(struct roce_rc_req *q, const struct roce_pkt *p, uint32_t psn, uint64_t now)
{
	struct roce_rc_req_wqe *w;

	if (!ack_upto(q, roce_psn_add(psn, ROCE_PSN_MASK), now))
		return implied_nak(q);
	w = q->count > 0 ? wqe_at(q, 0) : NULL;
	if (w == NULL || !op_is_atomic(w->wr.op) || w->first_psn != psn) {
		fail_at(q, psn, ROCE_RC_REQ_WC_BAD_RESP_ERR);
		return ROCE_RC_REQ_IN_FATAL;
	}
	w->orig = be64_get(p->atomic_ack->orig);
	q->una = roce_psn_add(psn, 1);
	complete_head(q, ROCE_RC_REQ_WC_SUCCESS);
	progress(q, now);
	return ROCE_RC_REQ_IN_ATOMIC_ACK;
}

static enum roce_rc_req_in on_nak(struct roce_rc_req *q, uint8_t code, uint32_t psn, uint64_t now)
{
	enum roce_rc_req_wc status;

	/* The NAK's PSN is the packet the responder refused: everything before it was executed. */
	if (!ack_upto(q, roce_psn_add(psn, ROCE_PSN_MASK), now) && code == ROCE_NAK_PSN_SEQ_ERR)
		return implied_nak(q);
	switch (code) {
	case ROCE_NAK_PSN_SEQ_ERR:
		if (q->went_back)
			return ROCE_RC_REQ_IN_ECHO;
		return go_back(q) ? ROCE_RC_REQ_IN_SEQ_NAK : ROCE_RC_REQ_IN_FATAL;
	case ROCE_NAK_INVALID_REQ:
		status = ROCE_RC_REQ_WC_REM_INV_REQ_ERR;
		break;
	case ROCE_NAK_REM_ACCESS_ERR:
		status = ROCE_RC_REQ_WC_REM_ACCESS_ERR;
		break;
	case ROCE_NAK_REM_OP_ERR:
		status = ROCE_RC_REQ_WC_REM_OP_ERR;
		break;
	case ROCE_NAK_INVALID_RD_REQ:
		status = ROCE_RC_REQ_WC_REM_INV_RD_REQ_ERR;
		break;
	default:
		/* Reserved NAK codes: the responder says no, we cannot tell why. */
		status = ROCE_RC_REQ_WC_BAD_RESP_ERR;
		break;
	}
	fail_at(q, psn, status);
	return ROCE_RC_REQ_IN_FATAL;
}

static enum roce_rc_req_in on_rnr(struct roce_rc_req *q, uint8_t timer, uint32_t psn, uint64_t now)
{
	/* Everything before the refused packet was executed; an earlier READ may still need its answer. */
	if (!ack_upto(q, roce_psn_add(psn, ROCE_PSN_MASK), now))
		return implied_nak(q);
	/* A second RNR NAK for the packet we already wait to resend (a duplicate on the link). */
	if (q->rnr_wait && psn == q->una)
		return ROCE_RC_REQ_IN_ECHO;
	if (q->cfg.rnr_retry != 7) {
		if (q->rnr_left == 0) {
			fail_at(q, psn, ROCE_RC_REQ_WC_RNR_RETRY_EXC_ERR);
			return ROCE_RC_REQ_IN_FATAL;
		}
		q->rnr_left--;
	}
	/*
	 * Wait, then resend from the refused packet. The packets sent after
	 * it draw a sequence NAK or silence: echoes of this go-back. The ACK
	 * timer rests meanwhile; the wait is the responder's request, not a loss.
	 */
	q->send_psn = q->una;
	q->went_back = true;
	q->rnr_wait = true;
	q->rnr_until = now + roce_rnr_timer_us(timer);
	q->timer_armed = false;
	return ROCE_RC_REQ_IN_RNR_NAK;
}

static enum roce_rc_req_in classify(struct roce_rc_req *q, const struct roce_pkt *p, uint64_t now)
{
	const uint8_t opcode = p->bth->opcode;
	const uint32_t psn = roce_bth_psn(p->bth);
	uint8_t syn;

	if (q->cfg.uc || p->op->request || (opcode & ROCE_TRANSPORT_MASK) != ROCE_TRANSPORT_RC)
		return ROCE_RC_REQ_IN_NOT_RESPONSE; /* UC has no responses */
	if (q->error)
		return ROCE_RC_REQ_IN_ERR_DROP;
	if (!pkey_match(roce_bth_pkey(p->bth), q->cfg.pkey))
		return ROCE_RC_REQ_IN_PKEY_DROP;
	/*
	 * Only PSNs in [una, sent_max) answer something outstanding. Behind
	 * una: an answer to a duplicate (the responder ACKs ePSN - 1) or a
	 * late copy; at or past sent_max: nothing we sent.
	 */
	if (roce_psn_diff(psn, q->una) < 0 || roce_psn_diff(psn, q->sent_max) >= 0)
		return ROCE_RC_REQ_IN_STALE;

	switch (opcode) {
	case ROCE_RC_RDMA_READ_RESPONSE_FIRST:
	case ROCE_RC_RDMA_READ_RESPONSE_MIDDLE:
	case ROCE_RC_RDMA_READ_RESPONSE_LAST:
	case ROCE_RC_RDMA_READ_RESPONSE_ONLY:
		return on_read_resp(q, p, psn, now);
	case ROCE_RC_ATOMIC_ACKNOWLEDGE:
		return on_atomic_ack(q, p, psn, now);
	case ROCE_RC_ACKNOWLEDGE:
		break;
	default:
		return ROCE_RC_REQ_IN_NOT_RESPONSE;
	}
	syn = roce_aeth_syndrome(p->aeth);
	switch (roce_aeth_kind(syn)) {
	case ROCE_AETH_KIND_ACK:
		/* Credits are not used (RoCE responders send 31, "no credits"). */
		if (!ack_upto(q, psn, now))
			return implied_nak(q);
		return ROCE_RC_REQ_IN_ACK;
	case ROCE_AETH_KIND_RNR:
		return on_rnr(q, roce_aeth_value(syn), psn, now);
	case ROCE_AETH_KIND_NAK:
		return on_nak(q, roce_aeth_value(syn), psn, now);
	default:
		/* Syndrome kinds 010 and 100..111 are reserved. */
		fail_at(q, psn, ROCE_RC_REQ_WC_BAD_RESP_ERR);
		return ROCE_RC_REQ_IN_FATAL;
	}
}

enum roce_rc_req_in roce_rc_req_input(struct roce_rc_req *q, const struct roce_pkt *pkt, uint64_t now_us)
{
	enum roce_rc_req_in v;

	/* Counted first: a response that moves una starts the count again from 0. */
	q->last_response_us = now_us;
	if (q->responses_since < UINT32_MAX)
		q->responses_since++;
	v = classify(q, pkt, now_us);
	if (v == ROCE_RC_REQ_IN_STALE && q->stale_since < UINT32_MAX)
		q->stale_since++;
	q->stats[v]++;
	return v;
}

/* ---- sending ------------------------------------------------------------------- */

/* The opcode of packet k of n of a SEND or WRITE. */
static uint8_t seg_opcode(enum roce_rc_req_op op, uint32_t k, uint32_t n)
{
	static const uint8_t tbl[][4] = {
		/* ONLY, FIRST, MIDDLE, LAST */
		[ROCE_RC_REQ_SEND] = { ROCE_RC_SEND_ONLY, ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST },
		[ROCE_RC_REQ_SEND_IMM] = { ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE,
					   ROCE_RC_SEND_LAST_WITH_IMMEDIATE },
		[ROCE_RC_REQ_SEND_INV] = { ROCE_RC_SEND_ONLY_WITH_INVALIDATE, ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE,
					   ROCE_RC_SEND_LAST_WITH_INVALIDATE },
		[ROCE_RC_REQ_WRITE] = { ROCE_RC_RDMA_WRITE_ONLY, ROCE_RC_RDMA_WRITE_FIRST, ROCE_RC_RDMA_WRITE_MIDDLE,
					ROCE_RC_RDMA_WRITE_LAST },
		[ROCE_RC_REQ_WRITE_IMM] = { ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_FIRST,
					    ROCE_RC_RDMA_WRITE_MIDDLE, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE },
	};
	unsigned seg = n == 1 ? 0 : k == 0 ? 1 : k == n - 1 ? 3 : 2;

	return tbl[op][seg];
}

/*
 * Build and hand over packet k of WR w (for a READ: the request for its
 * responses k .. npsn - 1). False when the QP went to error (local_read refused).
 */
static bool send_packet(struct roce_rc_req *q, struct roce_rc_req_wqe *w, uint32_t k)
{
	uint8_t buf[ROCE_FRAME_HEADROOM + ROCE_RC_REQ_FRAME_MAX];
	uint8_t *frame = buf + ROCE_FRAME_HEADROOM, *data;
	const struct roce_rc_req_wr *wr = &w->wr;
	const bool last = k == w->npsn - 1;
	const void *in_place = NULL; /* the payload, read where it lies in the WR's buffer */
	struct roce_frame_desc d;
	uint32_t off = k * q->cfg.pmtu;     /* k < npsn: off < len <= 2^31, or 0 */
	size_t flen;

	memset(&d, 0, sizeof(d));
	memcpy(d.dst_mac, q->cfg.dst_mac, sizeof(d.dst_mac));
	memcpy(d.src_mac, q->cfg.src_mac, sizeof(d.src_mac));
	d.src_ip = q->cfg.src_ip;
	d.dst_ip = q->cfg.dst_ip;
	d.tos = q->cfg.tos;
	d.ttl = q->cfg.ttl;
	d.ip_id = q->ip_id++;
	d.df = true;
	d.sport = q->cfg.sport;
	d.pkey = q->cfg.pkey;
	d.dqpn = q->cfg.dqpn;
	d.psn = roce_psn_add(w->first_psn, k);

	switch (wr->op) {
	case ROCE_RC_REQ_READ:
		d.opcode = ROCE_RC_RDMA_READ_REQUEST;
		/* A re-request asks for the remainder from response k on, with a RETH of its own. */
		d.reth.va = wr->va + off;
		d.reth.rkey = wr->rkey;
		d.reth.len = wr->len - off;
		d.ackreq = true;
		break;
	case ROCE_RC_REQ_CMP_SWAP:
	case ROCE_RC_REQ_FETCH_ADD:
		d.opcode = wr->op == ROCE_RC_REQ_CMP_SWAP ? ROCE_RC_COMPARE_SWAP : ROCE_RC_FETCH_ADD;
		d.atomic.va = wr->va;
		d.atomic.rkey = wr->rkey;
		d.atomic.swap_add = wr->swap_add;
		d.atomic.compare = wr->compare;
		d.ackreq = true;
		break;
	default: {
		uint32_t chunk = wr->len == 0 ? 0 : (wr->len - off < q->cfg.pmtu ? wr->len - off : q->cfg.pmtu);

		d.opcode = seg_opcode(wr->op, k, w->npsn);
		if (q->cfg.uc)
			d.opcode |= ROCE_TRANSPORT_UC; /* UC's SEND and WRITE opcodes are RC's, 0x20 on */
		if (k == 0) {
			/* RETH on WRITE FIRST/ONLY: the whole message's address and length. */
			d.reth.va = wr->va;
			d.reth.rkey = wr->rkey;
			d.reth.len = wr->len;
		}
		d.imm = wr->imm;
		d.ieth_rkey = wr->inv_rkey;
		d.ackreq = !q->cfg.uc && (last || (q->cfg.ackreq_every != 0 && (k + 1) % q->cfg.ackreq_every == 0));
		d.se = last && wr->solicited &&
		       (wr->op == ROCE_RC_REQ_SEND || wr->op == ROCE_RC_REQ_SEND_IMM || wr->op == ROCE_RC_REQ_SEND_INV ||
			wr->op == ROCE_RC_REQ_WRITE_IMM);
		/*
		 * The bytes read where they lie (the owner copies them once, into what it sends), or
		 * read straight into their place in the frame (chunk <= pmtu <= 4096).
		 */
		if (chunk > 0 && q->ops->local_peek != NULL)
			in_place = q->ops->local_peek(q->ctx, wr->wr_id, off, chunk);
		data = in_place != NULL ? (uint8_t *)NULL : frame + roce_payload_offset(d.opcode);
		if (chunk > 0 && in_place == NULL && q->ops->local_read(q->ctx, wr->wr_id, off, data, chunk) != 0) {
			w->status = ROCE_RC_REQ_WC_LOC_PROT_ERR;
			enter_error(q);
			return false;
		}
		d.payload = chunk == 0 ? NULL : in_place != NULL ? in_place : data;
		d.payload_len = chunk;
		d.pad = (uint8_t)((4 - chunk % 4) % 4);
		break;
	}
	}
	if (in_place != NULL) {
		uint8_t trailer[ROCE_TRAILER_MAX];
		size_t hlen, tlen;

		if (roce_build_pieces(&d, frame, ROCE_RC_REQ_FRAME_MAX, &hlen, trailer, &tlen) != ROCE_OK) {
			q->build_errors++; /* as below */
			return true;
		}
		q->frames_sent++;
		q->frames_in_place++;
		q->ops->send_pieces(q->ctx, frame, hlen, in_place, d.payload_len, trailer, tlen);
		return true;
	}
	if (roce_build(&d, frame, ROCE_RC_REQ_FRAME_MAX, &flen) != ROCE_OK) {
		/* Only a bug of ours gets here (every field is in range); count it, send nothing. */
		q->build_errors++;
		return true;
	}
	q->frames_sent++;
	q->ops->send_frame(q->ctx, frame, flen);
	return true;
}

unsigned roce_rc_req_pump(struct roce_rc_req *q, unsigned budget, uint64_t now_us)
{
	unsigned sent = 0;

	while (sent < budget && !q->error && q->send_psn != q->next_psn) {
		struct roce_rc_req_wqe *w;
		uint32_t k;

		if (q->rnr_wait) {
			if (now_us < q->rnr_until)
				break;
			q->rnr_wait = false;
		}
		if (q->cfg.max_unacked && ((q->send_psn - q->una) & ROCE_PSN_MASK) >= q->cfg.max_unacked) {
			q->window_blocked++;
			break;
		}
		w = wqe_of_psn(q, q->send_psn);
		if (w == NULL)
			break;  /* not reachable: send_psn lies in [una, next_psn), all of it queued */
		k = (q->send_psn - w->first_psn) & ROCE_PSN_MASK;
		/* A new READ/atomic waits until fewer than max_rd_atomic are out (the QP's initiator depth). */
		if (op_is_rd(w->wr.op) && !w->sent) {
			if (q->rd_out >= q->cfg.max_rd_atomic) {
				q->rd_blocked++;
				break;
			}
			q->rd_out++;
		}
		w->sent = true;
		if (roce_psn_diff(q->send_psn, q->sent_max) < 0)
			q->retransmits++;
		if (!send_packet(q, w, k))
			break;
		/* A READ request stands for all its remaining responses' PSNs. */
		q->send_psn = w->wr.op == ROCE_RC_REQ_READ ? roce_psn_add(w->last_psn, 1) : roce_psn_add(q->send_psn, 1);
		if (roce_psn_diff(q->send_psn, q->sent_max) > 0)
			q->sent_max = q->send_psn;
		/* UC: nothing will answer; a packet out is a packet done (the WR completes with its last). */
		if (q->cfg.uc)
			(void)ack_upto(q, roce_psn_add(q->send_psn, ROCE_PSN_MASK), now_us);
		if (!q->timer_armed && q->timeout_us != 0) {
			q->timer_armed = true;
			q->ack_deadline = now_us + q->timeout_us;
		}
		sent++;
	}
	return sent;
}

/* ---- timers -------------------------------------------------------------------- */

void roce_rc_req_tick(struct roce_rc_req *q, uint64_t now_us)
{
	if (q->error)
		return;
	if (q->rnr_wait && now_us >= q->rnr_until)
		q->rnr_wait = false;    /* pump resends from una */
	if (!q->timer_armed || now_us < q->ack_deadline)
		return;
	q->timer_armed = false;
	if (!outstanding(q))
		return;
	q->timeouts++;
	/* The timeout always goes back, even when a NAK already did: that resend was lost too. */
	q->went_back = false;
	(void)go_back(q);
}

uint64_t roce_rc_req_next_deadline(const struct roce_rc_req *q)
{
	if (q->error)
		return UINT64_MAX;
	if (q->rnr_wait)
		return q->rnr_until;
	return q->timer_armed ? q->ack_deadline : UINT64_MAX;
}
