/*
 * nvmeof-rdma-ci: the NVMe-oF controller as an in-process RDMA peer of the
 * ionic device (src/ionic/ionic_datapath_nvmeof.c), driven over vfio-user by
 * our own client the way nvme-rdma and rdma_cm drive it in a guest: CM
 * MADs on the GSI queue pair (QP 1) to the controller's address, an RC
 * queue pair per NVMe queue carrying command capsules as SENDs, responses
 * arriving in the guest's receives, data moved by the controller's RDMA
 * READ/WRITE against a registration of the guest's.
 *
 * The tests are the glue's error paths: responses for a guest that posts no
 * receives (held in order, then the protocol's answer past the bound), a
 * SEND from a queue pair that is not the connection's, the connection
 * manager re-created by RDMA and device resets, and queue pairs destroyed
 * with work outstanding. Each asserts on what lands in guest memory.
 *
 * MADs are built at the IBA byte offsets (as nvmeof-cm-unit does), capsules
 * at the NVMe and NVMe-oF specifications' offsets; nothing comes from the
 * server's own headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/ionic_rdma_guest.h"
#include "../lib/vfu_client.h"

static const char *binary;
static char dir[64], sock[128];
static pid_t server;
static struct vfc cl;

#define CFG VFU_PCI_CONFIG_REGION

/* ---- the controller's address and identity, as the server is started ---- */

#define CTRL_IP   0xc0a8c801u /* 192.168.200.1, the default ip= */
#define GUEST_IP  0xc0a8c802u
#define PORT      4420
#define SUBNQN    "nvmet-test"
#define HOSTNQN   "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa"
#define MAX_CONNS 9           /* queues=8: the CM holds the admin queue and eight I/O queues at once */
#define PENDING_MAX 256       /* responses the glue holds per queue for a guest without receives */

/* ---- MADs (IBA vol. 1 ch. 12; offsets within the 256-byte MAD) ---- */

#define MAD_SIZE   256
#define H_ATTR     16
#define ATTR_REQ   0x0010
#define ATTR_REJ   0x0012
#define ATTR_REP   0x0013
#define ATTR_RTU   0x0014
#define ATTR_DREQ  0x0015
#define ATTR_DREP  0x0016
#define REQ_LCID   24
#define REQ_SID    32
#define REQ_QPN    56
#define REQ_RRES   59
#define REQ_IDEPTH 63
#define REQ_B43    67
#define REQ_PSN    68
#define REQ_B47    71
#define REQ_PKEY   72
#define REQ_B50    74
#define REQ_B51    75
#define REQ_LGID   80
#define REQ_RGID   96
#define REQ_PRIV   164
#define CMA_IPVER  (REQ_PRIV + 1)
#define CMA_PORT   (REQ_PRIV + 2)
#define CMA_SRC    (REQ_PRIV + 4)
#define CMA_DST    (REQ_PRIV + 20)
#define NVME_REQ   (REQ_PRIV + 36)
#define REP_LCID   24
#define REP_RCID   28
#define REP_QPN    36
#define X_LCID     24
#define X_RCID     28
#define DREQ_RQPN  32
#define REJ_REASON 34

static void put16(uint8_t *m, size_t off, uint16_t v) { m[off] = (uint8_t)(v >> 8); m[off + 1] = (uint8_t)v; }
static void put24(uint8_t *m, size_t off, uint32_t v) { m[off] = (uint8_t)(v >> 16); put16(m, off + 1, (uint16_t)v); }
static void put32(uint8_t *m, size_t off, uint32_t v) { put16(m, off, (uint16_t)(v >> 16)); put16(m, off + 2, (uint16_t)v); }
static void put64(uint8_t *m, size_t off, uint64_t v) { put32(m, off, (uint32_t)(v >> 32)); put32(m, off + 4, (uint32_t)v); }
static uint16_t get16(const uint8_t *m, size_t off) { return (uint16_t)(m[off] << 8 | m[off + 1]); }
static uint32_t get24(const uint8_t *m, size_t off) { return (uint32_t)m[off] << 16 | get16(m, off + 1); }
static uint32_t get32(const uint8_t *m, size_t off) { return (uint32_t)get16(m, off) << 16 | get16(m, off + 2); }

static void mad_hdr(uint8_t *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, MAD_SIZE);
	m[0] = 1;    /* base version */
	m[1] = 0x07; /* CM class */
	m[2] = 2;
	m[3] = 0x03; /* Send */
	put64(m, 8, tid);
	put16(m, H_ATTR, attr);
}

/* A REQ as rdma_cm sends it for nvme-rdma: RC, the cma_hdr (IPv4), then the 32-byte nvme_rdma_cm_req. */
static void build_req(uint8_t *m, uint32_t comm_id, uint32_t qpn, uint16_t qid, uint16_t size)
{
	static const uint8_t lgid[16] = { [10] = 0xff, [11] = 0xff, [12] = 192, [13] = 168, [14] = 200, [15] = 2 };
	static const uint8_t rgid[16] = { [10] = 0xff, [11] = 0xff, [12] = 192, [13] = 168, [14] = 200, [15] = 1 };

	mad_hdr(m, ATTR_REQ, 0x100000000ull | comm_id);
	put32(m, REQ_LCID, comm_id);
	put64(m, REQ_SID, 0x0106ull << 16 | PORT);
	put64(m, 40, 0x0245520000000001ull);
	put24(m, REQ_QPN, qpn);
	m[REQ_RRES] = 16;
	m[REQ_IDEPTH] = 16;
	m[REQ_B43] = (uint8_t)(20 << 3 | 0 << 1 | 1); /* RC */
	put24(m, REQ_PSN, 0x1000 + qpn);
	m[REQ_B47] = (uint8_t)(20 << 3 | 7);
	put16(m, REQ_PKEY, 0xffff);
	m[REQ_B50] = (uint8_t)(3 << 4 | 7); /* MTU 1024 */
	m[REQ_B51] = (uint8_t)(15 << 4);
	memcpy(m + REQ_LGID, lgid, 16);
	memcpy(m + REQ_RGID, rgid, 16);
	m[CMA_IPVER] = 4 << 4;
	put16(m, CMA_PORT, (uint16_t)(0xc000 + (qpn & 0xfff)));
	put32(m, CMA_SRC + 12, GUEST_IP);
	put32(m, CMA_DST + 12, CTRL_IP);
	/* nvme_rdma_cm_req, little-endian: recfmt 0, qid, hrqsize, hsqsize (0's based). */
	m[NVME_REQ + 2] = (uint8_t)qid;
	m[NVME_REQ + 3] = (uint8_t)(qid >> 8);
	m[NVME_REQ + 4] = (uint8_t)size;
	m[NVME_REQ + 5] = (uint8_t)(size >> 8);
	m[NVME_REQ + 6] = (uint8_t)(size - 1);
	m[NVME_REQ + 7] = (uint8_t)((size - 1) >> 8);
}

