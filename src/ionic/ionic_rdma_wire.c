/*
 * The transports fabric/ plugs into the RDMA engine (ionic_dev.h): the
 * wire (ionic_rdma_wire_ops: RC and UC QPs whose address names another
 * host, carried by fabric/'s RoCEv2; UD datagrams to and from other hosts)
 * and in-process peers (ionic_rdma_peer_ops: an NVMe-oF target's QPs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ionic/ionic_rdma_engine.h"
#include "util/log.h"

/* ---- the wire (ionic_rdma_wire_ops) --------------------------------------------------------------------- */

/*
 * An RC or UC QP the wire transport carries. Its send WQEs are read, checked and
 * handed over as they come; the transport completes them later, in order,
 * and may read or write their local SGL any number of times before (a
 * retransmission, a READ re-requested), so each one's SGL is kept here until
 * it completes: a ring of WIRE_MAX_WR, wr_id being a sequence number. One
 * receive at a time is held for a message arriving in several packets.
 */
#define WIRE_MAX_WR 128u

struct wire_wr {
	uint64_t seq;
	uint8_t op;              /* IONIC_V1_OP_* */
	struct sgl sgl;          /* atomics: the one local SGE of their body */
};

struct rdma_wire {
	uint64_t next_seq;       /* wr_id of the next WQE handed over */
	uint64_t done_seq;       /* the oldest one not complete */
	bool waiting;            /* the SQ waits for a completion (ring full, or a local error to report in order) */
	uint8_t smac[6], dmac[6];
	bool recv_held;
	uint64_t recv_seq;       /* handle of the held receive */
	le64 rid;
	struct sgl rsgl;
	struct wire_wr wr[WIRE_MAX_WR];
};

/* The QP qpn if it is on the wire. */
static struct rdma_qp *wire_qp(struct ionic_dev *dev, uint32_t qpn)
{
	struct rdma_qp *qp;

	if (qpn == 0 || qpn >= IONIC_RDMA_NQP)
		return NULL;
	qp = &dev->rdma->qp[qpn];
	return qp->valid && qp->wire ? qp : NULL;
}

static struct wire_wr *wire_wr_find(struct rdma_wire *wi, uint64_t wr_id)
{
	struct wire_wr *e;

	if (wr_id < wi->done_seq || wr_id >= wi->next_seq)
		return NULL;
	e = &wi->wr[wr_id % WIRE_MAX_WR];
	return e->seq == wr_id ? e : NULL;
}

void rdma_wire_detach(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp)
{
	struct rdma_wire *wi = qp->wire;

	if (!wi)
		return;
	qp->wire = NULL; /* first: what the transport flushes on its way out finds the QP gone */
	if (dev->rdma->wire.qp_detach)
		dev->rdma->wire.qp_detach(dev->rdma->wire.ctx, qpid);
	free(wi);
}

static uint32_t wire_sts(enum ionic_rdma_wire_status st)
{
	static const uint32_t map[] = {
		[IONIC_WIRE_OK] = 0,
		[IONIC_WIRE_LOC_LEN_ERR] = IONIC_STS_LOCAL_LEN_ERR,
		[IONIC_WIRE_LOC_QP_OP_ERR] = IONIC_STS_LOCAL_QP_OPER_ERR,
		[IONIC_WIRE_LOC_PROT_ERR] = IONIC_STS_LOCAL_PROT_ERR,
		[IONIC_WIRE_LOC_ACCESS_ERR] = IONIC_STS_LOCAL_ACC_ERR,
		[IONIC_WIRE_REM_INV_REQ_ERR] = IONIC_STS_REMOTE_INV_REQ_ERR,
		[IONIC_WIRE_REM_ACCESS_ERR] = IONIC_STS_REMOTE_ACC_ERR,
		[IONIC_WIRE_REM_OP_ERR] = IONIC_STS_REMOTE_OPER_ERR,
		[IONIC_WIRE_BAD_RESP_ERR] = IONIC_STS_BAD_RESP_ERR,
		[IONIC_WIRE_RETRY_EXC_ERR] = IONIC_STS_RETRY_EXCEEDED,
		[IONIC_WIRE_RNR_RETRY_EXC_ERR] = IONIC_STS_RNR_RETRY_EXCEEDED,
		[IONIC_WIRE_FLUSH_ERR] = IONIC_STS_WQE_FLUSHED_ERR,
	};

	return (unsigned)st < sizeof(map) / sizeof(map[0]) ? map[st] : IONIC_STS_LOCAL_QP_OPER_ERR;
}

