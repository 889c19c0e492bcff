/*
 * NVMe-oF target core: queue pairs, capsule dispatch, SGL handling and data
 * transfer, completions, the Fabrics commands (Connect, Property Get/Set),
 * controller enable/reset/shutdown and keep-alive.
 *
 * Tracks NVM Express Base 2.0 and NVMe over Fabrics 1.1; where the specs
 * leave room, behaviour follows the Linux nvmet target (Linux 7.2), which is
 * what the stock host driver is tested against.
 */
#include "nvmeof/nvmeof_target_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define NVMEOF_VS 0x00010300u /* 1.3: namespace descriptor lists, KATO */

uint64_t nvmeof_now(const struct nvmeof_target *t)
{
	return t->ops.now_ms(t->ops.ctx);
}

/* A stable 64-bit FNV-1a over the identity strings: NGUID and UUID survive a restart. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static void make_ids(struct nvmeof_target *t)
{
	uint64_t a = fnv1a(0xcbf29ce484222325ull, t->cfg.serial);
	uint64_t b = fnv1a(a ^ t->cfg.nsid, t->cfg.nqn);

	for (int i = 0; i < 8; i++) {
		t->nguid[i] = (uint8_t)(a >> (56 - 8 * i));
		t->nguid[8 + i] = (uint8_t)(b >> (56 - 8 * i));
		t->uuid[i] = (uint8_t)(b >> (8 * i));
		t->uuid[8 + i] = (uint8_t)(a >> (8 * i));
	}
	t->uuid[6] = (uint8_t)((t->uuid[6] & 0x0f) | 0x40); /* RFC 4122 version 4 layout */
	t->uuid[8] = (uint8_t)((t->uuid[8] & 0x3f) | 0x80);
}

struct nvmeof_target *nvmeof_target_create(const struct nvmeof_config *cfg, struct nvmeof_ns *ns,
					   const struct nvmeof_target_ops *ops)
{
	struct nvmeof_target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cfg = *cfg;
	if (t->cfg.queues > NVMEOF_MAX_QID)
		t->cfg.queues = NVMEOF_MAX_QID;
	t->ns = ns;
	t->ops = *ops;
	t->next_cntlid = 1;
	if (!ns->ram) {
		t->bounce = malloc(NVMEOF_MAX_XFER);
		if (!t->bounce) {
			free(t);
			return NULL;
		}
	}
	make_ids(t);
	t->start_ms = nvmeof_now(t);
	return t;
}

void nvmeof_target_destroy(struct nvmeof_target *t)
{
	if (!t)
		return;
	for (unsigned int i = 0; i < NVMEOF_MAX_CTRLS; i++) {
		struct nvmeof_ctrl *c = t->ctrls[i];

		if (!c)
			continue;
		for (unsigned int qid = 0; qid <= NVMEOF_MAX_QID; qid++)
			if (c->queues[qid])
				c->queues[qid]->ctrl = NULL;
		free(c);
	}
	free(t->bounce);
	free(t);
}

void nvmeof_target_get_stats(const struct nvmeof_target *t, struct nvmeof_target_stats *out)
{
	*out = t->stats;
}

/* ---- queue pairs ------------------------------------------------------------------------- */

struct nvmeof_qpair *nvmeof_qpair_create(struct nvmeof_target *t, uint16_t qid, uint16_t sqsize,
					 const struct dma_ops *dma, void *transport_qp)
{
	struct nvmeof_qpair *q;

	if (qid > NVMEOF_MAX_QID)
		return NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->t = t;
	q->dma = *dma;
	q->transport_qp = transport_qp;
	q->qid = qid;
	q->size = sqsize == UINT16_MAX ? UINT16_MAX : (uint16_t)(sqsize + 1u);
	return q;
}

static void ctrl_free(struct nvmeof_ctrl *c)
{
	struct nvmeof_target *t = c->t;

	for (unsigned int i = 0; i < NVMEOF_MAX_CTRLS; i++)
		if (t->ctrls[i] == c)
			t->ctrls[i] = NULL;
	free(c);
}

