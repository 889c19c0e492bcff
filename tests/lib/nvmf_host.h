/*
 * An NVMe over Fabrics RDMA host on the guest-side RDMA helpers
 * (ionic_rdma_guest.h): what ionic_rdma's probe, rdma_cm and the stock
 * nvme-rdma host do over the ionic device, without a guest, for tests that
 * drive the server over vfio-user. The connection manager is reached through
 * the GSI queue pair (UD, QP 1) with an address handle for the controller's
 * address: a REQ carrying rdma_cm's cma_hdr and the NVMe/RDMA private data,
 * the REP it answers with, an RTU. Every NVMe queue is then an RC queue pair
 * connected to the controller's QP; capsules are 64-byte SENDs, responses
 * arrive in 16-byte receives, and data moves by the controller's RDMA
 * READ/WRITE against one memory region over the host's buffers.
 *
 * Two levels. The pieces: MADs sent and received as they are, queue pairs
 * in slots (0 to NVMF_HOST_SLOTS - 1) under QP numbers the caller picks,
 * capsules put on a slot's send queue with or without the doorbell, SEND
 * completions, receives posted one at a time, responses read from them. Each
 * reports what it saw, so a test can hold back receives, send from a QP the
 * controller does not know, or connect by hand. Built on them, the host as
 * nvme-rdma runs it: a queue connected through the CM and Fabrics Connect
 * (the admin queue also enabled), and commands each sent with a receive
 * posted for its response.
 *
 * MADs are built at the byte offsets of the IBA tables (ib_mad.h), capsules
 * at those of the NVMe Base 2.0 and NVMe-oF 1.1 specifications, not through
 * the server's headers, so a test built on this checks the server against
 * the specifications.
 *
 * Guest memory: all of RG_SCRATCH, laid out below; NVMF_HOST_IO is the
 * caller's. RDMA objects: EQ 0 on vector 2, admin CQ 0 and admin queue 0,
 * CQs 10-19, QP 1 (GSI), MR index 1, AH 1; the slots' QP numbers are the
 * caller's. Functions returning int give 0 or a negative step number unless
 * they say otherwise; none of them asserts.
 */
#ifndef ERNIC_TESTS_NVMF_HOST_H
#define ERNIC_TESTS_NVMF_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "ib_mad.h"
#include "ionic_rdma_guest.h"

#define NVMF_HOST_SLOTS         4
#define NVMF_HOST_QP_DEPTH_LOG2 9    /* 512-entry SQs and RQs in every slot */
#define NVMF_HOST_CQ_DEPTH_LOG2 10
#define NVMF_HOST_GSI_DEPTH_LOG2 6
#define NVMF_HOST_TIMEOUT_MS    5000 /* for anything that must come */

/* Guest memory. */
#define NVMF_HOST_CQ(i)   (RG_SCRATCH + 0x8000ull * (i))               /* 10 CQs of 1024 x 32 B */
#define NVMF_HOST_GSI_SQ  (RG_SCRATCH + 0x50000)
#define NVMF_HOST_GSI_RQ  (RG_SCRATCH + 0x52000)
#define NVMF_HOST_AH      (RG_SCRATCH + 0x54000)
#define NVMF_HOST_MADS    (RG_SCRATCH + 0x55000)                       /* 64 MADs to send, 256 B each */
#define NVMF_HOST_GSI_BUF (RG_SCRATCH + 0x60000)                       /* 64 GSI receives of 512 B */
#define NVMF_HOST_QPR(k)  (RG_SCRATCH + 0x80000 + 0x20000ull * (k))    /* SQ, RQ at + 0x10000: 512 x 128 B */
#define NVMF_HOST_CAP(k)  (RG_SCRATCH + 0x100000 + 0x8000ull * (k))    /* 512 capsules of 64 B, by SQ slot */
#define NVMF_HOST_RSP(k)  (RG_SCRATCH + 0x120000 + 0x8000ull * (k))    /* 512 response buffers 64 B apart, by RQ slot */
#define NVMF_HOST_CDATA   (RG_SCRATCH + 0x140000)                      /* the Connect data, 1 KiB */
#define NVMF_HOST_IO      (RG_SCRATCH + 0x150000)                      /* the caller's data buffers */
#define NVMF_HOST_IO_LEN  0xb0000u
/* The memory region over capsules, responses and data: [NVMF_HOST_CAP(0), NVMF_HOST_IO + NVMF_HOST_IO_LEN). */
#define NVMF_HOST_MR_KEY  RG_KEY(1, 0x42)
_Static_assert(NVMF_HOST_IO + NVMF_HOST_IO_LEN == RG_SCRATCH + RG_SCRATCH_SIZE, "host memory");

