/*
 * The admin command set of the target's controllers (NVM Express Base 2.0
 * 5.x): Identify, Get Log Page, Get/Set Features, Abort, Asynchronous Event
 * Request and Keep Alive. A discovery controller (NVMe-oF 1.1 5) answers the
 * subset nvme discover uses.
 */
#include "nvmeof/nvmeof_target_priv.h"

#include <stdio.h>
#include <string.h>

#include "util/parse_int.h"

#define ID_BYTES 4096

static uint32_t cdw(le32 v) { return le32_get(v); }

/* Space-padded, not NUL-terminated identify strings. */
static void pad_str(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n);

	memset(dst, ' ', n);
	memcpy(dst, src, len);
}

static void put_u128(uint8_t dst[16], uint64_t v)
{
	memset(dst, 0, 16);
	for (int i = 0; i < 8; i++)
		dst[i] = (uint8_t)(v >> (8 * i));
}

/* ---- Identify ------------------------------------------------------------------------------ */

static void id_ctrl(const struct nvmeof_ctrl *c, struct nvme_id_ctrl *id)
{
	const struct nvmeof_target *t = c->t;
	bool vwc = nvmeof_ns_volatile_cache(t->ns);

	pad_str(id->sn, sizeof(id->sn), t->cfg.serial);
	pad_str(id->mn, sizeof(id->mn), t->cfg.model);
	pad_str(id->fr, sizeof(id->fr), ERNIC_VERSION);
	id->rab = 6;
	id->cmic = 1u << 1;      /* several controllers (hosts) may share the subsystem */
	id->mdts = NVMEOF_MDTS;
	id->cntlid = le16_set(c->cntlid);
	id->ver = le32_set(0x00010300);
	id->cntrltype = c->discovery ? 2 : 1;
	id->acl = 3;
	id->aerl = NVMEOF_AERL;
	id->frmw = 1u << 0 | 1u << 1; /* one slot, read-only */
	id->lpa = 1u << 1 | 1u << 2;  /* effects log, extended Get Log Page data (offsets) */
	id->elpe = NVMEOF_ERROR_LOG_SLOTS - 1;
	id->wctemp = le16_set(0x0157);
	id->cctemp = le16_set(0x0175);
	id->kas = le16_set(NVMEOF_KAS_100MS);
	id->sqes = 6u << 4 | 6u;
	id->cqes = 4u << 4 | 4u;
	id->maxcmd = le16_set(NVMEOF_MAX_QUEUE_SIZE);
	if (!c->discovery) {
		id->nn = le32_set(t->cfg.nsid);
		id->oncs = le16_set(1u << 2 | 1u << 3); /* Dataset Management, Write Zeroes */
		id->ctratt = le32_set(1u << 6);         /* Traffic Based Keep Alive, as nvmet */
		/* Flush to nsid FFFFFFFFh is supported; a write cache only exists for file images. */
		id->vwc = (uint8_t)(3u << 1 | (vwc ? 1u : 0u));
	}
	id->sgls = le32_set(1u << 0 | 1u << 2); /* SGLs, keyed SGL data block */
	strncpy(id->subnqn, c->discovery ? NVME_DISC_SUBSYS_NQN : t->cfg.nqn, sizeof(id->subnqn) - 1);
	id->ioccsz = le32_set(4);  /* 64-byte capsules: never in-capsule data */
	id->iorcsz = le32_set(1);
	id->msdbd = 1;
	id->psd[0].max_power = le16_set(2500); /* 25 W, in 0.01 W */
	id->psd[0].entry_lat = le32_set(16);
	id->psd[0].exit_lat = le32_set(4);
}

