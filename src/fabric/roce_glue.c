/*
 * The roce backend's glue between the device's wire transport interface
 * (ionic/ionic_dev.h, ionic_rdma_wire_ops and the ionic_rdma_wire_* entry
 * points) and a guest node on the segment (roce_port.h); see roce_glue.h.
 */
#include "fabric/roce_glue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fabric/roce_port.h"
#include "ionic/ionic_dev.h"
#include "util/evloop.h"
#include "util/log.h"
#include "util/parse_int.h"

/* The node must hold every QP the device can put on the wire (ids 1 .. IONIC_DEV_RDMA_NQP - 1). */
_Static_assert(ROCE_PORT_MAX_QPS >= IONIC_DEV_RDMA_NQP - 1, "the node holds as many QPs as the device has");

struct glue_qp {
	bool used;
	bool detach_pending;    /* the device let it go from inside a pump: destroyed after the pump */
	bool access_failed;     /* the responder's last memory access was refused (its fatal NAK's cause) */
	uint32_t qpn;
	struct roce_glue *g;
};

/* Requester and responder counters summed over QPs, for roce_glue_log_stats. */
struct glue_counts {
	uint64_t req_in[ROCE_RC_REQ_IN_NUM], resp_in[ROCE_RC_IN_NUM];
	uint64_t req_frames, req_retransmits, req_timeouts, resp_frames, resp_read_again, resp_out_dropped, resp_out_full;
};

struct roce_glue {
	struct roce_config cfg;
	struct evloop *loop;
	struct net_switch *sw;
	struct ionic_dev *dev;
	struct roce_port *port;         /* made at the first QP, with its MAC */
	uint64_t (*clock_us)(void);     /* the node's clock between runs (roce_glue_set_clock) */
	struct ev_poller *poller;
	bool in_pump;
	/*
	 * Indexed by the device's QP id, which the device bounds below
	 * IONIC_DEV_RDMA_NQP (and gq_find checks again): small entries, so a
	 * table of all of them, and a lookup that is one index.
	 */
	struct glue_qp qp[IONIC_DEV_RDMA_NQP];
	unsigned detach_pending;        /* entries with detach_pending set: roce_glue_run's sweep has work */
	uint64_t ip_refused;            /* QPs, datagrams out and datagrams in refused for another address than ip= */
	struct glue_counts gone;        /* the counters of QPs already destroyed */
	uint64_t wc_err[ROCE_RC_REQ_WC_NUM];
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static struct glue_qp *gq_find(struct roce_glue *g, uint32_t qpn)
{
	return qpn < IONIC_DEV_RDMA_NQP && g->qp[qpn].used ? &g->qp[qpn] : NULL;
}

/* ---- the requester's callbacks ------------------------------------------------------------- */

static enum ionic_rdma_wire_status req_status(enum roce_rc_req_wc wc)
{
	static const enum ionic_rdma_wire_status map[ROCE_RC_REQ_WC_NUM] = {
		[ROCE_RC_REQ_WC_SUCCESS] = IONIC_WIRE_OK,
		[ROCE_RC_REQ_WC_LOC_PROT_ERR] = IONIC_WIRE_LOC_PROT_ERR,
		[ROCE_RC_REQ_WC_REM_INV_REQ_ERR] = IONIC_WIRE_REM_INV_REQ_ERR,
		[ROCE_RC_REQ_WC_REM_ACCESS_ERR] = IONIC_WIRE_REM_ACCESS_ERR,
		[ROCE_RC_REQ_WC_REM_OP_ERR] = IONIC_WIRE_REM_OP_ERR,
		[ROCE_RC_REQ_WC_REM_INV_RD_REQ_ERR] = IONIC_WIRE_REM_INV_REQ_ERR,
		[ROCE_RC_REQ_WC_BAD_RESP_ERR] = IONIC_WIRE_BAD_RESP_ERR,
		[ROCE_RC_REQ_WC_RETRY_EXC_ERR] = IONIC_WIRE_RETRY_EXC_ERR,
		[ROCE_RC_REQ_WC_RNR_RETRY_EXC_ERR] = IONIC_WIRE_RNR_RETRY_EXC_ERR,
		[ROCE_RC_REQ_WC_FLUSH_ERR] = IONIC_WIRE_FLUSH_ERR,
	};

