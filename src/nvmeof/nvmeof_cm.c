/*
 * The NVMe-oF target's IB connection manager (see nvmeof_cm.h): the passive
 * side of IBA vol. 1 ch. 12 (Communication Management) for the RC
 * connections rdma_cm opens to an NVMe/RDMA listener. Behaviour tracks
 * Linux 7.2: drivers/infiniband/core/cm.c (duplicate REQs, stale
 * connections, DREQ for an unknown connection), drivers/infiniband/core/cma.c
 * (service IDs, cma_hdr) and drivers/nvme/target/rdma.c (the connect checks
 * and what goes into the REP).
 *
 * Choices the header leaves open:
 *   - Connections live in a fixed table of 2 * max_conns + TIMEWAIT_SLACK
 *     slots allocated at create time; nothing is allocated per MAD. When a
 *     REQ finds every slot taken, the oldest slot that no longer holds a
 *     queue (TIMEWAIT first, then DREQ_SENT) is recycled early: cutting a
 *     timewait short is better than refusing a live host. Controller QPNs
 *     are tracked in a bitmap over the QPN range.
 *   - max_conns counts connections that hold a queue (REP_SENT and
 *     ESTABLISHED). DREQ_SENT has already destroyed its queue, so a host
 *     that reconnects right after a keep-alive disconnect is not refused.
 *   - Defaults: reply timeout 10 s. rdma_cm asks for a 2^20 * 4.096 us
 *     (4.3 s) CM response timeout and resends its REQ at that interval, so
 *     10 s covers two resends of a REQ whose REP was lost; a duplicate REQ
 *     also restarts the REP timer, since it shows the host still waits.
 *     Timewait 2 s: Linux derives its timewait from the ACK timeout, about
 *     1 s for RoCE (packet lifetime 16); twice that is enough for an
 *     emulated link where nothing is really in flight.
 *   - SIDR_REQ is answered with SIDR_REP "service ID not supported" rather
 *     than dropped, so a UDP-port-space client fails at once instead of
 *     after its retries.
 *   - A MAD that is well formed but applies to nothing (MRA, a stray RTU,
 *     REJ or DREP, an unknown attribute) is counted in stats.dropped: the
 *     stats have no separate "ignored" counter.
 *   - NVME_RDMA_CM_INVALID_LEN is never sent: an IB REQ always carries 92
 *     bytes of private data, so a short one cannot be told apart.
 *   - Zero in max_conns means max_qid + 1 (one host's queues), in
 *     max_queue_size 128 and in max_admin_queue_size 32; max_conns is capped
 *     at MAX_CONNS_CAP. max_qid 0 is taken literally: admin queues only.
 *   - A DREQ naming our comm ID is taken as is, without Linux's extra check
 *     of the guest comm ID and QPN in it (a guest that gets those wrong
 *     would only be left waiting for its DREP).
 *   - Callbacks must not call back into nvmeof_cm_mad() or free the CM;
 *     state changes are made before each callback so nvmeof_cm_lookup()
 *     from inside one sees the new state.
 */
#include "nvmeof/nvmeof_cm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "nvmeof/ib_cm_wire.h"
#include "util/log.h"

#define DEFAULT_MAX_QUEUE_SIZE       128
#define DEFAULT_MAX_ADMIN_QUEUE_SIZE 32  /* NVME_AQ_DEPTH */
#define DEFAULT_TIMEWAIT_MS          2000
#define DEFAULT_REPLY_TIMEOUT_MS     10000
#define MAX_CONNS_CAP                1024
#define TIMEWAIT_SLACK               16
#define QPN_END                      0x00ffffffu /* 24-bit QPNs; 0xffffff is multicast */
#define QPN_FIRST_USABLE             2           /* QP0 and QP1 are the SMI and GSI */
#define PSN_MASK                     0x00ffffffu
/* What we accept of RDMA reads and atomics, either way. */
#define MAX_RD_ATOMIC                16
/*
 * Target ACK delay 16 (4.096 us * 2^16, about 270 ms): the responder is a
 * userspace event loop behind an emulated device, slower to answer than
 * silicon; the host folds this into its QP's local ACK timeout.
 */
#define TARGET_ACK_DELAY             16
#define RNR_RETRY_INFINITE           7
#define WARN_INTERVAL_MS             1000

enum cm_state {
	ST_FREE,
	ST_REP_SENT,
	ST_ESTABLISHED,
	ST_DREQ_SENT,
	ST_TIMEWAIT,
};

struct cm_slot {
	struct nvmeof_cm_conn conn;
	enum cm_state state;
	bool has_queue;     /* queue_create succeeded, queue_destroy not yet called */
	uint64_t since_ms;  /* when the current state's timer started */
	uint64_t req_tid;   /* the REQ's TID, to resend the same REP */
};

