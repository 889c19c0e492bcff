/* An NVMe/RDMA host over the guest-side RDMA helpers; see nvmf_host.h. */
#include "nvmf_host.h"

#include <string.h>
#include <time.h>

#define PD         1
#define MR_INDEX   1
#define AH_ID      1
#define GSI_RECVS  32
#define GSI_RECV   512                      /* bytes between GSI receive buffers: GRH area (40) and MAD */
#define QP_ACCESS  (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ)
#define RSP_LEN    16
#define RSP_STRIDE 64

/* Each ring fits its place, the host's buffers the region. */
_Static_assert((RG_CQE_SIZE << NVMF_HOST_CQ_DEPTH_LOG2) <= 0x8000, "CQ ring");
_Static_assert((128u << NVMF_HOST_QP_DEPTH_LOG2) <= 0x10000, "QP ring");
_Static_assert((64u << NVMF_HOST_QP_DEPTH_LOG2) <= 0x8000 && (RSP_STRIDE << NVMF_HOST_QP_DEPTH_LOG2) <= 0x8000,
	       "capsules and responses");
_Static_assert((MAD_SIZE << NVMF_HOST_GSI_DEPTH_LOG2) <= 0x60000 - 0x55000 &&
		       (GSI_RECV << NVMF_HOST_GSI_DEPTH_LOG2) <= 0x80000 - 0x60000,
	       "GSI buffers");

static uint8_t *gp(struct nvmf_host *h, uint64_t addr) { return guest_ptr(&h->g, addr); }

/* The lkey of the host's own buffers on a slot's QP. */
static uint32_t buf_key(const struct nvmf_host *h) { return h->cfg.privileged ? 0 : NVMF_HOST_MR_KEY; }

void nvmf_cpl_parse(struct nvmf_cpl *c, const uint8_t r[16])
{
	c->dw0 = rg_get_le32(r);
	c->dw1 = rg_get_le32(r + 4);
	c->sqhd = rg_get_le16(r + 8);
	c->sqid = rg_get_le16(r + 10);
	c->cid = rg_get_le16(r + 12);
	c->status = (uint16_t)(rg_get_le16(r + 14) >> 1);
}

/* ---- set-up ---- */

static void gsi_recv_put(struct nvmf_host *h)
{
	uint32_t slot = h->gsi.rq_prod & ((1u << NVMF_HOST_GSI_DEPTH_LOG2) - 1);
	const struct rg_sge s = { NVMF_HOST_GSI_BUF + (uint64_t)GSI_RECV * slot, 40 + MAD_SIZE, 0 };

	rg_post_recv(&h->g, &h->gsi, slot, 0, &s, 1);
}

int nvmf_host_setup(struct nvmf_host *h, struct vfc *c, const struct nvmf_host_config *cfg)
{
	memset(h, 0, sizeof(*h));
	h->cfg = *cfg;
	h->eq.irq_fd = -1;
	if (ionic_guest_setup(&h->g, c))
		return -1;
	return nvmf_host_rdma_up(h);
}