	return (unsigned)wc < ROCE_RC_REQ_WC_NUM ? map[wc] : IONIC_WIRE_BAD_RESP_ERR;
}

static int c_local_read(void *ctx, uint64_t wr_id, uint32_t offset, void *buf, uint32_t len)
{
	struct glue_qp *q = ctx;

	return ionic_rdma_wire_local(q->g->dev, q->qpn, wr_id, offset, buf, len, false);
}

static const void *c_local_peek(void *ctx, uint64_t wr_id, uint32_t offset, uint32_t len)
{
	struct glue_qp *q = ctx;

	return ionic_rdma_wire_local_peek(q->g->dev, q->qpn, wr_id, offset, len);
}

static int c_local_write(void *ctx, uint64_t wr_id, uint32_t offset, const void *data, uint32_t len)
{
	struct glue_qp *q = ctx;

	return ionic_rdma_wire_local(q->g->dev, q->qpn, wr_id, offset, (void *)data, len, true);
}

static void c_complete(void *ctx, uint64_t wr_id, enum roce_rc_req_wc status, uint32_t byte_len,
		       uint64_t atomic_orig)
{
	struct glue_qp *q = ctx;

	(void)byte_len;
	if ((unsigned)status < ROCE_RC_REQ_WC_NUM && status != ROCE_RC_REQ_WC_SUCCESS) {
		q->g->wc_err[status]++;
		if (status != ROCE_RC_REQ_WC_FLUSH_ERR) {
			const struct roce_rc_req *rq = roce_port_qp_requester(q->g->port, q->qpn);

			LOG_INFO("roce: QP %u: a send work request failed: %s", q->qpn, roce_rc_req_wc_name(status));
			if (rq) {
				const uint64_t now = q->g->clock_us();

				LOG_INFO("roce: QP %u requester: una %#x send %#x sent_max %#x next %#x, %u queued, "
					 "%llu packets, %llu resent, %llu timeouts, %llu sequence NAKs, %llu implied, "
					 "%llu echoes, %llu stale, %llu ACKs",
					 q->qpn, rq->una, rq->send_psn, rq->sent_max, rq->next_psn, rq->count,
					 (unsigned long long)rq->frames_sent, (unsigned long long)rq->retransmits,
					 (unsigned long long)rq->timeouts,
					 (unsigned long long)rq->stats[ROCE_RC_REQ_IN_SEQ_NAK],
					 (unsigned long long)rq->stats[ROCE_RC_REQ_IN_IMPLIED_NAK],
					 (unsigned long long)rq->stats[ROCE_RC_REQ_IN_ECHO],
					 (unsigned long long)rq->stats[ROCE_RC_REQ_IN_STALE],
					 (unsigned long long)rq->stats[ROCE_RC_REQ_IN_ACK]);
				/* Was the responder silent, or answering what we could not use? */
				LOG_INFO("roce: QP %u requester: una last moved %lld ms ago; since then %u responses "
					 "(%u stale), %u retries left; last response %lld ms ago",
					 q->qpn, rq->una_moved_us ? (long long)(now - rq->una_moved_us) / 1000 : -1LL,
					 rq->responses_since, rq->stale_since, rq->retry_left,
					 rq->last_response_us ? (long long)(now - rq->last_response_us) / 1000 : -1LL);
			}
		}
	}
	ionic_rdma_wire_send_done(q->g->dev, q->qpn, wr_id, req_status(status), atomic_orig);
}

static const struct roce_rc_req_ops req_ops = {
	.local_read = c_local_read, .local_peek = c_local_peek, .local_write = c_local_write, .complete = c_complete,
};

/* ---- the responder's callbacks ------------------------------------------------------------- */

static bool c_recv_take(void *ctx, uint64_t *handle)
{
	struct glue_qp *q = ctx;

	return ionic_rdma_wire_recv_take(q->g->dev, q->qpn, handle) == 0;
}

static int c_recv_write(void *ctx, uint64_t handle, uint32_t offset, const void *data, uint32_t len)
{
	struct glue_qp *q = ctx;

	return ionic_rdma_wire_recv_write(q->g->dev, q->qpn, handle, offset, data, len);
}

static void c_recv_complete(void *ctx, uint64_t handle, const struct roce_rc_recv_cqe *cqe)
{
	static const enum ionic_rdma_wire_status map[ROCE_RC_WC_NUM] = {
		[ROCE_RC_WC_SUCCESS] = IONIC_WIRE_OK,
		[ROCE_RC_WC_LOC_LEN_ERR] = IONIC_WIRE_LOC_LEN_ERR,
		[ROCE_RC_WC_LOC_QP_OP_ERR] = IONIC_WIRE_LOC_QP_OP_ERR,
		[ROCE_RC_WC_LOC_ACCESS_ERR] = IONIC_WIRE_LOC_ACCESS_ERR,
		[ROCE_RC_WC_FLUSH_ERR] = IONIC_WIRE_FLUSH_ERR,
	};
	struct glue_qp *q = ctx;
	struct ionic_rdma_wire_recv rv = {
		.status = (unsigned)cqe->status < ROCE_RC_WC_NUM ? map[cqe->status] : IONIC_WIRE_LOC_QP_OP_ERR,
		.byte_len = cqe->byte_len, .write_imm = cqe->write_imm, .has_imm = cqe->has_imm,
		.has_inv = cqe->has_inv, .solicited = cqe->solicited, .imm = cqe->imm, .inv_rkey = cqe->inv_rkey,
	};

	ionic_rdma_wire_recv_done(q->g->dev, q->qpn, handle, &rv);
}

static int c_mem_write(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	struct glue_qp *q = ctx;
	int rc = ionic_rdma_peer_xfer(q->g->dev, q->qpn, rkey, va, (void *)data, len, true);

	q->access_failed = rc != 0;
	return rc;
}

static int c_mem_read(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	struct glue_qp *q = ctx;
	int rc = ionic_rdma_peer_xfer(q->g->dev, q->qpn, rkey, va, buf, len, false);

	q->access_failed = rc != 0;
	return rc;
}

static const void *c_mem_peek(void *ctx, uint32_t rkey, uint64_t va, uint32_t len)
{
	struct glue_qp *q = ctx;
	const void *p = ionic_rdma_peer_peek(q->g->dev, q->qpn, rkey, va, len);

	if (p != NULL)
		q->access_failed = false;
	return p;
}

static int c_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		    uint64_t *orig)
{
	struct glue_qp *q = ctx;
	int rc = ionic_rdma_wire_atomic(q->g->dev, q->qpn, rkey, va, cmp_swap, swap_add, compare, orig);

	q->access_failed = rc != 0;
	return rc;
}

