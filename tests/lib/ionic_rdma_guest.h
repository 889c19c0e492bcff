/*
 * Guest-side RDMA helpers over ionic_guest: the queue-level commands of the
 * Ethernet admin queue (RDMA_RESET_LIF, RDMA_CREATE_EQ/CQ/ADMINQ), an RDMA
 * admin queue in guest memory (64-byte slots, commands spilling into the
 * following slots and across the ring's end), completion queues polled by
 * color, event queues with an eventfd on their MSI-X vector, and the RDMA
 * doorbells; and the data path: queue pairs with contiguous rings, send,
 * receive, RDMA, atomic, REG_MR and LOCAL_INV work requests, memory regions
 * and address handles with a RoCEv2 header template. Layouts and values
 * follow the stock ionic_rdma driver (Linux 7.2, ionic_fw.h, ionic_admin.c,
 * ionic_datapath.c) as summarised in the project's research notes on the
 * ionic interface (section 4); nothing here is taken
 * from the device's own headers, so a test built on it checks the device
 * against the driver, not against itself.
 *
 * Creating a queue zeroes whatever part of its ring lies in guest memory (a
 * test may place one outside it on purpose); posting to a ring and polling
 * one touch the guest's memory, so those rings must lie inside it.
 */
#ifndef ERNIC_TESTS_IONIC_RDMA_GUEST_H
#define ERNIC_TESTS_IONIC_RDMA_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ionic_guest.h"

/*
 * Guest memory for RDMA, above everything ionic_guest.h lays out (which ends
 * below GUEST_IOVA + 0x40000). Rings are sized for the largest depth the
 * helpers are used with.
 */
#define RG_EQ_RING(i)   (GUEST_IOVA + 0x100000 + (uint64_t)(i) * 0x1000) /* 16 EQs, up to 1024 x 4 B */
#define RG_CQ_RING(i)   (GUEST_IOVA + 0x110000 + (uint64_t)(i) * 0x2000) /* 4 CQs, up to 256 x 32 B */
#define RG_AQ_RING(i)   (GUEST_IOVA + 0x118000 + (uint64_t)(i) * 0x4000) /* 2 AQs, up to 256 x 64 B */
#define RG_SCRATCH      (GUEST_IOVA + 0x200000)                         /* free for tests: page lists, */
#define RG_SCRATCH_SIZE 0x200000u                                       /* query buffers, QP rings ... */
#define RG_UNMAPPED     0x7f000000ull  /* a bus address no mapping covers */

/* Doorbell qtypes of the RDMA LIF (the LIF identity's qtype blocks). */
enum { RG_QTYPE_AQ = 4, RG_QTYPE_SQ = 5, RG_QTYPE_RQ = 6, RG_QTYPE_CQ = 7, RG_QTYPE_EQ = 8 };

/* Ethernet admin queue opcodes of the RDMA LIF. */
enum { RG_CMD_RESET_LIF = 50, RG_CMD_CREATE_EQ = 51, RG_CMD_CREATE_CQ = 52, RG_CMD_CREATE_ADMINQ = 53 };

/* RDMA admin queue opcodes and completion statuses (ionic_fw.h, v1). */
enum {
	RG_OP_NOOP = 0, RG_OP_CREATE_CQ = 1, RG_OP_CREATE_QP = 2, RG_OP_CREATE_MR = 3,
	RG_OP_STATS_HDRS = 4, RG_OP_STATS_VALS = 5, RG_OP_DESTROY_MR = 6, RG_OP_RESIZE_CQ = 7,
	RG_OP_DESTROY_CQ = 8, RG_OP_MODIFY_QP = 9, RG_OP_QUERY_QP = 10, RG_OP_DESTROY_QP = 11,
	RG_OP_DEBUG = 12, RG_OP_CREATE_AH = 13, RG_OP_QUERY_AH = 14, RG_OP_MODIFY_DCQCN = 15,
	RG_OP_DESTROY_AH = 16, RG_OP_QP_STATS_HDRS = 17,
};
enum {
	RG_ASTS_OK = 0, RG_ASTS_BAD_CMD = 1, RG_ASTS_BAD_INDEX = 2, RG_ASTS_BAD_STATE = 3,
	RG_ASTS_BAD_TYPE = 4, RG_ASTS_BAD_ATTR = 5, RG_ASTS_MSG_TOO_BIG = 6,
};

