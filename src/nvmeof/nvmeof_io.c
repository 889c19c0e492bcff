/*
 * The NVM I/O command set on I/O queues (NVM Command Set 2.0 3): Read,
 * Write, Flush, Write Zeroes and Dataset Management. Payloads move by RDMA
 * READ/WRITE against the command's keyed SGL: straight between guest memory
 * and a RAM namespace, through one bounce buffer for a file image.
 */
#include "nvmeof/nvmeof_target_priv.h"

#include <string.h>

#include "util/log.h"

#define NVME_RW_FUA    (1u << 30)
#define NVME_WZ_DEAC   (1u << 25)
#define NVME_DSM_AD    (1u << 2)
#define NVME_DSM_MAX_RANGES 256

struct lba_range {
	uint64_t off, len; /* bytes */
};

static uint16_t check_nsid(struct nvmeof_req *r)
{
	if (le32_get(r->cmd->nsid) == r->q->t->cfg.nsid)
		return NVME_SC_SUCCESS;
	r->err_loc = offsetof(struct nvme_cmd, nsid);
	return nvmeof_dnr(NVME_SC_INVALID_NS);
}

/* [slba, slba + nlb) must lie in the namespace; never adds before checking. */
static uint16_t check_range(struct nvmeof_req *r, uint64_t slba, uint64_t nlb, struct lba_range *out)
{
	const struct nvmeof_ns *ns = r->q->t->ns;
	uint64_t blocks = ns->size / ns->bs;

	if (slba > blocks || nlb > blocks - slba) {
		r->err_loc = offsetof(struct nvme_cmd, cdw10);
		r->err_lba = slba;
		return nvmeof_dnr(NVME_SC_LBA_RANGE);
	}
	out->off = slba * ns->bs;
	out->len = nlb * ns->bs;
	return NVME_SC_SUCCESS;
}

static uint64_t cmd_slba(const struct nvme_cmd *cmd)
{
	return (uint64_t)le32_get(cmd->cdw11) << 32 | le32_get(cmd->cdw10);
}

static uint16_t exec_rw(struct nvmeof_req *r, bool write)
{
	struct nvmeof_target *t = r->q->t;
	struct nvmeof_ns *ns = t->ns;
	uint32_t dw12 = le32_get(r->cmd->cdw12);
	uint64_t nlb = (dw12 & 0xffffu) + 1u;
	struct lba_range rg;
	uint16_t st;
	int rc;

	st = check_nsid(r);
	if (st)
		return st;
	if (nlb * ns->bs > NVMEOF_MAX_XFER) { /* MDTS */
		r->err_loc = offsetof(struct nvme_cmd, cdw12);
		return nvmeof_dnr(NVME_SC_INVALID_FIELD);
	}
	st = check_range(r, cmd_slba(r->cmd), nlb, &rg);
	if (!st)
		st = nvmeof_req_expect_len(r, (uint32_t)rg.len);
	if (st)
		return st;
	if (!write) {
		if (ns->ram) {
			st = nvmeof_req_to_host(r, 0, ns->ram + rg.off, (uint32_t)rg.len);
		} else {
			rc = nvmeof_ns_read(ns, rg.off, t->bounce, (size_t)rg.len);
			st = rc ? nvmeof_dnr(NVME_SC_READ_ERROR) : nvmeof_req_to_host(r, 0, t->bounce, (uint32_t)rg.len);
		}
		if (!st) {
			t->stats.reads++;
			t->stats.bytes_read += rg.len;
		}
		return st;
	}
	if (ns->ram) {
		/* All or nothing: a failed RDMA READ leaves the namespace untouched. */
		st = nvmeof_req_from_host(r, 0, ns->ram + rg.off, (uint32_t)rg.len);
	} else {
		st = nvmeof_req_from_host(r, 0, t->bounce, (uint32_t)rg.len);
		if (!st) {
			bool fua = (dw12 & NVME_RW_FUA) || !r->ctrl->wce;

			rc = nvmeof_ns_write(ns, rg.off, t->bounce, (size_t)rg.len, fua);
			if (rc) {
				LOG_WARN("nvmeof: write of %llu bytes at %llu failed: %s",
					 (unsigned long long)rg.len, (unsigned long long)rg.off, strerror(-rc));
				st = nvmeof_dnr(NVME_SC_WRITE_FAULT);
			}
		}
	}
	if (!st) {
		t->stats.writes++;
		t->stats.bytes_written += rg.len;
	}
	return st;
}