static int c_invalidate(void *ctx, uint32_t rkey)
{
	struct glue_qp *q = ctx;

	q->access_failed = false;
	return ionic_rdma_wire_invalidate(q->g->dev, q->qpn, rkey);
}

/* The responder sent a fatal NAK: the device QP follows it into the error state. */
static void c_resp_fatal(void *ctx)
{
	struct glue_qp *q = ctx;

	ionic_rdma_wire_qp_fatal(q->g->dev, q->qpn, q->access_failed);
}

static const struct roce_rc_ops resp_ops = {
	.recv_take = c_recv_take, .recv_write = c_recv_write, .recv_complete = c_recv_complete,
	.mem_write = c_mem_write, .mem_read = c_mem_read, .mem_peek = c_mem_peek, .atomic = c_atomic,
	.invalidate = c_invalidate,
};

/* ---- the device's wire ops ------------------------------------------------------------------ */

/* Add a QP's requester and responder counters to tot. */
static void gq_count(const struct roce_glue *g, uint32_t qpn, struct glue_counts *tot)
{
	const struct roce_rc_req *rq = g->port ? roce_port_qp_requester(g->port, qpn) : NULL;
	const struct roce_rc_resp *rs = g->port ? roce_port_qp_responder(g->port, qpn) : NULL;

	if (rq) {
		for (unsigned i = 0; i < ROCE_RC_REQ_IN_NUM; i++)
			tot->req_in[i] += rq->stats[i];
		tot->req_frames += rq->frames_sent;
		tot->req_retransmits += rq->retransmits;
		tot->req_timeouts += rq->timeouts;
	}
	if (rs) {
		for (unsigned i = 0; i < ROCE_RC_IN_NUM; i++)
			tot->resp_in[i] += rs->stats[i];
		tot->resp_frames += rs->frames_sent;
		tot->resp_read_again += rs->read_again;
		tot->resp_out_dropped += rs->out_dropped;
		tot->resp_out_full += rs->out_full;
	}
}

