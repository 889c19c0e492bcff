/*
 * ionic device model: BAR0 registers (device info, dev_cmd, interrupt
 * control), BAR2 doorbells and interrupt delivery. The dev_cmd protocol is the
 * Linux 7.2 driver's (ionic_dev.c): copy the 64-byte command, clear done, ring
 * the doorbell, poll done, read the 16-byte completion and, for identify
 * commands, the data window. Guest mistakes are logged and counted, never fatal.
 */
#include "ionic/ionic_dev.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ionic/ionic_priv.h"
#include "ionic/ionic_rdma_if.h"
#include "util/log.h"
#include "vfio_user/dma_map.h"

#define ASIC_TYPE 4 /* not 0 or 2: those turn on the driver's doorbell re-ring workaround */

_Static_assert(IONIC_BAR0_INTR_CTRL_OFFSET + IONIC_NINTRS * sizeof(struct ionic_intr_ctrl) <= IONIC_BAR0_REGS_END,
	       "interrupt control fits in BAR0");

void ionic_guest_error(struct ionic_dev *dev, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	/* The first few are worth a line (a stock driver makes none); a hostile guest's flood only counts. */
	const bool shown = ++dev->stats.guest_errors <= IONIC_GUEST_ERRORS_LOGGED;

	if (!shown && !log_enabled(LOG_LEVEL_DEBUG))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!shown) {
		LOG_DEBUG("ionic: guest error: %s", msg);
		return;
	}
	LOG_WARN("ionic: guest error: %s%s", msg,
		 dev->stats.guest_errors == IONIC_GUEST_ERRORS_LOGGED ? " (later ones are counted, shown with -v)" : "");
}

/*
 * The one way the device reaches guest memory. Without bus mastering the
 * function issues no memory requests: every access fails as if unmapped.
 */
static struct dma_map *guest_mem(struct ionic_dev *dev)
{
	if (!dev->bus_master) {
		dev->stats.dma_refused++;
		return NULL;
	}
	return dev->env.dma ? dev->env.dma(dev->env.ctx) : NULL;
}

int ionic_dma_read(struct ionic_dev *dev, uint64_t addr, void *buf, size_t len)
{
	struct dma_map *dm = guest_mem(dev);

	return dm ? dma_map_read(dm, addr, buf, len) : -EFAULT;
}

int ionic_dma_write(struct ionic_dev *dev, uint64_t addr, const void *buf, size_t len)
{
	struct dma_map *dm = guest_mem(dev);

	return dm ? dma_map_write(dm, addr, buf, len) : -EFAULT;
}

int ionic_dma_copy(struct ionic_dev *dev, uint64_t dst, uint64_t src, size_t len)
{
	struct dma_map *dm = guest_mem(dev);

	return dm ? dma_map_copy(dm, dst, src, len) : -EFAULT;
}

const void *ionic_dma_peek(struct ionic_dev *dev, uint64_t addr, size_t len)
{
	struct dma_map *dm = guest_mem(dev);

	return dm ? dma_map_translate(dm, addr, len, DMA_PROT_READ | DMA_MAP_NOFAULT) : NULL;
}

/* ---- interrupts ---- */

static void intr_send(struct ionic_dev *dev, uint32_t idx)
{
	struct ionic_intr_state *in = &dev->intr[idx];

	in->pending = false;
	dev->stats.interrupts++;
	if (in->mask_on_assert)
		in->mask = 1;
	if (dev->env.raise_irq)
		dev->env.raise_irq(dev->env.ctx, idx);
}

/*
 * Credits count events the driver has not returned yet: one per completion
 * (or event-queue entry) posted for the vector, which is what the driver
 * returns after its poll (NAPI: the completions it processed; the RDMA EQ
 * handler: the entries it took).
 */
