/*
 * The RDMA admin queue (ionic_rdma's "AQ", interface version 1): 64-byte
 * slots, a 4-byte header whose payload may spill into following slots,
 * commands executed in order, one ADMIN completion per command naming its
 * first slot. The commands create and destroy CQs, QPs, MRs and AHs and
 * modify and query QPs. The driver frees page lists and header templates as
 * soon as a command completes, so everything is copied here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ionic/ionic_rdma_priv.h"
#include "util/log.h"

#define AQ_PAYLOAD_MAX 256 /* the largest payload is 64 bytes; anything longer is refused */

/* ---- CQs ----------------------------------------------------------------------------- */

static uint8_t admin_create_cq(struct ionic_dev *dev, const struct ionic_admin_create_cq *c)
{
	struct ionic_rdma *r = dev->rdma;
	uint32_t id = le32_get(c->id_ver) & 0xffffffu, eq = le32_get(c->eq_id);
	struct rdma_cq n = { .color = 1 };

	if (id >= IONIC_RDMA_NCQ || eq >= IONIC_RDMA_NEQ)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (r->cq[id].valid || !r->eq[eq].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	if (c->stride_log2 != 5)
		return IONIC_V1_ASTS_BAD_ATTR;
	if (rdma_ring_setup(dev, &n.ring, le64_get(c->dma_addr), le32_get(c->map_count), c->page_size_log2,
			    c->depth_log2, c->stride_log2))
		return IONIC_V1_ASTS_BAD_ATTR;
	n.eq_id = eq;
	n.dbid = le16_get(c->dbid_flags);
	n.valid = true;
	r->cq[id] = n;
	rdma_hw_note(&r->cq_hw, id);
	ionic_db_page_used(dev, n.dbid);
	return IONIC_V1_ASTS_OK;
}

static uint8_t admin_destroy_cq(struct ionic_dev *dev, uint32_t id)
{
	struct ionic_rdma *r = dev->rdma;

	if (id >= IONIC_RDMA_NCQ)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (!r->cq[id].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	for (unsigned int i = 0; i < IONIC_RDMA_NAQ; i++)
		if (r->aq[i].valid && r->aq[i].cq_id == id)
			return IONIC_V1_ASTS_BAD_STATE; /* an admin queue still completes there */
	for (unsigned int i = 1; i < r->qp_hw; i++) {
		const struct rdma_qp *qp = &r->qp[i];

		if (qp->valid && ((qp->sq.present && qp->sq.cq_id == id) || (qp->rq.present && qp->rq.cq_id == id)))
			return IONIC_V1_ASTS_BAD_STATE; /* so does a QP */
	}
	rdma_ring_free(dev, &r->cq[id].ring);
	memset(&r->cq[id], 0, sizeof(r->cq[id]));
	return IONIC_V1_ASTS_OK;
}

/* ---- QPs ----------------------------------------------------------------------------- */

static uint8_t wq_setup(struct ionic_dev *dev, struct rdma_wq *wq, uint32_t cq_id, uint8_t depth_log2,
			uint8_t stride_log2, uint8_t page_log2, uint32_t map_count, uint64_t dma)
{
	if (map_count == 0 && dma == 0)
		return IONIC_V1_ASTS_OK; /* no such queue (an XRC or SRQ-backed side) */
	if (cq_id >= IONIC_RDMA_NCQ)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (!dev->rdma->cq[cq_id].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	if (stride_log2 < 6 || rdma_ring_setup(dev, &wq->ring, dma, map_count, page_log2, depth_log2, stride_log2))
		return IONIC_V1_ASTS_BAD_ATTR;
	wq->cq_id = cq_id;
	wq->present = true;
	return IONIC_V1_ASTS_OK;
}

static uint8_t admin_create_qp(struct ionic_dev *dev, const struct ionic_admin_create_qp *c)
{
	struct ionic_rdma *r = dev->rdma;
	uint32_t id = le32_get(c->id_ver) & 0xffffffu;
	struct rdma_qp n = { 0 };
	uint8_t st;

	if (id == 0 || id >= IONIC_RDMA_NQP)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (r->qp[id].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	n.type = c->type_state;
	if (n.type != IONIC_QPT_RC && n.type != IONIC_QPT_UC && n.type != IONIC_QPT_UD)
		return IONIC_V1_ASTS_BAD_TYPE;
	if (id == 1 && n.type != IONIC_QPT_UD)
		return IONIC_V1_ASTS_BAD_TYPE; /* QP 1 is the GSI queue pair */
	n.pd = le32_get(c->pd_id);
	n.priv_flags = be32_get(c->priv_flags);
	st = wq_setup(dev, &n.sq, le32_get(c->sq_cq_id), c->sq_depth_log2, c->sq_stride_log2, c->sq_page_size_log2,
		      le32_get(c->sq_map_count), le64_get(c->sq_dma_addr));
	if (st == IONIC_V1_ASTS_OK)
		st = wq_setup(dev, &n.rq, le32_get(c->rq_cq_id), c->rq_depth_log2, c->rq_stride_log2,
			      c->rq_page_size_log2, le32_get(c->rq_map_count), le64_get(c->rq_dma_addr));
	if (st != IONIC_V1_ASTS_OK) {
		rdma_ring_free(dev, &n.sq.ring);
		rdma_ring_free(dev, &n.rq.ring);
		return st;
	}
	n.state = IONIC_QPS_RESET;
	n.dbid = le16_get(c->dbid_flags);
	n.epoch = ++r->epochs;
	n.valid = true;
	r->qp[id] = n;
	rdma_hw_note(&r->qp_hw, id);
	ionic_db_page_used(dev, n.dbid);
	return IONIC_V1_ASTS_OK;
}

static void qp_to_reset(struct rdma_qp *qp)
{
	/* The driver restarts its indices at 0 on RESET: so does the device. */
	qp->sq.head = qp->sq.prod = 0;
	qp->rq.head = qp->rq.prod = 0;
	qp->msn = 0;
}

static uint8_t admin_modify_qp(struct ionic_dev *dev, const struct ionic_admin_mod_qp *c)
{
	struct ionic_rdma *r = dev->rdma;
	uint32_t id = le32_get(c->id_ver) & 0xffffffu, mask = be32_get(c->attr_mask);
	struct rdma_qp *qp;
	uint8_t state = c->type_state & 0xf;

	if (id >= IONIC_RDMA_NQP)
		return IONIC_V1_ASTS_BAD_INDEX;
	qp = &r->qp[id];
	if (!qp->valid)
		return IONIC_V1_ASTS_BAD_STATE;
	if ((mask & IB_QP_STATE) && state > IONIC_QPS_ERR)
		return IONIC_V1_ASTS_BAD_ATTR;
	if (mask & IB_QP_AV) {
		uint32_t len = le32_get(c->ah_id_len) >> 24;

		if (len > IONIC_RDMA_HDR_MAX)
			return IONIC_V1_ASTS_BAD_ATTR;
		if (ionic_dma_read(dev, le64_get(c->dma_addr), qp->hdr, len))
			return IONIC_V1_ASTS_BAD_ATTR;
		qp->hdr_len = (uint8_t)len;
		qp->ah_id = le32_get(c->ah_id_len) & 0xffffffu;
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = be16_get(c->access_flags);
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_id = le16_get(c->pkey_id);
	if (mask & IB_QP_QKEY)
		qp->qkey = le32_get(c->qkey_dest_qpn);
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = le32_get(c->qkey_dest_qpn) & 0xffffffu;
	if (mask & IB_QP_PATH_MTU)
		qp->pmtu = c->pmtu;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = le32_get(c->rq_psn) & 0xffffffu;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = le32_get(c->sq_psn) & 0xffffffu;
	/* The driver packs both counts into one byte; only the masked half is meant. */
	if (mask & IB_QP_RETRY_CNT)
		qp->retry = (uint8_t)((qp->retry & 0xf0) | (c->retry & 0x0f));
	if (mask & IB_QP_RNR_RETRY)
		qp->retry = (uint8_t)((qp->retry & 0x0f) | (c->retry & 0xf0));
	if (mask & IB_QP_RATE_LIMIT)
		qp->rate_limit = le32_get(c->rate_limit_kbps);
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->rnr_timer = c->rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = c->retry_timeout;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->rrq_depth = c->rrq_depth;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->rsq_depth = c->rsq_depth;
	if (mask & IB_QP_STATE) {
		bool to_reset = state == IONIC_QPS_RESET && qp->state != IONIC_QPS_RESET;

		/* Out of service: a send in progress is dropped, a peer's message to or from it fails. */
		if (state == IONIC_QPS_RESET || state == IONIC_QPS_ERR)
			rdma_qp_halt(dev, id);
		if (state == IONIC_QPS_RESET)
			qp_to_reset(qp);
		LOG_DEBUG("ionic rdma: QP %u state %u -> %u", id, qp->state, state);
		if (state == IONIC_QPS_ERR && qp->state != IONIC_QPS_ERR) {
			qp->state = state;
			rdma_qp_flush(dev, id, qp);
		}
		qp->state = state;
		if (qp->rnr_wait)
			r->rnr_waiters--;
		qp->rnr_wait = false;
		if ((state == IONIC_QPS_RTR || state == IONIC_QPS_RTS) &&
		    (qp->type == IONIC_QPT_RC || qp->type == IONIC_QPT_UC))
			rdma_wire_modify(dev, id); /* the wire carries it when its destination is another host */
		if (state == IONIC_QPS_RTS && qp->state == IONIC_QPS_RTS)
			rdma_sq_run(dev, id); /* WQEs posted before RTS go now */
		if (to_reset)
			rdma_peer_qp_gone(dev, id); /* whatever it was connected to is no longer */
	}
	return IONIC_V1_ASTS_OK;
}

static uint8_t admin_query_qp(struct ionic_dev *dev, const struct ionic_admin_query_qp *c)
{
	uint32_t id = le32_get(c->id_ver) & 0xffffffu;
	struct ionic_v1_admin_query_qp_sq sq = { 0 };
	struct ionic_v1_admin_query_qp_rq rq = { 0 };
	const struct rdma_qp *qp;
	bool conn;

	if (id >= IONIC_RDMA_NQP)
		return IONIC_V1_ASTS_BAD_INDEX;
	qp = &dev->rdma->qp[id];
	if (!qp->valid)
		return IONIC_V1_ASTS_BAD_STATE;
	conn = qp->type == IONIC_QPT_RC || qp->type == IONIC_QPT_UC;
	sq.rnr_timer = qp->rnr_timer;
	sq.retry_timeout = qp->timeout;
	sq.access_perms_flags = be16_set(qp->access);
	sq.pkey_id = be16_set(qp->pkey_id);
	sq.qkey_dest_qpn = be32_set(conn ? qp->dest_qpn : qp->qkey);
	sq.rq_psn = be32_set(qp->rq_psn);
	sq.rate_limit_kbps = be32_set(qp->rate_limit);
	rq.state_pmtu = (uint8_t)(qp->state << 4 | (qp->pmtu & 0xf));
	rq.retry_rnrtry = qp->retry;
	rq.rrq_depth = qp->rrq_depth;
	rq.rsq_depth = qp->rsq_depth;
	rq.sq_psn = be32_set(qp->sq_psn);
	if (ionic_dma_write(dev, le64_get(c->sq_dma_addr), &sq, sizeof(sq)) ||
	    ionic_dma_write(dev, le64_get(c->rq_dma_addr), &rq, sizeof(rq)))
		return IONIC_V1_ASTS_BAD_ATTR;
	if (le64_get(c->hdr_dma_addr) && qp->hdr_len &&
	    ionic_dma_write(dev, le64_get(c->hdr_dma_addr), qp->hdr, qp->hdr_len))
		return IONIC_V1_ASTS_BAD_ATTR;
	return IONIC_V1_ASTS_OK;
}

static void qp_free(struct ionic_dev *dev, struct rdma_qp *qp)
{
	rdma_qp_release(dev, (uint32_t)(qp - dev->rdma->qp));
	if (qp->rnr_wait)
		dev->rdma->rnr_waiters--;
	rdma_ring_free(dev, &qp->sq.ring);
	rdma_ring_free(dev, &qp->rq.ring);
	memset(qp, 0, sizeof(*qp));
}

static uint8_t admin_destroy_qp(struct ionic_dev *dev, uint32_t id)
{
	if (id >= IONIC_RDMA_NQP)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (!dev->rdma->qp[id].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	qp_free(dev, &dev->rdma->qp[id]);
	rdma_mw_qp_gone(dev, id); /* its type 2 windows are free again: the next QP of this id gets none */
	/* After the free: a peer that answers (a DREQ on the GSI QP) finds this QP gone. */
	rdma_peer_qp_gone(dev, id);
	return IONIC_V1_ASTS_OK;
}

/* ---- MRs and AHs ------------------------------------------------------------------------------------- */

static uint8_t admin_create_mr(struct ionic_dev *dev, const struct ionic_admin_create_mr *c)
{
	struct ionic_rdma *r = dev->rdma;
	uint32_t id = le32_get(c->id_ver), index = id >> 8, map_count = le32_get(c->map_count);
	struct rdma_mr n = { 0 };

	if (index == 0 || index >= IONIC_RDMA_NMR)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (r->mr[index].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	n.id = id;
	n.pd = le32_get(c->pd_id);
	n.flags = le16_get(c->dbid_flags);
	n.va = le64_get(c->va);
	n.length = le64_get(c->length);
	if (n.flags & IONIC_MRF_IS_MW) {
		/* A memory window: it names nothing until a BIND_MW binds it (ionic_rdma_mr.c). */
		n.va = n.length = 0;
		n.flags &= (uint16_t)~IONIC_MRF_ACCESS_MASK;
	} else if (map_count == 0) {
		n.fast_reg = true; /* pages come with a REG_MR work request */
	} else if (map_count == 1) {
		n.base = le64_get(c->dma_addr);
		n.registered = true;
	} else {
		uint8_t shift = c->page_size_log2;

		if (shift < 12 || shift > 30)
			return IONIC_V1_ASTS_BAD_ATTR;
		n.page_shift = shift;
		n.first_page_off = n.va & ((1ull << shift) - 1);
		/* The pages must cover [va, va + length). */
		if (n.length > ((uint64_t)map_count << shift) - n.first_page_off)
			return IONIC_V1_ASTS_BAD_ATTR;
		if (rdma_pages_copy(dev, le64_get(c->dma_addr), map_count, &n.pages))
			return IONIC_V1_ASTS_BAD_ATTR;
		n.npages = n.pages_cap = map_count;
		n.registered = true;
	}
	n.valid = true;
	r->mr[index] = n;
	rdma_hw_note(&r->mr_hw, index);
	return IONIC_V1_ASTS_OK;
}

static void mr_free(struct ionic_dev *dev, struct rdma_mr *mr)
{
	if (mr->pages) {
		dev->rdma->pts_used -= mr->npages;
		free(mr->pages);
	}
	memset(mr, 0, sizeof(*mr));
}

static uint8_t admin_destroy_mr(struct ionic_dev *dev, uint32_t id)
{
	uint32_t index = id >> 8;

	if (index == 0 || index >= IONIC_RDMA_NMR)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (!dev->rdma->mr[index].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	if (rdma_mr_release(dev, index) != 0)
		return IONIC_V1_ASTS_BAD_STATE; /* a region with windows bound to it stays */
	return IONIC_V1_ASTS_OK;
}

static uint8_t admin_create_ah(struct ionic_dev *dev, const struct ionic_admin_create_ah *c)
{
	uint32_t id = le32_get(c->id_ver) & 0xffffffu, len = le32_get(c->length);
	struct rdma_ah *ah;

	if (id >= IONIC_RDMA_NAH)
		return IONIC_V1_ASTS_BAD_INDEX;
	ah = &dev->rdma->ah[id];
	rdma_hw_note(&dev->rdma->ah_hw, id);
	if (ah->valid)
		return IONIC_V1_ASTS_BAD_STATE;
	if (len > IONIC_RDMA_HDR_MAX || ionic_dma_read(dev, le64_get(c->dma_addr), ah->hdr, len))
		return IONIC_V1_ASTS_BAD_ATTR;
	ah->hdr_len = (uint8_t)len;
	ah->pd = le32_get(c->pd_id);
	ah->valid = true;
	return IONIC_V1_ASTS_OK;
}

static uint8_t admin_destroy_ah(struct ionic_dev *dev, uint32_t id)
{
	if (id >= IONIC_RDMA_NAH)
		return IONIC_V1_ASTS_BAD_INDEX;
	if (!dev->rdma->ah[id].valid)
		return IONIC_V1_ASTS_BAD_STATE;
	memset(&dev->rdma->ah[id], 0, sizeof(dev->rdma->ah[id]));
	return IONIC_V1_ASTS_OK;
}

void rdma_admin_free_all(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	for (unsigned int i = 0; i < r->qp_hw; i++)
		if (r->qp[i].valid)
			qp_free(dev, &r->qp[i]);
	for (unsigned int i = 0; i < r->mr_hw; i++)
		if (r->mr[i].valid || r->mr[i].pages)
			mr_free(dev, &r->mr[i]);
	for (unsigned int i = 0; i < r->cq_hw; i++)
		rdma_ring_free(dev, &r->cq[i].ring);
	memset(r->cq, 0, r->cq_hw * sizeof(*r->cq));
	memset(r->ah, 0, r->ah_hw * sizeof(*r->ah));
	r->qp_hw = r->mr_hw = r->cq_hw = r->ah_hw = 0;
	r->mw2_bound = 0;
}

/* ---- the queue ----------------------------------------------------------------------------------------- */

/* Payload lengths the driver sends, per opcode (0: no minimum). */
static const uint16_t min_len[IONIC_V1_ADMIN_OPCODES] = {
	[IONIC_V1_ADMIN_CREATE_CQ] = sizeof(struct ionic_admin_create_cq),
	[IONIC_V1_ADMIN_CREATE_QP] = sizeof(struct ionic_admin_create_qp),
	[IONIC_V1_ADMIN_CREATE_MR] = sizeof(struct ionic_admin_create_mr),
	[IONIC_V1_ADMIN_DESTROY_MR] = sizeof(struct ionic_admin_id),
	[IONIC_V1_ADMIN_DESTROY_CQ] = sizeof(struct ionic_admin_id),
	[IONIC_V1_ADMIN_MODIFY_QP] = sizeof(struct ionic_admin_mod_qp),
	[IONIC_V1_ADMIN_QUERY_QP] = sizeof(struct ionic_admin_query_qp),
	[IONIC_V1_ADMIN_DESTROY_QP] = sizeof(struct ionic_admin_id),
	[IONIC_V1_ADMIN_CREATE_AH] = sizeof(struct ionic_admin_create_ah),
	[IONIC_V1_ADMIN_DESTROY_AH] = sizeof(struct ionic_admin_id),
};

static uint8_t admin_exec(struct ionic_dev *dev, uint8_t op, const uint8_t *p, uint32_t len)
{
	uint32_t id;

	if (op >= IONIC_V1_ADMIN_OPCODES)
		return IONIC_V1_ASTS_BAD_CMD;
	if (len < min_len[op])
		return IONIC_V1_ASTS_BAD_ATTR;
	if (min_len[op] == sizeof(struct ionic_admin_id))
		id = le32_get(((const struct ionic_admin_id *)p)->id);
	else
		id = 0;
	switch (op) {
	case IONIC_V1_ADMIN_NOOP: return IONIC_V1_ASTS_OK;
	case IONIC_V1_ADMIN_CREATE_CQ: return admin_create_cq(dev, (const void *)p);
	case IONIC_V1_ADMIN_DESTROY_CQ: return admin_destroy_cq(dev, id);
	case IONIC_V1_ADMIN_CREATE_QP: return admin_create_qp(dev, (const void *)p);
	case IONIC_V1_ADMIN_MODIFY_QP: return admin_modify_qp(dev, (const void *)p);
	case IONIC_V1_ADMIN_QUERY_QP: return admin_query_qp(dev, (const void *)p);
	case IONIC_V1_ADMIN_DESTROY_QP: return admin_destroy_qp(dev, id);
	case IONIC_V1_ADMIN_CREATE_MR: return admin_create_mr(dev, (const void *)p);
	case IONIC_V1_ADMIN_DESTROY_MR: return admin_destroy_mr(dev, id);
	case IONIC_V1_ADMIN_CREATE_AH: return admin_create_ah(dev, (const void *)p);
	case IONIC_V1_ADMIN_DESTROY_AH: return admin_destroy_ah(dev, id & 0xffffffu);
	default: return IONIC_V1_ASTS_BAD_CMD; /* statistics, resize, debug, DCQCN: not offered */
	}
}

static void aq_complete(struct ionic_dev *dev, uint32_t aqid, struct rdma_aq *aq, uint32_t slot, uint8_t op,
			uint8_t st)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.admin.cmd_idx = be16_set((uint16_t)slot);
	cqe.admin.cmd_op = op;
	cqe.status_length = be32_set(st);
	cqe.qid_type_flags = be32_set(aqid << IONIC_V1_CQE_QID_SHIFT |
				      IONIC_V1_CQE_TYPE_ADMIN << IONIC_V1_CQE_TYPE_SHIFT |
				      (st ? IONIC_V1_CQE_ERROR : 0));
	if (rdma_cq_post(dev, aq->cq_id, &cqe, false))
		ionic_guest_error(dev, "RDMA admin queue %u: completion queue %u unusable", aqid, aq->cq_id);
}

/* Run the commands between the device's head and the doorbell's producer index. */
void rdma_aq_run(struct ionic_dev *dev, uint32_t aqid)
{
	struct rdma_aq *aq = &dev->rdma->aq[aqid];
	uint32_t depth = 1u << aq->ring.depth_log2, mask = depth - 1;
	uint8_t payload[AQ_PAYLOAD_MAX];

	while ((aq->head & mask) != aq->prod) {
		uint32_t first = aq->head & mask, avail = (aq->prod - first) & mask, nslots, copied;
		uint8_t slot[IONIC_AQ_STRIDE], st;
		bool overlong = false;
		struct ionic_aq_hdr hdr;
		uint64_t addr;

		if (rdma_ring_addr(&aq->ring, first, &addr) || ionic_dma_read(dev, addr, slot, sizeof(slot))) {
			ionic_guest_error(dev, "RDMA admin queue %u slot %u is not mapped", aqid, first);
			return;
		}
		memcpy(&hdr, slot, sizeof(hdr));
		nslots = (le16_get(hdr.len) + IONIC_AQ_HDR_LEN + IONIC_AQ_STRIDE - 1) / IONIC_AQ_STRIDE;
		if (nslots > avail) {
			if (nslots < depth)
				return; /* the rest of the command has not been posted yet */
			nslots = avail; /* longer than the ring: consume what is there and refuse it */
			overlong = true;
		}
		/* Gather the payload: 60 bytes of the first slot, then whole slots. */
		copied = IONIC_AQ_STRIDE - IONIC_AQ_HDR_LEN;
		memcpy(payload, slot + IONIC_AQ_HDR_LEN, copied);
		for (uint32_t i = 1; i < nslots && copied + IONIC_AQ_STRIDE <= sizeof(payload); i++) {
			if (rdma_ring_addr(&aq->ring, first + i, &addr) ||
			    ionic_dma_read(dev, addr, payload + copied, IONIC_AQ_STRIDE)) {
				ionic_guest_error(dev, "RDMA admin queue %u slot %u is not mapped", aqid, first + i);
				return;
			}
			copied += IONIC_AQ_STRIDE;
		}
		if (overlong || le16_get(hdr.len) > sizeof(payload) - IONIC_AQ_HDR_LEN)
			st = IONIC_V1_ASTS_MSG_TOO_BIG;
		else
			st = admin_exec(dev, hdr.op, payload, le16_get(hdr.len));
		dev->stats.rdma_admin_cmds++;
		if (st)
			dev->stats.rdma_admin_errors++;
		LOG_DEBUG("ionic rdma: admin queue %u op %u (slot %u) -> status %u, CQ %u entry %u", aqid, hdr.op, first,
			  st, aq->cq_id,
			  aq->cq_id < IONIC_RDMA_NCQ ? dev->rdma->cq[aq->cq_id].prod : 0);
		aq->head += nslots;
		aq_complete(dev, aqid, aq, first, hdr.op, st);
	}
}