#define RG_AQ_STRIDE  64
#define RG_AQ_HDR_LEN 4
#define RG_CQE_SIZE   32

/* A completion queue as the guest polls it. */
struct rg_cq {
	uint32_t id;
	uint8_t depth_log2;
	uint64_t ring;        /* contiguous ring; 0 when pages[] is used */
	uint64_t pages[8];    /* a paged ring: page bus addresses */
	uint32_t npages;
	uint8_t page_shift;
	uint32_t cons;        /* free-running index of the next CQE to read */
	uint8_t color;        /* color a new CQE at cons carries */
};

/* An event queue and the eventfd of its MSI-X vector. */
struct rg_eq {
	uint32_t id;
	uint8_t depth_log2;
	uint64_t ring;
	uint16_t intr;
	int irq_fd;
	uint32_t cons;
	uint8_t color;
};

/* An RDMA admin queue and the CQ its completions go to. */
struct rg_aq {
	uint32_t id;
	uint8_t depth_log2;
	uint64_t ring;
	uint32_t prod;        /* free-running index of the next slot to write */
	struct rg_cq *cq;
};

/* Byte-order helpers for building payloads and reading what the device wrote. */
static inline void rg_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void rg_le32(uint8_t *p, uint32_t v) { rg_le16(p, (uint16_t)v); rg_le16(p + 2, (uint16_t)(v >> 16)); }
static inline void rg_le64(uint8_t *p, uint64_t v) { rg_le32(p, (uint32_t)v); rg_le32(p + 4, (uint32_t)(v >> 32)); }
static inline void rg_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void rg_be32(uint8_t *p, uint32_t v) { rg_be16(p, (uint16_t)(v >> 16)); rg_be16(p + 2, (uint16_t)v); }
static inline uint16_t rg_get_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t rg_get_be32(const uint8_t *p) { return (uint32_t)rg_get_be16(p) << 16 | rg_get_be16(p + 2); }
static inline uint16_t rg_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rg_get_le32(const uint8_t *p) { return rg_get_le16(p) | (uint32_t)rg_get_le16(p + 2) << 16; }

/* ADMIN CQE fields: cmd_idx be16 @0, cmd_op @2, status_length be32 @24, qid_type_flags be32 @28. */
static inline uint16_t rg_cqe_cmd_idx(const uint8_t *cqe) { return rg_get_be16(cqe); }
static inline uint8_t rg_cqe_cmd_op(const uint8_t *cqe) { return cqe[2]; }
static inline uint32_t rg_cqe_status(const uint8_t *cqe) { return rg_get_be32(cqe + 24); }
static inline uint32_t rg_cqe_qtf(const uint8_t *cqe) { return rg_get_be32(cqe + 28); }

/* The queue-level layout of commands 50-53 on the Ethernet admin queue; the ionic status, -1 on timeout. */
int rg_queue_cmd(struct ionic_guest *g, uint8_t opcode, uint16_t lif_index, uint32_t qid, uint32_t cid,
		 uint8_t depth_log2, uint8_t stride_log2, uint64_t dma);
int rg_reset_lif(struct ionic_guest *g);

/* Give MSI-X vector `vector` a new non-blocking eventfd (SET_IRQS); the fd, or -1. */
int rg_irq_eventfd(struct ionic_guest *g, uint32_t vector);
/* Interrupt control block of vector i: a 32-bit register at off (4 mask, 8 credits, 12 mask_on_assert). */
void rg_intr_write(struct ionic_guest *g, uint32_t i, uint32_t off, uint32_t v);
uint32_t rg_intr_read(struct ionic_guest *g, uint32_t i, uint32_t off);

/*
 * EQ id on interrupt intr, as the driver does it: ring zeroed, vector masked
 * with mask_on_assert, credits cleaned, an eventfd assigned, RDMA_CREATE_EQ,
 * then unmasked. The ionic status (or -1); irq_fd stays open on failure too.
 */
