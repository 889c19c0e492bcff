/*
 * A minimal NVMe over Fabrics RDMA host on the guest-side RDMA helpers
 * (ionic_rdma_guest.h): what the stock nvme-rdma host does over the ionic
 * device, without a guest. The connection manager is reached through the
 * GSI queue pair (UD, QP 1) with an address handle for the controller's
 * address: a REQ carrying rdma_cm's cma_hdr and the NVMe/RDMA private data,
 * the REP it answers with, an RTU. Every queue is then an RC queue pair
 * connected to the controller's QP; capsules are 64-byte SENDs, responses
 * arrive in 16-byte receives, and data moves by the controller's RDMA
 * READ/WRITE against one memory region that covers the host's buffers.
 *
 * MADs and capsules are built here at the byte offsets of the IBA tables and
 * the NVMe / NVMe-oF specifications, not through the server's headers, so a
 * test built on this checks the server against the specifications.
 *
 * Guest memory: the host takes [RG_SCRATCH, RG_SCRATCH + RG_SCRATCH_SIZE)
 * (rings, MAD and capsule buffers, and NVMF_HOST_DATA_SLOTS data buffers of
 * NVMF_HOST_DATA_SIZE bytes) and RDMA objects: CQs 30-35, QPs 1 and 40-41,
 * AH 5, MR index 1. Functions returning int give 0 or a negative step number
 * (or the NVMe status of a failed command, positive).
 */
#ifndef ERNIC_TESTS_NVMF_HOST_H
#define ERNIC_TESTS_NVMF_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "ionic_rdma_guest.h"

#define NVMF_HOST_QUEUES       2       /* the admin queue and one I/O queue */
#define NVMF_HOST_DEPTH        32      /* entries per queue (the admin queue's limit) */
#define NVMF_HOST_DATA_SLOTS   8
#define NVMF_HOST_DATA_SIZE    (128u << 10)

/* Capsule opcodes and the fields this host fills in. */
enum {
	NVMF_OP_FLUSH = 0x00, NVMF_OP_WRITE = 0x01, NVMF_OP_READ = 0x02, NVMF_OP_FABRICS = 0x7f,
	NVMF_ADM_IDENTIFY = 0x06,
};
#define NVMF_RW_FUA (1u << 30) /* cdw12 */

/* The controller to reach. */
struct nvmf_host_config {
	uint32_t host_ip, ctrl_ip;    /* IPv4, host order */
	uint16_t port;
	const char *subnqn, *hostnqn;
};

struct nvmf_queue {
	uint16_t qid;
	struct rg_qp qp;
	struct rg_cq scq, rcq;
	uint32_t ctrl_qpn;
	uint64_t caps, rsps;          /* capsule and response slots (bus addresses) */
	uint32_t outstanding;         /* capsules sent and not answered */
};

struct nvmf_host {
	struct ionic_guest *g;
	struct rg_aq *aq;
	struct nvmf_host_config cfg;
	struct rg_qp gsi;
	struct rg_cq gsi_scq, gsi_rcq;
	uint32_t gsi_recv_next;       /* free-running count of GSI receives taken */
	uint32_t comm_id;             /* the next local communication ID */
	uint64_t tid;
	uint16_t cntlid;
	struct nvmf_queue q[NVMF_HOST_QUEUES];
	uint32_t lkey;                /* the memory region covering every host buffer */
};

/* A response capsule as the host reads it. */
struct nvmf_cpl {
	uint32_t dw0, dw1;
	uint16_t sqhd, sqid, cid, status; /* status: the 15-bit status field (phase bit removed) */
};

/*
 * Set up the RDMA side (on a guest with the RDMA admin queue aq and EQ 0):
 * the region, the GSI QP with its receives, the address handle.
 */
int nvmf_host_init(struct nvmf_host *h, struct ionic_guest *g, struct rg_aq *aq, const struct nvmf_host_config *cfg);

/*
 * Connect queue qid (0: admin) through the CM and Fabrics Connect; for the
 * admin queue also enable the controller (CC.EN, wait for CSTS.RDY).
 * kato_ms goes into the Connect command.
 */
int nvmf_host_connect(struct nvmf_host *h, uint16_t qid, uint32_t kato_ms);

/* The bus address and the guest pointer of data slot i. */
uint64_t nvmf_host_data(const struct nvmf_host *h, unsigned i);
uint8_t *nvmf_host_data_ptr(struct nvmf_host *h, unsigned i);

/*
 * Send a capsule on queue qid: sqe (64 bytes) as given, with the command ID
 * and, when len is not 0, a keyed SGL over len bytes of data slot `slot`
 * (PSDT set). No wait: the doorbell is rung. The capsule is written to
 * slot cid % NVMF_HOST_DEPTH, which must not hold a capsule still in flight.
 * Returns 0, or -1 when the queue already holds NVMF_HOST_DEPTH capsules.
 */
int nvmf_host_submit(struct nvmf_host *h, uint16_t qid, uint8_t sqe[64], uint16_t cid, unsigned slot, uint32_t len);

/* Wait up to timeout_ms for the next response on queue qid. */
bool nvmf_host_reap(struct nvmf_host *h, uint16_t qid, struct nvmf_cpl *cpl, int timeout_ms);

/* One command and its response (status returned: 0 success, -1 no response); nothing else in flight. */
int nvmf_host_cmd(struct nvmf_host *h, uint16_t qid, uint8_t sqe[64], unsigned slot, uint32_t len,
		  struct nvmf_cpl *cpl);

/* Capsule builders: zeroed, with the opcode; the helpers below fill the common fields. */
void nvmf_sqe(uint8_t sqe[64], uint8_t opcode, uint32_t nsid);
void nvmf_sqe_rw(uint8_t sqe[64], uint8_t opcode, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t flags);

#endif