static void build_ids(uint8_t *m, uint16_t attr, uint32_t lcid, uint32_t rcid)
{
	mad_hdr(m, attr, 0x200000000ull | lcid);
	put32(m, X_LCID, lcid);
	put32(m, X_RCID, rcid);
}

/* ---- capsules (NVMe Base 2.0 4.2, NVMe-oF 1.1 3.3; offsets within the 64-byte SQE) ---- */

#define OPC_FABRICS 0x7f
#define OPC_KEEP_ALIVE 0x18
#define OPC_AER     0x0c
#define OPC_WRITE   0x01
#define OPC_READ    0x02
#define FCTYPE_PROP_SET 0x00
#define FCTYPE_CONNECT  0x01
#define FCTYPE_PROP_GET 0x04
#define REG_CC      0x14
#define REG_CSTS    0x1c
#define CC_ENABLE   (1u | 6u << 16 | 4u << 20) /* EN, IOSQES 6, IOCQES 4 */
#define SC_SUCCESS  0
#define BS          512 /* the default bs= */

static void le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void le32(uint8_t *p, uint32_t v) { le16(p, (uint16_t)v); le16(p + 2, (uint16_t)(v >> 16)); }
static void le64(uint8_t *p, uint64_t v) { le32(p, (uint32_t)v); le32(p + 4, (uint32_t)(v >> 32)); }

static void sqe_new(uint8_t *c, uint8_t opcode, uint16_t cid)
{
	memset(c, 0, 64);
	c[0] = opcode;
	c[1] = 0x40; /* PSDT: SGL */
	le16(c + 2, cid);
	c[39] = 0x40; /* SGL1: keyed data block of length 0 */
}

/* SGL1 @24: a keyed data block (address, 3-byte length, 4-byte key, type 4 << 4 | subtype). */
static void sqe_keyed(uint8_t *c, uint64_t addr, uint32_t len, uint32_t key)
{
	le64(c + 24, addr);
	c[32] = (uint8_t)len;
	c[33] = (uint8_t)(len >> 8);
	c[34] = (uint8_t)(len >> 16);
	le32(c + 35, key);
	c[39] = 0x40;
}

/* A response capsule (16 bytes): DW0 @0, SQHD @8, SQID @10, CID @12, status @14 (bit 0 the phase). */
struct cpl {
	uint32_t dw0;
	uint16_t sqhd, sqid, cid, sc;
};

static struct cpl cpl_of(const uint8_t *r)
{
	struct cpl c = {
		.dw0 = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 24,
		.sqhd = (uint16_t)(r[8] | r[9] << 8),
		.sqid = (uint16_t)(r[10] | r[11] << 8),
		.cid = (uint16_t)(r[12] | r[13] << 8),
		.sc = (uint16_t)((r[14] | r[15] << 8) >> 1 & 0x7ff),
	};
	return c;
}

/* ---- guest memory (inside RG_SCRATCH) ---- */

#define NV_NQP     4
#define NV_CQ(i)   (RG_SCRATCH + 0x8000ull * (i))            /* 10 CQs of 1024 x 32 B */
#define NV_GSI_SQ  (RG_SCRATCH + 0x50000)
#define NV_GSI_RQ  (RG_SCRATCH + 0x52000)
#define NV_AHT     (RG_SCRATCH + 0x54000)
#define NV_MADS    (RG_SCRATCH + 0x55000)                   /* 64 MADs to send, 256 B each */
#define NV_GSI_BUF (RG_SCRATCH + 0x60000)                   /* 64 GSI receives of 512 B */
#define NV_QPR(k)  (RG_SCRATCH + 0x80000 + 0x20000ull * (k)) /* SQ then RQ, 512 x 128 B each */
#define NV_CAP(k)  (RG_SCRATCH + 0x100000 + 0x8000ull * (k)) /* 512 capsules of 64 B */
#define NV_RSP(k)  (RG_SCRATCH + 0x120000 + 0x8000ull * (k)) /* 512 response buffers of 64 B */
#define NV_DATA    (RG_SCRATCH + 0x140000)                  /* the data registration */
#define NV_DATA_LEN 0xc0000u
#define NV_CDATA   NV_DATA                                  /* Connect data, 1 KiB */
#define NV_IO      (NV_DATA + 0x10000)                      /* I/O payloads */
#define NV_MR_KEY  RG_KEY(1, 0x42)
#define NV_QDEPTH  9                                        /* 512-entry SQs and RQs */
#define GSI_DEPTH  6
#define GSI_QKEY   RG_QKEY_GSI

/* One connected NVMe queue on an RC queue pair of the guest. */
struct conn {
	uint32_t ctrl_qpn, ctrl_cid, guest_cid;
	uint16_t qid;
};

struct nv {
	struct ionic_guest g;
	struct rg_eq eq;
	struct rg_cq acq;
	struct rg_aq aq;
	struct rg_cq cq[2 + 2 * NV_NQP]; /* 10, 11: GSI send, receive; 12 + 2k, 13 + 2k: slot k */
	struct rg_qp gsi;
	struct rg_qp qp[NV_NQP];
	uint32_t comm_ids;
	uint16_t cids[NV_NQP];
};

static struct rg_cq *gsi_scq(struct nv *n) { return &n->cq[0]; }
static struct rg_cq *gsi_rcq(struct nv *n) { return &n->cq[1]; }
static struct rg_cq *scq(struct nv *n, int k) { return &n->cq[2 + 2 * k]; }
static struct rg_cq *rcq(struct nv *n, int k) { return &n->cq[3 + 2 * k]; }
static uint8_t *gp(struct nv *n, uint64_t addr) { return guest_ptr(&n->g, addr); }