int rg_eq_create(struct ionic_guest *g, struct rg_eq *eq, uint32_t id, uint16_t intr, uint8_t depth_log2,
		 uint64_t ring);
void rg_eq_close(struct rg_eq *eq);
/* The next EQE if its color says it is new: its host-order word into *evt. */
bool rg_eq_poll(struct ionic_guest *g, struct rg_eq *eq, uint32_t *evt);
/* Wait up to timeout_ms for the EQ's vector; the eventfd's count (0: none). */
uint64_t rg_eq_wait_irq(struct rg_eq *eq, int timeout_ms);
/* Return credits and unmask, as the driver's EQ interrupt handler does. */
void rg_eq_rearm(struct ionic_guest *g, struct rg_eq *eq, uint32_t credits);

/* A contiguous CQ on EQ eq_id through RDMA_CREATE_CQ (52); ring zeroed. The ionic status. */
int rg_cq_create(struct ionic_guest *g, struct rg_cq *cq, uint32_t id, uint32_t eq_id, uint8_t depth_log2,
		 uint64_t ring);
/* Guest view of a CQ the caller created otherwise (paged: pages/npages/page_shift filled in afterwards). */
void rg_cq_init(struct rg_cq *cq, uint32_t id, uint8_t depth_log2, uint64_t ring);
/* Bus address of CQE idx. */
uint64_t rg_cqe_addr(const struct rg_cq *cq, uint32_t idx);
/* Take the next CQE if its color says it is new (32 bytes into cqe). */
bool rg_cq_poll(struct ionic_guest *g, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE]);
/* rg_cq_poll, retrying for up to timeout_ms. */
bool rg_cq_wait(struct ionic_guest *g, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE], int timeout_ms);
/* CQ doorbells: ring 0 with the consumer index, ring 1 (arm) or 2 (arm solicited) with an arm count. */
void rg_cq_ack(struct ionic_guest *g, struct rg_cq *cq);
void rg_cq_arm(struct ionic_guest *g, struct rg_cq *cq, uint32_t ring, uint16_t arm_index);

/* RDMA admin queue id on cq through RDMA_CREATE_ADMINQ (53); ring zeroed. The ionic status. */
int rg_aq_create(struct ionic_guest *g, struct rg_aq *aq, uint32_t id, struct rg_cq *cq, uint8_t depth_log2,
		 uint64_t ring);
/*
 * ionic_rdma's probe of the RDMA LIF: RDMA_RESET_LIF, EQ 0 on vector 2 (1024
 * entries) at RG_EQ_RING(0), admin CQ 0 on it at RG_CQ_RING(0), admin queue 0
 * completing there at RG_AQ_RING(0). 0, or the step that failed (-1 to -4).
 */
int rg_probe(struct ionic_guest *g, struct rg_eq *eq, struct rg_cq *acq, struct rg_aq *aq, uint8_t cq_depth_log2,
	     uint8_t aq_depth_log2);
/*
 * Write a command at the producer slot: header {op, 0, len} and nbytes of
 * payload (NULL: zeros) spilling into following slots, wrapping at the
 * ring's end. Slots taken: enough for the header and nbytes (at least one),
 * so a header may claim more or less than is written. No doorbell. Returns
 * the first slot (within the ring).
 */
uint32_t rg_aq_put(struct ionic_guest *g, struct rg_aq *aq, uint8_t op, uint16_t len, const void *payload,
		   size_t nbytes);
/* The AQ doorbell with the producer index. */
void rg_aq_ring(struct ionic_guest *g, struct rg_aq *aq);
/*
 * One command: put (len = nbytes), ring, wait for its CQE (into cqe if not
 * NULL). The admin status from status_length, or -1 when no CQE came.
 */
int rg_admin(struct ionic_guest *g, struct rg_aq *aq, uint8_t op, const void *payload, uint16_t len,
	     uint8_t cqe[RG_CQE_SIZE]);

/* A doorbell: one 64-bit write at 8 * qtype in page 0: index | ring << 16 | qid << 24. */
void rg_db(struct ionic_guest *g, uint32_t qtype, uint32_t qid, uint32_t ring, uint32_t index);
/* A round trip: every posted write sent before it has been handled by the device. */
void rg_sync(struct ionic_guest *g);


