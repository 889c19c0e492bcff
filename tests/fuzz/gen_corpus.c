/*
 * gen-corpus: writes the seed corpus of every fuzz target into
 * DIR/<target>/ (tests/fuzz/corpus/ in the tree), one small file per seed,
 * named by what it holds. The seeds are what the tests send: valid
 * messages first, so a campaign starts past the checks of the first byte.
 *
 * The ionic seeds are recorded, not written by hand: the guest helpers of
 * tests/lib (the ones ionic-rdma-ci and vfio-user-ci drive the device with)
 * run against the in-process device (fuzz_guest.h), and the admin-queue
 * slots and WQEs they put in guest memory are copied out into the targets'
 * operation records.
 *
 * usage: gen-corpus DIR   (run by hand after a change to a target's input layout)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "fabric/roce_wire.h"
#include "util/inet_csum.h"
#include "fuzz_guest.h"
#include "fuzz_roce_rc.h"
#include "fuzz_roce_wire.h"
#include "ionic/ionic_if.h"
#include "nvmeof/nvme_spec.h"
#include "s3/s3_token.h"
#include "vfio_user/vfu_proto.h"

/* ---- a seed being built ---- */

struct seed {
	uint8_t d[16384];
	size_t n;
	bool in_super;          /* fuzz-roce-wire: fw_frame() writes a SUPER's argument lists */
};

static const char *outdir;
static unsigned nfiles;

static void put(struct seed *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->d))
		abort();
	if (n)
		memcpy(s->d + s->n, p, n);
	s->n += n;
}

static void p8(struct seed *s, uint8_t v) { put(s, &v, 1); }
static void p16(struct seed *s, uint16_t v) { uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) }; put(s, b, 2); }
static void p32(struct seed *s, uint32_t v) { p16(s, (uint16_t)v); p16(s, (uint16_t)(v >> 16)); }
static void p64(struct seed *s, uint64_t v) { p32(s, (uint32_t)v); p32(s, (uint32_t)(v >> 32)); }
static void pstr(struct seed *s, const char *str) { put(s, str, strlen(str)); }

static void w16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void w64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void b16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void b32(uint8_t *p, uint32_t v) { b16(p, (uint16_t)(v >> 16)); b16(p + 2, (uint16_t)v); }
static void b64(uint8_t *p, uint64_t v) { b32(p, (uint32_t)(v >> 32)); b32(p + 4, (uint32_t)v); }

static void emit(const char *target, const char *name, const struct seed *s)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(s->d, 1, s->n, f) != s->n || fclose(f))
		abort();
	nfiles++;
}

/* ---- fuzz-vfio-user: messages as QEMU sends them ---- */

static uint16_t msg_id;

static void vmsg(struct seed *s, uint16_t cmd, uint32_t flags, const void *payload, size_t len)
{
	struct vfu_hdr h = { .msg_id = msg_id++, .command = cmd, .size = (uint32_t)(sizeof(h) + len), .flags = flags };

	put(s, &h, sizeof(h));
	put(s, payload, len);
}

static void v_version(struct seed *s)
{
	static const char caps[] = "{\"capabilities\":{\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,"
				   "\"pgsizes\":4096,\"max_dma_maps\":65535,\"migration\":{}}}";
	uint8_t p[4 + sizeof(caps)] = { 0, 0, 2, 0 };

	memcpy(p + 4, caps, sizeof(caps));
	vmsg(s, VFU_CMD_VERSION, 0, p, sizeof(p));
}

static void v_write(struct seed *s, uint32_t region, uint64_t off, const void *data, uint32_t len, bool posted)
{
	uint8_t p[16 + 256];
	struct vfu_region_rw rw = { .offset = off, .region = region, .count = len };

	memcpy(p, &rw, sizeof(rw));
	memcpy(p + 16, data, len);
	vmsg(s, VFU_CMD_REGION_WRITE, posted ? VFU_F_NO_REPLY : 0, p, 16 + len);
}

static void v_read(struct seed *s, uint32_t region, uint64_t off, uint32_t len)
{
	struct vfu_region_rw rw = { .offset = off, .region = region, .count = len };

	vmsg(s, VFU_CMD_REGION_READ, 0, &rw, sizeof(rw));
}

static void v_map(struct seed *s, uint64_t iova, uint64_t size)
{
	struct vfu_dma_map m = { .argsz = sizeof(m), .flags = VFU_DMA_READ | VFU_DMA_WRITE, .iova = iova, .size = size };

	vmsg(s, VFU_CMD_DMA_MAP, 0, &m, sizeof(m));
}

static void v_devcmd(struct seed *s, const uint8_t cmd[64])
{
	uint32_t one = 1, zero = 0;

	v_write(s, 0, 0x808, cmd, 64, true);
	v_write(s, 0, 0x804, &zero, 4, true);
	v_write(s, 0, 0x800, &one, 4, true);
	v_read(s, 0, 0x804, 4);
	v_read(s, 0, 0x848, 16);
}

static void gen_vfio_user(void)
{
	const char *t = "fuzz-vfio-user";
	struct seed s;
	uint8_t cmd[64];
	uint16_t cfg_cmd = 6;

	s.n = 0;
	v_version(&s);
	emit(t, "version", &s);
	{
		struct vfu_device_info di = { .argsz = sizeof(di) };
		struct vfu_irq_info ii = { .argsz = sizeof(ii), .index = VFU_PCI_MSIX_IRQ };

		vmsg(&s, VFU_CMD_DEVICE_GET_INFO, 0, &di, sizeof(di));
		for (uint32_t i = 0; i < 9; i++) {
			struct vfu_region_info ri = { .argsz = sizeof(ri), .index = i };

			vmsg(&s, VFU_CMD_DEVICE_GET_REGION_INFO, 0, &ri, sizeof(ri));
		}
		vmsg(&s, VFU_CMD_DEVICE_GET_IRQ_INFO, 0, &ii, sizeof(ii));
	}
	emit(t, "info", &s);

	s.n = 0;
	v_version(&s);
	v_read(&s, 7, 0, 64);
	v_write(&s, 7, 4, &cfg_cmd, 2, false);
	v_read(&s, 7, 0x40, 64);
	v_read(&s, 0, 0, 256);
	emit(t, "config-bar0", &s);

	s.n = 0;
	v_version(&s);
	{
		struct vfu_irq_set is = { .argsz = sizeof(is), .flags = VFU_IRQ_SET_DATA_EVENTFD | VFU_IRQ_SET_ACTION_TRIGGER,
					  .index = VFU_PCI_MSIX_IRQ, .start = 0, .count = 2 };
		uint8_t b[sizeof(is) + 2];
		struct vfu_irq_set m = { .argsz = sizeof(b), .flags = VFU_IRQ_SET_DATA_BOOL | VFU_IRQ_SET_ACTION_MASK,
					 .index = VFU_PCI_MSIX_IRQ, .start = 0, .count = 2 };

		vmsg(&s, VFU_CMD_DEVICE_SET_IRQS, 0, &is, sizeof(is));
		memcpy(b, &m, sizeof(m));
		b[sizeof(m)] = 1;
		b[sizeof(m) + 1] = 0;
		vmsg(&s, VFU_CMD_DEVICE_SET_IRQS, 0, b, sizeof(b));
		m.flags = VFU_IRQ_SET_DATA_BOOL | VFU_IRQ_SET_ACTION_UNMASK;
		memcpy(b, &m, sizeof(m));
		vmsg(&s, VFU_CMD_DEVICE_SET_IRQS, 0, b, sizeof(b));
		m.flags = VFU_IRQ_SET_DATA_BOOL | VFU_IRQ_SET_ACTION_TRIGGER;
		memcpy(b, &m, sizeof(m));
		vmsg(&s, VFU_CMD_DEVICE_SET_IRQS, 0, b, sizeof(b));
	}
	emit(t, "irqs", &s);

	/* The driver's probe: map memory, RESET, IDENTIFY, LIF_INIT, the admin queue, a NOP through it. */
	s.n = 0;
	v_version(&s);
	v_map(&s, GUEST_IOVA, 1u << 20);
	v_write(&s, 7, 4, &cfg_cmd, 2, false);
	memset(cmd, 0, 64);
	cmd[0] = IONIC_CMD_RESET;
	v_devcmd(&s, cmd);
	memset(cmd, 0, 64);
	cmd[0] = IONIC_CMD_IDENTIFY;
	cmd[2] = 1;
	v_devcmd(&s, cmd);
	v_read(&s, 0, 0x1000, 256);
	emit(t, "map-reset-identify", &s);
	memset(cmd, 0, 64);
	cmd[0] = IONIC_CMD_LIF_INIT;
	w64(cmd + 8, GUEST_LIF_INFO);
	v_devcmd(&s, cmd);
	memset(cmd, 0, 64);
	cmd[0] = IONIC_CMD_Q_INIT;
	w16(cmd + 16, 3);
	cmd[19] = 4;
	w64(cmd + 20, GUEST_AQ_RING);
	w64(cmd + 28, GUEST_AQ_CQ);
	v_devcmd(&s, cmd);
	{
		uint64_t db = 1;

		v_write(&s, 2, 0, &db, 8, true);
	}
	emit(t, "lif-adminq", &s);
	{
		struct vfu_dma_unmap u = { .argsz = sizeof(u), .iova = GUEST_IOVA, .size = 1u << 20 };

		vmsg(&s, VFU_CMD_DMA_UNMAP, 0, &u, sizeof(u));
		vmsg(&s, VFU_CMD_DEVICE_RESET, 0, NULL, 0);
	}
	emit(t, "unmap-reset", &s);

	s.n = 0;
	v_version(&s);
	{
		uint8_t b[8 + 2 * 24];
		struct vfu_write_multi wm = { .wr_cnt = 2 };
		struct vfu_write_one one = { .offset = 0x2000, .region = 0, .count = 4 };

		memcpy(b, &wm, 8);
		memcpy(b + 8, &one, sizeof(one));
		one.offset = 0;
		one.region = 2;
		one.count = 8;
		memcpy(b + 32, &one, sizeof(one));
		vmsg(&s, VFU_CMD_REGION_WRITE_MULTI, VFU_F_NO_REPLY, b, sizeof(b));
	}
	emit(t, "write-multi", &s);

	s.n = 0;
	v_version(&s);
	{
		struct vfu_hdr h = { .msg_id = 9, .command = VFU_CMD_REGION_READ, .size = 8 };

		put(&s, &h, sizeof(h));
	}
	emit(t, "bad-size", &s);
}

/* ---- fuzz-ionic-cmd ---- */