int nvmf_host_rdma_up(struct nvmf_host *h)
{
	const struct nvmf_host_config *cfg = &h->cfg;
	uint8_t tmpl[RG_ROCE4_HDR_LEN], dmac[6] = { 0x02, 0x4e }, smac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };
	int rc;

	rg_eq_close(&h->eq);
	rc = rg_probe(&h->g, &h->eq, &h->acq, &h->aq, 8, 4);
	if (rc)
		return rc - 1;
	memset(h->q, 0, sizeof(h->q));
	memset(gp(h, RG_SCRATCH), 0, RG_SCRATCH_SIZE);
	for (uint32_t i = 0; i < 2 + 2 * NVMF_HOST_SLOTS; i++)
		if (rg_cq_create_aq(&h->g, &h->aq, &h->cq[i], 10 + i, 0, NVMF_HOST_CQ_DEPTH_LOG2, NVMF_HOST_CQ(i)))
			return -6;
	if (rg_mr_create(&h->g, &h->aq, MR_INDEX, (uint8_t)NVMF_HOST_MR_KEY, PD, NVMF_HOST_CAP(0),
			 NVMF_HOST_IO + NVMF_HOST_IO_LEN - NVMF_HOST_CAP(0), 1, NVMF_HOST_CAP(0),
			 RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12))
		return -7;
	/* The controller answers ARP with 02:4e and its address: the MAC the driver would resolve. */
	for (int i = 0; i < 4; i++)
		dmac[2 + i] = (uint8_t)(cfg->ctrl_ip >> (24 - 8 * i));
	rg_roce4_template(tmpl, dmac, smac, cfg->host_ip, cfg->ctrl_ip, 0, 64);
	if (rg_ah_create(&h->g, &h->aq, AH_ID, PD, NVMF_HOST_AH, tmpl, sizeof(tmpl)))
		return -8;
	h->gsi = (struct rg_qp){ .id = 1, .type = RG_QPT_UD, .pd = PD, .priv_flags = RG_QPF_PRIVILEGED,
				 .sq_cq = nvmf_host_gsi_scq(h)->id, .rq_cq = nvmf_host_gsi_rcq(h)->id,
				 .sq = NVMF_HOST_GSI_SQ, .rq = NVMF_HOST_GSI_RQ,
				 .sq_depth_log2 = NVMF_HOST_GSI_DEPTH_LOG2, .rq_depth_log2 = NVMF_HOST_GSI_DEPTH_LOG2,
				 .sq_stride_log2 = 7, .rq_stride_log2 = 7 };
	if (rg_qp_create(&h->g, &h->aq, &h->gsi) || rg_qp_to_rts(&h->g, &h->aq, &h->gsi, RG_QKEY_GSI, 0))
		return -9;
	for (int i = 0; i < GSI_RECVS; i++)
		gsi_recv_put(h);
	rg_rq_ring(&h->g, &h->gsi);
	return 0;
}

void nvmf_host_teardown(struct nvmf_host *h)
{
	rg_eq_close(&h->eq);
	ionic_guest_teardown(&h->g);
}

/* ---- the connection manager over the GSI QP ---- */

int nvmf_host_mad_send(struct nvmf_host *h, const uint8_t mad[MAD_SIZE])
{
	uint32_t slot = h->gsi.sq_prod & ((1u << NVMF_HOST_GSI_DEPTH_LOG2) - 1);
	const struct rg_sge s = { NVMF_HOST_MADS + (uint64_t)MAD_SIZE * slot, MAD_SIZE, 0 };
	uint8_t cqe[RG_CQE_SIZE];

	memcpy(gp(h, s.va), mad, MAD_SIZE);
	rg_post_ud(&h->g, &h->gsi, slot, RG_WR_SEND, RG_WQE_SIG, 0, AH_ID, 1, RG_QKEY_GSI, &s, 1);
	rg_sq_ring(&h->g, &h->gsi);
	rg_sync(&h->g);
	if (!rg_cq_wait(&h->g, nvmf_host_gsi_scq(h), cqe, NVMF_HOST_TIMEOUT_MS))
		return -1;
	rg_cq_ack(&h->g, nvmf_host_gsi_scq(h));
	return rg_cqe_type(cqe) == RG_CQE_SEND_NPG && !rg_cqe_error(cqe) ? 0 : -1;
}