/* ==== the data path: queue pairs, work requests, memory regions, address handles ==== */

/* QP types and states, access and MR flags, WQE opcodes and flags, CQE types and statuses (ionic_fw.h, v1). */
enum { RG_QPT_RC = 0, RG_QPT_UC = 1, RG_QPT_UD = 3 };
enum { RG_QPS_RESET = 0, RG_QPS_INIT = 1, RG_QPS_RTR = 2, RG_QPS_RTS = 3, RG_QPS_ERR = 6 };
#define RG_QPF_REMOTE_WRITE  0x1u
#define RG_QPF_REMOTE_READ   0x2u
#define RG_QPF_REMOTE_ATOMIC 0x4u
#define RG_QPF_PRIVILEGED    0x8000u
#define RG_MRF_LOCAL_WRITE   0x1u
#define RG_MRF_REMOTE_WRITE  0x2u
#define RG_MRF_REMOTE_READ   0x4u
#define RG_MRF_REMOTE_ATOMIC 0x8u
#define RG_MRF_MW_BIND       0x10u
#define RG_MRF_ZERO_BASED    0x20u
#define RG_MRF_FAST_REG      0xa000u /* UKEY_EN | INV_EN: ib_alloc_mr */
#define RG_MRF_INV_EN        0x8000u
#define RG_MRF_MW1           0x4000u /* IS_MW: ionic_alloc_mw of a type 1 window */
#define RG_MRF_MW2           0xc000u /* IS_MW | INV_EN: type 2 */
enum {
	RG_WR_SEND = 0, RG_WR_SEND_INV = 1, RG_WR_SEND_IMM = 2, RG_WR_RDMA_READ = 3, RG_WR_RDMA_WRITE = 4,
	RG_WR_RDMA_WRITE_IMM = 5, RG_WR_ATOMIC_CS = 6, RG_WR_ATOMIC_FA = 7, RG_WR_REG_MR = 8, RG_WR_LOCAL_INV = 9,
	RG_WR_BIND_MW = 10,
};
#define RG_WQE_FENCE  0x1u
#define RG_WQE_SOL    0x2u
#define RG_WQE_INL    0x4u
#define RG_WQE_SIG    0x8u
#define RG_WQE_SPEC32 0x1000u
#define RG_WQE_SPEC16 0x2000u
enum { RG_CQE_ADMIN = 0, RG_CQE_RECV = 1, RG_CQE_SEND_MSN = 2, RG_CQE_SEND_NPG = 3 };
enum { RG_RECV_SEND = 0, RG_RECV_SEND_INV = 1, RG_RECV_SEND_IMM = 2, RG_RECV_RDMA_IMM = 3 };
#define RG_RECV_IPV4 0x80000000u
enum {
	RG_STS_LOCAL_LEN = 1, RG_STS_LOCAL_QP_OPER = 2, RG_STS_LOCAL_PROT = 3, RG_STS_FLUSHED = 4,
	RG_STS_MEM_MGMT_OPER = 5, RG_STS_BAD_RESP = 6, RG_STS_LOCAL_ACC = 7, RG_STS_REMOTE_INV_REQ = 8,
	RG_STS_REMOTE_ACC = 9, RG_STS_REMOTE_OPER = 10, RG_STS_RETRY_EXCEEDED = 11, RG_STS_RNR_RETRY_EXCEEDED = 12,
};
/* EQE: qid << 8 | code << 4 | type << 1 | color; type 0 CQ, 1 QP. */
enum { RG_EQE_TYPE_CQ = 0, RG_EQE_TYPE_QP = 1 };
enum { RG_EQE_QP_ERR = 8, RG_EQE_QP_ERR_REQUEST = 9, RG_EQE_QP_ERR_ACCESS = 10 };
#define RG_QKEY_GSI 0x80010000u
#define RG_KEY(index, key) ((uint32_t)(index) << 8 | (uint8_t)(key))

