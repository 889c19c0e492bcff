/*
 * The RDMA LIF's state, shared by ionic_rdma.c (queue memory, event and
 * completion queues, doorbells, the queue-level commands 50-53) and
 * ionic_rdma_admin.c (the RDMA admin queue and its commands). Every id a
 * guest names is bounded against these tables before use.
 */
#ifndef ERNIC_IONIC_IONIC_RDMA_PRIV_H
#define ERNIC_IONIC_IONIC_RDMA_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "ionic/ionic_priv.h"
#include "ionic/ionic_rdma_if.h"

/* What the LIF identity advertises, and the sizes of the tables behind it. */
#define IONIC_RDMA_NAQ       2
#define IONIC_RDMA_NEQ       16
#define IONIC_RDMA_NCQ       1024
#define IONIC_RDMA_NQP       IONIC_DEV_RDMA_NQP /* ionic_dev.h */
#define IONIC_RDMA_NMR       16384  /* nvme-rdma: 128 per queue, 65 queues at queues=64, twice over */
#define IONIC_RDMA_NAH       1024
#define IONIC_RDMA_NPTS      (1u << 23) /* page-table entries held at once, all MRs and queues (nvme-rdma: 257 per MR) */
#define IONIC_RDMA_MAX_STRIDE 8        /* log2 of the largest WQE */
#define IONIC_RDMA_UDMA_SHIFT 6
#define IONIC_RDMA_MAX_DEPTH_LOG2 16
#define IONIC_RDMA_HDR_MAX   80        /* Ethernet + VLAN + IPv6 + UDP header template */
#define IONIC_RDMA_TURN_BUDGET (2u << 20) /* bytes the WQE engine moves per slice (ionic_rdma_qp.c) */

struct rdma_job;

/* A queue's memory in the guest: contiguous from base, or a copied page list. */
struct rdma_ring {
	uint64_t base;          /* npages == 0 */
	uint64_t *pages;        /* npages > 0: page bus addresses */
	uint32_t npages;
	uint8_t page_shift;
	uint8_t depth_log2;
	uint8_t stride_log2;
};

struct rdma_eq {
	bool valid;
	struct rdma_ring ring;
	uint32_t prod;
	uint8_t color;
	uint16_t intr;
};

struct rdma_cq {
	bool valid;
	struct rdma_ring ring;
	uint32_t eq_id;
	uint32_t prod;          /* next CQE slot (free-running) */
	uint8_t color;
	uint32_t host_cons;     /* last ring-0 index */
	uint32_t notified_prod; /* prod when the last event was raised */
	bool arm_any, arm_sol;
	uint16_t dbid;          /* the doorbell page that may ring it */
};

struct rdma_aq {
	bool valid;
	struct rdma_ring ring;
	uint32_t cq_id;
	uint32_t head;          /* next slot the device reads (free-running) */
	uint32_t prod;          /* producer index from the last doorbell (within the ring) */
};

struct rdma_wq {            /* a QP's send or receive queue */
	bool present;
	struct rdma_ring ring;
	uint32_t cq_id;
	uint32_t head;          /* next WQE the device takes (free-running) */
	uint32_t prod;          /* producer index from the last doorbell */
};

struct rdma_qp {
	bool valid;
	uint16_t dbid;          /* the doorbell page that may ring it */
	uint8_t type;           /* IONIC_QPT_* */
	uint8_t state;          /* IONIC_QPS_* */
	uint32_t pd;
	uint32_t priv_flags;
	uint16_t access;        /* IONIC_QPF_REMOTE_* */
	struct rdma_wq sq, rq;
	uint32_t sq_psn, rq_psn;
	uint32_t qkey;          /* UD/GSI */
	uint32_t dest_qpn;      /* RC/UC */
	uint8_t pmtu;
	uint8_t retry, rnr_timer, timeout, rsq_depth, rrq_depth;
	uint16_t pkey_id;
	uint32_t rate_limit;    /* kbit/s, stored and reported; no shaping */
	uint32_t ah_id;
	uint8_t hdr[IONIC_RDMA_HDR_MAX]; /* RC: the header template of MODIFY_QP */
	uint8_t hdr_len;
	uint32_t msn;           /* completed remote WQEs since RESET */
	bool rnr_wait;          /* the send queue waits for the peer to post a receive */
	/*
	 * Work in slices (ionic_rdma_qp.c): the send WQE in progress, kept while
	 * it moves its bytes over several turns (allocated at the first send,
	 * freed with the QP); the QP whose message fills this QP's next receive
	 * (0: none; others wait behind it); the epoch, changed whenever the QP
	 * leaves service (error, reset, destroy), so a peer's WQE in progress
	 * can tell; and the QP's place on the run queue.
	 */
	struct rdma_job *job;
	uint32_t rq_claim;
	bool rq_claim_waited;   /* a sender found the receive held: wake senders when it is let go */
	uint32_t epoch;
	bool on_runq;
	uint32_t run_next, run_prev;
	/* On the wire (an RC QP the transport of ionic_rdma_wire_ops carries); NULL: loopback. */
	struct rdma_wire *wire;
};

