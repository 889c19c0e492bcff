/*
 * The work-queue engine of the RDMA LIF (interface version 1): send queue
 * WQEs executed against the memory-region table, receive WQEs consumed by
 * incoming messages, completions in the driver's formats (SEND_MSN for
 * remote operations, SEND_NPG for everything else, RECV in order) and the
 * "virtual wire" between queue pairs of the same guest (the loopback
 * fabric). Tracks ionic_rdma of Linux 7.2 (ionic_datapath.c, ionic_fw.h)
 * and rdma-core's libionic.
 *
 * Every key, length and index a WQE carries is checked before use; a bad
 * one completes that WQE with an error status and moves its QP to the error
 * state, as a real RNIC would, and the server goes on.
 *
 * Bounded work. One event-loop thread runs everything, and a WQE may move up
 * to 2 GiB: the engine therefore spends at most a budget (TURN_BUDGET bytes
 * copied, WQE_COST per WQE) before it yields. A QP whose work the budget did
 * not cover goes on the run queue, and rdma_work() gives the queue one fresh
 * budget per turn of the loop, a slice per QP in turn, so the socket, the
 * other QPs and everything else are served between two slices. A WQE stopped
 * half-way keeps its state in the QP's job: later WQEs of that QP wait behind
 * it and its completion is written after its last byte. See docs/ionic.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ionic/ionic_rdma_engine.h"
#include "util/inet_csum.h"
#include "util/log.h"

void rdma_qp_error(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint8_t code)
{
	if (qp->state == IONIC_QPS_ERR)
		return;
	LOG_DEBUG("ionic rdma: QP %u to error (event %u)", qpid, code);
	qp->state = IONIC_QPS_ERR;
	rdma_qp_halt(dev, qpid);
	if (qp->sq.present && dev->rdma->cq[qp->sq.cq_id].valid)
		rdma_eq_post(dev, dev->rdma->cq[qp->sq.cq_id].eq_id, IONIC_V1_EQE_TYPE_QP, code, qpid);
	rdma_qp_flush(dev, qpid, qp);
}

/* ---- the send side ------------------------------------------------------------------------------------ */

#define RECV_OP_NONE 0xff /* an RDMA READ or WRITE: no receive at the peer */

/* The phases of an RC/UC WQE that moves bytes (SEND, SEND_IMM, SEND_INV, RDMA WRITE, WRITE_IMM, READ). */
enum job_phase {
	JOB_COPY,        /* the payload moves, slice by slice */
	JOB_IMM,         /* WRITE_IMM: the payload is in place; its immediate needs the peer's next receive */
	JOB_NUM_PHASES,
};

/*
 * A send WQE in progress, kept in its QP between slices: the WQE as read,
 * the peer (its id, and its epoch when the WQE started: a different one
 * means the peer left service meanwhile), the peer's receive the message
 * fills (held from the first byte to the completion, so the peer's receives
 * complete in order and nobody else takes this one), and the copy.
 */
struct rdma_job {
	struct wqe_ctx w;
	bool active;             /* a WQE is in progress; everything below is its state */
	uint8_t phase;           /* enum job_phase */
	uint8_t recv_op;         /* IONIC_V1_CQE_RECV_OP_* the peer's receive completes with, or RECV_OP_NONE */
	bool read;               /* RDMA READ: the remote range is the source */
	uint32_t peer_id, peer_epoch;
	bool claimed;            /* the peer's next receive (rid, rsgl) is this message's */
	le64 rid;
	struct sgl rsgl;
	struct recv_info ri;
	struct xfer x;
};

/* The connected peer of an RC/UC QP on the loopback fabric. */
static struct rdma_qp *peer_of(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t *peer_id)
{
	struct rdma_qp *p;

	if (qp->dest_qpn == 0 || qp->dest_qpn >= IONIC_RDMA_NQP)
		return NULL;
	p = &dev->rdma->qp[qp->dest_qpn];
	if (!p->valid || p->type != qp->type || (p->state != IONIC_QPS_RTR && p->state != IONIC_QPS_RTS))
		return NULL;
	*peer_id = qp->dest_qpn;
	return p;
}

/* Every SGE of a local SGL resolves for the access (keys, PD, rights, ranges). */
bool rdma_sgl_ok(struct ionic_dev *dev, const struct rdma_qp *qp, const struct sgl *sgl, uint16_t need)
{
	for (unsigned int i = 0; i < sgl->n; i++) {
		const struct rdma_mr *mr;
		uint64_t off;

		if (rdma_mr_resolve(dev, qp, sgl->e[i].key, sgl->e[i].va, sgl->e[i].len, need, &mr, &off))
			return false;
	}
	return true;
}

/* ---- the run queue and the QPs' work state ---------------------------------------------------------------- */

