/*
 * Glue between the ionic RDMA engine and the NVMe-oF modules (nvmeof_cm,
 * nvmeof_target): see fabric_nvmeof.h. The controller is not a host
 * on the Ethernet segment; the engine routes to it by queue pair: GSI sends
 * addressed to ip= go to the CM, RC sends to a controller QPN to the target.
 */
#include "fabric/fabric_nvmeof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ionic/ionic_dev.h"
#include "ionic/ionic_rdma_if.h"
#include "util/backend_opts.h"
#include "nvmeof/nvmeof_cm.h"
#include "nvmeof/nvmeof_target.h"
#include "util/evloop.h"
#include "util/inet_csum.h"
#include "util/log.h"

#define GSI_QPN 1
#define PENDING_MAX 256      /* responses waiting for the guest to post receives, per queue */
#define TICK_MS 100


struct pending_rsp {
	struct nvme_cpl cpl;
	uint32_t inv_rkey;
};

/* One controller-side queue pair: a CM connection and the target's queue behind it. */
struct glue_conn {
	struct fabric_nvmeof *g;
	uint32_t ctrl_qpn, guest_qpn;
	struct nvmeof_qpair *q;
	struct pending_rsp pending[PENDING_MAX];
	unsigned int pend_head, pend_count;
	bool overflow;          /* responses were dropped: disconnect at the next tick */
	struct glue_conn *next;
};

struct fabric_nvmeof {
	const struct nvmeof_config *cfg;
	struct nvmeof_ns *ns;
	struct evloop *loop;
	struct ev_timer *timer;
	struct ionic_dev *dev;
	struct nvmeof_cm *cm;
	struct nvmeof_target *target;
	struct glue_conn *conns;
	uint8_t mac[6];         /* the controller address's MAC (it answers ARP with it): the sender the guest's completions name */
};

/* ---- responses into the guest's receives ----------------------------------------------- */

static void conn_flush(struct glue_conn *c)
{
	while (c->pend_count) {
		struct pending_rsp *p = &c->pending[c->pend_head];
		int rc = ionic_rdma_peer_deliver(c->g->dev, c->guest_qpn, c->ctrl_qpn, &p->cpl, sizeof(p->cpl),
						 p->inv_rkey, NULL, c->g->mac);

		if (rc == -EAGAIN)
			return;
		if (rc)
			LOG_DEBUG("nvmeof: response for guest QP %u lost (%d)", c->guest_qpn, rc);
		c->pend_head = (c->pend_head + 1) % PENDING_MAX;
		c->pend_count--;
	}
}

static void target_send_rsp(void *ctx, void *transport_qp, const struct nvme_cpl *cpl, uint32_t inv_rkey)
{
	struct glue_conn *c = transport_qp;
	struct pending_rsp *p;

	(void)ctx;
	if (c->pend_count == PENDING_MAX) {
		/*
		 * More responses than receives for a whole queue: the host broke its
		 * own flow control. The connection goes at the next tick (not here:
		 * the target is still inside this queue's capsule).
		 */
		if (!c->overflow)
			LOG_WARN("nvmeof: guest QP %u posts no receives; dropping its connection", c->guest_qpn);
		c->overflow = true;
		return;
	}
	p = &c->pending[(c->pend_head + c->pend_count) % PENDING_MAX];
	p->cpl = *cpl;
	p->inv_rkey = inv_rkey;
	c->pend_count++;
	conn_flush(c);
}

static void target_disconnect(void *ctx, void *transport_qp)
{
	struct glue_conn *c = transport_qp;

	(void)ctx;
	nvmeof_cm_disconnect(c->g->cm, c->ctrl_qpn, evloop_now_ms()); /* destroys the queue pair */
}

static uint64_t target_now(void *ctx)
{
	(void)ctx;
	return evloop_now_ms();
}

/* RDMA READ/WRITE of the target against the guest QP's keys. */
static int conn_dma_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	struct glue_conn *c = ctx;

	return ionic_rdma_peer_xfer(c->g->dev, c->guest_qpn, key, addr, dst, len, false);
}

static int conn_dma_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	struct glue_conn *c = ctx;

	return ionic_rdma_peer_xfer(c->g->dev, c->guest_qpn, key, addr, (void *)src, len, true);
}

/* ---- the CM's side ------------------------------------------------------------------------------------ */

