/*
 * The RDMA LIF: identity, the queue-level commands the Ethernet admin queue
 * carries (RDMA_RESET_LIF, RDMA_CREATE_EQ/CQ/ADMINQ), queue memory, event
 * and completion queues, and doorbell routing. Tracks ionic_rdma of Linux
 * 7.2 (ionic_admin.c, ionic_fw.h) and rdma-core's libionic, interface
 * version 1.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ionic/ionic_rdma_engine.h"
#include "util/log.h"

int ionic_rdma_new(struct ionic_dev *dev)
{
	struct ionic_rdma *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->cq = calloc(IONIC_RDMA_NCQ, sizeof(*r->cq));
	r->qp = calloc(IONIC_RDMA_NQP, sizeof(*r->qp));
	r->mr = calloc(IONIC_RDMA_NMR, sizeof(*r->mr));
	r->ah = calloc(IONIC_RDMA_NAH, sizeof(*r->ah));
	if (!r->cq || !r->qp || !r->mr || !r->ah) {
		free(r->cq);
		free(r->qp);
		free(r->mr);
		free(r->ah);
		free(r);
		return -ENOMEM;
	}
	r->budget = IONIC_RDMA_TURN_BUDGET;
	dev->rdma = r;
	return 0;
}

/* Forget every RDMA resource (LIF reset, RDMA_RESET_LIF, device reset). */
void ionic_rdma_reset(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	if (!r)
		return;
	if (r->peer.reset)
		r->peer.reset(r->peer.ctx);
	rdma_admin_free_all(dev); /* every wire QP detached on the way */
	if (r->wire.reset)
		r->wire.reset(r->wire.ctx);
	for (unsigned int i = 0; i < IONIC_RDMA_NEQ; i++)
		rdma_ring_free(dev, &r->eq[i].ring);
	for (unsigned int i = 0; i < IONIC_RDMA_NAQ; i++)
		rdma_ring_free(dev, &r->aq[i].ring);
	memset(r->eq, 0, sizeof(r->eq));
	memset(r->aq, 0, sizeof(r->aq));
	r->reset_done = false;
}

void ionic_rdma_free(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	if (!r)
		return;
	ionic_rdma_reset(dev);
	free(r->cq);
	free(r->qp);
	free(r->mr);
	free(r->ah);
	free(r);
	dev->rdma = NULL;
}

static void qtype_ident(struct ionic_lif_logical_qtype *q, uint8_t qtype, uint32_t count)
{
	q->qtype = qtype;
	q->qid_count = le32_set(count);
	q->qid_base = le32_set(0);
}

void ionic_rdma_identity(struct ionic_lif_identity *id)
{
	id->capabilities = le64_set(le64_get(id->capabilities) | IONIC_LIF_CAP_RDMA);
	id->rdma.version = 1;
	id->rdma.qp_opcodes = IONIC_V1_OP_COUNT;
	id->rdma.admin_opcodes = IONIC_V1_ADMIN_OPCODES;
	id->rdma.minor_version = 0;
	id->rdma.npts_per_lif = le32_set(IONIC_RDMA_NPTS);
	id->rdma.nmrs_per_lif = le32_set(IONIC_RDMA_NMR);
	id->rdma.nahs_per_lif = le32_set(IONIC_RDMA_NAH);
	id->rdma.max_stride = IONIC_RDMA_MAX_STRIDE;
	id->rdma.cl_stride = 6;
	id->rdma.pte_stride = 3;
	id->rdma.rrq_stride = 6;
	id->rdma.rsq_stride = 6;
	id->rdma.udma_shift = IONIC_RDMA_UDMA_SHIFT;
	qtype_ident(&id->rdma.aq_qtype, IONIC_RDMA_QTYPE_AQ, IONIC_RDMA_NAQ);
	qtype_ident(&id->rdma.sq_qtype, IONIC_RDMA_QTYPE_SQ, IONIC_RDMA_NQP);
	qtype_ident(&id->rdma.rq_qtype, IONIC_RDMA_QTYPE_RQ, IONIC_RDMA_NQP);
	qtype_ident(&id->rdma.cq_qtype, IONIC_RDMA_QTYPE_CQ, IONIC_RDMA_NCQ);
	qtype_ident(&id->rdma.eq_qtype, IONIC_RDMA_QTYPE_EQ, IONIC_RDMA_NEQ);
	id->rdma.stats_type = le16_set(0);
}