struct nvmeof_cm {
	struct nvmeof_cm_config cfg; /* defaults filled in */
	struct nvmeof_cm_ops ops;
	struct nvmeof_cm_stats stats;
	struct cm_slot *slots;
	uint32_t nslots;
	uint64_t *qpn_held;          /* one bit per QPN of the range */
	uint32_t qpn_last;           /* offset in the range of the last QPN handed out */
	uint32_t comm_seq;
	uint32_t comm_salt;
	uint32_t tid_hi;
	uint32_t tid_seq;
	uint64_t rng;
	/* The GIDs of the last accepted REQ, for replies to MADs of no known connection. */
	uint8_t last_guest_gid[16];
	uint8_t last_ctrl_gid[16];
	uint64_t last_warn_ms;
	bool warned;
};

static const char *const state_names[] = {
	[ST_FREE] = "FREE",
	[ST_REP_SENT] = "REP_SENT",
	[ST_ESTABLISHED] = "ESTABLISHED",
	[ST_DREQ_SENT] = "DREQ_SENT",
	[ST_TIMEWAIT] = "TIMEWAIT",
};

/* ---- small helpers ---- */

static uint64_t rng_next(struct nvmeof_cm *cm)
{
	/* xorshift64*: PSNs and comm ID salts need to differ, not to be secret. */
	uint64_t x = cm->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	cm->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint64_t rng_seed(const void *salt)
{
	uint64_t seed = 0;
	struct timespec ts;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)salt;
	}
	return seed ? seed : 0x9e3779b97f4a7c15ull;
}

static bool expired(uint64_t since_ms, uint64_t now_ms, uint32_t timeout_ms)
{
	return now_ms >= since_ms && now_ms - since_ms >= timeout_ms;
}

static bool warn_allowed(struct nvmeof_cm *cm, uint64_t now_ms)
{
	if (cm->warned && now_ms >= cm->last_warn_ms && now_ms - cm->last_warn_ms < WARN_INTERVAL_MS)
		return false;
	cm->warned = true;
	cm->last_warn_ms = now_ms;
	return true;
}

static bool slot_live(const struct cm_slot *s)
{
	return s->state == ST_REP_SENT || s->state == ST_ESTABLISHED;
}

static void set_state(struct cm_slot *s, enum cm_state st, uint64_t now_ms)
{
	LOG_DEBUG("nvmeof cm: qpn 0x%06x qid %u: %s -> %s", (unsigned)s->conn.ctrl_qpn,
		  (unsigned)s->conn.qid, state_names[s->state], state_names[st]);
	s->state = st;
	s->since_ms = now_ms;
}

/* ---- QPNs, comm IDs, slots ---- */

static bool qpn_bit(const struct nvmeof_cm *cm, uint32_t off)
{
	return (cm->qpn_held[off / 64] >> (off % 64)) & 1;
}

static int qpn_alloc(struct nvmeof_cm *cm, uint32_t *qpn)
{
	uint32_t n = cm->cfg.qpn_count;

	/* At most nslots bits are set, so this finds one within nslots + 1 steps. */
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t off = (cm->qpn_last + i) % n;

		if (!qpn_bit(cm, off)) {
			cm->qpn_held[off / 64] |= 1ull << (off % 64);
			cm->qpn_last = off;
			*qpn = cm->cfg.qpn_base + off;
			return 0;
		}
	}
	return -1;
}

static void qpn_release(struct nvmeof_cm *cm, uint32_t qpn)
{
	uint32_t off = qpn - cm->cfg.qpn_base;

	cm->qpn_held[off / 64] &= ~(1ull << (off % 64));
}

static struct cm_slot *find_by_local_id(struct nvmeof_cm *cm, uint32_t local_comm_id)
{
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct cm_slot *s = &cm->slots[i];

		if (s->state != ST_FREE && s->conn.local_comm_id == local_comm_id)
			return s;
	}
	return NULL;
}

/* A message naming both comm IDs: ours in its remote field, the guest's in its local one. */
static struct cm_slot *find_by_ids(struct nvmeof_cm *cm, uint32_t ours, uint32_t theirs)
{
	struct cm_slot *s = find_by_local_id(cm, ours);

	return s && s->conn.remote_comm_id == theirs ? s : NULL;
}

static struct cm_slot *find_live_by_qpn(struct nvmeof_cm *cm, uint32_t ctrl_qpn)
{
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct cm_slot *s = &cm->slots[i];

		if (slot_live(s) && s->conn.ctrl_qpn == ctrl_qpn)
			return s;
	}
	return NULL;
}