void ionic_intr_raise_n(struct ionic_dev *dev, uint32_t idx, uint32_t events)
{
	struct ionic_intr_state *in;

	if (idx >= IONIC_NINTRS) {
		ionic_guest_error(dev, "interrupt index %u out of range", idx);
		return;
	}
	in = &dev->intr[idx];
	in->credits = events > (uint32_t)(INT16_MAX - in->credits) ? INT16_MAX : in->credits + (int32_t)events;
	if (in->mask)
		in->pending = true;
	else
		intr_send(dev, idx);
}

void ionic_intr_raise(struct ionic_dev *dev, uint32_t idx)
{
	ionic_intr_raise_n(dev, idx, 1);
}

/* An aligned 32-bit write to interrupt control block idx, field at byte off. */
static void intr_write(struct ionic_dev *dev, uint32_t idx, uint32_t off, uint32_t val)
{
	struct ionic_intr_state *in = &dev->intr[idx];

	switch (off) {
	case offsetof(struct ionic_intr_ctrl, coal_init):
		in->coal_init = val;
		break;
	case offsetof(struct ionic_intr_ctrl, mask):
		in->mask = val & 1;
		break;
	case offsetof(struct ionic_intr_ctrl, credits):
		/* The low 16 bits are a signed count of events the driver consumed. */
		in->credits -= (int16_t)(val & IONIC_INTR_CRED_COUNT_SIGNED);
		if (in->credits < 0)
			in->credits = 0;
		if (val & IONIC_INTR_CRED_UNMASK)
			in->mask = 0;
		break;
	case offsetof(struct ionic_intr_ctrl, mask_on_assert):
		in->mask_on_assert = val & 1;
		break;
	default:
		break; /* coal (current) and reserved words: read-only */
	}
	/*
	 * An event raised while masked is sent on unmask, unless the driver has
	 * returned every credit since (it saw that completion in the poll it just
	 * finished): as the hardware, which asserts while credits remain, does.
	 */
	if (in->credits == 0)
		in->pending = false;
	if (!in->mask && in->pending)
		intr_send(dev, idx);
}

static uint32_t intr_read(const struct ionic_dev *dev, uint32_t idx, uint32_t off)
{
	const struct ionic_intr_state *in = &dev->intr[idx];

	switch (off) {
	case offsetof(struct ionic_intr_ctrl, coal_init): return in->coal_init;
	case offsetof(struct ionic_intr_ctrl, mask): return in->mask;
	case offsetof(struct ionic_intr_ctrl, credits): return (uint32_t)in->credits & IONIC_INTR_CRED_COUNT_SIGNED;
	case offsetof(struct ionic_intr_ctrl, mask_on_assert): return in->mask_on_assert;
	default: return 0;
	}
}

/* ---- dev_cmd ---- */

static void dev_cmd_execute(struct ionic_dev *dev)
{
	uint8_t cmd[64], comp[16] = { 0 };

	memcpy(cmd, dev->bar0.cmd.cmd, sizeof(cmd));
	dev->stats.dev_cmds++;
	if (ionic_cmd_exec(dev, cmd, comp, false) != IONIC_RC_SUCCESS)
		dev->stats.dev_cmd_errors++;
	memcpy(dev->bar0.cmd.comp, comp, sizeof(comp));
	dev->bar0.cmd.done = le32_set(IONIC_DEV_CMD_DONE);
}

/* ---- registers ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t heartbeat(void)
{
	/* Changes between any two of the driver's checks (they are seconds apart) and is never 0. */
	return (uint32_t)now_ms() | 1u;
}

static uint8_t fw_status(const struct ionic_dev *dev)
{
	if (dev->fw_down_until_ms && now_ms() < dev->fw_down_until_ms)
		return 0;
	return (uint8_t)(IONIC_FW_STS_F_RUNNING | (dev->fw_generation << 4));
}