int nvmf_host_mad_recv(struct nvmf_host *h, uint8_t mad[MAD_SIZE], int timeout_ms)
{
	uint8_t cqe[RG_CQE_SIZE];
	uint64_t slot;

	rg_sync(&h->g);
	if (!rg_cq_wait(&h->g, nvmf_host_gsi_rcq(h), cqe, timeout_ms))
		return 0;
	rg_cq_ack(&h->g, nvmf_host_gsi_rcq(h));
	slot = rg_cqe_wqe_id(cqe);
	if (rg_cqe_type(cqe) != RG_CQE_RECV || rg_cqe_error(cqe) || slot >= (1u << NVMF_HOST_GSI_DEPTH_LOG2))
		return -1;
	memcpy(mad, gp(h, NVMF_HOST_GSI_BUF + GSI_RECV * slot + 40), MAD_SIZE);
	gsi_recv_put(h);
	rg_rq_ring(&h->g, &h->gsi);
	return 1;
}

/* An IPv4-mapped GID. */
static void gid_v4(uint8_t *p, uint32_t ip)
{
	memset(p, 0, 16);
	p[10] = p[11] = 0xff;
	mad_put32(p, 12, ip);
}

void nvmf_host_mad_req(const struct nvmf_host *h, uint8_t m[MAD_SIZE], uint32_t comm_id, uint32_t qpn, uint16_t qid,
		       uint16_t size)
{
	mad_hdr(m, ATTR_REQ, 0x100000000ull | comm_id);
	mad_put32(m, REQ_LCID, comm_id);
	mad_put64(m, REQ_SID, 0x0106ull << 16 | h->cfg.port); /* RDMA_PS_TCP, port */
	mad_put64(m, REQ_CAGUID, 0x0245520000000001ull);
	mad_put24(m, REQ_QPN, qpn);
	m[REQ_RRES] = 16;
	m[REQ_IDEPTH] = 16;
	m[REQ_B43] = (uint8_t)(20 << 3 | 0 << 1 | 1); /* CM timeout, RC, end-to-end credits */
	mad_put24(m, REQ_PSN, 0x2000 + qpn);
	m[REQ_B47] = (uint8_t)(20 << 3 | 7);
	mad_put16(m, REQ_PKEY, 0xffff);
	m[REQ_B50] = (uint8_t)(3 << 4 | 7); /* MTU 1024, RNR retry 7 */
	m[REQ_B51] = (uint8_t)(15 << 4);
	gid_v4(m + REQ_LGID, h->cfg.host_ip);
	gid_v4(m + REQ_RGID, h->cfg.ctrl_ip);
	/* rdma_cm's cma_hdr: version 0, IPv4, source port, addresses in the last 4 of 16 bytes. */
	m[CMA_IPVER] = 4 << 4;
	mad_put16(m, CMA_PORT, (uint16_t)(0xc000 + (qpn & 0xfff)));
	mad_put32(m, CMA_SRC + 12, h->cfg.host_ip);
	mad_put32(m, CMA_DST + 12, h->cfg.ctrl_ip);
	/* nvme_rdma_cm_req: recfmt 0, qid, hrqsize, hsqsize (0's based). */
	mad_put_le16(m, NVME_REQ + 2, qid);
	mad_put_le16(m, NVME_REQ + 4, size);
	mad_put_le16(m, NVME_REQ + 6, (uint16_t)(size - 1));
}

void nvmf_mad_ids(uint8_t m[MAD_SIZE], uint16_t attr, uint32_t lcid, uint32_t rcid)
{
	mad_hdr(m, attr, 0x200000000ull | lcid);
	mad_put32(m, X_LCID, lcid);
	mad_put32(m, X_RCID, rcid);
}

int nvmf_host_cm_req(struct nvmf_host *h, uint32_t qpn, uint16_t qid, uint16_t size, uint32_t *comm_id,
		     uint8_t answer[MAD_SIZE])
{
	uint8_t m[MAD_SIZE];

	*comm_id = 0x47000001u + h->comm_ids++;
	nvmf_host_mad_req(h, m, *comm_id, qpn, qid, size);
	if (nvmf_host_mad_send(h, m) || nvmf_host_mad_recv(h, answer, NVMF_HOST_TIMEOUT_MS) != 1)
		return -1;
	return mad_get16(answer, H_ATTR);
}