void rdma_runq_add(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];

	if (qp->on_runq)
		return;
	qp->on_runq = true;
	qp->run_next = 0;
	qp->run_prev = r->run_tail;
	if (r->run_tail)
		r->qp[r->run_tail].run_next = qpid;
	else
		r->run_head = qpid;
	r->run_tail = qpid;
}

static void runq_remove(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];

	if (!qp->on_runq)
		return;
	if (qp->run_prev)
		r->qp[qp->run_prev].run_next = qp->run_next;
	else
		r->run_head = qp->run_next;
	if (qp->run_next)
		r->qp[qp->run_next].run_prev = qp->run_prev;
	else
		r->run_tail = qp->run_prev;
	qp->on_runq = false;
	qp->run_next = qp->run_prev = 0;
}

/* j's peer if it is still the QP j started with and can take part (RTR or RTS); NULL if it left. */
static struct rdma_qp *job_peer(struct ionic_dev *dev, const struct rdma_job *j)
{
	struct rdma_qp *p = &dev->rdma->qp[j->peer_id];

	if (!p->valid || p->epoch != j->peer_epoch || (p->state != IONIC_QPS_RTR && p->state != IONIC_QPS_RTS))
		return NULL;
	return p;
}

/*
 * A receive of qpid's became free (a message that held it completed or went
 * away): if a sender found it held meanwhile, senders waiting for a receive
 * try again on a later slice, and an in-process peer's waiting messages go
 * now. (Nobody else is woken: a waiting sender retries when receives are
 * posted, as it always did.)
 */
static void rq_released(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;

	if (!r->qp[qpid].rq_claim_waited)
		return;
	r->qp[qpid].rq_claim_waited = false;
	if (r->rnr_waiters)
		for (uint32_t i = 1; i < IONIC_RDMA_NQP; i++)
			if (r->qp[i].valid && r->qp[i].rnr_wait)
				rdma_runq_add(dev, i);
	if (r->peer.rq_posted)
		r->peer.rq_posted(r->peer.ctx, qpid);
}

/*
 * Hold the peer's next receive for j's message. 0; -EBUSY while another
 * QP's message holds it; otherwise as rq_peek (a malformed receive is
 * taken, as before).
 */
static int rq_claim(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	int rc;

	if (peer->rq_claim) {
		peer->rq_claim_waited = true;
		return -EBUSY;
	}
	rc = rdma_rq_peek(dev, peer, &j->rid, &j->rsgl);
	if (rc == 0) {
		peer->rq_claim = j->w.qpid;
		j->claimed = true;
	} else if (rc == -EINVAL) {
		peer->rq.head++;
	}
	return rc;
}

/* Let go of the peer's receive j holds (if the peer is still the one j started with). */
static void rq_unclaim(struct ionic_dev *dev, struct rdma_job *j)
{
	struct rdma_qp *p = &dev->rdma->qp[j->peer_id];

	if (!j->claimed)
		return;
	j->claimed = false;
	if (p->valid && p->epoch == j->peer_epoch && p->rq_claim == j->w.qpid) {
		p->rq_claim = 0;
		rq_released(dev, j->peer_id);
	}
}

/* j's message is done with the receive it holds: taken from the peer's queue, and let go. */
static void rq_commit(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	if (!j->claimed)
		return;
	peer->rq.head++;
	rq_unclaim(dev, j);
}

static void job_end(struct ionic_dev *dev, struct rdma_job *j)
{
	if (!j->active)
		return;
	rq_unclaim(dev, j);
	j->active = false;
}

/* The WQE in j starts work that may take several slices, against peer. */
static void job_begin(struct rdma_job *j, struct rdma_qp *peer, uint32_t peer_id, uint8_t recv_op)
{
	j->active = true;
	j->peer_id = peer_id;
	j->peer_epoch = peer->epoch;
	j->recv_op = recv_op;
	j->claimed = false;
	j->read = false;
	j->phase = JOB_COPY;
	j->ri = (struct recv_info){ .src_qpn = j->w.qpid, .op = recv_op, .imm_rkey = { j->w.h.imm_data_key.v },
				    .solicited = (j->w.flags & IONIC_V1_FLAG_SOL) != 0 };
}

void rdma_qp_halt(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];

	qp->epoch = ++r->epochs;
	rdma_wire_detach(dev, qpid, qp);
	qp->rq_claim = 0; /* void: the holder sees the new epoch */
	qp->rq_claim_waited = false;
	if (qp->job)
		job_end(dev, qp->job);
	runq_remove(dev, qpid);
	/*
	 * A peer's WQE moving bytes to or from it is on the run queue and learns
	 * of it at its next slice; one waiting for a receive here, when it is
	 * woken (as before, when such a WQE was retried from its start).
	 */
}

void rdma_qp_release(struct ionic_dev *dev, uint32_t qpid)
{
	struct rdma_qp *qp = &dev->rdma->qp[qpid];

	rdma_qp_halt(dev, qpid);
	free(qp->job);
	qp->job = NULL;
}