/*
 * A send WQE of a QP on the wire: checked here (the requester's own faults
 * fail before anything is sent), then handed to the transport. Its
 * completion comes from ionic_rdma_wire_send_done, in order; a local error
 * found here waits until every WQE before it has completed, so that the
 * completions stay in order too.
 */
int rdma_exec_rc_wire(struct ionic_dev *dev, struct wqe_ctx *w)
{
	struct rdma_qp *qp = w->qp;
	struct rdma_wire *wi = qp->wire;
	struct ionic_rdma_wire_wr wr = { .wr_id = wi->next_seq };
	struct ionic_v1_common_bdy b;
	struct ionic_v1_atomic_bdy a;
	struct wire_wr *e;
	uint16_t need = 0;
	uint32_t st = 0;
	int rc;

	if (wi->next_seq - wi->done_seq >= WIRE_MAX_WR) {
		wi->waiting = true;
		return WQE_BLOCKED;
	}
	memcpy(&b, w->wqe + sizeof(w->h), sizeof(b));
	memcpy(&a, w->wqe + sizeof(w->h), sizeof(a));
	wr.solicited = (w->flags & IONIC_V1_FLAG_SOL) != 0;
	wr.rkey = be32_get(b.dest_qkey_or_rkey);
	wr.va = (uint64_t)be32_get(b.ah_id_or_va_high) << 32 | be32_get(b.dest_qpn_or_va_low);
	wr.imm = be32_get(w->h.imm_data_key);
	switch (w->h.op) {
	case IONIC_V1_OP_SEND: wr.op = IONIC_WIRE_SEND; break;
	case IONIC_V1_OP_SEND_IMM: wr.op = IONIC_WIRE_SEND_IMM; break;
	case IONIC_V1_OP_SEND_INV: wr.op = IONIC_WIRE_SEND_INV; wr.inv_rkey = wr.imm; break;
	case IONIC_V1_OP_RDMA_WRITE: wr.op = IONIC_WIRE_WRITE; break;
	case IONIC_V1_OP_RDMA_WRITE_IMM: wr.op = IONIC_WIRE_WRITE_IMM; break;
	case IONIC_V1_OP_RDMA_READ: wr.op = IONIC_WIRE_READ; need = IONIC_MRF_LOCAL_WRITE; break;
	case IONIC_V1_OP_ATOMIC_CS:
	case IONIC_V1_OP_ATOMIC_FA:
		wr.op = w->h.op == IONIC_V1_OP_ATOMIC_CS ? IONIC_WIRE_CMP_SWAP : IONIC_WIRE_FETCH_ADD;
		wr.va = (uint64_t)be32_get(a.remote_va_high) << 32 | be32_get(a.remote_va_low);
		wr.rkey = be32_get(a.remote_rkey);
		wr.swap_add = (uint64_t)be32_get(a.swap_add_high) << 32 | be32_get(a.swap_add_low);
		wr.compare = (uint64_t)be32_get(a.compare_high) << 32 | be32_get(a.compare_low);
		w->sgl.n = 1;
		w->sgl.e[0].key = be32_get(a.sge.lkey);
		w->sgl.e[0].va = be64_get(a.sge.va);
		w->sgl.e[0].len = 8;
		w->sgl.total = 8;
		need = IONIC_MRF_LOCAL_WRITE;
		break;
	default:
		st = IONIC_STS_LOCAL_QP_OPER_ERR;
		break;
	}
	if (st == 0 && (w->flags & IONIC_V1_FLAG_INL))
		st = IONIC_STS_LOCAL_QP_OPER_ERR; /* inline data: not offered */
	if (st == 0 && !rdma_sgl_ok(dev, qp, &w->sgl, need))
		st = IONIC_STS_LOCAL_PROT_ERR;
	wr.len = (uint32_t)w->sgl.total;
	if (st == 0) {
		e = &wi->wr[wi->next_seq % WIRE_MAX_WR];
		e->seq = wi->next_seq;
		e->op = w->h.op;
		e->sgl = w->sgl;
		rc = dev->rdma->wire.post(dev->rdma->wire.ctx, w->qpid, &wr);
		if (rc == 0) {
			wi->next_seq++;
			return WQE_DONE;
		}
		if (rc == -ENOSPC && wi->next_seq != wi->done_seq) {
			wi->waiting = true;
			return WQE_BLOCKED;
		}
		st = IONIC_STS_LOCAL_QP_OPER_ERR;
	}
	if (wi->next_seq != wi->done_seq) {
		wi->waiting = true; /* reported after the WQEs before it */
		return WQE_BLOCKED;
	}
	rdma_complete_msn(dev, w->qpid, qp, st);
	rdma_qp_error(dev, w->qpid, qp, IONIC_V1_EQE_QP_ERR);
	return WQE_DONE;
}

