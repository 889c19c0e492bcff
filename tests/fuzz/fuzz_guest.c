/* The ionic device in-process behind the test client API; see fuzz_guest.h. */
#include "fuzz_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ionic/ionic_if.h"
#include "vfio_user/dma_map.h"

#define NVEC IONIC_NINTRS

static struct {
	struct vfc c;
	struct dma_map *dm;
	struct ionic_dev *dev;
	int irq_fd[NVEC];
	uint64_t tx_frames;
} fg;

/*
 * The device outlives fg_close(): its tables (16384 MRs and their page
 * tables) cost more to allocate and fault in than a whole input takes to
 * run, so every fg_open() after the first brings the kept one back to
 * power-on state (ionic_dev_reset, bus mastering off), as a new vfio-user
 * client finds it in the server. An input whose outcome depended on an
 * earlier one would be a reset that forgets something, itself a bug.
 */
static struct ionic_dev *kept_dev;

static void raise_irq(void *ctx, uint32_t vector)
{
	uint64_t one = 1;

	(void)ctx;
	if (vector < NVEC && fg.irq_fd[vector] >= 0 && write(fg.irq_fd[vector], &one, sizeof(one)) < 0)
		abort(); /* the eventfds are ours and never full: a failed write is a harness bug */
}

static struct dma_map *guest_dma(void *ctx)
{
	(void)ctx;
	return fg.dm;
}

static void tx_frame(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	(void)frame;
	if (len == 0 || len > 16384)
		abort(); /* the device promised frames of its gather buffer's size at most */
	fg.tx_frames++;
}

/* The device's view of the guest memory ionic_guest_keep_memory() keeps: mapped once. */
static struct {
	dev_t dev;
	ino_t ino;
	uint64_t offset, size;
	void *host;
} kept_map;

static void unmap_host(void *host, uint64_t size, void *arg)
{
	(void)arg;
	if (host && host != kept_map.host)
		munmap(host, (size_t)size);
}

struct vfc *fg_open(void)
{
	struct ionic_dev_config cfg = { .mac = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 } };
	struct ionic_dev_env env = { .raise_irq = raise_irq, .dma = guest_dma, .tx_frame = tx_frame };

	ionic_guest_keep_memory();
	memset(&fg, 0, sizeof(fg));
	for (int i = 0; i < NVEC; i++)
		fg.irq_fd[i] = -1;
	fg.dm = dma_map_new(64);
	if (kept_dev == NULL)
		kept_dev = ionic_dev_new(&cfg, &env);
	else
		ionic_dev_reset(kept_dev);
	fg.dev = kept_dev;
	if (fg.dm == NULL || fg.dev == NULL)
		abort();
	ionic_dev_set_bus_master(fg.dev, false);
	fg.c.fd = -1;
	return &fg.c;
}

void fg_close(void)
{
	for (int i = 0; i < NVEC; i++)
		if (fg.irq_fd[i] >= 0)
			close(fg.irq_fd[i]);
	ionic_dev_reset(fg.dev); /* before its guest memory goes: nothing may still point into it */
	dma_map_clear(fg.dm, unmap_host, NULL);
	dma_map_free(fg.dm);
	memset(&fg, 0, sizeof(fg));
}

struct ionic_dev *fg_dev(void)
{
	return fg.dev;
}

void fg_mem_write(struct ionic_guest *g, struct fz *f)
{
	uint64_t off = (uint64_t)fz_u16(f) * 64;
	size_t n = fz_u8(f), got;
	const uint8_t *p;

	if (n > GUEST_SIZE - off)
		n = GUEST_SIZE - off;
	p = fz_ptr(f, n, &got);
	memcpy(g->mem + off, p, got);
}

int fg_rdma_up(struct fg_rdma *r, struct vfc *c)
{
	int rc;

	memset(r, 0, sizeof(*r));
	if (ionic_guest_setup(&r->g, c))
		return -1;
	rc = rg_probe(&r->g, &r->eq, &r->acq, &r->aq, 8, 4);
	return rc ? rc - 1 : 0;
}

void fg_rdma_down(struct fg_rdma *r)
{
	rg_eq_close(&r->eq);
	ionic_guest_teardown(&r->g);
}

void fg_rdma_admin(struct fg_rdma *r, struct fz *f)
{
	uint8_t op = fz_u8(f), payload[255], cqe[RG_CQE_SIZE];
	uint16_t len = fz_u16(f);
	size_t n = fz_u8(f);

	n = fz_take(f, payload, n);
	rg_aq_put(&r->g, &r->aq, op, len, payload, n);
	rg_aq_ring(&r->g, &r->aq);
	while (rg_cq_poll(&r->g, &r->acq, cqe))
		;
	rg_cq_ack(&r->g, &r->acq);
}