/* ---- RC and UC ------------------------------------------------------------------------------------------------ */

/* A local fault of an RDMA READ/WRITE is the requester's; a remote one an access violation at the responder. */
static int fail_rdma(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer, bool local_fault)
{
	struct wqe_ctx *w = &j->w;

	rdma_complete_msn(dev, w->qpid, w->qp, local_fault ? IONIC_STS_LOCAL_PROT_ERR : IONIC_STS_REMOTE_ACC_ERR);
	rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	if (!local_fault)
		rdma_qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR_ACCESS);
	return WQE_DONE;
}

/* The copy of a message or an RDMA READ/WRITE failed on one side. */
static int job_fault(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer, bool src_failed)
{
	struct wqe_ctx *w = &j->w;

	if (j->recv_op == RECV_OP_NONE || j->recv_op == IONIC_V1_CQE_RECV_OP_RDMA_IMM)
		return fail_rdma(dev, j, peer, src_failed == !j->read);
	/* A message: the receive it was filling completes in error; both QPs go to the error state. */
	rq_commit(dev, j, peer);
	rdma_complete_recv(dev, j->peer_id, peer, j->rid, &j->ri, 0,
			   src_failed ? IONIC_STS_REMOTE_OPER_ERR : IONIC_STS_LOCAL_PROT_ERR);
	rdma_complete_msn(dev, w->qpid, w->qp, src_failed ? IONIC_STS_LOCAL_PROT_ERR : IONIC_STS_REMOTE_OPER_ERR);
	rdma_qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR);
	rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	return WQE_DONE;
}

/* The peer's next receive for a message without one held yet: WQE_GO_ON when held, WQE_DONE or WQE_BLOCKED. */
static int job_claim(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	struct wqe_ctx *w = &j->w;
	int rc = rq_claim(dev, j, peer);

	if (rc == -EAGAIN && w->qp->type == IONIC_QPT_UC) {
		rdma_complete_msn(dev, w->qpid, w->qp, 0); /* UC has no RNR: the message is silently lost */
		return WQE_DONE;
	}
	/* Receiver not ready, or its next receive is another message's: wait for a receive (RNR, retried forever). */
	if (rc == -EAGAIN || rc == -EBUSY)
		return WQE_BLOCKED;
	if (rc) {
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_REMOTE_OPER_ERR);
		rdma_qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	return WQE_GO_ON;
}

/* Everything moved: the peer's receive (if any) and the requester complete. */
static int job_finish(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	struct wqe_ctx *w = &j->w;

	rq_commit(dev, j, peer);
	if (j->recv_op == IONIC_V1_CQE_RECV_OP_SEND_INV &&
	    rdma_key_invalidate(dev, peer, be32_get(w->h.imm_data_key), true) != 0) {
		/* A key the receiver cannot invalidate: an invalid request, as on the wire (a NAK). */
		rdma_complete_recv(dev, j->peer_id, peer, j->rid, &j->ri, 0, IONIC_STS_LOCAL_QP_OPER_ERR);
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_REMOTE_INV_REQ_ERR);
		rdma_qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR_REQUEST);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (j->recv_op != RECV_OP_NONE)
		rdma_complete_recv(dev, j->peer_id, peer, j->rid, &j->ri, (uint32_t)w->sgl.total, 0);
	rdma_complete_msn(dev, w->qpid, w->qp, 0);
	return WQE_DONE;
}

/*
 * One slice of a WQE in progress (from its start, or resumed): WQE_MORE when
 * the budget ran out first, WQE_BLOCKED when it waits for a receive,
 * WQE_DONE when it completed (successfully or not).
 */