/* ---- queue memory ---------------------------------------------------------------------- */

int rdma_pages_copy(struct ionic_dev *dev, uint64_t list, uint32_t n, uint64_t **out)
{
	struct ionic_rdma *r = dev->rdma;
	uint64_t *pages;

	if (n == 0 || n > IONIC_RDMA_NPTS - r->pts_used)
		return -ENOSPC;
	pages = malloc((size_t)n * sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	/* The driver frees the list as soon as the command completes: keep our own copy. */
	if (ionic_dma_read(dev, list, pages, (size_t)n * sizeof(*pages))) {
		free(pages);
		return -EFAULT;
	}
	for (uint32_t i = 0; i < n; i++)
		pages[i] = le64toh(pages[i]);
	r->pts_used += n;
	*out = pages;
	return 0;
}

int rdma_ring_setup(struct ionic_dev *dev, struct rdma_ring *ring, uint64_t dma_addr, uint32_t map_count,
		    uint8_t page_shift, uint8_t depth_log2, uint8_t stride_log2)
{
	struct rdma_ring n = { 0 };
	uint64_t bytes;
	int rc;

	if (depth_log2 > IONIC_RDMA_MAX_DEPTH_LOG2 || stride_log2 > IONIC_RDMA_MAX_STRIDE || stride_log2 < 2 ||
	    map_count == 0 || dma_addr == 0)
		return -EINVAL;
	n.depth_log2 = depth_log2;
	n.stride_log2 = stride_log2;
	bytes = (uint64_t)1 << (depth_log2 + stride_log2);
	if (map_count == 1) {
		n.base = dma_addr;
	} else {
		if (page_shift < 12 || page_shift > 30)
			return -EINVAL;
		/* The list must cover the ring, and a ring entry never straddles a page. */
		if (((uint64_t)map_count << page_shift) < bytes || stride_log2 > page_shift)
			return -EINVAL;
		rc = rdma_pages_copy(dev, dma_addr, map_count, &n.pages);
		if (rc)
			return rc;
		n.npages = map_count;
		n.page_shift = page_shift;
	}
	*ring = n;
	return 0;
}

void rdma_ring_free(struct ionic_dev *dev, struct rdma_ring *ring)
{
	if (ring->pages) {
		dev->rdma->pts_used -= ring->npages;
		free(ring->pages);
	}
	memset(ring, 0, sizeof(*ring));
}

int rdma_ring_addr(const struct rdma_ring *ring, uint32_t idx, uint64_t *addr)
{
	uint64_t off = (uint64_t)(idx & ((1u << ring->depth_log2) - 1)) << ring->stride_log2;
	uint64_t pg;

	if (ring->npages == 0) {
		if (ring->base == 0)
			return -EFAULT;
		*addr = ring->base + off;
		return 0;
	}
	pg = off >> ring->page_shift;
	if (pg >= ring->npages)
		return -EFAULT;
	*addr = ring->pages[pg] + (off & ((1ull << ring->page_shift) - 1));
	return 0;
}

/* ---- event and completion queues ------------------------------------------------------------------------ */

void rdma_eq_post(struct ionic_dev *dev, uint32_t eq_id, uint8_t type, uint8_t code, uint32_t qid)
{
	struct rdma_eq *eq = eq_id < IONIC_RDMA_NEQ ? &dev->rdma->eq[eq_id] : NULL;
	uint64_t addr;
	be32 evt;

	if (!eq || !eq->valid) {
		ionic_guest_error(dev, "event for EQ %u that does not exist", eq_id);
		return;
	}
	if (rdma_ring_addr(&eq->ring, eq->prod, &addr)) {
		ionic_guest_error(dev, "EQ %u ring unusable", eq_id);
		return;
	}
	evt = be32_set(qid << IONIC_V1_EQE_QID_SHIFT | (uint32_t)code << IONIC_V1_EQE_CODE_SHIFT |
		       (uint32_t)type << IONIC_V1_EQE_TYPE_SHIFT | (eq->color ? IONIC_V1_EQE_COLOR : 0));
	if (ionic_dma_write(dev, addr, &evt, sizeof(evt))) {
		ionic_guest_error(dev, "EQ %u entry at %#llx is not mapped", eq_id, (unsigned long long)addr);
		return;
	}
	dev->stats.rdma_eqes++;
	eq->prod++;
	if ((eq->prod & ((1u << eq->ring.depth_log2) - 1)) == 0)
		eq->color ^= 1;
	ionic_intr_raise(dev, eq->intr);
}

static void cq_notify(struct ionic_dev *dev, struct rdma_cq *cq, uint32_t cq_id)
{
	cq->arm_any = cq->arm_sol = false;
	cq->notified_prod = cq->prod;
	rdma_eq_post(dev, cq->eq_id, IONIC_V1_EQE_TYPE_CQ, IONIC_V1_EQE_CQ_NOTIFY, cq_id);
}

int rdma_cq_post(struct ionic_dev *dev, uint32_t cq_id, struct ionic_v1_cqe *cqe, bool solicited)
{
	struct rdma_cq *cq = cq_id < IONIC_RDMA_NCQ ? &dev->rdma->cq[cq_id] : NULL;
	uint32_t qtf;
	uint64_t addr;

	if (!cq || !cq->valid)
		return -ENOENT;
	if (rdma_ring_addr(&cq->ring, cq->prod, &addr))
		return -EFAULT;
	qtf = be32_get(cqe->qid_type_flags) & ~IONIC_V1_CQE_COLOR;
	cqe->qid_type_flags = be32_set(qtf | (cq->color ? IONIC_V1_CQE_COLOR : 0));
	/* The driver reads the color word first: everything else must be in place before it. */
	if (ionic_dma_write(dev, addr, cqe, offsetof(struct ionic_v1_cqe, qid_type_flags)) ||
	    ionic_dma_write(dev, addr + offsetof(struct ionic_v1_cqe, qid_type_flags), &cqe->qid_type_flags,
			    sizeof(cqe->qid_type_flags))) {
		ionic_guest_error(dev, "CQ %u entry at %#llx is not mapped", cq_id, (unsigned long long)addr);
		return -EFAULT;
	}
	dev->stats.rdma_cqes++;
	cq->prod++;
	if ((cq->prod & ((1u << cq->ring.depth_log2) - 1)) == 0)
		cq->color ^= 1;
	if (cq->arm_any || (cq->arm_sol && solicited))
		cq_notify(dev, cq, cq_id);
	return 0;
}

/* CQ doorbell: ring 0 reports the consumer index, ring 1 arms, ring 2 arms for solicited events. */
static void cq_doorbell(struct ionic_dev *dev, uint32_t page, uint32_t cq_id, uint32_t ring, uint32_t index)
{
	struct rdma_cq *cq = cq_id < IONIC_RDMA_NCQ ? &dev->rdma->cq[cq_id] : NULL;
	uint32_t mask;

	if (!cq || !cq->valid || cq->dbid != page) {
		ionic_guest_error(dev, "doorbell on page %u for CQ %u that does not exist there", page, cq_id);
		return;
	}
	mask = (1u << cq->ring.depth_log2) - 1;
	if (ring == 0)
		dev->stats.rdma_db_cq++;
	else
		dev->stats.rdma_db_arm++;
	switch (ring) {
	case 0:
		cq->host_cons = index & mask;
		break;
	case 1:
	case 2:
		if (ring == 1)
			cq->arm_any = true;
		else
			cq->arm_sol = true;
		/*
		 * Completions the host has not consumed yet: tell it now, or it waits
		 * forever. With mapped doorbell pages the consumer index a driver stores
		 * right before its arm may be overwritten by the arm (docs/ionic.md):
		 * then only completions made since the last event count, or every
		 * re-arm would raise another event for the same completions.
		 */
		if ((cq->prod & mask) != cq->host_cons && (ionic_db_pages(dev) == NULL || cq->prod != cq->notified_prod))
			cq_notify(dev, cq, cq_id);
		break;
	default:
		ionic_guest_error(dev, "CQ %u doorbell on ring %u", cq_id, ring);
	}
}

/* ---- queue-level commands on the Ethernet admin queue ------------------------------------------------------ */

static uint8_t create_eq(struct ionic_dev *dev, const struct ionic_rdma_queue_cmd *c)
{
	uint32_t id = le32_get(c->qid_ver) & 0xffffffu, intr = le32_get(c->cid);
	struct rdma_eq *eq;
	struct rdma_eq n = { .color = 1 };

	if (id >= IONIC_RDMA_NEQ || intr >= IONIC_NINTRS || c->stride_log2 != 2)
		return IONIC_RC_EINVAL;
	eq = &dev->rdma->eq[id];
	if (eq->valid)
		return IONIC_RC_EEXIST;
	if (rdma_ring_setup(dev, &n.ring, le64_get(c->dma_addr), 1, 0, c->depth_log2, c->stride_log2))
		return IONIC_RC_EINVAL;
	n.intr = (uint16_t)intr;
	n.valid = true;
	*eq = n;
	return IONIC_RC_SUCCESS;
}

static uint8_t create_cq(struct ionic_dev *dev, const struct ionic_rdma_queue_cmd *c)
{
	uint32_t id = le32_get(c->qid_ver) & 0xffffffu, eq = le32_get(c->cid);
	struct rdma_cq n = { .color = 1 };

	if (id >= IONIC_RDMA_NCQ || eq >= IONIC_RDMA_NEQ || !dev->rdma->eq[eq].valid || c->stride_log2 != 5)
		return IONIC_RC_EINVAL;
	if (dev->rdma->cq[id].valid)
		return IONIC_RC_EEXIST;
	if (rdma_ring_setup(dev, &n.ring, le64_get(c->dma_addr), 1, 0, c->depth_log2, c->stride_log2))
		return IONIC_RC_EINVAL;
	n.eq_id = eq;
	n.valid = true;
	dev->rdma->cq[id] = n;
	rdma_hw_note(&dev->rdma->cq_hw, id);
	return IONIC_RC_SUCCESS;
}

static uint8_t create_aq(struct ionic_dev *dev, const struct ionic_rdma_queue_cmd *c)
{
	uint32_t id = le32_get(c->qid_ver) & 0xffffffu, cq = le32_get(c->cid);
	struct rdma_aq n = { 0 };

	if (id >= IONIC_RDMA_NAQ || cq >= IONIC_RDMA_NCQ || !dev->rdma->cq[cq].valid || c->stride_log2 != 6)
		return IONIC_RC_EINVAL;
	if (dev->rdma->aq[id].valid)
		return IONIC_RC_EEXIST;
	if (rdma_ring_setup(dev, &n.ring, le64_get(c->dma_addr), 1, 0, c->depth_log2, c->stride_log2))
		return IONIC_RC_EINVAL;
	n.cq_id = cq;
	n.valid = true;
	dev->rdma->aq[id] = n;
	return IONIC_RC_SUCCESS;
}

uint8_t ionic_rdma_queue_cmd(struct ionic_dev *dev, const uint8_t *cmd)
{
	const struct ionic_rdma_queue_cmd *c = (const void *)cmd;
	uint8_t rc;

	if (le16_get(c->lif_index) != 0)
		return IONIC_RC_ENOENT;
	switch (c->opcode) {
	case IONIC_CMD_RDMA_RESET_LIF:
		ionic_rdma_reset(dev);
		dev->rdma->reset_done = true;
		if (ionic_db_pages(dev) && !dev->rdma_mapped_warned) {
			/* All queues of one kind on a page ring one doorbell word: a mapped page keeps only the last store. */
			LOG_WARN("ionic: RDMA over mapped doorbell pages can lose doorbells (docs/ionic.md); "
				 "serve RDMA guests with trapped doorbells (the default)");
			dev->rdma_mapped_warned = true;
		}
		return IONIC_RC_SUCCESS;
	case IONIC_CMD_RDMA_CREATE_EQ:
		rc = create_eq(dev, c);
		break;
	case IONIC_CMD_RDMA_CREATE_CQ:
		rc = create_cq(dev, c);
		break;
	case IONIC_CMD_RDMA_CREATE_ADMINQ:
		rc = create_aq(dev, c);
		break;
	default:
		return IONIC_RC_EOPCODE;
	}
	if (rc)
		ionic_guest_error(dev, "RDMA queue command %u for queue %u refused (%u)", c->opcode,
				  le32_get(c->qid_ver) & 0xffffffu, rc);
	return rc;
}

/* ---- bounded work ---------------------------------------------------------------------------------------- */

bool ionic_dev_work(struct ionic_dev *dev)
{
	return dev->rdma ? rdma_work(dev) : false;
}

bool ionic_dev_work_pending(const struct ionic_dev *dev)
{
	return dev->rdma && dev->rdma->run_head != 0;
}

/* ---- doorbells --------------------------------------------------------------------------------------------- */

bool ionic_rdma_doorbell(struct ionic_dev *dev, uint32_t page, uint32_t qtype, uint32_t qid, uint32_t ring,
			 uint32_t index)
{
	struct ionic_rdma *r = dev->rdma;

	switch (qtype) {
	case IONIC_RDMA_QTYPE_AQ:
		if (page != 0 || qid >= IONIC_RDMA_NAQ || !r->aq[qid].valid) {
			ionic_guest_error(dev, "doorbell for RDMA admin queue %u that does not exist", qid);
			return true;
		}
		dev->stats.rdma_db_aq++;
		r->aq[qid].prod = index & ((1u << r->aq[qid].ring.depth_log2) - 1);
		LOG_DEBUG("ionic rdma: admin queue %u doorbell: producer %u", qid, r->aq[qid].prod);
		rdma_aq_run(dev, qid);
		return true;
	case IONIC_RDMA_QTYPE_CQ:
		cq_doorbell(dev, page, qid, ring, index);
		return true;
	case IONIC_RDMA_QTYPE_SQ:
	case IONIC_RDMA_QTYPE_RQ:
		/* A user context rings only its own queues, on its own page. */
		if (qid >= IONIC_RDMA_NQP || !r->qp[qid].valid || r->qp[qid].dbid != page) {
			ionic_guest_error(dev, "doorbell on page %u for QP %u that does not exist there", page, qid);
			return true;
		}
		{
			struct rdma_wq *wq = qtype == IONIC_RDMA_QTYPE_SQ ? &r->qp[qid].sq : &r->qp[qid].rq;

			if (!wq->present) {
				ionic_guest_error(dev, "doorbell for QP %u's missing %s", qid,
						  qtype == IONIC_RDMA_QTYPE_SQ ? "send queue" : "receive queue");
				return true;
			}
			wq->prod = index & ((1u << wq->ring.depth_log2) - 1);
			if (qtype == IONIC_RDMA_QTYPE_SQ)
				dev->stats.rdma_db_sq++;
			else
				dev->stats.rdma_db_rq++;
		}
		if (qtype == IONIC_RDMA_QTYPE_SQ)
			rdma_sq_run(dev, qid);
		else
			rdma_rq_posted(dev, qid);
		return true;
	default:
		return false;
	}
}

/* ---- completions in the driver's formats -------------------------------------------------------------------------------- */

static void cqe_post(struct ionic_dev *dev, uint32_t cq_id, struct ionic_v1_cqe *cqe, bool solicited)
{
	if (rdma_cq_post(dev, cq_id, cqe, solicited))
		ionic_guest_error(dev, "completion for CQ %u lost (no such CQ or ring unusable)", cq_id);
}

/* A send completion of type (SEND_MSN or SEND_NPG) whose own field cqe already holds. */
static void complete_send(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint32_t type,
			  struct ionic_v1_cqe *cqe, uint32_t status)
{
	cqe->status_length = be32_set(status);
	cqe->qid_type_flags = be32_set(qpid << IONIC_V1_CQE_QID_SHIFT | type << IONIC_V1_CQE_TYPE_SHIFT |
				       (status ? IONIC_V1_CQE_ERROR : 0));
	cqe_post(dev, qp->sq.cq_id, cqe, status != 0);
}

/* A remote operation on RC/UC: the cumulative message sequence number. */
void rdma_complete_msn(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint32_t status)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.send.msg_msn = be32_set(++qp->msn);
	complete_send(dev, qpid, qp, IONIC_V1_CQE_TYPE_SEND_MSN, &cqe, status);
}