static void gsi_post_recv(struct nv *n)
{
	uint32_t slot = n->gsi.rq_prod & ((1u << GSI_DEPTH) - 1);
	const struct rg_sge s = { NV_GSI_BUF + 512ull * slot, 40 + MAD_SIZE, 0 };

	rg_post_recv(&n->g, &n->gsi, slot, 0, &s, 1);
	rg_rq_ring(&n->g, &n->gsi);
}

/*
 * Everything below the PCI function: RDMA_RESET_LIF, the EQ, the admin CQ
 * and queue, the CQs, the data registration (PD 1, remote read and write),
 * the AH toward the controller's address and the GSI QP in RTS with
 * receives posted. ionic_rdma's probe and an rdma_cm host's set-up.
 */
static void nv_rdma_up(struct nv *n)
{
	static const uint8_t ctrl_mac[6] = { 0x02, 0x4e, 0xc0, 0xa8, 0xc8, 0x01 };
	static const uint8_t guest_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
	uint8_t tmpl[RG_ROCE4_HDR_LEN];

	assert_int_equal(rg_reset_lif(&n->g), 0);
	assert_int_equal(rg_eq_create(&n->g, &n->eq, 0, 2, 10, RG_EQ_RING(0)), 0);
	assert_int_equal(rg_cq_create(&n->g, &n->acq, 0, 0, 8, RG_CQ_RING(0)), 0);
	assert_int_equal(rg_aq_create(&n->g, &n->aq, 0, &n->acq, 4, RG_AQ_RING(0)), 0);
	memset(gp(n, RG_SCRATCH), 0, RG_SCRATCH_SIZE);
	for (uint32_t i = 0; i < 2 + 2 * NV_NQP; i++)
		assert_int_equal(rg_cq_create(&n->g, &n->cq[i], 10 + i, 0, 10, NV_CQ(i)), 0);
	assert_int_equal(rg_mr_create(&n->g, &n->aq, 1, 0x42, 1, NV_DATA, NV_DATA_LEN, 1, NV_DATA,
				      RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12), 0);
	rg_roce4_template(tmpl, ctrl_mac, guest_mac, GUEST_IP, CTRL_IP, 0, 64);
	assert_int_equal(rg_ah_create(&n->g, &n->aq, 1, 1, NV_AHT, tmpl, sizeof(tmpl)), 0);
	memset(&n->gsi, 0, sizeof(n->gsi));
	n->gsi = (struct rg_qp){ .id = 1, .type = RG_QPT_UD, .pd = 1, .priv_flags = RG_QPF_PRIVILEGED,
				 .sq_cq = 10, .rq_cq = 11, .sq = NV_GSI_SQ, .rq = NV_GSI_RQ,
				 .sq_depth_log2 = GSI_DEPTH, .rq_depth_log2 = GSI_DEPTH,
				 .sq_stride_log2 = 7, .rq_stride_log2 = 7 };
	assert_int_equal(rg_qp_create(&n->g, &n->aq, &n->gsi), 0);
	assert_int_equal(rg_qp_to_rts(&n->g, &n->aq, &n->gsi, GSI_QKEY, 0), 0);
	for (int i = 0; i < 32; i++)
		gsi_post_recv(n);
}

static void nv_up(struct nv *n)
{
	memset(n, 0, sizeof(*n));
	assert_int_equal(ionic_guest_setup(&n->g, &cl), 0);
	nv_rdma_up(n);
}

static void nv_down(struct nv *n)
{
	/* The server still answers. */
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	rg_eq_close(&n->eq);
	ionic_guest_teardown(&n->g);
}

/* ---- the CM exchange over the GSI QP ---- */

static void gsi_send(struct nv *n, const uint8_t *mad)
{
	uint32_t slot = n->gsi.sq_prod & ((1u << GSI_DEPTH) - 1);
	const struct rg_sge s = { NV_MADS + 256ull * slot, MAD_SIZE, 0 };
	uint8_t cqe[RG_CQE_SIZE];

	memcpy(gp(n, s.va), mad, MAD_SIZE);
	rg_post_ud(&n->g, &n->gsi, slot, RG_WR_SEND, RG_WQE_SIG, 0, 1, 1, GSI_QKEY, &s, 1);
	rg_sq_ring(&n->g, &n->gsi);
	assert_true(rg_cq_next(&n->g, gsi_scq(n), cqe));
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_NPG);
	assert_false(rg_cqe_error(cqe));
	rg_cq_ack(&n->g, gsi_scq(n));
}

/* The next MAD the controller sent to the GSI QP (false: none within timeout_ms); the receive is posted again. */
static bool gsi_recv(struct nv *n, uint8_t *mad, int timeout_ms)
{
	uint8_t cqe[RG_CQE_SIZE];
	uint64_t slot;

	rg_sync(&n->g);
	if (!rg_cq_wait(&n->g, gsi_rcq(n), cqe, timeout_ms))
		return false;
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_false(rg_cqe_error(cqe));
	slot = rg_cqe_wqe_id(cqe);
	assert_true(slot < (1u << GSI_DEPTH));
	memcpy(mad, gp(n, NV_GSI_BUF + 512 * slot + 40), MAD_SIZE);
	rg_cq_ack(&n->g, gsi_rcq(n));
	gsi_post_recv(n);
	return true;
}

/* A REQ for NVMe queue qid from guest QP qpn; the controller's answer into *mad (its attribute returned). */
static uint16_t cm_req(struct nv *n, uint32_t qpn, uint16_t qid, uint16_t size, uint32_t *comm_id, uint8_t *mad)
{
	uint8_t m[MAD_SIZE];

	*comm_id = 0x47000001u + n->comm_ids++;
	build_req(m, *comm_id, qpn, qid, size);
	gsi_send(n, m);
	assert_true(gsi_recv(n, mad, 2000));
	return get16(mad, H_ATTR);
}

/*
 * Slot k's QP (id `id`, RC, privileged, PD 1) created, connected through the
 * CM to NVMe queue qid: REQ, REP, RTR/RTS toward the controller's QPN, RTU.
 */
