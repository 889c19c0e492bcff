/* Minimal guest-side ionic driver for tests; see ionic_guest.h. */
#include "ionic_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BAR0 0
#define BAR2 2
#define DEVCMD 0x800
#define INTR_CTRL 0x2000

int ionic_guest_dev_cmd(struct ionic_guest *g, const void *cmd64, uint8_t comp[16])
{
	if (vfc_write(g->c, BAR0, DEVCMD + 8, cmd64, 64, true))
		return -1;
	vfc_write32(g->c, BAR0, DEVCMD + 4, 0, true);
	vfc_write32(g->c, BAR0, DEVCMD, 1, true);
	for (int i = 0; i < 1000; i++) {
		if (vfc_read32(g->c, BAR0, DEVCMD + 4) & 1) {
			vfc_read(g->c, BAR0, DEVCMD + 0x48, comp, 16);
			vfc_write32(g->c, BAR0, DEVCMD, 0, true);
			return 0;
		}
	}
	return -1;
}

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ionic_guest_db(struct ionic_guest *g, uint32_t page, uint32_t word, uint64_t val)
{
	uint64_t *w;

	if (g->bar2.base == NULL) {
		vfc_write(g->c, BAR2, 4096ull * page + 8ull * word, &val, 8, true);
		return;
	}
	w = (uint64_t *)(g->bar2.base + 4096ull * page + 8ull * word);
	if (g->db_wait && __atomic_load_n(w, __ATOMIC_ACQUIRE) != GUEST_DB_EMPTY) {
		long deadline = mono_ms() + 2000;

		while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != GUEST_DB_EMPTY && mono_ms() < deadline)
			;
	}
	/* Release: the ring entries written before the doorbell are visible with it (a driver's wmb). */
	__atomic_store_n(w, val, __ATOMIC_RELEASE);
}

void ionic_guest_trap_doorbells(struct ionic_guest *g)
{
	vfc_unmap_region(&g->bar2);
}

static struct {
	bool on;
	int memfd;
	uint8_t *mem;
} kept = { .memfd = -1 };
static bool seal_memory;

void ionic_guest_seal_memory(bool on)
{
	seal_memory = on;
}

void ionic_guest_keep_memory(void)
{
	kept.on = true;
}

int ionic_guest_setup(struct ionic_guest *g, struct vfc *c)
{
	struct vfu_dma_map m = { .argsz = sizeof(m), .flags = VFU_DMA_READ | VFU_DMA_WRITE,
				 .iova = GUEST_IOVA, .size = GUEST_SIZE };
	uint8_t rep[16];
	struct vfu_irq_set s = { .argsz = sizeof(s), .flags = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER,
				 .index = VFU_PCI_MSIX_IRQ, .start = 0, .count = 1 };
	size_t rlen;
	uint32_t err;
	int rc;

	memset(g, 0, sizeof(*g));
	g->c = c;
	g->cq_color = 1;
	g->db_wait = true;
	rc = vfc_map_region(c, BAR2, &g->bar2);
	if (rc && rc != -ENODEV)
		return -8; /* offered, and it would not map */
	if (kept.on && kept.mem) {
		g->memfd = kept.memfd;
		g->mem = kept.mem;
		memset(g->mem, 0, GUEST_SIZE);
	} else {
		g->memfd = memfd_create("ionic-guest", MFD_CLOEXEC | (seal_memory ? MFD_ALLOW_SEALING : 0));
		if (g->memfd < 0 || ftruncate(g->memfd, GUEST_SIZE) < 0)
			return -1;
		/* QEMU's memory-backend-memfd default */
		if (seal_memory && fcntl(g->memfd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
			return -1;
		g->mem = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, g->memfd, 0);
		if (g->mem == MAP_FAILED)
			return -2;
		if (kept.on) {
			kept.memfd = g->memfd;
			kept.mem = g->mem;
		}
	}
	if (vfc_call(c, VFU_CMD_DMA_MAP, &m, sizeof(m), &g->memfd, 1, rep, sizeof(rep), &rlen, &err) || err)
		return -3;
	g->irq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vfc_call(c, VFU_CMD_DEVICE_SET_IRQS, &s, sizeof(s), &g->irq_fd, 1, rep, sizeof(rep), &rlen, &err) || err)
		return -4;
	return ionic_guest_init_device(g);
}

