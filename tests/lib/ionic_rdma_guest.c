/* Guest-side RDMA helpers for tests; see ionic_rdma_guest.h. */
#include "ionic_rdma_guest.h"

#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>


int rg_queue_cmd(struct ionic_guest *g, uint8_t opcode, uint16_t lif_index, uint32_t qid, uint32_t cid,
		 uint8_t depth_log2, uint8_t stride_log2, uint64_t dma)
{
	uint8_t cmd[64] = { opcode }, comp[16];

	/* lif_index le16 @2, qid_ver le32 @4, cid le32 @8, dbid le16 @12 (0), depth @14, stride @15, dma @16 */
	rg_le16(cmd + 2, lif_index);
	rg_le32(cmd + 4, qid);
	rg_le32(cmd + 8, cid);
	cmd[14] = depth_log2;
	cmd[15] = stride_log2;
	rg_le64(cmd + 16, dma);
	return ionic_guest_aq_cmd(g, cmd, comp);
}

int rg_reset_lif(struct ionic_guest *g)
{
	return rg_queue_cmd(g, RG_CMD_RESET_LIF, 0, 0, 0, 0, 0, 0);
}

int rg_irq_eventfd(struct ionic_guest *g, uint32_t vector)
{
	struct vfu_irq_set s = { .argsz = sizeof(s), .flags = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER,
				 .index = VFU_PCI_MSIX_IRQ, .start = vector, .count = 1 };
	uint8_t rep[16];
	size_t rlen;
	uint32_t err;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (vfc_call(g->c, VFU_CMD_DEVICE_SET_IRQS, &s, sizeof(s), &fd, 1, rep, sizeof(rep), &rlen, &err) || err) {
		close(fd);
		return -1;
	}
	return fd;
}

void rg_intr_write(struct ionic_guest *g, uint32_t i, uint32_t off, uint32_t v)
{
	ionic_guest_intr_write(g, i, off, v, false);
}

uint32_t rg_intr_read(struct ionic_guest *g, uint32_t i, uint32_t off)
{
	return ionic_guest_intr_read(g, i, off);
}

/* Zero the part of [addr, addr + len) that lies in guest memory (a hostile ring may not). */
static void guest_clear(struct ionic_guest *g, uint64_t addr, uint64_t len)
{
	uint64_t lo = addr < GUEST_IOVA ? GUEST_IOVA : addr, hi = addr + len;

	if (hi > GUEST_IOVA + GUEST_SIZE)
		hi = GUEST_IOVA + GUEST_SIZE;
	if (lo < hi)
		memset(guest_ptr(g, lo), 0, hi - lo);
}

/* ---- event queues ---- */

int rg_eq_create(struct ionic_guest *g, struct rg_eq *eq, uint32_t id, uint16_t intr, uint8_t depth_log2,
		 uint64_t ring)
{
	int st;

	memset(eq, 0, sizeof(*eq));
	eq->id = id;
	eq->depth_log2 = depth_log2;
	eq->ring = ring;
	eq->intr = intr;
	eq->color = 1;
	guest_clear(g, ring, 4ull << depth_log2);
	eq->irq_fd = rg_irq_eventfd(g, intr);
	/* Masked, masked again on every assert, no coalescing, no outstanding credits. */
	rg_intr_write(g, intr, GUEST_INTR_MASK, 1);
	rg_intr_write(g, intr, GUEST_INTR_MASK_ON_ASSERT, 1);
	rg_intr_write(g, intr, 0, 0);
	rg_intr_write(g, intr, GUEST_INTR_CREDITS, rg_intr_read(g, intr, GUEST_INTR_CREDITS) & 0xffff);
	st = rg_queue_cmd(g, RG_CMD_CREATE_EQ, 0, id, intr, depth_log2, 2, ring);
	rg_intr_write(g, intr, GUEST_INTR_MASK, 0);
	return eq->irq_fd < 0 ? -1 : st;
}

void rg_eq_close(struct rg_eq *eq)
{
	if (eq->irq_fd > 0)
		close(eq->irq_fd);
	eq->irq_fd = -1;
}