/*
 * The addresses of a header template (QP or AH) into *p: false unless it is
 * Ethernet (a VLAN tag allowed), IPv4 without options and UDP, the only kind
 * that can name a RoCEv2 host.
 */
static bool template_path(const uint8_t *t, uint8_t len, struct ionic_rdma_wire_path *p)
{
	const uint8_t *ip;
	uint32_t l2 = 14;
	uint16_t et = len >= 14 ? (uint16_t)(t[12] << 8 | t[13]) : 0;

	if (et == 0x8100 && len >= 18) {
		l2 = 18;
		et = (uint16_t)(t[16] << 8 | t[17]);
	}
	if (et != 0x0800 || len < l2 + 20 || (t[l2] >> 4) != 4 || t[l2 + 9] != 17)
		return false;
	p->vlan = l2 == 18;
	p->tci = p->vlan ? (uint16_t)(t[14] << 8 | t[15]) : 0;
	ip = t + l2;
	memcpy(p->dmac, t, 6);
	memcpy(p->smac, t + 6, 6);
	p->tos = ip[1];
	p->ttl = ip[8];
	p->sip = (uint32_t)ip[12] << 24 | (uint32_t)ip[13] << 16 | (uint32_t)ip[14] << 8 | ip[15];
	p->dip = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
	if (len >= l2 + 28 && (ip[0] & 0xf) == 5)
		p->sport = (uint16_t)(ip[20] << 8 | ip[21]);
	return true;
}