static struct conn cm_connect(struct nv *n, int k, uint32_t id, uint16_t qid, uint16_t size)
{
	struct rg_qp *q = &n->qp[k];
	uint8_t mad[MAD_SIZE];
	struct conn c = { .qid = qid };

	*q = (struct rg_qp){ .id = id, .type = RG_QPT_RC, .pd = 1, .priv_flags = RG_QPF_PRIVILEGED,
			     .sq_cq = 12 + 2 * (uint32_t)k, .rq_cq = 13 + 2 * (uint32_t)k, .sq = NV_QPR(k),
			     .rq = NV_QPR(k) + 0x10000, .sq_depth_log2 = NV_QDEPTH, .rq_depth_log2 = NV_QDEPTH,
			     .sq_stride_log2 = 7, .rq_stride_log2 = 7 };
	assert_int_equal(rg_qp_create(&n->g, &n->aq, q), 0);
	assert_int_equal(cm_req(n, id, qid, size, &c.guest_cid, mad), ATTR_REP);
	assert_int_equal(get32(mad, REP_RCID), c.guest_cid);
	c.ctrl_cid = get32(mad, REP_LCID);
	c.ctrl_qpn = get24(mad, REP_QPN);
	assert_true(c.ctrl_qpn >= 0x00c00000u && c.ctrl_qpn < 0x00d00000u);
	assert_int_equal(rg_qp_to_rts(&n->g, &n->aq, q, c.ctrl_qpn, RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ), 0);
	build_ids(mad, ATTR_RTU, c.guest_cid, c.ctrl_cid);
	gsi_send(n, mad);
	n->cids[k] = 1;
	return c;
}

/* ---- capsules and responses on slot k ---- */

static void post_recvs(struct nv *n, int k, unsigned count)
{
	struct rg_qp *q = &n->qp[k];

	for (unsigned i = 0; i < count; i++) {
		uint32_t slot = q->rq_prod & ((1u << NV_QDEPTH) - 1);
		const struct rg_sge s = { NV_RSP(k) + 64ull * slot, 64, 0 };

		memset(gp(n, s.va), 0xee, 64);
		rg_post_recv(&n->g, q, slot, 0, &s, 1);
	}
	rg_rq_ring(&n->g, q);
}

/* Put capsule c on slot k's SQ (no doorbell). */
static void capsule_put(struct nv *n, int k, const uint8_t *c)
{
	struct rg_qp *q = &n->qp[k];
	uint32_t slot = q->sq_prod & ((1u << NV_QDEPTH) - 1);
	const struct rg_sge s = { NV_CAP(k) + 64ull * slot, 64, 0 };

	memcpy(gp(n, s.va), c, 64);
	rg_post_send(&n->g, q, slot, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &s, 1);
}

/* The next SEND completion of slot k: its status (0 for success). */
static uint32_t send_done(struct nv *n, int k)
{
	uint8_t cqe[RG_CQE_SIZE];

	assert_true(rg_cq_next(&n->g, scq(n, k), cqe));
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_SEND_MSN);
	rg_cq_ack(&n->g, scq(n, k));
	return rg_cqe_error(cqe) ? rg_get_be32(cqe + 24) : 0;
}

/* Send one capsule and see it go. */
static void capsule(struct nv *n, int k, const uint8_t *c)
{
	capsule_put(n, k, c);
	rg_sq_ring(&n->g, &n->qp[k]);
	assert_int_equal(send_done(n, k), 0);
}

/* The next response on slot k, read from the receive buffer the completion names; false if none came. */
static bool rsp_wait(struct nv *n, int k, struct cpl *out, int timeout_ms)
{
	uint8_t cqe[RG_CQE_SIZE];
	uint64_t slot;

	rg_sync(&n->g);
	if (!rg_cq_wait(&n->g, rcq(n, k), cqe, timeout_ms))
		return false;
	assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_get_be32(cqe + 24) & 0xffffff, 16); /* a 16-byte response capsule */
	slot = rg_cqe_wqe_id(cqe);
	assert_true(slot < (1u << NV_QDEPTH));
	*out = cpl_of(gp(n, NV_RSP(k) + 64 * slot));
	rg_cq_ack(&n->g, rcq(n, k));
	return true;
}

static struct cpl rsp(struct nv *n, int k)
{
	struct cpl c;

	if (!rsp_wait(n, k, &c, 2000))
		fail_msg("slot %d: no response", k);
	return c;
}

/* One command with a receive posted for it: its response, checked for its CID. */
static struct cpl command(struct nv *n, int k, uint8_t *c)
{
	uint16_t cid = (uint16_t)(c[2] | c[3] << 8);
	struct cpl r;

	post_recvs(n, k, 1);
	capsule(n, k, c);
	r = rsp(n, k);
	assert_int_equal(r.cid, cid);
	return r;
}

static void connect_sqe(struct nv *n, uint8_t *c, uint16_t cid, uint16_t qid, uint16_t sqsize, uint32_t kato,
			uint16_t cntlid)
{
	uint8_t *d = gp(n, NV_CDATA);

	sqe_new(c, OPC_FABRICS, cid);
	c[4] = FCTYPE_CONNECT;
	le16(c + 42, qid);
	le16(c + 44, sqsize);
	le32(c + 48, kato);
	memset(d, 0, 1024);
	d[0] = 0xaa; /* hostid */
	le16(d + 16, cntlid);
	memcpy(d + 256, SUBNQN, sizeof(SUBNQN) - 1);
	memcpy(d + 512, HOSTNQN, sizeof(HOSTNQN) - 1);
	sqe_keyed(c, NV_CDATA, 1024, NV_MR_KEY);
}

static void prop_sqe(uint8_t *c, uint16_t cid, bool set, uint32_t off, uint64_t v)
{
	sqe_new(c, OPC_FABRICS, cid);
	c[4] = set ? FCTYPE_PROP_SET : FCTYPE_PROP_GET;
	le32(c + 44, off);
	if (set)
		le64(c + 48, v);
}

static uint16_t next_cid(struct nv *n, int k)
{
	return n->cids[k]++;
}