static void gq_destroy(struct roce_glue *g, struct glue_qp *q)
{
	gq_count(g, q->qpn, &g->gone);
	q->used = false; /* first: the flushes the port sends on its way out find no QP */
	if (q->detach_pending)
		g->detach_pending--;
	q->detach_pending = false;
	if (g->port)
		roce_port_qp_destroy(g->port, q->qpn);
}

/* ---- UD ----------------------------------------------------------------------------------------- */

static int port_make(struct roce_glue *g, const uint8_t mac[6]);

/*
 * ip= pins the guest to one address on the wire: a QP or a datagram whose
 * template names another source, or a datagram to another address, is
 * refused, counted and (the first few) logged. False when addr is refused.
 */
#define IP_REFUSALS_LOGGED 10
static bool ip_allowed(struct roce_glue *g, uint32_t addr, const char *what, uint32_t qpn)
{
	char a[16], pinned[16];

	if (g->cfg.ip == 0 || addr == g->cfg.ip)
		return true;
	if (++g->ip_refused <= IP_REFUSALS_LOGGED) {
		format_ipv4(addr, a);
		format_ipv4(g->cfg.ip, pinned);
		LOG_WARN("roce: %s of QP %u names %s, not ip=%s: refused", what, qpn, a, pinned);
	}
	return false;
}

/*
 * A UD datagram from the wire: the device judges the QP and the Q_Key; what
 * it refuses is lost, as UD may be, and counted by the node (ud_refused).
 */
static bool ud_input(void *ctx, const struct roce_pkt *pkt)
{
	struct roce_glue *g = ctx;
	struct ionic_rdma_wire_ud ud;
	int rc;

	if (g->dev == NULL || pkt->deth == NULL)
		return false;
	if (!ip_allowed(g, be32_get(pkt->ip->dst), "a datagram to the address", roce_bth_dqpn(pkt->bth)))
		return false;
	ud = (struct ionic_rdma_wire_ud){
		.src_qpn = be32_get(pkt->deth->sqp) & ROCE_QPN_MASK, .dest_qpn = roce_bth_dqpn(pkt->bth),
		.qkey = be32_get(pkt->deth->qkey), .has_imm = pkt->imm != NULL, .solicited = roce_bth_se(pkt->bth),
		.imm = pkt->imm != NULL ? be32_get(pkt->imm->imm) : 0, .vlan = pkt->vlan, .tci = pkt->vlan_tci,
	};
	rc = ionic_rdma_wire_ud_recv(g->dev, &ud, (const uint8_t *)pkt->ip, pkt->eth->src, pkt->payload,
				     pkt->payload_len);
	if (rc != 0)
		LOG_DEBUG("roce: UD to QP %u dropped (%d)", ud.dest_qpn, rc);
	return rc == 0;
}