static void gen_ionic_cmd(void)
{
	static const uint8_t ops[] = {
		IONIC_CMD_NOP, IONIC_CMD_IDENTIFY, IONIC_CMD_INIT, IONIC_CMD_RESET, IONIC_CMD_GETATTR, IONIC_CMD_SETATTR,
		IONIC_CMD_PORT_IDENTIFY, IONIC_CMD_PORT_INIT, IONIC_CMD_PORT_RESET, IONIC_CMD_PORT_GETATTR,
		IONIC_CMD_PORT_SETATTR, IONIC_CMD_LIF_IDENTIFY, IONIC_CMD_LIF_INIT, IONIC_CMD_LIF_RESET,
		IONIC_CMD_LIF_GETATTR, IONIC_CMD_LIF_SETATTR, IONIC_CMD_Q_IDENTIFY, IONIC_CMD_Q_INIT,
		IONIC_CMD_Q_CONTROL, IONIC_CMD_RX_MODE_SET, IONIC_CMD_RX_FILTER_ADD, IONIC_CMD_RX_FILTER_DEL,
	};
	const char *t = "fuzz-ionic-cmd";
	struct seed s;
	char name[64];

	for (size_t i = 0; i < sizeof(ops); i++) {
		for (int via = 0; via < 2; via++) {
			uint8_t cmd[64] = { ops[i] };

			/* The fields most commands carry: an index, a type/attribute byte, a guest address. */
			cmd[2] = 1;
			cmd[4] = 1;
			w64(cmd + 8, GUEST_IOVA + 0x20000);
			w64(cmd + 24, GUEST_IOVA + 0x21000);
			s.n = 0;
			p8(&s, (uint8_t)via);
			put(&s, cmd, 64);
			p8(&s, 5);
			p16(&s, 0x800);
			p8(&s, 0x58);
			snprintf(name, sizeof(name), "%s-%u", via ? "adminq" : "devcmd", ops[i]);
			emit(t, name, &s);
		}
	}
	/* Q_INIT of TX 0 with its rings, enabled by Q_CONTROL, on the admin queue; a filter; an interrupt. */
	{
		uint8_t cmd[64] = { IONIC_CMD_Q_INIT, 0, 0, 0, 3, 1 };

		w16(cmd + 14, 1);
		w16(cmd + 16, 0x5);
		cmd[19] = 4;
		w64(cmd + 20, GUEST_TX_RING);
		w64(cmd + 28, GUEST_TX_CQ);
		w64(cmd + 36, GUEST_TX_SG);
		s.n = 0;
		p8(&s, 1);
		put(&s, cmd, 64);
		memset(cmd, 0, 64);
		cmd[0] = IONIC_CMD_Q_CONTROL;
		cmd[1] = 3;
		cmd[8] = 1;
		p8(&s, 1);
		put(&s, cmd, 64);
		memset(cmd, 0, 64);
		cmd[0] = IONIC_CMD_RX_FILTER_ADD;
		w16(cmd + 4, 1);
		cmd[8] = 0x02;
		cmd[13] = 0x42;
		p8(&s, 1);
		put(&s, cmd, 64);
		p8(&s, 3);
		p16(&s, 0x2000 + 8);
		p32(&s, 0x10001);
		p8(&s, 4);
		p32(&s, 0);
		p64(&s, 5);
		emit(t, "txq-filter-intr", &s);
	}
}

/* ---- fuzz-ionic-tx ---- */

static void eth_frame(uint8_t *f, size_t len, const uint8_t *dst)
{
	static const uint8_t src[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };

	memset(f, 0, len);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	for (size_t i = 14; i < len; i++)
		f[i] = (uint8_t)i;
}

static void tx_desc(struct seed *s, uint64_t addr, uint16_t len, unsigned nsge, const uint64_t *sg_addr,
		    const uint16_t *sg_len)
{
	uint8_t d[16] = { 0 };
	uint64_t cmd = addr << IONIC_TXQ_DESC_ADDR_SHIFT | (uint64_t)nsge << IONIC_TXQ_DESC_NSGE_SHIFT;

	w64(d, cmd);
	w16(d + 8, len);
	p8(s, 0);
	p8(s, (uint8_t)nsge);
	put(s, d, 16);
	for (unsigned i = 0; i < nsge; i++) {
		uint8_t e[16] = { 0 };

		w64(e, sg_addr[i]);
		w16(e + 8, sg_len[i]);
		put(s, e, 16);
	}
}