static void id_ns(const struct nvmeof_target *t, struct nvme_id_ns *id)
{
	uint64_t blocks = t->ns->size / t->ns->bs;
	unsigned int shift = 0;

	while ((1u << shift) < t->ns->bs)
		shift++;
	id->nsze = le64_set(blocks);
	id->ncap = le64_set(blocks);
	id->nuse = le64_set(blocks);
	id->nsfeat = 1u << 3;   /* NGUID and EUI64 are never reused */
	id->nlbaf = 0;          /* one format */
	id->nmic = 1u << 0;     /* may be attached to several controllers */
	id->dlfeat = 1u << 3 | 1u; /* deallocated blocks read as zeroes; Write Zeroes may deallocate */
	put_u128(id->nvmcap, t->ns->size);
	memcpy(id->nguid, t->nguid, sizeof(id->nguid));
	id->lbaf[0].ds = (uint8_t)shift;
}

static size_t id_ns_descs(const struct nvmeof_target *t, uint8_t *buf)
{
	static const uint8_t csi_nvm = 0;
	struct { uint8_t nidt, nidl; const void *v; } d[] = {
		{ 2, 16, t->nguid }, { 3, 16, t->uuid }, { 4, 1, &csi_nvm },
	};
	size_t off = 0;

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		struct nvme_ns_id_desc h = { .nidt = d[i].nidt, .nidl = d[i].nidl };

		memcpy(buf + off, &h, sizeof(h));
		memcpy(buf + off + sizeof(h), d[i].v, d[i].nidl);
		off += sizeof(h) + d[i].nidl;
	}
	return off;
}

static uint16_t exec_identify(struct nvmeof_req *r)
{
	static _Thread_local uint8_t buf[ID_BYTES];
	struct nvmeof_ctrl *c = r->ctrl;
	const struct nvmeof_target *t = c->t;
	uint32_t cns = cdw(r->cmd->cdw10) & 0xffu, nsid = le32_get(r->cmd->nsid);
	uint32_t csi = cdw(r->cmd->cdw11) >> 24;
	uint16_t st = nvmeof_req_expect_len(r, ID_BYTES);

	if (st)
		return st;
	memset(buf, 0, sizeof(buf));
	r->err_loc = offsetof(struct nvme_cmd, cdw10);
	if (c->discovery && cns != NVME_ID_CNS_CTRL)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	switch (cns) {
	case NVME_ID_CNS_CTRL:
		id_ctrl(c, (struct nvme_id_ctrl *)buf);
		break;
	case NVME_ID_CNS_NS:
		if (nsid == 0 || nsid > t->cfg.nsid)
			goto bad_nsid;
		if (nsid == t->cfg.nsid) /* an inactive namespace identifies as zeroes */
			id_ns(t, (struct nvme_id_ns *)buf);
		break;
	case NVME_ID_CNS_NS_ACTIVE_LIST:
		if (nsid >= 0xfffffffeu)
			goto bad_nsid;
		if (t->cfg.nsid > nsid) {
			le32 v = le32_set(t->cfg.nsid);

			memcpy(buf, &v, sizeof(v));
		}
		break;
	case NVME_ID_CNS_NS_DESC_LIST:
		if (nsid != t->cfg.nsid)
			goto bad_nsid;
		id_ns_descs(t, buf);
		break;
	case NVME_ID_CNS_CS_CTRL:
		/* NVM command set specific controller data: no limits beyond MDTS to report. */
		if (csi != 0)
			return nvmeof_dnr(NVME_SC_INVALID_FIELD);
		break;
	default:
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	}
	return nvmeof_req_to_host(r, 0, buf, ID_BYTES);
bad_nsid:
	r->err_loc = offsetof(struct nvme_cmd, nsid);
	return nvmeof_dnr(NVME_SC_INVALID_NS);
}

/* ---- Get Log Page --------------------------------------------------------------------------- */

static size_t log_error_info(const struct nvmeof_target *t, uint8_t *buf)
{
	/* Newest first. */
	for (unsigned int i = 0; i < NVMEOF_ERROR_LOG_SLOTS; i++)
		memcpy(buf + i * sizeof(struct nvme_error_slot), &t->errlog[NVMEOF_ERROR_LOG_SLOTS - 1 - i],
		       sizeof(struct nvme_error_slot));
	return NVMEOF_ERROR_LOG_SLOTS * sizeof(struct nvme_error_slot);
}