bool rg_eq_poll(struct ionic_guest *g, struct rg_eq *eq, uint32_t *evt)
{
	const volatile uint8_t *e = guest_ptr(g, eq->ring + 4ull * (eq->cons & ((1u << eq->depth_log2) - 1)));
	uint8_t w[4];

	if ((e[3] & 1) != eq->color)
		return false;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (int i = 0; i < 4; i++)
		w[i] = e[i];
	*evt = rg_get_be32(w);
	if ((++eq->cons & ((1u << eq->depth_log2) - 1)) == 0)
		eq->color ^= 1;
	return true;
}

uint64_t rg_eq_wait_irq(struct rg_eq *eq, int timeout_ms)
{
	struct pollfd pfd = { .fd = eq->irq_fd, .events = POLLIN };
	uint64_t v = 0;

	if (poll(&pfd, 1, timeout_ms) != 1)
		return 0;
	if (read(eq->irq_fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

void rg_eq_rearm(struct ionic_guest *g, struct rg_eq *eq, uint32_t credits)
{
	ionic_guest_intr_write(g, eq->intr, GUEST_INTR_CREDITS, (credits & 0xffff) | GUEST_INTR_CRED_UNMASK, true);
}

/* ---- completion queues ---- */

void rg_cq_init(struct rg_cq *cq, uint32_t id, uint8_t depth_log2, uint64_t ring)
{
	memset(cq, 0, sizeof(*cq));
	cq->id = id;
	cq->depth_log2 = depth_log2;
	cq->ring = ring;
	cq->color = 1;
}

int rg_cq_create(struct ionic_guest *g, struct rg_cq *cq, uint32_t id, uint32_t eq_id, uint8_t depth_log2,
		 uint64_t ring)
{
	rg_cq_init(cq, id, depth_log2, ring);
	guest_clear(g, ring, (uint64_t)RG_CQE_SIZE << depth_log2);
	return rg_queue_cmd(g, RG_CMD_CREATE_CQ, 0, id, eq_id, depth_log2, 5, ring);
}

uint64_t rg_cqe_addr(const struct rg_cq *cq, uint32_t idx)
{
	uint64_t off = (uint64_t)(idx & ((1u << cq->depth_log2) - 1)) * RG_CQE_SIZE;

	if (cq->npages == 0)
		return cq->ring + off;
	return cq->pages[(off >> cq->page_shift) % cq->npages] + (off & ((1ull << cq->page_shift) - 1));
}

bool rg_cq_poll(struct ionic_guest *g, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE])
{
	const volatile uint8_t *c = guest_ptr(g, rg_cqe_addr(cq, cq->cons));

	/* The color is bit 0 of the last byte (qid_type_flags is big-endian). */
	if ((c[31] & 1) != cq->color)
		return false;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (int i = 0; i < RG_CQE_SIZE; i++)
		cqe[i] = c[i];
	if ((++cq->cons & ((1u << cq->depth_log2) - 1)) == 0)
		cq->color ^= 1;
	return true;
}

bool rg_cq_wait(struct ionic_guest *g, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE], int timeout_ms)
{
	for (int t = 0; t <= timeout_ms; t++) {
		if (rg_cq_poll(g, cq, cqe))
			return true;
		usleep(1000);
	}
	return false;
}

void rg_cq_ack(struct ionic_guest *g, struct rg_cq *cq)
{
	rg_db(g, RG_QTYPE_CQ, cq->id, 0, cq->cons & ((1u << cq->depth_log2) - 1));
}

void rg_cq_arm(struct ionic_guest *g, struct rg_cq *cq, uint32_t ring, uint16_t arm_index)
{
	rg_db(g, RG_QTYPE_CQ, cq->id, ring, arm_index);
}

/* ---- the RDMA admin queue ---- */

int rg_aq_create(struct ionic_guest *g, struct rg_aq *aq, uint32_t id, struct rg_cq *cq, uint8_t depth_log2,
		 uint64_t ring)
{
	memset(aq, 0, sizeof(*aq));
	aq->id = id;
	aq->depth_log2 = depth_log2;
	aq->ring = ring;
	aq->cq = cq;
	guest_clear(g, ring, (uint64_t)RG_AQ_STRIDE << depth_log2);
	return rg_queue_cmd(g, RG_CMD_CREATE_ADMINQ, 0, id, cq->id, depth_log2, 6, ring);
}

int rg_probe(struct ionic_guest *g, struct rg_eq *eq, struct rg_cq *acq, struct rg_aq *aq, uint8_t cq_depth_log2,
	     uint8_t aq_depth_log2)
{
	if (rg_reset_lif(g))
		return -1;
	if (rg_eq_create(g, eq, 0, 2, 10, RG_EQ_RING(0)))
		return -2;
	if (rg_cq_create(g, acq, 0, 0, cq_depth_log2, RG_CQ_RING(0)))
		return -3;
	if (rg_aq_create(g, aq, 0, acq, aq_depth_log2, RG_AQ_RING(0)))
		return -4;
	return 0;
}

uint32_t rg_aq_put(struct ionic_guest *g, struct rg_aq *aq, uint8_t op, uint16_t len, const void *payload,
		   size_t nbytes)
{
	uint32_t mask = (1u << aq->depth_log2) - 1, first = aq->prod & mask;
	size_t total = RG_AQ_HDR_LEN + nbytes, nslots = (total + RG_AQ_STRIDE - 1) / RG_AQ_STRIDE;
	uint8_t hdr[RG_AQ_HDR_LEN] = { op, 0 };
	const uint8_t *src = payload;

	rg_le16(hdr + 2, len);
	/* The driver's order: the header and the first 60 bytes, then whole slots. */
	for (size_t s = 0, done = 0; s < nslots; s++) {
		uint8_t *slot = guest_ptr(g, aq->ring + (uint64_t)((aq->prod + s) & mask) * RG_AQ_STRIDE);
		size_t room = s == 0 ? RG_AQ_STRIDE - RG_AQ_HDR_LEN : RG_AQ_STRIDE, n = nbytes - done;
		uint8_t *dst = s == 0 ? slot + RG_AQ_HDR_LEN : slot;

		memset(slot, 0, RG_AQ_STRIDE);
		if (s == 0)
			memcpy(slot, hdr, sizeof(hdr));
		if (n > room)
			n = room;
		if (src && n)
			memcpy(dst, src + done, n);
		done += n;
	}
	aq->prod += (uint32_t)nslots;
	return first;
}

void rg_aq_ring(struct ionic_guest *g, struct rg_aq *aq)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rg_db(g, RG_QTYPE_AQ, aq->id, 0, aq->prod & ((1u << aq->depth_log2) - 1));
}