static int job_run(struct ionic_dev *dev, struct rdma_job *j)
{
	struct wqe_ctx *w = &j->w;
	struct rdma_qp *peer = job_peer(dev, j);
	int rc;

	if (!peer) {
		/*
		 * The responder left (destroyed, reset, error) with the message half
		 * done: the requester gives up as after its retries. Its receive, if
		 * this message held one, went with it.
		 */
		j->claimed = false;
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_RETRY_EXCEEDED);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (j->phase == JOB_COPY) {
		/* The responder's access flags are checked on every slice, as on every packet. */
		if (j->recv_op == RECV_OP_NONE || j->recv_op == IONIC_V1_CQE_RECV_OP_RDMA_IMM) {
			if (!(peer->access & (j->read ? IONIC_QPF_REMOTE_READ : IONIC_QPF_REMOTE_WRITE)))
				return fail_rdma(dev, j, peer, false);
		}
		rc = rdma_xfer_step(dev, &j->x, true);
		if (rc == XFER_MORE)
			return WQE_MORE;
		if (rc != XFER_DONE)
			return job_fault(dev, j, peer, rc == XFER_SRC_FAULT);
		if (j->recv_op != IONIC_V1_CQE_RECV_OP_RDMA_IMM)
			return job_finish(dev, j, peer);
		j->phase = JOB_IMM;
	}
	/* WRITE_IMM's message part: checked as a SEND's (an empty SGE with a bad key fails here). */
	if (!rdma_sgl_ok(dev, w->qp, &w->sgl, 0)) {
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_PROT_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	rc = job_claim(dev, j, peer);
	return rc == WQE_GO_ON ? job_finish(dev, j, peer) : rc;
}

/* SEND, SEND_IMM and SEND_INV on RC/UC: a message into the peer's next receive. */
static int exec_rc_message(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer, uint32_t peer_id,
			   uint8_t recv_op)
{
	struct wqe_ctx *w = &j->w;
	struct endpoint src = { .qp = w->qp, .sgl = &w->sgl };
	struct endpoint dst = { .qp = peer, .sgl = &j->rsgl, .need = IONIC_MRF_LOCAL_WRITE };
	uint64_t len = w->sgl.total;
	int rc;

	/* A requester's own fault fails before anything is sent: the responder keeps its receive. */
	if (!rdma_sgl_ok(dev, w->qp, &w->sgl, 0)) {
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_PROT_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	job_begin(j, peer, peer_id, recv_op);
	rc = job_claim(dev, j, peer);
	if (rc != WQE_GO_ON) {
		job_end(dev, j); /* nothing was done: a blocked WQE starts afresh when it is run again */
		return rc;
	}
	if (len > j->rsgl.total) {
		/* The responder saw an invalid request; the requester gets the NAK's status. */
		rq_commit(dev, j, peer);
		rdma_complete_recv(dev, peer_id, peer, j->rid, &j->ri, 0, IONIC_STS_LOCAL_LEN_ERR);
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_REMOTE_INV_REQ_ERR);
		rdma_qp_error(dev, peer_id, peer, IONIC_V1_EQE_QP_ERR_REQUEST);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	rdma_xfer_init(&j->x, &src, &dst, len);
	return job_run(dev, j);
}

/* Gather a WQE's local SGL into buf (at most cap bytes). 0, or an IONIC_STS_* for the sender. */
uint32_t rdma_gather(struct ionic_dev *dev, struct wqe_ctx *w, void *buf, size_t cap)
{
	struct endpoint src = { .qp = w->qp, .sgl = &w->sgl };
	struct cursor c = { &w->sgl, 0, 0 };
	uint64_t unused = 0;

	if (w->sgl.total > cap)
		return IONIC_STS_REMOTE_INV_REQ_ERR;
	rdma_charge(dev->rdma, w->sgl.total);
	return rdma_ep_xfer(dev, &src, &c, &unused, buf, (size_t)w->sgl.total, RDMA_FROM_GUEST) ? IONIC_STS_LOCAL_PROT_ERR
											 : 0;
}

/*
 * An RC QP connected to an in-process peer: SENDs go to it; it never serves
 * RDMA READ/WRITE. The peer moves its data (an NVMe-oF command's, at most
 * MDTS: 1 MiB) before it returns, with ionic_rdma_peer_xfer(), which charges
 * the budget: the next capsule waits for the next slice.
 */
static int exec_rc_to_peer(struct ionic_dev *dev, struct wqe_ctx *w)
{
	static uint8_t msg[PEER_MSG_MAX];
	uint32_t st;

	if (w->h.op != IONIC_V1_OP_SEND && w->h.op != IONIC_V1_OP_SEND_IMM && w->h.op != IONIC_V1_OP_SEND_INV)
		st = IONIC_STS_REMOTE_ACC_ERR;
	else if (w->flags & IONIC_V1_FLAG_INL)
		st = IONIC_STS_LOCAL_QP_OPER_ERR;
	else
		st = rdma_gather(dev, w, msg, sizeof(msg));
	if (st == 0)
		st = dev->rdma->peer.rc_send(dev->rdma->peer.ctx, w->qpid, w->qp->dest_qpn, msg, (size_t)w->sgl.total);
	rdma_complete_msn(dev, w->qpid, w->qp, st);
	if (st)
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	return WQE_DONE;
}

static int exec_rc(struct ionic_dev *dev, struct rdma_job *j)
{
	struct wqe_ctx *w = &j->w;
	struct ionic_v1_common_bdy b;
	struct rdma_qp *peer;
	uint32_t peer_id;

	if (w->qp->wire)
		return rdma_exec_rc_wire(dev, w);
	memcpy(&b, w->wqe + sizeof(w->h), sizeof(b));
	peer = peer_of(dev, w->qp, &peer_id);
	if (!peer && dev->rdma->peer.rc_owns && dev->rdma->peer.rc_owns(dev->rdma->peer.ctx, w->qp->dest_qpn))
		return exec_rc_to_peer(dev, w);
	if (!peer) {
		/* Nobody at the other end: the transport gives up, as after its retries. */
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_RETRY_EXCEEDED);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (w->flags & IONIC_V1_FLAG_INL) {
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_QP_OPER_ERR); /* inline data: not offered */
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	switch (w->h.op) {
	case IONIC_V1_OP_SEND:
		return exec_rc_message(dev, j, peer, peer_id, IONIC_V1_CQE_RECV_OP_SEND);
	case IONIC_V1_OP_SEND_IMM:
		return exec_rc_message(dev, j, peer, peer_id, IONIC_V1_CQE_RECV_OP_SEND_IMM);
	case IONIC_V1_OP_SEND_INV:
		return exec_rc_message(dev, j, peer, peer_id, IONIC_V1_CQE_RECV_OP_SEND_INV);
	case IONIC_V1_OP_RDMA_WRITE:
	case IONIC_V1_OP_RDMA_WRITE_IMM:
	case IONIC_V1_OP_RDMA_READ: {
		bool read = w->h.op == IONIC_V1_OP_RDMA_READ;
		uint16_t qpf = read ? IONIC_QPF_REMOTE_READ : IONIC_QPF_REMOTE_WRITE;
		struct endpoint remote = {
			.qp = peer, .rkey = be32_get(b.dest_qkey_or_rkey),
			.rva = (uint64_t)be32_get(b.ah_id_or_va_high) << 32 | be32_get(b.dest_qpn_or_va_low),
			.need = read ? IONIC_MRF_REMOTE_READ : IONIC_MRF_REMOTE_WRITE,
		};
		struct endpoint local = { .qp = w->qp, .sgl = &w->sgl, .need = read ? IONIC_MRF_LOCAL_WRITE : 0 };

		/* (A READ on UC counts as the requester's own fault, a missing right as the responder's.) */
		if (!(peer->access & qpf) || (w->qp->type == IONIC_QPT_UC && read)) {
			j->peer_id = peer_id;
			return fail_rdma(dev, j, peer, (peer->access & qpf) != 0);
		}
		job_begin(j, peer, peer_id,
			  w->h.op == IONIC_V1_OP_RDMA_WRITE_IMM ? IONIC_V1_CQE_RECV_OP_RDMA_IMM : RECV_OP_NONE);
		j->read = read;
		rdma_xfer_init(&j->x, read ? &remote : &local, read ? &local : &remote, w->sgl.total);
		return job_run(dev, j);
	}
	case IONIC_V1_OP_ATOMIC_CS:
	case IONIC_V1_OP_ATOMIC_FA: {
		struct ionic_v1_atomic_bdy a;
		uint64_t old, val, cmp, addr;
		uint32_t rkey;
		int rc;

		memcpy(&a, w->wqe + sizeof(w->h), sizeof(a));
		addr = (uint64_t)be32_get(a.remote_va_high) << 32 | be32_get(a.remote_va_low);
		rkey = be32_get(a.remote_rkey);
		val = (uint64_t)be32_get(a.swap_add_high) << 32 | be32_get(a.swap_add_low);
		cmp = (uint64_t)be32_get(a.compare_high) << 32 | be32_get(a.compare_low);
		rc = (addr & 7) || !(peer->access & IONIC_QPF_REMOTE_ATOMIC) || w->qp->type != IONIC_QPT_RC ? -EACCES
			: rdma_mr_xfer(dev, peer, rkey, addr, &old, 8, RDMA_FROM_GUEST, IONIC_MRF_REMOTE_ATOMIC);
		if (rc == 0) {
			uint64_t host_old = le64toh(old), nv = w->h.op == IONIC_V1_OP_ATOMIC_FA ? host_old + val
								   : (host_old == cmp ? val : host_old);
			uint64_t le_new = htole64(nv);

			if (nv != host_old)
				rc = rdma_mr_xfer(dev, peer, rkey, addr, &le_new, 8, RDMA_TO_GUEST, IONIC_MRF_REMOTE_ATOMIC);
		}
		if (rc == 0)
			rc = rdma_mr_xfer(dev, w->qp, be32_get(a.sge.lkey), be64_get(a.sge.va), &old, 8, RDMA_TO_GUEST,
					  IONIC_MRF_LOCAL_WRITE) ? 1 : 0;
		if (rc) {
			rdma_complete_msn(dev, w->qpid, w->qp, rc == 1 ? IONIC_STS_LOCAL_PROT_ERR : IONIC_STS_REMOTE_ACC_ERR);
			rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
			if (rc != 1) /* as for RDMA READ/WRITE: the responder saw an access violation */
				rdma_qp_error(dev, peer_id, peer, IONIC_V1_EQE_QP_ERR_ACCESS);
			return WQE_DONE;
		}
		rdma_complete_msn(dev, w->qpid, w->qp, 0);
		return WQE_DONE;
	}
	default:
		rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_QP_OPER_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
}

/* ---- UD and GSI ----------------------------------------------------------------------------------------- */

/*
 * The 40-byte GRH area of a UD receive, built from the sender's header
 * template: for RoCEv2 over IPv4 the IPv4 header sits in bytes 20-39 (the IB
 * core reads the addresses from there and checks its checksum); for IPv6 the
 * whole area is the IPv6 header.
 */
static bool grh_from_template(const uint8_t *t, uint8_t len, uint32_t payload, uint8_t grh[GRH_BYTES],
			      uint8_t smac[6], bool *ipv4)
{
	uint32_t l2 = 14;
	uint16_t et;

	if (len < 14)
		return false;
	memcpy(smac, t + 6, 6);
	et = (uint16_t)(t[12] << 8 | t[13]);
	if (et == 0x8100 && len >= 18) {
		l2 = 18;
		et = (uint16_t)(t[16] << 8 | t[17]);
	}
	memset(grh, 0, GRH_BYTES);
	if (et == 0x0800 && len >= l2 + 20) {
		uint8_t *ip = grh + 20;
		uint16_t tot = (uint16_t)(20 + 8 + 12 + 8 + payload + 4), sum;

		memcpy(ip, t + l2, 20);
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[10] = ip[11] = 0;
		sum = inet_csum_fold(inet_csum_add(0, ip, 20));
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
		*ipv4 = true;
		return true;
	}
	if (et == 0x86dd && len >= l2 + 40) {
		memcpy(grh, t + l2, 40);
		grh[4] = (uint8_t)((payload + 8 + 12 + 8 + 4) >> 8);
		grh[5] = (uint8_t)(payload + 8 + 12 + 8 + 4);
		*ipv4 = false;
		return true;
	}
	return false;
}

static int exec_ud(struct ionic_dev *dev, struct wqe_ctx *w)
{
	struct ionic_v1_common_bdy b;
	uint32_t ah_id, dest_qpn, qkey;
	const struct rdma_ah *ah;
	struct recv_info ri = { .src_qpn = w->qpid };
	uint8_t grh[GRH_BYTES];
	struct rdma_qp *dst;
	struct sgl rsgl;
	le64 rid;
	bool src_failed;
	int rc;

	memcpy(&b, w->wqe + sizeof(w->h), sizeof(b));
	ah_id = be32_get(b.ah_id_or_va_high);
	dest_qpn = be32_get(b.dest_qpn_or_va_low) & 0xffffffu;
	qkey = be32_get(b.dest_qkey_or_rkey);
	/* A Q_Key with its top bit set means "the sending QP's own Q_Key" (IBA 10.2.5). */
	if (qkey & 0x80000000u)
		qkey = w->qp->qkey;
	if ((w->h.op != IONIC_V1_OP_SEND && w->h.op != IONIC_V1_OP_SEND_IMM) || (w->flags & IONIC_V1_FLAG_INL)) {
		/* Only SEND and SEND_IMM exist on UD, and this device offers no inline data. */
		rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_QP_OPER_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	ah = ah_id < IONIC_RDMA_NAH ? &dev->rdma->ah[ah_id] : NULL;
	if (!ah || !ah->valid || ah->pd != w->qp->pd || w->sgl.total > 4096 ||
	    !grh_from_template(ah->hdr, ah->hdr_len, (uint32_t)w->sgl.total, grh, ri.smac, &ri.ipv4)) {
		rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_PROT_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	ri.op = w->h.op == IONIC_V1_OP_SEND_IMM ? IONIC_V1_CQE_RECV_OP_SEND_IMM : IONIC_V1_CQE_RECV_OP_SEND;
	ri.solicited = (w->flags & IONIC_V1_FLAG_SOL) != 0;
	if (dev->rdma->wire.ud_send && ri.ipv4 && rdma_wire_ud(dev, w, ah, dest_qpn, qkey))
		return WQE_DONE;
	if (dev->rdma->peer.ud_send) {
		static uint8_t msg[PEER_MSG_MAX];
		uint32_t st = rdma_gather(dev, w, msg, sizeof(msg));
		/* The destination address is in the IPv4 header just built into the GRH area. */
		uint32_t dst_ip = ri.ipv4 ? (uint32_t)grh[36] << 24 | (uint32_t)grh[37] << 16 | (uint32_t)grh[38] << 8 | grh[39]
					  : 0;

		if (st == 0 && dev->rdma->peer.ud_send(dev->rdma->peer.ctx, w->qpid, dst_ip, dest_qpn, msg,
						       (size_t)w->sgl.total)) {
			rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), 0);
			return WQE_DONE;
		}
	}
	ri.imm_rkey = w->h.imm_data_key;
	/* The loopback fabric: the destination is a UD QP of this guest; anything else is lost, as UD may be. */
	/* The sender's own fault fails before anything is sent. */
	if (!rdma_sgl_ok(dev, w->qp, &w->sgl, 0)) {
		rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_PROT_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	dst = dest_qpn < IONIC_RDMA_NQP ? &dev->rdma->qp[dest_qpn] : NULL;
	if (dst && dst->valid && dst->type == IONIC_QPT_UD &&
	    (dst->state == IONIC_QPS_RTR || dst->state == IONIC_QPS_RTS) &&
	    (dest_qpn == 1 ? qkey == ROCE_QKEY_GSI : qkey == dst->qkey)) {
		rc = rdma_rq_take(dev, dst, &rid, &rsgl);
		LOG_DEBUG("ionic rdma: UD %u -> %u: %llu bytes, receive %s (%llu bytes)", w->qpid, dest_qpn,
			  (unsigned long long)w->sgl.total, rc ? "missing" : "taken", (unsigned long long)rsgl.total);
		if (rc == 0) {
			struct endpoint src = { .qp = w->qp, .sgl = &w->sgl };
			struct endpoint d = { .qp = dst, .sgl = &rsgl, .need = IONIC_MRF_LOCAL_WRITE };
			struct cursor c = { &rsgl, 0, 0 };
			uint64_t unused = 0;

			/*
			 * A receive error is the start of a flush to the driver (it returns
			 * every posted receive): the QP goes to the error state with it.
			 */
			if (rsgl.total < GRH_BYTES + w->sgl.total) {
				rdma_complete_recv(dev, dest_qpn, dst, rid, &ri, 0, IONIC_STS_LOCAL_LEN_ERR);
				rdma_qp_error(dev, dest_qpn, dst, IONIC_V1_EQE_QP_ERR);
			} else if (rdma_ep_xfer(dev, &d, &c, &unused, grh, GRH_BYTES, RDMA_TO_GUEST)) {
				rdma_complete_recv(dev, dest_qpn, dst, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
				rdma_qp_error(dev, dest_qpn, dst, IONIC_V1_EQE_QP_ERR);
			} else {
				/* The payload follows the GRH area in the same receive SGL. */
				struct sgl rest = rsgl;
				struct cursor rc2 = c;
				unsigned int k = 0;

				for (unsigned int i = rc2.i; i < rsgl.n; i++, k++) {
					rest.e[k] = rsgl.e[i];
					if (i == rc2.i) {
						rest.e[k].va += rc2.off;
						rest.e[k].len -= (uint32_t)rc2.off;
					}
				}
				rest.n = k;
				d.sgl = &rest;
				src_failed = false;
				if (rdma_move_bytes(dev, &src, &d, w->sgl.total, &src_failed)) {
					rdma_complete_recv(dev, dest_qpn, dst, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
					rdma_qp_error(dev, dest_qpn, dst, IONIC_V1_EQE_QP_ERR);
					if (src_failed) {
						rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_PROT_ERR);
						rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
						return WQE_DONE;
					}
				} else {
					rdma_complete_recv(dev, dest_qpn, dst, rid, &ri, GRH_BYTES + (uint32_t)w->sgl.total, 0);
				}
			}
		}
	} else {
		LOG_DEBUG("ionic rdma: UD %u -> %u qkey %#x: no such receiver, dropped", w->qpid, dest_qpn, qkey);
	}
	rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), 0);
	return WQE_DONE;
}

/* ---- the queues ------------------------------------------------------------------------------------------ */

static int exec_wqe(struct ionic_dev *dev, struct rdma_job *j)
{
	struct wqe_ctx *w = &j->w;
	uint32_t st;

	w->flags = be16_get(w->h.flags);
	if (w->h.op == IONIC_V1_OP_REG_MR || w->h.op == IONIC_V1_OP_LOCAL_INV || w->h.op == IONIC_V1_OP_BIND_MW) {
		/* On the wire, a local operation waits for the WQEs before it (which may still read their memory). */
		if (rdma_wire_hold(w->qp))
			return WQE_BLOCKED;
		if (w->h.op == IONIC_V1_OP_REG_MR)
			st = rdma_reg_mr(dev, w->qp, &w->h, w->wqe + sizeof(w->h));
		else if (w->h.op == IONIC_V1_OP_LOCAL_INV)
			st = rdma_key_invalidate(dev, w->qp, be32_get(w->h.imm_data_key), false)
				     ? IONIC_STS_MEM_MGMT_OPER_ERR : 0;
		else if (w->qp->type == IONIC_QPT_UD)
			st = IONIC_STS_LOCAL_QP_OPER_ERR; /* windows bind on connected QPs only */
		else
			st = rdma_bind_mw(dev, w->qpid, w->qp, &w->h, w->wqe + sizeof(w->h));
		rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), st);
		if (st)
			rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	/* Atomics carry their one local SGE in the body; everything else an SGL (or inline data). */
	if (w->h.op != IONIC_V1_OP_ATOMIC_CS && w->h.op != IONIC_V1_OP_ATOMIC_FA && !(w->flags & IONIC_V1_FLAG_INL) &&
	    !rdma_parse_sgl(w->wqe, w->stride, w->h.num_sge_key, w->flags, &w->sgl)) {
		if (rdma_wire_hold(w->qp))
			return WQE_BLOCKED; /* its error after the completions before it */
		if (w->qp->type == IONIC_QPT_UD)
			rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_LEN_ERR);
		else
			rdma_complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_LEN_ERR);
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (w->flags & IONIC_V1_FLAG_INL)
		w->sgl.n = 0, w->sgl.total = 0;
	return w->qp->type == IONIC_QPT_UD ? exec_ud(dev, w) : exec_rc(dev, j);
}

/* The QP's work state, made at its first send WQE; NULL when there is no memory for it. */
static struct rdma_job *qp_job(struct rdma_qp *qp)
{
	if (!qp->job)
		qp->job = calloc(1, sizeof(*qp->job));
	return qp->job;
}

void rdma_sq_run(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];
	uint32_t mask;

	if (!qp->valid || !qp->sq.present || qp->state != IONIC_QPS_RTS)
		return;
	mask = (1u << qp->sq.ring.depth_log2) - 1;
	if (qp->rnr_wait)
		r->rnr_waiters--;
	qp->rnr_wait = false;
	while ((qp->sq.head & mask) != qp->sq.prod && qp->state == IONIC_QPS_RTS) {
		struct rdma_job *j;
		int rc;

		if (r->budget == 0) {
			rdma_runq_add(dev, qpid); /* the rest waits for the next slice */
			return;
		}
		j = qp_job(qp);
		if (!j) {
			LOG_WARN("ionic rdma: no memory for QP %u's work state", qpid);
			rdma_qp_error(dev, qpid, qp, IONIC_V1_EQE_QP_ERR);
			return;
		}
		if (j->active) {
			rc = job_run(dev, j); /* the WQE at the head, under way */
		} else {
			struct wqe_ctx *w = &j->w;
			uint64_t addr;

			/*
			 * No memset of the whole context: its WQE buffer and SGL are
			 * over a kilobyte, and zeroing them cost more than running a
			 * 4 KiB WRITE. The WQE is read whole (stride >= 64 covers every
			 * fixed field), and the SGL is empty until parse_sgl fills it.
			 */
			memset(&w->h, 0, sizeof(w->h));
			w->flags = 0;
			w->sgl.n = 0;
			w->sgl.total = 0;
			w->qpid = qpid;
			w->qp = qp;
			w->stride = 1u << qp->sq.ring.stride_log2;
			if (w->stride > WQE_MAX || rdma_ring_addr(&qp->sq.ring, qp->sq.head, &addr) ||
			    ionic_dma_read(dev, addr, w->wqe, w->stride)) {
				ionic_guest_error(dev, "QP %u send queue slot %u is not mapped", qpid, qp->sq.head & mask);
				rdma_qp_error(dev, qpid, qp, IONIC_V1_EQE_QP_ERR);
				return;
			}
			memcpy(&w->h, w->wqe, sizeof(w->h));
			LOG_DEBUG("ionic rdma: QP %u SQ slot %u: op %u, %u SGEs, flags %#x", qpid, qp->sq.head & mask,
				  w->h.op, w->h.num_sge_key, be16_get(w->h.flags));
			rdma_charge(r, WQE_COST);
			rc = exec_wqe(dev, j);
		}
		if (rc == WQE_MORE) {
			rdma_runq_add(dev, qpid);
			return;
		}
		if (rc == WQE_BLOCKED) {
			if (!qp->rnr_wait)
				r->rnr_waiters++;
			qp->rnr_wait = true;
			return;
		}
		dev->stats.rdma_wqes++;
		job_end(dev, j);
		qp->sq.head++;
	}
}

/* New receives on qpid: sends that waited for one may go now. */
void rdma_rq_posted(struct ionic_dev *dev, uint32_t qpid)
{
	if (dev->rdma->peer.rq_posted)
		dev->rdma->peer.rq_posted(dev->rdma->peer.ctx, qpid);
	if (dev->rdma->rnr_waiters == 0)
		return; /* the common case: nobody waits for a receive */
	for (uint32_t i = 1; i < dev->rdma->qp_hw; i++)
		if (dev->rdma->qp[i].valid && dev->rdma->qp[i].rnr_wait)
			rdma_sq_run(dev, i);
}

bool rdma_work(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	r->budget = TURN_BUDGET;
	r->slice_t0 = 0;
	/*
	 * A QP goes back on the queue only with the budget spent (or with no
	 * budget left to begin), so this ends; each QP gets a slice in turn.
	 */
	while (r->run_head && r->budget) {
		uint32_t qpid = r->run_head;

		runq_remove(dev, qpid);
		rdma_sq_run(dev, qpid);
	}
	r->budget = TURN_BUDGET; /* for what the fds bring before the next slice */
	r->slice_t0 = 0;
	return r->run_head != 0;
}