static size_t log_smart(const struct nvmeof_target *t, uint8_t *buf)
{
	struct nvme_smart_log *l = (struct nvme_smart_log *)buf;
	uint64_t hours = (nvmeof_now(t) - t->start_ms) / 3600000u;

	l->temperature = le16_set(313); /* kelvin: 40 C, well under WCTEMP */
	l->avail_spare = 100;
	l->spare_thresh = 10;
	/* Data units are thousands of 512-byte units, rounded up. */
	put_u128(l->data_units_read, (t->stats.bytes_read / 512 + 999) / 1000);
	put_u128(l->data_units_written, (t->stats.bytes_written / 512 + 999) / 1000);
	put_u128(l->host_reads, t->stats.reads);
	put_u128(l->host_writes, t->stats.writes);
	put_u128(l->power_cycles, 1);
	put_u128(l->power_on_hours, hours);
	put_u128(l->num_err_log_entries, t->error_count);
	return sizeof(*l);
}

static size_t log_fw_slot(uint8_t *buf)
{
	struct nvme_fw_slot_log *l = (struct nvme_fw_slot_log *)buf;

	l->afi = 1;
	pad_str(l->frs[0], sizeof(l->frs[0]), ERNIC_VERSION);
	return sizeof(*l);
}

static size_t log_effects(uint8_t *buf)
{
	static const uint8_t admin[] = { NVME_ADM_GET_LOG_PAGE, NVME_ADM_IDENTIFY, NVME_ADM_ABORT,
					 NVME_ADM_SET_FEATURES, NVME_ADM_GET_FEATURES,
					 NVME_ADM_ASYNC_EVENT, NVME_ADM_KEEP_ALIVE };
	struct nvme_effects_log *l = (struct nvme_effects_log *)buf;
	const uint32_t csupp = 1u << 0, lbcc = 1u << 1;

	for (size_t i = 0; i < sizeof(admin); i++)
		l->acs[admin[i]] = le32_set(csupp);
	l->iocs[NVME_IO_FLUSH] = le32_set(csupp);
	l->iocs[NVME_IO_READ] = le32_set(csupp);
	l->iocs[NVME_IO_WRITE] = le32_set(csupp | lbcc);
	l->iocs[NVME_IO_WRITE_ZEROES] = le32_set(csupp | lbcc);
	l->iocs[NVME_IO_DSM] = le32_set(csupp | lbcc);
	return sizeof(*l);
}

static size_t log_discovery(const struct nvmeof_target *t, uint8_t *buf)
{
	struct nvmf_disc_hdr *h = (struct nvmf_disc_hdr *)buf;
	struct nvmf_disc_entry *e = (struct nvmf_disc_entry *)(buf + sizeof(*h));
	char ip[16];

	/* One subsystem, one port, never changing: the generation counter stays 1. */
	h->genctr = le64_set(1);
	h->numrec = le64_set(1);
	e->trtype = 1;   /* RDMA */
	e->adrfam = 1;   /* IPv4 */
	e->subtype = 2;  /* an NVM subsystem */
	e->treq = 0;     /* secure channel not specified */
	e->portid = le16_set(1);
	e->cntlid = le16_set(NVME_CNTLID_DYNAMIC);
	e->asqsz = le16_set(NVMEOF_ADMIN_QUEUE_SIZE);
	snprintf(e->trsvcid, sizeof(e->trsvcid), "%u", t->cfg.port);
	strncpy(e->subnqn, t->cfg.nqn, sizeof(e->subnqn) - 1);
	format_ipv4(t->cfg.ip, ip);
	strncpy(e->traddr, ip, sizeof(e->traddr) - 1);
	e->tsas_qptype = 1; /* reliable connected */
	e->tsas_prtype = 1; /* no provider specified */
	e->tsas_cms = 1;    /* RDMA CM */
	return sizeof(*h) + sizeof(*e);
}