void ionic_dev_fw_reset(struct ionic_dev *dev, unsigned down_ms)
{
	memset(dev->intr, 0, sizeof(dev->intr));
	ionic_lif_reset(dev);
	dev->port_info_pa = 0;
	dev->fw_generation = (uint8_t)((dev->fw_generation + 1) & 0xf);
	dev->fw_down_until_ms = now_ms() + down_ms;
	LOG_INFO("ionic: firmware reset: not running for %u ms, then generation %u", down_ms, dev->fw_generation);
}

static void fill_dev_info(struct ionic_dev *dev)
{
	struct ionic_dev_info_regs *info = &dev->bar0.info;
	const uint8_t *m = dev->cfg.mac;

	memset(info, 0, sizeof(*info));
	info->signature = le32_set(IONIC_DEV_INFO_SIGNATURE);
	info->version = IONIC_DEV_INFO_VERSION;
	info->asic_type = ASIC_TYPE;
	info->asic_rev = 0;
	info->fw_status = IONIC_FW_STS_F_RUNNING; /* generation 0, forever */
	snprintf(info->fw_version, sizeof(info->fw_version), "%s", IONIC_FW_VERSION);
	snprintf(info->serial_num, sizeof(info->serial_num), "ERNIC%02X%02X%02X%02X%02X%02X",
		 m[0], m[1], m[2], m[3], m[4], m[5]);
}

void ionic_dev_reset(struct ionic_dev *dev)
{
	memset(&dev->bar0, 0, sizeof(dev->bar0));
	memset(dev->intr, 0, sizeof(dev->intr));
	dev->port_info_pa = 0;
	dev->fw_down_until_ms = 0;
	dev->fw_generation = 0;
	dev->port_state = IONIC_PORT_ADMIN_STATE_UP;
	dev->port_mtu = 1500;
	ionic_lif_reset(dev);
	fill_dev_info(dev);
}

int ionic_dev_bar0_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct ionic_dev *dev = opaque;
	const uint64_t intr_end = IONIC_BAR0_INTR_CTRL_OFFSET + IONIC_NINTRS * sizeof(struct ionic_intr_ctrl);
	const uint64_t regs_end = sizeof(dev->bar0.bytes);
	uint64_t end = off + len;

	if (off >= IONIC_BAR0_REGS_END || len > IONIC_BAR0_REGS_END - off) {
		/* Nothing there (the MSI-X structures above 0x8000 are served by the PCI layer). */
		if (!is_write)
			memset(buf, 0, len);
		else
			ionic_guest_error(dev, "write to unused BAR0 offset %#llx", (unsigned long long)off);
		return 0;
	}
	if (off >= IONIC_BAR0_INTR_CTRL_OFFSET && end <= intr_end) {
		uint32_t rel = (uint32_t)(off - IONIC_BAR0_INTR_CTRL_OFFSET);
		uint32_t idx = rel / sizeof(struct ionic_intr_ctrl), field = rel % sizeof(struct ionic_intr_ctrl);

		if (len != 4 || field % 4) {
			ionic_guest_error(dev, "interrupt control access of %zu bytes at %#llx", len,
					  (unsigned long long)off);
			if (!is_write)
				memset(buf, 0, len);
			return 0;
		}
		if (is_write) {
			uint32_t v;

			memcpy(&v, buf, 4);
			intr_write(dev, idx, field, le32toh(v));
		} else {
			uint32_t v = htole32(intr_read(dev, idx, field));

			memcpy(buf, &v, 4);
		}
		return 0;
	}
	if (!is_write) {
		dev->bar0.info.fw_heartbeat = le32_set(heartbeat());
		dev->bar0.info.fw_status = fw_status(dev);
		if (end <= regs_end)
			memcpy(buf, dev->bar0.bytes + off, len);
		else
			memset(buf, 0, len);
		return 0;
	}
	if (off >= IONIC_BAR0_DEV_CMD_OFFSET && end <= regs_end) {
		memcpy(dev->bar0.bytes + off, buf, len);
		/* A write that covers the doorbell word with bit 0 set runs the command. */
		if (off < IONIC_BAR0_DEV_CMD_OFFSET + 4 && (le32_get(dev->bar0.cmd.doorbell) & 1))
			dev_cmd_execute(dev);
		return 0;
	}
	ionic_guest_error(dev, "write to read-only BAR0 offset %#llx", (unsigned long long)off);
	return 0;
}