/*
 * A memory region, or a memory window when flags has IONIC_MRF_IS_MW
 * (ionic_rdma_mr.c). For a window, registered means bound: it then covers
 * [va, va + length) of the region at index mw_mr (whose key was mw_mr_id),
 * with the remote rights in flags, and a type 2 window only for QP mw_qp.
 */
struct rdma_mr {
	bool valid;
	bool fast_reg;          /* created for fast registration: usable after REG_MR */
	bool registered;
	uint32_t id;            /* index << 8 | key */
	uint32_t pd;
	uint16_t flags;         /* IONIC_MRF_* */
	uint64_t va, length;
	uint32_t nmw;           /* region: windows bound to it */
	uint32_t mw_mr, mw_mr_id, mw_qp; /* window */
	uint64_t base;          /* npages == 0: bus address of va */
	uint64_t *pages;
	uint32_t npages;
	uint32_t pages_cap;     /* entries pages[] can hold: fast registrations reuse it */
	uint8_t page_shift;
	uint64_t first_page_off; /* offset of va inside the first page */
};

struct rdma_ah {
	bool valid;
	uint32_t pd;
	uint8_t hdr[IONIC_RDMA_HDR_MAX];
	uint8_t hdr_len;
};

struct ionic_rdma {
	bool reset_done;        /* RDMA_RESET_LIF seen: the LIF is in RDMA mode */
	struct rdma_eq eq[IONIC_RDMA_NEQ];
	struct rdma_aq aq[IONIC_RDMA_NAQ];
	struct rdma_cq *cq;     /* IONIC_RDMA_NCQ */
	struct rdma_qp *qp;     /* IONIC_RDMA_NQP */
	struct rdma_mr *mr;     /* IONIC_RDMA_NMR */
	struct rdma_ah *ah;     /* IONIC_RDMA_NAH */
	uint64_t pts_used;      /* page-table entries held */
	uint32_t mw2_bound;     /* type 2 windows bound (each to a QP) */
	uint32_t rnr_waiters;   /* QPs whose send waits for the peer's receive */
	/*
	 * Bounded work: bytes (and a cost per WQE) the engine may still spend
	 * before it yields to the event loop, and the time it has spent
	 * copying in this slice; the QPs with work left over, in
	 * the order they get their next slice (ids, 0 ends the list); the
	 * source of epochs.
	 */
	uint64_t budget;
	uint64_t slice_t0;      /* CLOCK_MONOTONIC ns when the slice's first copy began (0: none yet) */
	uint64_t slice_clocked_budget; /* the budget when the clock was last read */
	uint32_t slice_unclocked;      /* pieces since then */
	uint32_t run_head, run_tail;
	uint32_t epochs;
	struct ionic_rdma_peer_ops peer; /* in-process peers; all NULL without one */
	struct ionic_rdma_wire_ops wire; /* the wire transport; all NULL without one */
	/* One past the highest index created since the last reset: a reset walks no further (the
	 * tables are large, resets frequent in tests and fuzzing, most entries never used). */
	uint32_t qp_hw, cq_hw, mr_hw, ah_hw;
};

static inline void rdma_hw_note(uint32_t *hw, uint32_t index)
{
	if (index >= *hw)
		*hw = index + 1;
}

/* Queue memory: the bus address of entry idx; 0 and -EFAULT when the ring cannot hold it. */
int rdma_ring_addr(const struct rdma_ring *r, uint32_t idx, uint64_t *addr);
/* Copy a page list of n entries from guest memory at list (n > 1) or take base (n == 1). */
int rdma_ring_setup(struct ionic_dev *dev, struct rdma_ring *r, uint64_t dma_addr, uint32_t map_count,
		    uint8_t page_shift, uint8_t depth_log2, uint8_t stride_log2);
void rdma_ring_free(struct ionic_dev *dev, struct rdma_ring *r);
int rdma_pages_copy(struct ionic_dev *dev, uint64_t list, uint32_t n, uint64_t **out);

