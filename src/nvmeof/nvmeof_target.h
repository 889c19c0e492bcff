/*
 * The NVMe over Fabrics target: one subsystem with one namespace, its
 * controllers (I/O controllers for the configured NQN and discovery
 * controllers for the well-known discovery NQN) and their queues.
 *
 * The target knows nothing of RDMA. A transport (the ionic data path)
 * creates one queue pair per connection the CM accepted, hands every SEND the
 * guest posts on it to nvmeof_qpair_recv(), and receives response capsules
 * through ops->send_rsp. Data moves only through the queue's dma_ops: an
 * RDMA READ (ops->read) or WRITE (ops->write) against the key of a keyed SGL.
 *
 * Commands execute to completion inside nvmeof_qpair_recv(); the only ones
 * that stay outstanding are Asynchronous Event Requests. Flush, FUA writes and
 * a shutdown on a file-backed namespace wait for the host's writeback.
 *
 * Lifetime: the transport owns queue pairs. It destroys one when the
 * connection goes away; the target may ask for that through ops->disconnect
 * (keep-alive timeout, controller reset), after which the transport calls
 * nvmeof_qpair_destroy() (possibly from inside the callback).
 */
#ifndef ERNIC_NVMEOF_NVMEOF_TARGET_H
#define ERNIC_NVMEOF_NVMEOF_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvmeof/nvme_spec.h"
#include "nvmeof/nvmeof_ns.h"
#include "util/backend_opts.h"
#include "util/dma_ops.h"

/* Limits the target reports and enforces. */
#define NVMEOF_MDTS             8      /* 2^8 4-KiB pages: 1 MiB per command */
#define NVMEOF_MAX_XFER         (4096u << NVMEOF_MDTS)
#define NVMEOF_MAX_QUEUE_SIZE   128    /* CAP.MQES + 1 and MAXCMD */
#define NVMEOF_ADMIN_QUEUE_SIZE 32     /* NVME_AQ_DEPTH */
#define NVMEOF_MAX_CTRLS        32
#define NVMEOF_AERL             3      /* 0's based: four outstanding AERs */
#define NVMEOF_ERROR_LOG_SLOTS  64
#define NVMEOF_KAS_100MS        10     /* keep-alive granularity: 1 s */

struct nvmeof_target;
struct nvmeof_qpair;

struct nvmeof_target_ops {
	void *ctx;
	/*
	 * Deliver a response capsule into the guest's next posted receive on
	 * the queue. inv_rkey, when nonzero, is a key the command's SGL asked
	 * the target to invalidate (send with invalidate).
	 */
	void (*send_rsp)(void *ctx, void *transport_qp, const struct nvme_cpl *cpl, uint32_t inv_rkey);
	/* Ask the transport to tear the connection down (it later calls nvmeof_qpair_destroy). */
	void (*disconnect)(void *ctx, void *transport_qp);
	/* Monotonic milliseconds. */
	uint64_t (*now_ms)(void *ctx);
};

struct nvmeof_target_stats {
	uint64_t capsules, errors, reads, writes, bytes_read, bytes_written;
	uint64_t flushes, ka_timeouts, dropped;
};

/*
 * Create the target over an open namespace (borrowed; it must outlive the
 * target). cfg supplies nqn, nsid, queues, model, serial, ip and port.
 * Returns NULL on allocation failure.
 */
struct nvmeof_target *nvmeof_target_create(const struct nvmeof_config *cfg, struct nvmeof_ns *ns,
					   const struct nvmeof_target_ops *ops);
/* Destroys every queue pair and controller. NULL is fine. */
void nvmeof_target_destroy(struct nvmeof_target *t);

/*
 * A connection for NVMe queue qid was accepted with a host send queue of
 * sqsize + 1 entries. transport_qp is handed back in ops callbacks; dma is
 * how this queue's RDMA READ/WRITE reach guest memory (copied). Returns NULL
 * on allocation failure.
 */
struct nvmeof_qpair *nvmeof_qpair_create(struct nvmeof_target *t, uint16_t qid, uint16_t sqsize,
					 const struct dma_ops *dma, void *transport_qp);
void nvmeof_qpair_destroy(struct nvmeof_qpair *q);

/*
 * One SEND from the guest: a command capsule of len bytes. Executes it and
 * answers through ops->send_rsp (AERs later). Capsules shorter than 64 bytes
 * cannot be answered (no command ID) and are dropped; bytes past 64 are
 * ignored (ioccsz is 4: there is never in-capsule data).
 */
void nvmeof_qpair_recv(struct nvmeof_qpair *q, const void *capsule, size_t len);

/* Keep-alive timers; call at least every few hundred ms. */
void nvmeof_target_tick(struct nvmeof_target *t);

void nvmeof_target_get_stats(const struct nvmeof_target *t, struct nvmeof_target_stats *out);

#endif