/* Run a doorbell: value val stored in word `slot` (the hw_type or RDMA qtype) of doorbell page `page`. */
static void doorbell_run(struct ionic_dev *dev, uint32_t page, uint32_t slot, uint64_t val)
{
	uint32_t qid = (uint32_t)(val >> IONIC_DBELL_QID_SHIFT) & IONIC_DBELL_QID_MASK;
	uint32_t ring = (uint32_t)(val >> IONIC_DBELL_RING_SHIFT) & IONIC_DBELL_RING_MASK;
	uint32_t index = (uint32_t)val & IONIC_DBELL_INDEX_MASK;

	if (page == 0) {
		ionic_queue_doorbell(dev, slot, qid, ring, index);
		return;
	}
	/* Pages 1.. belong to RDMA user contexts: only their RDMA queues ring there. */
	if (page >= IONIC_NDBPGS_PER_LIF || !ionic_rdma_doorbell(dev, page, slot, qid, ring, index))
		ionic_guest_error(dev, "doorbell on page %u word %u", page, slot);
}

/*
 * A doorbell while bus mastering is off: the device can fetch nothing, so
 * it keeps the doorbell for later, as hardware keeps a queue's producer
 * index. One entry per word, queue and ring: the index is absolute, so a
 * later doorbell for the same ring replaces the earlier one (in its place:
 * receives a driver posted before a send still run before it).
 */
static void doorbell_latch(struct ionic_dev *dev, uint32_t page, uint32_t slot, uint64_t val)
{
	const uint64_t ring_qid = val & ~(uint64_t)IONIC_DBELL_INDEX_MASK;

	dev->stats.db_latched++;
	for (uint32_t i = 0; i < dev->nlatched; i++) {
		struct ionic_db_latch *l = &dev->latched[i];

		if (l->page == page && l->slot == slot && (l->val & ~(uint64_t)IONIC_DBELL_INDEX_MASK) == ring_qid) {
			l->val = val;
			return;
		}
	}
	if (dev->nlatched == IONIC_DB_LATCH_MAX) {
		/* More rings than the device has queues for: some name none. */
		ionic_guest_error(dev, "doorbell %#llx on page %u word %u while bus mastering is off: latch full",
				  (unsigned long long)val, page, slot);
		return;
	}
	dev->latched[dev->nlatched++] = (struct ionic_db_latch){ page, slot, val };
}

static void doorbell(struct ionic_dev *dev, uint32_t page, uint32_t slot, uint64_t val)
{
	dev->stats.doorbells++;
	if (!dev->bus_master)
		doorbell_latch(dev, page, slot, val);
	else
		doorbell_run(dev, page, slot, val);
}

void ionic_dev_set_bus_master(struct ionic_dev *dev, bool on)
{
	if (dev->bus_master == on)
		return;
	dev->bus_master = on;
	LOG_DEBUG("ionic: bus mastering %s, %u doorbells latched", on ? "on" : "off", dev->nlatched);
	if (!on)
		return;
	/*
	 * In the order they first came. A latched command may reset the LIF,
	 * which drops the rest (nlatched becomes 0): they were for its queues.
	 */
	for (uint32_t i = 0; i < dev->nlatched; i++) {
		struct ionic_db_latch l = dev->latched[i];

		doorbell_run(dev, l.page, l.slot, l.val);
	}
	dev->nlatched = 0;
	ionic_dev_doorbell_poll(dev);
	ionic_rdma_bus_master_on(dev);
}