static uint32_t comm_id_alloc(struct nvmeof_cm *cm)
{
	/*
	 * An odd multiplier and an xor are bijections on 32 bits, so the
	 * sequence repeats only after 2^32 IDs; the salt keeps a restarted
	 * process from handing out the IDs the guest may still hold in its
	 * own timewait. Ends: at most nslots IDs are held, plus zero.
	 */
	for (;;) {
		uint32_t id = (cm->comm_seq++ * 0x9e3779b1u) ^ cm->comm_salt;

		if (id != 0 && find_by_local_id(cm, id) == NULL)
			return id;
	}
}

static uint32_t live_count(const struct nvmeof_cm *cm)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < cm->nslots; i++)
		n += slot_live(&cm->slots[i]);
	return n;
}

static void slot_free(struct nvmeof_cm *cm, struct cm_slot *s)
{
	LOG_DEBUG("nvmeof cm: qpn 0x%06x qid %u: %s -> freed", (unsigned)s->conn.ctrl_qpn,
		  (unsigned)s->conn.qid, state_names[s->state]);
	qpn_release(cm, s->conn.ctrl_qpn);
	memset(s, 0, sizeof(*s));
}

static struct cm_slot *slot_alloc(struct nvmeof_cm *cm)
{
	struct cm_slot *tw = NULL, *dreq = NULL;

	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct cm_slot *s = &cm->slots[i];

		if (s->state == ST_FREE)
			return s;
		if (s->state == ST_TIMEWAIT && (!tw || s->since_ms < tw->since_ms))
			tw = s;
		if (s->state == ST_DREQ_SENT && (!dreq || s->since_ms < dreq->since_ms))
			dreq = s;
	}
	if (!tw)
		tw = dreq;
	if (tw)
		slot_free(cm, tw);
	return tw;
}

/* Exactly once per queue_create that succeeded. */
static void drop_queue(struct nvmeof_cm *cm, struct cm_slot *s)
{
	if (!s->has_queue)
		return;
	s->has_queue = false;
	cm->ops.queue_destroy(cm->ops.ctx, &s->conn);
	s->conn.queue = NULL;
}

static void enter_timewait(struct nvmeof_cm *cm, struct cm_slot *s, uint64_t now_ms)
{
	set_state(s, ST_TIMEWAIT, now_ms);
	drop_queue(cm, s);
}

static void establish(struct nvmeof_cm *cm, struct cm_slot *s)
{
	set_state(s, ST_ESTABLISHED, s->since_ms);
	if (cm->ops.queue_established)
		cm->ops.queue_established(cm->ops.ctx, &s->conn);
}

/* ---- building and sending MADs ---- */

static void mad_init(union ib_cm_mad *m, uint16_t attr_id, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = IB_MAD_BASE_VERSION;
	m->hdr.mgmt_class = IB_MAD_CLASS_CM;
	m->hdr.class_version = IB_CM_CLASS_VERSION;
	m->hdr.method = IB_MAD_METHOD_SEND;
	m->hdr.tid = be64_set(tid);
	m->hdr.attr_id = be16_set(attr_id);
}

static void mad_send(struct nvmeof_cm *cm, const union ib_cm_mad *m, const uint8_t sgid[16],
		     const uint8_t dgid[16])
{
	cm->stats.mads_out++;
	cm->ops.send_mad(cm->ops.ctx, m->raw, sgid, dgid);
}

static void send_rep(struct nvmeof_cm *cm, const struct cm_slot *s)
{
	const struct nvmeof_cm_conn *c = &s->conn;
	struct nvme_rdma_cm_rep priv;
	union ib_cm_mad m;

	mad_init(&m, IB_CM_ATTR_REP, s->req_tid);
	m.rep.local_comm_id = be32_set(c->local_comm_id);
	m.rep.remote_comm_id = be32_set(c->remote_comm_id);
	ib_cm_rep_set_local_qpn(&m.rep, c->ctrl_qpn);
	ib_cm_rep_set_starting_psn(&m.rep, c->ctrl_psn);
	m.rep.responder_resources = c->responder_resources;
	m.rep.initiator_depth = c->initiator_depth;
	ib_cm_rep_set_target_ack_delay(&m.rep, TARGET_ACK_DELAY);
	ib_cm_rep_set_failover_accepted(&m.rep, IB_CM_FAILOVER_ACCEPTED);
	ib_cm_rep_set_e2e_flow_control(&m.rep, 1);
	ib_cm_rep_set_rnr_retry_count(&m.rep, RNR_RETRY_INFINITE);
	m.rep.local_ca_guid = be64_set(cm->cfg.ca_guid);

	memset(&priv, 0, sizeof(priv));
	priv.recfmt = le16_set(NVME_RDMA_CM_FMT_1_0);
	/* The controller's receive queue holds what the host may send: hsqsize is 0's based. */
	priv.crqsize = le16_set((uint16_t)(c->hsqsize + 1));
	memcpy(m.rep.private_data, &priv, sizeof(priv));

	cm->stats.reps++;
	mad_send(cm, &m, c->ctrl_gid, c->guest_gid);
}