static inline uint64_t rg_get_le64(const uint8_t *p) { return rg_get_le32(p) | (uint64_t)rg_get_le32(p + 4) << 32; }
static inline uint64_t rg_get_be64(const uint8_t *p) { return (uint64_t)rg_get_be32(p) << 32 | rg_get_be32(p + 4); }
static inline void rg_be64(uint8_t *p, uint64_t v) { rg_be32(p, (uint32_t)(v >> 32)); rg_be32(p + 4, (uint32_t)v); }

/* Data-path CQE fields (qid_type_flags be32 @28 as for ADMIN CQEs). */
static inline uint8_t rg_cqe_type(const uint8_t *cqe) { return (uint8_t)(rg_cqe_qtf(cqe) >> 5 & 7); }
static inline uint32_t rg_cqe_qid(const uint8_t *cqe) { return rg_cqe_qtf(cqe) >> 8; }
static inline bool rg_cqe_error(const uint8_t *cqe) { return (rg_cqe_qtf(cqe) & 2) != 0; }
static inline uint64_t rg_cqe_wqe_id(const uint8_t *cqe) { return rg_get_le64(cqe); }       /* RECV @0 */
static inline uint32_t rg_cqe_src_qpn_op(const uint8_t *cqe) { return rg_get_be32(cqe + 8); } /* RECV @8 */
static inline uint32_t rg_cqe_imm(const uint8_t *cqe) { return rg_get_be32(cqe + 20); }      /* RECV @20 */
static inline uint32_t rg_cqe_msn(const uint8_t *cqe) { return rg_get_be32(cqe + 4); }       /* SEND_MSN @4 */
static inline uint64_t rg_cqe_npg_id(const uint8_t *cqe) { return rg_get_le64(cqe + 16); }   /* SEND_NPG @16 */

/* rg_cq_poll after a round trip (every doorbell before it has been handled), retrying for up to 20 s. */
bool rg_cq_next(struct ionic_guest *g, struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE]);

/* A doorbell on BAR2 page `page`: index | ring << 16 | qid << 24 at 4096 * page + 8 * qtype. */
void rg_db_page(struct ionic_guest *g, uint32_t page, uint32_t qtype, uint32_t qid, uint32_t ring, uint32_t index);

/*
 * A queue pair with contiguous rings in guest memory. The caller fills in
 * everything above sq_prod; rg_qp_create zeroes the rings and sends
 * CREATE_QP. A ring address of 0 means "no such queue".
 */
struct rg_qp {
	uint32_t id;
	uint8_t type;             /* RG_QPT_* */
	uint32_t pd;
	uint32_t priv_flags;      /* RG_QPF_PRIVILEGED or 0 */
	uint16_t dbid;            /* the doorbell page it rings on */
	uint32_t sq_cq, rq_cq;
	uint64_t sq, rq;          /* ring bus addresses */
	uint8_t sq_depth_log2, sq_stride_log2, rq_depth_log2, rq_stride_log2;
	uint32_t sq_prod, rq_prod; /* free-running producer indexes (0 after RESET) */
};

/* Admin helpers: the admin status (-1: no completion); each returns the CQ's consumer index (ring 0). */
/*
 * A contiguous CQ through CREATE_CQ on the RDMA admin queue, as ionic_rdma
 * makes a verbs CQ: 32-byte CQEs, one DMA address (map_count 1), 4 KiB pages,
 * the table index left to the device; ring zeroed first.
 */
int rg_cq_create_aq(struct ionic_guest *g, struct rg_aq *aq, struct rg_cq *cq, uint32_t id, uint32_t eq_id,
		    uint8_t depth_log2, uint64_t ring);
int rg_qp_create(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp);
int rg_qp_destroy(struct ionic_guest *g, struct rg_aq *aq, uint32_t id);
/*
 * One state transition, with the attributes ib_modify_qp sends for it:
 * INIT: pkey index, access flags (and the qkey for UD); RTR: path MTU,
 * dest QPN, RQ PSN, responder resources, RNR timer (RC/UC; UD just the
 * state); RTS: SQ PSN, timeout, retry and RNR retry counts, initiator depth
 * (UD: SQ PSN); RESET and ERR: the state alone. `arg` is the dest QPN
 * (RC/UC) or the qkey (UD). RESET zeroes the guest's producer indexes, as
 * the driver does.
 */