/* Anything else (UD sends, REG_MR, LOCAL_INV): its own completion naming its SQ slot. */
void rdma_complete_npg(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint64_t wqe_id,
		       uint32_t status)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.send.npg_wqe_id = le64_set(wqe_id);
	complete_send(dev, qpid, qp, IONIC_V1_CQE_TYPE_SEND_NPG, &cqe, status);
}

/* A receive's completion: its WQE, the sender, how it came (ri), and the length or an error status. */

void rdma_complete_recv(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, le64 wqe_id,
			const struct recv_info *ri, uint32_t len, uint32_t status)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.recv.wqe_id = wqe_id;
	cqe.recv.src_qpn_op = be32_set((ri->src_qpn & 0xffffffu) | (uint32_t)ri->op << IONIC_V1_CQE_RECV_OP_SHIFT |
				       (ri->ipv4 ? IONIC_V1_CQE_RECV_IS_IPV4 : 0) |
				       (ri->vlan ? IONIC_V1_CQE_RECV_IS_VLAN : 0));
	memcpy(cqe.recv.src_mac, ri->smac, 6);
	cqe.recv.vlan_tag = be16_set(ri->vlan ? ri->tci : 0);
	cqe.recv.imm_data_rkey = ri->imm_rkey;
	cqe.status_length = be32_set(status ? status : len);
	cqe.qid_type_flags = be32_set(qpid << IONIC_V1_CQE_QID_SHIFT |
				      IONIC_V1_CQE_TYPE_RECV << IONIC_V1_CQE_TYPE_SHIFT |
				      (status ? IONIC_V1_CQE_ERROR : 0));
	/* A receive is solicited when the sender asked (SOL flag), and an error always is. */
	cqe_post(dev, qp->rq.cq_id, &cqe, ri->solicited || status != 0);
}

/*
 * A QP entered the error state: one "flushed" completion per queue tells the
 * driver to complete what is still posted there with flush errors itself.
 * The kernel driver flushes its own queues on the modify, but libionic only
 * learns of it from these completions (and the CQ event they raise).
 */
void rdma_qp_flush(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp)
{
	struct recv_info ri = { .src_qpn = 0 };

	if (qp->rq.present)
		rdma_complete_recv(dev, qpid, qp, le64_set(0), &ri, 0, IONIC_STS_WQE_FLUSHED_ERR);
	if (qp->sq.present)
		rdma_complete_npg(dev, qpid, qp, 0, IONIC_STS_WQE_FLUSHED_ERR);
}