void rdma_wire_modify(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];
	struct ionic_rdma_wire_path p = { 0 };
	int rc;

	if (!r->wire.qp_attach)
		return;
	if (!template_path(qp->hdr, qp->hdr_len, &p)) {
		rdma_wire_detach(dev, qpid, qp); /* loopback (a QP whose address vector changed leaves the wire) */
		return;
	}
	p.dest_qpn = qp->dest_qpn;
	p.sq_psn = qp->sq_psn;
	p.rq_psn = qp->rq_psn;
	/* The driver sends log2 of the path MTU (IB enum + 7); anything else: the IB default of 1024. */
	p.pmtu = qp->pmtu >= 8 && qp->pmtu <= 12 ? 1u << qp->pmtu : 1024;
	p.timeout = qp->timeout & 31;
	p.retry_cnt = qp->retry & 7;
	p.rnr_retry = (qp->retry >> 4) & 7;
	/*
	 * The driver sends rrq_depth = order_base_2(max_rd_atomic + 2) - 1 and reads back
	 * max_rd_atomic as 2^rrq_depth - 1 (ionic_controlpath.c: a ring with a hole): that many READs
	 * and atomics may be outstanding, so a peer that granted one never sees two. At least 1
	 * (no depth given), at most 16.
	 */
	{
		unsigned d = qp->rrq_depth > 5 ? 5 : qp->rrq_depth, n = d ? (1u << d) - 1 : 1;

		p.max_rd_atomic = (uint8_t)(n > 16 ? 16 : n);
	}
	p.min_rnr_timer = qp->rnr_timer & 31;
	p.rts = qp->state == IONIC_QPS_RTS;
	p.uc = qp->type == IONIC_QPT_UC;
	rc = r->wire.qp_attach(r->wire.ctx, qpid, &p);
	if (rc == 1 && !qp->wire) {
		qp->wire = calloc(1, sizeof(*qp->wire));
		if (!qp->wire) {
			LOG_WARN("ionic rdma: no memory for QP %u's wire state", qpid);
			r->wire.qp_detach(r->wire.ctx, qpid);
			rc = -ENOMEM;
		}
	}
	if (rc == 1) {
		memcpy(qp->wire->smac, p.smac, 6);
		memcpy(qp->wire->dmac, p.dmac, 6);
		return;
	}
	if (rc < 0) {
		LOG_WARN("ionic rdma: QP %u cannot go on the wire (%d)", qpid, rc);
		rdma_qp_error(dev, qpid, qp, IONIC_V1_EQE_QP_ERR);
	} else {
		rdma_wire_detach(dev, qpid, qp); /* its destination is the device itself now: loopback */
	}
}

/* On the wire, with WQEs handed over and not yet complete: the SQ waits for their completions. */
bool rdma_wire_hold(struct rdma_qp *qp)
{
	if (!qp->wire || qp->wire->next_seq == qp->wire->done_seq)
		return false;
	qp->wire->waiting = true;
	return true;
}

/*
 * A UD send whose address handle names another host (an IPv4 template whose
 * destination differs from its source): gathered and handed to the wire
 * transport; true when it was (the WQE is then complete).
 */
bool rdma_wire_ud(struct ionic_dev *dev, struct wqe_ctx *w, const struct rdma_ah *ah, uint32_t dest_qpn,
		  uint32_t qkey)
{
	static uint8_t msg[4096];
	struct ionic_rdma_wire_path p = { 0 };
	struct ionic_rdma_wire_ud ud = {
		.src_qpn = w->qpid, .dest_qpn = dest_qpn, .qkey = qkey, .has_imm = w->h.op == IONIC_V1_OP_SEND_IMM,
		.solicited = (w->flags & IONIC_V1_FLAG_SOL) != 0, .imm = be32_get(w->h.imm_data_key),
	};
	uint32_t st;

	if (!template_path(ah->hdr, ah->hdr_len, &p) || p.dip == p.sip)
		return false;
	st = rdma_gather(dev, w, msg, sizeof(msg));
	if (st == 0)
		dev->rdma->wire.ud_send(dev->rdma->wire.ctx, &p, &ud, msg, (uint32_t)w->sgl.total);
	rdma_complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), st);
	if (st)
		rdma_qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	return true;
}

/* ---- in-process peers ----------------------------------------------------------------------------------- */

void rdma_peer_qp_gone(struct ionic_dev *dev, uint32_t qpid)
{
	if (dev->rdma->peer.qp_gone)
		dev->rdma->peer.qp_gone(dev->rdma->peer.ctx, qpid);
}

void ionic_rdma_bus_master_on(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	if (!r->peer.rq_posted)
		return;
	/* A peer held what it could not deliver meanwhile; it looks again as after a receive doorbell. */
	for (uint32_t i = 1; i < r->qp_hw && dev->bus_master; i++)
		if (r->qp[i].valid && r->qp[i].rq.present &&
		    (r->qp[i].state == IONIC_QPS_RTR || r->qp[i].state == IONIC_QPS_RTS))
			r->peer.rq_posted(r->peer.ctx, i);
}