int rg_qp_modify(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint8_t state, uint8_t cur, uint32_t arg,
		 uint16_t access);
/* RESET -> INIT -> RTR -> RTS: the first failing status, or 0. */
int rg_qp_to_rts(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint32_t arg, uint16_t access);
/*
 * A QP whose destination is another host, as ionic_rdma modifies it after
 * rdma_cm resolved the route: the RTR step carries the address vector (the
 * RoCEv2 header template, IB_QP_AV: written at `at`, its length in
 * ah_id_len's top byte), and the PSNs are the connection's (the peer's sq_psn
 * is our rq_psn). pmtu_log2 0 keeps 1024.
 */
struct rg_qp_path {
	const uint8_t *tmpl;
	uint32_t len;
	uint64_t at;
	uint32_t sq_psn, rq_psn;
	uint8_t pmtu_log2;
	uint8_t rrq_depth;      /* 0: 4 (the driver's order for max_rd_atomic 15 and 16) */
};
int rg_qp_modify_path(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint8_t state, uint8_t cur,
		      uint32_t arg, uint16_t access, const struct rg_qp_path *path);
int rg_qp_to_rts_path(struct ionic_guest *g, struct rg_aq *aq, struct rg_qp *qp, uint32_t arg, uint16_t access,
		      const struct rg_qp_path *path);
/* QUERY_QP into buf (sq part at buf, rq part at buf + 64): the state, or -1 - status. */
int rg_qp_state(struct ionic_guest *g, struct rg_aq *aq, uint32_t id, uint64_t buf);

/* A scatter-gather element: va, length, lkey. */
struct rg_sge {
	uint64_t va;
	uint32_t len;
	uint32_t lkey;
};

/* Bus address of the SQ / RQ slot of free-running index idx. */
uint64_t rg_sq_slot(const struct rg_qp *qp, uint32_t idx);
uint64_t rg_rq_slot(const struct rg_qp *qp, uint32_t idx);

/*
 * A send-queue WQE at the producer slot (the slot zeroed first): header
 * {wqe_id, op, num_sge_key, flags, imm_data_key}, body at 16 {w0, w1, w2,
 * length = sum of the SGE lengths}, SGEs at 32, or at 64 with a length
 * table at 32 when flags carry SPEC32/SPEC16 (as ionic_prep_pld builds
 * them). num_sge_key is nsge. Returns the slot's free-running index; no
 * doorbell.
 */
uint32_t rg_post_send(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
		      uint32_t imm_key, uint32_t w0, uint32_t w1, uint32_t w2, const struct rg_sge *sge, unsigned nsge);
/* RDMA READ/WRITE/WRITE_IMM: body {remote va high, low, rkey}. */
uint32_t rg_post_rdma(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
		      uint32_t imm, uint64_t remote_va, uint32_t rkey, const struct rg_sge *sge, unsigned nsge);
/* UD SEND/SEND_IMM: body {ah_id, dest_qpn, dest_qkey}. */
uint32_t rg_post_ud(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
		    uint32_t imm, uint32_t ah_id, uint32_t dest_qpn, uint32_t qkey, const struct rg_sge *sge,
		    unsigned nsge);
/* ATOMIC_CS/FA: the atomic body, one 8-byte result SGE at 48, num_sge_key 1. */
uint32_t rg_post_atomic(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint8_t op, uint16_t flags,
			uint64_t remote_va, uint32_t rkey, uint64_t swap_add, uint64_t compare,
			const struct rg_sge *result);
/* REG_MR: num_sge_key = the new key byte, imm_data_key = the MR's lkey, the reg_mr body. */
uint32_t rg_post_reg_mr(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags, uint32_t lkey,
			uint8_t new_key, uint64_t va, uint64_t length, uint64_t offset, uint64_t dma_addr,
			uint32_t map_count, uint16_t mr_flags, uint8_t page_log2);