static void w_ud_send(void *ctx, const struct ionic_rdma_wire_path *p, const struct ionic_rdma_wire_ud *ud,
		      const void *payload, uint32_t len)
{
	struct roce_glue *g = ctx;
	struct roce_port_ud d = {
		.src_ip = p->sip, .dst_ip = p->dip, .tos = p->tos, .ttl = p->ttl, .sport = p->sport,
		.src_qpn = ud->src_qpn, .dst_qpn = ud->dest_qpn, .qkey = ud->qkey, .has_imm = ud->has_imm,
		.solicited = ud->solicited, .imm = ud->imm, .vlan = p->vlan, .tci = p->tci,
	};

	if (!ip_allowed(g, p->sip, "a datagram from the address", ud->src_qpn))
		return;
	if (g->port == NULL && port_make(g, p->smac) != 0)
		return;
	memcpy(d.src_mac, p->smac, sizeof(d.src_mac));
	memcpy(d.dst_mac, p->dmac, sizeof(d.dst_mac));
	if (roce_port_ud_send(g->port, &d, payload, len) != 0)
		LOG_DEBUG("roce: UD from QP %u not sent (bad address or length)", ud->src_qpn);
}

/*
 * The guest node, with the NIC's MAC when the device is attached (so that
 * RoCEv2 to the guest never reaches its Ethernet queue, even before its
 * first QP), or else the first QP's.
 */
static int port_make(struct roce_glue *g, const uint8_t mac[6])
{
	struct roce_port_cfg pc = { .name = "roce", .guest = true, .clock_us = g->clock_us };

	memcpy(pc.mac, mac, sizeof(pc.mac));
	g->port = roce_port_new(&pc, g->sw);
	if (g->port == NULL)
		return -ENOMEM;
	roce_port_set_ud_handler(g->port, ud_input, g);
	return 0;
}

static int w_qp_attach(void *ctx, uint32_t qpn, const struct ionic_rdma_wire_path *p)
{
	struct roce_glue *g = ctx;
	struct glue_qp *q = gq_find(g, qpn);
	struct roce_port_qp_cfg qc;
	uint8_t timeout = p->timeout, retry = p->retry_cnt;
	int rc;

	/* The device itself (or no address at all): the loopback fabric's. */
	if (p->dip == p->sip || p->dip == 0 || p->sip == 0)
		return 0;
	if (!ip_allowed(g, p->sip, "the template", qpn))
		return -EACCES;
	if (timeout < g->cfg.timeout)
		timeout = (uint8_t)g->cfg.timeout;
	if (retry == 0)
		retry = (uint8_t)g->cfg.retry;
	if (q != NULL && !q->detach_pending) {
		/* Again at RTS: the send parameters now apply (an RTS-to-RTS change finds WRs queued: kept). */
		if (p->rts) {
			rc = roce_port_qp_set_requester(g->port, qpn, p->sq_psn, timeout, retry, p->rnr_retry,
							p->max_rd_atomic);
			if (rc != 0 && rc != -EBUSY)
				return rc;
		}
		return 1;
	}
	if (q != NULL)
		gq_destroy(g, q);
	if (g->port == NULL && port_make(g, p->smac) != 0)
		return -ENOMEM;
	if (qpn == 0 || qpn >= IONIC_DEV_RDMA_NQP)
		return -EINVAL; /* never: the device's own ids */
	q = &g->qp[qpn];
	qc = (struct roce_port_qp_cfg){
		.remote_ip = p->dip, .remote_qpn = p->dest_qpn, .sq_psn = p->sq_psn, .rq_psn = p->rq_psn,
		.pkey = 0xffff, .pmtu = p->pmtu < g->cfg.mtu ? p->pmtu : g->cfg.mtu, .timeout = timeout,
		.retry_cnt = retry, .rnr_retry = p->rnr_retry, .max_rd_atomic = p->max_rd_atomic,
		.min_rnr_timer = p->min_rnr_timer, .tos = p->tos, .ttl = p->ttl,
		.ackreq_every = ROCE_GLUE_ACKREQ_EVERY, .max_unacked = ROCE_GLUE_MAX_UNACKED, .local_ip = p->sip, .sport = p->sport,
		.uc = p->uc, .vlan = p->vlan, .tci = p->tci,
		.resp_fatal = c_resp_fatal, .resp_ops = &resp_ops, .resp_ctx = q, .req_ops = &req_ops, .req_ctx = q,
	};
	memcpy(qc.local_mac, p->smac, sizeof(qc.local_mac));
	memcpy(qc.remote_mac, p->dmac, sizeof(qc.remote_mac));
	rc = roce_port_qp_create(g->port, qpn, &qc, g->clock_us());
	if (rc != 0)
		return rc;
	*q = (struct glue_qp){ .used = true, .qpn = qpn, .g = g };
	LOG_DEBUG("roce: %s QP %u on the wire to QP %u, pmtu %u%s (tci %#x)", p->uc ? "UC" : "RC", qpn, p->dest_qpn, qc.pmtu,
		  p->vlan ? ", 802.1Q tagged" : ", untagged", p->tci);
	return 1;
}