/* Fabrics Connect on slot k; the controller ID. */
static uint16_t nvme_connect(struct nv *n, int k, uint16_t qid, uint16_t sqsize, uint32_t kato, uint16_t cntlid)
{
	uint8_t c[64];
	struct cpl r;

	connect_sqe(n, c, next_cid(n, k), qid, sqsize, kato, cntlid);
	r = command(n, k, c);
	if (r.sc != SC_SUCCESS)
		fail_msg("Connect of queue %u: status %#x", qid, r.sc);
	return (uint16_t)r.dw0;
}

static uint32_t prop_get(struct nv *n, int k, uint32_t off)
{
	uint8_t c[64];
	struct cpl r;

	prop_sqe(c, next_cid(n, k), false, off, 0);
	r = command(n, k, c);
	assert_int_equal(r.sc, SC_SUCCESS);
	return r.dw0;
}

/* An admin queue on slot k: Connect (dynamic controller), CC.EN, CSTS.RDY. The controller ID. */
static uint16_t admin_up(struct nv *n, int k, uint32_t qpn, uint32_t kato, struct conn *out)
{
	uint8_t c[64];
	uint16_t cntlid;

	*out = cm_connect(n, k, qpn, 0, 32);
	cntlid = nvme_connect(n, k, 0, 31, kato, 0xffff);
	prop_sqe(c, next_cid(n, k), true, REG_CC, CC_ENABLE);
	assert_int_equal(command(n, k, c).sc, SC_SUCCESS);
	assert_int_equal(prop_get(n, k, REG_CSTS) & 1, 1);
	return cntlid;
}

static void rw_sqe(uint8_t *c, bool write, uint16_t cid, uint64_t slba, uint32_t nlb, uint64_t buf, uint32_t key)
{
	sqe_new(c, write ? OPC_WRITE : OPC_READ, cid);
	le32(c + 4, 1); /* nsid */
	le32(c + 40, (uint32_t)slba);
	le32(c + 44, (uint32_t)(slba >> 32));
	le32(c + 48, nlb - 1);
	sqe_keyed(c, buf, nlb * BS, key);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Write len bytes of pattern seed at slba through slot k, read them back into another buffer, compare. */
static void io_roundtrip(struct nv *n, int k, uint64_t slba, uint32_t nlb, uint32_t seed)
{
	uint8_t c[64];
	uint8_t *w = gp(n, NV_IO), *r = gp(n, NV_IO + 0x40000);

	fill(w, nlb * BS, seed);
	memset(r, 0x5a, nlb * BS);
	rw_sqe(c, true, next_cid(n, k), slba, nlb, NV_IO, NV_MR_KEY);
	assert_int_equal(command(n, k, c).sc, SC_SUCCESS);
	rw_sqe(c, false, next_cid(n, k), slba, nlb, NV_IO + 0x40000, NV_MR_KEY);
	assert_int_equal(command(n, k, c).sc, SC_SUCCESS);
	assert_memory_equal(r, w, nlb * BS);
}

static bool all_ee(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xee)
			return false;
	return true;
}

/* Nothing arrives on slot k's receive CQ. */
static void assert_no_rsp(struct nv *n, int k, int wait_ms)
{
	struct cpl c;

	if (rsp_wait(n, k, &c, wait_ms))
		fail_msg("slot %d: unexpected response cid %u status %#x", k, c.cid, c.sc);
}

/* ---- server ---- */

static int start_server(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/nvmeof-rdma-ci.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	server = vfc_spawn_server(binary, dir, sock, sizeof(sock),
				  (const char *const[]){ "-b", "nvmeof:size=4M", NULL });
	return server > 0 ? 0 : -1;
}