int ionic_dev_bar2_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct ionic_dev *dev = opaque;
	uint64_t page = off / IONIC_DB_PAGE_SIZE, in_page = off % IONIC_DB_PAGE_SIZE, val;

	if (!is_write) {
		memset(buf, 0, len); /* doorbells are write-only */
		return 0;
	}
	if (len != 8 || in_page % 8 || page >= IONIC_NDBPGS_PER_LIF) {
		dev->stats.doorbells++;
		ionic_guest_error(dev, "doorbell write of %zu bytes at %#llx", len, (unsigned long long)off);
		return 0;
	}
	memcpy(&val, buf, 8);
	doorbell(dev, (uint32_t)page, (uint32_t)(in_page / 8), le64toh(val));
	return 0;
}

/* ---- mapped doorbell pages ---- */

#define DB_WORDS_PER_PAGE (IONIC_DB_PAGE_SIZE / 8)

uint64_t *ionic_db_pages(struct ionic_dev *dev)
{
	return dev->env.db_pages ? dev->env.db_pages(dev->env.ctx) : NULL;
}

void ionic_db_pages_clear(uint64_t *pages)
{
	/* Fresh pages: nobody else maps them yet, so plain stores do (IONIC_DB_EMPTY is all ones). */
	memset(pages, 0xff, IONIC_BAR2_SIZE);
}

/* Empty every word of page `page`, one atomic store each: the guest may be storing meanwhile. */
static void db_page_empty(uint64_t *pages, uint32_t page)
{
	for (uint32_t w = 0; w < DB_WORDS_PER_PAGE; w++)
		__atomic_store_n(&pages[(size_t)page * DB_WORDS_PER_PAGE + w], IONIC_DB_EMPTY, __ATOMIC_RELAXED);
}

/* Take word `slot` of doorbell page `page` if something was stored there; true if so. */
static bool take_word(struct ionic_dev *dev, uint64_t *pages, uint32_t page, uint32_t slot)
{
	uint64_t *w = &pages[(size_t)page * DB_WORDS_PER_PAGE + slot];
	uint64_t v;

	if (__atomic_load_n(w, __ATOMIC_RELAXED) == IONIC_DB_EMPTY)
		return false;
	/*
	 * Take the value and leave the word empty in one step: a store the guest
	 * makes after this is a doorbell of its own, even with the same value.
	 * Acquire: the ring entries the driver wrote before its doorbell are
	 * visible from here on.
	 */
	v = __atomic_exchange_n(w, IONIC_DB_EMPTY, __ATOMIC_ACQUIRE);
	if (v == IONIC_DB_EMPTY)
		return false;
	dev->stats.db_mapped++;
	doorbell(dev, page, slot, le64toh(v));
	return true;
}

void ionic_db_page_used(struct ionic_dev *dev, uint32_t page)
{
	uint64_t *pages = ionic_db_pages(dev);

	if (page >= IONIC_NDBPGS_PER_LIF || (dev->db_pages_used >> page & 1))
		return;
	if (pages)
		db_page_empty(pages, page);
	dev->db_pages_used |= 1ull << page;
}

void ionic_db_pages_reset(struct ionic_dev *dev)
{
	uint64_t *pages = ionic_db_pages(dev);

	/*
	 * Only the pages in use can hold anything the device would look at: any
	 * other is emptied when it comes into use (ionic_db_page_used).
	 */
	if (pages)
		for (uint64_t m = dev->db_pages_used | 1; m; m &= m - 1)
			db_page_empty(pages, (uint32_t)__builtin_ctzll(m));
	dev->db_pages_used = 1; /* the kernel's page always */
	dev->nlatched = 0;
}