static void gen_ionic_tx(void)
{
	const char *t = "fuzz-ionic-tx";
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t guest[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
	uint8_t f[255];
	struct seed s;
	uint64_t sga[2] = { GUEST_TX_BUF + 0x1000, GUEST_TX_BUF + 0x2000 };
	uint16_t sgl[2] = { 100, 200 };

	/* A frame in TX buffer 0 (memory op), then its descriptor. */
	eth_frame(f, sizeof(f), bcast);
	s.n = 0;
	p8(&s, 1);
	p16(&s, (uint16_t)((GUEST_TX_BUF - GUEST_IOVA) / 64));
	p8(&s, 60);
	put(&s, f, 60);
	tx_desc(&s, GUEST_TX_BUF, 60, 0, NULL, NULL);
	emit(t, "one-frame", &s);
	tx_desc(&s, GUEST_TX_BUF, 14, 2, sga, sgl);
	emit(t, "frame-with-sg", &s);
	for (int i = 0; i < 17; i++)
		tx_desc(&s, GUEST_TX_BUF, 60, 0, NULL, NULL);
	emit(t, "ring-wrap", &s);

	s.n = 0;
	tx_desc(&s, GUEST_TX_BUF, 60, 0, NULL, NULL);
	s.d[2] = (uint8_t)(1u << IONIC_TXQ_DESC_OPCODE_SHIFT); /* an offload opcode: never granted */
	tx_desc(&s, GUEST_TX_BUF, 9100, 0, NULL, NULL);
	tx_desc(&s, 0x7f000000, 60, 0, NULL, NULL);
	emit(t, "refused", &s);

	s.n = 0;
	eth_frame(f, sizeof(f), guest);
	p8(&s, 4);
	p16(&s, 200);
	put(&s, f, 200);
	eth_frame(f, sizeof(f), bcast);
	p8(&s, 4);
	p16(&s, 64);
	put(&s, f, 64);
	emit(t, "rx-frames", &s);

	s.n = 0;
	p8(&s, 2);
	p8(&s, 3);
	p64(&s, 5);
	p8(&s, 2);
	p8(&s, 2);
	p64(&s, 15);
	emit(t, "doorbells", &s);
}

/* ---- fuzz-rdma-admin and fuzz-rdma-wqe: recorded from the guest helpers ---- */

/* The RDMA admin-queue slots a helper wrote since prod `from`, as target records (op 0). */
static void rec_admin(struct seed *s, struct fg_rdma *r, uint32_t from, uint8_t opcode)
{
	uint32_t mask = (1u << r->aq.depth_log2) - 1;
	uint8_t payload[255];
	size_t n = 0;

	for (uint32_t i = from; i != r->aq.prod; i++) {
		const uint8_t *slot = guest_ptr(&r->g, r->aq.ring + (uint64_t)(i & mask) * RG_AQ_STRIDE);
		size_t off = i == from ? RG_AQ_HDR_LEN : 0;

		if (i == from) {
			p8(s, opcode);
			p8(s, slot[0]);
			put(s, slot + 2, 2);
		}
		for (size_t k = off; k < RG_AQ_STRIDE && n < sizeof(payload); k++)
			payload[n++] = slot[k];
	}
	while (n && payload[n - 1] == 0)
		n--;
	p8(s, (uint8_t)n);
	put(s, payload, n);
}

/* Guest memory [addr, addr + len) as memory records (op `opcode`, 64-byte aligned pieces). */
static void rec_mem(struct seed *s, struct ionic_guest *g, uint8_t opcode, uint64_t addr, size_t len)
{
	uint64_t a = (addr - GUEST_IOVA) & ~63ull, end = addr - GUEST_IOVA + len;

	while (a < end) {
		size_t n = end - a < 192 ? (size_t)(end - a) : 192;

		p8(s, opcode);
		p16(s, (uint16_t)(a / 64));
		p8(s, (uint8_t)n);
		put(s, g->mem + a, n);
		a += n;
	}
}

static void gen_rdma_admin(void)
{
	const char *t = "fuzz-rdma-admin";
	struct fg_rdma r;
	struct seed s;
	uint32_t from;
	struct rg_qp qp;
	uint8_t tmpl[RG_ROCE4_HDR_LEN];
	static const uint8_t mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
	uint64_t pages[4] = { RG_SCRATCH + 0x40000, RG_SCRATCH + 0x41000, RG_SCRATCH + 0x42000, RG_SCRATCH + 0x43000 };

	if (fg_rdma_up(&r, fg_open()))
		abort();
	s.n = 0;
	memset(&qp, 0, sizeof(qp));
	qp.id = 5;
	qp.type = RG_QPT_RC;
	qp.pd = 1;
	qp.sq = RG_SCRATCH;
	qp.rq = RG_SCRATCH + 0x10000;
	qp.sq_depth_log2 = qp.rq_depth_log2 = 4;
	qp.sq_stride_log2 = qp.rq_stride_log2 = 6;
	from = r.aq.prod;
	if (rg_qp_create(&r.g, &r.aq, &qp))
		abort();
	rec_admin(&s, &r, from, 0);
	emit(t, "create-qp", &s);
	for (uint8_t st = RG_QPS_INIT; st <= RG_QPS_RTS; st++) {
		from = r.aq.prod;
		if (rg_qp_modify(&r.g, &r.aq, &qp, st, (uint8_t)(st - 1), 6, RG_QPF_REMOTE_WRITE))
			abort();
		rec_admin(&s, &r, from, 0);
	}
	emit(t, "qp-to-rts", &s);
	from = r.aq.prod;
	rg_qp_state(&r.g, &r.aq, 5, RG_SCRATCH + 0x30000);
	rec_admin(&s, &r, from, 0);
	from = r.aq.prod;
	rg_qp_destroy(&r.g, &r.aq, 5);
	rec_admin(&s, &r, from, 0);
	emit(t, "qp-query-destroy", &s);

	s.n = 0;
	from = r.aq.prod;
	if (rg_mr_create(&r.g, &r.aq, 3, 0x33, 1, RG_SCRATCH + 0x40000, 0x4000, 1, RG_SCRATCH + 0x40000,
			 RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_READ, 12))
		abort();
	rec_admin(&s, &r, from, 0);
	emit(t, "create-mr", &s);
	from = r.aq.prod;
	if (rg_mr_create_pages(&r.g, &r.aq, 4, 0x44, 1, 0x7000000, 0x4000, pages, 4, RG_SCRATCH + 0x50000,
			       RG_MRF_REMOTE_WRITE, 12))
		abort();
	s.n = 0;
	rec_mem(&s, &r.g, 1, RG_SCRATCH + 0x50000, sizeof(pages));
	rec_admin(&s, &r, from, 0);
	from = r.aq.prod;
	rg_mr_destroy(&r.g, &r.aq, RG_KEY(4, 0x44));
	rec_admin(&s, &r, from, 0);
	emit(t, "mr-pages-destroy", &s);

	rg_roce4_template(tmpl, mac, mac, 0xc0a8c803u, 0xc0a8c801u, 0, 64);
	from = r.aq.prod;
	if (rg_ah_create(&r.g, &r.aq, 2, 1, RG_SCRATCH + 0x60000, tmpl, sizeof(tmpl)))
		abort();
	s.n = 0;
	rec_mem(&s, &r.g, 1, RG_SCRATCH + 0x60000, sizeof(tmpl));
	rec_admin(&s, &r, from, 0);
	emit(t, "create-ah", &s);

	/* Commands without a helper: header and payload as the opcodes want them. */
	for (uint8_t op = 0; op <= RG_OP_QP_STATS_HDRS; op++) {
		uint8_t payload[64] = { 0 };
		char name[32];

		b32(payload, 10);            /* an id */
		b64(payload + 8, RG_SCRATCH + 0x70000);
		b32(payload + 16, 4096);
		s.n = 0;
		p8(&s, 0);
		p8(&s, op);
		p16(&s, 60);
		p8(&s, 60);
		put(&s, payload, 60);
		p8(&s, 4);
		snprintf(name, sizeof(name), "op-%u", op);
		emit(t, name, &s);
	}
	/* The queue-level commands on the Ethernet admin queue: CREATE_CQ 7 on EQ 0, then a CQ doorbell. */
	{
		uint32_t before = r.g.aq_head;
		struct rg_cq cq;

		if (rg_cq_create(&r.g, &cq, 7, 0, 4, RG_SCRATCH + 0x80000))
			abort();
		s.n = 0;
		p8(&s, 3);
		put(&s, guest_ptr(&r.g, GUEST_AQ_RING + before * 64ull), 64);
		p8(&s, 2);
		p8(&s, 0);
		p8(&s, RG_QTYPE_CQ);
		p32(&s, 7);
		p8(&s, 1);
		p16(&s, 1);
		emit(t, "queue-create-cq", &s);
	}
	fg_rdma_down(&r);
	fg_close();
}

/* One fuzz-rdma-wqe seed: the header, then WQEs recorded from the helpers (see wqe_script). */
struct wseed {
	struct seed s;
	struct fg_wqe_world w;
};

static void wqe_rec(struct wseed *ws, int k, bool rq)
{
	struct rg_qp *q = &ws->w.qp[k];
	uint32_t idx = (rq ? q->rq_prod : q->sq_prod) - 1;
	uint64_t slot = rq ? rg_rq_slot(q, idx) : rg_sq_slot(q, idx);
	const uint8_t *p = guest_ptr(&ws->w.r.g, slot);
	size_t n = (size_t)1 << q->sq_stride_log2;

	if (n > 255)
		n = 255;
	while (n && p[n - 1] == 0)
		n--;
	p8(&ws->s, rq ? 1 : 0);
	p8(&ws->s, (uint8_t)k);
	p8(&ws->s, (uint8_t)n);
	put(&ws->s, p, n);
}

static void wqe_ring(struct wseed *ws, int k, bool rq)
{
	p8(&ws->s, rq ? 3 : 2);
	p8(&ws->s, (uint8_t)k);
}

static void gen_rdma_wqe(void)
{
	static const struct {
		const char *name;
		uint8_t hdr[8];
	} worlds[] = {
		{ "rc", { 0, 0, 4, 1, 0xf, 0, 7, 0 } },
		{ "uc", { 1, 1, 4, 1, 0xf, 1, 7, 0 } },
		{ "ud", { 2, 2, 4, 1, 0xf, 0, 7, 0 } },
		{ "rc-priv-small", { 0, 0, 0, 0, 0x1, 3, 3, 1 } },
	};
	const char *t = "fuzz-rdma-wqe";
	static struct wseed ws;

	for (size_t wi = 0; wi < sizeof(worlds) / sizeof(worlds[0]); wi++) {
		struct fz f = { worlds[wi].hdr, 8, 0 };
		struct rg_sge sge = { W_BUF, 64, RG_KEY(1, 0x01) }, rsge = { W_BUF + 0x1000, 256, RG_KEY(1, 0x01) };
		bool ud = worlds[wi].hdr[0] % 3 == 2;
		char name[64];

		memset(&ws, 0, sizeof(ws));
		if (fg_wqe_world_up(&ws.w, &f))
			abort();
		put(&ws.s, worlds[wi].hdr, 8);
		/* A receive on QP 21, a SEND from QP 20 that lands in it. */
		rg_post_recv(&ws.w.r.g, &ws.w.qp[1], 0x100, 0, &rsge, 1);
		wqe_rec(&ws, 1, true);
		wqe_ring(&ws, 1, true);
		if (ud)
			rg_post_ud(&ws.w.r.g, &ws.w.qp[0], 0x1, RG_WR_SEND, RG_WQE_SIG, 0, 1, 21, 0x11110001u, &sge, 1);
		else
			rg_post_send(&ws.w.r.g, &ws.w.qp[0], 0x1, RG_WR_SEND_IMM, RG_WQE_SIG | RG_WQE_SOL, 0x1234, 0, 0,
				     0, &sge, 1);
		wqe_rec(&ws, 0, false);
		wqe_ring(&ws, 0, false);
		snprintf(name, sizeof(name), "%s-send-recv", worlds[wi].name);
		emit(t, name, &ws.s);
		if (ud) {
			fg_rdma_down(&ws.w.r);
			fg_close();
			continue;
		}
		rg_post_rdma(&ws.w.r.g, &ws.w.qp[0], 0x2, RG_WR_RDMA_WRITE, RG_WQE_SIG, 0, W_BUF + 0x2000,
			     RG_KEY(1, 0x01), &sge, 1);
		wqe_rec(&ws, 0, false);
		rg_post_rdma(&ws.w.r.g, &ws.w.qp[0], 0x3, RG_WR_RDMA_READ, RG_WQE_SIG, 0, W_BUF + 0x3000,
			     RG_KEY(1, 0x01), &sge, 1);
		wqe_rec(&ws, 0, false);
		wqe_ring(&ws, 0, false);
		snprintf(name, sizeof(name), "%s-rdma", worlds[wi].name);
		emit(t, name, &ws.s);
		{
			struct rg_sge res = { W_BUF + 0x4000, 8, RG_KEY(1, 0x01) };

			rg_post_atomic(&ws.w.r.g, &ws.w.qp[0], 0x4, RG_WR_ATOMIC_CS, RG_WQE_SIG, W_BUF + 0x5000,
				       RG_KEY(1, 0x01), 7, 0, &res);
			wqe_rec(&ws, 0, false);
			rg_post_atomic(&ws.w.r.g, &ws.w.qp[0], 0x5, RG_WR_ATOMIC_FA, RG_WQE_SIG, W_BUF + 0x5000,
				       RG_KEY(1, 0x01), 1, 0, &res);
			wqe_rec(&ws, 0, false);
			wqe_ring(&ws, 0, false);
		}
		snprintf(name, sizeof(name), "%s-atomic", worlds[wi].name);
		emit(t, name, &ws.s);
		rg_post_reg_mr(&ws.w.r.g, &ws.w.qp[0], 0x6, RG_WQE_SIG, RG_KEY(2, 0x02), 0x03, 0x20000000, 0x2000, 0,
			       W_LIST, 2, RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE, 12);
		wqe_rec(&ws, 0, false);
		rg_post_local_inv(&ws.w.r.g, &ws.w.qp[0], 0x7, RG_WQE_SIG, RG_KEY(2, 0x03));
		wqe_rec(&ws, 0, false);
		wqe_ring(&ws, 0, false);
		snprintf(name, sizeof(name), "%s-reg-inv", worlds[wi].name);
		emit(t, name, &ws.s);
		fg_rdma_down(&ws.w.r);
		fg_close();
	}
}

/* ---- fuzz-http, fuzz-s3-xml, fuzz-s3-token ---- */

static void text_seed(const char *t, const char *name, uint8_t first, const char *text)
{
	struct seed s;

	s.n = 0;
	p8(&s, first);
	pstr(&s, text);
	emit(t, name, &s);
}

static void gen_http(void)
{
	const char *t = "fuzz-http";
	static const char *const reqs[][2] = {
		{ "get-list", "GET /ernic?list-type=2&prefix=a&max-keys=2 HTTP/1.1\r\nHost: x\r\n\r\n" },
		{ "put-get-head-delete",
		  "PUT /ernic/a%20b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
		  "GET /ernic/a%20b HTTP/1.1\r\nHost: x\r\nRange: bytes=1-3\r\n\r\n"
		  "HEAD /ernic/a%20b HTTP/1.1\r\nHost: x\r\n\r\n"
		  "DELETE /ernic/a%20b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" },
		{ "chunked",
		  "PUT /ernic/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		  "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"
		  "GET /ernic/c HTTP/1.1\r\nHost: x\r\n\r\n" },
		{ "aws-chunked",
		  "PUT /ernic/d HTTP/1.1\r\nHost: x\r\nContent-Encoding: aws-chunked\r\n"
		  "x-amz-decoded-content-length: 5\r\nContent-Length: 86\r\n\r\n"
		  "5;chunk-signature=0000000000000000000000000000000000000000000000000000000000000000\r\nhello\r\n"
		  "0;chunk-signature=0\r\n\r\n" },
		{ "aws-chunked-in-chunked",
		  "PUT /ernic/e HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Encoding: aws-chunked\r\n"
		  "x-amz-decoded-content-length: 3\r\n\r\n10\r\n3;x=y\r\nabc\r\n0\r\n\r\n\r\n3\r\n\r\n\r\n0\r\n\r\n" },
		{ "expect-continue",
		  "PUT /ernic/f HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\nContent-MD5: kAFQmDzST7DWlj99KOF/cg==\r\n\r\nabc" },
		{ "multipart",
		  "POST /ernic/m?uploads HTTP/1.1\r\nHost: x\r\n\r\n"
		  "GET /ernic?uploads HTTP/1.1\r\nHost: x\r\n\r\n"
		  "GET /ernic?location HTTP/1.1\r\nHost: x\r\n\r\n" },
		{ "http10-keepalive",
		  "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /ernic?list-type=2&continuation-token=x HTTP/1.1\r\nHost: x\r\n\r\n" },
		{ "bad", "GET /%zz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n" },
		{ "copy", "PUT /ernic/g HTTP/1.1\r\nHost: x\r\nx-amz-copy-source: /ernic/a\r\nContent-Length: 0\r\n\r\n" },
		{ "tools",
		  "PUT /ernic/a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nx-amz-meta-mode: 33188\r\nCache-Control: no-cache\r\n"
		  "If-None-Match: *\r\n\r\nhi"
		  "PUT /ernic/b HTTP/1.1\r\nHost: x\r\nx-amz-copy-source: ernic/a\r\nx-amz-metadata-directive: REPLACE\r\n"
		  "x-amz-copy-source-if-match: *\r\nContent-Length: 0\r\n\r\n"
		  "GET /ernic/b?partNumber=1&response-content-type=x HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"x\"\r\n"
		  "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n\r\n"
		  "GET /ernic?list-type=2&delimiter=/&start-after=a/b&encoding-type=url&fetch-owner=true HTTP/1.1\r\nHost: x\r\n\r\n"
		  "GET /ernic?uploads&key-marker=a&upload-id-marker=0&max-uploads=1 HTTP/1.1\r\nHost: x\r\n\r\n"
		  "POST /ernic?delete HTTP/1.1\r\nHost: x\r\nContent-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==\r\nContent-Length: 46\r\n\r\n"
		  "<Delete><Object><Key>a</Key></Object></Delete>" },
		{ "buckets",
		  "PUT /two HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
		  "PUT /two/k HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
		  "PUT /ernic/c HTTP/1.1\r\nHost: x\r\nx-amz-copy-source: two/k\r\nContent-Length: 0\r\n\r\n"
		  "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
		  "DELETE /two/k HTTP/1.1\r\nHost: x\r\n\r\n"
		  "DELETE /two HTTP/1.1\r\nHost: x\r\n\r\n" },
		{ "checksums",
		  "PUT /ernic/t HTTP/1.1\r\nHost: x\r\nContent-Encoding: aws-chunked\r\nx-amz-trailer: x-amz-checksum-crc32\r\n"
		  "x-amz-decoded-content-length: 9\r\nContent-Length: 52\r\n\r\n9\r\n123456789\r\n0\r\nx-amz-checksum-crc32:y/Q5Jg==\r\n\r\n"
		  "PUT /ernic/u HTTP/1.1\r\nHost: x\r\nx-amz-checksum-crc64nvme: rosUhgp5mIg=\r\nContent-Length: 9\r\n\r\n123456789"
		  "HEAD /ernic/u HTTP/1.1\r\nHost: x\r\nx-amz-checksum-mode: ENABLED\r\n\r\n"
		  "POST /ernic/m?uploads HTTP/1.1\r\nHost: x\r\nx-amz-checksum-algorithm: SHA256\r\n\r\n" },
	};

	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		text_seed(t, reqs[i][0], 255, reqs[i][1]);
		if (i < 5) {
			char name[64];

			snprintf(name, sizeof(name), "%s-split", reqs[i][0]);
			text_seed(t, name, (uint8_t)(i * 3 + 1), reqs[i][1]);
		}
	}
}