/* Ask the transport to drop a queue; it may destroy q before this returns. */
static void qpair_disconnect(struct nvmeof_qpair *q)
{
	if (q->disconnecting)
		return;
	q->disconnecting = true;
	q->t->ops.disconnect(q->t->ops.ctx, q->transport_qp);
}

/* Disconnect the I/O queues of c, highest qid first. */
static void ctrl_disconnect_io(struct nvmeof_ctrl *c)
{
	for (unsigned int qid = NVMEOF_MAX_QID; qid >= 1; qid--) {
		struct nvmeof_qpair *q = c->queues[qid];

		if (q)
			qpair_disconnect(q); /* may free q and clear c->queues[qid] */
	}
}

void nvmeof_qpair_destroy(struct nvmeof_qpair *q)
{
	struct nvmeof_ctrl *c;

	if (!q)
		return;
	c = q->ctrl;
	if (c && c->queues[q->qid] == q) {
		c->queues[q->qid] = NULL;
		/*
		 * A host tearing its controller down stops its keep-alives first, then
		 * disconnects the I/O queues one by one before the Property Set that
		 * shuts the controller down. A slow host (a guest on a loaded machine:
		 * 32 queues took 12 s) would see its controller lost on the way: each
		 * queue it takes down counts as traffic, like a command.
		 */
		if (q->qid != 0 && !c->fatal)
			nvmeof_ctrl_traffic(c);
		if (q->qid == 0) {
			/*
			 * The admin queue is the controller's lifetime: without it no
			 * host can reach the controller, so its I/O queues go too.
			 */
			for (unsigned int qid = 1; qid <= NVMEOF_MAX_QID; qid++) {
				struct nvmeof_qpair *io = c->queues[qid];

				if (io) {
					c->queues[qid] = NULL;
					io->ctrl = NULL;
					qpair_disconnect(io);
				}
			}
			LOG_DEBUG("nvmeof: controller %u released", c->cntlid);
			ctrl_free(c);
		}
	}
	free(q);
}

/* Controller fatal status (keep-alive timeout): every queue goes, the admin queue last. */
static void ctrl_fatal(struct nvmeof_ctrl *c)
{
	struct nvmeof_qpair *admin = c->queues[0];

	c->fatal = true;
	c->csts |= NVME_CSTS_CFS;
	ctrl_disconnect_io(c);
	if (admin)
		qpair_disconnect(admin); /* may free c: do not touch it afterwards */
}

/* ---- completions and the error log ----------------------------------------------------- */

static void send_cpl(struct nvmeof_qpair *q, struct nvme_cpl *cpl, uint32_t inv_rkey)
{
	q->t->ops.send_rsp(q->t->ops.ctx, q->transport_qp, cpl, inv_rkey);
}

void nvmeof_complete(struct nvmeof_qpair *q, uint16_t cid, uint16_t status, uint32_t cdw0,
		     uint32_t inv_rkey)
{
	struct nvme_cpl cpl;

	memset(&cpl, 0, sizeof(cpl));
	cpl.cdw0 = le32_set(cdw0);
	cpl.sqhd = le16_set(q->sqhd);
	cpl.sqid = le16_set(q->qid);
	cpl.cid = cid;
	cpl.status = le16_set((uint16_t)(status << 1));
	send_cpl(q, &cpl, inv_rkey);
}

static void log_error(struct nvmeof_req *r, uint16_t status)
{
	struct nvmeof_target *t = r->q->t;
	struct nvme_error_slot *e;

	t->stats.errors++;
	memmove(&t->errlog[0], &t->errlog[1], sizeof(t->errlog) - sizeof(t->errlog[0]));
	e = &t->errlog[NVMEOF_ERROR_LOG_SLOTS - 1];
	memset(e, 0, sizeof(*e));
	e->error_count = le64_set(++t->error_count);
	e->sqid = le16_set(r->q->qid);
	e->cmdid = le16_set(r->cmd->cid);
	e->status_field = le16_set((uint16_t)(status << 1));
	e->param_error_location = le16_set(r->err_loc);
	e->lba = le64_set(r->err_lba);
	e->nsid = r->cmd->nsid;
	e->trtype = 1; /* RDMA */
}

