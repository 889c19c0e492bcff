/*
 * The roce backend: the guest's RC queue pairs whose destination is another
 * host, carried as RoCEv2 on the emulated segment (docs/roce.md, "The
 * engine on the wire").
 *
 * The glue registers as the device's wire transport (ionic_rdma_wire_ops in
 * ionic/ionic_dev.h) and owns one guest node (roce_port.h, cfg.guest): the
 * guest's own RoCE function, speaking with the MAC and IPv4 address of each
 * QP's header template. A QP whose template names the guest's own address
 * stays on the device's loopback fabric. Each QP on the wire is a port QP
 * whose callbacks go back into the device through the ionic_rdma_wire_*
 * entry points; the device model never sees a RoCE type.
 *
 * Work: an event-loop poller pumps the node with a bounded budget per turn
 * (received frames, then packets the requesters let out) and runs its
 * timers; it says EV_POLL_MORE while the budget was used up.
 */
#ifndef ERNIC_FABRIC_ROCE_GLUE_H
#define ERNIC_FABRIC_ROCE_GLUE_H

#include <stddef.h>

#include "util/backend_opts.h"

struct evloop;
struct ionic_dev;
struct net_switch;
struct roce_glue;

/* Packets (frames in and out) one poller call handles at most. */
#define ROCE_GLUE_BUDGET 64
/* AckReq on every Nth packet of a long SEND or WRITE, so that the window moves before its end. */
#define ROCE_GLUE_ACKREQ_EVERY 16
/*
 * PSNs a QP sends past its oldest unacknowledged one (as rdma_rxe limits
 * itself to 128): a software peer in a slow guest drops what it cannot
 * take, and go-back-N would resend the whole queue after every loss.
 */
#define ROCE_GLUE_MAX_UNACKED 128

/* NULL with a one-line reason in err. cfg, loop and sw must outlive it. */
struct roce_glue *roce_glue_new(const struct roce_config *cfg, struct evloop *loop, struct net_switch *sw,
				char *err, size_t errlen);
/* Register as dev's wire transport, or (dev NULL) leave it: before the device is freed. */
void roce_glue_attach(struct roce_glue *g, struct ionic_dev *dev);
/* NULL is ignored. */
void roce_glue_free(struct roce_glue *g);

/* Log the node's counters: frames, drops by cause, and the RC requesters' and responders' totals. */
void roce_glue_log_stats(const struct roce_glue *g);

/*
 * One turn of the work the poller does, at time now (microseconds, the
 * clock the node's timers run on): the timers when due, then the node pumped
 * with ROCE_GLUE_BUDGET. Returns the frames and packets handled. For owners
 * without an event loop (loop NULL: tests and fuzz-roce-wire, on a fake clock).
 */
unsigned roce_glue_run(struct roce_glue *g, uint64_t now);

/*
 * The glue's clock: the time of its event loop's runs, of QP creation, of
 * its diagnostics, and what the node reads when it handles a super-frame's
 * datagrams between runs (roce_port_cfg.clock_us). CLOCK_MONOTONIC in
 * microseconds unless an owner on a fake clock (roce_glue_run() callers) sets
 * its own, before the device is attached.
 */
void roce_glue_set_clock(struct roce_glue *g, uint64_t (*clock_us)(void));

/* The node, for counters and tests (NULL before a device was attached). */
struct roce_port;
const struct roce_port *roce_glue_port(const struct roce_glue *g);

#endif