static uint16_t do_flush(struct nvmeof_req *r)
{
	struct nvmeof_target *t = r->q->t;
	int rc = nvmeof_ns_flush(t->ns);

	t->stats.flushes++;
	if (rc == 0)
		return NVME_SC_SUCCESS;
	LOG_ERR("nvmeof: flush of %s failed: %s", t->ns->path ? t->ns->path : "the namespace", strerror(-rc));
	return nvmeof_dnr(NVME_SC_WRITE_FAULT);
}

static uint16_t exec_flush(struct nvmeof_req *r)
{
	uint32_t nsid = le32_get(r->cmd->nsid);
	uint16_t st = nvmeof_req_expect_len(r, 0);

	if (st)
		return st;
	if (nsid != 0xffffffffu && (st = check_nsid(r)) != 0)
		return st;
	return do_flush(r);
}

static uint16_t exec_write_zeroes(struct nvmeof_req *r)
{
	struct nvmeof_target *t = r->q->t;
	uint32_t dw12 = le32_get(r->cmd->cdw12);
	struct lba_range rg;
	uint16_t st = nvmeof_req_expect_len(r, 0);
	int rc;

	if (!st)
		st = check_nsid(r);
	if (!st)
		st = check_range(r, cmd_slba(r->cmd), (dw12 & 0xffffu) + 1u, &rg);
	if (st)
		return st;
	rc = nvmeof_ns_zero(t->ns, rg.off, rg.len, (dw12 & NVME_WZ_DEAC) != 0);
	if (rc)
		return nvmeof_dnr(NVME_SC_WRITE_FAULT);
	t->stats.writes++;
	if ((dw12 & NVME_RW_FUA) || (nvmeof_ns_volatile_cache(t->ns) && !r->ctrl->wce))
		return do_flush(r);
	return NVME_SC_SUCCESS;
}

static uint16_t exec_dsm(struct nvmeof_req *r)
{
	static _Thread_local struct nvme_dsm_range ranges[NVME_DSM_MAX_RANGES];
	struct nvmeof_target *t = r->q->t;
	uint32_t nr = (le32_get(r->cmd->cdw10) & 0xffu) + 1u, need = nr * (uint32_t)sizeof(ranges[0]);
	struct lba_range rg;
	uint16_t st = check_nsid(r);

	/*
	 * The range list may come in a longer buffer (Linux's host can send a whole page for
	 * any NR); only the first NR entries count, as Linux's nvmet reads them. A buffer
	 * shorter than the list is refused.
	 */
	if (!st && r->xfer_len < need) {
		r->err_loc = offsetof(struct nvme_cmd, dptr);
		st = nvmeof_dnr(NVME_SC_SGL_INVALID_DATA);
	}
	if (!st)
		st = nvmeof_req_from_host(r, 0, ranges, need);
	if (st)
		return st;
	if (!(le32_get(r->cmd->cdw11) & NVME_DSM_AD))
		return NVME_SC_SUCCESS; /* attribute hints only: nothing to do */
	/* Check every range before touching any, so a bad one changes nothing. */
	for (uint32_t i = 0; i < nr; i++) {
		st = check_range(r, le64_get(ranges[i].slba), le32_get(ranges[i].nlb), &rg);
		if (st)
			return st;
	}
	for (uint32_t i = 0; i < nr; i++) {
		check_range(r, le64_get(ranges[i].slba), le32_get(ranges[i].nlb), &rg);
		if (nvmeof_ns_zero(t->ns, rg.off, rg.len, true) != 0)
			return nvmeof_dnr(NVME_SC_WRITE_FAULT);
	}
	return NVME_SC_SUCCESS;
}

uint16_t nvmeof_io_exec(struct nvmeof_req *r)
{
	switch (r->cmd->opcode) {
	case NVME_IO_READ:
		return exec_rw(r, false);
	case NVME_IO_WRITE:
		return exec_rw(r, true);
	case NVME_IO_FLUSH:
		return exec_flush(r);
	case NVME_IO_WRITE_ZEROES:
		return exec_write_zeroes(r);
	case NVME_IO_DSM:
		return exec_dsm(r);
	default:
		r->err_loc = offsetof(struct nvme_cmd, opcode);
		return nvmeof_dnr(NVME_SC_INVALID_OPCODE);
	}
}