int nvmf_host_qp_create(struct nvmf_host *h, unsigned k, uint32_t qpn)
{
	struct rg_qp *q = &h->q[k].qp;

	*q = (struct rg_qp){ .id = qpn, .type = RG_QPT_RC, .pd = PD,
			     .priv_flags = h->cfg.privileged ? RG_QPF_PRIVILEGED : 0,
			     .sq_cq = nvmf_host_scq(h, k)->id, .rq_cq = nvmf_host_rcq(h, k)->id,
			     .sq = NVMF_HOST_QPR(k), .rq = NVMF_HOST_QPR(k) + 0x10000,
			     .sq_depth_log2 = NVMF_HOST_QP_DEPTH_LOG2, .rq_depth_log2 = NVMF_HOST_QP_DEPTH_LOG2,
			     .sq_stride_log2 = 7, .rq_stride_log2 = 7 };
	return rg_qp_create(&h->g, &h->aq, q);
}

int nvmf_host_cm_connect(struct nvmf_host *h, unsigned k, uint32_t qpn, uint16_t qid, uint16_t size)
{
	struct nvmf_slot *s = &h->q[k];
	struct nvmf_conn c = { .qid = qid };
	uint8_t mad[MAD_SIZE];
	int attr;

	if (nvmf_host_qp_create(h, k, qpn))
		return -1;
	attr = nvmf_host_cm_req(h, qpn, qid, size, &c.host_comm_id, mad);
	if (attr < 0)
		return -2;
	if (attr != ATTR_REP)
		return -3;
	if (mad_get32(mad, REP_RCID) != c.host_comm_id)
		return -4;
	c.ctrl_comm_id = mad_get32(mad, REP_LCID);
	c.ctrl_qpn = mad_get24(mad, REP_QPN);
	if (rg_qp_to_rts(&h->g, &h->aq, &s->qp, c.ctrl_qpn, QP_ACCESS))
		return -5;
	s->conn = c;
	s->next_cid = 1;
	nvmf_mad_ids(mad, ATTR_RTU, c.host_comm_id, c.ctrl_comm_id);
	return nvmf_host_mad_send(h, mad) ? -6 : 0;
}

/* ---- capsules ---- */

void nvmf_sqe(uint8_t sqe[64], uint8_t opcode, uint16_t cid, uint32_t nsid)
{
	memset(sqe, 0, 64);
	sqe[0] = opcode;
	sqe[1] = 1u << 6; /* PSDT: SGL for data */
	rg_le16(sqe + 2, cid);
	rg_le32(sqe + 4, nsid);
	sqe[39] = 0x4 << 4; /* SGL1: keyed data block, address subtype, length 0 */
}

/* SGL1 @24: address, 3-byte length, 4-byte key, type 4 << 4 | subtype 0. */
void nvmf_sqe_data(uint8_t sqe[64], uint64_t addr, uint32_t len, uint32_t key)
{
	rg_le64(sqe + 24, addr);
	sqe[32] = (uint8_t)len;
	sqe[33] = (uint8_t)(len >> 8);
	sqe[34] = (uint8_t)(len >> 16);
	rg_le32(sqe + 35, key);
	sqe[39] = 0x4 << 4;
}

void nvmf_sqe_rw(uint8_t sqe[64], uint8_t opcode, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb,
		 uint32_t flags)
{
	nvmf_sqe(sqe, opcode, cid, nsid);
	rg_le64(sqe + 40, slba);
	rg_le32(sqe + 48, (nlb - 1) | flags);
}

void nvmf_sqe_prop(uint8_t sqe[64], uint16_t cid, bool set, uint32_t off, uint64_t v)
{
	nvmf_sqe(sqe, NVMF_OP_FABRICS, cid, 0);
	sqe[4] = set ? NVMF_FCTYPE_PROP_SET : NVMF_FCTYPE_PROP_GET;
	sqe[40] = 0; /* attrib: 4 bytes */
	rg_le32(sqe + 44, off);
	if (set)
		rg_le64(sqe + 48, v);
}

