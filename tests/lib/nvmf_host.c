/* A minimal NVMe/RDMA host over the guest-side RDMA helpers; see nvmf_host.h. */
#include "nvmf_host.h"

#include <string.h>
#include <time.h>

/* Guest memory, offsets into RG_SCRATCH. */
#define M_CQ(i)      (0x00000ull + 0x2000ull * (i))     /* 6 CQs: 256 x 32 B */
#define M_QP(i)      (0x10000ull + 0x4000ull * (i))     /* 3 QPs: SQ and RQ, 64 x 128 B each */
#define M_AH         0x1c000ull
#define M_MAD        0x1d000ull                          /* the MAD being sent */
#define M_GSI_RECV   0x1e000ull                          /* GSI receives, 512 B apart */
#define M_CAPS(q)    (0x20000ull + 0x1000ull * (q))     /* NVMF_HOST_DEPTH x 64 B */
#define M_RSPS(q)    (0x22000ull + 0x200ull * (q))      /* NVMF_HOST_DEPTH x 16 B */
#define M_DATA       0x40000ull
_Static_assert(M_DATA + (uint64_t)NVMF_HOST_DATA_SLOTS * NVMF_HOST_DATA_SIZE <= RG_SCRATCH_SIZE, "host memory");

#define CQ_BASE      30
#define QP_BASE      40
#define AH_ID        5
#define MR_INDEX     1
#define MR_KEY       0x5a
#define PD           1
#define GSI_RECVS    16
#define GSI_RECV_LEN (40 + 256)
#define ACCESS       (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ)
#define TIMEOUT_MS   5000

/* MAD header and CM messages (IBA tables 106, 110, 111; MAD offset = 24 + the table's offset). */
#define H_TID      8
#define H_ATTR     16
#define ATTR_REQ   0x0010
#define ATTR_REJ   0x0012
#define ATTR_REP   0x0013
#define ATTR_RTU   0x0014
#define REQ_LCID   24
#define REQ_SID    32
#define REQ_CAGUID 40
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
#define CMA_PORT   (REQ_PRIV + 2)
#define CMA_SRC    (REQ_PRIV + 4)
#define CMA_DST    (REQ_PRIV + 20)
#define NVME_PRIV  (REQ_PRIV + 36)
#define REP_LCID   24
#define REP_RCID   28
#define REP_QPN    36
#define RTU_LCID   24
#define RTU_RCID   28

/* Controller properties. */
#define PROP_CC   0x14
#define PROP_CSTS 0x1c

static void put16(uint8_t *m, size_t off, uint16_t v) { m[off] = (uint8_t)(v >> 8); m[off + 1] = (uint8_t)v; }
static void put24(uint8_t *m, size_t off, uint32_t v) { m[off] = (uint8_t)(v >> 16); put16(m, off + 1, (uint16_t)v); }
static void put32(uint8_t *m, size_t off, uint32_t v)
{
	put16(m, off, (uint16_t)(v >> 16));
	put16(m, off + 2, (uint16_t)v);
}

