/*
 * The NVMe-oF target's connection manager: the passive side of the IB CM
 * exchange that rdma_cm runs over the guest's GSI queue pair (IBA vol. 1
 * ch. 12; RoCE carries the same 256-byte MADs).
 *
 * The data path hands every MAD the guest sends on QP1 to nvmeof_cm_mad();
 * the CM answers through ops->send_mad (REP, REJ, DREP, DREQ) and tells the
 * data path about controller-side queues through ops->queue_* callbacks. It
 * knows nothing of the NVMe controller: the glue connects queue_create to the
 * target. Everything in a MAD is hostile: a MAD that cannot be parsed is
 * dropped (and counted), never trusted.
 *
 * What it accepts (everything else is rejected with REJ "invalid service ID",
 * IBA reason 8):
 *   - a REQ for service ID RDMA_PS_TCP (0x0106) << 16 | port=, RC transport,
 *   - whose private data starts with an rdma_cm cma_hdr, version 0, IPv4
 *     (IPv6, ::ffff:-mapped included, is refused), destination ip=,
 *   - followed by an nvme_rdma_cm_req (include/linux/nvme-rdma.h, 32 bytes).
 *     Its checks give REJ reason 28 (consumer defined) with an
 *     nvme_rdma_cm_rej naming NVME_RDMA_CM_INVALID_LEN / _RECFMT / _QID /
 *     _HSQSIZE / _HRQSIZE / _NO_RSC.
 *
 * States of one connection (controller side):
 *   REP_SENT -> (RTU, or any first capsule: nvmeof_cm_established) ESTABLISHED
 *   ESTABLISHED -> (DREQ from the guest: DREP sent) TIMEWAIT
 *   ESTABLISHED -> (nvmeof_cm_disconnect: DREQ sent) DREQ_SENT
 *   DREQ_SENT -> (DREP or DREQ, or the DREQ timeout) TIMEWAIT
 *   REP_SENT -> (REJ from the guest, or the REP timeout) TIMEWAIT
 *   TIMEWAIT -> (timewait elapsed) freed; the QPN may be handed out again.
 * queue_destroy is called exactly once per queue_create that succeeded, on
 * the way into TIMEWAIT (or from nvmeof_cm_destroy).
 *
 * Controller QPNs are handed out upwards from NVMEOF_CM_QPN_BASE, wrapping to
 * the bottom of the range, skipping any a connection (TIMEWAIT included)
 * still holds.
 */
#ifndef ERNIC_NVMEOF_NVMEOF_CM_H
#define ERNIC_NVMEOF_NVMEOF_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVMEOF_CM_MAD_SIZE   256
#define NVMEOF_CM_QPN_BASE   0x00c00000u
#define NVMEOF_CM_QPN_COUNT  0x00100000u /* 0x00c00000..0x00cfffff */

/* What the data path needs to know about one controller-side queue. */
struct nvmeof_cm_conn {
	uint32_t ctrl_qpn;        /* our QPN (REP local QPN) */
	uint32_t guest_qpn;       /* REQ local QPN */
	uint32_t guest_psn;       /* REQ starting PSN: what the guest sends first */
	uint32_t ctrl_psn;        /* REP starting PSN: what we send first */
	uint32_t local_comm_id;   /* ours */
	uint32_t remote_comm_id;  /* the guest's */
	uint16_t qid;             /* NVMe queue ID: 0 admin, 1.. I/O */
	uint16_t hrqsize;         /* nvme_rdma_cm_req: host receive queue size */
	uint16_t hsqsize;         /* host send queue size, 0's based */
	uint16_t pkey;
	uint8_t path_mtu;         /* IB enum: 1 = 256 .. 5 = 4096 */
	uint8_t responder_resources; /* as sent in the REP */
	uint8_t initiator_depth;     /* as sent in the REP */
	uint8_t guest_gid[16];    /* REQ primary local port GID */
	uint8_t ctrl_gid[16];     /* REQ primary remote port GID (our address) */
	uint32_t guest_ip;        /* from the cma_hdr, host order */
	uint16_t guest_port;      /* from the cma_hdr, host order */
	void *queue;              /* set by ops->queue_create; the CM never looks inside */
};