void nvmf_host_connect_sqe(struct nvmf_host *h, uint8_t sqe[64], uint16_t cid, uint16_t qid, uint16_t sqsize,
			   uint32_t kato_ms, uint16_t cntlid)
{
	uint8_t *d = gp(h, NVMF_HOST_CDATA);

	nvmf_sqe(sqe, NVMF_OP_FABRICS, cid, 0);
	sqe[4] = NVMF_FCTYPE_CONNECT;
	rg_le16(sqe + 42, qid);
	rg_le16(sqe + 44, sqsize);
	rg_le32(sqe + 48, kato_ms);
	memset(d, 0, 1024);
	memcpy(d, h->cfg.hostid, 16);
	rg_le16(d + 16, cntlid);
	strncpy((char *)d + 256, h->cfg.subnqn, 255);
	strncpy((char *)d + 512, h->cfg.hostnqn, 255);
	nvmf_sqe_data(sqe, NVMF_HOST_CDATA, 1024, NVMF_HOST_MR_KEY);
}

uint16_t nvmf_host_cid(struct nvmf_host *h, unsigned k)
{
	return h->q[k].next_cid++;
}

void nvmf_host_capsule_put(struct nvmf_host *h, unsigned k, const uint8_t sqe[64])
{
	struct rg_qp *q = &h->q[k].qp;
	uint32_t slot = q->sq_prod & ((1u << NVMF_HOST_QP_DEPTH_LOG2) - 1);
	const struct rg_sge s = { NVMF_HOST_CAP(k) + 64ull * slot, 64, buf_key(h) };

	memcpy(gp(h, s.va), sqe, 64);
	rg_post_send(&h->g, q, slot, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &s, 1);
}

int nvmf_host_send_done(struct nvmf_host *h, unsigned k)
{
	uint8_t cqe[RG_CQE_SIZE];

	if (!rg_cq_next(&h->g, nvmf_host_scq(h, k), cqe))
		return -1;
	rg_cq_ack(&h->g, nvmf_host_scq(h, k));
	if (rg_cqe_type(cqe) != RG_CQE_SEND_MSN)
		return -1;
	return rg_cqe_error(cqe) ? (int)rg_get_be32(cqe + 24) : 0;
}

int nvmf_host_capsule(struct nvmf_host *h, unsigned k, const uint8_t sqe[64])
{
	nvmf_host_capsule_put(h, k, sqe);
	rg_sq_ring(&h->g, &h->q[k].qp);
	return nvmf_host_send_done(h, k);
}

void nvmf_host_recv_put(struct nvmf_host *h, unsigned k)
{
	struct rg_qp *q = &h->q[k].qp;
	uint32_t slot = q->rq_prod & ((1u << NVMF_HOST_QP_DEPTH_LOG2) - 1);
	const struct rg_sge s = { NVMF_HOST_RSP(k) + (uint64_t)RSP_STRIDE * slot, RSP_LEN, buf_key(h) };

	memset(gp(h, s.va), 0xee, RSP_STRIDE);
	rg_post_recv(&h->g, q, slot, 0, &s, 1);
}

void nvmf_host_post_recvs(struct nvmf_host *h, unsigned k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		nvmf_host_recv_put(h, k);
	rg_rq_ring(&h->g, &h->q[k].qp);
}