static int stop_server(void **state)
{
	int status = 0;
	char cmd[128];
	bool alive;

	(void)state;
	alive = kill(server, 0) == 0;
	kill(server, SIGTERM);
	waitpid(server, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return -1;
	return alive && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int connect_negotiated(void **state)
{
	(void)state;
	if (vfc_connect(&cl, sock, 20000))
		return -1;
	return vfc_negotiate(&cl) == 0 ? 0 : -1;
}

static int disconnect(void **state)
{
	(void)state;
	vfc_close(&cl);
	return 0;
}

/* ---- tests ---- */

/* The path the error tests depart from: admin queue, an I/O queue, data both ways byte for byte. */
static void test_connect_io(void **state)
{
	struct nv n;
	struct conn a, io;
	uint16_t cntlid;

	(void)state;
	nv_up(&n);
	cntlid = admin_up(&n, 0, 20, 0, &a);
	io = cm_connect(&n, 1, 21, 1, 128);
	assert_int_equal(nvme_connect(&n, 1, 1, 127, 0, cntlid), cntlid);
	assert_true(io.ctrl_qpn != a.ctrl_qpn);
	io_roundtrip(&n, 1, 8, 8, 1);
	io_roundtrip(&n, 1, 0, 1, 2);
	nv_down(&n);
}

/*
 * A guest that posts no receives: the controller's responses wait, in
 * order, and each goes into the next receive the guest posts, SQHD moving
 * with them. Then a host that breaks flow control for good (more capsules
 * outstanding than the glue holds, PENDING_MAX): the controller drops the
 * connection the way the protocol lets it, with a DREQ; what it held is
 * discarded and nothing more reaches the guest's receives.
 */
static void test_responses_wait_for_receives(void **state)
{
	struct nv n;
	struct conn a;
	uint8_t c[64], mad[MAD_SIZE];
	struct cpl r;
	uint16_t first, sqhd0;
	const unsigned burst = 24; /* within the admin queue's 32 entries */

	(void)state;
	nv_up(&n);
	admin_up(&n, 0, 20, 0, &a);
	sqhd0 = (uint16_t)(n.cids[0] - 1); /* one capsule per CID so far */

	/* No receive posted: every capsule is taken (its SEND completes), no response lands. */
	first = n.cids[0];
	for (unsigned i = 0; i < burst; i++) {
		prop_sqe(c, next_cid(&n, 0), false, i % 2 ? REG_CSTS : REG_CC, 0);
		capsule_put(&n, 0, c);
	}
	rg_sq_ring(&n.g, &n.qp[0]);
	for (unsigned i = 0; i < burst; i++)
		assert_int_equal(send_done(&n, 0), 0);
	assert_no_rsp(&n, 0, 300);
	/* One receive: the oldest response only. */
	post_recvs(&n, 0, 1);
	r = rsp(&n, 0);
	assert_int_equal(r.cid, first);
	assert_no_rsp(&n, 0, 100);
	/* The rest: in order, each with its own value and the SQ head it had. */
	post_recvs(&n, 0, burst - 1);
	for (unsigned i = 1; i < burst; i++) {
		r = rsp(&n, 0);
		assert_int_equal(r.cid, (uint16_t)(first + i));
		assert_int_equal(r.sc, SC_SUCCESS);
		assert_int_equal(r.dw0, i % 2 ? 1u : CC_ENABLE); /* CSTS.RDY, or CC as set */
		assert_int_equal(r.sqhd, (uint16_t)((sqhd0 + 1 + i) % 32));
	}
	assert_no_rsp(&n, 0, 100);
	/* The queue still works. */
	assert_int_equal(prop_get(&n, 0, REG_CSTS) & 1, 1);

	/* Past the bound: PENDING_MAX + 40 capsules without a receive. */
	for (unsigned i = 0; i < PENDING_MAX + 40; i++) {
		sqe_new(c, OPC_KEEP_ALIVE, next_cid(&n, 0));
		capsule_put(&n, 0, c);
	}
	rg_sq_ring(&n.g, &n.qp[0]);
	for (unsigned i = 0; i < PENDING_MAX + 40; i++)
		assert_int_equal(send_done(&n, 0), 0);
	/* The controller ends the connection: a DREQ for it reaches the GSI QP. */
	assert_true(gsi_recv(&n, mad, 2000));
	assert_int_equal(get16(mad, H_ATTR), ATTR_DREQ);
	assert_int_equal(get32(mad, X_LCID), a.ctrl_cid);
	assert_int_equal(get32(mad, X_RCID), a.guest_cid);
	assert_int_equal(get24(mad, DREQ_RQPN), n.qp[0].id);
	build_ids(mad, ATTR_DREP, a.guest_cid, a.ctrl_cid);
	gsi_send(&n, mad);
	/* What it held is gone: receives posted now stay empty. */
	post_recvs(&n, 0, 64);
	assert_no_rsp(&n, 0, 300);
	/* A capsule on the dead connection finds nobody: the SEND fails, as after the transport's retries. */
	prop_sqe(c, next_cid(&n, 0), false, REG_CSTS, 0);
	capsule_put(&n, 0, c);
	rg_sq_ring(&n.g, &n.qp[0]);
	assert_int_equal(send_done(&n, 0), RG_STS_RETRY_EXCEEDED);

	/* Another host connection is unaffected by all of it. */
	{
		struct conn b;

		admin_up(&n, 1, 21, 0, &b);
		assert_true(b.ctrl_qpn != a.ctrl_qpn);
	}
	nv_down(&n);
}

/*
 * A SEND to the controller's QP from a guest QP that is not the one the
 * connection was made for: refused at the transport (the sender's WQE
 * completes with a remote invalid-request error and its QP goes to the
 * error state), and the controller's queue never sees the capsule: a
 * Property Set that would disable the controller changes nothing, no
 * response lands anywhere, and the real connection's SQ head continues
 * from its own capsules.
 */
static void test_send_from_foreign_qp(void **state)
{
	struct nv n;
	struct conn a;
	uint8_t c[64];
	struct cpl r;
	uint16_t sqhd;

	(void)state;
	nv_up(&n);
	admin_up(&n, 0, 20, 0, &a);
	post_recvs(&n, 0, 4); /* the real connection has receives waiting */
	r = (struct cpl){ 0 };
	sqhd = (uint16_t)(n.cids[0] - 1);

	/* QP 21 in slot 1, connected by hand to the controller's QP, not through the CM. */
	n.qp[1] = (struct rg_qp){ .id = 21, .type = RG_QPT_RC, .pd = 1, .priv_flags = RG_QPF_PRIVILEGED,
				  .sq_cq = 14, .rq_cq = 15, .sq = NV_QPR(1), .rq = NV_QPR(1) + 0x10000,
				  .sq_depth_log2 = NV_QDEPTH, .rq_depth_log2 = NV_QDEPTH, .sq_stride_log2 = 7,
				  .rq_stride_log2 = 7 };
	assert_int_equal(rg_qp_create(&n.g, &n.aq, &n.qp[1]), 0);
	assert_int_equal(rg_qp_to_rts(&n.g, &n.aq, &n.qp[1], a.ctrl_qpn, RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ),
			 0);
	post_recvs(&n, 1, 4);
	prop_sqe(c, 0x777, true, REG_CC, 0); /* CC.EN = 0: a controller reset, if it got through */
	capsule_put(&n, 1, c);
	rg_sq_ring(&n.g, &n.qp[1]);
	assert_int_equal(send_done(&n, 1), RG_STS_REMOTE_INV_REQ);
	assert_no_rsp(&n, 0, 200);
	/*
	 * The foreign QP is in error: one flushed receive completion tells the
	 * driver to flush the rest; none of its receive buffers holds anything.
	 */
	{
		uint8_t cqe[RG_CQE_SIZE];

		assert_true(rg_cq_next(&n.g, rcq(&n, 1), cqe));
		assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
		assert_true(rg_cqe_error(cqe));
		assert_int_equal(rg_get_be32(cqe + 24), RG_STS_FLUSHED);
		rg_sync(&n.g);
		assert_false(rg_cq_wait(&n.g, rcq(&n, 1), cqe, 100));
		assert_true(all_ee(gp(&n, NV_RSP(1)), 4 * 64));
	}
	/* The controller is still enabled and ready; the connection's queue head moved only for its own. */
	prop_sqe(c, next_cid(&n, 0), false, REG_CC, 0);
	capsule(&n, 0, c);
	r = rsp(&n, 0);
	assert_int_equal(r.dw0, CC_ENABLE);
	assert_int_equal(r.sqhd, (uint16_t)((sqhd + 1) % 32));
	assert_int_equal(prop_get(&n, 0, REG_CSTS) & 1, 1);
	nv_down(&n);
}

/*
 * The guest's RDMA state goes away under live connections: RDMA_RESET_LIF
 * (ionic_rdma's probe after a driver reload), then the whole device
 * (dev_cmd RESET, as after a guest reboot). The connection manager is made
 * anew each time: a fresh REQ is answered, the controller comes up again,
 * the namespace keeps its data, I/O works.
 */
static void test_reconnect_after_reset(void **state)
{
	struct nv n;
	struct conn a, io;
	uint16_t cntlid;
	uint8_t c[64];

	(void)state;
	nv_up(&n);
	cntlid = admin_up(&n, 0, 20, 0, &a);
	io = cm_connect(&n, 1, 21, 1, 128);
	nvme_connect(&n, 1, 1, 127, 0, cntlid);
	io_roundtrip(&n, 1, 64, 4, 7);
	/* A response is waiting for a receive when the reset comes. */
	prop_sqe(c, next_cid(&n, 0), false, REG_CSTS, 0);
	capsule(&n, 0, c);

	for (int round = 0; round < 2; round++) {
		uint8_t *d = gp(&n, NV_IO + 0x80000);

		rg_eq_close(&n.eq);
		if (round == 1)
			assert_int_equal(ionic_guest_init_device(&n.g), 0); /* dev_cmd RESET, LIF_INIT, admin queue */
		nv_rdma_up(&n); /* RDMA_RESET_LIF first, then everything again */
		/* The same guest QP numbers connect again, with no REJ for a stale connection. */
		cntlid = admin_up(&n, 0, 20, 0, &a);
		io = cm_connect(&n, 1, 21, 1, 128);
		assert_int_equal(nvme_connect(&n, 1, 1, 127, 0, cntlid), cntlid);
		/* The data written before the resets is there. */
		memset(d, 0, 4 * BS);
		rw_sqe(c, false, next_cid(&n, 1), 64, 4, NV_IO + 0x80000, NV_MR_KEY);
		assert_int_equal(command(&n, 1, c).sc, SC_SUCCESS);
		fill(gp(&n, NV_IO), 4 * BS, 7);
		assert_memory_equal(d, gp(&n, NV_IO), 4 * BS);
		io_roundtrip(&n, 1, 200 + (uint64_t)round, 2, 30 + (uint32_t)round);
		assert_no_rsp(&n, 0, 0); /* nothing from before the reset */
	}
	(void)io;
	nv_down(&n);
}

/*
 * The guest destroys a queue pair with work outstanding at the controller:
 * a READ whose data went out but whose response waits for a receive, and an
 * Asynchronous Event Request. The registration is destroyed too and the
 * memory behind the old receives and the data buffer is given to something
 * else (a pattern). The controller ends the connection at once (a DREQ:
 * without it, a connection with keep-alive off would hold its place in the
 * CM and the controller forever), nothing is written into that memory
 * afterwards, and later connections work: a new QP under the same number
 * gets only its own responses, and more abandoned connections than the CM
 * holds at once do not keep a new one out.
 */
static void test_qp_destroyed_mid_transfer(void **state)
{
	struct nv n;
	struct conn a, io;
	uint16_t cntlid;
	uint8_t c[64], mad[MAD_SIZE], cqe[RG_CQE_SIZE];
	static uint8_t before[0x10000 + 0x8000];
	const uint64_t dst = NV_IO + 0x40000; /* the outstanding READ's buffer, registration 3 */
	const uint32_t dst_key = RG_KEY(3, 0x44);
	struct rg_qp *q = &n.qp[1];
	struct cpl r;

	(void)state;
	nv_up(&n);
	assert_int_equal(rg_mr_create(&n.g, &n.aq, 3, 0x44, 1, dst, 0x10000, 1, dst,
				      RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12), 0);
	cntlid = admin_up(&n, 0, 20, 0, &a);
	io = cm_connect(&n, 1, 21, 1, 128);
	nvme_connect(&n, 1, 1, 127, 0, cntlid);
	io_roundtrip(&n, 1, 16, 8, 3);
	/* Outstanding: an AER on the admin queue, a READ's response on the I/O queue (no receive for it). */
	sqe_new(c, OPC_AER, next_cid(&n, 0));
	capsule(&n, 0, c);
	memset(gp(&n, dst), 0, 8 * BS);
	rw_sqe(c, false, next_cid(&n, 1), 16, 8, dst, dst_key);
	capsule(&n, 1, c);
	fill(gp(&n, NV_IO), 8 * BS, 3);
	assert_memory_equal(gp(&n, dst), gp(&n, NV_IO), 8 * BS); /* the data went out at once */

	/* The I/O QP goes: the controller ends its connection at once. */
	assert_int_equal(rg_qp_destroy(&n.g, &n.aq, 21), 0);
	assert_true(gsi_recv(&n, mad, 2000));
	assert_int_equal(get16(mad, H_ATTR), ATTR_DREQ);
	assert_int_equal(get32(mad, X_LCID), io.ctrl_cid);
	assert_int_equal(get32(mad, X_RCID), io.guest_cid);
	assert_int_equal(get24(mad, DREQ_RQPN), 21);
	build_ids(mad, ATTR_DREP, io.guest_cid, io.ctrl_cid);
	gsi_send(&n, mad);
	/* The registration goes too; the memory behind it and the old receives is reused. */
	assert_int_equal(rg_mr_destroy(&n.g, &n.aq, dst_key), 0);
	fill(gp(&n, dst), 0x10000, 99);
	fill(gp(&n, NV_RSP(1)), 0x8000, 98);
	memcpy(before, gp(&n, dst), 0x10000);
	memcpy(before + 0x10000, gp(&n, NV_RSP(1)), 0x8000);

	/*
	 * A new QP under the same number, receives posted while it is in INIT
	 * (before its REQ), into fresh buffers: a new connection, and the first
	 * response it gets is its own Connect's.
	 */
	*q = (struct rg_qp){ .id = 21, .type = RG_QPT_RC, .pd = 1, .priv_flags = RG_QPF_PRIVILEGED, .sq_cq = 14,
			     .rq_cq = 15, .sq = NV_QPR(1), .rq = NV_QPR(1) + 0x10000, .sq_depth_log2 = NV_QDEPTH,
			     .rq_depth_log2 = NV_QDEPTH, .sq_stride_log2 = 7, .rq_stride_log2 = 7 };
	assert_int_equal(rg_qp_create(&n.g, &n.aq, q), 0);
	assert_int_equal(rg_qp_modify(&n.g, &n.aq, q, RG_QPS_INIT, RG_QPS_RESET, 0,
				      RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ), 0);
	for (uint32_t i = 0; i < 4; i++) {
		const struct rg_sge sg = { NV_RSP(2) + 64ull * i, 64, 0 };

		rg_post_recv(&n.g, q, 0x100 + i, 0, &sg, 1);
	}
	rg_rq_ring(&n.g, q);
	assert_int_equal(cm_req(&n, 21, 1, 128, &io.guest_cid, mad), ATTR_REP);
	io.ctrl_cid = get32(mad, REP_LCID);
	io.ctrl_qpn = get24(mad, REP_QPN);
	assert_int_equal(rg_qp_modify(&n.g, &n.aq, q, RG_QPS_RTR, RG_QPS_INIT, io.ctrl_qpn, 0), 0);
	assert_int_equal(rg_qp_modify(&n.g, &n.aq, q, RG_QPS_RTS, RG_QPS_RTR, 0, 0), 0);
	build_ids(mad, ATTR_RTU, io.guest_cid, io.ctrl_cid);
	gsi_send(&n, mad);
	connect_sqe(&n, c, 0x900, 1, 127, 0, cntlid);
	capsule(&n, 1, c);
	assert_true(rg_cq_next(&n.g, rcq(&n, 1), cqe));
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x100);
	r = cpl_of(gp(&n, NV_RSP(2)));
	rg_cq_ack(&n.g, rcq(&n, 1));
	assert_int_equal(r.cid, 0x900);
	assert_int_equal(r.sc, SC_SUCCESS);
	assert_int_equal(r.dw0, cntlid);
	/* A READ naming the destroyed key fails at the controller and writes nothing. */
	rw_sqe(c, false, 0x901, 16, 1, dst, dst_key);
	capsule(&n, 1, c);
	assert_true(rg_cq_next(&n.g, rcq(&n, 1), cqe));
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x101);
	r = cpl_of(gp(&n, NV_RSP(2) + 64));
	rg_cq_ack(&n.g, rcq(&n, 1));
	assert_int_equal(r.cid, 0x901);
	assert_true(r.sc != SC_SUCCESS);
	/* The admin queue still answers (its AER stays outstanding: no response for it). */
	assert_int_equal(prop_get(&n, 0, REG_CSTS) & 1, 1);

	/*
	 * More abandoned connections than the CM holds at once: each a new QP,
	 * admin-connected with keep-alive off, a response left waiting, then
	 * destroyed without a DREQ from the guest. Each is ended by the
	 * controller; a new connection still gets in.
	 */
	for (uint32_t i = 0; i < MAX_CONNS + 2; i++) {
		struct conn x = cm_connect(&n, 3, 40 + i, 0, 32);

		nvme_connect(&n, 3, 0, 31, 0, 0xffff);
		prop_sqe(c, next_cid(&n, 3), false, REG_CSTS, 0);
		capsule(&n, 3, c);
		assert_int_equal(rg_qp_destroy(&n.g, &n.aq, 40 + i), 0);
		assert_true(gsi_recv(&n, mad, 2000));
		assert_int_equal(get16(mad, H_ATTR), ATTR_DREQ);
		assert_int_equal(get32(mad, X_LCID), x.ctrl_cid);
		build_ids(mad, ATTR_DREP, x.guest_cid, x.ctrl_cid);
		gsi_send(&n, mad);
	}
	{
		struct conn y;

		admin_up(&n, 3, 60, 0, &y);
	}
	/* Nothing ever landed in the memory the first QP and registration left behind. */
	usleep(300000); /* a few of the controller's ticks */
	assert_memory_equal(gp(&n, dst), before, 0x10000);
	assert_memory_equal(gp(&n, NV_RSP(1)), before + 0x10000, 0x8000);
	nv_down(&n);
}