void ionic_dev_set_rdma_peer(struct ionic_dev *dev, const struct ionic_rdma_peer_ops *ops)
{
	if (ops)
		dev->rdma->peer = *ops;
	else
		memset(&dev->rdma->peer, 0, sizeof(dev->rdma->peer));
}

static struct rdma_qp *peer_target(struct ionic_dev *dev, uint32_t guest_qpn)
{
	struct rdma_qp *qp;

	if (guest_qpn == 0 || guest_qpn >= IONIC_RDMA_NQP)
		return NULL;
	qp = &dev->rdma->qp[guest_qpn];
	if (!qp->valid || (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS))
		return NULL;
	return qp;
}

int ionic_rdma_peer_deliver(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t src_qpn, const void *payload,
			    size_t len, uint32_t inv_rkey, const uint8_t *grh, const uint8_t smac[6])
{
	struct rdma_qp *qp = peer_target(dev, guest_qpn);
	struct recv_info ri = { .src_qpn = src_qpn, .op = inv_rkey ? IONIC_V1_CQE_RECV_OP_SEND_INV
							     : IONIC_V1_CQE_RECV_OP_SEND };
	struct endpoint d;
	struct cursor c;
	struct sgl rsgl;
	uint64_t unused = 0;
	size_t hdr = grh ? GRH_BYTES : 0;
	le64 rid;
	int rc;

	if (!qp || !qp->rq.present)
		return -ENOTCONN;
	/* Without bus mastering no receive can be fetched: as if none were posted (ionic_rdma_bus_master_on). */
	if (!dev->bus_master)
		return -EAGAIN;
	if (qp->rq_claim) {
		qp->rq_claim_waited = true;
		return -EAGAIN; /* a message of the loopback fabric is filling the next receive */
	}
	rc = rdma_rq_take(dev, qp, &rid, &rsgl);
	if (rc == -EAGAIN)
		return -EAGAIN;
	ri.imm_rkey = be32_set(inv_rkey);
	ri.ipv4 = grh != NULL;
	if (smac)
		memcpy(ri.smac, smac, 6);
	if (rc || rsgl.total < hdr + len) {
		rdma_complete_recv(dev, guest_qpn, qp, rid, &ri, 0, rc ? IONIC_STS_LOCAL_QP_OPER_ERR : IONIC_STS_LOCAL_LEN_ERR);
		rdma_qp_error(dev, guest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EMSGSIZE;
	}
	d = (struct endpoint){ .qp = qp, .sgl = &rsgl, .need = IONIC_MRF_LOCAL_WRITE };
	c = (struct cursor){ &rsgl, 0, 0 };
	if ((grh && rdma_ep_xfer(dev, &d, &c, &unused, (void *)grh, hdr, RDMA_TO_GUEST)) ||
	    rdma_ep_xfer(dev, &d, &c, &unused, (void *)payload, len, RDMA_TO_GUEST)) {
		rdma_complete_recv(dev, guest_qpn, qp, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
		rdma_qp_error(dev, guest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EFAULT;
	}
	if (inv_rkey && rdma_key_invalidate(dev, qp, inv_rkey, true) != 0)
		LOG_DEBUG("ionic rdma: QP %u: a peer's SEND with invalidate named key %#x, which it cannot invalidate",
			  guest_qpn, inv_rkey);
	rdma_complete_recv(dev, guest_qpn, qp, rid, &ri, (uint32_t)(hdr + len), 0);
	return 0;
}

int ionic_rdma_peer_xfer(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t rkey, uint64_t addr, void *buf,
			 size_t len, bool write)
{
	struct rdma_qp *qp = peer_target(dev, guest_qpn);

	if (!qp)
		return -ENOKEY;
	if (!(qp->access & (write ? IONIC_QPF_REMOTE_WRITE : IONIC_QPF_REMOTE_READ)))
		return -EACCES;
	rdma_charge(dev->rdma, len);
	return rdma_mr_xfer(dev, qp, rkey, addr, buf, len, write ? RDMA_TO_GUEST : RDMA_FROM_GUEST,
			    write ? IONIC_MRF_REMOTE_WRITE : IONIC_MRF_REMOTE_READ);
}

const void *ionic_rdma_peer_peek(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t rkey, uint64_t addr,
				 uint32_t len)
{
	struct rdma_qp *qp = peer_target(dev, guest_qpn);

	if (!qp || !(qp->access & IONIC_QPF_REMOTE_READ))
		return NULL;
	return rdma_key_peek(dev, qp, rkey, addr, len, IONIC_MRF_REMOTE_READ);
}

int ionic_rdma_key_xfer(struct ionic_dev *dev, uint32_t rkey, uint64_t addr, void *buf, size_t len, bool write)
{
	/* No QP here: the key's own PD applies, and a type 2 window (bound to a QP) serves no one. */
	rdma_charge(dev->rdma, len);
	return rdma_mr_xfer(dev, NULL, rkey, addr, buf, len, write ? RDMA_TO_GUEST : RDMA_FROM_GUEST,
			    write ? IONIC_MRF_REMOTE_WRITE : IONIC_MRF_REMOTE_READ);
}

int ionic_rdma_key_check(struct ionic_dev *dev, uint32_t rkey, uint64_t addr, size_t len, bool write)
{
	const struct rdma_mr *mr;
	uint64_t off;

	if (rkey == 0)
		return -ENOKEY; /* the reserved DMA key names raw guest memory: never a peer's */
	return rdma_mr_resolve(dev, NULL, rkey, addr, len, write ? IONIC_MRF_REMOTE_WRITE : IONIC_MRF_REMOTE_READ,
			       &mr, &off);
}

/* ---- the wire's entry points (ionic_dev.h) ---------------------------------------------------------------- */

void ionic_dev_set_rdma_wire(struct ionic_dev *dev, const struct ionic_rdma_wire_ops *ops)
{
	if (ops)
		dev->rdma->wire = *ops;
	else
		memset(&dev->rdma->wire, 0, sizeof(dev->rdma->wire));
}

int ionic_rdma_wire_local(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id, uint32_t offset, void *buf,
			  uint32_t len, bool to_guest)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct wire_wr *e = qp ? wire_wr_find(qp->wire, wr_id) : NULL;

	if (!e)
		return -ENOTCONN;
	return rdma_sgl_copy_at(dev, qp, &e->sgl, offset, buf, len, to_guest ? RDMA_TO_GUEST : RDMA_FROM_GUEST,
				to_guest ? IONIC_MRF_LOCAL_WRITE : 0);
}

const void *ionic_rdma_wire_local_peek(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id, uint32_t offset,
				       uint32_t len)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct wire_wr *e = qp ? wire_wr_find(qp->wire, wr_id) : NULL;

	return e ? rdma_sgl_peek_at(dev, qp, &e->sgl, offset, len) : NULL;
}

void ionic_rdma_wire_send_done(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id,
			       enum ionic_rdma_wire_status st, uint64_t orig)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct rdma_wire *wi = qp ? qp->wire : NULL;
	struct wire_wr *e = wi ? wire_wr_find(wi, wr_id) : NULL;
	uint32_t sts;

	if (!e || wr_id != wi->done_seq)
		return; /* not ours, or out of order: the transport completes in order */
	wi->done_seq++;
	if (st == IONIC_WIRE_FLUSH_ERR && qp->state == IONIC_QPS_ERR)
		return; /* the flush completion of qp_error covers it */
	if (st == IONIC_WIRE_OK && (e->op == IONIC_V1_OP_ATOMIC_CS || e->op == IONIC_V1_OP_ATOMIC_FA)) {
		uint64_t le = htole64(orig);

		if (rdma_sgl_copy_at(dev, qp, &e->sgl, 0, &le, 8, RDMA_TO_GUEST, IONIC_MRF_LOCAL_WRITE))
			st = IONIC_WIRE_LOC_PROT_ERR;
	}
	sts = wire_sts(st);
	rdma_complete_msn(dev, qpn, qp, sts);
	if (sts) {
		rdma_qp_error(dev, qpn, qp, IONIC_V1_EQE_QP_ERR); /* frees qp->wire */
		return;
	}
	if (wi->waiting) {
		wi->waiting = false;
		rdma_runq_add(dev, qpn); /* the next slice goes on with the send queue */
	}
}