static void put64(uint8_t *m, size_t off, uint64_t v)
{
	put32(m, off, (uint32_t)(v >> 32));
	put32(m, off + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *m, size_t off) { return (uint16_t)(m[off] << 8 | m[off + 1]); }
static uint32_t get24(const uint8_t *m, size_t off) { return (uint32_t)m[off] << 16 | get16(m, off + 1); }
static uint32_t get32(const uint8_t *m, size_t off) { return (uint32_t)get16(m, off) << 16 | get16(m, off + 2); }

static uint64_t mem(uint64_t off) { return RG_SCRATCH + off; }

uint64_t nvmf_host_data(const struct nvmf_host *h, unsigned i)
{
	(void)h;
	return mem(M_DATA + (uint64_t)i * NVMF_HOST_DATA_SIZE);
}

uint8_t *nvmf_host_data_ptr(struct nvmf_host *h, unsigned i)
{
	return guest_ptr(h->g, nvmf_host_data(h, i));
}

/* CREATE_CQ on the RDMA admin queue (ionic_fw.h: eq_id, depth, stride, page, cq_id, tbl_index, map_count, dma). */
static int cq_create(struct nvmf_host *h, struct rg_cq *cq, uint32_t id)
{
	uint8_t p[34] = { 0 }, cqe[RG_CQE_SIZE];
	uint64_t ring = mem(M_CQ(id - CQ_BASE));
	int st;

	memset(guest_ptr(h->g, ring), 0, 0x2000);
	rg_le32(p + 0, 0);  /* EQ 0 */
	p[4] = 8;
	p[5] = 5;
	p[7] = 12;
	rg_le32(p + 12, id);
	rg_le32(p + 16, ~0u);
	rg_le32(p + 20, 1);
	rg_le64(p + 24, ring);
	st = rg_admin(h->g, h->aq, RG_OP_CREATE_CQ, p, sizeof(p), cqe);
	rg_cq_ack(h->g, h->aq->cq);
	rg_cq_init(cq, id, 8, ring);
	return st;
}

static void qp_layout(struct rg_qp *qp, uint32_t id, uint8_t type, uint32_t priv, unsigned slot, uint32_t scq,
		      uint32_t rcq)
{
	memset(qp, 0, sizeof(*qp));
	qp->id = id;
	qp->type = type;
	qp->pd = PD;
	qp->priv_flags = priv;
	qp->sq_cq = scq;
	qp->rq_cq = rcq;
	qp->sq = mem(M_QP(slot));
	qp->rq = mem(M_QP(slot) + 0x2000);
	qp->sq_depth_log2 = qp->rq_depth_log2 = 6;
	qp->sq_stride_log2 = qp->rq_stride_log2 = 7;
}

static void gsi_post_recv(struct nvmf_host *h, uint32_t i)
{
	struct rg_sge s = { mem(M_GSI_RECV) + 512ull * i, GSI_RECV_LEN, 0 };

	rg_post_recv(h->g, &h->gsi, i, 0, &s, 1);
	rg_rq_ring(h->g, &h->gsi);
}

int nvmf_host_init(struct nvmf_host *h, struct ionic_guest *g, struct rg_aq *aq, const struct nvmf_host_config *cfg)
{
	uint8_t tmpl[RG_ROCE4_HDR_LEN];
	uint8_t dmac[6] = { 0x02, 0x4e }, smac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };

	memset(h, 0, sizeof(*h));
	h->g = g;
	h->aq = aq;
	h->cfg = *cfg;
	h->comm_id = 0x4e560001u;
	h->tid = 0x4e56000000000001ull;
	memset(guest_ptr(g, RG_SCRATCH), 0, M_DATA);
	if (rg_mr_create(g, aq, MR_INDEX, MR_KEY, PD, mem(0), RG_SCRATCH_SIZE, 1, mem(0),
			 RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12))
		return -1;
	h->lkey = RG_KEY(MR_INDEX, MR_KEY);
	if (cq_create(h, &h->gsi_scq, CQ_BASE) || cq_create(h, &h->gsi_rcq, CQ_BASE + 1))
		return -2;
	qp_layout(&h->gsi, 1, RG_QPT_UD, RG_QPF_PRIVILEGED, 0, CQ_BASE, CQ_BASE + 1);
	if (rg_qp_create(g, aq, &h->gsi) || rg_qp_to_rts(g, aq, &h->gsi, RG_QKEY_GSI, 0))
		return -3;
	for (uint32_t i = 0; i < GSI_RECVS; i++)
		gsi_post_recv(h, i);
	/* The controller answers ARP with 02:4e and its address: the MAC the driver would resolve. */
	for (int i = 0; i < 4; i++)
		dmac[2 + i] = (uint8_t)(cfg->ctrl_ip >> (24 - 8 * i));
	rg_roce4_template(tmpl, dmac, smac, cfg->host_ip, cfg->ctrl_ip, 0, 64);
	if (rg_ah_create(g, aq, AH_ID, PD, mem(M_AH), tmpl, sizeof(tmpl)))
		return -4;
	return 0;
}

/* ---- the connection manager over the GSI QP ---- */

static void mad_hdr(uint8_t *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, 256);
	m[0] = 1;      /* base version */
	m[1] = 0x07;   /* CM class */
	m[2] = 2;      /* class version */
	m[3] = 0x03;   /* Send */
	put64(m, H_TID, tid);
	put16(m, H_ATTR, attr);
}

static void gid_v4(uint8_t *p, uint32_t ip)
{
	memset(p, 0, 16);
	p[10] = p[11] = 0xff;
	put32(p, 12, ip);
}