static int w_post(void *ctx, uint32_t qpn, const struct ionic_rdma_wire_wr *w)
{
	static const enum roce_rc_req_op ops[] = {
		[IONIC_WIRE_SEND] = ROCE_RC_REQ_SEND, [IONIC_WIRE_SEND_IMM] = ROCE_RC_REQ_SEND_IMM,
		[IONIC_WIRE_SEND_INV] = ROCE_RC_REQ_SEND_INV, [IONIC_WIRE_WRITE] = ROCE_RC_REQ_WRITE,
		[IONIC_WIRE_WRITE_IMM] = ROCE_RC_REQ_WRITE_IMM, [IONIC_WIRE_READ] = ROCE_RC_REQ_READ,
		[IONIC_WIRE_CMP_SWAP] = ROCE_RC_REQ_CMP_SWAP, [IONIC_WIRE_FETCH_ADD] = ROCE_RC_REQ_FETCH_ADD,
	};
	struct roce_glue *g = ctx;
	struct glue_qp *q = gq_find(g, qpn);
	struct roce_rc_req_wr wr;

	if (q == NULL || q->detach_pending || (unsigned)w->op >= sizeof(ops) / sizeof(ops[0]))
		return -ENOTCONN;
	/* Every WR is signaled: the device writes a completion for each, as its driver expects. */
	wr = (struct roce_rc_req_wr){
		.wr_id = w->wr_id, .op = ops[w->op], .signaled = true, .solicited = w->solicited, .len = w->len,
		.va = w->va, .rkey = w->rkey, .imm = w->imm, .inv_rkey = w->inv_rkey, .swap_add = w->swap_add,
		.compare = w->compare,
	};
	return roce_port_qp_post(g->port, qpn, &wr);
}

static void w_qp_detach(void *ctx, uint32_t qpn)
{
	struct roce_glue *g = ctx;
	struct glue_qp *q = gq_find(g, qpn);

	if (q == NULL)
		return;
	if (g->in_pump || (g->port != NULL && roce_port_busy(g->port))) {
		/* the port is in the middle of this QP's callback (a pump, or a super-frame's datagram) */
		if (!q->detach_pending)
			g->detach_pending++;
		q->detach_pending = true;
	} else {
		gq_destroy(g, q);
	}
}

static void w_reset(void *ctx)
{
	struct roce_glue *g = ctx;

	for (unsigned i = 0; i < IONIC_DEV_RDMA_NQP; i++)
		if (g->qp[i].used)
			w_qp_detach(g, g->qp[i].qpn);
}

/* ---- the work -------------------------------------------------------------------------------- */

unsigned roce_glue_run(struct roce_glue *g, uint64_t now)
{
	unsigned n;

	if (g->port == NULL || g->dev == NULL)
		return 0;
	g->in_pump = true;
	if (now >= roce_port_next_deadline(g->port))
		roce_port_tick(g->port, now);
	n = roce_port_pump(g->port, ROCE_GLUE_BUDGET, now);
	g->in_pump = false;
	/* Rare (a QP that failed inside the pump): the whole table then, not every turn. */
	for (unsigned i = 0; i < IONIC_DEV_RDMA_NQP && g->detach_pending > 0; i++)
		if (g->qp[i].used && g->qp[i].detach_pending)
			gq_destroy(g, &g->qp[i]);
	return n;
}