int nvmf_host_rsp(struct nvmf_host *h, unsigned k, struct nvmf_cpl *cpl, int timeout_ms)
{
	uint8_t cqe[RG_CQE_SIZE];
	uint64_t slot;

	rg_sync(&h->g);
	if (!rg_cq_wait(&h->g, nvmf_host_rcq(h, k), cqe, timeout_ms))
		return 0;
	rg_cq_ack(&h->g, nvmf_host_rcq(h, k));
	slot = rg_cqe_wqe_id(cqe);
	if (rg_cqe_type(cqe) != RG_CQE_RECV || rg_cqe_error(cqe) || (rg_get_be32(cqe + 24) & 0xffffff) != RSP_LEN ||
	    slot >= (1u << NVMF_HOST_QP_DEPTH_LOG2))
		return -1;
	nvmf_cpl_parse(cpl, gp(h, NVMF_HOST_RSP(k) + RSP_STRIDE * slot));
	return 1;
}

int nvmf_host_submit(struct nvmf_host *h, unsigned k, const uint8_t sqe[64])
{
	nvmf_host_post_recvs(h, k, 1);
	return nvmf_host_capsule(h, k, sqe);
}

int nvmf_host_command(struct nvmf_host *h, unsigned k, const uint8_t sqe[64], struct nvmf_cpl *cpl)
{
	if (nvmf_host_submit(h, k, sqe) || nvmf_host_rsp(h, k, cpl, NVMF_HOST_TIMEOUT_MS) != 1 ||
	    cpl->cid != rg_get_le16(sqe + 2))
		return -1;
	return cpl->status;
}

int nvmf_host_fabrics_connect(struct nvmf_host *h, unsigned k, uint16_t qid, uint16_t sqsize, uint32_t kato_ms,
			      uint16_t cntlid, struct nvmf_cpl *cpl)
{
	uint8_t sqe[64];
	int st;

	nvmf_host_connect_sqe(h, sqe, nvmf_host_cid(h, k), qid, sqsize, kato_ms, cntlid);
	st = nvmf_host_command(h, k, sqe, cpl);
	if (st == 0) {
		h->q[k].cntlid = (uint16_t)cpl->dw0;
		if (qid == 0)
			h->cntlid = (uint16_t)cpl->dw0;
	}
	return st;
}

int nvmf_host_prop_set(struct nvmf_host *h, unsigned k, uint32_t off, uint32_t v)
{
	uint8_t sqe[64];
	struct nvmf_cpl cpl;

	nvmf_sqe_prop(sqe, nvmf_host_cid(h, k), true, off, v);
	return nvmf_host_command(h, k, sqe, &cpl);
}

int nvmf_host_prop_get(struct nvmf_host *h, unsigned k, uint32_t off, uint32_t *v)
{
	uint8_t sqe[64];
	struct nvmf_cpl cpl = { 0 };
	int st;

	nvmf_sqe_prop(sqe, nvmf_host_cid(h, k), false, off, 0);
	st = nvmf_host_command(h, k, sqe, &cpl);
	*v = cpl.dw0;
	return st;
}

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int nvmf_host_connect(struct nvmf_host *h, unsigned k, uint32_t qpn, uint16_t qid, uint16_t size, uint32_t kato_ms)
{
	struct nvmf_cpl cpl;
	uint32_t csts = 0;
	long deadline;
	int rc;

	rc = nvmf_host_cm_connect(h, k, qpn, qid, size);
	if (rc)
		return rc;
	rc = nvmf_host_fabrics_connect(h, k, qid, (uint16_t)(size - 1), kato_ms, qid ? h->cntlid : 0xffff, &cpl);
	if (rc || qid)
		return rc < 0 ? -7 : rc;
	rc = nvmf_host_prop_set(h, k, NVMF_PROP_CC, NVMF_CC_ENABLE);
	if (rc)
		return rc < 0 ? -7 : rc;
	deadline = mono_ms() + NVMF_HOST_TIMEOUT_MS;
	while (!(csts & 1) && mono_ms() < deadline) {
		rc = nvmf_host_prop_get(h, k, NVMF_PROP_CSTS, &csts);
		if (rc)
			return rc < 0 ? -7 : rc;
	}
	return (csts & 3) == 1 ? 0 : -8; /* RDY, not CFS */
}