static void md5_hex(const char *s, char out[33])
{
	unsigned char d[16];
	unsigned int n = 16;

	EVP_Digest(s, strlen(s), d, &n, EVP_md5(), NULL);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void gen_s3_xml(void)
{
	const char *t = "fuzz-s3-xml";
	char e1[33], e2[33], doc[1024];

	md5_hex("part-one", e1);
	md5_hex("part-two", e2);
	snprintf(doc, sizeof(doc),
		 "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		 "<Part><PartNumber>2</PartNumber><ETag>\"%s\"</ETag></Part></CompleteMultipartUpload>", e2);
	text_seed(t, "complete-one", 0, doc);
	snprintf(doc, sizeof(doc),
		 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUpload>"
		 "<Part><ETag>%s</ETag><PartNumber>1</PartNumber></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>\"%s\"</ETag></Part></CompleteMultipartUpload>", e1, e2);
	text_seed(t, "complete-two", 0, doc);
	snprintf(doc, sizeof(doc),
		 "<s3:CompleteMultipartUpload xmlns:s3=\"urn:x\"><s3:Part><s3:PartNumber>1</s3:PartNumber>"
		 "<s3:ETag>&quot;%s&quot;</s3:ETag></s3:Part></s3:CompleteMultipartUpload>", e1);
	text_seed(t, "complete-prefixed", 0, doc);
	text_seed(t, "complete-bad-order", 0,
		  "<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>x</ETag></Part>"
		  "<Part><PartNumber>1</PartNumber><ETag>y</ETag></Part></CompleteMultipartUpload>");
	text_seed(t, "complete-entity", 0,
		  "<!DOCTYPE a [<!ENTITY e \"1\">]><CompleteMultipartUpload><Part><PartNumber>&e;</PartNumber>"
		  "<ETag>x</ETag></Part></CompleteMultipartUpload>");
	text_seed(t, "complete-empty", 0, "");
	text_seed(t, "delete", 1,
		  "<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b</Key><VersionId>1</VersionId>"
		  "</Object></Delete>");
}

static void gen_s3_token(void)
{
	const char *t = "fuzz-s3-token";
	struct s3_token tok = { .transport = S3_TRANSPORT_RC, .qpn = 0x15, .rkey = 0x101, .addr = 0x10000,
				.len = 1000, .port = 1 };
	char hex[S3_TOKEN_HEX + 1], v[512];
	struct seed s;

	tok.gid[10] = tok.gid[11] = 0xff;
	tok.gid[12] = 192;
	tok.gid[13] = 168;
	tok.gid[14] = 200;
	tok.gid[15] = 3;
	s3_token_to_hex(&tok, hex);
	s.n = 0;
	p8(&s, 0);
	pstr(&s, hex);
	emit(t, "get-bare", &s);
	p8(&s, 0);
	pstr(&s, "bytes=0-99");
	emit(t, "get-range", &s);
	s.n = 0;
	p8(&s, 1);
	pstr(&s, hex);
	emit(t, "put-bare", &s);
	snprintf(v, sizeof(v), "%s;addr=0x10100;len=500", hex);
	s.n = 0;
	p8(&s, 0);
	pstr(&s, v);
	p8(&s, 0);
	pstr(&s, "bytes=-10");
	emit(t, "get-fields-suffix", &s);
	snprintf(v, sizeof(v), "  %s  ", hex);
	s.n = 0;
	p8(&s, 1);
	pstr(&s, v);
	emit(t, "put-spaces", &s);
	snprintf(v, sizeof(v), "200:%s", hex);
	s.n = 0;
	p8(&s, 0);
	pstr(&s, v);
	emit(t, "reply-token", &s);
	text_seed(t, "reply-ok", 0, "ok");
	text_seed(t, "reply-status", 0, "206");
	s.n = 0;
	p8(&s, 0);
	pstr(&s, hex);
	p8(&s, 0);
	pstr(&s, "bytes=900-");
	emit(t, "get-open-range", &s);
	/* cuObject's descriptor for the same window: a GET, one with AIStor's window pair and a range, a PUT. */
	snprintf(v, sizeof(v), "%016llx:%08x:%08x:0000:000015:1:00000000000000000000ffffc0a8c803",
		 (unsigned long long)tok.addr, (unsigned)tok.len, (unsigned)tok.rkey);
	s.n = 0;
	p8(&s, 0);
	pstr(&s, v);
	emit(t, "cu-get", &s);
	s.n = 0;
	p8(&s, 1);
	pstr(&s, v);
	emit(t, "cu-put", &s);
	snprintf(v + strlen(v), sizeof(v) - strlen(v), ":%016llx:%016llx", (unsigned long long)tok.addr + 0x101,
		 200ull);
	s.n = 0;
	p8(&s, 0);
	pstr(&s, v);
	p8(&s, 0);
	pstr(&s, "bytes=10-209");
	emit(t, "cu-get-window", &s);
}

/* ---- fuzz-tcp ---- */

static uint16_t csum(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

#define EP_IP    0xc0a8c801u
#define PEER_IP  0xc0a8c803u

static const uint8_t peer_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
static const uint8_t ep_mac[6] = { 0x02, 0x53, 0xc0, 0xa8, 0xc8, 0x01 };

/* An Ethernet + IPv4 + TCP frame to the endpoint with correct checksums; its length. */
static size_t tcp_frame(uint8_t *f, uint32_t seq, uint32_t ack, uint8_t flags, const char *data, bool mss)
{
	size_t dl = data ? strlen(data) : 0, thl = mss ? 24 : 20, tot = 20 + thl + dl;
	uint8_t *ip = f + 14, *tcp = ip + 20, ph[12];
	uint32_t sum = 0;

	memset(f, 0, 14 + tot);
	memcpy(f, ep_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	b16(f + 12, 0x0800);
	ip[0] = 0x45;
	b16(ip + 2, (uint16_t)tot);
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = 6;
	b32(ip + 12, PEER_IP);
	b32(ip + 16, EP_IP);
	b16(ip + 10, csum(ip, 20, 0));
	b16(tcp, 40000);
	b16(tcp + 2, 9000);
	b32(tcp + 4, seq);
	b32(tcp + 8, ack);
	tcp[12] = (uint8_t)(thl / 4 << 4);
	tcp[13] = flags;
	b16(tcp + 14, 65535);
	if (mss) {
		tcp[20] = 2;
		tcp[21] = 4;
		b16(tcp + 22, 1460);
	}
	if (dl)
		memcpy(tcp + thl, data, dl);
	memcpy(ph, ip + 12, 8);
	ph[8] = 0;
	ph[9] = 6;
	b16(ph + 10, (uint16_t)(thl + dl));
	for (size_t i = 0; i < 12; i += 2)
		sum += (uint32_t)ph[i] << 8 | ph[i + 1];
	b16(tcp + 16, csum(tcp, thl + dl, sum));
	return 14 + tot;
}

static void frame_rec(struct seed *s, uint8_t kind, const uint8_t *f, size_t n)
{
	p8(s, kind);
	p16(s, (uint16_t)n);
	put(s, f, n);
}

/* The link-local addresses of the peer and the endpoint (fe80:: and the modified EUI-64 of each MAC). */
static const uint8_t peer_ll[16] = { 0xfe, 0x80, [8] = 0x00, 0x45, 0x52, 0xff, 0xfe, 0x4e, 0x49, 0x43 };
static const uint8_t ep_ll[16] = { 0xfe, 0x80, [8] = 0x00, 0x53, 0xc0, 0xff, 0xfe, 0xa8, 0xc8, 0x01 };
static const uint8_t ep_snode[16] = { 0xff, 0x02, [11] = 0x01, 0xff, 0xa8, 0xc8, 0x01 };
static const uint8_t ep_group_mac[6] = { 0x33, 0x33, 0xff, 0xa8, 0xc8, 0x01 };

/* An Ethernet + IPv6 + ICMPv6 frame from the peer's MAC carrying msg[0..mlen) with its checksum; its length. */
static size_t icmp6_frame(uint8_t *f, const uint8_t *dmac, const uint8_t *src, const uint8_t *dst, uint8_t hlim,
			  const uint8_t *msg, size_t mlen)
{
	uint8_t *ip = f + 14, *m = ip + 40;
	uint32_t sum = (uint32_t)mlen + 58;

	memset(f, 0, 54 + mlen);
	memcpy(f, dmac, 6);
	memcpy(f + 6, peer_mac, 6);
	b16(f + 12, 0x86dd);
	ip[0] = 0x60;
	b16(ip + 4, (uint16_t)mlen);
	ip[6] = 58;
	ip[7] = hlim;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	memcpy(m, msg, mlen);
	m[2] = m[3] = 0;
	for (size_t i = 8; i < 40; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	b16(m + 2, csum(m, mlen, sum));
	return 54 + mlen;
}

/* A neighbor solicitation for the endpoint's link-local address, with the peer's link-layer option when slla. */
static size_t ns_frame(uint8_t *f, const uint8_t *dmac, const uint8_t *src, const uint8_t *dst, bool slla)
{
	uint8_t m[32] = { 135 };

	memcpy(m + 8, ep_ll, 16);
	m[24] = 1;
	m[25] = 1;
	memcpy(m + 26, peer_mac, 6);
	return icmp6_frame(f, dmac, src, dst, 255, m, slla ? 32 : 24);
}

static void gen_tcp(void)
{
	const char *t = "fuzz-tcp";
	static uint8_t f[4096], v[4096];
	struct seed s;
	size_t n;

	/* ARP who-has 192.168.200.1 */
	s.n = 0;
	memset(f, 0, 42);
	memset(f, 0xff, 6);
	memcpy(f + 6, peer_mac, 6);
	b16(f + 12, 0x0806);
	b16(f + 14, 1);
	b16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	b16(f + 20, 1);
	memcpy(f + 22, peer_mac, 6);
	b32(f + 28, PEER_IP);
	b32(f + 38, EP_IP);
	frame_rec(&s, 0, f, 42);
	emit(t, "arp", &s);

	/* ICMP echo */
	s.n = 0;
	n = tcp_frame(f, 0, 0, 0, "abcdefgh", false);
	f[14 + 9] = 1;
	f[14 + 10] = f[14 + 11] = 0;
	b16(f + 14 + 10, csum(f + 14, 20, 0));
	memset(f + 34, 0, 8);
	f[34] = 8;
	memcpy(f + 42, "abcdefgh", 8);
	b16(f + 36, csum(f + 34, 16, 0));
	frame_rec(&s, 0, f, 50);
	emit(t, "icmp-echo", &s);

	/* IPv6 neighbour discovery for the endpoint's link-local address: to its group, to its MAC, from :: */
	s.n = 0;
	n = ns_frame(f, ep_group_mac, peer_ll, ep_snode, true);
	frame_rec(&s, 0, f, n);
	n = ns_frame(f, ep_mac, peer_ll, ep_ll, true);
	frame_rec(&s, 0, f, n);
	emit(t, "nd-ns", &s);
	s.n = 0;
	n = ns_frame(f, ep_group_mac, (const uint8_t[16]){ 0 }, ep_snode, false);
	frame_rec(&s, 0, f, n);
	emit(t, "nd-ns-dad", &s);

	/* ICMPv6 echo to the link-local address */
	s.n = 0;
	{
		uint8_t m[16] = { 128, 0, 0, 0, 0x12, 0x34, 0, 1, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' };

		n = icmp6_frame(f, ep_mac, peer_ll, ep_ll, 64, m, sizeof(m));
	}
	frame_rec(&s, 0, f, n);
	emit(t, "icmp6-echo", &s);

	/* SYN, then what a peer sends once the handshake is done (the ISS is random: ACKs miss) */
	s.n = 0;
	n = tcp_frame(f, 1000, 0, 0x02, NULL, true);
	frame_rec(&s, 0, f, n);
	emit(t, "syn", &s);
	n = tcp_frame(f, 1001, 1, 0x10, NULL, false);
	frame_rec(&s, 0, f, n);
	n = tcp_frame(f, 1001, 1, 0x18, "GET /ernic HTTP/1.1\r\nHost: x\r\n\r\n", false);
	frame_rec(&s, 0, f, n);
	n = tcp_frame(f, 1034, 1, 0x11, NULL, false);
	frame_rec(&s, 0, f, n);
	emit(t, "syn-get-fin", &s);
	s.n = 0;
	n = tcp_frame(f, 5, 0, 0x04, NULL, false);
	frame_rec(&s, 0, f, n);
	emit(t, "rst", &s);

	/* From the TAP: a plain frame with an empty virtio_net_hdr, and a super-frame with GSO */
	s.n = 0;
	memset(v, 0, 10);
	n = tcp_frame(v + 10, 1000, 0, 0x02, NULL, true);
	frame_rec(&s, 1, v, n + 10);
	emit(t, "tap-syn", &s);
	{
		static char big[3001];

		memset(big, 'x', 3000);
		n = tcp_frame(v + 10, 1001, 1, 0x18, big, false);
		memset(v, 0, 10);
		v[0] = 1;            /* NEEDS_CSUM */
		v[1] = 1;            /* GSO_TCPV4 */
		w16(v + 2, 54);      /* hdr_len */
		w16(v + 4, 1460);    /* gso_size */
		w16(v + 6, 34);      /* csum_start */
		w16(v + 8, 16);      /* csum_offset */
		frame_rec(&s, 1, v, n + 10);
		emit(t, "tap-gso", &s);
	}
}

/* ---- fuzz-nvmeof ---- */

#define NV_BASE 0x100000000ull

static void nv_capsule(struct seed *s, uint8_t q, const struct nvme_cmd *c)
{
	p8(s, 0);
	p8(s, q);
	p8(s, sizeof(*c));
	put(s, c, sizeof(*c));
}

static struct nvme_cmd nv_cmd(uint8_t opcode, uint16_t cid, uint32_t key, uint32_t off, uint32_t len)
{
	struct nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.cid = cid;
	c.flags = 1u << 6;
	c.dptr.addr = le64_set(NV_BASE + off);
	c.dptr.length[0] = (uint8_t)len;
	c.dptr.length[1] = (uint8_t)(len >> 8);
	c.dptr.length[2] = (uint8_t)(len >> 16);
	for (int i = 0; i < 4; i++)
		c.dptr.key[i] = (uint8_t)(key >> (8 * i));
	c.dptr.type = NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4;
	return c;
}

static void nv_mem(struct seed *s, uint16_t off, const void *p, uint8_t n)
{
	p8(s, 1);
	p16(s, off);
	p8(s, n);
	put(s, p, n);
}

/* Connect data at 0x1000 (subnqn, hostnqn, cntlid), then Connect on queue pair q for qid. */
static void nv_connect(struct seed *s, uint8_t q, uint16_t qid, uint16_t cntlid, const char *subnqn)
{
	static const char hostnqn[] = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
	uint8_t head[32] = { 0xab };
	struct nvme_cmd c = nv_cmd(NVME_FABRICS, 1, 0x1234, 0x1000, 1024);
	struct nvmf_connect_cmd *cc = (struct nvmf_connect_cmd *)&c;

	w16(head + 16, cntlid);
	nv_mem(s, 0x1000, head, sizeof(head));
	nv_mem(s, 0x1100, subnqn, (uint8_t)strlen(subnqn));
	nv_mem(s, 0x1200, hostnqn, (uint8_t)strlen(hostnqn));
	cc->fctype = NVMF_FCTYPE_CONNECT;
	cc->qid = le16_set(qid);
	cc->sqsize = le16_set(qid ? 127 : 31);
	cc->kato = le32_set(qid ? 0 : 15000);
	nv_capsule(s, q, &c);
}

static void nv_prop(struct seed *s, bool set, uint32_t off, uint64_t v)
{
	struct nvme_cmd c = nv_cmd(NVME_FABRICS, 2, 0, 0, 0);
	struct nvmf_property_cmd *p = (struct nvmf_property_cmd *)&c;

	p->fctype = set ? NVMF_FCTYPE_PROPERTY_SET : NVMF_FCTYPE_PROPERTY_GET;
	p->attrib = off == 0 || off == 8 ? 1 : 0;
	p->offset = le32_set(off);
	p->value = le64_set(v);
	nv_capsule(s, 0, &c);
}

static void gen_nvmeof(void)
{
	const char *t = "fuzz-nvmeof";
	struct seed s;
	struct nvme_cmd c;

	s.n = 0;
	nv_connect(&s, 0, 0, 0xffff, "nvmet-test");
	emit(t, "connect-admin", &s);
	nv_prop(&s, false, 0, 0);
	nv_prop(&s, true, NVME_REG_CC, 0x460001);
	nv_prop(&s, false, 0x1c, 0);
	emit(t, "enable", &s);
	c = nv_cmd(NVME_ADM_IDENTIFY, 3, 0x1234, 0x2000, 4096);
	c.cdw10 = le32_set(1);
	nv_capsule(&s, 0, &c);
	c.cdw10 = le32_set(0);
	c.nsid = le32_set(1);
	nv_capsule(&s, 0, &c);
	c = nv_cmd(NVME_ADM_GET_LOG_PAGE, 4, 0x1234, 0x3000, 512);
	c.cdw10 = le32_set(0x007f0002);
	nv_capsule(&s, 0, &c);
	emit(t, "identify-log", &s);
	c = nv_cmd(NVME_ADM_KEEP_ALIVE, 5, 0, 0, 0);
	nv_capsule(&s, 0, &c);
	p8(&s, 2);
	p16(&s, 20000);
	emit(t, "keepalive-expiry", &s);

	s.n = 0;
	nv_connect(&s, 0, 0, 0xffff, "nvmet-test");
	nv_prop(&s, true, NVME_REG_CC, 0x460001);
	nv_connect(&s, 1, 1, 1, "nvmet-test");
	{
		static const uint8_t data[64] = "written by the seed";

		nv_mem(&s, 0x4000, data, sizeof(data));
	}
	c = nv_cmd(0x01, 6, 0x1234, 0x4000, 1024);  /* Write */
	c.nsid = le32_set(1);
	c.cdw12 = le32_set(1);
	nv_capsule(&s, 1, &c);
	c = nv_cmd(0x02, 7, 0x1234, 0x8000, 1024);  /* Read */
	c.nsid = le32_set(1);
	c.cdw12 = le32_set(1);
	nv_capsule(&s, 1, &c);
	c = nv_cmd(0x02, 8, 0x5678, 0x8000, 512);   /* Read into memory the controller may not write */
	c.nsid = le32_set(1);
	nv_capsule(&s, 1, &c);
	c = nv_cmd(0x00, 9, 0, 0, 0);               /* Flush */
	c.nsid = le32_set(1);
	nv_capsule(&s, 1, &c);
	emit(t, "io-write-read", &s);
	c = nv_cmd(0x08, 10, 0, 0, 0);              /* Write Zeroes */
	c.nsid = le32_set(1);
	c.cdw12 = le32_set(7);
	nv_capsule(&s, 1, &c);
	c = nv_cmd(0x09, 11, 0x1234, 0x4000, 16);   /* DSM */
	c.nsid = le32_set(1);
	c.cdw11 = le32_set(4);
	nv_capsule(&s, 1, &c);
	emit(t, "io-zeroes-dsm", &s);

	s.n = 0;
	nv_connect(&s, 0, 0, 0xffff, "nqn.2014-08.org.nvmexpress.discovery");
	c = nv_cmd(NVME_ADM_GET_LOG_PAGE, 3, 0x1234, 0x3000, 1024);
	c.cdw10 = le32_set(0x00ff0070);
	nv_capsule(&s, 0, &c);
	emit(t, "discovery", &s);

	s.n = 0;
	nv_connect(&s, 2, 3, 0xffff, "nvmet-test");
	p8(&s, 3);
	p8(&s, 1);
	p16(&s, 0);
	p16(&s, 31);
	emit(t, "io-before-admin-recreate", &s);
}

/* ---- fuzz-nvmeof-cm ---- */

static void cm_hdr(uint8_t *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, 256);
	m[0] = 1;
	m[1] = 0x07;
	m[2] = 2;
	m[3] = 0x03;
	b64(m + 8, tid);
	b16(m + 16, attr);
}

static void cm_req(uint8_t *m, uint32_t comm_id, uint32_t qpn, uint16_t qid, uint16_t hsqsize)
{
	static const uint8_t guest_gid[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 200, 3 };
	static const uint8_t ctrl_gid[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 200, 1 };

	cm_hdr(m, 0x0010, 0x1000 + comm_id);
	b32(m + 24, comm_id);
	b64(m + 32, 0x0000000001060000ull | 4420);
	b64(m + 40, 0x0002c9fffe000001ull);
	b32(m + 56, qpn << 8 | 16);
	m[63] = 16;
	m[67] = (uint8_t)(20 << 3 | 1);
	b32(m + 68, 0x123456u << 8);
	m[71] = (uint8_t)(20 << 3 | 7);
	b16(m + 72, 0xffff);
	m[74] = (uint8_t)(3 << 4 | 7);
	m[75] = (uint8_t)(15 << 4);
	memcpy(m + 80, guest_gid, 16);
	memcpy(m + 96, ctrl_gid, 16);
	m[164] = 0;
	m[165] = 4 << 4;
	b16(m + 166, 50000);
	b32(m + 168 + 12, PEER_IP);
	b32(m + 184 + 12, EP_IP);
	w16(m + 200 + 2, qid);
	w16(m + 200 + 4, (uint16_t)(hsqsize + 1));
	w16(m + 200 + 6, hsqsize);
	w16(m + 200 + 8, 0xffff);
}

static void cm_rec(struct seed *s, uint8_t flags, uint8_t dt, const uint8_t *m)
{
	p8(s, flags);
	p8(s, dt);
	put(s, m, 256);
}

static void gen_nvmeof_cm(void)
{
	const char *t = "fuzz-nvmeof-cm";
	uint8_t m[256];
	struct seed s;

	s.n = 0;
	cm_req(m, 0x11, 0x100, 0, 31);
	cm_rec(&s, 0, 0, m);
	emit(t, "req-admin", &s);
	cm_hdr(m, 0x0014, 0x2000);                  /* RTU */
	b32(m + 24, 0x11);
	cm_rec(&s, 1, 1, m);
	emit(t, "req-rtu", &s);
	cm_hdr(m, 0x0015, 0x3000);                  /* DREQ */
	b32(m + 24, 0x11);
	cm_rec(&s, 3, 1, m);
	emit(t, "req-rtu-dreq", &s);

	s.n = 0;
	cm_req(m, 0x22, 0x101, 1, 127);
	cm_rec(&s, 0, 0, m);
	cm_rec(&s, 0, 0, m);                        /* a duplicate REQ */
	cm_hdr(m, 0x0012, 0x4000);                  /* REJ from the guest */
	b32(m + 24, 0x22);
	cm_rec(&s, 1, 0, m);
	emit(t, "req-dup-rej", &s);

	s.n = 0;
	cm_req(m, 0x33, 0x102, 1, 127);
	cm_rec(&s, 0, 0, m);
	cm_hdr(m, 0x0014, 0x2000);
	b32(m + 24, 0x33);
	cm_rec(&s, 1 | 4 | 8, 1, m);                /* RTU, established, then the controller disconnects */
	cm_hdr(m, 0x0016, 0x5000);                  /* DREP */
	b32(m + 24, 0x33);
	cm_rec(&s, 1, 255, m);
	emit(t, "req-rtu-disconnect-drep", &s);

	s.n = 0;
	cm_req(m, 0x44, 0x103, 9, 127);             /* a qid past queues= */
	cm_rec(&s, 0, 0, m);
	cm_req(m, 0x45, 0x104, 0, 31);
	m[165] = 6 << 4;                            /* IPv6 */
	cm_rec(&s, 0, 0, m);
	cm_hdr(m, 0x0017, 0x6000);                  /* SIDR_REQ */
	cm_rec(&s, 0, 0, m);
	cm_hdr(m, 0x0011, 0x7000);                  /* MRA */
	cm_rec(&s, 1, 0, m);
	emit(t, "refusals", &s);

	s.n = 0;
	cm_req(m, 0x55, 0x105, 0, 31);
	cm_rec(&s, 0, 0, m);
	for (int i = 0; i < 20; i++) {
		cm_hdr(m, 0x00ff, (uint64_t)i);
		cm_rec(&s, 0, 255, m);              /* time passes: the REP times out */
	}
	emit(t, "rep-timeout", &s);
}

/* ---- fuzz-roce: one RoCEv2 frame per RC/UD opcode, from the builder ---- */

static void roce_seed(uint8_t mtu_sel, const struct roce_frame_desc *d, const char *name)
{
	struct seed s = { .n = 0 };
	uint8_t f[8192];
	size_t len;

	if (roce_build(d, f, sizeof(f), &len) != ROCE_OK)
		abort();
	p8(&s, mtu_sel);
	put(&s, f, len);
	emit("fuzz-roce", name, &s);
}

static void gen_roce(void)
{
	static uint8_t payload[1024];

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 1);
	for (unsigned o = 0; o < 256; o++) {
		const struct roce_opcode_info *op = roce_opcode_info((uint8_t)o);
		struct roce_frame_desc d = {
			.dst_mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 },
			.src_mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },
			.src_ip = 0xc0a8c801, .dst_ip = 0xc0a8c802, .ttl = 64, .df = true, .ip_id = 1,
			.sport = (uint16_t)(0xc000 + o), .opcode = (uint8_t)o, .ackreq = true,
			.pkey = 0xffff, .dqpn = 0x11, .psn = 0x100 + o,
			.deth = { 0x11111111, 1 }, .reth = { 0x10000, 0x1234, 4096 },
			.atomic = { 0x20000, 0x5678, 1, 2 }, .aeth = { roce_syn_ack(31), 7 }, .atomic_orig = 5,
			.imm = 0xabcd, .ieth_rkey = 0x1234, .payload = payload,
		};
		char name[80];
		size_t k;

		if (op == NULL)
			continue;
		if (op->payload)
			d.payload_len = (op->seg == ROCE_SEG_FIRST || op->seg == ROCE_SEG_MIDDLE) ? 256 : 5;
		d.pad = (uint8_t)((4 - d.payload_len % 4) % 4);
		for (k = 0; op->name[k] && k < sizeof(name) - 1; k++)
			name[k] = (char)(op->name[k] == '_' ? '-' : op->name[k] | 0x20);
		name[k] = 0;
		roce_seed(0, &d, name);
		/* the same with the target correcting checksums (bit 7), for mutations to build on */
		if (op->seg == ROCE_SEG_ONLY) {
			size_t n = strlen(name);

			snprintf(name + n, sizeof(name) - n, "-fix");
			roce_seed(0x80, &d, name);
		}
	}
	/* NAKs of each kind, and a 1024-byte path MTU */
	{
		struct roce_frame_desc d = {
			.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 }, .src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
			.src_ip = 0xc0a8c801, .dst_ip = 0xc0a8c802, .ttl = 64, .sport = 0xc000,
			.opcode = ROCE_RC_ACKNOWLEDGE, .pkey = 0xffff, .dqpn = 0x11, .psn = 0x200,
			.aeth = { roce_syn_nak(ROCE_NAK_PSN_SEQ_ERR), 3 },
		};

		roce_seed(0, &d, "rc-nak-psn-seq-err");
		d.aeth.syndrome = roce_syn_nak(ROCE_NAK_REM_ACCESS_ERR);
		roce_seed(0, &d, "rc-nak-rem-access-err");
		d.aeth.syndrome = roce_syn_rnr(14);
		roce_seed(0, &d, "rc-rnr-nak");
		d.opcode = ROCE_RC_RDMA_WRITE_MIDDLE;
		d.payload = payload;
		d.payload_len = 1024;
		roce_seed(2, &d, "rc-rdma-write-middle-mtu1024");
	}
}