void fg_doorbell(struct ionic_guest *g, struct fz *f)
{
	uint32_t page = fz_u8(f) % IONIC_NDBPGS_PER_LIF, qtype = fz_u8(f) % 16, qid = fz_u32(f);
	uint32_t ring = fz_u8(f), index = fz_u16(f);

	rg_db_page(g, page, qtype, qid, ring, index);
}

static const uint8_t qp_types[3] = { RG_QPT_RC, RG_QPT_UC, RG_QPT_UD };

int fg_wqe_world_up(struct fg_wqe_world *w, struct fz *f)
{
	uint8_t h[8], tmpl[RG_ROCE4_HDR_LEN];
	static const uint8_t mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
	uint64_t pages[16];
	uint8_t page_log2;
	uint16_t access;

	fz_take(f, h, sizeof(h));
	if (fg_rdma_up(&w->r, fg_open()))
		return -1;
	for (uint32_t i = 0; i < W_NCQ; i++) {
		if (rg_cq_create(&w->r.g, &w->cq[i], 10 + i, 0, 8, W_CQ(i)))
			return -2;
	}
	access = h[6] & (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ | RG_QPF_REMOTE_ATOMIC);
	for (int k = 0; k < 2; k++) {
		struct rg_qp *q = &w->qp[k];

		memset(q, 0, sizeof(*q));
		q->id = 20 + (uint32_t)k;
		q->type = qp_types[h[k] % 3];
		q->pd = 1;
		q->priv_flags = k == 0 && (h[5] & 2) ? RG_QPF_PRIVILEGED : 0;
		q->sq_cq = 10 + 2 * (uint32_t)k;
		q->rq_cq = 11 + 2 * (uint32_t)k;
		q->sq = W_SQ(k);
		q->rq = W_RQ(k);
		q->sq_depth_log2 = q->rq_depth_log2 = (uint8_t)(h[2] % 7 + 2);
		q->sq_stride_log2 = q->rq_stride_log2 = (uint8_t)(h[3] % 3 + 6);
		if (rg_qp_create(&w->r.g, &w->r.aq, q))
			return -3;
	}
	for (int k = 0; k < 2; k++) {
		uint32_t arg = w->qp[k].type == RG_QPT_UD ? 0x11110000u + (uint32_t)k : w->qp[k ^ 1].id;

		if (rg_qp_to_rts(&w->r.g, &w->r.aq, &w->qp[k], arg, access))
			return -4;
	}
	if (rg_mr_create(&w->r.g, &w->r.aq, 1, 0x01, 1, W_BUF, W_BUF_LEN, 1, W_BUF, h[4] & 0xf, 12))
		return -5;
	page_log2 = (uint8_t)(h[7] % 5 + 12);
	if (h[5] & 1) {
		for (unsigned i = 0; i < 16; i++)
			pages[i] = W_BUF + ((uint64_t)i << 12);
		if (rg_mr_create_pages(&w->r.g, &w->r.aq, 2, 0x02, 1, 0x10000000, 16u << 12, pages, 16, W_LIST,
				       RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12))
			return -6;
	} else if (rg_mr_create(&w->r.g, &w->r.aq, 2, 0x02, 1, 0, 0, 0, 0, RG_MRF_FAST_REG, page_log2)) {
		return -6;
	}
	rg_roce4_template(tmpl, mac, mac, 0xc0a8c803u, 0xc0a8c803u, 0, 64);
	if (rg_ah_create(&w->r.g, &w->r.aq, 1, 1, W_AHT, tmpl, sizeof(tmpl)))
		return -7;
	return 0;
}

uint64_t fg_tx_frames(void)
{
	return fg.tx_frames;
}

/* ---- the client API the guest helpers use ---- */

static int dma_map_cmd(const void *req, size_t len, const int *fds, unsigned nfds)
{
	struct vfu_dma_map m;
	struct stat st;
	void *host;
	int rc, seals;

	if (len < sizeof(m) || nfds != 1)
		return EINVAL;
	memcpy(&m, req, sizeof(m));
	if (fstat(fds[0], &st) < 0 || (uint64_t)st.st_size < m.offset || m.size > (uint64_t)st.st_size - m.offset)
		return EINVAL;
	if (kept_map.host && st.st_dev == kept_map.dev && st.st_ino == kept_map.ino && m.offset == kept_map.offset &&
	    m.size == kept_map.size) {
		host = kept_map.host;
	} else {
		host = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], (off_t)m.offset);
		if (host == MAP_FAILED)
			return errno;
		if (!kept_map.host && m.size == GUEST_SIZE) {
			kept_map.dev = st.st_dev;
			kept_map.ino = st.st_ino;
			kept_map.offset = m.offset;
			kept_map.size = m.size;
			kept_map.host = host;
		}
	}
	/* as the server: memory sealed against shrinking cannot fault (ionic_guest_seal_memory) */
	seals = fcntl(fds[0], F_GET_SEALS);
	rc = dma_map_add(fg.dm, m.iova, m.size, host,
			 DMA_PROT_READ | DMA_PROT_WRITE | (seals >= 0 && (seals & F_SEAL_SHRINK) ? DMA_MAP_NOFAULT : 0));
	if (rc) {
		munmap(host, m.size);
		return -rc;
	}
	return 0;
}