/*
 * The words a look takes. Stores to different words arrive without their
 * order, and a driver posts receive buffers before it sends into them, so
 * receive, completion and admin words are taken before sending words (RDMA
 * SQ, Ethernet TX): a SEND does not miss a receive the guest posted before
 * it (a UD message would be dropped, an RC one wait). Since a look takes
 * time, a store to a receive word can land after the look passed it and
 * before it reaches a sending word stored later; so each sending word found
 * full first has every receive word looked at again: the stores that came
 * before it are visible once it is (acquire).
 */
static const uint8_t kernel_words[2][24] = {
	{ IONIC_DB_SLOT_ADMINQ, IONIC_RDMA_QTYPE_AQ, IONIC_RDMA_QTYPE_RQ, IONIC_RDMA_QTYPE_CQ,
	  16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31 },
	{ IONIC_RDMA_QTYPE_SQ, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47 },
};
static const uint8_t nkernel_words[2] = { 20, 17 };
_Static_assert(IONIC_DB_SLOT_RXQ0 == 16 && IONIC_DB_SLOT_TXQ0 == 32 && IONIC_DB_SLOTS_KERNEL == 48,
	       "the word lists above follow the Ethernet doorbell slots");
static const uint8_t user_words[2][2] = { { IONIC_RDMA_QTYPE_RQ, IONIC_RDMA_QTYPE_CQ }, { IONIC_RDMA_QTYPE_SQ } };
static const uint8_t nuser_words[2] = { 2, 1 };

/* Take every receive, completion and admin word (pass 0) or every sending word (pass 1). */
static bool take_pass(struct ionic_dev *dev, uint64_t *pages, int pass)
{
	bool found = false;

	for (unsigned i = 0; i < nkernel_words[pass]; i++) {
		if (pass == 1 && __atomic_load_n(&pages[kernel_words[1][i]], __ATOMIC_ACQUIRE) != IONIC_DB_EMPTY)
			found |= take_pass(dev, pages, 0);
		found |= take_word(dev, pages, 0, kernel_words[pass][i]);
	}
	/* User pages: only those a queue was created on (a store elsewhere could ring nothing). */
	for (uint64_t m = dev->db_pages_used & ~1ull; m; m &= m - 1) {
		uint32_t page = (uint32_t)__builtin_ctzll(m);

		for (unsigned i = 0; i < nuser_words[pass]; i++) {
			if (pass == 1 && __atomic_load_n(&pages[(size_t)page * DB_WORDS_PER_PAGE + user_words[1][i]],
							 __ATOMIC_ACQUIRE) != IONIC_DB_EMPTY)
				found |= take_pass(dev, pages, 0);
			found |= take_word(dev, pages, page, user_words[pass][i]);
		}
	}
	return found;
}

bool ionic_dev_doorbell_poll(struct ionic_dev *dev)
{
	uint64_t *pages = ionic_db_pages(dev);
	bool found;

	/* Without bus mastering the stores wait in their words: they are taken once it is back. */
	if (pages == NULL || !dev->bus_master)
		return false;
	found = take_pass(dev, pages, 0);
	found |= take_pass(dev, pages, 1); /* after pass 0: sequenced, not one expression */
	return found;
}

struct ionic_dev *ionic_dev_new(const struct ionic_dev_config *cfg, const struct ionic_dev_env *env)
{
	struct ionic_dev *dev = calloc(1, sizeof(*dev));

	if (dev == NULL)
		return NULL;
	dev->cfg = *cfg;
	dev->env = *env;
	if (ionic_rdma_new(dev)) {
		free(dev);
		return NULL;
	}
	ionic_dev_reset(dev);
	return dev;
}

void ionic_dev_free(struct ionic_dev *dev)
{
	if (dev == NULL)
		return;
	ionic_rdma_free(dev);
	free(dev);
}

void ionic_dev_mac(const struct ionic_dev *dev, uint8_t mac[6])
{
	memcpy(mac, dev->cfg.mac, 6);
}

const struct ionic_dev_stats *ionic_dev_stats(const struct ionic_dev *dev)
{
	return &dev->stats;
}