int ionic_guest_init_device(struct ionic_guest *g)
{
	uint8_t cmd[64], comp[16];

	/* Bus mastering on, as pci_set_master() does. */
	vfc_write32(g->c, VFU_PCI_CONFIG_REGION, 0x04, 0x0006, false);
	g->aq_head = 0;
	g->cq_tail = 0;
	g->cq_color = 1;
	memset(guest_ptr(g, GUEST_AQ_CQ), 0, GUEST_AQ_DEPTH * 16);
	memset(cmd, 0, sizeof(cmd));
	cmd[0] = 3; /* RESET */
	if (ionic_guest_dev_cmd(g, cmd, comp) || comp[0])
		return -5;
	memset(cmd, 0, sizeof(cmd));
	cmd[0] = 21; /* LIF_INIT index 0, info_pa */
	uint64_t pa = GUEST_LIF_INFO;
	memcpy(cmd + 8, &pa, 8);
	if (ionic_guest_dev_cmd(g, cmd, comp) || comp[0])
		return -6;
	memset(cmd, 0, sizeof(cmd));
	cmd[0] = 40;          /* Q_INIT adminq */
	cmd[4] = 0;           /* type ADMINQ */
	uint16_t flags = 0x3; /* IRQ | ENA */
	memcpy(cmd + 16, &flags, 2);
	cmd[19] = 4;          /* 16 descriptors */
	uint64_t ring = GUEST_AQ_RING, cq = GUEST_AQ_CQ;
	memcpy(cmd + 20, &ring, 8);
	memcpy(cmd + 28, &cq, 8);
	if (ionic_guest_dev_cmd(g, cmd, comp) || comp[0])
		return -7;
	return 0;
}

void ionic_guest_teardown(struct ionic_guest *g)
{
	vfc_unmap_region(&g->bar2);
	if (g->mem && g->mem != MAP_FAILED && g->mem != kept.mem)
		munmap(g->mem, GUEST_SIZE);
	if (g->memfd > 0 && g->memfd != kept.memfd)
		close(g->memfd);
	if (g->irq_fd > 0)
		close(g->irq_fd);
	if (g->qirq_fd > 0)
		close(g->qirq_fd);
}

uint32_t ionic_guest_aq_post(struct ionic_guest *g, const void *cmd64)
{
	uint32_t idx = g->aq_head;
	uint64_t db;

	memcpy(guest_ptr(g, GUEST_AQ_RING + idx * 64ull), cmd64, 64);
	g->aq_head = (idx + 1) % GUEST_AQ_DEPTH;
	db = g->aq_head; /* qid 0, ring 0, new producer index */
	ionic_guest_db(g, 0, 0 /* the admin queue's hw_type */, db);
	return idx;
}

bool ionic_guest_wait_irq(struct ionic_guest *g, int timeout_ms)
{
	struct pollfd pfd = { .fd = g->irq_fd, .events = POLLIN };
	uint64_t v;

	if (poll(&pfd, 1, timeout_ms) != 1)
		return false;
	return read(g->irq_fd, &v, sizeof(v)) == sizeof(v);
}

bool ionic_guest_aq_comp(struct ionic_guest *g, uint8_t comp[16])
{
	volatile uint8_t *slot = guest_ptr(g, GUEST_AQ_CQ + g->cq_tail * 16ull);

	if (((slot[15] & 0x80) != 0) != (g->cq_color != 0))
		return false;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	memcpy(comp, (const void *)slot, 16);
	if (++g->cq_tail == GUEST_AQ_DEPTH) {
		g->cq_tail = 0;
		g->cq_color ^= 1;
	}
	return true;
}

void ionic_guest_intr_write(struct ionic_guest *g, uint32_t vector, uint32_t off, uint32_t v, bool posted)
{
	vfc_write32(g->c, BAR0, INTR_CTRL + 32ull * vector + off, v, posted);
}

uint32_t ionic_guest_intr_read(struct ionic_guest *g, uint32_t vector, uint32_t off)
{
	return vfc_read32(g->c, BAR0, INTR_CTRL + 32ull * vector + off);
}

void ionic_guest_irq_rearm(struct ionic_guest *g, uint32_t credits)
{
	ionic_guest_intr_write(g, 0, GUEST_INTR_CREDITS, credits | GUEST_INTR_CRED_UNMASK, true);
}

int ionic_guest_aq_cmd(struct ionic_guest *g, const void *cmd64, uint8_t comp[16])
{
	ionic_guest_aq_post(g, cmd64);
	for (int i = 0; i < 2000; i++) {
		if (ionic_guest_aq_comp(g, comp)) {
			ionic_guest_wait_irq(g, 0);
			ionic_guest_irq_rearm(g, 1);
			return comp[0];
		}
		usleep(1000);
	}
	return -1;
}

int ionic_guest_q_init(struct ionic_guest *g, uint8_t type, uint8_t ver, uint8_t depth_log2, uint64_t ring,
		       uint64_t cq, uint64_t sg, uint8_t *slot)
{
	uint8_t cmd[64] = { 40 }, comp[16];
	int st;
	uint16_t flags = 0x1 | 0x4, intr = 1; /* IRQ | SG, not yet enabled */

	cmd[4] = type;
	cmd[5] = ver;
	memcpy(cmd + 14, &intr, 2);
	memcpy(cmd + 16, &flags, 2);
	cmd[19] = depth_log2;
	memcpy(cmd + 20, &ring, 8);
	memcpy(cmd + 28, &cq, 8);
	memcpy(cmd + 36, &sg, 8);
	st = ionic_guest_aq_cmd(g, cmd, comp);
	*slot = comp[8]; /* ionic_q_init_comp.hw_type; hw_index @4 is the queue's index */
	return st;
}