/* Opcodes (NVMe Base 2.0 5, NVM Command Set 1.0 3, NVMe-oF 1.1 3.3) and the fields the host fills in. */
enum {
	NVMF_OP_FLUSH = 0x00, NVMF_OP_WRITE = 0x01, NVMF_OP_READ = 0x02, NVMF_OP_FABRICS = 0x7f,
	NVMF_ADM_AER = 0x0c, NVMF_ADM_KEEP_ALIVE = 0x18,
};
enum { NVMF_FCTYPE_PROP_SET = 0x00, NVMF_FCTYPE_CONNECT = 0x01, NVMF_FCTYPE_PROP_GET = 0x04 };
#define NVMF_RW_FUA    (1u << 30) /* cdw12 */
#define NVMF_PROP_CC   0x14
#define NVMF_PROP_CSTS 0x1c
#define NVMF_CC_ENABLE (1u | 6u << 16 | 4u << 20) /* EN, IOSQES 6 (64 bytes), IOCQES 4 (16 bytes) */

/* The controller to reach and who the host is. */
struct nvmf_host_config {
	uint32_t host_ip, ctrl_ip;    /* IPv4, host order */
	uint16_t port;
	const char *subnqn, *hostnqn; /* kept as pointers: they must outlive the host */
	uint8_t hostid[16];
	/*
	 * The slots' QPs privileged, as the kernel's are (capsules and responses
	 * under the reserved lkey 0), or not, as a user-space host's (under the
	 * region's key).
	 */
	bool privileged;
};

/* A connection as the CM made it. */
struct nvmf_conn {
	uint16_t qid;
	uint32_t ctrl_qpn;
	uint32_t host_comm_id, ctrl_comm_id; /* the local and the remote communication ID */
};

/* A queue slot: its QP, the connection on it, the next command ID. */
struct nvmf_slot {
	struct rg_qp qp;
	struct nvmf_conn conn;
	uint16_t next_cid;
	uint16_t cntlid; /* the controller ID its last successful Connect returned */
};

struct nvmf_host {
	struct ionic_guest g;
	struct rg_eq eq;
	struct rg_cq acq;
	struct rg_aq aq;
	struct nvmf_host_config cfg;
	struct rg_cq cq[2 + 2 * NVMF_HOST_SLOTS]; /* CQ 10 + i: GSI send, receive, then each slot's send, receive */
	struct rg_qp gsi;
	struct nvmf_slot q[NVMF_HOST_SLOTS];
	uint32_t comm_ids; /* local communication IDs handed out so far */
	uint16_t cntlid;   /* the controller ID the last admin queue's Connect returned */
};

/* A response capsule as the host reads it. */
struct nvmf_cpl {
	uint32_t dw0, dw1;
	uint16_t sqhd, sqid, cid, status; /* status: the 15-bit status field (phase bit removed) */
};

/* The status code and its type (SCT << 8 | SC), without CRD, More and DNR. */
static inline uint16_t nvmf_cpl_sc(struct nvmf_cpl c) { return c.status & 0x7ff; }
/* The 16 bytes of a response: DW0 @0, DW1 @4, SQHD @8, SQID @10, CID @12, status @14 (bit 0 the phase). */
void nvmf_cpl_parse(struct nvmf_cpl *c, const uint8_t r[16]);

static inline struct rg_cq *nvmf_host_gsi_scq(struct nvmf_host *h) { return &h->cq[0]; }
static inline struct rg_cq *nvmf_host_gsi_rcq(struct nvmf_host *h) { return &h->cq[1]; }
static inline struct rg_cq *nvmf_host_scq(struct nvmf_host *h, unsigned k) { return &h->cq[2 + 2 * k]; }
static inline struct rg_cq *nvmf_host_rcq(struct nvmf_host *h, unsigned k) { return &h->cq[3 + 2 * k]; }

/* ---- set-up ---- */

/* ionic_guest_setup on client c, then nvmf_host_rdma_up: 0, -1 (guest) or its steps. */
int nvmf_host_setup(struct nvmf_host *h, struct vfc *c, const struct nvmf_host_config *cfg);