int ionic_rdma_wire_recv_take(struct ionic_dev *dev, uint32_t qpn, uint64_t *handle)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct rdma_wire *wi;
	int rc;

	if (!qp || (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS))
		return -ENOTCONN;
	wi = qp->wire;
	if (wi->recv_held)
		return -EBUSY;
	if (!dev->bus_master)
		return -EAGAIN; /* no receive can be fetched: the sender's RNR retries cover it */
	rc = rdma_rq_take(dev, qp, &wi->rid, &wi->rsgl);
	if (rc == -EAGAIN)
		return -EAGAIN;
	if (rc) {
		struct recv_info ri = { .src_qpn = qp->dest_qpn };

		ionic_guest_error(dev, "QP %u receive queue slot unusable", qpn);
		if (rc == -EINVAL)
			rdma_complete_recv(dev, qpn, qp, wi->rid, &ri, 0, IONIC_STS_LOCAL_QP_OPER_ERR);
		rdma_qp_error(dev, qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EIO;
	}
	wi->recv_held = true;
	*handle = ++wi->recv_seq;
	return 0;
}

int ionic_rdma_wire_recv_write(struct ionic_dev *dev, uint32_t qpn, uint64_t handle, uint32_t offset,
			       const void *data, uint32_t len)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);

	if (!qp || !qp->wire->recv_held || qp->wire->recv_seq != handle)
		return -ENOTCONN;
	return rdma_sgl_copy_at(dev, qp, &qp->wire->rsgl, offset, (void *)data, len, RDMA_TO_GUEST,
				IONIC_MRF_LOCAL_WRITE);
}