/* A REJ answering a REQ: it names the REQ's local comm ID as its remote one. */
static void send_rej(struct nvmeof_cm *cm, const struct ib_cm_req *req, uint32_t local_comm_id,
		     uint16_t reason, const void *priv, size_t priv_len, const uint8_t sgid[16],
		     const uint8_t dgid[16])
{
	union ib_cm_mad m;

	mad_init(&m, IB_CM_ATTR_REJ, be64_get(req->hdr.tid));
	m.rej.local_comm_id = be32_set(local_comm_id);
	m.rej.remote_comm_id = req->local_comm_id;
	ib_cm_rej_set_msg_rejected(&m.rej, IB_CM_MSG_RESPONSE_REQ);
	m.rej.reason = be16_set(reason);
	if (priv_len)
		memcpy(m.rej.private_data, priv, priv_len);
	cm->stats.rejs_sent++;
	mad_send(cm, &m, sgid, dgid);
}

static void send_rej_plain(struct nvmeof_cm *cm, const struct ib_cm_req *req, uint16_t reason)
{
	send_rej(cm, req, 0, reason, NULL, 0, req->primary_remote_gid, req->primary_local_gid);
}

static void send_rej_nvme(struct nvmeof_cm *cm, const struct ib_cm_req *req, uint16_t sts,
			  uint64_t now_ms)
{
	struct nvme_rdma_cm_req n;
	struct nvme_rdma_cm_rej rej;

	/* The host's own log says which; this tells the operator a connect failed here. */
	if (warn_allowed(cm, now_ms)) {
		memcpy(&n, req->private_data + sizeof(struct cma_hdr), sizeof(n));
		LOG_WARN("nvmeof cm: connect for qid %u refused, nvme/rdma status %u",
			 (unsigned)le16_get(n.qid), (unsigned)sts);
	}
	rej.recfmt = le16_set(NVME_RDMA_CM_FMT_1_0);
	rej.sts = le16_set(sts);
	send_rej(cm, req, 0, IB_CM_REJ_CONSUMER_DEFINED, &rej, sizeof(rej), req->primary_remote_gid,
		 req->primary_local_gid);
}

static void send_drep(struct nvmeof_cm *cm, uint64_t tid, uint32_t local_comm_id,
		      uint32_t remote_comm_id, const uint8_t sgid[16], const uint8_t dgid[16])
{
	union ib_cm_mad m;

	mad_init(&m, IB_CM_ATTR_DREP, tid);
	m.drep.local_comm_id = be32_set(local_comm_id);
	m.drep.remote_comm_id = be32_set(remote_comm_id);
	cm->stats.dreps_out++;
	mad_send(cm, &m, sgid, dgid);
}

static void send_dreq(struct nvmeof_cm *cm, const struct cm_slot *s)
{
	const struct nvmeof_cm_conn *c = &s->conn;
	union ib_cm_mad m;

	/* Ours, not an answer: a TID of our own, high half fixed per CM. */
	mad_init(&m, IB_CM_ATTR_DREQ, (uint64_t)cm->tid_hi << 32 | ++cm->tid_seq);
	m.dreq.local_comm_id = be32_set(c->local_comm_id);
	m.dreq.remote_comm_id = be32_set(c->remote_comm_id);
	ib_cm_dreq_set_remote_qpn(&m.dreq, c->guest_qpn);
	cm->stats.dreqs_out++;
	mad_send(cm, &m, c->ctrl_gid, c->guest_gid);
}

/* DREQ sent, queue gone: the guest's DREP (or the timeout) ends it. */
static void disconnect_slot(struct nvmeof_cm *cm, struct cm_slot *s, uint64_t now_ms)
{
	send_dreq(cm, s);
	set_state(s, ST_DREQ_SENT, now_ms);
	drop_queue(cm, s);
}

/* ---- REQ ---- */

/*
 * A REQ the table already knows. Same guest comm ID and QPN: a resend (its
 * REP was lost or is slow), answered from the state. Same guest QPN under
 * another comm ID while that connection is not in TIMEWAIT: the guest has
 * lost the old connection and reused the QP, so, as Linux's cm_match_req
 * does, the REQ is refused as stale and the old connection is torn down
 * with a DREQ; the guest's retry then finds the QPN free. Linux forgets the
 * remote QPN on entering TIMEWAIT, so a TIMEWAIT connection does not make a
 * new comm ID stale.
 */