/* Send the MAD at M_MAD to the controller's GSI QP; wait for its send completion. */
static int mad_send(struct nvmf_host *h)
{
	struct rg_sge s = { mem(M_MAD), 256, 0 };
	uint8_t cqe[RG_CQE_SIZE];

	rg_post_ud(h->g, &h->gsi, 0x6d6164, RG_WR_SEND, RG_WQE_SIG, 0, AH_ID, 1, RG_QKEY_GSI, &s, 1);
	rg_sq_ring(h->g, &h->gsi);
	if (!rg_cq_wait(h->g, &h->gsi_scq, cqe, TIMEOUT_MS) || rg_cqe_error(cqe))
		return -1;
	rg_cq_ack(h->g, &h->gsi_scq);
	return 0;
}

/* The next MAD from the controller into mad (256 bytes); the receive is posted again. */
static bool mad_recv(struct nvmf_host *h, uint8_t *mad)
{
	uint8_t cqe[RG_CQE_SIZE];
	uint32_t i;

	if (!rg_cq_wait(h->g, &h->gsi_rcq, cqe, TIMEOUT_MS))
		return false;
	rg_cq_ack(h->g, &h->gsi_rcq);
	i = (uint32_t)rg_cqe_wqe_id(cqe);
	if (rg_cqe_error(cqe) || i >= GSI_RECVS)
		return false;
	memcpy(mad, guest_ptr(h->g, mem(M_GSI_RECV) + 512ull * i + 40), 256);
	gsi_post_recv(h, i);
	return true;
}

static void rsp_post(struct nvmf_host *h, struct nvmf_queue *q, uint32_t i);

/* REQ -> REP -> RTU for queue q; q->ctrl_qpn from the REP. */
static int cm_connect(struct nvmf_host *h, struct nvmf_queue *q)
{
	uint8_t *m = guest_ptr(h->g, mem(M_MAD)), rep[256];
	uint32_t lcid = h->comm_id++;
	uint64_t tid = h->tid++;

	mad_hdr(m, ATTR_REQ, tid);
	put32(m, REQ_LCID, lcid);
	put64(m, REQ_SID, 0x0106ull << 16 | h->cfg.port);    /* RDMA_PS_TCP, port */
	put64(m, REQ_CAGUID, 0x0245520000000001ull);
	put24(m, REQ_QPN, q->qp.id);
	m[REQ_RRES] = 16;
	m[REQ_IDEPTH] = 16;
	m[REQ_B43] = (uint8_t)(20 << 3 | 0 << 1 | 1);        /* CM timeout, RC, end-to-end credits */
	put24(m, REQ_PSN, 0x2000 + q->qp.id);
	m[REQ_B47] = (uint8_t)(20 << 3 | 7);
	put16(m, REQ_PKEY, 0xffff);
	m[REQ_B50] = (uint8_t)(3 << 4 | 7);                   /* MTU 1024, RNR retry 7 */
	m[REQ_B51] = (uint8_t)(15 << 4);
	gid_v4(m + REQ_LGID, h->cfg.host_ip);
	gid_v4(m + REQ_RGID, h->cfg.ctrl_ip);
	/* rdma_cm's cma_hdr: version 0, IPv4, source port, addresses in the last 4 of 16 bytes. */
	m[REQ_PRIV + 1] = 4 << 4;
	put16(m, CMA_PORT, (uint16_t)(0xc000 + q->qid));
	put32(m, CMA_SRC + 12, h->cfg.host_ip);
	put32(m, CMA_DST + 12, h->cfg.ctrl_ip);
	/* nvme_rdma_cm_req (little-endian): recfmt 0, qid, hrqsize, hsqsize (0's based). */
	rg_le16(m + NVME_PRIV + 2, q->qid);
	rg_le16(m + NVME_PRIV + 4, NVMF_HOST_DEPTH);
	rg_le16(m + NVME_PRIV + 6, NVMF_HOST_DEPTH - 1);
	if (mad_send(h))
		return -10;
	for (;;) {
		if (!mad_recv(h, rep))
			return -11;
		if (get16(rep, H_ATTR) == ATTR_REJ)
			return -12;
		if (get16(rep, H_ATTR) == ATTR_REP && get32(rep, REP_RCID) == lcid)
			break;
	}
	q->ctrl_qpn = get24(rep, REP_QPN);
	if (rg_qp_to_rts(h->g, h->aq, &q->qp, q->ctrl_qpn, ACCESS))
		return -13;
	/* The response receives, once the QP is past RESET (which empties its rings). */
	for (uint32_t i = 0; i < NVMF_HOST_DEPTH; i++)
		rsp_post(h, q, i);
	rg_rq_ring(h->g, &q->qp);
	mad_hdr(m, ATTR_RTU, h->tid++);
	put32(m, RTU_LCID, lcid);
	put32(m, RTU_RCID, get32(rep, REP_LCID));
	return mad_send(h) ? -14 : 0;
}