void ionic_rdma_wire_recv_done(struct ionic_dev *dev, uint32_t qpn, uint64_t handle,
			       const struct ionic_rdma_wire_recv *rv)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct rdma_wire *wi = qp ? qp->wire : NULL;
	struct recv_info ri;

	if (!wi || !wi->recv_held || wi->recv_seq != handle)
		return;
	wi->recv_held = false;
	if (rv->status == IONIC_WIRE_FLUSH_ERR && qp->state == IONIC_QPS_ERR)
		return;
	ri = (struct recv_info){
		.src_qpn = qp->dest_qpn,
		.op = rv->write_imm ? IONIC_V1_CQE_RECV_OP_RDMA_IMM
		      : rv->has_inv ? IONIC_V1_CQE_RECV_OP_SEND_INV
		      : rv->has_imm ? IONIC_V1_CQE_RECV_OP_SEND_IMM : IONIC_V1_CQE_RECV_OP_SEND,
		.imm_rkey = be32_set(rv->has_inv ? rv->inv_rkey : rv->imm),
		.solicited = rv->solicited,
	};
	memcpy(ri.smac, wi->dmac, 6);
	/* An error here comes with the responder's fatal NAK: ionic_rdma_wire_qp_fatal follows. */
	rdma_complete_recv(dev, qpn, qp, wi->rid, &ri, rv->byte_len, wire_sts(rv->status));
}

int ionic_rdma_wire_atomic(struct ionic_dev *dev, uint32_t qpn, uint32_t rkey, uint64_t va, bool cmp_swap,
			   uint64_t swap_add, uint64_t compare, uint64_t *orig)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	uint64_t old, host_old, nv, le_new;
	int rc;

	if (!qp || (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS))
		return -ENOTCONN;
	if ((va & 7) || !(qp->access & IONIC_QPF_REMOTE_ATOMIC))
		return -EACCES;
	rdma_charge(dev->rdma, 16);
	rc = rdma_mr_xfer(dev, qp, rkey, va, &old, 8, RDMA_FROM_GUEST, IONIC_MRF_REMOTE_ATOMIC);
	if (rc)
		return rc;
	host_old = le64toh(old);
	nv = cmp_swap ? (host_old == compare ? swap_add : host_old) : host_old + swap_add;
	le_new = htole64(nv);
	if (nv != host_old)
		rc = rdma_mr_xfer(dev, qp, rkey, va, &le_new, 8, RDMA_TO_GUEST, IONIC_MRF_REMOTE_ATOMIC);
	if (rc == 0)
		*orig = host_old;
	return rc;
}