/*
 * BIND_MW as libionic builds it (ionic_v1_prep_bind): num_sge_key = the new key byte,
 * imm_data_key = the window's rkey, va be64 @16, length be64 @24, the MR's lkey be32 @32,
 * flags be16 @36 (access bits | RG_MRF_MW1 or RG_MRF_MW2).
 */
uint32_t rg_post_bind_mw(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags, uint32_t mw_rkey,
			 uint8_t new_key, uint64_t va, uint64_t length, uint32_t mr_lkey, uint16_t mw_flags);
/* LOCAL_INV of rkey. */
uint32_t rg_post_local_inv(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags, uint32_t rkey);
/* Raw bytes (up to the stride) at the SQ / RQ producer slot, the rest of the slot zeroed. */
uint32_t rg_post_sq_raw(struct ionic_guest *g, struct rg_qp *qp, const void *wqe, size_t len);
uint32_t rg_post_rq_raw(struct ionic_guest *g, struct rg_qp *qp, const void *wqe, size_t len);
/*
 * A receive WQE: wqe_id, num_sge_key = nsge, imm_data_key = the total
 * length (as ionic_prep_recv), SGEs at 32 (64 with a spec flag). No doorbell.
 */
uint32_t rg_post_recv(struct ionic_guest *g, struct rg_qp *qp, uint64_t wqe_id, uint16_t flags,
		      const struct rg_sge *sge, unsigned nsge);
/* The SQ / RQ doorbell with the producer index, on the QP's doorbell page. */
void rg_sq_ring(struct ionic_guest *g, const struct rg_qp *qp);
void rg_rq_ring(struct ionic_guest *g, const struct rg_qp *qp);

/* CREATE_MR: index << 8 | key, pd, [va, va + length), map_count 1 (dma = the bus address of va) or a list. */
int rg_mr_create(struct ionic_guest *g, struct rg_aq *aq, uint32_t index, uint8_t key, uint32_t pd, uint64_t va,
		 uint64_t length, uint32_t map_count, uint64_t dma, uint16_t flags, uint8_t page_log2);
/* A page-list MR: the n page addresses written at list, then CREATE_MR with map_count n. */
int rg_mr_create_pages(struct ionic_guest *g, struct rg_aq *aq, uint32_t index, uint8_t key, uint32_t pd,
		       uint64_t va, uint64_t length, const uint64_t *pages, uint32_t n, uint64_t list, uint16_t flags,
		       uint8_t page_log2);
int rg_mr_destroy(struct ionic_guest *g, struct rg_aq *aq, uint32_t key);

/*
 * A RoCEv2 IPv4 header template as the driver builds it (42 bytes):
 * Ethernet {dmac, smac, 0x0800}, IPv4 {0x45, tos, total length 0xffff
 * (placeholder), id 0, DF, ttl, UDP, checksum 0, saddr, daddr}, UDP
 * {28272, 4791, 0, 0}. Addresses in host order.
 */
#define RG_ROCE4_HDR_LEN 42
void rg_roce4_template(uint8_t t[RG_ROCE4_HDR_LEN], const uint8_t dmac[6], const uint8_t smac[6], uint32_t saddr,
		       uint32_t daddr, uint8_t tos, uint8_t ttl);
/* The same with an 802.1Q tag (TCI: priority, DEI, VLAN ID), as ionic_rdma builds it for a GID of a VLAN netdev. */
#define RG_ROCE4_VLAN_HDR_LEN (RG_ROCE4_HDR_LEN + 4)
void rg_roce4_template_vlan(uint8_t t[RG_ROCE4_VLAN_HDR_LEN], const uint8_t dmac[6], const uint8_t smac[6],
			    uint32_t saddr, uint32_t daddr, uint8_t tos, uint8_t ttl, uint16_t tci);
/* CREATE_AH id in pd with len bytes of template, written at `at` first. */
int rg_ah_create(struct ionic_guest *g, struct rg_aq *aq, uint32_t id, uint32_t pd, uint64_t at, const uint8_t *tmpl,
		 uint32_t len);
/* The one's-complement sum of len bytes (RFC 1071), folded: 0xffff over a header with a correct checksum. */
uint16_t rg_csum_fold(const uint8_t *p, size_t len);

#endif
