/*
 * Queues of the Ethernet LIF: set-up (Q_INIT), doorbells, the admin queue
 * (commands in, completions out with a color bit, interrupt), the notify
 * queue (events with growing eids) and the LIF status in guest memory.
 * Every index a guest supplies is bounded before use; a doorbell past the
 * ring, or a ring the device cannot reach, is a guest error and moves nothing.
 */
#include <string.h>

#include "ionic/ionic_priv.h"
#include "util/log.h"

#define NOTIFYQ_DESC_SZ   4
#define NOTIFYQ_EVENT_SZ  64
#define GUEST_PAGE_SIZE   4096

void ionic_lif_reset(struct ionic_dev *dev)
{
	struct ionic_lif *lif = &dev->lif;

	memset(lif, 0, sizeof(*lif));
	lif->mtu = 1500;
	memcpy(lif->mac, dev->cfg.mac, 6);
}

void ionic_lif_write_status(struct ionic_dev *dev)
{
	struct ionic_lif *lif = &dev->lif;
	struct ionic_lif_status st = {
		.eid = le64_set(lif->notifyq.next_eid ? lif->notifyq.next_eid - 1 : 0),
		.link_status = le16_set(IONIC_LINK_STATUS_UP),
		.link_speed = le32_set(IONIC_SPEED_100G),
	};

	if (lif->info_pa == 0)
		return;
	if (ionic_dma_write(dev, lif->info_pa + offsetof(struct ionic_lif_info_head, status), &st, sizeof(st)))
		ionic_guest_error(dev, "lif_info at %#llx is not mapped", (unsigned long long)lif->info_pa);
}

uint8_t ionic_queue_init(struct ionic_dev *dev, struct ionic_queue *q, const struct ionic_q_init_cmd *c)
{
	struct ionic_queue n = { 0 };

	(void)dev;
	if (c->ring_size < 2 || c->ring_size > 16)
		return IONIC_RC_EINVAL;
	n.type = c->type;
	n.ver = c->ver;
	n.index = le32_get(c->index);
	n.intr_index = le16_get(c->intr_index);
	n.flags = le16_get(c->flags);
	n.num_descs = 1u << c->ring_size;
	n.ring_base = le64_get(c->ring_base);
	n.cq_ring_base = le64_get(c->cq_ring_base);
	n.sg_ring_base = le64_get(c->sg_ring_base);
	n.features = le64_get(c->features);
	n.cq_color = 1;
	if ((n.flags & IONIC_QINIT_F_IRQ) && n.intr_index >= IONIC_NINTRS)
		return IONIC_RC_EINVAL;
	if (n.ring_base == 0 || (n.type != IONIC_QTYPE_NOTIFYQ && n.cq_ring_base == 0))
		return IONIC_RC_EINVAL;
	n.inited = true;
	n.enabled = (n.flags & IONIC_QINIT_F_ENA) != 0;
	if (n.type == IONIC_QTYPE_NOTIFYQ)
		n.next_eid = 1;
	*q = n; /* commit only a valid queue */
	LOG_DEBUG("ionic: queue type %u index %u: %u descriptors at %#llx, cq %#llx, intr %u%s",
		  q->type, q->index, q->num_descs, (unsigned long long)q->ring_base,
		  (unsigned long long)q->cq_ring_base, q->intr_index, q->enabled ? ", enabled" : "");
	return IONIC_RC_SUCCESS;
}

int ionic_cq_post(struct ionic_dev *dev, struct ionic_queue *q, uint8_t comp[16])
{
	uint64_t slot = q->cq_ring_base + (uint64_t)q->cq_tail * 16;
	uint8_t color;
	int rc;

	comp[15] = (uint8_t)((comp[15] & ~IONIC_COMP_COLOR_MASK) | (q->cq_color ? IONIC_COMP_COLOR_MASK : 0));
	color = comp[15];
	/* The body first, then the byte with the color: the driver polls the color, then reads the rest. */
	rc = ionic_dma_write(dev, slot, comp, 15);
	if (rc == 0) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		rc = ionic_dma_write(dev, slot + 15, &color, 1);
	}
	if (rc)
		return rc;
	if (++q->cq_tail == q->num_descs) {
		q->cq_tail = 0;
		q->cq_color ^= 1;
	}
	return 0;
}