int ionic_rdma_wire_invalidate(struct ionic_dev *dev, uint32_t qpn, uint32_t rkey)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);

	return qp ? rdma_key_invalidate(dev, qp, rkey, true) : -EINVAL;
}

void ionic_rdma_wire_qp_fatal(struct ionic_dev *dev, uint32_t qpn, bool access)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);

	if (qp)
		rdma_qp_error(dev, qpn, qp, access ? IONIC_V1_EQE_QP_ERR_ACCESS : IONIC_V1_EQE_QP_ERR_REQUEST);
}

int ionic_rdma_wire_ud_recv(struct ionic_dev *dev, const struct ionic_rdma_wire_ud *ud, const uint8_t ip_hdr[20],
			    const uint8_t smac[6], const void *payload, uint32_t len)
{
	struct rdma_qp *qp = ud->dest_qpn > 0 && ud->dest_qpn < IONIC_RDMA_NQP ? &dev->rdma->qp[ud->dest_qpn] : NULL;
	struct recv_info ri = {
		.src_qpn = ud->src_qpn, .op = ud->has_imm ? IONIC_V1_CQE_RECV_OP_SEND_IMM : IONIC_V1_CQE_RECV_OP_SEND,
		.imm_rkey = be32_set(ud->imm), .ipv4 = true, .solicited = ud->solicited, .vlan = ud->vlan, .tci = ud->tci,
	};
	uint8_t grh[GRH_BYTES] = { 0 };
	struct endpoint d;
	struct cursor c;
	struct sgl rsgl;
	uint64_t unused = 0;
	le64 rid;
	int rc;

	if (!qp || !qp->valid || qp->type != IONIC_QPT_UD || !qp->rq.present ||
	    (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS) ||
	    (ud->dest_qpn == 1 ? ud->qkey != ROCE_QKEY_GSI : ud->qkey != qp->qkey))
		return -ENOENT;
	if (!dev->bus_master || qp->rq_claim)
		return -EAGAIN;
	rc = rdma_rq_take(dev, qp, &rid, &rsgl);
	if (rc == -EAGAIN)
		return -EAGAIN;
	memcpy(grh + 20, ip_hdr, 20);
	memcpy(ri.smac, smac, 6);
	if (rc || rsgl.total < GRH_BYTES + (uint64_t)len) {
		rdma_complete_recv(dev, ud->dest_qpn, qp, rid, &ri, 0, rc ? IONIC_STS_LOCAL_QP_OPER_ERR : IONIC_STS_LOCAL_LEN_ERR);
		rdma_qp_error(dev, ud->dest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EMSGSIZE;
	}
	d = (struct endpoint){ .qp = qp, .sgl = &rsgl, .need = IONIC_MRF_LOCAL_WRITE };
	c = (struct cursor){ &rsgl, 0, 0 };
	rdma_charge(dev->rdma, GRH_BYTES + (uint64_t)len);
	if (rdma_ep_xfer(dev, &d, &c, &unused, grh, GRH_BYTES, RDMA_TO_GUEST) ||
	    (len && rdma_ep_xfer(dev, &d, &c, &unused, (void *)payload, len, RDMA_TO_GUEST))) {
		rdma_complete_recv(dev, ud->dest_qpn, qp, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
		rdma_qp_error(dev, ud->dest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EFAULT;
	}
	rdma_complete_recv(dev, ud->dest_qpn, qp, rid, &ri, GRH_BYTES + len, 0);
	return 0;
}