static uint16_t exec_get_log_page(struct nvmeof_req *r)
{
	static _Thread_local uint8_t buf[4096];
	static const uint8_t zeroes[4096];
	struct nvmeof_ctrl *c = r->ctrl;
	struct nvmeof_target *t = c->t;
	uint32_t dw10 = cdw(r->cmd->cdw10), dw11 = cdw(r->cmd->cdw11);
	uint8_t lid = (uint8_t)dw10;
	uint64_t numd = ((uint64_t)(dw11 & 0xffffu) << 16 | dw10 >> 16) + 1;
	uint64_t off = (uint64_t)cdw(r->cmd->cdw13) << 32 | cdw(r->cmd->cdw12);
	uint32_t nsid = le32_get(r->cmd->nsid);
	size_t size;
	uint16_t st;

	if (numd * 4 > 0xffffffu) /* a keyed SGL carries at most 16 MiB - 1 */
		return nvmeof_req_expect_len(r, 0xffffffffu);
	st = nvmeof_req_expect_len(r, (uint32_t)(numd * 4));
	if (st)
		return st;
	memset(buf, 0, sizeof(buf));
	r->err_loc = offsetof(struct nvme_cmd, cdw10);
	if (c->discovery != (lid == NVME_LOG_DISC))
		return nvmeof_dnr(NVME_SC_INVALID_LOG_PAGE);
	switch (lid) {
	case NVME_LOG_ERROR:
		size = log_error_info(t, buf);
		break;
	case NVME_LOG_SMART:
		if (nsid != 0 && nsid != 0xffffffffu && nsid != t->cfg.nsid) {
			r->err_loc = offsetof(struct nvme_cmd, nsid);
			return nvmeof_dnr(NVME_SC_INVALID_NS);
		}
		size = log_smart(t, buf);
		break;
	case NVME_LOG_FW_SLOT:
		size = log_fw_slot(buf);
		break;
	case NVME_LOG_CHANGED_NS: /* the namespace never changes: an empty list */
		size = 4096;
		break;
	case NVME_LOG_CMD_EFFECTS:
		size = log_effects(buf);
		break;
	case NVME_LOG_DISC:
		size = log_discovery(t, buf);
		break;
	default:
		return nvmeof_dnr(NVME_SC_INVALID_LOG_PAGE);
	}
	r->err_loc = offsetof(struct nvme_cmd, cdw12);
	if ((off & 3u) != 0 || off > size)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	/* The log page, then zeroes for whatever the host asked for past its end. */
	{
		uint32_t len = (uint32_t)(numd * 4), n = (uint32_t)(size - off) < len ? (uint32_t)(size - off) : len;

		st = nvmeof_req_to_host(r, 0, buf + off, n);
		for (uint32_t done = n; !st && done < len;) {
			uint32_t z = len - done < sizeof(zeroes) ? len - done : (uint32_t)sizeof(zeroes);

			st = nvmeof_req_to_host(r, done, zeroes, z);
			done += z;
		}
	}
	return st;
}

/* ---- Features ---------------------------------------------------------------------------------- */

static uint16_t set_num_queues(struct nvmeof_req *r, uint32_t dw11)
{
	struct nvmeof_ctrl *c = r->ctrl;
	uint32_t nsqr = dw11 & 0xffffu, ncqr = dw11 >> 16, max = c->t->cfg.queues;
	uint32_t nsqa, ncqa;

	if (nsqr == 0xffffu || ncqr == 0xffffu)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	for (unsigned int qid = 1; qid <= NVMEOF_MAX_QID; qid++)
		if (c->queues[qid])
			return nvmeof_dnr(NVME_SC_CMD_SEQ_ERROR);
	nsqa = nsqr + 1 < max ? nsqr + 1 : max;
	ncqa = ncqr + 1 < max ? ncqr + 1 : max;
	c->nr_io_queues = (uint16_t)(nsqa < ncqa ? nsqa : ncqa);
	c->nr_queues_set = true;
	r->cpl.cdw0 = le32_set((ncqa - 1) << 16 | (nsqa - 1));
	return NVME_SC_SUCCESS;
}