static void adminq_run(struct ionic_dev *dev, struct ionic_queue *q)
{
	uint32_t done = 0;

	/* At most one ring's worth per doorbell: the producer index was bounded when it was rung. */
	while (q->head != q->p_index && done++ < q->num_descs) {
		uint8_t cmd[64], comp[16];
		uint32_t idx = q->head;

		if (ionic_dma_read(dev, q->ring_base + (uint64_t)idx * 64, cmd, sizeof(cmd))) {
			ionic_guest_error(dev, "adminq descriptor %u is not mapped", idx);
			return;
		}
		ionic_cmd_exec(dev, cmd, comp, true);
		comp[2] = (uint8_t)idx;
		comp[3] = (uint8_t)(idx >> 8);
		q->head = (idx + 1) & (q->num_descs - 1);
		if (ionic_cq_post(dev, q, comp)) {
			ionic_guest_error(dev, "adminq completion ring is not mapped");
			return;
		}
		if (q->flags & IONIC_QINIT_F_IRQ)
			ionic_intr_raise(dev, q->intr_index);
	}
}

/*
 * Transmit: until the segment switch is attached, frames are consumed and
 * completed, so the driver's rings keep moving and nothing times out.
 */
static void txq_run(struct ionic_dev *dev, struct ionic_queue *q)
{
	uint32_t done = 0, last = 0;

	while (q->head != q->p_index && done < q->num_descs) {
		last = q->head;
		q->head = (q->head + 1) & (q->num_descs - 1);
		done++;
	}
	if (done) {
		uint8_t comp[16] = { 0 };

		/* One completion naming the last descriptor frees everything up to it. */
		comp[2] = (uint8_t)last;
		comp[3] = (uint8_t)(last >> 8);
		if (ionic_cq_post(dev, q, comp)) {
			ionic_guest_error(dev, "txq %u completion ring is not mapped", q->index);
			return;
		}
		if (q->flags & IONIC_QINIT_F_IRQ)
			ionic_intr_raise(dev, q->intr_index);
	}
}

void ionic_queue_doorbell(struct ionic_dev *dev, uint32_t qtype, uint32_t qid, uint32_t ring, uint32_t p_index)
{
	struct ionic_lif *lif = &dev->lif;
	struct ionic_queue *q = NULL;

	switch (qtype) {
	case IONIC_QTYPE_ADMINQ: q = qid == 0 ? &lif->adminq : NULL; break;
	case IONIC_QTYPE_RXQ: q = qid < IONIC_NRXQ ? &lif->rxq[qid] : NULL; break;
	case IONIC_QTYPE_TXQ: q = qid < IONIC_NTXQ ? &lif->txq[qid] : NULL; break;
	default: break;
	}
	if (q == NULL || !q->inited) {
		ionic_guest_error(dev, "doorbell for queue type %u id %u that does not exist", qtype, qid);
		return;
	}
	if (ring != 0)
		return; /* ring 1.. are completion-ring arm requests; completions are always written */
	if (p_index >= q->num_descs) {
		ionic_guest_error(dev, "doorbell index %u past a %u-entry ring", p_index, q->num_descs);
		return;
	}
	/* Doorbells may come before the queue is enabled (RX is filled first): remember the index. */
	q->p_index = p_index;
	if (!q->enabled)
		return;
	if (q->type == IONIC_QTYPE_ADMINQ)
		adminq_run(dev, q);
	else if (q->type == IONIC_QTYPE_TXQ)
		txq_run(dev, q);
}

void ionic_notify_link(struct ionic_dev *dev)
{
	struct ionic_queue *q = &dev->lif.notifyq;
	struct ionic_notifyq_event ev = { 0 };
	uint64_t events, slot;

	if (!q->inited || !q->enabled)
		return;
	/* The events sit one (guest) page-aligned block after the command ring. */
	events = q->ring_base + ((uint64_t)q->num_descs * NOTIFYQ_DESC_SZ + GUEST_PAGE_SIZE - 1) /
			       GUEST_PAGE_SIZE * GUEST_PAGE_SIZE;
	slot = events + (uint64_t)q->cq_tail * NOTIFYQ_EVENT_SZ;
	ev.eid = le64_set(q->next_eid);
	ev.ecode = le16_set(IONIC_EVENT_LINK_CHANGE);
	ev.link_status = le16_set(IONIC_LINK_STATUS_UP);
	ev.link_speed = le32_set(IONIC_SPEED_100G);
	/* The eid is what makes an event new to the driver, so it goes last. */
	if (ionic_dma_write(dev, slot + 8, (uint8_t *)&ev + 8, sizeof(ev) - 8) ||
	    (__atomic_thread_fence(__ATOMIC_RELEASE), ionic_dma_write(dev, slot, &ev.eid, 8))) {
		ionic_guest_error(dev, "notifyq event ring is not mapped");
		return;
	}
	q->next_eid++;
	q->cq_tail = (q->cq_tail + 1) & (q->num_descs - 1);
	ionic_lif_write_status(dev);
	if (q->flags & IONIC_QINIT_F_IRQ)
		ionic_intr_raise(dev, q->intr_index);
}