int rg_admin(struct ionic_guest *g, struct rg_aq *aq, uint8_t op, const void *payload, uint16_t len,
	     uint8_t cqe[RG_CQE_SIZE])
{
	uint8_t c[RG_CQE_SIZE];

	rg_aq_put(g, aq, op, len, payload, len);
	rg_aq_ring(g, aq);
	rg_sync(g);
	if (!rg_cq_wait(g, aq->cq, c, 2000))
		return -1;
	if (cqe)
		memcpy(cqe, c, sizeof(c));
	return (int)rg_cqe_status(c);
}

/* ---- doorbells ---- */

void rg_db(struct ionic_guest *g, uint32_t qtype, uint32_t qid, uint32_t ring, uint32_t index)
{
	uint64_t v = (uint64_t)(index & 0xffff) | (uint64_t)(ring & 7) << 16 | (uint64_t)(qid & 0xffffff) << 24;

	ionic_guest_db(g, 0, qtype, v);
}

void rg_sync(struct ionic_guest *g)
{
	(void)vfc_read32(g->c, VFU_PCI_CONFIG_REGION, 0);
}

/* ==== the data path ==== */

/* IB verbs attribute-mask bits MODIFY_QP carries. */
#define QPM_STATE              (1u << 0)
#define QPM_ACCESS_FLAGS       (1u << 3)
#define QPM_PKEY_INDEX         (1u << 4)
#define QPM_QKEY               (1u << 6)
#define QPM_AV                 (1u << 7)
#define QPM_PATH_MTU           (1u << 8)
#define QPM_TIMEOUT            (1u << 9)
#define QPM_RETRY_CNT          (1u << 10)
#define QPM_RNR_RETRY          (1u << 11)
#define QPM_RQ_PSN             (1u << 12)
#define QPM_MAX_QP_RD_ATOMIC   (1u << 13)
#define QPM_MIN_RNR_TIMER      (1u << 15)
#define QPM_SQ_PSN             (1u << 16)
#define QPM_MAX_DEST_RD_ATOMIC (1u << 17)
#define QPM_DEST_QPN           (1u << 20)