static uint16_t exec_set_features(struct nvmeof_req *r)
{
	struct nvmeof_ctrl *c = r->ctrl;
	uint32_t dw10 = cdw(r->cmd->cdw10), dw11 = cdw(r->cmd->cdw11);
	uint8_t fid = (uint8_t)dw10;
	uint16_t st = nvmeof_req_expect_len(r, 0);

	if (st)
		return st;
	r->err_loc = offsetof(struct nvme_cmd, cdw10);
	if (dw10 & 1u << 31)
		return nvmeof_dnr(NVME_SC_FEATURE_NOT_SAVEABLE);
	if (c->discovery && fid != NVME_FEAT_ASYNC_EVENT && fid != NVME_FEAT_KATO)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	r->err_loc = offsetof(struct nvme_cmd, cdw11);
	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		c->arbitration = dw11;
		break;
	case NVME_FEAT_POWER_MGMT:
		if ((dw11 & 0x1fu) != 0) /* one power state */
			return nvmeof_dnr(NVME_SC_INVALID_FIELD);
		c->power_mgmt = dw11;
		break;
	case NVME_FEAT_TEMP_THRESH:
		/* Only the composite temperature (TMPSEL 0); THSEL 0 over, 1 under. */
		if (((dw11 >> 16) & 0xfu) != 0 || ((dw11 >> 20) & 0x3u) > 1)
			return nvmeof_dnr(NVME_SC_INVALID_FIELD);
		if ((dw11 >> 20) & 0x3u)
			c->temp_under = (uint16_t)dw11;
		else
			c->temp_over = (uint16_t)dw11;
		break;
	case NVME_FEAT_ERR_RECOVERY:
		c->err_recovery = dw11;
		break;
	case NVME_FEAT_VOLATILE_WC:
		if (!nvmeof_ns_volatile_cache(c->t->ns))
			return nvmeof_dnr(NVME_SC_INVALID_FIELD);
		c->wce = dw11 & 1u;
		break;
	case NVME_FEAT_NUM_QUEUES:
		return set_num_queues(r, dw11);
	case NVME_FEAT_WRITE_ATOMIC:
		c->write_atomic = dw11 & 1u;
		break;
	case NVME_FEAT_ASYNC_EVENT:
		c->aec = dw11;
		break;
	case NVME_FEAT_KATO:
		c->kato_ms = (dw11 + 999u) / 1000u * 1000u;
		nvmeof_ctrl_keep_alive(c);
		break;
	default:
		r->err_loc = offsetof(struct nvme_cmd, cdw10);
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	}
	return NVME_SC_SUCCESS;
}

/* Current value of a feature, or -1 if the controller does not have it. */
static int64_t feature_current(const struct nvmeof_ctrl *c, uint8_t fid, uint32_t dw11)
{
	switch (fid) {
	case NVME_FEAT_ARBITRATION: return c->arbitration;
	case NVME_FEAT_POWER_MGMT: return c->power_mgmt;
	case NVME_FEAT_TEMP_THRESH:
		if (((dw11 >> 16) & 0xfu) != 0 || ((dw11 >> 20) & 0x3u) > 1)
			return -1;
		return ((dw11 >> 20) & 0x3u) ? c->temp_under : c->temp_over;
	case NVME_FEAT_ERR_RECOVERY: return c->err_recovery;
	case NVME_FEAT_VOLATILE_WC: return c->wce;
	case NVME_FEAT_NUM_QUEUES:
		return (int64_t)(c->nr_io_queues - 1u) << 16 | (c->nr_io_queues - 1u);
	case NVME_FEAT_WRITE_ATOMIC: return c->write_atomic;
	case NVME_FEAT_ASYNC_EVENT: return c->aec;
	case NVME_FEAT_KATO: return c->kato_ms;
	default: return -1;
	}
}