static int set_irqs_cmd(const void *req, size_t len, const int *fds, unsigned nfds)
{
	struct vfu_irq_set s;

	if (len < sizeof(s))
		return EINVAL;
	memcpy(&s, req, sizeof(s));
	if (s.index != VFU_PCI_MSIX_IRQ || s.start > NVEC || s.count > NVEC - s.start || nfds != s.count)
		return EINVAL;
	for (unsigned i = 0; i < nfds; i++) {
		int fd = dup(fds[i]);

		if (fd < 0)
			return errno;
		if (fg.irq_fd[s.start + i] >= 0)
			close(fg.irq_fd[s.start + i]);
		fg.irq_fd[s.start + i] = fd;
	}
	return 0;
}

int vfc_call(struct vfc *c, uint16_t cmd, const void *req, size_t len, const int *fds, unsigned nfds,
	     void *reply, size_t cap, size_t *rlen, uint32_t *err)
{
	(void)c;
	(void)reply;
	(void)cap;
	*rlen = 0;
	if (cmd == VFU_CMD_DMA_MAP)
		*err = (uint32_t)dma_map_cmd(req, len, fds, nfds);
	else if (cmd == VFU_CMD_DEVICE_SET_IRQS)
		*err = (uint32_t)set_irqs_cmd(req, len, fds, nfds);
	else
		*err = ENOTSUP;
	return 0;
}

static int region_access(uint32_t r, uint64_t off, void *buf, uint32_t len, bool is_write)
{
	/* The bounds the vfio-user server and the PCI glue check before the device sees an access. */
	if (r == 0 && off < IONIC_BAR0_MSIX_TABLE_OFFSET && len <= IONIC_BAR0_MSIX_TABLE_OFFSET - off)
		return ionic_dev_bar0_access(fg.dev, off, buf, len, is_write);
	if (r == 2 && off < IONIC_BAR2_SIZE && len <= IONIC_BAR2_SIZE - off)
		return ionic_dev_bar2_access(fg.dev, off, buf, len, is_write);
	/* The command register's Bus Master Enable, as the PCI glue passes it on (pci_set_master). */
	if (r == VFU_PCI_CONFIG_REGION && is_write && off <= 4 && len > 4 - off)
		ionic_dev_set_bus_master(fg.dev, (((const uint8_t *)buf)[4 - off] & 0x4) != 0);
	/* The rest of configuration space and the MSI-X table: nothing the device model needs. */
	if (!is_write)
		memset(buf, 0, len);
	return 0;
}

/* An access, then one slice of the device's long work, as the server's loop runs one per turn. */
static int region(uint32_t r, uint64_t off, void *buf, uint32_t len, bool is_write)
{
	int rc = region_access(r, off, buf, len, is_write);

	ionic_dev_work(fg.dev);
	return rc;
}

int vfc_read(struct vfc *c, uint32_t r, uint64_t off, void *buf, uint32_t len)
{
	(void)c;
	return region(r, off, buf, len, false);
}

int vfc_write(struct vfc *c, uint32_t r, uint64_t off, const void *buf, uint32_t len, bool posted)
{
	uint8_t tmp[256];

	(void)c;
	(void)posted;
	if (len > sizeof(tmp))
		return EINVAL;
	memcpy(tmp, buf, len);
	return region(r, off, tmp, len, true);
}

uint32_t vfc_read32(struct vfc *c, uint32_t r, uint64_t off)
{
	uint32_t v = 0;

	vfc_read(c, r, off, &v, 4);
	return v;
}

void vfc_write32(struct vfc *c, uint32_t r, uint64_t off, uint32_t v, bool posted)
{
	vfc_write(c, r, off, &v, 4, posted);
}

/* No region is offered for mapping: the helpers ring every doorbell through vfc_write. */
int vfc_map_region(struct vfc *c, uint32_t index, struct vfc_map *m)
{
	(void)c;
	(void)index;
	memset(m, 0, sizeof(*m));
	return -ENODEV;
}

void vfc_unmap_region(struct vfc_map *m)
{
	m->base = NULL;
}