/* ---- fuzz-roce-rc: request streams for one responder QP (layout: fuzz_roce_rc.c) ---- */

#define RC_FULL 0x10            /* payload of the path MTU */
#define RC_DUP 0x04             /* PSN ePSN - 1 - delta */
#define RC_AHEAD 0x08           /* PSN ePSN + 1 + delta */

/* Header: path MTU 256 << sel, RNR timer 12, P_Key 0xffff, three read/write/atomic regions. */
static void rc_hdr(struct seed *s, uint8_t mtu_sel, uint32_t epsn, uint8_t nrecv, uint16_t recv_size)
{
	s->n = 0;
	p8(s, mtu_sel);
	p8(s, 12);
	p32(s, epsn);
	p16(s, 0xffff);
	p8(s, nrecv);
	p16(s, recv_size);
	for (uint32_t i = 0; i < 3; i++) {
		p32(s, 0x1000 + i);
		p64(s, 0x100000ull * (i + 1));
		p16(s, 8192);
		p8(s, 0x0f);
	}
}

static void rc_req(struct seed *s, uint8_t opcode, uint8_t flags, uint16_t delta, uint16_t len, uint8_t mr,
		   uint32_t off, uint32_t dma_len, uint64_t swap, uint64_t compare, uint32_t imm)
{
	uint8_t sel = 0;

	while (sel < FUZZ_ROCE_RC_NOPS && fuzz_roce_rc_opcodes[sel] != opcode)
		sel++;
	if (sel == FUZZ_ROCE_RC_NOPS)
		abort(); /* a seed with an opcode the target cannot select */
	p8(s, 0);
	p8(s, sel);
	p8(s, flags);
	p16(s, delta);
	p16(s, len);
	p8(s, mr);
	p32(s, off);
	p32(s, dma_len);
	p64(s, swap);
	p64(s, compare);
	p32(s, imm);
}