#define WQE_MAX 256 /* 1 << max_stride */

bool rg_cq_next(struct ionic_guest *g, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE])
{
	rg_sync(g);
	/*
	 * A CQE that must come: the bound only ends a test that would hang. It is generous because a
	 * busy machine (the suite's guests beside it) can keep the server off a CPU for seconds;
	 * 2 s once failed test_dp_ud in a full run.
	 */
	return rg_cq_wait(g, cq, cqe, 20000);
}

void rg_db_page(struct ionic_guest *g, uint32_t page, uint32_t qtype, uint32_t qid, uint32_t ring, uint32_t index)
{
	uint64_t v = (uint64_t)(index & 0xffff) | (uint64_t)(ring & 7) << 16 | (uint64_t)(qid & 0xffffff) << 24;

	ionic_guest_db(g, page, qtype, v);
}

/* One admin command, the CQ's consumer index reported afterwards. */
static int admin_acked(struct ionic_guest *g, struct rg_aq *aq, uint8_t op, const void *p, uint16_t len)
{
	int st = rg_admin(g, aq, op, p, len, NULL);

	rg_cq_ack(g, aq->cq);
	return st;
}

int rg_cq_create_aq(struct ionic_guest *g, struct rg_aq *aq, struct rg_cq *cq, uint32_t id, uint32_t eq_id,
		    uint8_t depth_log2, uint64_t ring)
{
	uint8_t p[34] = { 0 };

	/* eq_id @0, depth_log2 @4, stride_log2 @5, page_size_log2 @7, id_ver @12, tbl_index @16, map_count @20, dma @24 */
	rg_le32(p + 0, eq_id);
	p[4] = depth_log2;
	p[5] = 5;
	p[7] = 12;
	rg_le32(p + 12, id);
	rg_le32(p + 16, ~0u);
	rg_le32(p + 20, 1);
	rg_le64(p + 24, ring);
	rg_cq_init(cq, id, depth_log2, ring);
	guest_clear(g, ring, (uint64_t)RG_CQE_SIZE << depth_log2);
	return admin_acked(g, aq, RG_OP_CREATE_CQ, p, sizeof(p));
}

int rg_qp_create(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp)
{
	uint8_t p[64] = { 0 };

	rg_le32(p + 0, qp->pd);
	rg_be32(p + 4, qp->priv_flags);
	if (qp->sq) {
		guest_clear(g, qp->sq, 1ull << (qp->sq_depth_log2 + qp->sq_stride_log2));
		rg_le32(p + 8, qp->sq_cq);
		p[12] = qp->sq_depth_log2;
		p[13] = qp->sq_stride_log2;
		p[15] = 12;
		rg_le32(p + 16, ~0u);
		rg_le32(p + 20, 1);
		rg_le64(p + 24, qp->sq);
	}
	if (qp->rq) {
		guest_clear(g, qp->rq, 1ull << (qp->rq_depth_log2 + qp->rq_stride_log2));
		rg_le32(p + 32, qp->rq_cq);
		p[36] = qp->rq_depth_log2;
		p[37] = qp->rq_stride_log2;
		p[39] = 12;
		rg_le32(p + 40, ~0u);
		rg_le32(p + 44, 1);
		rg_le64(p + 48, qp->rq);
	}
	rg_le32(p + 56, qp->id);
	rg_le16(p + 60, qp->dbid);
	p[62] = qp->type;
	qp->sq_prod = qp->rq_prod = 0;
	return admin_acked(g, aq, RG_OP_CREATE_QP, p, sizeof(p));
}

int rg_qp_destroy(struct ionic_guest *g, struct rg_aq *aq, uint32_t id)
{
	uint8_t p[4];

	rg_le32(p, id);
	return admin_acked(g, aq, RG_OP_DESTROY_QP, p, sizeof(p));
}

