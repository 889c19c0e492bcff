/*
 * Internals shared by nvmeof_target.c (queues, dispatch, Fabrics commands,
 * data transfer, completions), nvmeof_admin.c (the admin command set) and
 * nvmeof_io.c (the NVM I/O command set). Not for use outside src/nvmeof.
 */
#ifndef ERNIC_NVMEOF_NVMEOF_TARGET_PRIV_H
#define ERNIC_NVMEOF_NVMEOF_TARGET_PRIV_H

#include "nvmeof/nvmeof_target.h"

#define NVMEOF_MAX_QID 64 /* queues= is 1..64 */

struct nvmeof_ctrl;

struct nvmeof_qpair {
	struct nvmeof_target *t;
	struct nvmeof_ctrl *ctrl;  /* NULL until Fabrics Connect */
	struct dma_ops dma;
	void *transport_qp;
	uint16_t qid;      /* the qid the CM accepted */
	uint16_t size;     /* sqsize + 1 */
	uint16_t sqhd;
	bool disconnecting;
};

struct nvmeof_ctrl {
	struct nvmeof_target *t;
	uint16_t cntlid;
	bool discovery;
	char hostnqn[NVME_NQN_FIELD];
	uint8_t hostid[16];
	struct nvmeof_qpair *queues[NVMEOF_MAX_QID + 1]; /* [0] admin */
	uint32_t cc, csts;
	uint32_t kato_ms;          /* 0: no keep-alive timeout */
	uint64_t last_ka_ms;       /* the last command of any kind (for the log) */
	uint64_t ka_check_ms;      /* when the keep-alive timer next looks */
	bool ka_traffic;           /* a command came since it last looked (TBKAS) */
	uint16_t nr_io_queues;     /* granted by Number of Queues (or the ceiling) */
	bool nr_queues_set;
	bool fatal;
	uint32_t aec;              /* Asynchronous Event Configuration */
	uint16_t aer_cids[NVMEOF_AERL + 1];
	unsigned int aer_count;
	bool wce;                  /* volatile write cache enabled (file-backed only) */
	uint32_t arbitration, power_mgmt, err_recovery, write_atomic;
	uint16_t temp_over, temp_under;
};

struct nvmeof_target {
	struct nvmeof_config cfg;
	struct nvmeof_ns *ns;
	struct nvmeof_target_ops ops;
	struct nvmeof_ctrl *ctrls[NVMEOF_MAX_CTRLS];
	uint16_t next_cntlid;
	uint8_t *bounce;           /* NVMEOF_MAX_XFER bytes, for file-backed transfers */
	uint8_t nguid[16];
	uint8_t uuid[16];
	uint64_t start_ms;
	/* Error log (ring, newest last) and SMART counters. */
	struct nvme_error_slot errlog[NVMEOF_ERROR_LOG_SLOTS];
	uint64_t error_count;
	uint64_t units_read, units_written;   /* bytes / 512, rounded up at report time */
	struct nvmeof_target_stats stats;
};

/* One command in flight: what the handlers read and fill. */
struct nvmeof_req {
	struct nvmeof_qpair *q;
	struct nvmeof_ctrl *ctrl;
	const struct nvme_cmd *cmd;
	struct nvme_cpl cpl;
	uint32_t xfer_len;     /* the SGL's data length (0: no data) */
	uint32_t key;
	uint64_t addr;
	uint32_t inv_rkey;
	uint16_t err_loc;      /* parameter error location for the error log */
	uint64_t err_lba;
	bool deferred;         /* an AER: answered later */
};

/* Status helpers. */
static inline uint16_t nvmeof_dnr(uint16_t sc) { return (uint16_t)(sc | NVME_STATUS_DNR); }

/* Data transfer against the command's keyed SGL; return an NVMe status. */
uint16_t nvmeof_req_expect_len(struct nvmeof_req *r, uint32_t len);
uint16_t nvmeof_req_to_host(struct nvmeof_req *r, uint32_t off, const void *src, uint32_t len);
uint16_t nvmeof_req_from_host(struct nvmeof_req *r, uint32_t off, void *dst, uint32_t len);

/* Send a completion for (q, cid). */
void nvmeof_complete(struct nvmeof_qpair *q, uint16_t cid, uint16_t status, uint32_t cdw0,
		     uint32_t inv_rkey);

/* Handlers: return an NVMe status (with DNR as needed). */
uint16_t nvmeof_admin_exec(struct nvmeof_req *r);
uint16_t nvmeof_io_exec(struct nvmeof_req *r);

/* Controller events used across files. */
void nvmeof_ctrl_keep_alive(struct nvmeof_ctrl *c);
/* Any other command: traffic-based keep-alive (TBKAS), as Linux nvmet counts it. */
void nvmeof_ctrl_traffic(struct nvmeof_ctrl *c);
uint64_t nvmeof_now(const struct nvmeof_target *t);

#endif