static void rc_post(struct seed *s, uint16_t size) { p8(s, 1); p16(s, size); }
static void rc_replay(struct seed *s, uint8_t idx) { p8(s, 4); p8(s, idx); }

static void gen_roce_rc(void)
{
	const char *t = "fuzz-roce-rc";
	struct seed s;

	/* SEND: ONLY, ONLY with immediate, then FIRST + LAST into a posted receive, AckReq on FIRST */
	rc_hdr(&s, 0, 0x100, 2, 1024);
	rc_req(&s, ROCE_RC_SEND_ONLY, 0, 0, 100, 0, 0, 0, 0, 0, 1);
	rc_req(&s, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, RC_FULL, 0, 0, 0, 0, 0, 0, 0, 0xabcd);
	rc_post(&s, 512);
	rc_req(&s, ROCE_RC_SEND_FIRST, RC_FULL | 1, 0, 0, 0, 0, 0, 0, 0, 2);
	rc_req(&s, ROCE_RC_SEND_LAST, 0, 0, 200, 0, 0, 0, 0, 0, 3);
	emit(t, "send", &s);

	/* multi-packet WRITE (FIRST, MIDDLE, LAST of 700 bytes), then WRITE ONLY with immediate */
	rc_hdr(&s, 0, 0xfffffe, 1, 256);
	rc_req(&s, ROCE_RC_RDMA_WRITE_FIRST, RC_FULL, 0, 0, 1, 16, 700, 0, 0, 4);
	rc_req(&s, ROCE_RC_RDMA_WRITE_MIDDLE, RC_FULL, 0, 0, 1, 0, 0, 0, 0, 5);
	rc_req(&s, ROCE_RC_RDMA_WRITE_LAST, 1, 0, 188, 1, 0, 0, 0, 0, 6);
	rc_req(&s, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0, 0, 64, 2, 4096, 64, 0, 0, 0x77);
	emit(t, "write", &s);

	/*
	 * READ of 1000 bytes (4 responses at 256), an empty READ, the first READ again (duplicate),
	 * re-requested from its second response, then from its last with more than one packet left
	 */
	rc_hdr(&s, 0, 0x200, 0, 0);
	rc_req(&s, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 0, 0, 8, 1000, 0, 0, 0);
	rc_req(&s, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 0, 1, 0, 0, 0, 0, 0);
	rc_replay(&s, 0);
	rc_req(&s, ROCE_RC_RDMA_READ_REQUEST, RC_DUP, 3, 0, 0, 8 + 256, 744, 0, 0, 0);
	rc_req(&s, ROCE_RC_RDMA_READ_REQUEST, RC_DUP, 1, 0, 0, 8, 512, 0, 0, 0);
	emit(t, "read", &s);

	/* atomics: CMP_SWAP, FETCH_ADD, the FETCH_ADD again (answered from the ring), a misaligned one */
	rc_hdr(&s, 1, 0x300, 0, 0);
	rc_req(&s, ROCE_RC_COMPARE_SWAP, 0, 0, 0, 0, 64, 0, 0x1111, 0x0d0c0b0a09080706ull, 0);
	rc_req(&s, ROCE_RC_FETCH_ADD, 0, 0, 0, 0, 64, 0, 5, 0, 0);
	rc_replay(&s, 1);
	rc_req(&s, ROCE_RC_FETCH_ADD, 0, 0, 0, 0, 68, 0, 5, 0, 0);
	emit(t, "atomic", &s);

	/* duplicates: a SEND replayed, a WRITE with a PSN behind ePSN */
	rc_hdr(&s, 2, 0x10, 2, 2048);
	rc_req(&s, ROCE_RC_SEND_ONLY, 1, 0, 40, 0, 0, 0, 0, 0, 9);
	rc_replay(&s, 0);
	rc_req(&s, ROCE_RC_RDMA_WRITE_ONLY, RC_DUP, 0, 32, 0, 0, 32, 0, 0, 0);
	emit(t, "duplicate", &s);

	/* out of order: two packets ahead (NAK, then silence), ePSN, no receive (RNR), error, dropped */
	rc_hdr(&s, 0, 0x400, 1, 256);
	rc_req(&s, ROCE_RC_SEND_ONLY, RC_AHEAD, 2, 16, 0, 0, 0, 0, 0, 0);
	rc_req(&s, ROCE_RC_SEND_ONLY, RC_AHEAD, 3, 16, 0, 0, 0, 0, 0, 0);
	rc_req(&s, ROCE_RC_SEND_ONLY, 0, 0, 16, 0, 0, 0, 0, 0, 0);
	rc_req(&s, ROCE_RC_SEND_ONLY, 0, 0, 16, 0, 0, 0, 0, 0, 0);
	p8(&s, 2);
	rc_req(&s, ROCE_RC_SEND_ONLY, 0, 0, 16, 0, 0, 0, 0, 0, 0);
	emit(t, "out-of-order", &s);

	/* a raw frame (SEND ONLY WITH INVALIDATE of region 2) at a 4096-byte path MTU */
	rc_hdr(&s, 4, 0x500, 1, 4096);
	{
		static uint8_t payload[4096];
		struct roce_frame_desc d = {
			.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 }, .src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
			.src_ip = 0x0a000001, .dst_ip = 0x0a000002, .ttl = 64, .df = true, .sport = 0x1234,
			.opcode = ROCE_RC_SEND_ONLY_WITH_INVALIDATE, .ackreq = true, .pkey = 0xffff, .dqpn = 0x654,
			.psn = 0x500, .ieth_rkey = 0x1002, .payload = payload, .payload_len = 60,
		};
		uint8_t f[8192];
		size_t len;

		for (size_t i = 0; i < sizeof(payload); i++)
			payload[i] = (uint8_t)(i * 5 + 3);
		if (roce_build(&d, f, sizeof(f), &len) != ROCE_OK)
			abort();
		p8(&s, 3);
		p8(&s, 1);
		p16(&s, (uint16_t)len);
		put(&s, f, len);
	}
	rc_req(&s, ROCE_RC_RDMA_WRITE_ONLY, RC_FULL, 0, 0, 0, 0, 4096, 0, 0, 0);
	emit(t, "raw-invalidate-mtu4096", &s);
}