static bool req_known(struct nvmeof_cm *cm, const struct ib_cm_req *req, uint64_t now_ms)
{
	uint32_t rcid = be32_get(req->local_comm_id);
	uint32_t qpn = ib_cm_req_local_qpn(req);
	struct cm_slot *s;
	uint32_t i;

	for (i = 0; i < cm->nslots; i++) {
		s = &cm->slots[i];
		if (s->state == ST_FREE || s->conn.guest_qpn != qpn || s->conn.remote_comm_id != rcid)
			continue;
		cm->stats.dup_reqs++;
		if (s->state == ST_REP_SENT) {
			s->since_ms = now_ms; /* the host is still there, waiting */
			send_rep(cm, s);
		} else if (s->state == ST_ESTABLISHED) {
			send_rep(cm, s);
		} else if (s->state == ST_TIMEWAIT) {
			send_rej(cm, req, s->conn.local_comm_id, IB_CM_REJ_STALE_CONN, NULL, 0,
				 s->conn.ctrl_gid, s->conn.guest_gid);
		}
		return true;
	}
	for (i = 0; i < cm->nslots; i++) {
		s = &cm->slots[i];
		if (s->state == ST_FREE || s->state == ST_TIMEWAIT || s->conn.guest_qpn != qpn)
			continue;
		LOG_DEBUG("nvmeof cm: REQ reuses guest qpn 0x%06x of ctrl qpn 0x%06x: stale",
			  (unsigned)qpn, (unsigned)s->conn.ctrl_qpn);
		send_rej_plain(cm, req, IB_CM_REJ_STALE_CONN);
		if (slot_live(s))
			disconnect_slot(cm, s, now_ms);
		return true;
	}
	return false;
}

/* The IB and rdma_cm checks: any failure is "invalid service ID". */
static bool req_service_ok(const struct nvmeof_cm *cm, const struct ib_cm_req *req,
			   struct nvmeof_cm_conn *c)
{
	uint64_t want = (uint64_t)RDMA_CM_PS_TCP << 16 | cm->cfg.port;
	struct cma_hdr h;

	if (ib_cm_req_transport_type(req) != IB_CM_TRANSPORT_RC)
		return false;
	if (be64_get(req->service_id) != want)
		return false;
	memcpy(&h, req->private_data, sizeof(h));
	if (h.cma_version != RDMA_CM_CMA_VERSION)
		return false;
	/* IPv6, ::ffff:-mapped IPv4 included, is not what we listen on. */
	if (cma_hdr_ip_version(&h) != 4)
		return false;
	if (be32_get(h.dst_addr.ip4.addr) != cm->cfg.ip)
		return false;
	c->guest_ip = be32_get(h.src_addr.ip4.addr);
	c->guest_port = be16_get(h.port);
	return true;
}

/* nvmet_rdma_parse_cm_connect_req's checks, with limits on I/O queues too. 0 or a status. */
static uint16_t req_nvme_check(const struct nvmeof_cm *cm, const struct ib_cm_req *req,
			       struct nvmeof_cm_conn *c)
{
	struct nvme_rdma_cm_req n;
	uint32_t limit;

	memcpy(&n, req->private_data + sizeof(struct cma_hdr), sizeof(n));
	if (le16_get(n.recfmt) != NVME_RDMA_CM_FMT_1_0)
		return NVME_RDMA_CM_INVALID_RECFMT;
	c->qid = le16_get(n.qid);
	if (c->qid > cm->cfg.max_qid)
		return NVME_RDMA_CM_INVALID_QID;
	limit = c->qid ? cm->cfg.max_queue_size : cm->cfg.max_admin_queue_size;
	c->hsqsize = le16_get(n.hsqsize);
	if ((uint32_t)c->hsqsize + 1 > limit || (c->qid && c->hsqsize == 0))
		return NVME_RDMA_CM_INVALID_HSQSIZE;
	/* The Linux host sends hrqsize = hsqsize + 1, so the same limit lets it through. */
	c->hrqsize = le16_get(n.hrqsize);
	if (c->hrqsize == 0 || c->hrqsize > limit)
		return NVME_RDMA_CM_INVALID_HRQSIZE;
	return 0;
}

static void req_fill_conn(struct nvmeof_cm *cm, const struct ib_cm_req *req, struct nvmeof_cm_conn *c)
{
	uint8_t rr = ib_cm_req_responder_resources(req);
	uint8_t id = ib_cm_req_initiator_depth(req);

	c->guest_qpn = ib_cm_req_local_qpn(req);
	c->guest_psn = ib_cm_req_starting_psn(req);
	c->ctrl_psn = (uint32_t)rng_next(cm) & PSN_MASK;
	c->local_comm_id = comm_id_alloc(cm);
	c->remote_comm_id = be32_get(req->local_comm_id);
	c->pkey = be16_get(req->pkey);
	c->path_mtu = ib_cm_req_path_mtu(req);
	/* We serve the reads the host initiates, and initiate no more than it serves. */
	c->responder_resources = id < MAX_RD_ATOMIC ? id : MAX_RD_ATOMIC;
	c->initiator_depth = rr < MAX_RD_ATOMIC ? rr : MAX_RD_ATOMIC;
	memcpy(c->guest_gid, req->primary_local_gid, sizeof(c->guest_gid));
	memcpy(c->ctrl_gid, req->primary_remote_gid, sizeof(c->ctrl_gid));
	c->queue = NULL;
}

