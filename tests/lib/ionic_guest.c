/* Minimal guest-side ionic driver for tests; see ionic_guest.h. */
#include "ionic_guest.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
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

int ionic_guest_setup(struct ionic_guest *g, struct vfc *c)
{
	struct vfu_dma_map m = { .argsz = sizeof(m), .flags = VFU_DMA_READ | VFU_DMA_WRITE,
				 .iova = GUEST_IOVA, .size = GUEST_SIZE };
	uint8_t cmd[64], comp[16], rep[16];
	struct vfu_irq_set s = { .argsz = sizeof(s), .flags = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER,
				 .index = VFU_PCI_MSIX_IRQ, .start = 0, .count = 1 };
	size_t rlen;
	uint32_t err;

	memset(g, 0, sizeof(*g));
	g->c = c;
	g->cq_color = 1;
	g->memfd = memfd_create("ionic-guest", MFD_CLOEXEC);
	if (g->memfd < 0 || ftruncate(g->memfd, GUEST_SIZE) < 0)
		return -1;
	g->mem = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, g->memfd, 0);
	if (g->mem == MAP_FAILED)
		return -2;
	if (vfc_call(c, VFU_CMD_DMA_MAP, &m, sizeof(m), &g->memfd, 1, rep, sizeof(rep), &rlen, &err) || err)
		return -3;
	g->irq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vfc_call(c, VFU_CMD_DEVICE_SET_IRQS, &s, sizeof(s), &g->irq_fd, 1, rep, sizeof(rep), &rlen, &err) || err)
		return -4;
	/* Bus mastering on, as pci_set_master() does. */
	vfc_write32(c, VFU_PCI_CONFIG_REGION, 0x04, 0x0006, false);

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
	if (g->mem && g->mem != MAP_FAILED)
		munmap(g->mem, GUEST_SIZE);
	if (g->memfd > 0)
		close(g->memfd);
	if (g->irq_fd > 0)
		close(g->irq_fd);
}

uint32_t ionic_guest_aq_post(struct ionic_guest *g, const void *cmd64)
{
	uint32_t idx = g->aq_head;
	uint64_t db;

	memcpy(guest_ptr(g, GUEST_AQ_RING + idx * 64ull), cmd64, 64);
	g->aq_head = (idx + 1) % GUEST_AQ_DEPTH;
	db = g->aq_head; /* qid 0, ring 0, new producer index */
	vfc_write(g->c, BAR2, 0 /* qtype ADMINQ * 8 */, &db, 8, true);
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

void ionic_guest_irq_rearm(struct ionic_guest *g, uint32_t credits)
{
	vfc_write32(g->c, BAR0, INTR_CTRL + 8, credits | 0x10000u, true);
}
