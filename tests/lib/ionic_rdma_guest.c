/* Guest-side RDMA helpers for tests; see ionic_rdma_guest.h. */
#include "ionic_rdma_guest.h"

#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define BAR0 0
#define BAR2 2
#define INTR_CTRL 0x2000
#define INTR_MASK 4
#define INTR_CREDITS 8
#define INTR_MASK_ON_ASSERT 12
#define CRED_UNMASK 0x10000u

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
	vfc_write32(g->c, BAR0, INTR_CTRL + 32ull * i + off, v, false);
}

uint32_t rg_intr_read(struct ionic_guest *g, uint32_t i, uint32_t off)
{
	return vfc_read32(g->c, BAR0, INTR_CTRL + 32ull * i + off);
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
	rg_intr_write(g, intr, INTR_MASK, 1);
	rg_intr_write(g, intr, INTR_MASK_ON_ASSERT, 1);
	rg_intr_write(g, intr, 0, 0);
	rg_intr_write(g, intr, INTR_CREDITS, rg_intr_read(g, intr, INTR_CREDITS) & 0xffff);
	st = rg_queue_cmd(g, RG_CMD_CREATE_EQ, 0, id, intr, depth_log2, 2, ring);
	rg_intr_write(g, intr, INTR_MASK, 0);
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
	vfc_write32(g->c, BAR0, INTR_CTRL + 32ull * eq->intr + INTR_CREDITS, (credits & 0xffff) | CRED_UNMASK, true);
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

	vfc_write(g->c, BAR2, 8ull * qtype, &v, 8, true);
}

void rg_sync(struct ionic_guest *g)
{
	(void)vfc_read32(g->c, VFU_PCI_CONFIG_REGION, 0);
}