static enum ev_poll_result glue_work(void *arg)
{
	struct roce_glue *g = arg;
	unsigned n;

	if (g->port == NULL || g->dev == NULL)
		return EV_POLL_ASLEEP;
	n = roce_glue_run(g, g->clock_us());
	if (n >= ROCE_GLUE_BUDGET)
		return EV_POLL_MORE;
	if (n > 0)
		return EV_POLL_WORK;
	/* A timer waiting needs the loop's idle wake-ups; otherwise only an fd brings work. */
	return roce_port_next_deadline(g->port) != UINT64_MAX ? EV_POLL_EMPTY : EV_POLL_ASLEEP;
}

struct roce_glue *roce_glue_new(const struct roce_config *cfg, struct evloop *loop, struct net_switch *sw,
				char *err, size_t errlen)
{
	struct roce_glue *g = calloc(1, sizeof(*g));

	if (g == NULL) {
		snprintf(err, errlen, "roce backend: out of memory");
		return NULL;
	}
	g->cfg = *cfg;
	g->loop = loop;
	g->clock_us = now_us;
	g->sw = sw;
	if (loop != NULL) {
		g->poller = evloop_add_poller(loop, glue_work, g);
		if (g->poller == NULL) {
			snprintf(err, errlen, "roce backend: cannot schedule its work");
			free(g);
			return NULL;
		}
	}
	return g;
}

void roce_glue_attach(struct roce_glue *g, struct ionic_dev *dev)
{
	struct ionic_rdma_wire_ops ops = {
		.ctx = g, .qp_attach = w_qp_attach, .post = w_post, .qp_detach = w_qp_detach, .reset = w_reset,
		.ud_send = w_ud_send,
	};

	if (g == NULL)
		return;
	if (g->dev != NULL && dev == NULL) {
		ionic_dev_set_rdma_wire(g->dev, NULL);
		w_reset(g);
	}
	g->dev = dev;
	if (dev == NULL)
		return;
	ionic_dev_set_rdma_wire(dev, &ops);
	if (g->port == NULL && g->sw != NULL) {
		uint8_t mac[6];

		ionic_dev_mac(dev, mac);
		if (port_make(g, mac) != 0)
			LOG_WARN("roce: cannot join the segment yet (tried again at the first QP)");
	}
}

void roce_glue_free(struct roce_glue *g)
{
	if (g == NULL)
		return;
	if (g->poller != NULL)
		evloop_del_poller(g->loop, g->poller);
	roce_port_free(g->port);
	free(g);
}

/* Appends " name=N" for each nonzero counter to buf. */
static void put_counts(char *buf, size_t cap, const uint64_t *v, unsigned n, const char *(*name)(unsigned))
{
	size_t len = strlen(buf);

	for (unsigned i = 0; i < n && len < cap; i++)
		if (v[i]) {
			int k = snprintf(buf + len, cap - len, " %s=%llu", name(i), (unsigned long long)v[i]);

			if (k < 0)
				return;
			len += (size_t)k;
		}
}

static const char *req_in_name(unsigned i) { return roce_rc_req_in_name((enum roce_rc_req_in)i); }
static const char *resp_in_name(unsigned i) { return roce_rc_in_name((enum roce_rc_in)i); }
static const char *wc_name(unsigned i) { return roce_rc_req_wc_name((enum roce_rc_req_wc)i); }
static const char *drop_name(unsigned i) { return roce_port_drop_name((enum roce_port_drop)i); }
static const char *parse_name(unsigned i) { return roce_strerror((enum roce_err)i); }