int ionic_guest_q_enable(struct ionic_guest *g, uint8_t type)
{
	uint8_t cmd[64] = { 41, type }, comp[16];

	cmd[8] = 1;
	return ionic_guest_aq_cmd(g, cmd, comp);
}

void ionic_guest_rx_post(struct ionic_guest *g, uint32_t idx, uint64_t buf)
{
	uint8_t *d = guest_ptr(g, GUEST_RX_RING + idx * 16ull);
	uint16_t len = GUEST_BUF_SIZE;

	memset(d, 0, 16);
	memcpy(d + 6, &len, 2);
	memcpy(d + 8, &buf, 8);
}

int ionic_guest_rx_mode_all(struct ionic_guest *g)
{
	uint8_t cmd[64] = { 30 }, comp[16];
	uint16_t mode = 0x1f;

	memcpy(cmd + 4, &mode, 2);
	return ionic_guest_aq_cmd(g, cmd, comp);
}

int ionic_guest_queue_irq(struct ionic_guest *g)
{
	struct vfu_irq_set s = { .argsz = sizeof(s), .flags = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER,
				 .index = VFU_PCI_MSIX_IRQ, .start = 1, .count = 1 };
	uint8_t rep[16];
	size_t rlen;
	uint32_t err;

	g->qirq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->qirq_fd < 0 ||
	    vfc_call(g->c, VFU_CMD_DEVICE_SET_IRQS, &s, sizeof(s), &g->qirq_fd, 1, rep, sizeof(rep), &rlen, &err) || err)
		return -1;
	return 0;
}

int ionic_guest_queues_up(struct ionic_guest *g)
{
	uint64_t db;

	g->rx_cq_color = 1;
	if (ionic_guest_queue_irq(g))
		return -1;
	if (ionic_guest_q_init(g, 3, 1, 4, GUEST_TX_RING, GUEST_TX_CQ, GUEST_TX_SG, &g->tx_slot) ||
	    ionic_guest_q_init(g, 2, 0, 4, GUEST_RX_RING, GUEST_RX_CQ, GUEST_RX_SG, &g->rx_slot))
		return -1;
	if (ionic_guest_rx_mode_all(g))
		return -1;
	/* Fill RX and ring it before enabling, as the driver does. */
	for (uint32_t i = 0; i < GUEST_Q_DEPTH - 1; i++)
		ionic_guest_rx_post(g, i, GUEST_RX_BUF + i * (uint64_t)GUEST_BUF_SIZE);
	g->rx_tail = GUEST_Q_DEPTH - 1;
	db = (uint64_t)g->rx_tail; /* qid 0 */
	ionic_guest_db(g, 0, g->rx_slot, db);
	if (ionic_guest_q_enable(g, 2) || ionic_guest_q_enable(g, 3))
		return -1;
	return 0;
}

void ionic_guest_tx(struct ionic_guest *g, const void *frame, size_t len)
{
	uint32_t idx = g->tx_head;
	uint64_t addr = GUEST_TX_BUF + idx * (uint64_t)GUEST_BUF_SIZE, cmd, db;
	uint8_t *d = guest_ptr(g, GUEST_TX_RING + idx * 16ull);
	uint16_t l = (uint16_t)len;

	memcpy(guest_ptr(g, addr), frame, len);
	cmd = addr << 12; /* opcode CSUM_NONE, no SG */
	memset(d, 0, 16);
	memcpy(d, &cmd, 8);
	memcpy(d + 8, &l, 2);
	g->tx_head = (idx + 1) % GUEST_Q_DEPTH;
	db = g->tx_head;
	ionic_guest_db(g, 0, g->tx_slot, db);
}

int ionic_guest_rx(struct ionic_guest *g, void *buf, size_t cap, int timeout_ms)
{
	for (int t = 0; t <= timeout_ms; t++) {
		volatile uint8_t *c = guest_ptr(g, GUEST_RX_CQ + g->rx_cq_tail * 16ull);

		if (((c[15] & 0x80) != 0) == (g->rx_cq_color != 0)) {
			uint16_t idx, len;
			uint64_t db;

			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			memcpy(&idx, (const void *)(c + 2), 2);
			memcpy(&len, (const void *)(c + 12), 2);
			if (len > cap || idx >= GUEST_Q_DEPTH)
				return -1;
			memcpy(buf, guest_ptr(g, GUEST_RX_BUF + idx * (uint64_t)GUEST_BUF_SIZE), len);
			if (++g->rx_cq_tail == GUEST_Q_DEPTH) {
				g->rx_cq_tail = 0;
				g->rx_cq_color ^= 1;
			}
			ionic_guest_rx_post(g, g->rx_tail, GUEST_RX_BUF + g->rx_tail * (uint64_t)GUEST_BUF_SIZE);
			g->rx_tail = (g->rx_tail + 1) % GUEST_Q_DEPTH;
			db = g->rx_tail;
			ionic_guest_db(g, 0, g->rx_slot, db);
			return len;
		}
		usleep(1000);
	}
	return -1;
}