/* An IPv4 RoCEv2 GRH area (bytes 20-39 an IPv4 header) between the two IPv4-mapped GIDs. */
static void grh_v4(uint8_t grh[40], const uint8_t sgid[16], const uint8_t dgid[16], size_t payload)
{
	uint16_t tot = (uint16_t)(20 + 8 + 12 + 8 + payload + 4);
	uint8_t *ip = grh + 20;
	uint16_t sum;

	memset(grh, 0, 40);
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[6] = 0x40;   /* don't fragment */
	ip[8] = 64;     /* TTL */
	ip[9] = 17;     /* UDP */
	memcpy(ip + 12, sgid + 12, 4);
	memcpy(ip + 16, dgid + 12, 4);
	sum = inet_csum_fold(inet_csum_add(0, ip, 20));
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

static void cm_send_mad(void *ctx, const uint8_t mad[NVMEOF_CM_MAD_SIZE], const uint8_t sgid[16],
			const uint8_t dgid[16])
{
	struct fabric_nvmeof *g = ctx;
	uint8_t grh[40];
	int rc;

	grh_v4(grh, sgid, dgid, NVMEOF_CM_MAD_SIZE);
	/* A MAD with no receive posted is lost, as on a wire: the guest's CM retransmits. */
	rc = ionic_rdma_peer_deliver(g->dev, GSI_QPN, GSI_QPN, mad, NVMEOF_CM_MAD_SIZE, 0, grh, g->mac);
	if (rc)
		LOG_DEBUG("nvmeof: CM MAD to the guest's GSI QP lost (%d)", rc);
}

static int cm_queue_create(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct fabric_nvmeof *g = ctx;
	struct glue_conn *c = calloc(1, sizeof(*c));
	struct dma_ops dma = { .read = conn_dma_read, .write = conn_dma_write };

	if (!c)
		return 6; /* NVME_RDMA_CM_NO_RSC */
	c->g = g;
	c->ctrl_qpn = conn->ctrl_qpn;
	c->guest_qpn = conn->guest_qpn;
	dma.ctx = c;
	c->q = nvmeof_qpair_create(g->target, conn->qid, conn->hsqsize, &dma, c);
	if (!c->q) {
		free(c);
		return 6;
	}
	c->next = g->conns;
	g->conns = c;
	conn->queue = c;
	LOG_DEBUG("nvmeof: queue %u connected: guest QP %u <-> controller QP %#x", conn->qid, c->guest_qpn,
		  c->ctrl_qpn);
	return 0;
}

static void cm_queue_destroy(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct fabric_nvmeof *g = ctx;
	struct glue_conn *c = conn->queue, **pp;

	if (!c)
		return;
	for (pp = &g->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	conn->queue = NULL;
	nvmeof_qpair_destroy(c->q);
	free(c);
}

/* ---- the engine's side ----------------------------------------------------------------------------------- */

static bool peer_ud_send(void *ctx, uint32_t guest_qpn, uint32_t dst_ip, uint32_t dest_qpn, const void *payload,
			 size_t len)
{
	struct fabric_nvmeof *g = ctx;

	/* Not while the CM is being re-created (peer_reset failed to allocate). */
	if (!g->cm || guest_qpn != GSI_QPN || dest_qpn != GSI_QPN || dst_ip != g->cfg->ip)
		return false;
	nvmeof_cm_mad(g->cm, payload, len, evloop_now_ms());
	return true;
}

static bool peer_rc_owns(void *ctx, uint32_t dest_qpn)
{
	struct fabric_nvmeof *g = ctx;

	return g->cm && nvmeof_cm_lookup(g->cm, dest_qpn) != NULL;
}

static uint32_t peer_rc_send(void *ctx, uint32_t guest_qpn, uint32_t peer_qpn, const void *payload, size_t len)
{
	struct fabric_nvmeof *g = ctx;
	struct nvmeof_cm_conn *conn = nvmeof_cm_lookup(g->cm, peer_qpn);
	struct glue_conn *c = conn ? conn->queue : NULL;

	if (!c || c->guest_qpn != guest_qpn)
		return IONIC_STS_REMOTE_INV_REQ_ERR; /* not this guest QP's connection */
	nvmeof_cm_established(g->cm, peer_qpn); /* the first capsule stands in for a lost RTU */
	nvmeof_qpair_recv(c->q, payload, len);
	return 0;
}

static void peer_rq_posted(void *ctx, uint32_t guest_qpn)
{
	struct fabric_nvmeof *g = ctx;

	for (struct glue_conn *c = g->conns; c; c = c->next)
		if (c->guest_qpn == guest_qpn && c->pend_count)
			conn_flush(c);
}

/*
 * The guest destroyed (or reset) a QP a connection runs on. On a wire the
 * controller would learn it from its next SEND failing, or from keep-alive:
 * with keep-alive off, never, and the connection would hold its place in the
 * CM and the controller for good. The device tells us at once, so the
 * connection ends now, as the controller ends one (a DREQ to the guest);
 * responses it held for that QP are dropped with it, and nothing reaches a
 * new QP the guest makes under the same number.
 */
static void peer_qp_gone(void *ctx, uint32_t guest_qpn)
{
	struct fabric_nvmeof *g = ctx;

	for (;;) {
		struct glue_conn *c = g->conns;

		while (c && c->guest_qpn != guest_qpn)
			c = c->next;
		if (!c)
			return;
		LOG_DEBUG("nvmeof: guest QP %u is gone; ending its connection (controller QP %#x)", guest_qpn,
			  c->ctrl_qpn);
		/* Destroys the queue (frees c): the list changed, so look again from its head. */
		if (nvmeof_cm_disconnect(g->cm, c->ctrl_qpn, evloop_now_ms())) {
			LOG_ERR("nvmeof: connection of guest QP %u unknown to the CM", guest_qpn);
			return; /* cannot happen: a queue exists only while its CM connection is live */
		}
	}
}

static struct nvmeof_cm *cm_new(struct fabric_nvmeof *g)
{
	struct nvmeof_cm_config cc = {
		.ip = g->cfg->ip,
		.port = g->cfg->port,
		.max_qid = (uint16_t)g->cfg->queues,
		.max_queue_size = NVMEOF_MAX_QUEUE_SIZE,
		.max_admin_queue_size = NVMEOF_ADMIN_QUEUE_SIZE,
		.ca_guid = 0x02455200c0a8c801ull,
	};
	struct nvmeof_cm_ops ops = {
		.ctx = g, .send_mad = cm_send_mad, .queue_create = cm_queue_create, .queue_destroy = cm_queue_destroy,
	};

	return nvmeof_cm_create(&cc, &ops);
}

/* The guest's RDMA side was reset: its QPs are gone, so are the connections. */
static void peer_reset(void *ctx)
{
	struct fabric_nvmeof *g = ctx;

	nvmeof_cm_destroy(g->cm); /* destroys every queue pair */
	g->cm = cm_new(g);
	if (!g->cm)
		LOG_ERR("nvmeof: out of memory re-creating the connection manager");
}

static void tick(void *arg, uint32_t events)
{
	struct fabric_nvmeof *g = arg;

	(void)events;
	for (struct glue_conn *c = g->conns; c; c = c->next) {
		if (c->overflow) {
			nvmeof_cm_disconnect(g->cm, c->ctrl_qpn, evloop_now_ms()); /* frees c */
			break; /* the list changed: the rest waits for the next tick */
		}
	}
	if (g->cm)
		nvmeof_cm_tick(g->cm, evloop_now_ms());
	nvmeof_target_tick(g->target);
}

struct fabric_nvmeof *fabric_nvmeof_new(const struct nvmeof_config *cfg, struct nvmeof_ns *ns, struct evloop *loop)
{
	struct fabric_nvmeof *g = calloc(1, sizeof(*g));
	struct nvmeof_target_ops tops = { .send_rsp = target_send_rsp, .disconnect = target_disconnect,
					  .now_ms = target_now };

	if (!g)
		return NULL;
	g->cfg = cfg;
	g->ns = ns;
	g->loop = loop;
	nvmeof_host_mac(cfg->ip, g->mac);
	tops.ctx = g;
	g->target = nvmeof_target_create(cfg, ns, &tops);
	g->cm = g->target ? cm_new(g) : NULL;
	g->timer = g->cm && loop ? evloop_add_timer(loop, TICK_MS, tick, g) : NULL;
	if (!g->target || !g->cm || (loop && !g->timer)) {
		fabric_nvmeof_free(g);
		return NULL;
	}
	return g;
}

void fabric_nvmeof_attach(struct fabric_nvmeof *g, struct ionic_dev *dev)
{
	struct ionic_rdma_peer_ops ops = {
		.ctx = g, .ud_send = peer_ud_send, .rc_owns = peer_rc_owns, .rc_send = peer_rc_send,
		.rq_posted = peer_rq_posted, .reset = peer_reset, .qp_gone = peer_qp_gone,
	};

	if (g->dev)
		ionic_dev_set_rdma_peer(g->dev, NULL);
	g->dev = dev;
	if (dev)
		ionic_dev_set_rdma_peer(dev, &ops);
}

void fabric_nvmeof_free(struct fabric_nvmeof *g)
{
	if (!g)
		return;
	if (g->dev)
		ionic_dev_set_rdma_peer(g->dev, NULL);
	if (g->timer)
		evloop_del_timer(g->loop, g->timer);
	nvmeof_cm_destroy(g->cm);
	nvmeof_target_destroy(g->target);
	free(g);
}