int rg_qp_modify(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint8_t state, uint8_t cur, uint32_t arg,
		 uint16_t access)
{
	return rg_qp_modify_path(g, aq, qp, state, cur, arg, access, NULL);
}

int rg_qp_modify_path(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint8_t state, uint8_t cur,
		      uint32_t arg, uint16_t access, const struct rg_qp_path *path)
{
	uint8_t p[60] = { 0 };
	uint32_t mask = QPM_STATE;
	bool ud = qp->type == RG_QPT_UD, rc = qp->type == RG_QPT_RC;

	switch (state) {
	case RG_QPS_INIT:
		mask |= QPM_PKEY_INDEX | QPM_ACCESS_FLAGS | (ud ? QPM_QKEY : 0);
		break;
	case RG_QPS_RTR:
		if (!ud)
			mask |= QPM_PATH_MTU | QPM_DEST_QPN | QPM_RQ_PSN |
				(rc ? QPM_MAX_DEST_RD_ATOMIC | QPM_MIN_RNR_TIMER : 0);
		break;
	case RG_QPS_RTS:
		mask |= QPM_SQ_PSN | (rc ? QPM_TIMEOUT | QPM_RETRY_CNT | QPM_RNR_RETRY | QPM_MAX_QP_RD_ATOMIC : 0);
		break;
	default:
		break;
	}
	rg_be32(p + 0, mask);
	/* The driver sends the QP's privilege with the access bits. */
	rg_be16(p + 6, (uint16_t)(access | (qp->priv_flags & RG_QPF_PRIVILEGED)));
	rg_le32(p + 8, 0x1000 + qp->id);   /* rq_psn */
	rg_le32(p + 12, 0x2000 + qp->id);  /* sq_psn */
	rg_le32(p + 16, arg);              /* qkey or dest QPN */
	p[24] = 3 + 7;                     /* IB_MTU_1024 + 7 */
	p[25] = 7 | 7 << 4;                /* retry, RNR retry */
	p[26] = 12;                        /* RNR timer */
	p[27] = 14;                        /* timeout */
	p[28] = 4;                         /* rsq depth */
	p[29] = path && path->rrq_depth ? path->rrq_depth : 4; /* rrq depth */
	p[39] = (uint8_t)(state | cur << 4);
	rg_le32(p + 40, ~0u);
	rg_le32(p + 44, ~0u);
	rg_le32(p + 56, qp->id);
	if (path) {
		/* ib_modify_qp to RTR with an address vector: the header template goes with it. */
		if (state == RG_QPS_RTR && path->tmpl) {
			memcpy(guest_ptr(g, path->at), path->tmpl, path->len);
			mask |= QPM_AV;
			rg_be32(p + 0, mask);
			rg_le32(p + 32, path->len << 24);
			rg_le64(p + 48, path->at);
		}
		rg_le32(p + 8, path->rq_psn);
		rg_le32(p + 12, path->sq_psn);
		if (path->pmtu_log2)
			p[24] = path->pmtu_log2;
	}
	if (state == RG_QPS_RESET)
		qp->sq_prod = qp->rq_prod = 0;
	return admin_acked(g, aq, RG_OP_MODIFY_QP, p, sizeof(p));
}

int rg_qp_to_rts(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint32_t arg, uint16_t access)
{
	static const uint8_t path[] = { RG_QPS_RESET, RG_QPS_INIT, RG_QPS_RTR, RG_QPS_RTS };
	int st = 0;

	for (size_t i = 0; i < sizeof(path) && st == 0; i++)
		st = rg_qp_modify(g, aq, qp, path[i], i ? path[i - 1] : RG_QPS_RESET, arg, access);
	return st;
}

int rg_qp_to_rts_path(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint32_t arg, uint16_t access,
		      const struct rg_qp_path *path)
{
	static const uint8_t seq[] = { RG_QPS_RESET, RG_QPS_INIT, RG_QPS_RTR, RG_QPS_RTS };
	int st = 0;

	for (size_t i = 0; i < sizeof(seq) && st == 0; i++)
		st = rg_qp_modify_path(g, aq, qp, seq[i], i ? seq[i - 1] : RG_QPS_RESET, arg, access, path);
	return st;
}

