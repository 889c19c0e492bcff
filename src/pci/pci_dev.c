/* Emulated PCI Express function: config space, BAR dispatch, MSI-X; see pci_dev.h. */
#include "pci/pci_dev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pci/pci_regs.h"
#include "util/evloop.h"
#include "util/log.h"

#define CAP_PM   0x40
#define CAP_EXP  0x50
#define CAP_MSIX 0x90
#define PCI_MMAP_PAGE 4096 /* mappable areas are whole pages */

struct pci_dev {
	struct pci_function fn;
	struct vfu_device vfu;
	struct vfu_server *srv;
	uint8_t cfg[PCIE_CFG_SPACE_SIZE];
	uint8_t cfg_init[PCIE_CFG_SPACE_SIZE];  /* reset image */
	uint8_t wmask[PCIE_CFG_SPACE_SIZE];     /* bits software may write */
	uint8_t w1cmask[PCIE_CFG_SPACE_SIZE];   /* bits cleared by writing 1 */
	uint8_t *msix_table;                    /* msix_vectors * 16 bytes */
	uint8_t *msix_pba;                      /* one bit per vector */
	uint32_t table_len, pba_len;
	bool table_written;                     /* the client keeps the table here, not in front of us */
	/* Gathering (pci_dev_set_loop): vectors raised in the loop's batch, sent once at its end. */
	struct evloop *loop;
	uint64_t *msix_due;                     /* one bit per vector */
	uint32_t due_words;
	bool flush_pending;
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void build_config(struct pci_dev *pd)
{
	const struct pci_function *fn = &pd->fn;
	uint8_t *c = pd->cfg_init, *w = pd->wmask, *w1c = pd->w1cmask;

	put16(c + PCI_VENDOR_ID, fn->vendor_id);
	put16(c + PCI_DEVICE_ID, fn->device_id);
	put16(w + PCI_COMMAND, PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |
			       PCI_COMMAND_PARITY | PCI_COMMAND_SERR | PCI_COMMAND_INTX_DISABLE);
	put16(c + PCI_STATUS, PCI_STATUS_CAP_LIST);
	put16(w1c + PCI_STATUS, PCI_STATUS_ERRORS);
	c[PCI_REVISION_ID] = fn->revision;
	c[PCI_CLASS_PROG] = (uint8_t)fn->class_code;
	c[PCI_CLASS_PROG + 1] = (uint8_t)(fn->class_code >> 8);
	c[PCI_CLASS_PROG + 2] = (uint8_t)(fn->class_code >> 16);
	w[PCI_CACHE_LINE_SIZE] = 0xff;
	w[PCI_LATENCY_TIMER] = 0xff;
	for (unsigned b = 0; b < 6; b += 2) {
		uint64_t size = fn->bars[b].size;
		uint8_t *reg = c + PCI_BASE_ADDRESS_0 + 4 * b;

		if (size == 0)
			continue;
		reg[0] = PCI_BASE_ADDRESS_MEM_TYPE_64 | (fn->bars[b].prefetchable ? PCI_BASE_ADDRESS_MEM_PREFETCH : 0);
		/* Address bits below the size read back as zero: that is how software sizes a BAR. */
		put32(w + PCI_BASE_ADDRESS_0 + 4 * b, (uint32_t)~(size - 1) & ~0xfu);
		put32(w + PCI_BASE_ADDRESS_0 + 4 * b + 4, (uint32_t)(~(size - 1) >> 32));
	}
	put16(c + PCI_SUBSYSTEM_VENDOR_ID, fn->subsys_vendor_id);
	put16(c + PCI_SUBSYSTEM_ID, fn->subsys_id);
	c[PCI_CAPABILITY_LIST] = CAP_PM;
	w[PCI_INTERRUPT_LINE] = 0xff;
	c[PCI_INTERRUPT_PIN] = 0; /* MSI-X only, like the real NIC's driver expects */

	/* Power management, version 3, D0 only in practice. */
	c[CAP_PM] = PCI_CAP_ID_PM;
	c[CAP_PM + 1] = CAP_EXP;
	put16(c + CAP_PM + PCI_PM_PMC, 0x0003);
	put16(w + CAP_PM + PCI_PM_CTRL, PCI_PM_CTRL_STATE_MASK);

	/* PCI Express endpoint, capability version 2, 128-byte payloads, 8 GT/s x8 link. */
	c[CAP_EXP] = PCI_CAP_ID_EXP;
	c[CAP_EXP + 1] = CAP_MSIX;
	put16(c + CAP_EXP + PCI_EXP_FLAGS, PCI_EXP_FLAGS_VERS2 | PCI_EXP_TYPE_ENDPOINT << 4);
	put32(c + CAP_EXP + PCI_EXP_DEVCAP, 0x00008000); /* role-based error reporting */
	put16(c + CAP_EXP + PCI_EXP_DEVCTL, 0x2810);     /* relaxed ordering, 512-byte read requests */
	put16(w + CAP_EXP + PCI_EXP_DEVCTL, 0x7cff);
	put16(w1c + CAP_EXP + PCI_EXP_DEVSTA, 0x000f);
	put32(c + CAP_EXP + PCI_EXP_LNKCAP, 0x00000083);
	put16(w + CAP_EXP + PCI_EXP_LNKCTL, 0x01c3);
	put16(c + CAP_EXP + PCI_EXP_LNKSTA, 0x0083);
	put16(w + CAP_EXP + PCI_EXP_DEVCTL2, 0x001f);

	/* MSI-X. */
	c[CAP_MSIX] = PCI_CAP_ID_MSIX;
	c[CAP_MSIX + 1] = 0;
	put16(c + CAP_MSIX + PCI_MSIX_FLAGS, (uint16_t)(fn->msix_vectors - 1));
	put16(w + CAP_MSIX + PCI_MSIX_FLAGS, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	put32(c + CAP_MSIX + PCI_MSIX_TABLE, fn->msix_table_offset | fn->msix_bar);
	put32(c + CAP_MSIX + PCI_MSIX_PBA, fn->msix_pba_offset | fn->msix_bar);
	/* 0x100: an all-zero extended capability header ends the (empty) extended list. */
}

bool pci_dev_bus_master(const struct pci_dev *pd)
{
	return (get16(pd->cfg + PCI_COMMAND) & PCI_COMMAND_MASTER) != 0;
}

static uint16_t msix_ctrl(const struct pci_dev *pd)
{
	return get16(pd->cfg + CAP_MSIX + PCI_MSIX_FLAGS);
}

static bool vector_masked(const struct pci_dev *pd, uint32_t vec)
{
	if (msix_ctrl(pd) & PCI_MSIX_FLAGS_MASKALL)
		return true;
	if (pd->table_written &&
	    (pd->msix_table[vec * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL] & PCI_MSIX_ENTRY_CTRL_MASKBIT))
		return true;
	return pd->srv && vfu_irq_masked(pd->srv, VFU_IRQ_MSIX, vec);
}

bool pci_msix_pending(const struct pci_dev *pd, uint32_t vec)
{
	return vec < pd->fn.msix_vectors && (pd->msix_pba[vec / 8] >> (vec % 8) & 1);
}

/* Send vector vec's message now, or leave it pending in the PBA. */
static void msix_send(struct pci_dev *pd, uint32_t vec)
{
	/* The message is a memory write: without bus mastering it waits, like a masked one. */
	if (pci_dev_bus_master(pd) && !vector_masked(pd, vec) && pd->srv &&
	    vfu_irq_signal(pd->srv, VFU_IRQ_MSIX, vec)) {
		pd->msix_pba[vec / 8] &= (uint8_t)~(1u << (vec % 8));
		return;
	}
	pd->msix_pba[vec / 8] |= (uint8_t)(1u << (vec % 8));
}

/* Each vector raised since the last call sent once, as it stands now (masked: pending). */
static void msix_send_due(struct pci_dev *pd)
{
	for (uint32_t w = 0; w < pd->due_words; w++) {
		while (pd->msix_due[w]) {
			uint32_t vec = w * 64 + (uint32_t)__builtin_ctzll(pd->msix_due[w]);

			pd->msix_due[w] &= pd->msix_due[w] - 1;
			msix_send(pd, vec);
		}
	}
}

/* The end of the loop's batch. */
static void msix_flush(void *arg)
{
	struct pci_dev *pd = arg;

	pd->flush_pending = false;
	msix_send_due(pd);
}

void pci_msix_notify(struct pci_dev *pd, uint32_t vec)
{
	if (vec >= pd->fn.msix_vectors) {
		LOG_WARN("pci: MSI-X vector %u does not exist", vec);
		return;
	}
	if (pd->loop != NULL && (pd->flush_pending || evloop_defer(pd->loop, msix_flush, pd) == 0)) {
		pd->flush_pending = true;
		pd->msix_due[vec / 64] |= 1ull << (vec % 64);
		return;
	}
	msix_send(pd, vec); /* not gathering, or the loop's deferred calls are full: at once */
}

void pci_dev_set_loop(struct pci_dev *pd, struct evloop *loop)
{
	if (pd->loop != NULL && pd->flush_pending)
		msix_flush(pd);
	if (pd->loop != NULL)
		evloop_undefer(pd->loop, msix_flush, pd);
	pd->flush_pending = false;
	pd->loop = loop;
}

/* Deliver every pending vector that can now be delivered. */
static void msix_retry_pending(struct pci_dev *pd)
{
	for (uint32_t v = 0; v < pd->fn.msix_vectors; v++)
		if (pci_msix_pending(pd, v))
			pci_msix_notify(pd, v);
}

static int config_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct pci_dev *pd = opaque;
	const uint8_t *src = buf;
	uint16_t old_ctrl = msix_ctrl(pd);
	bool old_master = pci_dev_bus_master(pd);

	if (!is_write) {
		memcpy(buf, pd->cfg + off, len);
		return 0;
	}
	for (size_t i = 0; i < len; i++) {
		size_t a = off + i;
		uint8_t v = (uint8_t)((pd->cfg[a] & ~pd->wmask[a]) | (src[i] & pd->wmask[a]));

		pd->cfg[a] = (uint8_t)(v & ~(src[i] & pd->w1cmask[a]));
	}
	if (pci_dev_bus_master(pd) != old_master) {
		LOG_DEBUG("pci: bus mastering %s", old_master ? "off" : "on");
		/* The device first: work it held back may raise vectors, which now go out at once. */
		if (pd->fn.bus_master)
			pd->fn.bus_master(pd->fn.opaque, !old_master);
		if (!old_master)
			msix_retry_pending(pd);
	}
	if (msix_ctrl(pd) != old_ctrl) {
		LOG_DEBUG("pci: MSI-X control %#06x", msix_ctrl(pd));
		msix_retry_pending(pd);
	}
	return 0;
}

/* Bytes [off, off+len) of an MSI-X structure. */
static void msix_access(struct pci_dev *pd, bool table, uint64_t off, uint8_t *buf, size_t len, bool is_write)
{
	if (!table) {
		if (!is_write)
			memcpy(buf, pd->msix_pba + off, len);
		return; /* the PBA is read-only */
	}
	if (!is_write) {
		memcpy(buf, pd->msix_table + off, len);
		return;
	}
	memcpy(pd->msix_table + off, buf, len);
	pd->table_written = true;
	msix_retry_pending(pd);
}

/*
 * A BAR access: the parts that fall on the MSI-X table or PBA are served
 * here, the rest by the device, so an access may be split in up to five pieces.
 */
static int bar_access(struct pci_dev *pd, unsigned bar, uint64_t off, uint8_t *buf, size_t len, bool is_write)
{
	const struct pci_bar *b = &pd->fn.bars[bar];

	while (len > 0) {
		uint64_t ranges[2][2] = {
			{ pd->fn.msix_table_offset, pd->table_len },
			{ pd->fn.msix_pba_offset, pd->pba_len },
		};
		size_t chunk = len;
		int which = -1;

		if (bar == pd->fn.msix_bar) {
			for (int r = 0; r < 2; r++) {
				uint64_t start = ranges[r][0], rlen = ranges[r][1];

				if (off >= start && off - start < rlen) {
					which = r;
					if (chunk > start + rlen - off)
						chunk = (size_t)(start + rlen - off);
				} else if (off < start && start - off < chunk) {
					chunk = (size_t)(start - off);
				}
			}
		}
		if (which >= 0) {
			msix_access(pd, which == 0, off - ranges[which][0], buf, chunk, is_write);
		} else if (b->access) {
			int rc = b->access(pd->fn.opaque, off, buf, chunk, is_write);

			if (rc)
				return rc;
		} else if (!is_write) {
			memset(buf, 0, chunk);
		}
		off += chunk;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

#define BAR_ACCESS_FN(n) \
	static int bar##n##_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write) \
	{ return bar_access(opaque, n, off, buf, len, is_write); }
BAR_ACCESS_FN(0)
BAR_ACCESS_FN(2)
BAR_ACCESS_FN(4)

static void reset_state(struct pci_dev *pd)
{
	memcpy(pd->cfg, pd->cfg_init, sizeof(pd->cfg));
	memset(pd->msix_table, 0, pd->table_len);
	for (uint32_t v = 0; v < pd->fn.msix_vectors; v++)
		pd->msix_table[v * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL] = PCI_MSIX_ENTRY_CTRL_MASKBIT;
	memset(pd->msix_pba, 0, pd->pba_len);
	memset(pd->msix_due, 0, pd->due_words * sizeof(*pd->msix_due)); /* a reset takes back what was raised */
	pd->table_written = false;
}

void pci_dev_reset(struct pci_dev *pd)
{
	bool was_master = pci_dev_bus_master(pd);

	reset_state(pd);
	if (was_master && pd->fn.bus_master)
		pd->fn.bus_master(pd->fn.opaque, false);
	if (pd->fn.reset)
		pd->fn.reset(pd->fn.opaque);
}

static void vfu_reset(void *opaque)
{
	pci_dev_reset(opaque);
}

static void vfu_sync(void *opaque)
{
	struct pci_dev *pd = opaque;

	if (pd->fn.sync)
		pd->fn.sync(pd->fn.opaque);
}

static void vfu_before_reply(void *opaque)
{
	struct pci_dev *pd = opaque;

	msix_send_due(pd); /* the loop's deferred call still comes, and finds what is raised after */
}

static void vfu_disconnected(void *opaque)
{
	struct pci_dev *pd = opaque;

	if (pd->fn.disconnected)
		pd->fn.disconnected(pd->fn.opaque);
}

int pci_dev_set_bar_mmap(struct pci_dev *pd, unsigned bar, const struct vfu_region_mmap *mm)
{
	struct vfu_region *reg;

	if (bar >= 6 || pd->fn.bars[bar].size == 0)
		return -EINVAL;
	reg = &pd->vfu.regions[VFU_REGION_BAR0 + bar];
	if (mm == NULL) {
		memset(&reg->mmap, 0, sizeof(reg->mmap));
		return 0;
	}
	if (mm->nr_areas > VFU_MAX_SPARSE_AREAS || mm->fd < 0)
		return -EINVAL;
	for (uint32_t i = 0; i < mm->nr_areas; i++) {
		const struct vfu_mmap_area *a = &mm->areas[i];
		const uint64_t ranges[2][2] = {
			{ pd->fn.msix_table_offset, pd->table_len },
			{ pd->fn.msix_pba_offset, pd->pba_len },
		};

		if (a->size == 0 || a->offset % PCI_MMAP_PAGE || a->size % PCI_MMAP_PAGE || a->offset > reg->size ||
		    a->size > reg->size - a->offset)
			return -EINVAL;
		for (int r = 0; bar == pd->fn.msix_bar && r < 2; r++)
			if (a->offset < ranges[r][0] + ranges[r][1] && ranges[r][0] < a->offset + a->size)
				return -EINVAL; /* MSI-X lives in the PCI layer: it must trap */
	}
	reg->mmap = *mm;
	return 0;
}

static void vfu_irq_changed(void *opaque, enum vfu_irq_index index)
{
	if (index == VFU_IRQ_MSIX)
		msix_retry_pending(opaque);
}

static void vfu_irq_trigger(void *opaque, enum vfu_irq_index index, uint32_t vector)
{
	struct pci_dev *pd = opaque;

	if (index == VFU_IRQ_MSIX)
		pci_msix_notify(pd, vector);
	else if (pd->srv)
		vfu_irq_signal(pd->srv, index, vector);
}

struct pci_dev *pci_dev_new(const struct pci_function *fn)
{
	static const vfu_access_fn bar_fns[6] = { bar0_access, NULL, bar2_access, NULL, bar4_access, NULL };
	struct pci_dev *pd;

	if (fn->msix_vectors == 0 || fn->msix_vectors > 2048 || fn->msix_bar > 4 || fn->msix_bar % 2)
		return NULL;
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return NULL;
	pd->fn = *fn;
	pd->table_len = fn->msix_vectors * PCI_MSIX_ENTRY_SIZE;
	pd->pba_len = (fn->msix_vectors + 63) / 64 * 8;
	pd->msix_table = calloc(1, pd->table_len);
	pd->msix_pba = calloc(1, pd->pba_len);
	pd->due_words = (fn->msix_vectors + 63) / 64;
	pd->msix_due = calloc(pd->due_words, sizeof(*pd->msix_due));
	if (pd->msix_table == NULL || pd->msix_pba == NULL || pd->msix_due == NULL) {
		pci_dev_free(pd);
		return NULL;
	}
	build_config(pd);
	reset_state(pd);

	pd->vfu.opaque = pd;
	pd->vfu.regions[VFU_REGION_CONFIG] = (struct vfu_region){ .size = PCIE_CFG_SPACE_SIZE, .access = config_access };
	for (unsigned b = 0; b < 6; b += 2)
		if (fn->bars[b].size)
			pd->vfu.regions[VFU_REGION_BAR0 + b] = (struct vfu_region){ .size = fn->bars[b].size,
										      .access = bar_fns[b] };
	pd->vfu.irq_count[VFU_IRQ_MSIX] = fn->msix_vectors;
	pd->vfu.irq_count[VFU_IRQ_ERR] = 1;
	pd->vfu.irq_count[VFU_IRQ_REQ] = 1;
	pd->vfu.reset = vfu_reset;
	pd->vfu.irq_changed = vfu_irq_changed;
	pd->vfu.irq_trigger = vfu_irq_trigger;
	pd->vfu.sync = vfu_sync;
	pd->vfu.before_reply = vfu_before_reply;
	pd->vfu.disconnected = vfu_disconnected;
	return pd;
}

void pci_dev_free(struct pci_dev *pd)
{
	if (pd == NULL)
		return;
	if (pd->loop != NULL)
		evloop_undefer(pd->loop, msix_flush, pd);
	free(pd->msix_table);
	free(pd->msix_pba);
	free(pd->msix_due);
	free(pd);
}

const struct vfu_device *pci_dev_vfu(struct pci_dev *pd)
{
	return &pd->vfu;
}

void pci_dev_set_server(struct pci_dev *pd, struct vfu_server *srv)
{
	pd->srv = srv;
}