static void req_accept(struct nvmeof_cm *cm, const struct ib_cm_req *req, struct nvmeof_cm_conn *c,
		       uint64_t now_ms)
{
	struct cm_slot *s;
	uint32_t qpn;
	int ret;

	if (live_count(cm) >= cm->cfg.max_conns || qpn_alloc(cm, &qpn)) {
		send_rej_nvme(cm, req, NVME_RDMA_CM_NO_RSC, now_ms);
		return;
	}
	s = slot_alloc(cm);
	if (!s) {
		qpn_release(cm, qpn);
		send_rej_nvme(cm, req, NVME_RDMA_CM_NO_RSC, now_ms);
		return;
	}
	c->ctrl_qpn = qpn;
	req_fill_conn(cm, req, c);
	/* The slot stays FREE until the queue exists, so a refusal leaves nothing behind. */
	s->conn = *c;
	ret = cm->ops.queue_create(cm->ops.ctx, &s->conn);
	if (ret != 0) {
		qpn_release(cm, qpn);
		memset(s, 0, sizeof(*s));
		send_rej_nvme(cm, req, ret > 0 && ret <= UINT16_MAX ? (uint16_t)ret : NVME_RDMA_CM_NO_RSC,
			      now_ms);
		return;
	}
	s->has_queue = true;
	s->req_tid = be64_get(req->hdr.tid);
	set_state(s, ST_REP_SENT, now_ms);
	memcpy(cm->last_guest_gid, c->guest_gid, sizeof(cm->last_guest_gid));
	memcpy(cm->last_ctrl_gid, c->ctrl_gid, sizeof(cm->last_ctrl_gid));
	send_rep(cm, s);
}