void roce_glue_log_stats(const struct roce_glue *g)
{
	struct glue_counts tot;
	const struct roce_port_stats *ps;
	char line[1024];

	if (g == NULL || g->port == NULL) {
		LOG_INFO("roce: no queue pair has used the wire");
		return;
	}
	tot = g->gone;
	for (unsigned i = 0; i < IONIC_DEV_RDMA_NQP; i++)
		if (g->qp[i].used)
			gq_count(g, g->qp[i].qpn, &tot);
	ps = roce_port_stats(g->port);
	snprintf(line, sizeof(line), "roce: %llu frames in, %llu out (802.1Q tagged: %llu in, %llu out; %llu out in pieces, "
		 "their payload copied once from guest memory); UD %llu in, %llu out; "
		 "%llu super-frames cut (%llu datagrams handled where they lay, the rest through the ring); dropped:",
		 (unsigned long long)ps->frames_in, (unsigned long long)ps->frames_out,
		 (unsigned long long)ps->vlan_in, (unsigned long long)ps->vlan_out,
		 (unsigned long long)ps->frames_in_pieces, (unsigned long long)ps->ud_in, (unsigned long long)ps->ud_out, (unsigned long long)ps->super_in,
		 (unsigned long long)ps->rx_in_place);
	put_counts(line, sizeof(line), ps->drops, ROCE_PORT_DROP_NUM, drop_name);
	put_counts(line, sizeof(line), ps->parse_err, ROCE_ERR_NUM, parse_name);
	LOG_INFO("%s", line);
	snprintf(line, sizeof(line), "roce: requesters: %llu packets, %llu resent, %llu timeouts; responses:",
		 (unsigned long long)tot.req_frames, (unsigned long long)tot.req_retransmits,
		 (unsigned long long)tot.req_timeouts);
	put_counts(line, sizeof(line), tot.req_in, ROCE_RC_REQ_IN_NUM, req_in_name);
	strncat(line, "; failed work requests:", sizeof(line) - strlen(line) - 1);
	put_counts(line, sizeof(line), g->wc_err, ROCE_RC_REQ_WC_NUM, wc_name);
	LOG_INFO("%s", line);
	snprintf(line, sizeof(line), "roce: responders: %llu packets sent; requests:", (unsigned long long)tot.resp_frames);
	put_counts(line, sizeof(line), tot.resp_in, ROCE_RC_IN_NUM, resp_in_name);
	LOG_INFO("%s", line);
	LOG_INFO("roce: congestion: %llu CNPs sent, %llu received, %llu frames marked CE, %llu rate cuts (%llu late), "
		 "%llu QPs started late, %llu times a QP waited for its rate, "
		 "%llu times READ responses waited for their reader (%llu QPs started at a reader's learned rate), "
		 "%llu READs asked for again (%llu answers after them dropped), %llu responses without room",
		 (unsigned long long)ps->cnp_sent, (unsigned long long)ps->cnp_received,
		 (unsigned long long)ps->ce_received,
		 (unsigned long long)ps->rate_cuts, (unsigned long long)ps->late_cuts,
		 (unsigned long long)ps->late_starts, (unsigned long long)ps->paced,
		 (unsigned long long)ps->reader_held, (unsigned long long)ps->reader_starts,
		 (unsigned long long)tot.resp_read_again, (unsigned long long)tot.resp_out_dropped,
		 (unsigned long long)tot.resp_out_full);
	LOG_INFO("roce: readers' queues: %llu probes sent (%llu again for the same frames), %llu answered, "
		 "%llu answers matched none, %llu times READ responses waited for a reader's window, "
		 "%llu windows started over for a READ asked for again, %llu peers not answering, "
		 "%llu peers not probed for they send CNPs",
		 (unsigned long long)ps->echo_probes, (unsigned long long)ps->echo_resent,
		 (unsigned long long)ps->echo_answers, (unsigned long long)ps->echo_strays,
		 (unsigned long long)ps->echo_held, (unsigned long long)ps->echo_restarts,
		 (unsigned long long)ps->echo_mutes, (unsigned long long)ps->echo_off);
	if (g->cfg.ip != 0) {
		char pinned[16];

		format_ipv4(g->cfg.ip, pinned);
		LOG_INFO("roce: %llu QPs and datagrams refused for an address other than ip=%s",
			 (unsigned long long)g->ip_refused, pinned);
	}
}

void roce_glue_set_clock(struct roce_glue *g, uint64_t (*clock_us)(void))
{
	g->clock_us = clock_us;
}

const struct roce_port *roce_glue_port(const struct roce_glue *g)
{
	return g->port;
}