/* ---- SGL and data transfer -------------------------------------------------------------- */

/*
 * Read the command's data pointer. The transport always sends one SGL data
 * descriptor: keyed (the data lives behind an rkey in guest memory), or
 * in-capsule with no data. ioccsz 4 leaves no room for in-capsule data.
 */
static uint16_t parse_sgl(struct nvmeof_req *r)
{
	const struct nvme_sgl_desc *d = &r->cmd->dptr;
	unsigned int type = d->type >> 4, sub = d->type & 0xfu;

	r->err_loc = offsetof(struct nvme_cmd, dptr);
	if (type == NVME_SGL_TYPE_KEYED_DATA_BLOCK) {
		uint32_t len = d->length[0] | (uint32_t)d->length[1] << 8 | (uint32_t)d->length[2] << 16;
		uint32_t key = d->key[0] | (uint32_t)d->key[1] << 8 | (uint32_t)d->key[2] << 16 |
			       (uint32_t)d->key[3] << 24;

		if (sub != NVME_SGL_SUBTYPE_ADDRESS && sub != NVME_SGL_SUBTYPE_INVALIDATE)
			return nvmeof_dnr(NVME_SC_SGL_INVALID_TYPE);
		if (len == 0)
			return NVME_SC_SUCCESS;
		/* Key 0 is the driver's reserved DMA key: a raw bus address, never honoured. */
		if (key == 0)
			return nvmeof_dnr(NVME_SC_DATA_XFER_ERROR);
		r->xfer_len = len;
		r->key = key;
		r->addr = le64_get(d->addr);
		if (sub == NVME_SGL_SUBTYPE_INVALIDATE)
			r->inv_rkey = key;
		return NVME_SC_SUCCESS;
	}
	if (type == NVME_SGL_TYPE_DATA_BLOCK && sub == NVME_SGL_SUBTYPE_OFFSET) {
		uint32_t len = d->length[0] | (uint32_t)d->length[1] << 8 | (uint32_t)d->length[2] << 16 |
			       (uint32_t)d->key[0] << 24;

		if (len != 0 || le64_get(d->addr) != 0)
			return nvmeof_dnr(NVME_SC_SGL_INVALID_OFFSET);
		return NVME_SC_SUCCESS;
	}
	return nvmeof_dnr(NVME_SC_SGL_INVALID_TYPE);
}

uint16_t nvmeof_req_expect_len(struct nvmeof_req *r, uint32_t len)
{
	if (r->xfer_len == len)
		return NVME_SC_SUCCESS;
	r->err_loc = offsetof(struct nvme_cmd, dptr);
	return nvmeof_dnr(NVME_SC_SGL_INVALID_DATA);
}

static uint16_t xfer_status(struct nvmeof_req *r, int rc)
{
	if (rc == 0)
		return NVME_SC_SUCCESS;
	LOG_DEBUG("nvmeof: qid %u cid %u: RDMA against key 0x%x failed (%d)", r->q->qid,
		  r->cmd->cid, r->key, rc);
	r->err_loc = offsetof(struct nvme_cmd, dptr);
	return nvmeof_dnr(NVME_SC_DATA_XFER_ERROR);
}

static bool xfer_in_bounds(const struct nvmeof_req *r, uint32_t off, uint32_t len)
{
	return off <= r->xfer_len && len <= r->xfer_len - off && UINT64_MAX - r->addr >= off;
}

uint16_t nvmeof_req_to_host(struct nvmeof_req *r, uint32_t off, const void *src, uint32_t len)
{
	if (len == 0)
		return NVME_SC_SUCCESS;
	if (!xfer_in_bounds(r, off, len))
		return xfer_status(r, -EFAULT);
	return xfer_status(r, r->q->dma.write(r->q->dma.ctx, r->key, r->addr + off, src, len));
}