struct nvmeof_cm_ops {
	void *ctx;
	/*
	 * Deliver a 256-byte MAD into the guest's GSI receive queue as a UD
	 * completion from the controller. sgid is the controller's GID and dgid
	 * the guest's (both snooped from the REQ), for the synthesised GRH.
	 */
	void (*send_mad)(void *ctx, const uint8_t mad[NVMEOF_CM_MAD_SIZE], const uint8_t sgid[16],
	                 const uint8_t dgid[16]);
	/*
	 * A REQ passed every check: create the queue and store it in conn->queue.
	 * Return 0, or an NVME_RDMA_CM_* status (e.g. 6, no resources) to reject.
	 */
	int (*queue_create)(void *ctx, struct nvmeof_cm_conn *conn);
	/* The connection is established (RTU, or nvmeof_cm_established). May be NULL. */
	void (*queue_established)(void *ctx, struct nvmeof_cm_conn *conn);
	/* Tear the queue down: no more capsules will be delivered on it. */
	void (*queue_destroy)(void *ctx, struct nvmeof_cm_conn *conn);
};

struct nvmeof_cm_config {
	uint32_t ip;            /* IPv4 the target listens on, host order */
	uint16_t port;          /* service port (4420) */
	uint16_t max_qid;       /* queues=: I/O qids 1..max_qid */
	uint16_t max_queue_size;   /* largest I/O hsqsize + 1 (e.g. 128) */
	uint16_t max_admin_queue_size; /* largest admin hsqsize + 1 (32, NVME_AQ_DEPTH) */
	uint32_t max_conns;     /* connections held at once, TIMEWAIT excluded */
	uint32_t qpn_base;      /* 0: NVMEOF_CM_QPN_BASE */
	uint32_t qpn_count;     /* 0: NVMEOF_CM_QPN_COUNT (tests use small ranges) */
	uint64_t ca_guid;       /* REP local CA GUID */
	uint32_t timewait_ms;   /* 0: a default */
	uint32_t reply_timeout_ms; /* REP without RTU / DREQ without DREP; 0: a default */
};

struct nvmeof_cm_stats {
	uint64_t mads_in, mads_out, dropped;
	uint64_t reqs, reps, rejs_sent, rtus, dreqs_in, dreps_out, dreqs_out, dup_reqs;
};

struct nvmeof_cm;

/* Returns NULL on allocation failure. ops is copied. */
struct nvmeof_cm *nvmeof_cm_create(const struct nvmeof_cm_config *cfg, const struct nvmeof_cm_ops *ops);
/* Calls queue_destroy for every live queue, then frees. NULL is fine. */
void nvmeof_cm_destroy(struct nvmeof_cm *cm);

/*
 * One MAD the guest sent on QP1 (len bytes, normally 256). now_ms is a
 * monotonic clock. Replies go out through ops->send_mad before this returns.
 */
void nvmeof_cm_mad(struct nvmeof_cm *cm, const void *mad, size_t len, uint64_t now_ms);

/* Timers: REP/DREQ timeouts and TIMEWAIT expiry. Call every few hundred ms. */
void nvmeof_cm_tick(struct nvmeof_cm *cm, uint64_t now_ms);

/* The connection that owns controller QPN qpn (REP_SENT or ESTABLISHED), or NULL. */
struct nvmeof_cm_conn *nvmeof_cm_lookup(struct nvmeof_cm *cm, uint32_t ctrl_qpn);

/*
 * A capsule arrived on a queue still in REP_SENT: IBA lets the first
 * receive stand in for a lost RTU. No-op in any other state.
 */
void nvmeof_cm_established(struct nvmeof_cm *cm, uint32_t ctrl_qpn);

/*
 * Controller-initiated disconnect (keep-alive timeout, controller fatal
 * status): send DREQ and tear the queue down. Returns 0, or -ENOENT.
 */
int nvmeof_cm_disconnect(struct nvmeof_cm *cm, uint32_t ctrl_qpn, uint64_t now_ms);

void nvmeof_cm_get_stats(const struct nvmeof_cm *cm, struct nvmeof_cm_stats *out);

#endif