int rg_qp_state(struct ionic_guest *g, struct rg_aq *aq, uint32_t id, uint64_t buf)
{
	uint8_t p[34] = { 0 };
	int st;

	memset(guest_ptr(g, buf), 0xee, 128);
	rg_le64(p + 8, buf);
	rg_le64(p + 16, buf + 64);
	rg_le32(p + 28, id);
	st = admin_acked(g, aq, RG_OP_QUERY_QP, p, sizeof(p));
	if (st)
		return -1 - st;
	return ((const uint8_t *)guest_ptr(g, buf + 64))[0] >> 4;
}

uint64_t rg_sq_slot(const struct rg_qp *qp, uint32_t idx)
{
	return qp->sq + ((uint64_t)(idx & ((1u << qp->sq_depth_log2) - 1)) << qp->sq_stride_log2);
}

uint64_t rg_rq_slot(const struct rg_qp *qp, uint32_t idx)
{
	return qp->rq + ((uint64_t)(idx & ((1u << qp->rq_depth_log2) - 1)) << qp->rq_stride_log2);
}

static void wqe_hdr(uint8_t *w, uint64_t wqe_id, uint8_t op, uint8_t num_sge_key, uint16_t flags, uint32_t imm)
{
	rg_le64(w, wqe_id);
	w[8] = op;
	w[9] = num_sge_key;
	rg_be16(w + 10, flags);
	rg_be32(w + 12, imm);
}

/* The SGL of a send or receive WQE (spec table and all); the total length. */
static uint32_t wqe_sgl(uint8_t *w, uint32_t stride, uint16_t flags, const struct rg_sge *sge, unsigned nsge)
{
	bool spec = (flags & (RG_WQE_SPEC32 | RG_WQE_SPEC16)) != 0;
	uint32_t off = spec ? 64 : 32, total = 0;

	for (unsigned i = 0; i < nsge; i++) {
		total += sge[i].len;
		if (spec && (flags & RG_WQE_SPEC32) && i < 8)
			rg_be32(w + 32 + 4 * i, sge[i].len);
		else if (spec && i < 16)
			rg_be16(w + 32 + 2 * i, (uint16_t)sge[i].len);
		if (off + 16 * (i + 1) > stride)
			continue; /* more than the slot holds: the header says so, the bytes are not there */
		rg_be64(w + off + 16 * i, sge[i].va);
		rg_be32(w + off + 16 * i + 8, sge[i].len);
		rg_be32(w + off + 16 * i + 12, sge[i].lkey);
	}
	return total;
}

static uint32_t sq_put(struct ionic_guest *g, struct rg_qp *qp, const uint8_t *w)
{
	uint32_t idx = qp->sq_prod++;

	memcpy(guest_ptr(g, rg_sq_slot(qp, idx)), w, 1u << qp->sq_stride_log2);
	return idx;
}

uint32_t rg_post_send(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
		      uint32_t imm_key, uint32_t w0, uint32_t w1, uint32_t w2, const struct rg_sge *sge, unsigned nsge)
{
	uint8_t w[WQE_MAX] = { 0 };
	uint32_t stride = 1u << qp->sq_stride_log2;

	wqe_hdr(w, wqe_id, op, (uint8_t)nsge, flags, imm_key);
	rg_be32(w + 16, w0);
	rg_be32(w + 20, w1);
	rg_be32(w + 24, w2);
	rg_be32(w + 28, wqe_sgl(w, stride, flags, sge, nsge));
	return sq_put(g, qp, w);
}

uint32_t rg_post_rdma(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
		      uint32_t imm, uint64_t remote_va, uint32_t rkey, const struct rg_sge *sge, unsigned nsge)
{
	return rg_post_send(g, qp, wqe_id, op, flags, imm, (uint32_t)(remote_va >> 32), (uint32_t)remote_va, rkey, sge,
			    nsge);
}

uint32_t rg_post_ud(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
		    uint32_t imm, uint32_t ah_id, uint32_t dest_qpn, uint32_t qkey, const struct rg_sge *sge,
		    unsigned nsge)
{
	return rg_post_send(g, qp, wqe_id, op, flags, imm, ah_id, dest_qpn, qkey, sge, nsge);
}