/* ---- fuzz-roce-wire: frames from the remote host into the device's wire QPs (layout: fuzz_roce_wire.c) ---- */

#define FW_ACKREQ 0x01
#define FW_BEHIND 0x04          /* PSN expected - 1 - delta */
#define FW_AHEAD 0x08           /* PSN expected + 1 + delta */
#define FW_ANY 0x0c             /* PSN delta << 8 */
#define FW_FULL 0x10            /* payload of the path MTU */
#define FW_OVER 0x20            /* payload of the path MTU + 4 */
#define FW_BADICRC 0x40
#define FW_CUT 0x80             /* cut short by delta % 64 + 1 */
enum { FW_K1 = 0, FW_K2, FW_K3, FW_K4, FW_KIMM, FW_KBADBYTE };
enum { FW_SEND_SEND = 0, FW_SEND_IMM, FW_SEND_WRITE, FW_SEND_READ, FW_SEND_CS, FW_SEND_FA };

static void fw_frame(struct seed *s, uint8_t qp, uint8_t opcode, uint8_t flags, uint16_t delta, uint16_t len,
		     uint8_t key, uint16_t off, uint32_t imm)
{
	uint8_t sel = 0;

	while (sel < FW_NOPCODES && fw_opcodes[sel] != opcode)
		sel++;
	if (sel == FW_NOPCODES)
		abort(); /* a seed with an opcode the target cannot select */
	if (!s->in_super)
		p8(s, FW_FRAME); /* inside a SUPER, the argument list alone */
	p8(s, qp);
	p8(s, sel);
	p8(s, flags);
	p16(s, delta);
	p16(s, len);
	p8(s, key);
	p16(s, off);
	p32(s, imm);
}

static void fw_send(struct seed *s, uint8_t qp, uint8_t op, uint16_t len, uint8_t key, uint16_t off)
{
	p8(s, FW_SEND);
	p8(s, qp);
	p8(s, op);
	p16(s, len);
	p8(s, key);
	p16(s, off);
}

/* SUPER: the next n (2..9) fw_frame() calls give its packets; fw_super_end() after them. */
static void fw_super(struct seed *s, uint8_t n)
{
	p8(s, FW_SUPER);
	p8(s, (uint8_t)(n - 2));
	s->in_super = true;
}

static void fw_super_end(struct seed *s) { s->in_super = false; }

static void fw_recv(struct seed *s, uint8_t qp, uint16_t len) { p8(s, FW_RECV); p8(s, qp); p16(s, len); }
static void fw_clock(struct seed *s, uint16_t ms) { p8(s, FW_CLOCK); p16(s, ms); }
static void fw_error(struct seed *s, uint8_t qp) { p8(s, FW_ERROR); p8(s, qp); }

/* A raw frame from the remote host (fix 1: the target corrects addresses, lengths and checksums). */
static void fw_raw(struct seed *s, uint8_t fix, uint32_t dqpn, uint8_t opcode, uint32_t psn, uint32_t len)
{
	static uint8_t payload[4096];
	struct roce_frame_desc d = {
		.dst_mac = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 }, .src_mac = { 0x02, 0, 0, 0, 0, 0x09 },
		.src_ip = 0x0a000009, .dst_ip = 0x0a000003, .ttl = 64, .df = true, .sport = 0xc000,
		.opcode = opcode, .pkey = 0xffff, .dqpn = dqpn, .psn = psn, .payload = payload, .payload_len = len,
		.deth = { 0x11110023, 0x200 }, .reth = { 0x0a000000ull, 0x101, len },
	};
	uint8_t f[8192];
	size_t n;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 3 + 1);
	d.pad = (uint8_t)((4 - len % 4) % 4);
	if (roce_build(&d, f, sizeof(f), &n) != ROCE_OK)
		abort();
	p8(s, FW_RAW);
	p8(s, fix);
	p16(s, (uint16_t)n);
	put(s, f, n);
}

/*
 * An answer to a probe of the node's (roce_port_echo.c): an ICMP echo reply from the remote host
 * to the guest with the node's identifier and data, sequence seq; how: 0 right, 1 checksum
 * spoiled, 2 a fragment, 3 an IPv4 option (header of 24 bytes), 4 cut to the IPv4 header.
 */
static void fw_echo(struct seed *s, uint16_t seq, unsigned how)
{
	static const uint8_t mark[8] = { 'r', 'o', 'c', 'e', 'p', 'a', 'c', 'e' };
	uint8_t f[64] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43, 0x02, 0, 0, 0, 0, 0x09, 0x08, 0x00 };
	uint8_t *ip = f + 14, *ic;
	size_t ihl = how == 3 ? 24 : 20, tot = ihl + 16;
	uint64_t sum;

	ip[0] = (uint8_t)(0x40 | ihl / 4);
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[6] = how == 2 ? 0x20 : 0x40; /* MF, or DF */
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, (const uint8_t[]){ 10, 0, 0, 9, 10, 0, 0, 3 }, 8);
	if (how == 3)
		memcpy(ip + 20, (const uint8_t[]){ 1, 1, 1, 0 }, 4); /* NOPs and an end of options */
	sum = inet_csum_add(0, ip, ihl);
	ip[10] = (uint8_t)(inet_csum_fold(sum) >> 8);
	ip[11] = (uint8_t)inet_csum_fold(sum);
	ic = ip + ihl;
	ic[4] = 0x45;
	ic[5] = 0x52;
	ic[6] = (uint8_t)(seq >> 8);
	ic[7] = (uint8_t)seq;
	memcpy(ic + 8, mark, sizeof(mark));
	sum = inet_csum_add(0, ic, 16);
	ic[2] = (uint8_t)((inet_csum_fold(sum) >> 8) ^ (how == 1 ? 1 : 0));
	ic[3] = (uint8_t)inet_csum_fold(sum);
	p8(s, FW_RAW);
	p8(s, 0);
	p16(s, how == 4 ? 34 : 60);
	put(s, f, how == 4 ? 34 : 60);
}