/*
 * The same seen from bus mastering: with Bus Master Enable clear the
 * controller's responses cannot be delivered and nothing of guest memory
 * changes; set again, they arrive in order.
 */
static void test_bus_master_holds_responses(void **state)
{
	struct nv n;
	struct conn a;
	uint8_t c[64];
	static uint8_t before[GUEST_SIZE];
	uint16_t first;

	(void)state;
	nv_up(&n);
	admin_up(&n, 0, 20, 0, &a);
	first = n.cids[0];
	for (int i = 0; i < 3; i++) {
		prop_sqe(c, next_cid(&n, 0), false, REG_CSTS, 0);
		capsule_put(&n, 0, c);
	}
	vfc_write32(&cl, CFG, 0x04, 0x0002, false);
	/* Receives and capsules rung with bus mastering off. */
	{
		struct rg_qp *q = &n.qp[0];

		for (int i = 0; i < 3; i++) {
			uint32_t slot = q->rq_prod & ((1u << NV_QDEPTH) - 1);
			const struct rg_sge s = { NV_RSP(0) + 64ull * slot, 64, 0 };

			rg_post_recv(&n.g, q, slot, 0, &s, 1);
		}
		memcpy(before, n.g.mem, GUEST_SIZE);
		rg_rq_ring(&n.g, q);
		rg_sq_ring(&n.g, q);
	}
	rg_sync(&n.g);
	usleep(300000);
	assert_memory_equal(n.g.mem, before, GUEST_SIZE);
	vfc_write32(&cl, CFG, 0x04, 0x0006, false);
	for (int i = 0; i < 3; i++)
		assert_int_equal(send_done(&n, 0), 0);
	for (int i = 0; i < 3; i++) {
		struct cpl r = rsp(&n, 0);

		assert_int_equal(r.cid, (uint16_t)(first + i));
		assert_int_equal(r.dw0 & 1, 1);
	}
	nv_down(&n);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_connect_io, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_responses_wait_for_receives, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_send_from_foreign_qp, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_reconnect_after_reset, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_qp_destroyed_mid_transfer, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_bus_master_holds_responses, connect_negotiated, disconnect),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic\n", argv[0]);
		return 2;
	}
	binary = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("nvmeof-rdma-ci", tests, start_server, stop_server);
}