/* ---- capsules ---- */

void nvmf_sqe(uint8_t sqe[64], uint8_t opcode, uint32_t nsid)
{
	memset(sqe, 0, 64);
	sqe[0] = opcode;
	rg_le32(sqe + 4, nsid);
}

void nvmf_sqe_rw(uint8_t sqe[64], uint8_t opcode, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t flags)
{
	nvmf_sqe(sqe, opcode, nsid);
	rg_le64(sqe + 40, slba);
	rg_le32(sqe + 48, (nlb - 1) | flags);
}

static void rsp_post(struct nvmf_host *h, struct nvmf_queue *q, uint32_t i)
{
	struct rg_sge s = { q->rsps + 16ull * i, 16, h->lkey };

	rg_post_recv(h->g, &q->qp, i, 0, &s, 1);
}

int nvmf_host_submit(struct nvmf_host *h, uint16_t qid, uint8_t sqe[64], uint16_t cid, unsigned slot, uint32_t len)
{
	struct nvmf_queue *q = &h->q[qid];
	uint64_t cap = q->caps + 64ull * (cid % NVMF_HOST_DEPTH);
	struct rg_sge s = { cap, 64, h->lkey };
	uint8_t cqe[RG_CQE_SIZE];

	if (q->outstanding >= NVMF_HOST_DEPTH)
		return -1;
	/* Send completions of earlier capsules (each is signaled) make room in the SQ. */
	while (rg_cq_poll(h->g, &q->scq, cqe))
		rg_cq_ack(h->g, &q->scq);
	sqe[1] = 1u << 6;                        /* PSDT: SGL for data */
	rg_le16(sqe + 2, cid);
	if (len) {
		rg_le64(sqe + 24, nvmf_host_data(h, slot));
		sqe[32] = (uint8_t)len;
		sqe[33] = (uint8_t)(len >> 8);
		sqe[34] = (uint8_t)(len >> 16);
		rg_le32(sqe + 35, h->lkey);
	}
	sqe[39] = 0x4 << 4;                      /* keyed data block, address subtype */
	memcpy(guest_ptr(h->g, cap), sqe, 64);
	rg_post_send(h->g, &q->qp, cid, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &s, 1);
	rg_sq_ring(h->g, &q->qp);
	q->outstanding++;
	return 0;
}

bool nvmf_host_reap(struct nvmf_host *h, uint16_t qid, struct nvmf_cpl *cpl, int timeout_ms)
{
	struct nvmf_queue *q = &h->q[qid];
	uint8_t cqe[RG_CQE_SIZE];
	const uint8_t *r;
	uint32_t i;

	if (!rg_cq_wait(h->g, &q->rcq, cqe, timeout_ms))
		return false;
	rg_cq_ack(h->g, &q->rcq);
	i = (uint32_t)rg_cqe_wqe_id(cqe);
	if (rg_cqe_error(cqe) || i >= NVMF_HOST_DEPTH)
		return false;
	r = guest_ptr(h->g, q->rsps + 16ull * i);
	cpl->dw0 = rg_get_le32(r);
	cpl->dw1 = rg_get_le32(r + 4);
	cpl->sqhd = rg_get_le16(r + 8);
	cpl->sqid = rg_get_le16(r + 10);
	cpl->cid = rg_get_le16(r + 12);
	cpl->status = (uint16_t)(rg_get_le16(r + 14) >> 1);
	rsp_post(h, q, i);
	rg_rq_ring(h->g, &q->qp);
	if (q->outstanding)
		q->outstanding--;
	return true;
}