static void gen_roce_wire(void)
{
	const char *t = "fuzz-roce-wire";
	struct seed s;

	/* SENDs into the posted receives: ONLY on each RC QP, FIRST/MIDDLE/LAST at 1024, with immediate, with invalidate */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, FW_ACKREQ, 0, 60, FW_K1, 0, 1);
	fw_frame(&s, 1, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, 0, 0, 200, FW_K1, 0, 0x1234);
	fw_frame(&s, 2, ROCE_RC_SEND_ONLY, FW_ACKREQ, 0, 4, FW_K1, 0, 2);
	fw_frame(&s, 0, ROCE_RC_SEND_FIRST, 0, 0, 0, FW_K1, 0, 3);
	fw_frame(&s, 0, ROCE_RC_SEND_MIDDLE, 0, 0, 0, FW_K1, 0, 4);
	fw_frame(&s, 0, ROCE_RC_SEND_LAST_WITH_IMMEDIATE, FW_ACKREQ, 0, 100, FW_K1, 0, 5);
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY_WITH_INVALIDATE, 0, 0, 16, FW_K4, 0, 6);
	emit(t, "send", &s);

	/* WRITEs: ONLY into M1, FIRST/MIDDLE/LAST of 2500 bytes, with immediate, into read-only M2, on the QP without rights */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, FW_ACKREQ, 0, 100, FW_K1, 64, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_FIRST, 0, 0, 2500, FW_K1, 64 + 4096, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_MIDDLE, 0, 0, 0, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_LAST, FW_ACKREQ, 0, 452, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0, 0, 8, FW_K4, 64, 0x77);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, 0, 0, 32, FW_K2, 64, 0);
	fw_frame(&s, 1, ROCE_RC_RDMA_WRITE_ONLY, 0, 0, 32, FW_K1, 64, 0);
	emit(t, "write", &s);

	/*
	 * UDP super-frames, as another server's TAP merges: a WRITE's FIRST alone (its RETH makes it
	 * larger), then MIDDLE, MIDDLE and LAST of the path MTU as one (PSNs ePSN + 0, 1, 2 of the
	 * moment they are built); a SEND's FIRST, MIDDLE and LAST as one; two SENDs of different
	 * sizes merged, so the cut falls inside the second
	 */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_FIRST, 0, 0, 4096, FW_K1, 64, 0);
	fw_super(&s, 3);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_MIDDLE, 0, 0, 0, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_MIDDLE, 0, 1, 0, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_LAST, FW_ACKREQ | FW_FULL, 2, 1024, FW_K1, 0, 0);
	fw_super_end(&s);
	fw_super(&s, 3);
	fw_frame(&s, 0, ROCE_RC_SEND_FIRST, 0, 0, 0, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_MIDDLE, 0, 1, 0, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_LAST, FW_ACKREQ, 2, 500, FW_K1, 0, 0);
	fw_super_end(&s);
	fw_super(&s, 2);
	fw_frame(&s, 2, ROCE_RC_SEND_ONLY, 0, 0, 60, FW_K1, 0, 0);
	fw_frame(&s, 2, ROCE_RC_SEND_ONLY, FW_ACKREQ, 1, 200, FW_K1, 0, 0);
	fw_super_end(&s);
	emit(t, "super", &s);

	/* WRITE at the edges of M1 (32 KiB): ending at its last byte, 4 past it, starting 32 before it */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, 0, 0, 64, FW_K1, 64 + 0x8000 - 64, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, 0, 0, 64, FW_K1, 64 + 0x8000 - 60, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, 0, 0, 64, FW_K1, 32, 0);
	emit(t, "write-edges", &s);

	/*
	 * QP 21 has remote read only: a WRITE into M1 and into M4 (both MRs grant remote write), a
	 * FETCH_ADD and a CMP_SWAP on M1 (which grants atomics); each must leave the MR as it was
	 * (the first one puts the QP in error, so each kind has its own seed).
	 */
	s.n = 0;
	fw_frame(&s, 1, ROCE_RC_RDMA_WRITE_ONLY, FW_ACKREQ, 0, 64, FW_K1, 64, 0);
	fw_frame(&s, 1, ROCE_RC_RDMA_WRITE_ONLY, FW_ACKREQ, 0, 64, FW_K4, 64, 0);
	emit(t, "no-rights-write", &s);
	s.n = 0;
	fw_frame(&s, 1, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, FW_ACKREQ, 0, 16, FW_K4, 128, 0x77);
	emit(t, "no-rights-write-imm", &s);
	s.n = 0;
	fw_frame(&s, 1, ROCE_RC_FETCH_ADD, 0, 0, 0, FW_K1, 72, 5);
	fw_frame(&s, 1, ROCE_RC_COMPARE_SWAP, 0, 0, 0, FW_K1, 64, 0x1111);
	emit(t, "no-rights-atomic", &s);

	/* READs: 3000 bytes of M1 at 1024, of read-only M2 at 256, of M3 (no remote rights), a bad key byte */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 3000, FW_K1, 64, 0);
	fw_frame(&s, 1, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 600, FW_K2, 64, 0);
	fw_frame(&s, 1, ROCE_RC_RDMA_READ_REQUEST, FW_BEHIND, 2, 600, FW_K2, 64, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 100, FW_K3, 64, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 100, FW_KBADBYTE, 64, 0);
	emit(t, "read", &s);

	/* atomics: CMP_SWAP and FETCH_ADD on M1, the FETCH_ADD again (duplicate), misaligned, on read-only M2 */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_COMPARE_SWAP, 0, 0, 0, FW_K1, 64, 0x1111);
	fw_frame(&s, 0, ROCE_RC_FETCH_ADD, 0, 0, 0, FW_K1, 72, 5);
	fw_frame(&s, 0, ROCE_RC_FETCH_ADD, FW_BEHIND, 0, 0, FW_K1, 72, 5);
	fw_frame(&s, 0, ROCE_RC_FETCH_ADD, 0, 0, 0, FW_K1, 67, 5);
	fw_frame(&s, 0, ROCE_RC_FETCH_ADD, 0, 0, 0, FW_K2, 64, 5);
	emit(t, "atomic", &s);

	/* PSNs: ahead (a NAK, then silence), behind (duplicate), anywhere, across the wrap on QP 22 */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, FW_AHEAD, 2, 16, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, FW_AHEAD, 3, 16, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, 0, 0, 16, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, FW_BEHIND, 0, 16, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, FW_ANY, 0x1234, 16, FW_K1, 64, 0);
	for (int i = 0; i < 10; i++)
		fw_frame(&s, 2, ROCE_RC_RDMA_WRITE_ONLY, FW_ACKREQ, 0, 8, FW_K1, (uint16_t)(64 + 8 * i), 0);
	emit(t, "psn", &s);

	/* hostile: a bad ICRC, truncated headers, an oversized payload, a FIRST that is not full, an unknown QPN */
	s.n = 0;
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, FW_BADICRC, 0, 16, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_WRITE_ONLY, FW_CUT, 20, 0, FW_K1, 64, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_READ_REQUEST, FW_CUT, 5, 0, FW_K1, 64, 0);
	fw_frame(&s, 1, ROCE_RC_RDMA_WRITE_ONLY, FW_OVER, 0, 0, FW_K1, 64, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, FW_OVER, 0, 0, FW_K1, 0, 0);
	fw_raw(&s, 1, 0x77, ROCE_RC_SEND_ONLY, 0x2000, 16);
	fw_raw(&s, 0, 20, ROCE_RC_SEND_ONLY, 0x2000, 16);
	emit(t, "hostile", &s);

	/* READs from the remote host, then answers to the node's probes: right, spoiled, a fragment, with options, cut */
	s.n = 0;
	for (int i = 0; i < 4; i++)
		fw_frame(&s, 1, ROCE_RC_RDMA_READ_REQUEST, 0, 0, 30000, FW_K1, 64, 0); /* 118 responses each at 256 */
	for (unsigned how = 0; how < 5; how++)
		fw_echo(&s, (uint16_t)how, how);
	fw_echo(&s, 0xffff, 0);
	emit(t, "echo", &s);

	/* UD: to QP 23 with its Q_Key, with immediate, a wrong Q_Key, to QP 1 (GSI), larger than the receive */
	s.n = 0;
	fw_frame(&s, 3, ROCE_UD_SEND_ONLY, 0, 0, 100, FW_K1, 0, 0);
	fw_frame(&s, 3, ROCE_UD_SEND_ONLY_WITH_IMMEDIATE, 0, 0, 64, FW_K1, 0, 0xfeed);
	fw_frame(&s, 3, ROCE_UD_SEND_ONLY, 0, 1, 64, FW_K1, 0, 0x99);
	fw_frame(&s, 3, ROCE_UD_SEND_ONLY, 0, 2, 256, FW_K1, 0, 0);
	fw_frame(&s, 3, ROCE_UD_SEND_ONLY, 0, 0, 4000, FW_K1, 0, 0);
	fw_raw(&s, 1, 23, ROCE_UD_SEND_ONLY, 0, 32);
	emit(t, "ud", &s);

	/* the requester: a SEND ACKed, a READ answered, an atomic acknowledged, NAKs, RNR NAK, then timeouts */
	s.n = 0;
	fw_send(&s, 0, FW_SEND_SEND, 100, FW_K1, 0);
	fw_frame(&s, 0, ROCE_RC_ACKNOWLEDGE, 0, 0, 0, FW_K1, 0, 0x00);
	fw_send(&s, 0, FW_SEND_READ, 1500, FW_K1, 64);
	fw_frame(&s, 0, ROCE_RC_RDMA_READ_RESPONSE_FIRST, 0, 0, 0, FW_K1, 0, 0);
	fw_frame(&s, 0, ROCE_RC_RDMA_READ_RESPONSE_LAST, 0, 0, 476, FW_K1, 0, 0);
	fw_send(&s, 0, FW_SEND_FA, 0, FW_K1, 64);
	fw_frame(&s, 0, ROCE_RC_ATOMIC_ACKNOWLEDGE, 0, 0, 0, FW_K1, 0, 0x100);
	fw_send(&s, 1, FW_SEND_WRITE, 300, FW_K1, 64);
	fw_frame(&s, 1, ROCE_RC_ACKNOWLEDGE, 0, 0, 0, FW_K1, 0, 0x60);
	fw_frame(&s, 1, ROCE_RC_ACKNOWLEDGE, 0, 0, 0, FW_K1, 0, 0x2e);
	fw_clock(&s, 50);
	fw_send(&s, 2, FW_SEND_IMM, 5000, FW_K1, 0);
	fw_frame(&s, 2, ROCE_RC_ACKNOWLEDGE, 0, 0, 0, FW_K1, 0, 0x63);
	fw_send(&s, 2, FW_SEND_CS, 0, FW_K2, 64);
	fw_clock(&s, 900);
	fw_clock(&s, 900);
	emit(t, "requester", &s);

	/* receives: more SENDs than receives (RNR), receives posted, the QP in error (flushed), SENDs to it */
	s.n = 0;
	for (int i = 0; i < 8; i++)
		fw_frame(&s, 1, ROCE_RC_SEND_ONLY, 0, 0, 32, FW_K1, 0, (uint32_t)i);
	fw_recv(&s, 1, 256);
	fw_recv(&s, 1, 16);
	fw_frame(&s, 1, ROCE_RC_SEND_ONLY, 0, 0, 32, FW_K1, 0, 9);
	fw_recv(&s, 3, 40 + 64);
	fw_error(&s, 0);
	fw_frame(&s, 0, ROCE_RC_SEND_ONLY, 0, 0, 32, FW_K1, 0, 10);
	fw_error(&s, 3);
	fw_frame(&s, 3, ROCE_UD_SEND_ONLY, 0, 0, 16, FW_K1, 0, 0);
	emit(t, "recv-error", &s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	gen_vfio_user();
	gen_ionic_cmd();
	gen_ionic_tx();
	gen_rdma_admin();
	gen_rdma_wqe();
	gen_http();
	gen_s3_xml();
	gen_s3_token();
	gen_tcp();
	gen_nvmeof();
	gen_nvmeof_cm();
	gen_roce();
	gen_roce_rc();
	gen_roce_wire();
	printf("%u seeds in %s\n", nfiles, outdir);
	return 0;
}