static uint16_t exec_get_features(struct nvmeof_req *r)
{
	struct nvmeof_ctrl *c = r->ctrl;
	uint32_t dw10 = cdw(r->cmd->cdw10), sel = (dw10 >> 8) & 7u;
	uint8_t fid = (uint8_t)dw10;
	int64_t v;
	uint16_t st = nvmeof_req_expect_len(r, 0);

	if (st)
		return st;
	r->err_loc = offsetof(struct nvme_cmd, cdw10);
	if ((c->discovery && fid != NVME_FEAT_ASYNC_EVENT && fid != NVME_FEAT_KATO) ||
	    (c->discovery && fid == NVME_FEAT_NUM_QUEUES) || sel > 3)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	v = feature_current(c, fid, cdw(r->cmd->cdw11));
	if (v < 0)
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	if (sel == 3) /* supported capabilities: changeable, not saveable, not per namespace */
		v = 1u << 2;
	r->cpl.cdw0 = le32_set((uint32_t)v);
	return NVME_SC_SUCCESS;
}

/* ---- Abort, Asynchronous Event Request, Keep Alive ------------------------------------------------ */

static uint16_t exec_abort(struct nvmeof_req *r)
{
	struct nvmeof_ctrl *c = r->ctrl;
	uint32_t dw10 = cdw(r->cmd->cdw10);
	uint16_t sqid = (uint16_t)dw10, cid = (uint16_t)(dw10 >> 16);

	/* Everything but an AER ran to completion when it arrived: only AERs can be aborted. */
	r->cpl.cdw0 = le32_set(1); /* not aborted */
	if (sqid != 0)
		return NVME_SC_SUCCESS;
	for (unsigned int i = 0; i < c->aer_count; i++) {
		if (c->aer_cids[i] != cid)
			continue;
		memmove(&c->aer_cids[i], &c->aer_cids[i + 1], (c->aer_count - i - 1) * sizeof(c->aer_cids[0]));
		c->aer_count--;
		nvmeof_complete(r->q, cid, NVME_SC_ABORT_REQ, 0, 0);
		r->cpl.cdw0 = le32_set(0);
		break;
	}
	return NVME_SC_SUCCESS;
}

static uint16_t exec_async_event(struct nvmeof_req *r)
{
	struct nvmeof_ctrl *c = r->ctrl;

	if (c->aer_count > NVMEOF_AERL)
		return nvmeof_dnr(NVME_SC_ASYNC_LIMIT);
	/* No event source exists yet (one static namespace): the request waits for Abort or teardown. */
	c->aer_cids[c->aer_count++] = r->cmd->cid;
	r->deferred = true;
	return NVME_SC_SUCCESS;
}

uint16_t nvmeof_admin_exec(struct nvmeof_req *r)
{
	switch (r->cmd->opcode) {
	case NVME_ADM_IDENTIFY:
		return exec_identify(r);
	case NVME_ADM_GET_LOG_PAGE:
		return exec_get_log_page(r);
	case NVME_ADM_SET_FEATURES:
		return exec_set_features(r);
	case NVME_ADM_GET_FEATURES:
		return exec_get_features(r);
	case NVME_ADM_ABORT:
		return exec_abort(r);
	case NVME_ADM_ASYNC_EVENT:
		return exec_async_event(r);
	case NVME_ADM_KEEP_ALIVE:
		nvmeof_ctrl_keep_alive(r->ctrl);
		return NVME_SC_SUCCESS;
	default:
		r->err_loc = offsetof(struct nvme_cmd, opcode);
		return nvmeof_dnr(NVME_SC_INVALID_OPCODE);
	}
}