static void handle_req(struct nvmeof_cm *cm, const struct ib_cm_req *req, uint64_t now_ms)
{
	struct nvmeof_cm_conn c;
	uint16_t sts;

	cm->stats.reqs++;
	if (req_known(cm, req, now_ms))
		return;
	memset(&c, 0, sizeof(c));
	if (!req_service_ok(cm, req, &c)) {
		LOG_DEBUG("nvmeof cm: REQ for service 0x%016llx refused: not ours",
			  (unsigned long long)be64_get(req->service_id));
		send_rej_plain(cm, req, IB_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	sts = req_nvme_check(cm, req, &c);
	if (sts) {
		send_rej_nvme(cm, req, sts, now_ms);
		return;
	}
	req_accept(cm, req, &c, now_ms);
}

/* ---- the other messages ---- */

static void handle_rtu(struct nvmeof_cm *cm, const struct ib_cm_rtu *rtu)
{
	struct cm_slot *s = find_by_ids(cm, be32_get(rtu->remote_comm_id), be32_get(rtu->local_comm_id));

	cm->stats.rtus++;
	if (!s || s->state != ST_REP_SENT) {
		cm->stats.dropped++;
		return;
	}
	establish(cm, s);
}

static void handle_rej(struct nvmeof_cm *cm, const struct ib_cm_rej *rej, uint64_t now_ms)
{
	struct cm_slot *s = find_by_ids(cm, be32_get(rej->remote_comm_id), be32_get(rej->local_comm_id));

	/* Only our REP can be refused; in any other state IBA has the REJ ignored. */
	if (!s || s->state != ST_REP_SENT) {
		cm->stats.dropped++;
		return;
	}
	LOG_DEBUG("nvmeof cm: qpn 0x%06x: REP rejected, reason %u", (unsigned)s->conn.ctrl_qpn,
		  (unsigned)be16_get(rej->reason));
	enter_timewait(cm, s, now_ms);
}

static struct cm_slot *dreq_match(struct nvmeof_cm *cm, const struct ib_cm_dreq *dreq)
{
	uint32_t qpn = ib_cm_dreq_remote_qpn(dreq);
	uint32_t theirs = be32_get(dreq->local_comm_id);
	struct cm_slot *s = find_by_local_id(cm, be32_get(dreq->remote_comm_id));

	if (s)
		return s;
	/* Our comm ID garbled: the QPN we gave in the REP plus the guest's comm ID still name it. */
	for (uint32_t i = 0; i < cm->nslots; i++) {
		s = &cm->slots[i];
		if (s->state != ST_FREE && s->conn.ctrl_qpn == qpn && s->conn.remote_comm_id == theirs)
			return s;
	}
	return NULL;
}

static void handle_dreq(struct nvmeof_cm *cm, const struct ib_cm_dreq *dreq, uint64_t now_ms)
{
	uint64_t tid = be64_get(dreq->hdr.tid);
	struct cm_slot *s = dreq_match(cm, dreq);

	cm->stats.dreqs_in++;
	if (!s) {
		/*
		 * Like cm_issue_drep: the guest may be repeating a DREQ whose
		 * connection we have already freed, and waits for a DREP. We know
		 * no GIDs for it; the last accepted REQ's pair is the best guess
		 * (one guest port, one target address), all-zero if none came.
		 */
		send_drep(cm, tid, be32_get(dreq->remote_comm_id), be32_get(dreq->local_comm_id),
			  cm->last_ctrl_gid, cm->last_guest_gid);
		return;
	}
	/* DREQ_SENT destroyed its queue already; drop_queue knows. */
	if (s->state != ST_TIMEWAIT)
		enter_timewait(cm, s, now_ms);
	send_drep(cm, tid, s->conn.local_comm_id, s->conn.remote_comm_id, s->conn.ctrl_gid,
		  s->conn.guest_gid);
}

static void handle_drep(struct nvmeof_cm *cm, const struct ib_cm_drep *drep, uint64_t now_ms)
{
	struct cm_slot *s = find_by_ids(cm, be32_get(drep->remote_comm_id), be32_get(drep->local_comm_id));

	if (!s || s->state != ST_DREQ_SENT) {
		cm->stats.dropped++;
		return;
	}
	set_state(s, ST_TIMEWAIT, now_ms);
}

static void handle_sidr_req(struct nvmeof_cm *cm, const struct ib_cm_sidr_req *sreq)
{
	union ib_cm_mad m;

	mad_init(&m, IB_CM_ATTR_SIDR_REP, be64_get(sreq->hdr.tid));
	m.sidr_rep.request_id = sreq->request_id;
	m.sidr_rep.status = IB_CM_SIDR_UNSUPPORTED;
	m.sidr_rep.service_id = sreq->service_id;
	mad_send(cm, &m, cm->last_ctrl_gid, cm->last_guest_gid);
}

static bool mad_hdr_ok(const struct ib_mad_hdr *h)
{
	return h->base_version == IB_MAD_BASE_VERSION && h->mgmt_class == IB_MAD_CLASS_CM &&
	       h->class_version == IB_CM_CLASS_VERSION && h->method == IB_MAD_METHOD_SEND;
}

/* ---- the API ---- */

void nvmeof_cm_mad(struct nvmeof_cm *cm, const void *mad, size_t len, uint64_t now_ms)
{
	union ib_cm_mad m;

	if (!cm)
		return;
	cm->stats.mads_in++;
	if (!mad || len < IB_MAD_SIZE) {
		cm->stats.dropped++;
		return;
	}
	/* A copy: the guest's buffer may change under us, and need not be aligned. */
	memcpy(&m, mad, sizeof(m));
	if (!mad_hdr_ok(&m.hdr)) {
		cm->stats.dropped++;
		return;
	}
	switch (be16_get(m.hdr.attr_id)) {
	case IB_CM_ATTR_REQ:
		handle_req(cm, &m.req, now_ms);
		break;
	case IB_CM_ATTR_RTU:
		handle_rtu(cm, &m.rtu);
		break;
	case IB_CM_ATTR_REJ:
		handle_rej(cm, &m.rej, now_ms);
		break;
	case IB_CM_ATTR_DREQ:
		handle_dreq(cm, &m.dreq, now_ms);
		break;
	case IB_CM_ATTR_DREP:
		handle_drep(cm, &m.drep, now_ms);
		break;
	case IB_CM_ATTR_SIDR_REQ:
		handle_sidr_req(cm, &m.sidr_req);
		break;
	default: /* MRA (we never delay a reply, so its timing means nothing), LAP, APR, ... */
		cm->stats.dropped++;
		break;
	}
}

void nvmeof_cm_tick(struct nvmeof_cm *cm, uint64_t now_ms)
{
	if (!cm)
		return;
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct cm_slot *s = &cm->slots[i];

		switch (s->state) {
		case ST_REP_SENT:
			if (expired(s->since_ms, now_ms, cm->cfg.reply_timeout_ms)) {
				LOG_DEBUG("nvmeof cm: qpn 0x%06x: no RTU", (unsigned)s->conn.ctrl_qpn);
				enter_timewait(cm, s, now_ms);
			}
			break;
		case ST_DREQ_SENT:
			if (expired(s->since_ms, now_ms, cm->cfg.reply_timeout_ms))
				set_state(s, ST_TIMEWAIT, now_ms);
			break;
		case ST_TIMEWAIT:
			if (expired(s->since_ms, now_ms, cm->cfg.timewait_ms))
				slot_free(cm, s);
			break;
		default:
			break;
		}
	}
}

struct nvmeof_cm_conn *nvmeof_cm_lookup(struct nvmeof_cm *cm, uint32_t ctrl_qpn)
{
	struct cm_slot *s = cm ? find_live_by_qpn(cm, ctrl_qpn) : NULL;

	return s ? &s->conn : NULL;
}

void nvmeof_cm_established(struct nvmeof_cm *cm, uint32_t ctrl_qpn)
{
	struct cm_slot *s = cm ? find_live_by_qpn(cm, ctrl_qpn) : NULL;

	if (s && s->state == ST_REP_SENT)
		establish(cm, s);
}

int nvmeof_cm_disconnect(struct nvmeof_cm *cm, uint32_t ctrl_qpn, uint64_t now_ms)
{
	struct cm_slot *s = cm ? find_live_by_qpn(cm, ctrl_qpn) : NULL;

	if (!s)
		return -ENOENT;
	disconnect_slot(cm, s, now_ms);
	return 0;
}

void nvmeof_cm_get_stats(const struct nvmeof_cm *cm, struct nvmeof_cm_stats *out)
{
	if (!out)
		return;
	if (!cm) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = cm->stats;
}

static int config_resolve(struct nvmeof_cm_config *c)
{
	if (c->qpn_base == 0)
		c->qpn_base = NVMEOF_CM_QPN_BASE;
	if (c->qpn_count == 0)
		c->qpn_count = NVMEOF_CM_QPN_COUNT;
	if (c->qpn_base < QPN_FIRST_USABLE || c->qpn_base >= QPN_END ||
	    c->qpn_count > QPN_END - c->qpn_base) {
		LOG_ERR("nvmeof cm: QPN range 0x%x+0x%x is not within 2..0xfffffe",
			(unsigned)c->qpn_base, (unsigned)c->qpn_count);
		return -1;
	}
	if (c->max_queue_size == 0)
		c->max_queue_size = DEFAULT_MAX_QUEUE_SIZE;
	if (c->max_admin_queue_size == 0)
		c->max_admin_queue_size = DEFAULT_MAX_ADMIN_QUEUE_SIZE;
	/* One host's full set of queues: the admin queue and every I/O queue. */
	if (c->max_conns == 0)
		c->max_conns = (uint32_t)c->max_qid + 1;
	if (c->max_conns > MAX_CONNS_CAP) {
		LOG_WARN("nvmeof cm: max_conns %u capped at %u", (unsigned)c->max_conns, MAX_CONNS_CAP);
		c->max_conns = MAX_CONNS_CAP;
	}
	if (c->timewait_ms == 0)
		c->timewait_ms = DEFAULT_TIMEWAIT_MS;
	if (c->reply_timeout_ms == 0)
		c->reply_timeout_ms = DEFAULT_REPLY_TIMEOUT_MS;
	return 0;
}

struct nvmeof_cm *nvmeof_cm_create(const struct nvmeof_cm_config *cfg, const struct nvmeof_cm_ops *ops)
{
	struct nvmeof_cm *cm;
	struct nvmeof_cm_config c;

	if (!cfg || !ops || !ops->send_mad || !ops->queue_create || !ops->queue_destroy)
		return NULL;
	c = *cfg;
	if (config_resolve(&c))
		return NULL;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return NULL;
	cm->cfg = c;
	cm->ops = *ops;
	cm->nslots = c.max_conns * 2 + TIMEWAIT_SLACK;
	cm->slots = calloc(cm->nslots, sizeof(*cm->slots));
	cm->qpn_held = calloc((c.qpn_count + 63) / 64, sizeof(*cm->qpn_held));
	if (!cm->slots || !cm->qpn_held) {
		nvmeof_cm_destroy(cm);
		return NULL;
	}
	cm->qpn_last = c.qpn_count - 1; /* the first QPN handed out is the range's first */
	cm->rng = rng_seed(cm);
	cm->comm_salt = (uint32_t)(rng_next(cm) >> 32);
	cm->tid_hi = (uint32_t)(rng_next(cm) >> 32);
	return cm;
}

void nvmeof_cm_destroy(struct nvmeof_cm *cm)
{
	if (!cm)
		return;
	for (uint32_t i = 0; cm->slots && i < cm->nslots; i++)
		drop_queue(cm, &cm->slots[i]);
	free(cm->qpn_held);
	free(cm->slots);
	free(cm);
}