uint32_t rg_post_atomic(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
			uint64_t remote_va, uint32_t rkey, uint64_t swap_add, uint64_t compare,
			const struct rg_sge *result)
{
	uint8_t w[WQE_MAX] = { 0 };

	wqe_hdr(w, wqe_id, op, 1, flags, 0);
	rg_be32(w + 16, (uint32_t)(remote_va >> 32));
	rg_be32(w + 20, (uint32_t)remote_va);
	rg_be32(w + 24, rkey);
	rg_be32(w + 28, (uint32_t)(swap_add >> 32));
	rg_be32(w + 32, (uint32_t)swap_add);
	rg_be32(w + 36, (uint32_t)(compare >> 32));
	rg_be32(w + 40, (uint32_t)compare);
	rg_be64(w + 48, result->va);
	rg_be32(w + 56, result->len);
	rg_be32(w + 60, result->lkey);
	return sq_put(g, qp, w);
}

uint32_t rg_post_reg_mr(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags, uint32_t lkey,
			uint8_t new_key, uint64_t va, uint64_t length, uint64_t offset, uint64_t dma_addr,
			uint32_t map_count, uint16_t mr_flags, uint8_t page_log2)
{
	uint8_t w[WQE_MAX] = { 0 };

	wqe_hdr(w, wqe_id, RG_WR_REG_MR, new_key, flags, lkey);
	rg_be64(w + 16, va);
	rg_be64(w + 24, length);
	rg_be64(w + 32, offset);
	rg_be64(w + 40, dma_addr);
	rg_be32(w + 48, map_count);
	rg_be16(w + 52, mr_flags);
	w[54] = 0;
	w[55] = page_log2;
	return sq_put(g, qp, w);
}

uint32_t rg_post_bind_mw(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags, uint32_t mw_rkey,
			 uint8_t new_key, uint64_t va, uint64_t length, uint32_t mr_lkey, uint16_t mw_flags)
{
	uint8_t w[WQE_MAX] = { 0 };

	wqe_hdr(w, wqe_id, RG_WR_BIND_MW, new_key, flags, mw_rkey);
	rg_be64(w + 16, va);
	rg_be64(w + 24, length);
	rg_be32(w + 32, mr_lkey);
	rg_be16(w + 36, mw_flags);
	return sq_put(g, qp, w);
}

uint32_t rg_post_local_inv(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags, uint32_t rkey)
{
	uint8_t w[WQE_MAX] = { 0 };

	wqe_hdr(w, wqe_id, RG_WR_LOCAL_INV, 0, flags, rkey);
	return sq_put(g, qp, w);
}

uint32_t rg_post_sq_raw(struct ionic_guest *g, struct rg_qp *qp, const void *wqe, size_t len)
{
	uint8_t w[WQE_MAX] = { 0 };
	uint32_t stride = 1u << qp->sq_stride_log2;

	memcpy(w, wqe, len < stride ? len : stride);
	return sq_put(g, qp, w);
}

uint32_t rg_post_rq_raw(struct ionic_guest *g, struct rg_qp *qp, const void *wqe, size_t len)
{
	uint32_t stride = 1u << qp->rq_stride_log2, idx = qp->rq_prod++;
	uint8_t *slot = guest_ptr(g, rg_rq_slot(qp, idx));

	memset(slot, 0, stride);
	memcpy(slot, wqe, len < stride ? len : stride);
	return idx;
}

uint32_t rg_post_recv(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags,
		      const struct rg_sge *sge, unsigned nsge)
{
	uint8_t w[WQE_MAX] = { 0 };
	uint32_t stride = 1u << qp->rq_stride_log2, idx = qp->rq_prod++;

	wqe_hdr(w, wqe_id, 0, (uint8_t)nsge, flags, 0);
	rg_be32(w + 12, wqe_sgl(w, stride, flags, sge, nsge));
	memcpy(guest_ptr(g, rg_rq_slot(qp, idx)), w, stride);
	return idx;
}

