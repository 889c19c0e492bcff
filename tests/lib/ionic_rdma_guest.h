/*
 * Guest-side RDMA helpers over ionic_guest: the queue-level commands of the
 * Ethernet admin queue (RDMA_RESET_LIF, RDMA_CREATE_EQ/CQ/ADMINQ), an RDMA
 * admin queue in guest memory (64-byte slots, commands spilling into the
 * following slots and across the ring's end), completion queues polled by
 * color, event queues with an eventfd on their MSI-X vector, and the RDMA
 * doorbells. Layouts and values follow the stock ionic_rdma driver (Linux
 * 7.2, ionic_fw.h/ionic_admin.c) as summarised in
 * /work/shared/research/ionic-interface.md section 4; nothing here is taken
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

#endif