uint16_t nvmeof_req_from_host(struct nvmeof_req *r, uint32_t off, void *dst, uint32_t len)
{
	if (len == 0)
		return NVME_SC_SUCCESS;
	if (!xfer_in_bounds(r, off, len))
		return xfer_status(r, -EFAULT);
	return xfer_status(r, r->q->dma.read(r->q->dma.ctx, r->key, r->addr + off, dst, len));
}

/* ---- Fabrics: Connect ---------------------------------------------------------------------- */

#define CONNECT_SQE_IPO(field) ((uint32_t)offsetof(struct nvmf_connect_cmd, field))
#define CONNECT_DATA_IPO(field) ((uint32_t)(1u << 16 | offsetof(struct nvmf_connect_data, field)))

static bool nqn_ok(const char *nqn)
{
	return nqn[0] != '\0' && memchr(nqn, '\0', NVME_NQN_FIELD) != NULL;
}

static struct nvmeof_ctrl *ctrl_alloc(struct nvmeof_target *t, bool discovery)
{
	unsigned int slot;
	struct nvmeof_ctrl *c;

	for (slot = 0; slot < NVMEOF_MAX_CTRLS && t->ctrls[slot]; slot++)
		;
	if (slot == NVMEOF_MAX_CTRLS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	/* Controller IDs 1..0xffef, handed out in turn so a stale host never meets its old ID soon. */
	for (;;) {
		uint16_t id = t->next_cntlid;
		bool used = false;

		t->next_cntlid = (uint16_t)(id >= 0xffef ? 1 : id + 1);
		for (unsigned int i = 0; i < NVMEOF_MAX_CTRLS; i++)
			used |= t->ctrls[i] && t->ctrls[i]->cntlid == id;
		if (!used) {
			c->cntlid = id;
			break;
		}
	}
	c->t = t;
	c->discovery = discovery;
	c->nr_io_queues = discovery ? 0 : (uint16_t)t->cfg.queues;
	c->wce = nvmeof_ns_volatile_cache(t->ns);
	c->temp_over = 0x0157; /* 343 K */
	t->ctrls[slot] = c;
	return c;
}

static struct nvmeof_ctrl *ctrl_find(struct nvmeof_target *t, uint16_t cntlid)
{
	for (unsigned int i = 0; i < NVMEOF_MAX_CTRLS; i++)
		if (t->ctrls[i] && t->ctrls[i]->cntlid == cntlid)
			return t->ctrls[i];
	return NULL;
}

static uint16_t connect_admin(struct nvmeof_req *r, const struct nvmf_connect_cmd *cc,
			      const struct nvmf_connect_data *d, bool discovery)
{
	struct nvmeof_target *t = r->q->t;
	struct nvmeof_ctrl *c;

	if (le16_get(d->cntlid) != NVME_CNTLID_DYNAMIC) {
		r->cpl.cdw0 = le32_set(CONNECT_DATA_IPO(cntlid));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	c = ctrl_alloc(t, discovery);
	if (!c)
		return nvmeof_dnr(NVME_SC_CONNECT_CTRL_BUSY);
	memcpy(c->hostnqn, d->hostnqn, sizeof(c->hostnqn));
	memcpy(c->hostid, d->hostid, sizeof(c->hostid));
	/* KATO is kept in the granularity KAS reports (1 s), rounded up. */
	c->kato_ms = (le32_get(cc->kato) + 999u) / 1000u * 1000u;
	nvmeof_ctrl_keep_alive(c);
	c->queues[0] = r->q;
	r->q->ctrl = c;
	LOG_DEBUG("nvmeof: %s controller %u for host %.64s, kato %u ms",
		  discovery ? "discovery" : "I/O", c->cntlid, c->hostnqn, c->kato_ms);
	r->cpl.cdw0 = le32_set(c->cntlid);
	return NVME_SC_SUCCESS;
}

static uint16_t connect_io(struct nvmeof_req *r, const struct nvmf_connect_cmd *cc,
			   const struct nvmf_connect_data *d)
{
	struct nvmeof_ctrl *c = ctrl_find(r->q->t, le16_get(d->cntlid));
	uint16_t qid = le16_get(cc->qid);

	if (!c || c->discovery || strncmp(c->hostnqn, d->hostnqn, NVME_NQN_FIELD) != 0 ||
	    memcmp(c->hostid, d->hostid, sizeof(c->hostid)) != 0) {
		r->cpl.cdw0 = le32_set(CONNECT_DATA_IPO(cntlid));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	if (c->fatal || !(c->csts & NVME_CSTS_RDY))
		return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	if (qid > c->nr_io_queues) {
		r->cpl.cdw0 = le32_set(CONNECT_SQE_IPO(qid));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	if (c->queues[qid]) {
		r->err_loc = offsetof(struct nvmf_connect_cmd, qid);
		return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	}
	c->queues[qid] = r->q;
	r->q->ctrl = c;
	r->cpl.cdw0 = le32_set(c->cntlid);
	return NVME_SC_SUCCESS;
}

static uint16_t fabrics_connect(struct nvmeof_req *r)
{
	const struct nvmf_connect_cmd *cc = (const struct nvmf_connect_cmd *)r->cmd;
	struct nvmeof_target *t = r->q->t;
	struct nvmf_connect_data d;
	uint16_t qid = le16_get(cc->qid), sqsize = le16_get(cc->sqsize), st;
	bool discovery;

	if (r->q->ctrl)
		return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	st = nvmeof_req_expect_len(r, sizeof(d));
	if (!st)
		st = nvmeof_req_from_host(r, 0, &d, sizeof(d));
	if (st)
		return st;
	if (le16_get(cc->recfmt) != 0) {
		r->err_loc = offsetof(struct nvmf_connect_cmd, recfmt);
		return nvmeof_dnr(NVME_SC_CONNECT_FORMAT);
	}
	/* The queue is the one the CM accepted: the capsule must name the same qid. */
	if (qid != r->q->qid) {
		r->cpl.cdw0 = le32_set(CONNECT_SQE_IPO(qid));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	if (sqsize == 0 || sqsize >= (qid ? NVMEOF_MAX_QUEUE_SIZE : NVMEOF_ADMIN_QUEUE_SIZE)) {
		r->cpl.cdw0 = le32_set(CONNECT_SQE_IPO(sqsize));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	if (!nqn_ok(d.subnqn)) {
		r->cpl.cdw0 = le32_set(CONNECT_DATA_IPO(subnqn));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	if (!nqn_ok(d.hostnqn)) {
		r->cpl.cdw0 = le32_set(CONNECT_DATA_IPO(hostnqn));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	discovery = strcmp(d.subnqn, NVME_DISC_SUBSYS_NQN) == 0;
	if (!discovery && strcmp(d.subnqn, t->cfg.nqn) != 0) {
		r->cpl.cdw0 = le32_set(CONNECT_DATA_IPO(subnqn));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	if (discovery && qid != 0) {
		r->cpl.cdw0 = le32_set(CONNECT_SQE_IPO(qid));
		return nvmeof_dnr(NVME_SC_CONNECT_INVALID_PARAM);
	}
	st = qid == 0 ? connect_admin(r, cc, &d, discovery) : connect_io(r, cc, &d);
	if (st == NVME_SC_SUCCESS) {
		r->q->size = (uint16_t)(sqsize + 1);
		r->q->sqhd %= r->q->size;
	}
	return st;
}

/* ---- Fabrics: properties, enable, reset, shutdown ------------------------------------------ */

static uint64_t ctrl_cap(void)
{
	return (uint64_t)(NVMEOF_MAX_QUEUE_SIZE - 1) /* MQES */
	       | 1ull << 16                          /* CQR: contiguous queues */
	       | 15ull << 24                         /* TO: 7.5 s for CSTS.RDY */
	       | 1ull << 37;                         /* CSS: NVM command set; MPSMIN = MPSMAX = 4 KiB */
}

/* Forget what a controller reset forgets: negotiated queues, features, pending AERs. */
static void ctrl_reset_state(struct nvmeof_ctrl *c)
{
	c->csts = 0;
	c->nr_queues_set = false;
	c->nr_io_queues = c->discovery ? 0 : (uint16_t)c->t->cfg.queues;
	c->aer_count = 0;
	c->aec = 0;
	c->wce = nvmeof_ns_volatile_cache(c->t->ns);
}

static void ctrl_shutdown(struct nvmeof_ctrl *c)
{
	struct nvmeof_ns *ns = c->t->ns;
	int rc = nvmeof_ns_flush(ns);

	/* Report the shutdown complete even if writeback failed: the host cannot do better. */
	if (rc)
		LOG_ERR("nvmeof: shutdown of controller %u: cannot write back %s: %s", c->cntlid,
			ns->path ? ns->path : "the namespace", strerror(-rc));
	c->csts = (c->csts & ~NVME_CSTS_SHST_MASK) | NVME_CSTS_SHST_CMPLT;
}

static void ctrl_write_cc(struct nvmeof_ctrl *c, uint32_t cc)
{
	uint32_t old = c->cc;

	c->cc = cc;
	if ((cc & NVME_CC_EN) && !(old & NVME_CC_EN)) {
		bool ok = NVME_CC_CSS(cc) == 0 && NVME_CC_MPS(cc) == 0 && NVME_CC_AMS(cc) == 0 &&
			  (c->discovery || (NVME_CC_IOSQES(cc) == 6 && NVME_CC_IOCQES(cc) == 4));

		if (ok)
			c->csts |= NVME_CSTS_RDY;
		else
			c->csts |= NVME_CSTS_CFS;
	} else if (!(cc & NVME_CC_EN) && (old & NVME_CC_EN)) {
		ctrl_disconnect_io(c);
		ctrl_reset_state(c);
	}
	if (NVME_CC_SHN(cc) && !NVME_CC_SHN(old))
		ctrl_shutdown(c);
	else if (!NVME_CC_SHN(cc) && NVME_CC_SHN(old))
		c->csts &= ~NVME_CSTS_SHST_MASK;
}

static uint16_t fabrics_property(struct nvmeof_req *r, bool set)
{
	const struct nvmf_property_cmd *pc = (const struct nvmf_property_cmd *)r->cmd;
	struct nvmeof_ctrl *c = r->ctrl;
	uint32_t off = le32_get(pc->offset);
	unsigned int size = pc->attrib & 7u;
	uint64_t val;

	r->err_loc = offsetof(struct nvmf_property_cmd, attrib);
	if (size > 1)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	r->err_loc = offsetof(struct nvmf_property_cmd, offset);
	if (set) {
		if (off != NVME_REG_CC || size != 0)
			return nvmeof_dnr(NVME_SC_INVALID_FIELD);
		ctrl_write_cc(c, (uint32_t)le64_get(pc->value));
		return NVME_SC_SUCCESS;
	}
	if (off == NVME_REG_CAP && size == 1)
		val = ctrl_cap();
	else if ((off == NVME_REG_CAP || off == NVME_REG_CAP + 4) && size == 0)
		val = (uint32_t)(ctrl_cap() >> (off == NVME_REG_CAP ? 0 : 32));
	else if (off == NVME_REG_VS && size == 0)
		val = NVMEOF_VS;
	else if (off == NVME_REG_CC && size == 0)
		val = c->cc;
	else if (off == NVME_REG_CSTS && size == 0)
		val = c->csts;
	else
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	r->cpl.cdw0 = le32_set((uint32_t)val);
	r->cpl.cdw1 = le32_set((uint32_t)(val >> 32));
	return NVME_SC_SUCCESS;
}

static uint16_t exec_fabrics(struct nvmeof_req *r)
{
	uint8_t fctype = ((const struct nvmf_connect_cmd *)r->cmd)->fctype;

	if (fctype == NVMF_FCTYPE_CONNECT)
		return fabrics_connect(r);
	if (!r->ctrl)
		return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	if (r->q->qid == 0 && (fctype == NVMF_FCTYPE_PROPERTY_GET || fctype == NVMF_FCTYPE_PROPERTY_SET))
		return fabrics_property(r, fctype == NVMF_FCTYPE_PROPERTY_SET);
	r->err_loc = offsetof(struct nvmf_connect_cmd, fctype);
	return nvmeof_dnr(NVME_SC_INVALID_OPCODE);
}

/* ---- dispatch ----------------------------------------------------------------------------- */

/*
 * The keep-alive timer, as Linux nvmet runs it: a Keep Alive (or Set
 * Features KATO) starts a KATO-long period; when a period ends with no
 * command of any kind in it, the controller is lost; one with commands
 * (traffic-based keep-alive, advertised in CTRATT) starts the next. So a
 * host that sends nothing is dropped between one and two KATOs after its
 * last command, and one that is busy never is.
 */
void nvmeof_ctrl_keep_alive(struct nvmeof_ctrl *c)
{
	uint64_t now = nvmeof_now(c->t);

	c->last_ka_ms = now;
	c->ka_check_ms = now + c->kato_ms;
	c->ka_traffic = false;
}

void nvmeof_ctrl_traffic(struct nvmeof_ctrl *c)
{
	c->last_ka_ms = nvmeof_now(c->t);
	c->ka_traffic = true;
}

static uint16_t dispatch(struct nvmeof_req *r)
{
	const struct nvme_cmd *cmd = r->cmd;
	uint16_t st;

	if (cmd->opcode == NVME_FABRICS) {
		st = parse_sgl(r);
		return st ? st : exec_fabrics(r);
	}
	if (!r->ctrl)
		return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	nvmeof_ctrl_traffic(r->ctrl);
	r->err_loc = offsetof(struct nvme_cmd, flags);
	if (NVME_CMD_FUSE(cmd->flags) != 0 || NVME_CMD_PSDT(cmd->flags) == 0)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	st = parse_sgl(r);
	if (st)
		return st;
	/* Only Fabrics commands run while the controller is disabled (Base 2.0 3.5.1). */
	if (!(r->ctrl->cc & NVME_CC_EN) || !(r->ctrl->csts & NVME_CSTS_RDY))
		return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	if (r->q->qid == 0)
		return nvmeof_admin_exec(r);
	return nvmeof_io_exec(r);
}

void nvmeof_qpair_recv(struct nvmeof_qpair *q, const void *capsule, size_t len)
{
	struct nvmeof_target *t = q->t;
	struct nvme_cmd cmd;
	struct nvmeof_req r;
	uint16_t st;

	if (len < sizeof(cmd) || q->disconnecting) {
		t->stats.dropped++;
		return;
	}
	/* One copy of the capsule: the guest cannot change it while it executes. */
	memcpy(&cmd, capsule, sizeof(cmd));
	t->stats.capsules++;
	q->sqhd = (uint16_t)((q->sqhd + 1u) % q->size);
	memset(&r, 0, sizeof(r));
	r.q = q;
	r.ctrl = q->ctrl;
	r.cmd = &cmd;
	st = dispatch(&r);
	if (r.deferred)
		return;
	if (st != NVME_SC_SUCCESS)
		log_error(&r, st);
	r.cpl.sqhd = le16_set(q->sqhd);
	r.cpl.sqid = le16_set(q->qid);
	r.cpl.cid = cmd.cid;
	r.cpl.status = le16_set((uint16_t)(st << 1));
	send_cpl(q, &r.cpl, r.inv_rkey);
}

/* ---- keep-alive ------------------------------------------------------------------------------ */

void nvmeof_target_tick(struct nvmeof_target *t)
{
	uint64_t now = nvmeof_now(t);

	for (unsigned int i = 0; i < NVMEOF_MAX_CTRLS; i++) {
		struct nvmeof_ctrl *c = t->ctrls[i];

		if (!c || c->fatal || c->kato_ms == 0 || now < c->ka_check_ms)
			continue;
		if (c->ka_traffic) {
			c->ka_traffic = false;
			c->ka_check_ms = now + c->kato_ms;
			continue;
		}
		LOG_WARN("nvmeof: controller %u: no keep-alive for %llu ms (kato %u ms); disconnecting",
			 c->cntlid, (unsigned long long)(now - c->last_ka_ms), c->kato_ms);
		t->stats.ka_timeouts++;
		ctrl_fatal(c); /* may free c */
	}
}