void rg_sq_ring(struct ionic_guest *g, const struct rg_qp *qp)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rg_db_page(g, qp->dbid, RG_QTYPE_SQ, qp->id, 0, qp->sq_prod & ((1u << qp->sq_depth_log2) - 1));
}

void rg_rq_ring(struct ionic_guest *g, const struct rg_qp *qp)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rg_db_page(g, qp->dbid, RG_QTYPE_RQ, qp->id, 0, qp->rq_prod & ((1u << qp->rq_depth_log2) - 1));
}

int rg_mr_create(struct ionic_guest *g, struct rg_aq *aq, uint32_t index, uint8_t key, uint32_t pd, uint64_t va,
		 uint64_t length, uint32_t map_count, uint64_t dma, uint16_t flags, uint8_t page_log2)
{
	uint8_t p[45] = { 0 };

	rg_le64(p + 0, va);
	rg_le64(p + 8, length);
	rg_le32(p + 16, pd);
	rg_le32(p + 20, RG_KEY(index, key));
	rg_le32(p + 24, ~0u);
	rg_le32(p + 28, map_count);
	rg_le64(p + 32, dma);
	rg_le16(p + 40, flags);
	p[44] = page_log2;
	return admin_acked(g, aq, RG_OP_CREATE_MR, p, sizeof(p));
}

int rg_mr_create_pages(struct ionic_guest *g, struct rg_aq *aq, uint32_t index, uint8_t key, uint32_t pd,
		       uint64_t va, uint64_t length, const uint64_t *pages, uint32_t n, uint64_t list, uint16_t flags,
		       uint8_t page_log2)
{
	for (uint32_t i = 0; i < n; i++)
		rg_le64(guest_ptr(g, list + 8ull * i), pages[i]);
	return rg_mr_create(g, aq, index, key, pd, va, length, n, list, flags, page_log2);
}

int rg_mr_destroy(struct ionic_guest *g, struct rg_aq *aq, uint32_t key)
{
	uint8_t p[4];

	rg_le32(p, key);
	return admin_acked(g, aq, RG_OP_DESTROY_MR, p, sizeof(p));
}

void rg_roce4_template(uint8_t t[RG_ROCE4_HDR_LEN], const uint8_t dmac[6], const uint8_t smac[6], uint32_t saddr,
		       uint32_t daddr, uint8_t tos, uint8_t ttl)
{
	uint8_t *ip = t + 14, *udp = t + 34;

	memset(t, 0, RG_ROCE4_HDR_LEN);
	memcpy(t, dmac, 6);
	memcpy(t + 6, smac, 6);
	rg_be16(t + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = tos;
	rg_be16(ip + 2, 0xffff);
	rg_be16(ip + 6, 0x4000); /* DF */
	ip[8] = ttl;
	ip[9] = 17;
	rg_be32(ip + 12, saddr);
	rg_be32(ip + 16, daddr);
	rg_be16(udp + 0, 28272);
	rg_be16(udp + 2, 4791);
}

void rg_roce4_template_vlan(uint8_t t[RG_ROCE4_VLAN_HDR_LEN], const uint8_t dmac[6], const uint8_t smac[6],
			    uint32_t saddr, uint32_t daddr, uint8_t tos, uint8_t ttl, uint16_t tci)
{
	uint8_t plain[RG_ROCE4_HDR_LEN];

	rg_roce4_template(plain, dmac, smac, saddr, daddr, tos, ttl);
	memcpy(t, plain, 12);
	rg_be16(t + 12, 0x8100);
	rg_be16(t + 14, tci);
	memcpy(t + 16, plain + 12, RG_ROCE4_HDR_LEN - 12);
}

int rg_ah_create(struct ionic_guest *g, struct rg_aq *aq, uint32_t id, uint32_t pd, uint64_t at, const uint8_t *tmpl,
		 uint32_t len)
{
	uint8_t p[24] = { 0 };

	memcpy(guest_ptr(g, at), tmpl, len);
	rg_le64(p + 0, at);
	rg_le32(p + 8, len);
	rg_le32(p + 12, pd);
	rg_le32(p + 16, id);
	return admin_acked(g, aq, RG_OP_CREATE_AH, p, sizeof(p));
}

uint16_t rg_csum_fold(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}