int nvmf_host_cmd(struct nvmf_host *h, uint16_t qid, uint8_t sqe[64], unsigned slot, uint32_t len,
		  struct nvmf_cpl *cpl)
{
	static uint16_t cid = 0x100;
	uint16_t want = cid++;

	if (nvmf_host_submit(h, qid, sqe, want, slot, len))
		return -1;
	do {
		if (!nvmf_host_reap(h, qid, cpl, TIMEOUT_MS))
			return -1;
	} while (cpl->cid != want);
	return cpl->status;
}

static int prop_set(struct nvmf_host *h, uint32_t off, uint32_t v)
{
	uint8_t sqe[64];
	struct nvmf_cpl cpl;

	nvmf_sqe(sqe, NVMF_OP_FABRICS, 0);
	sqe[4] = 0x00;                /* Property Set */
	sqe[40] = 0;                  /* 4 bytes */
	rg_le32(sqe + 44, off);
	rg_le64(sqe + 48, v);
	return nvmf_host_cmd(h, 0, sqe, 0, 0, &cpl);
}

static int prop_get(struct nvmf_host *h, uint32_t off, uint32_t *v)
{
	uint8_t sqe[64];
	struct nvmf_cpl cpl;
	int st;

	nvmf_sqe(sqe, NVMF_OP_FABRICS, 0);
	sqe[4] = 0x04;                /* Property Get */
	rg_le32(sqe + 44, off);
	st = nvmf_host_cmd(h, 0, sqe, 0, 0, &cpl);
	*v = cpl.dw0;
	return st;
}

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int nvmf_host_connect(struct nvmf_host *h, uint16_t qid, uint32_t kato_ms)
{
	struct nvmf_queue *q = &h->q[qid];
	uint8_t sqe[64], *d = nvmf_host_data_ptr(h, 0);
	struct nvmf_cpl cpl;
	uint32_t csts = 0;
	long deadline;
	int rc;

	if (qid >= NVMF_HOST_QUEUES)
		return -1;
	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->caps = mem(M_CAPS(qid));
	q->rsps = mem(M_RSPS(qid));
	if (cq_create(h, &q->scq, CQ_BASE + 2 + 2 * qid) || cq_create(h, &q->rcq, CQ_BASE + 3 + 2 * qid))
		return -2;
	qp_layout(&q->qp, QP_BASE + qid, RG_QPT_RC, 0, 1 + qid, q->scq.id, q->rcq.id);
	if (rg_qp_create(h->g, h->aq, &q->qp))
		return -3;
	rc = cm_connect(h, q);
	if (rc)
		return rc;
	/* Fabrics Connect: record format 0, the qid, sqsize (0's based), KATO; the 1024-byte data in slot 0. */
	memset(d, 0, 1024);
	d[0] = 0x4e;                          /* host ID */
	d[1] = 0x56;
	rg_le16(d + 16, qid ? h->cntlid : 0xffff);
	strncpy((char *)d + 256, h->cfg.subnqn, 255);
	strncpy((char *)d + 512, h->cfg.hostnqn, 255);
	nvmf_sqe(sqe, NVMF_OP_FABRICS, 0);
	sqe[4] = 0x01;
	rg_le16(sqe + 42, qid);
	rg_le16(sqe + 44, NVMF_HOST_DEPTH - 1);
	rg_le32(sqe + 48, kato_ms);
	rc = nvmf_host_cmd(h, qid, sqe, 0, 1024, &cpl);
	if (rc)
		return rc < 0 ? -20 : rc;
	if (qid)
		return 0;
	h->cntlid = (uint16_t)cpl.dw0;
	/* CC: EN, IOSQES 6 (64 bytes), IOCQES 4 (16 bytes), 4 KiB pages, NVM command set. */
	rc = prop_set(h, PROP_CC, 1u | 6u << 16 | 4u << 20);
	if (rc)
		return rc < 0 ? -21 : rc;
	deadline = mono_ms() + TIMEOUT_MS;
	while (!(csts & 1) && mono_ms() < deadline) {
		rc = prop_get(h, PROP_CSTS, &csts);
		if (rc)
			return rc < 0 ? -22 : rc;
	}
	return (csts & 3) == 1 ? 0 : -23; /* RDY, not CFS */
}