/*
 * Everything below the PCI function, as ionic_rdma's probe and an rdma_cm
 * host leave it: RDMA_RESET_LIF, the EQ, the admin CQ and queue (rg_probe),
 * RG_SCRATCH zeroed, the CQs, the memory region (PD 1, local write, remote
 * read and write), the AH toward the controller's address (its MAC being
 * 02:4e and the address, as the controller answers ARP) and the GSI QP in
 * RTS with 32 receives posted. The slots are emptied. Again after a reset
 * of the device or the RDMA LIF; an EQ eventfd still open is closed first.
 */
int nvmf_host_rdma_up(struct nvmf_host *h);

/* Close the EQ's eventfd and tear the guest down. */
void nvmf_host_teardown(struct nvmf_host *h);

/* ---- the connection manager over the GSI QP ---- */

/* Send a MAD to the controller's GSI QP and wait for its SEND completion: 0, or -1 (none, or not a clean UD one). */
int nvmf_host_mad_send(struct nvmf_host *h, const uint8_t mad[MAD_SIZE]);

/*
 * The next MAD the controller sent to the GSI QP into mad; the receive is
 * posted again. 1, 0 when none came within timeout_ms, -1 for a completion
 * that is not a clean receive.
 */
int nvmf_host_mad_recv(struct nvmf_host *h, uint8_t mad[MAD_SIZE], int timeout_ms);

/*
 * A REQ as rdma_cm sends it for nvme-rdma, from guest QP qpn for NVMe queue
 * qid of size entries: RC, starting PSN 0x2000 + qpn (the SQ PSN
 * rg_qp_modify gives), the cma_hdr (IPv4, source port 0xc000 + the QPN's low
 * 12 bits), then nvme_rdma_cm_req (recfmt 0, qid, hrqsize size, hsqsize
 * size - 1).
 */
void nvmf_host_mad_req(const struct nvmf_host *h, uint8_t mad[MAD_SIZE], uint32_t comm_id, uint32_t qpn,
		       uint16_t qid, uint16_t size);
/* A MAD that carries only the two communication IDs: RTU, DREQ (the remote QPN left 0), DREP. */
void nvmf_mad_ids(uint8_t mad[MAD_SIZE], uint16_t attr, uint32_t lcid, uint32_t rcid);

/*
 * Send a REQ (nvmf_host_mad_req, under a fresh communication ID put in
 * *comm_id) and take the controller's answer into answer: its attribute, or
 * -1 when the REQ was not sent or nothing came.
 */
int nvmf_host_cm_req(struct nvmf_host *h, uint32_t qpn, uint16_t qid, uint16_t size, uint32_t *comm_id,
		     uint8_t answer[MAD_SIZE]);

/*
 * Create slot k's QP under number qpn: RC, PD 1, privileged as the
 * configuration says, rings at NVMF_HOST_QPR(k), the slot's CQs. The admin
 * status (-1: no completion).
 */
int nvmf_host_qp_create(struct nvmf_host *h, unsigned k, uint32_t qpn);

/*
 * Slot k's QP created under qpn and connected through the CM to NVMe queue
 * qid of size entries: REQ; the first answer must be a REP for it; the QP
 * through RTR to RTS toward the controller's QPN; RTU. The connection goes
 * into h->q[k].conn, the slot's command IDs start at 1. No receive is
 * posted. 0, or -1 (QP), -2 (REQ not sent or not answered), -3 (the answer
 * is not a REP), -4 (a REP for another REQ), -5 (RTR/RTS), -6 (RTU).
 */
int nvmf_host_cm_connect(struct nvmf_host *h, unsigned k, uint32_t qpn, uint16_t qid, uint16_t size);

/* ---- capsules (keyed SGL data pointer, as nvme-rdma sends them) ---- */

/* Zeroed; opcode, PSDT 01b (SGL), cid, nsid, SGL1 a keyed data block of length 0. */
void nvmf_sqe(uint8_t sqe[64], uint8_t opcode, uint16_t cid, uint32_t nsid);
/* SGL1: a keyed data block over len bytes at addr under key. */
void nvmf_sqe_data(uint8_t sqe[64], uint64_t addr, uint32_t len, uint32_t key);
/* Read or Write: SLBA, NLB (1-based here), cdw12 flags (NVMF_RW_FUA); no data pointer yet. */
void nvmf_sqe_rw(uint8_t sqe[64], uint8_t opcode, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb,
		 uint32_t flags);
