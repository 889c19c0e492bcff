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
	/* Doorbells stored but not yet taken belong to queues that are gone. */
	ionic_db_pages_reset(dev);
	ionic_rdma_reset(dev);
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
 * Gather one TX descriptor's frame: the first buffer, then nsge elements of
 * the descriptor's SG row (v1 rows are 256 bytes, v0 128). Returns its length,
 * or 0 when the descriptor is unusable (a guest error; the frame is dropped).
 */
static size_t tx_gather(struct ionic_dev *dev, struct ionic_queue *q, uint32_t idx, uint8_t *buf, size_t cap)
{
	struct ionic_txq_desc d;
	uint64_t cmd, addr;
	unsigned opcode, nsge, row = q->ver >= 1 ? IONIC_TX_SG_ROW_V1 : IONIC_TX_SG_ROW_V0;
	size_t len, total;

	if (ionic_dma_read(dev, q->ring_base + (uint64_t)idx * sizeof(d), &d, sizeof(d)))
		return 0;
	cmd = le64_get(d.cmd);
	opcode = (unsigned)(cmd >> IONIC_TXQ_DESC_OPCODE_SHIFT) & IONIC_TXQ_DESC_OPCODE_MASK;
	nsge = (unsigned)(cmd >> IONIC_TXQ_DESC_NSGE_SHIFT) & IONIC_TXQ_DESC_NSGE_MASK;
	addr = (cmd >> IONIC_TXQ_DESC_ADDR_SHIFT) & IONIC_TXQ_DESC_ADDR_MASK;
	len = le16_get(d.len);
	if (opcode != IONIC_TXQ_DESC_OPCODE_CSUM_NONE || nsge > row / sizeof(struct ionic_sg_elem) || len > cap ||
	    (nsge && q->sg_ring_base == 0))
		return 0; /* offloads are never granted; SG only within the row */
	if (len && ionic_dma_read(dev, addr, buf, len))
		return 0;
	total = len;
	for (unsigned i = 0; i < nsge; i++) {
		struct ionic_sg_elem e;
		size_t elen;

		if (ionic_dma_read(dev, q->sg_ring_base + (uint64_t)idx * row + i * sizeof(e), &e, sizeof(e)))
			return 0;
		elen = le16_get(e.len);
		if (elen > cap - total)
			return 0;
		if (elen && ionic_dma_read(dev, le64_get(e.addr), buf + total, elen))
			return 0;
		total += elen;
	}
	return total;
}

/* Post a TX completion naming descriptor idx (it frees everything up to it) with status. */
static bool tx_complete(struct ionic_dev *dev, struct ionic_queue *q, uint32_t idx, uint8_t status)
{
	uint8_t comp[16] = { status };

	comp[2] = (uint8_t)idx;
	comp[3] = (uint8_t)(idx >> 8);
	if (ionic_cq_post(dev, q, comp)) {
		ionic_guest_error(dev, "txq %u completion ring is not mapped", q->index);
		return false;
	}
	return true;
}

/*
 * Transmit: every posted descriptor becomes a frame on the segment. One
 * completion names the last descriptor of the burst; an unusable descriptor
 * gets a completion of its own with an error status (its frame is dropped).
 */
static void txq_run(struct ionic_dev *dev, struct ionic_queue *q)
{
	uint32_t done = 0, last = 0, comps = 0;
	bool pending = false;

	while (q->head != q->p_index && done < q->num_descs) {
		size_t len = tx_gather(dev, q, q->head, dev->frame, sizeof(dev->frame));

		last = q->head;
		q->head = (q->head + 1) & (q->num_descs - 1);
		done++;
		if (len >= 14 && dev->env.tx_frame) {
			dev->stats.tx_frames++;
			dev->stats.tx_bytes += len;
			dev->env.tx_frame(dev->env.ctx, dev->frame, len);
			pending = true;
			continue;
		}
		dev->stats.tx_errors++;
		ionic_guest_error(dev, "txq %u descriptor %u unusable", q->index, last);
		if (!tx_complete(dev, q, last, IONIC_RC_EINVAL))
			return;
		pending = false;
		comps++;
	}
	if (pending) {
		if (!tx_complete(dev, q, last, IONIC_RC_SUCCESS))
			return;
		comps++;
	}
	/* One credit per completion: the driver returns as many as it cleaned. */
	if (comps && (q->flags & IONIC_QINIT_F_IRQ))
		ionic_intr_raise_n(dev, q->intr_index, comps);
}

/* Whether the LIF takes a frame for this destination (receive mode and MAC filters). */
static bool rx_accept(const struct ionic_lif *lif, const uint8_t *dst)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	if (lif->rx_mode & IONIC_RX_MODE_F_PROMISC)
		return true;
	if (memcmp(dst, bcast, 6) == 0)
		return (lif->rx_mode & IONIC_RX_MODE_F_BROADCAST) != 0;
	if (dst[0] & 1)
		return (lif->rx_mode & (IONIC_RX_MODE_F_ALLMULTI | IONIC_RX_MODE_F_MULTICAST)) != 0;
	if (memcmp(dst, lif->mac, 6) == 0)
		return true;
	for (int i = 0; i < IONIC_MAX_FILTERS; i++)
		if (lif->filters[i].used && lif->filters[i].match != IONIC_RX_FILTER_MATCH_VLAN &&
		    memcmp(lif->filters[i].mac, dst, 6) == 0)
			return true;
	return false;
}