/*
 * Write a CQE (body first, color word last) and notify an armed CQ: armed for
 * any completion, or for solicited ones when solicited is set. 0 or -errno.
 */
int rdma_cq_post(struct ionic_dev *dev, uint32_t cq_id, struct ionic_v1_cqe *cqe, bool solicited);
/* Post an event on EQ eq_id and raise its interrupt. */
void rdma_eq_post(struct ionic_dev *dev, uint32_t eq_id, uint8_t type, uint8_t code, uint32_t qid);

/* Spend n of the engine's budget for this slice (never below zero). */
static inline void rdma_charge(struct ionic_rdma *r, uint64_t n)
{
	r->budget -= n < r->budget ? n : r->budget;
}

/* ---- the key table (ionic_rdma_mr.c) ---- */

#define RDMA_NO_QP UINT32_MAX

/*
 * An access by key for qp (its PD and privilege; NULL: no QP, the key's own
 * PD applies and no type 2 window serves): need is the IONIC_MRF_* rights it
 * takes (0 for a local read). *mr gets the region (NULL for the privileged
 * key 0, a bus address) and *off the offset of va inside it. 0 or
 * -ENOKEY/-EACCES/-EFAULT.
 */
int rdma_mr_resolve(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t key, uint64_t va, size_t len,
		    uint16_t need, const struct rdma_mr **mr, uint64_t *off);
/* The same checks, then a copy. */
enum rdma_xfer { RDMA_TO_GUEST, RDMA_FROM_GUEST };
int rdma_mr_xfer(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t key, uint64_t va, void *buf, size_t len,
		 enum rdma_xfer dir, uint16_t need);
/* The REG_MR and BIND_MW work requests of qp: 0 or the completion's IONIC_STS_*. */
uint32_t rdma_reg_mr(struct ionic_dev *dev, const struct rdma_qp *qp, const struct ionic_v1_base_hdr *h,
		     const void *body);
uint32_t rdma_bind_mw(struct ionic_dev *dev, uint32_t qpid, const struct rdma_qp *qp,
		      const struct ionic_v1_base_hdr *h, const void *body);
/*
 * Invalidate key for qp: LOCAL_INV (remote false) or a SEND with invalidate
 * arriving on qp. 0, or -EINVAL/-EBUSY when the key cannot be invalidated.
 */
int rdma_key_invalidate(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t key, bool remote);
/* QP qpid is destroyed: the type 2 windows bound to it are free again. */
void rdma_mw_qp_gone(struct ionic_dev *dev, uint32_t qpid);
/* DESTROY_MR of entry index: 0, or -EBUSY for a region with windows bound to it. */
int rdma_mr_release(struct ionic_dev *dev, uint32_t index);

/* Tell the driver that qpid's posted WQEs are flushed (it entered the error state). */
void rdma_qp_flush(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp);
/*
 * qpid leaves service (error, reset, destroy): the send WQE it has in
 * progress is dropped without a completion (the driver flushes it with the
 * rest of its queue), a receive of its peer it held is released, and a WQE of
 * another QP that moves bytes to or from it fails at its next slice.
 */
void rdma_qp_halt(struct ionic_dev *dev, uint32_t qpid);
/* Everything rdma_qp_halt does, and the QP's work state freed (before the QP is). */
void rdma_qp_release(struct ionic_dev *dev, uint32_t qpid);
/*
 * Execute qpid's posted send WQEs (it must be in RTS), within the engine's
 * budget: what the budget does not cover waits on the run queue.
 */
void rdma_sq_run(struct ionic_dev *dev, uint32_t qpid);
/* Receives were posted on qpid: senders waiting for one go on. */
void rdma_rq_posted(struct ionic_dev *dev, uint32_t qpid);
/*
 * qpid (RC) reached RTR or RTS: offer it to the wire transport, which
 * carries it when its header template names another host.
 */
void rdma_wire_modify(struct ionic_dev *dev, uint32_t qpid);
/* qpid was destroyed or went back to RESET: tell the in-process peers. */
void rdma_peer_qp_gone(struct ionic_dev *dev, uint32_t qpid);
/*
 * One turn's slice of the work on the run queue with a fresh budget, then a
 * fresh budget for whatever the next turn brings. True while work is left.
 */
bool rdma_work(struct ionic_dev *dev);

/* The RDMA admin queue aqid's doorbell. */
void rdma_aq_run(struct ionic_dev *dev, uint32_t aqid);
void rdma_admin_free_all(struct ionic_dev *dev);

#endif