/* Property Set (4 bytes, value v) or Get of the property at off. */
void nvmf_sqe_prop(uint8_t sqe[64], uint16_t cid, bool set, uint32_t off, uint64_t v);
/*
 * Fabrics Connect (record format 0, qid, sqsize 0's based, KATO in ms) with
 * its 1024 bytes of data written at NVMF_HOST_CDATA: the configured host ID,
 * cntlid (0xffff: dynamic), the configured NQNs.
 */
void nvmf_host_connect_sqe(struct nvmf_host *h, uint8_t sqe[64], uint16_t cid, uint16_t qid, uint16_t sqsize,
			   uint32_t kato_ms, uint16_t cntlid);

/* The next command ID of slot k. */
uint16_t nvmf_host_cid(struct nvmf_host *h, unsigned k);

/* Put a capsule on slot k's SQ (written at NVMF_HOST_CAP(k) by SQ slot, signaled SEND); no doorbell. */
void nvmf_host_capsule_put(struct nvmf_host *h, unsigned k, const uint8_t sqe[64]);
/* The next SEND completion of slot k: its status (0 success, RG_STS_*), or -1 (none, or not a SEND_MSN one). */
int nvmf_host_send_done(struct nvmf_host *h, unsigned k);
/* Put, ring, and the capsule's SEND completion (as nvmf_host_send_done). */
int nvmf_host_capsule(struct nvmf_host *h, unsigned k, const uint8_t sqe[64]);

/*
 * A 16-byte receive (as nvme-rdma posts) at slot k's RQ producer slot, its
 * 64-byte buffer at NVMF_HOST_RSP(k) filled with 0xee first; no doorbell.
 */
void nvmf_host_recv_put(struct nvmf_host *h, unsigned k);
/* n of them, then the RQ doorbell. */
void nvmf_host_post_recvs(struct nvmf_host *h, unsigned k, unsigned n);

/*
 * The next response on slot k, read from the buffer its receive completion
 * names: 1, 0 when none came within timeout_ms, -1 for a completion that is
 * not a clean receive of 16 bytes into a posted slot.
 */
int nvmf_host_rsp(struct nvmf_host *h, unsigned k, struct nvmf_cpl *cpl, int timeout_ms);

/* A receive for its response, then the capsule (nvmf_host_capsule's result). */
int nvmf_host_submit(struct nvmf_host *h, unsigned k, const uint8_t sqe[64]);
/*
 * One command: nvmf_host_submit, then its response, which must be the next
 * to come and carry the capsule's CID. The response's status, or -1.
 */
int nvmf_host_command(struct nvmf_host *h, unsigned k, const uint8_t sqe[64], struct nvmf_cpl *cpl);

/*
 * Fabrics Connect as one command; on success the slot's cntlid (and for the
 * admin queue the host's) is the response's DW0. The status, or -1.
 */
int nvmf_host_fabrics_connect(struct nvmf_host *h, unsigned k, uint16_t qid, uint16_t sqsize, uint32_t kato_ms,
			      uint16_t cntlid, struct nvmf_cpl *cpl);
/* Property Set and Get of 4 bytes as one command each (Get: DW0 into *v): the status, or -1. */
int nvmf_host_prop_set(struct nvmf_host *h, unsigned k, uint32_t off, uint32_t v);
int nvmf_host_prop_get(struct nvmf_host *h, unsigned k, uint32_t off, uint32_t *v);

/*
 * A queue as nvme-rdma brings it up: nvmf_host_cm_connect, Fabrics Connect
 * (sqsize size - 1; for an I/O queue the controller h->cntlid, for the
 * admin queue a dynamic one); for the admin queue also CC.EN (NVMF_CC_ENABLE) and
 * CSTS read until RDY (and not CFS). 0, nvmf_host_cm_connect's steps, -7
 * (no response), -8 (RDY not reached within NVMF_HOST_TIMEOUT_MS), or the
 * NVMe status of a failed command (positive).
 */
int nvmf_host_connect(struct nvmf_host *h, unsigned k, uint32_t qpn, uint16_t qid, uint16_t size, uint32_t kato_ms);

#endif