static uint8_t rx_pkt_type(const uint8_t *f, size_t len)
{
	uint16_t et = len >= 14 ? (uint16_t)(f[12] << 8 | f[13]) : 0;

	if (et == 0x0800 && len >= 34) {
		uint8_t proto = f[23];

		return proto == 6 ? 0x03 : proto == 17 ? 0x05 : 0x01;
	}
	if (et == 0x86dd && len >= 54) {
		uint8_t next = f[20];

		return next == 6 ? 0x18 : next == 17 ? 0x28 : 0x08;
	}
	return 0;
}

void ionic_dev_rx_frame(struct ionic_dev *dev, const uint8_t *frame, size_t len)
{
	struct ionic_lif *lif = &dev->lif;
	struct ionic_queue *q = &lif->rxq[0];
	struct ionic_rxq_desc d;
	struct ionic_rxq_comp comp = { 0 };
	uint64_t bufs[1 + IONIC_RX_SG_ROW / sizeof(struct ionic_sg_elem)];
	size_t blen[sizeof(bufs) / sizeof(bufs[0])], room = 0, off = 0;
	unsigned nbufs = 1;
	uint32_t idx;

	if (!dev->bus_master) {
		/* No descriptor can be fetched nor buffer written: the frame is lost, as on the wire. */
		dev->stats.rx_no_master++;
		return;
	}
	if (len < 14 || !lif->inited || !q->inited || !q->enabled || !rx_accept(lif, frame)) {
		dev->stats.rx_filtered++;
		return;
	}
	if (q->head == q->p_index) {
		dev->stats.rx_no_buffer++;
		return;
	}
	idx = q->head;
	if (ionic_dma_read(dev, q->ring_base + (uint64_t)idx * sizeof(d), &d, sizeof(d))) {
		ionic_guest_error(dev, "rxq descriptor %u is not mapped", idx);
		return;
	}
	bufs[0] = le64_get(d.addr);
	blen[0] = le16_get(d.len);
	room = blen[0];
	if (d.opcode == IONIC_RXQ_DESC_OPCODE_SG && q->sg_ring_base) {
		for (unsigned i = 0; i < IONIC_RX_SG_ROW / sizeof(struct ionic_sg_elem) && room < len; i++) {
			struct ionic_sg_elem e;

			if (ionic_dma_read(dev, q->sg_ring_base + (uint64_t)idx * IONIC_RX_SG_ROW + i * sizeof(e), &e,
					   sizeof(e)))
				break;
			if (le64_get(e.addr) == 0 || le16_get(e.len) == 0)
				break; /* an empty element ends a short list */
			bufs[nbufs] = le64_get(e.addr);
			blen[nbufs] = le16_get(e.len);
			room += blen[nbufs++];
		}
	}
	if (len > room) {
		dev->stats.rx_too_long++;
		return; /* the buffer stays posted for the next frame */
	}
	for (unsigned i = 0; i < nbufs && off < len; i++) {
		size_t k = len - off < blen[i] ? len - off : blen[i];

		if (ionic_dma_write(dev, bufs[i], frame + off, k)) {
			ionic_guest_error(dev, "rx buffer of descriptor %u is not mapped", idx);
			return;
		}
		off += k;
		comp.num_sg_elems = (uint8_t)i;
	}
	comp.comp_index = le16_set((uint16_t)idx);
	comp.len = le16_set((uint16_t)len);
	comp.pkt_type_color = rx_pkt_type(frame, len);
	q->head = (idx + 1) & (q->num_descs - 1);
	if (ionic_cq_post(dev, q, (uint8_t *)&comp)) {
		ionic_guest_error(dev, "rxq completion ring is not mapped");
		return;
	}
	dev->stats.rx_frames++;
	dev->stats.rx_bytes += len;
	if (q->flags & IONIC_QINIT_F_IRQ)
		ionic_intr_raise(dev, q->intr_index);
}

uint8_t ionic_queue_db_slot(const struct ionic_queue *q)
{
	switch (q->type) {
	case IONIC_QTYPE_ADMINQ: return IONIC_DB_SLOT_ADMINQ;
	case IONIC_QTYPE_RXQ: return (uint8_t)(IONIC_DB_SLOT_RXQ0 + q->index);
	case IONIC_QTYPE_TXQ: return (uint8_t)(IONIC_DB_SLOT_TXQ0 + q->index);
	default: return IONIC_DB_SLOT_NOTIFYQ;
	}
}

void ionic_queue_doorbell(struct ionic_dev *dev, uint32_t slot, uint32_t qid, uint32_t ring, uint32_t p_index)
{
	struct ionic_lif *lif = &dev->lif;
	struct ionic_queue *q = NULL;

	if (ionic_rdma_doorbell(dev, 0, slot, qid, ring, p_index))
		return;
	if (slot == IONIC_DB_SLOT_ADMINQ)
		q = &lif->adminq;
	else if (slot >= IONIC_DB_SLOT_RXQ0 && slot < IONIC_DB_SLOT_RXQ0 + IONIC_NRXQ)
		q = &lif->rxq[slot - IONIC_DB_SLOT_RXQ0];
	else if (slot >= IONIC_DB_SLOT_TXQ0 && slot < IONIC_DB_SLOT_TXQ0 + IONIC_NTXQ)
		q = &lif->txq[slot - IONIC_DB_SLOT_TXQ0];
	/* The word names the queue; the value must carry its hw_index too. */
	if (q == NULL || !q->inited || qid != q->index) {
		ionic_guest_error(dev, "doorbell in word %u for queue id %u that does not exist", slot, qid);
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
	/* RX: the new buffers wait for frames (ionic_dev_rx_frame takes them). */
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
