/*
 * nvmeof-cm-unit: the NVMe-oF target's IB connection manager (nvmeof/nvmeof_cm.h).
 *
 * MADs are built and read here at raw byte offsets written out from the IBA
 * tables (tests/lib/ib_mad.h: MAD offset = 24 + the table's offset), not
 * through ib_cm_wire.h, so a misplaced field in the wire header shows up as a
 * failed assert.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/ib_mad.h"
#include "../lib/xorshift.h"
#include "nvmeof/nvmeof_cm.h"
#include "util/log.h"

#define TARGET_IP  0x0a000001u /* 10.0.0.1 */
#define GUEST_IP   0x0a000002u
#define PORT       4420
#define CA_GUID    0x0002c9fffe123456ull
#define QPN_BASE   0x00c00000u
#define SERVICE_ID (0x0106ull << 16 | PORT)

static const uint8_t guest_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 };
static const uint8_t ctrl_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1 };
static const uint8_t zero_gid[16];

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- the environment: callbacks record, queues are heap objects ---- */

#define RING 64
#define QUEUE_MAGIC 0x51554555u

struct sent {
	uint8_t mad[MAD_SIZE];
	uint8_t sgid[16];
	uint8_t dgid[16];
};

struct queue {
	uint32_t magic;
	uint32_t ctrl_qpn;
};

struct env {
	struct nvmeof_cm *cm;
	struct sent ring[RING];
	unsigned nsent;
	unsigned creates, destroys, establishes;
	int create_ret;
	struct nvmeof_cm_conn created;  /* copy of the last conn queue_create saw */
	struct nvmeof_cm_conn destroyed;
	uint64_t now;
};

static struct env E;

/* Every MAD the CM sends must be a well-formed CM send of a kind it may send. */
static void check_well_formed(const uint8_t *m)
{
	uint16_t attr = mad_get16(m, H_ATTR);

	assert_int_equal(m[H_BASE], 1);
	assert_int_equal(m[H_CLASS], 0x07);
	assert_int_equal(m[H_CLASSVER], 2);
	assert_int_equal(m[H_METHOD], 0x03);
	assert_int_equal(mad_get16(m, H_STATUS), 0);
	assert_int_equal(mad_get32(m, H_ATTRMOD), 0);
	assert_true(attr == ATTR_REJ || attr == ATTR_REP || attr == ATTR_DREQ || attr == ATTR_DREP ||
		    attr == ATTR_SIDR_REP);
}

static void cb_send(void *ctx, const uint8_t mad[NVMEOF_CM_MAD_SIZE], const uint8_t sgid[16],
		    const uint8_t dgid[16])
{
	struct env *e = ctx;
	struct sent *s = &e->ring[e->nsent++ % RING];

	check_well_formed(mad);
	memcpy(s->mad, mad, MAD_SIZE);
	memcpy(s->sgid, sgid, 16);
	memcpy(s->dgid, dgid, 16);
}

static int cb_create(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct env *e = ctx;
	struct queue *q;

	assert_null(conn->queue);
	e->created = *conn;
	if (e->create_ret)
		return e->create_ret;
	q = malloc(sizeof(*q));
	assert_non_null(q);
	q->magic = QUEUE_MAGIC;
	q->ctrl_qpn = conn->ctrl_qpn;
	conn->queue = q;
	e->creates++;
	return 0;
}

static void cb_established(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct env *e = ctx;
	struct queue *q = conn->queue;

	assert_non_null(q);
	assert_int_equal(q->magic, QUEUE_MAGIC);
	e->establishes++;
}

static void cb_destroy(void *ctx, struct nvmeof_cm_conn *conn)
{
	struct env *e = ctx;
	struct queue *q = conn->queue;

	assert_non_null(q);
	assert_int_equal(q->magic, QUEUE_MAGIC);
	assert_int_equal(q->ctrl_qpn, conn->ctrl_qpn);
	e->destroyed = *conn;
	q->magic = 0;
	free(q); /* a second destroy of the same queue is a double free under ASan */
	e->destroys++;
}

static struct nvmeof_cm_config base_config(void)
{
	struct nvmeof_cm_config c;

	memset(&c, 0, sizeof(c));
	c.ip = TARGET_IP;
	c.port = PORT;
	c.max_qid = 4;
	c.max_queue_size = 128;
	c.max_admin_queue_size = 32;
	c.max_conns = 8;
	c.ca_guid = CA_GUID;
	c.timewait_ms = 1000;
	c.reply_timeout_ms = 4000;
	return c;
}

static struct nvmeof_cm_ops base_ops(void)
{
	struct nvmeof_cm_ops o = {
		.ctx = &E,
		.send_mad = cb_send,
		.queue_create = cb_create,
		.queue_established = cb_established,
		.queue_destroy = cb_destroy,
	};
	return o;
}

static void env_start(const struct nvmeof_cm_config *cfg)
{
	struct nvmeof_cm_ops ops = base_ops();

	memset(&E, 0, sizeof(E));
	E.now = 1000000;
	E.cm = nvmeof_cm_create(cfg, &ops);
	assert_non_null(E.cm);
}

static void env_start_default(void)
{
	struct nvmeof_cm_config c = base_config();

	env_start(&c);
}

/* Every queue created was destroyed exactly once by the end. */
static void env_finish(void)
{
	nvmeof_cm_destroy(E.cm);
	E.cm = NULL;
	assert_int_equal(E.creates, E.destroys);
}

static struct nvmeof_cm_stats stats(void)
{
	struct nvmeof_cm_stats s;

	nvmeof_cm_get_stats(E.cm, &s);
	return s;
}

static const struct sent *last_sent(void)
{
	assert_true(E.nsent > 0);
	return &E.ring[(E.nsent - 1) % RING];
}

static void feed(const uint8_t *m)
{
	nvmeof_cm_mad(E.cm, m, MAD_SIZE, E.now);
}

/* ---- MAD builders ---- */

struct req_opts {
	uint64_t tid;
	uint32_t comm_id;
	uint32_t qpn;
	uint32_t psn;
	uint64_t service_id;
	uint8_t transport;
	uint8_t rres, idepth;
	uint16_t pkey;
	uint8_t mtu;
	uint8_t cma_version;
	uint8_t ip_version;
	bool v6;            /* 16-byte addresses: a real IPv6 destination */
	bool v6_mapped;     /* ::ffff:a.b.c.d in the IPv6 form */
	uint32_t src_ip, dst_ip;
	uint16_t src_port;
	uint16_t recfmt, qid, hrqsize, hsqsize, cntlid;
};

static struct req_opts req_opts(unsigned n)
{
	struct req_opts o = {
		.tid = 0x1000 + n,
		.comm_id = 0x11110001u + n,
		.qpn = 0x000120 + n,
		.psn = 0x345678,
		.service_id = SERVICE_ID,
		.transport = 0,
		.rres = 32,
		.idepth = 8,
		.pkey = 0xffff,
		.mtu = 3,
		.cma_version = 0,
		.ip_version = 4,
		.src_ip = GUEST_IP,
		.dst_ip = TARGET_IP,
		.src_port = (uint16_t)(0xc000 + n),
		.recfmt = 0,
		.qid = 0,
		.hrqsize = 32,
		.hsqsize = 31,
	};
	return o;
}

/* An I/O queue connect the way the Linux host sends it: hrqsize = hsqsize + 1. */
static struct req_opts io_opts(unsigned n, uint16_t qid, uint16_t size)
{
	struct req_opts o = req_opts(n);

	o.qid = qid;
	o.hrqsize = size;
	o.hsqsize = (uint16_t)(size - 1);
	o.cntlid = 1;
	return o;
}

static void build_req(uint8_t *m, const struct req_opts *o)
{
	mad_hdr(m, ATTR_REQ, o->tid);
	mad_put32(m, REQ_LCID, o->comm_id);
	mad_put64(m, REQ_SID, o->service_id);
	mad_put64(m, REQ_CAGUID, 0x0002c9fffe000001ull);
	mad_put24(m, REQ_QPN, o->qpn);
	m[REQ_RRES] = o->rres;
	m[REQ_IDEPTH] = o->idepth;
	m[REQ_B43] = (uint8_t)(20 << 3 | (o->transport & 3) << 1 | 1);
	mad_put24(m, REQ_PSN, o->psn);
	m[REQ_B47] = (uint8_t)(20 << 3 | 7);
	mad_put16(m, REQ_PKEY, o->pkey);
	m[REQ_B50] = (uint8_t)(o->mtu << 4 | 7);
	m[REQ_B51] = (uint8_t)(15 << 4);
	memcpy(m + REQ_LGID, guest_gid, 16);
	memcpy(m + REQ_RGID, ctrl_gid, 16);

	m[CMA_VER] = o->cma_version;
	m[CMA_IPVER] = (uint8_t)(o->ip_version << 4);
	mad_put16(m, CMA_PORT, o->src_port);
	if (o->v6 || o->v6_mapped) {
		memcpy(m + CMA_SRC, guest_gid, 16);
		if (o->v6_mapped) {
			memcpy(m + CMA_DST, ctrl_gid, 16);
		} else {
			m[CMA_DST] = 0xfd;
			m[CMA_DST + 15] = 1;
		}
	} else {
		mad_put32(m, CMA_SRC + 12, o->src_ip);
		mad_put32(m, CMA_DST + 12, o->dst_ip);
	}
	mad_put_le16(m, NVME_REQ + 0, o->recfmt);
	mad_put_le16(m, NVME_REQ + 2, o->qid);
	mad_put_le16(m, NVME_REQ + 4, o->hrqsize);
	mad_put_le16(m, NVME_REQ + 6, o->hsqsize);
	mad_put_le16(m, NVME_REQ + 8, o->cntlid);
}

static void build_ids(uint8_t *m, uint16_t attr, uint64_t tid, uint32_t local, uint32_t remote)
{
	mad_hdr(m, attr, tid);
	mad_put32(m, X_LCID, local);
	mad_put32(m, X_RCID, remote);
}

static void send_rtu(uint32_t guest_cid, uint32_t our_cid)
{
	uint8_t m[MAD_SIZE];

	build_ids(m, ATTR_RTU, 0x2000, guest_cid, our_cid);
	feed(m);
}

static void send_dreq(uint64_t tid, uint32_t guest_cid, uint32_t our_cid, uint32_t ctrl_qpn)
{
	uint8_t m[MAD_SIZE];

	build_ids(m, ATTR_DREQ, tid, guest_cid, our_cid);
	mad_put24(m, DREQ_RQPN, ctrl_qpn);
	feed(m);
}

static void send_drep(uint32_t guest_cid, uint32_t our_cid)
{
	uint8_t m[MAD_SIZE];

	build_ids(m, ATTR_DREP, 0x3000, guest_cid, our_cid);
	feed(m);
}

static void send_rej(uint32_t guest_cid, uint32_t our_cid, uint8_t msg, uint16_t reason)
{
	uint8_t m[MAD_SIZE];

	build_ids(m, ATTR_REJ, 0x4000, guest_cid, our_cid);
	m[REJ_MSG] = (uint8_t)(msg << 6);
	mad_put16(m, REJ_REASON, reason);
	feed(m);
}

/* ---- expectations ---- */

struct conn_ref {
	uint32_t ctrl_qpn;
	uint32_t our_cid;
	uint32_t guest_cid;
	uint32_t guest_qpn;
};

/* Send the REQ, expect exactly one REP; returns what identifies the connection. */
static struct conn_ref connect_req(const struct req_opts *o)
{
	uint8_t m[MAD_SIZE];
	unsigned before = E.nsent;
	const struct sent *s;
	struct conn_ref r;

	build_req(m, o);
	feed(m);
	assert_int_equal(E.nsent, before + 1);
	s = last_sent();
	assert_int_equal(mad_get16(s->mad, H_ATTR), ATTR_REP);
	r.ctrl_qpn = mad_get24(s->mad, REP_QPN);
	r.our_cid = mad_get32(s->mad, REP_LCID);
	r.guest_cid = o->comm_id;
	r.guest_qpn = o->qpn;
	return r;
}

static struct conn_ref connect_established(const struct req_opts *o)
{
	struct conn_ref r = connect_req(o);
	unsigned est = E.establishes;

	send_rtu(r.guest_cid, r.our_cid);
	assert_int_equal(E.establishes, est + 1);
	return r;
}

static void expect_rej(const struct sent *s, uint64_t tid, uint32_t guest_cid, uint16_t reason)
{
	assert_int_equal(mad_get16(s->mad, H_ATTR), ATTR_REJ);
	assert_true(mad_get64(s->mad, H_TID) == tid);
	assert_int_equal(mad_get32(s->mad, REJ_RCID), guest_cid);
	assert_int_equal(s->mad[REJ_MSG] >> 6, 0); /* message rejected: REQ */
	assert_int_equal(s->mad[REJ_ARILEN], 0);
	assert_int_equal(mad_get16(s->mad, REJ_REASON), reason);
	assert_memory_equal(s->sgid, ctrl_gid, 16);
	assert_memory_equal(s->dgid, guest_gid, 16);
}

/* A REQ that must draw a REJ with the given reason and, for reason 28, NVMe status. */
static void expect_req_rejected(const struct req_opts *o, uint16_t reason, uint16_t sts)
{
	uint8_t m[MAD_SIZE];
	unsigned before = E.nsent, creates = E.creates;
	const struct sent *s;

	build_req(m, o);
	feed(m);
	assert_int_equal(E.nsent, before + 1);
	assert_int_equal(E.creates, creates);
	s = last_sent();
	expect_rej(s, o->tid, o->comm_id, reason);
	assert_int_equal(mad_get32(s->mad, REJ_LCID), 0);
	if (reason == 28) {
		assert_int_equal(mad_get_le16(s->mad, REJ_PRIV), 0);
		assert_int_equal(mad_get_le16(s->mad, REJ_PRIV + 2), sts);
		assert_true(all_zero(s->mad + REJ_PRIV + 4, MAD_SIZE - REJ_PRIV - 4));
	} else {
		assert_true(all_zero(s->mad + REJ_PRIV, MAD_SIZE - REJ_PRIV));
	}
	assert_true(all_zero(s->mad + REJ_ARI, 72));
}

static void expect_drep(const struct sent *s, uint64_t tid, uint32_t local, uint32_t remote)
{
	assert_int_equal(mad_get16(s->mad, H_ATTR), ATTR_DREP);
	assert_true(mad_get64(s->mad, H_TID) == tid);
	assert_int_equal(mad_get32(s->mad, X_LCID), local);
	assert_int_equal(mad_get32(s->mad, X_RCID), remote);
	assert_true(all_zero(s->mad + 32, MAD_SIZE - 32));
}

/* ---- tests ---- */

static void test_req_rep(void **state)
{
	struct req_opts o = io_opts(0, 3, 128);
	struct nvmeof_cm_conn *c;
	const struct sent *s;
	struct nvmeof_cm_stats st;
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_req(&o);
	s = last_sent();

	assert_true(mad_get64(s->mad, H_TID) == o.tid);
	assert_int_equal(mad_get32(s->mad, REP_RCID), o.comm_id);
	assert_int_not_equal(r.our_cid, 0);
	assert_int_equal(mad_get32(s->mad, REP_QKEY), 0);
	assert_int_equal(r.ctrl_qpn, QPN_BASE); /* the first QPN of the range */
	assert_int_equal(s->mad[REP_QPN + 3], 0); /* vendor ID */
	assert_int_equal(mad_get32(s->mad, REP_EECN), 0);
	assert_int_equal(s->mad[REP_PSN + 3], 0);
	assert_int_equal(s->mad[REP_RRES], 8);    /* min(REQ initiator depth 8, 16) */
	assert_int_equal(s->mad[REP_IDEPTH], 16); /* min(REQ responder resources 32, 16) */
	assert_int_equal(s->mad[REP_B26] & 1, 1);           /* end-to-end flow control */
	assert_int_equal((s->mad[REP_B26] >> 1) & 3, 0);    /* failover accepted */
	assert_true((s->mad[REP_B26] >> 3) > 0);            /* some target ACK delay */
	assert_int_equal(s->mad[REP_B27] >> 5, 7);          /* RNR retry */
	assert_int_equal((s->mad[REP_B27] >> 4) & 1, 0);    /* no SRQ */
	assert_true(mad_get64(s->mad, REP_CAGUID) == CA_GUID);
	assert_int_equal(mad_get_le16(s->mad, REP_PRIV), 0);     /* recfmt */
	assert_int_equal(mad_get_le16(s->mad, REP_PRIV + 2), 128); /* crqsize = hsqsize + 1 */
	assert_true(all_zero(s->mad + REP_PRIV + 4, MAD_SIZE - REP_PRIV - 4));
	assert_memory_equal(s->sgid, ctrl_gid, 16);
	assert_memory_equal(s->dgid, guest_gid, 16);

	/* What queue_create saw, and what lookup returns. */
	assert_int_equal(E.creates, 1);
	c = nvmeof_cm_lookup(E.cm, r.ctrl_qpn);
	assert_non_null(c);
	assert_ptr_not_equal(c->queue, NULL);
	assert_int_equal(mad_get24(s->mad, REP_PSN), c->ctrl_psn);
	assert_int_equal(c->ctrl_qpn, r.ctrl_qpn);
	assert_int_equal(c->guest_qpn, o.qpn);
	assert_int_equal(c->guest_psn, o.psn);
	assert_int_equal(c->local_comm_id, r.our_cid);
	assert_int_equal(c->remote_comm_id, o.comm_id);
	assert_int_equal(c->qid, 3);
	assert_int_equal(c->hsqsize, 127);
	assert_int_equal(c->hrqsize, 128);
	assert_int_equal(c->pkey, 0xffff);
	assert_int_equal(c->path_mtu, 3);
	assert_int_equal(c->responder_resources, 8);
	assert_int_equal(c->initiator_depth, 16);
	assert_memory_equal(c->guest_gid, guest_gid, 16);
	assert_memory_equal(c->ctrl_gid, ctrl_gid, 16);
	assert_int_equal(c->guest_ip, GUEST_IP);
	assert_int_equal(c->guest_port, o.src_port);
	assert_int_equal(E.created.qid, 3);
	assert_int_equal(E.created.ctrl_qpn, r.ctrl_qpn);
	assert_int_equal(E.created.guest_ip, GUEST_IP);
	assert_int_equal(E.establishes, 0);

	st = stats();
	assert_int_equal(st.mads_in, 1);
	assert_int_equal(st.mads_out, 1);
	assert_int_equal(st.reqs, 1);
	assert_int_equal(st.reps, 1);
	assert_int_equal(st.rejs_sent, 0);
	assert_int_equal(st.dropped, 0);
	env_finish();
	assert_int_equal(E.destroys, 1);
}

/* The admin queue as the Linux host asks for it: hsqsize 31, hrqsize 32. */
static void test_admin_limits(void **state)
{
	struct req_opts o = req_opts(0);
	struct req_opts big = req_opts(1);

	(void)state;
	env_start_default();
	connect_req(&o);
	assert_int_equal(mad_get_le16(last_sent()->mad, REP_PRIV + 2), 32);
	big.hsqsize = 32; /* 33 entries > 32 */
	big.hrqsize = 33;
	expect_req_rejected(&big, 28, 4);
	env_finish();
}

static void test_rtu_establishes(void **state)
{
	struct req_opts o = io_opts(0, 1, 64);
	struct conn_ref r;
	unsigned sent;

	(void)state;
	env_start_default();
	r = connect_req(&o);
	sent = E.nsent;
	send_rtu(r.guest_cid, r.our_cid);
	assert_int_equal(E.establishes, 1);
	assert_int_equal(E.nsent, sent); /* an RTU is not answered */
	assert_non_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));

	/* A duplicate RTU, and one naming the wrong guest comm ID: ignored. */
	send_rtu(r.guest_cid, r.our_cid);
	send_rtu(r.guest_cid + 1, r.our_cid);
	assert_int_equal(E.establishes, 1);
	assert_int_equal(stats().rtus, 3);
	assert_int_equal(stats().dropped, 2);
	assert_int_equal(E.nsent, sent);
	env_finish();
}

static void test_rtu_unknown_and_mra_ignored(void **state)
{
	uint8_t m[MAD_SIZE];
	struct conn_ref r;
	struct req_opts o = req_opts(0);

	(void)state;
	env_start_default();
	send_rtu(0x1234, 0x5678);
	assert_int_equal(E.nsent, 0);
	assert_int_equal(stats().dropped, 1);

	r = connect_req(&o);
	build_ids(m, ATTR_MRA, 0x77, r.guest_cid, r.our_cid);
	m[MRA_MSG] = 1 << 6; /* MRA for our REP */
	feed(m);
	assert_int_equal(E.nsent, 1);
	assert_int_equal(stats().dropped, 2);
	/* Still REP_SENT: an RTU establishes it. */
	send_rtu(r.guest_cid, r.our_cid);
	assert_int_equal(E.establishes, 1);
	env_finish();
}

static void test_dreq_by_comm_id(void **state)
{
	struct req_opts o = io_opts(0, 2, 32);
	struct nvmeof_cm_stats st;
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	send_dreq(0xabcdef, r.guest_cid, r.our_cid, r.ctrl_qpn);
	assert_int_equal(E.destroys, 1);
	assert_int_equal(E.destroyed.ctrl_qpn, r.ctrl_qpn);
	expect_drep(last_sent(), 0xabcdef, r.our_cid, r.guest_cid);
	assert_memory_equal(last_sent()->sgid, ctrl_gid, 16);
	assert_memory_equal(last_sent()->dgid, guest_gid, 16);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn)); /* TIMEWAIT */
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r.ctrl_qpn, E.now), -ENOENT);

	/* The guest resends its DREQ (our DREP was lost): DREP again, nothing destroyed twice. */
	send_dreq(0xabcdf0, r.guest_cid, r.our_cid, r.ctrl_qpn);
	expect_drep(last_sent(), 0xabcdf0, r.our_cid, r.guest_cid);
	assert_int_equal(E.destroys, 1);
	st = stats();
	assert_int_equal(st.dreqs_in, 2);
	assert_int_equal(st.dreps_out, 2);
	env_finish();
	assert_int_equal(E.destroys, 1);
}

static void test_dreq_by_qpn(void **state)
{
	struct req_opts o = io_opts(0, 1, 32);
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	/* Our comm ID garbled; the QPN from the REP and the guest's comm ID still name it. */
	send_dreq(0x42, r.guest_cid, r.our_cid ^ 0x5a5a5a5a, r.ctrl_qpn);
	assert_int_equal(E.destroys, 1);
	expect_drep(last_sent(), 0x42, r.our_cid, r.guest_cid);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	env_finish();
}

static void test_dreq_unknown(void **state)
{
	struct req_opts o = req_opts(0);
	struct conn_ref r;

	(void)state;
	env_start_default();
	/* Nothing known yet: the DREP goes out with an all-zero GID pair. */
	send_dreq(0x99, 0xaaaa0001, 0xbbbb0002, 0x00c00005);
	expect_drep(last_sent(), 0x99, 0xbbbb0002, 0xaaaa0001);
	assert_memory_equal(last_sent()->sgid, zero_gid, 16);
	assert_memory_equal(last_sent()->dgid, zero_gid, 16);

	/* After a connection, the last accepted REQ's GIDs are used. */
	r = connect_established(&o);
	send_dreq(0x9a, 0xaaaa0003, 0xbbbb0004, 0x00c00006);
	expect_drep(last_sent(), 0x9a, 0xbbbb0004, 0xaaaa0003);
	assert_memory_equal(last_sent()->sgid, ctrl_gid, 16);
	assert_memory_equal(last_sent()->dgid, guest_gid, 16);
	assert_int_equal(E.destroys, 0);
	assert_non_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	env_finish();
}

static void test_dup_req(void **state)
{
	struct req_opts o = io_opts(0, 1, 128);
	uint8_t m[MAD_SIZE], first[MAD_SIZE];
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_req(&o);
	memcpy(first, last_sent()->mad, MAD_SIZE);

	build_req(m, &o);
	feed(m); /* REP_SENT: the same REP again */
	assert_int_equal(E.nsent, 2);
	assert_memory_equal(last_sent()->mad, first, MAD_SIZE);
	assert_int_equal(E.creates, 1);

	send_rtu(r.guest_cid, r.our_cid);
	feed(m); /* ESTABLISHED: still the same REP */
	assert_int_equal(E.nsent, 3);
	assert_memory_equal(last_sent()->mad, first, MAD_SIZE);
	assert_int_equal(E.creates, 1);
	assert_int_equal(stats().dup_reqs, 2);
	assert_int_equal(stats().reps, 3);
	env_finish();
}

static void test_req_in_timewait_stale(void **state)
{
	struct req_opts o = io_opts(0, 1, 16);
	uint8_t m[MAD_SIZE];
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	send_dreq(0x50, r.guest_cid, r.our_cid, r.ctrl_qpn);
	build_req(m, &o);
	feed(m);
	expect_rej(last_sent(), o.tid, o.comm_id, 10);
	assert_int_equal(mad_get32(last_sent()->mad, REJ_LCID), r.our_cid);
	assert_int_equal(E.creates, 1);
	assert_int_equal(stats().dup_reqs, 1);

	/* A new comm ID on the same guest QPN is fine once the old one is in TIMEWAIT. */
	o.comm_id += 0x100;
	o.tid += 0x100;
	connect_req(&o);
	assert_int_equal(E.creates, 2);
	env_finish();
}

static void test_stale_qpn_reuse(void **state)
{
	struct req_opts o = io_opts(0, 1, 16);
	struct req_opts again = io_opts(1, 1, 16);
	const struct sent *dreq, *rej;
	uint8_t m[MAD_SIZE];
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	again.qpn = o.qpn; /* the guest reuses the QP under a new comm ID */
	build_req(m, &again);
	feed(m);
	assert_int_equal(E.nsent, 3);
	rej = &E.ring[1];
	dreq = &E.ring[2];
	expect_rej(rej, again.tid, again.comm_id, 10);
	assert_int_equal(mad_get32(rej->mad, REJ_LCID), 0);
	assert_int_equal(mad_get16(dreq->mad, H_ATTR), ATTR_DREQ);
	assert_int_equal(mad_get32(dreq->mad, X_LCID), r.our_cid);
	assert_int_equal(mad_get32(dreq->mad, X_RCID), r.guest_cid);
	assert_int_equal(mad_get24(dreq->mad, DREQ_RQPN), o.qpn);
	assert_int_equal(E.destroys, 1);
	assert_int_equal(E.creates, 1);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));

	/* While the old one waits for its DREP the QPN is still taken: stale again. */
	feed(m);
	expect_rej(last_sent(), again.tid, again.comm_id, 10);
	send_drep(r.guest_cid, r.our_cid);
	/* Now in TIMEWAIT: the retry is accepted. */
	connect_req(&again);
	assert_int_equal(E.creates, 2);
	env_finish();
}

static void test_rej_invalid_service(void **state)
{
	struct req_opts o;
	uint8_t m[MAD_SIZE];

	(void)state;
	env_start_default();

	o = req_opts(0);
	o.service_id = 0x0106ull << 16 | 4421; /* another port */
	expect_req_rejected(&o, 8, 0);
	o = req_opts(1);
	o.service_id = 0x0111ull << 16 | PORT; /* RDMA_PS_UDP */
	expect_req_rejected(&o, 8, 0);
	o = req_opts(2);
	o.service_id = 0x0000000001060000ull | PORT | 1ull << 40;
	expect_req_rejected(&o, 8, 0);
	o = req_opts(3);
	o.transport = 1; /* UC */
	expect_req_rejected(&o, 8, 0);
	o = req_opts(4);
	o.cma_version = 1;
	expect_req_rejected(&o, 8, 0);
	o = req_opts(5);
	o.ip_version = 6;
	o.v6 = true;
	expect_req_rejected(&o, 8, 0);
	o = req_opts(6);
	o.ip_version = 6;
	o.v6_mapped = true; /* ::ffff:10.0.0.1 is still refused */
	expect_req_rejected(&o, 8, 0);
	o = req_opts(7);
	o.dst_ip = 0x0a000009;
	expect_req_rejected(&o, 8, 0);
	o = req_opts(8);
	o.ip_version = 0;
	expect_req_rejected(&o, 8, 0);

	/* Private data that is not an rdma_cm header at all. */
	o = req_opts(9);
	build_req(m, &o);
	memset(m + REQ_PRIV, 0xff, MAD_SIZE - REQ_PRIV);
	feed(m);
	expect_rej(last_sent(), o.tid, o.comm_id, 8);
	/* A REQ with no private data (all zero): cma version 0 but IP version 0. */
	o = req_opts(10);
	build_req(m, &o);
	memset(m + REQ_PRIV, 0, MAD_SIZE - REQ_PRIV);
	feed(m);
	expect_rej(last_sent(), o.tid, o.comm_id, 8);

	assert_int_equal(E.creates, 0);
	assert_int_equal(stats().rejs_sent, 11);
	env_finish();
}

static void test_rej_nvme_checks(void **state)
{
	struct req_opts o;

	(void)state;
	env_start_default();

	o = io_opts(0, 1, 32);
	o.recfmt = 1;
	expect_req_rejected(&o, 28, 2);
	o = io_opts(1, 5, 32); /* max_qid 4 */
	expect_req_rejected(&o, 28, 3);
	o = io_opts(2, 0xffff, 32);
	expect_req_rejected(&o, 28, 3);
	o = io_opts(3, 1, 129); /* max_queue_size 128 */
	expect_req_rejected(&o, 28, 4);
	o = io_opts(4, 1, 32);
	o.hsqsize = 0xffff; /* + 1 must not wrap to 0 */
	expect_req_rejected(&o, 28, 4);
	o = io_opts(5, 1, 32);
	o.hsqsize = 0; /* a 1-entry I/O queue */
	expect_req_rejected(&o, 28, 4);
	o = req_opts(6);
	o.hsqsize = 32; /* admin: 33 > 32 */
	expect_req_rejected(&o, 28, 4);
	o = io_opts(7, 1, 32);
	o.hrqsize = 0;
	expect_req_rejected(&o, 28, 5);
	o = io_opts(8, 1, 32);
	o.hrqsize = 129;
	expect_req_rejected(&o, 28, 5);
	o = req_opts(9);
	o.hrqsize = 33;
	expect_req_rejected(&o, 28, 5);
	/* recfmt is checked first, then qid. */
	o = io_opts(10, 9, 0);
	o.recfmt = 3;
	expect_req_rejected(&o, 28, 2);
	o = io_opts(11, 9, 0);
	expect_req_rejected(&o, 28, 3);

	/* The edges that pass. */
	o = io_opts(12, 4, 128);
	connect_req(&o);
	o = req_opts(13);
	o.hsqsize = 0;
	o.hrqsize = 1;
	connect_req(&o);
	assert_int_equal(E.creates, 2);
	env_finish();
}

static void test_max_conns(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct req_opts o;
	struct conn_ref r0;

	(void)state;
	c.max_conns = 2;
	env_start(&c);
	o = io_opts(0, 1, 32);
	r0 = connect_established(&o);
	o = io_opts(1, 2, 32);
	connect_req(&o);
	o = io_opts(2, 3, 32);
	expect_req_rejected(&o, 28, 6);

	/* TIMEWAIT does not count against max_conns. */
	send_dreq(0x10, r0.guest_cid, r0.our_cid, r0.ctrl_qpn);
	o = io_opts(3, 3, 32);
	connect_req(&o);
	assert_int_equal(E.creates, 3);
	env_finish();
}

static void test_queue_create_refuses(void **state)
{
	struct req_opts o;
	struct conn_ref r;

	(void)state;
	env_start_default();
	E.create_ret = 6;
	o = io_opts(0, 1, 32);
	expect_req_rejected(&o, 28, 6);
	E.create_ret = 9; /* NVME_RDMA_CM_INVALID_CNTLID, passed through */
	o = io_opts(1, 1, 32);
	expect_req_rejected(&o, 28, 9);
	E.create_ret = -ENOMEM; /* not a status: no resources */
	o = io_opts(2, 1, 32);
	expect_req_rejected(&o, 28, 6);
	assert_int_equal(E.created.qid, 1); /* it was asked */

	/* Nothing was left behind: the same comm ID and QPN now connect. */
	E.create_ret = 0;
	o = io_opts(2, 1, 32);
	r = connect_req(&o);
	assert_non_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	assert_int_equal(E.creates, 1);
	env_finish();
}

static void test_guest_rej(void **state)
{
	struct req_opts o = io_opts(0, 1, 32);
	struct req_opts o2 = io_opts(1, 2, 32);
	struct conn_ref r, r2;
	unsigned sent;

	(void)state;
	env_start_default();
	r = connect_req(&o);
	sent = E.nsent;
	send_rej(r.guest_cid, r.our_cid, 1, 28); /* the host refuses our REP */
	assert_int_equal(E.destroys, 1);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	send_rej(r.guest_cid, r.our_cid, 1, 28); /* again: TIMEWAIT ignores it */
	assert_int_equal(E.destroys, 1);
	assert_int_equal(E.nsent, sent);

	/* A REJ for an established connection is ignored. */
	r2 = connect_established(&o2);
	send_rej(r2.guest_cid, r2.our_cid, 2, 6);
	assert_int_equal(E.destroys, 1);
	assert_non_null(nvmeof_cm_lookup(E.cm, r2.ctrl_qpn));
	assert_int_equal(stats().dropped, 2);
	env_finish();
}

static void test_bad_headers(void **state)
{
	struct req_opts o = req_opts(0);
	uint8_t m[MAD_SIZE], big[300];
	struct {
		size_t off;
		uint8_t val;
	} bad[] = {
		{ H_BASE, 2 }, { H_BASE, 0 }, { H_CLASS, 0x03 }, { H_CLASS, 0x81 }, { H_CLASSVER, 1 },
		{ H_CLASSVER, 3 }, { H_METHOD, 0x01 }, { H_METHOD, 0x83 }, { H_METHOD, 0x02 },
	};

	(void)state;
	env_start_default();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		build_req(m, &o);
		m[bad[i].off] = bad[i].val;
		feed(m);
	}
	build_req(m, &o);
	nvmeof_cm_mad(E.cm, m, MAD_SIZE - 1, E.now);
	nvmeof_cm_mad(E.cm, m, 24, E.now);
	nvmeof_cm_mad(E.cm, m, 0, E.now);
	nvmeof_cm_mad(E.cm, NULL, MAD_SIZE, E.now);
	/* An unknown attribute (LAP) and ClassPortInfo. */
	build_ids(m, 0x0019, 1, 2, 3);
	feed(m);
	build_ids(m, 0x0001, 1, 2, 3);
	feed(m);
	assert_int_equal(E.nsent, 0);
	assert_int_equal(E.creates, 0);
	assert_int_equal(stats().dropped, 15);
	assert_int_equal(stats().mads_in, 15);
	assert_int_equal(stats().reqs, 0);

	/* Bytes past 256 are ignored. */
	memset(big, 0xee, sizeof(big));
	build_req(big, &o);
	nvmeof_cm_mad(E.cm, big, sizeof(big), E.now);
	assert_int_equal(mad_get16(last_sent()->mad, H_ATTR), ATTR_REP);
	nvmeof_cm_mad(NULL, m, MAD_SIZE, E.now); /* no CM: nothing happens */
	env_finish();
}

static void test_rep_timeout(void **state)
{
	struct req_opts o = io_opts(0, 1, 32);
	uint8_t m[MAD_SIZE];
	struct conn_ref r;

	(void)state;
	env_start_default(); /* reply timeout 4000 ms */
	r = connect_req(&o);
	E.now += 3999;
	nvmeof_cm_tick(E.cm, E.now);
	assert_non_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));

	/* A resent REQ shows the host still waits: the timer starts over. */
	build_req(m, &o);
	feed(m);
	E.now += 3999;
	nvmeof_cm_tick(E.cm, E.now);
	assert_non_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	E.now += 1;
	nvmeof_cm_tick(E.cm, E.now);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	assert_int_equal(E.destroys, 1);
	assert_int_equal(E.nsent, 2); /* a timeout sends nothing */

	/* A late RTU finds TIMEWAIT and is ignored; no queue comes back. */
	send_rtu(r.guest_cid, r.our_cid);
	assert_int_equal(E.establishes, 0);
	nvmeof_cm_established(E.cm, r.ctrl_qpn);
	assert_int_equal(E.establishes, 0);
	env_finish();
	assert_int_equal(E.destroys, 1);
}

static void test_dreq_timeout(void **state)
{
	struct req_opts o = io_opts(0, 1, 32);
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r.ctrl_qpn, E.now), 0);
	assert_int_equal(E.destroys, 1);
	E.now += 3999;
	nvmeof_cm_tick(E.cm, E.now);
	E.now += 1;
	nvmeof_cm_tick(E.cm, E.now); /* no DREP: TIMEWAIT */
	send_drep(r.guest_cid, r.our_cid);
	assert_int_equal(stats().dropped, 1); /* the late DREP finds TIMEWAIT */
	E.now += 1000;
	nvmeof_cm_tick(E.cm, E.now); /* freed */
	send_drep(r.guest_cid, r.our_cid);
	assert_int_equal(stats().dropped, 2);
	assert_int_equal(E.destroys, 1);
	env_finish();
}

static void test_timewait_release(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct req_opts o;
	struct conn_ref a, b;

	(void)state;
	c.qpn_count = 2;
	env_start(&c);
	o = io_opts(0, 1, 32);
	a = connect_established(&o);
	o = io_opts(1, 2, 32);
	b = connect_established(&o);
	assert_int_equal(a.ctrl_qpn, QPN_BASE);
	assert_int_equal(b.ctrl_qpn, QPN_BASE + 1);
	send_dreq(0x1, a.guest_cid, a.our_cid, a.ctrl_qpn);

	/* a's QPN is held through TIMEWAIT. */
	o = io_opts(2, 3, 32);
	expect_req_rejected(&o, 28, 6);
	E.now += 999;
	nvmeof_cm_tick(E.cm, E.now);
	expect_req_rejected(&o, 28, 6);
	E.now += 1;
	nvmeof_cm_tick(E.cm, E.now);
	/* Freed: the DREQ is now unknown, answered from its own comm IDs, and the QPN is free. */
	send_dreq(0x2, a.guest_cid, a.our_cid, a.ctrl_qpn);
	expect_drep(last_sent(), 0x2, a.our_cid, a.guest_cid);
	o = io_opts(3, 3, 32);
	assert_int_equal(connect_req(&o).ctrl_qpn, QPN_BASE);
	env_finish();
}

static void test_disconnect(void **state)
{
	struct req_opts o = io_opts(0, 2, 64);
	const struct sent *s;
	struct conn_ref r;
	struct nvmeof_cm_stats st;
	unsigned sent;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r.ctrl_qpn, E.now), 0);
	s = last_sent();
	assert_int_equal(mad_get16(s->mad, H_ATTR), ATTR_DREQ);
	assert_true(mad_get64(s->mad, H_TID) != o.tid);
	assert_int_equal(mad_get32(s->mad, X_LCID), r.our_cid);
	assert_int_equal(mad_get32(s->mad, X_RCID), r.guest_cid);
	assert_int_equal(mad_get24(s->mad, DREQ_RQPN), o.qpn);
	assert_int_equal(s->mad[DREQ_RQPN + 3], 0);
	assert_true(all_zero(s->mad + 36, MAD_SIZE - 36));
	assert_memory_equal(s->sgid, ctrl_gid, 16);
	assert_memory_equal(s->dgid, guest_gid, 16);
	assert_int_equal(E.destroys, 1);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r.ctrl_qpn, E.now), -ENOENT);
	assert_int_equal(nvmeof_cm_disconnect(E.cm, 0x123, E.now), -ENOENT);

	/* The guest's DREP completes it; a second DREP is ignored. */
	sent = E.nsent;
	send_drep(r.guest_cid, r.our_cid);
	assert_int_equal(E.nsent, sent);
	assert_int_equal(stats().dropped, 0);
	send_drep(r.guest_cid, r.our_cid);
	assert_int_equal(stats().dropped, 1);
	st = stats();
	assert_int_equal(st.dreqs_out, 1);
	env_finish();
	assert_int_equal(E.destroys, 1);
}

/* Both sides disconnect at once: the guest's DREQ crosses ours. */
static void test_disconnect_crossing(void **state)
{
	struct req_opts o = io_opts(0, 1, 64);
	struct req_opts o2 = io_opts(1, 2, 64);
	uint64_t tid1, tid2;
	struct conn_ref r, r2;

	(void)state;
	env_start_default();
	r = connect_established(&o);
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r.ctrl_qpn, E.now), 0);
	tid1 = mad_get64(last_sent()->mad, H_TID);
	send_dreq(0x77, r.guest_cid, r.our_cid, r.ctrl_qpn);
	expect_drep(last_sent(), 0x77, r.our_cid, r.guest_cid);
	assert_int_equal(E.destroys, 1);

	/* Disconnecting a connection still in REP_SENT works too, with a fresh TID. */
	r2 = connect_req(&o2);
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r2.ctrl_qpn, E.now), 0);
	tid2 = mad_get64(last_sent()->mad, H_TID);
	assert_true(tid1 != tid2);
	assert_int_equal(E.destroys, 2);
	env_finish();
}

static void test_established_api(void **state)
{
	struct req_opts o = io_opts(0, 1, 64);
	struct conn_ref r;

	(void)state;
	env_start_default();
	r = connect_req(&o);
	nvmeof_cm_established(E.cm, r.ctrl_qpn + 1); /* nobody */
	assert_int_equal(E.establishes, 0);
	nvmeof_cm_established(E.cm, r.ctrl_qpn); /* a capsule stood in for the RTU */
	assert_int_equal(E.establishes, 1);
	nvmeof_cm_established(E.cm, r.ctrl_qpn);
	assert_int_equal(E.establishes, 1);
	send_rtu(r.guest_cid, r.our_cid); /* the RTU that was late */
	assert_int_equal(E.establishes, 1);
	assert_int_equal(stats().dropped, 1);
	nvmeof_cm_established(NULL, r.ctrl_qpn);
	env_finish();
}

static void test_qpn_wrap(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct conn_ref r[4];
	struct req_opts o;
	unsigned n = 0;

	(void)state;
	c.qpn_count = 4;
	env_start(&c);
	for (unsigned i = 0; i < 3; i++) {
		o = io_opts(n++, 1, 32);
		r[i] = connect_established(&o);
		assert_int_equal(r[i].ctrl_qpn, QPN_BASE + i);
	}
	/* base+0 freed entirely, base+1 in TIMEWAIT. */
	send_dreq(0x1, r[0].guest_cid, r[0].our_cid, r[0].ctrl_qpn);
	E.now += 1000;
	nvmeof_cm_tick(E.cm, E.now);
	send_dreq(0x2, r[1].guest_cid, r[1].our_cid, r[1].ctrl_qpn);
	E.now += 500;

	o = io_opts(n++, 1, 32);
	assert_int_equal(connect_req(&o).ctrl_qpn, QPN_BASE + 3); /* next after the last */
	o = io_opts(n++, 1, 32);
	r[3] = connect_req(&o);
	assert_int_equal(r[3].ctrl_qpn, QPN_BASE + 0); /* wrapped to the bottom */

	/* base+2 into TIMEWAIT 500 ms after base+1. */
	send_dreq(0x3, r[2].guest_cid, r[2].our_cid, r[2].ctrl_qpn);
	E.now += 500;
	nvmeof_cm_tick(E.cm, E.now); /* base+1 freed, base+2 has 500 ms to go */
	o = io_opts(n++, 1, 32);
	assert_int_equal(connect_req(&o).ctrl_qpn, QPN_BASE + 1);
	/* Everything held (base+2 in TIMEWAIT): no resources. */
	o = io_opts(n++, 1, 32);
	expect_req_rejected(&o, 28, 6);
	E.now += 500;
	nvmeof_cm_tick(E.cm, E.now);
	o = io_opts(n++, 1, 32);
	assert_int_equal(connect_req(&o).ctrl_qpn, QPN_BASE + 2);
	env_finish();
}

/* The search wraps past a QPN that TIMEWAIT still holds. */
static void test_qpn_skip_held(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct conn_ref r[4];
	struct req_opts o;

	(void)state;
	c.qpn_count = 4;
	env_start(&c);
	for (unsigned i = 0; i < 4; i++) {
		o = io_opts(i, 1, 32);
		r[i] = connect_established(&o);
	}
	/* base+1 freed, base+0 still in TIMEWAIT (it went in 500 ms later). */
	send_dreq(0x1, r[1].guest_cid, r[1].our_cid, r[1].ctrl_qpn);
	E.now += 500;
	send_dreq(0x2, r[0].guest_cid, r[0].our_cid, r[0].ctrl_qpn);
	E.now += 500;
	nvmeof_cm_tick(E.cm, E.now);
	/* Last handed out was base+3: the search wraps, skips base+0 (TIMEWAIT), takes base+1. */
	o = io_opts(10, 1, 32);
	assert_int_equal(connect_req(&o).ctrl_qpn, QPN_BASE + 1);
	o = io_opts(11, 1, 32);
	expect_req_rejected(&o, 28, 6);
	env_finish();
}

static void test_lookup(void **state)
{
	struct req_opts o = io_opts(0, 1, 32);
	struct conn_ref r;
	struct nvmeof_cm_conn *c;

	(void)state;
	env_start_default();
	assert_null(nvmeof_cm_lookup(E.cm, QPN_BASE));
	r = connect_req(&o);
	c = nvmeof_cm_lookup(E.cm, r.ctrl_qpn);
	assert_non_null(c);
	assert_int_equal(c->ctrl_qpn, r.ctrl_qpn);
	send_rtu(r.guest_cid, r.our_cid);
	assert_ptr_equal(nvmeof_cm_lookup(E.cm, r.ctrl_qpn), c);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn + 1));
	assert_null(nvmeof_cm_lookup(NULL, r.ctrl_qpn));
	send_dreq(0x5, r.guest_cid, r.our_cid, r.ctrl_qpn);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	env_finish();
}

static void test_destroy_live_queues(void **state)
{
	struct conn_ref r[4];
	struct req_opts o;

	(void)state;
	env_start_default();
	for (unsigned i = 0; i < 4; i++) {
		o = io_opts(i, (uint16_t)(i + 1), 32);
		r[i] = connect_req(&o);
	}
	send_rtu(r[0].guest_cid, r[0].our_cid);                          /* ESTABLISHED */
	send_dreq(0x1, r[1].guest_cid, r[1].our_cid, r[1].ctrl_qpn);     /* TIMEWAIT */
	assert_int_equal(nvmeof_cm_disconnect(E.cm, r[2].ctrl_qpn, E.now), 0); /* DREQ_SENT */
	/* r[3] stays REP_SENT. Two queues are live. */
	assert_int_equal(E.creates, 4);
	assert_int_equal(E.destroys, 2);
	nvmeof_cm_destroy(E.cm);
	E.cm = NULL;
	assert_int_equal(E.destroys, 4);
	nvmeof_cm_destroy(NULL);
	assert_int_equal(E.creates, E.destroys);
}

static void test_sidr(void **state)
{
	uint8_t m[MAD_SIZE];
	const struct sent *s;

	(void)state;
	env_start_default();
	mad_hdr(m, ATTR_SIDR_REQ, 0x5151);
	mad_put32(m, SIDR_REQID, 0xfeedf00d);
	mad_put16(m, SIDR_REQID + 4, 0xffff);
	mad_put64(m, SIDR_REQ_SID, 0x0111ull << 16 | PORT);
	feed(m);
	s = last_sent();
	assert_int_equal(mad_get16(s->mad, H_ATTR), ATTR_SIDR_REP);
	assert_true(mad_get64(s->mad, H_TID) == 0x5151);
	assert_int_equal(mad_get32(s->mad, SIDR_REQID), 0xfeedf00d);
	assert_int_equal(s->mad[SIDR_REP_STATUS], 1);
	assert_true(mad_get64(s->mad, SIDR_REP_SID) == (0x0111ull << 16 | PORT));
	assert_int_equal(mad_get24(s->mad, 32), 0); /* no QPN */
	env_finish();
}

static void test_comm_ids_unique(void **state)
{
	struct nvmeof_cm_config c = base_config();
	uint32_t ids[64];
	struct req_opts o;

	(void)state;
	c.max_conns = 64;
	c.max_qid = 64;
	env_start(&c);
	for (unsigned i = 0; i < 64; i++) {
		o = io_opts(i, (uint16_t)(i + 1), 32);
		ids[i] = connect_req(&o).our_cid;
		assert_int_not_equal(ids[i], 0);
		for (unsigned j = 0; j < i; j++)
			assert_int_not_equal(ids[i], ids[j]);
	}
	env_finish();
}

static void test_create_args(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct nvmeof_cm_ops ops = base_ops();
	struct nvmeof_cm_stats st;
	struct nvmeof_cm *cm;

	(void)state;
	assert_null(nvmeof_cm_create(NULL, &ops));
	assert_null(nvmeof_cm_create(&c, NULL));
	ops.send_mad = NULL;
	assert_null(nvmeof_cm_create(&c, &ops));
	ops = base_ops();
	c.qpn_base = 0x00fffff0;
	c.qpn_count = 0x10; /* would hand out 0xffffff, the multicast QPN */
	assert_null(nvmeof_cm_create(&c, &ops));
	c.qpn_count = 0x20; /* past 24 bits */
	assert_null(nvmeof_cm_create(&c, &ops));
	c.qpn_base = 1; /* QP1 is the GSI */
	c.qpn_count = 4;
	assert_null(nvmeof_cm_create(&c, &ops));
	c.qpn_base = 0x00ffffef;
	c.qpn_count = 0x10; /* up to 0xfffffe */
	cm = nvmeof_cm_create(&c, &ops);
	assert_non_null(cm);
	nvmeof_cm_destroy(cm);
	ops.queue_established = NULL; /* optional */
	cm = nvmeof_cm_create(&c, &ops);
	assert_non_null(cm);
	nvmeof_cm_get_stats(NULL, &st);
	assert_int_equal(st.mads_in, 0);
	nvmeof_cm_tick(NULL, 0);
	nvmeof_cm_destroy(cm);
}

/* The defaults: the full QPN range, a 10 s REP timeout, a 2 s timewait. */
static void test_defaults(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct req_opts o = io_opts(0, 1, 128);
	struct conn_ref r;

	(void)state;
	c.timewait_ms = 0;
	c.reply_timeout_ms = 0;
	c.max_queue_size = 0;
	c.max_admin_queue_size = 0;
	env_start(&c);
	r = connect_req(&o);
	assert_true(r.ctrl_qpn >= NVMEOF_CM_QPN_BASE && r.ctrl_qpn < NVMEOF_CM_QPN_BASE + NVMEOF_CM_QPN_COUNT);
	E.now += 9999;
	nvmeof_cm_tick(E.cm, E.now);
	assert_non_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	E.now += 1;
	nvmeof_cm_tick(E.cm, E.now);
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	o = io_opts(1, 1, 129);
	expect_req_rejected(&o, 28, 4);
	env_finish();
}

/*
 * A full table recycles the oldest slot that holds no queue: TIMEWAIT first,
 * then DREQ_SENT. max_conns 1 gives 2 * 1 + 16 = 18 slots.
 */
static void test_table_full_recycles(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct conn_ref r[20];
	struct req_opts o;
	uint8_t m[MAD_SIZE];

	(void)state;
	c.max_conns = 1;
	env_start(&c);
	for (unsigned i = 0; i < 18; i++) {
		o = io_opts(i, 1, 32);
		r[i] = connect_established(&o);
		send_dreq(i, r[i].guest_cid, r[i].our_cid, r[i].ctrl_qpn);
		E.now += 1;
	}
	/* 18 in TIMEWAIT: the 19th recycles r[0]'s slot. */
	o = io_opts(18, 1, 32);
	r[18] = connect_established(&o);
	send_dreq(18, r[18].guest_cid, r[18].our_cid, r[18].ctrl_qpn);
	/* r[1] is still remembered: its resent REQ is stale. */
	o = io_opts(1, 1, 32);
	build_req(m, &o);
	feed(m);
	expect_rej(last_sent(), o.tid, o.comm_id, 10);
	assert_int_equal(mad_get32(last_sent()->mad, REJ_LCID), r[1].our_cid);
	/* r[0] is forgotten: the same REQ is a new connection (and recycles r[1]). */
	o = io_opts(0, 1, 32);
	connect_req(&o);
	assert_int_equal(E.creates, 20);
	env_finish();

	/* The same with DREQ_SENT slots whose DREP never came. */
	env_start(&c);
	for (unsigned i = 0; i < 18; i++) {
		o = io_opts(i, 1, 32);
		r[i] = connect_established(&o);
		assert_int_equal(nvmeof_cm_disconnect(E.cm, r[i].ctrl_qpn, E.now), 0);
		E.now += 1;
	}
	o = io_opts(18, 1, 32);
	connect_req(&o);
	send_drep(r[0].guest_cid, r[0].our_cid); /* r[0] was recycled */
	assert_int_equal(stats().dropped, 1);
	send_drep(r[1].guest_cid, r[1].our_cid);
	assert_int_equal(stats().dropped, 1);
	env_finish();
}

/* max_conns 0 is one host's worth: the admin queue and max_qid I/O queues. */
static void test_max_conns_default(void **state)
{
	struct nvmeof_cm_config c = base_config();
	struct req_opts o;

	(void)state;
	c.max_conns = 0;
	env_start(&c);
	o = req_opts(0);
	connect_established(&o);
	for (unsigned i = 1; i <= 4; i++) {
		o = io_opts(i, (uint16_t)i, 32);
		connect_established(&o);
	}
	o = io_opts(5, 1, 32);
	expect_req_rejected(&o, 28, 6);
	env_finish();

	c.max_conns = 100000000; /* capped, not allocated */
	env_start(&c);
	env_finish();
}

/* One whole lifecycle with debug logging on, so every log line's format runs. */
static void test_debug_logging(void **state)
{
	struct req_opts o = io_opts(0, 1, 32);
	struct req_opts bad = io_opts(1, 1, 32);
	struct conn_ref r;
	uint8_t m[MAD_SIZE];

	(void)state;
	log_set_level(LOG_LEVEL_DEBUG);
	env_start_default();
	r = connect_established(&o);
	bad.service_id = 1;
	expect_req_rejected(&bad, 8, 0);
	bad = io_opts(2, 1, 32);
	bad.qpn = o.qpn;
	build_req(m, &bad);
	feed(m); /* stale: REJ, and our DREQ for the old connection */
	assert_null(nvmeof_cm_lookup(E.cm, r.ctrl_qpn));
	send_drep(r.guest_cid, r.our_cid);
	r = connect_req(&bad);
	send_rej(r.guest_cid, r.our_cid, 1, 28);
	o = io_opts(3, 2, 32);
	connect_req(&o);
	E.now += 10000;
	nvmeof_cm_tick(E.cm, E.now); /* two freed, one REP timed out */
	E.now += 10000;
	nvmeof_cm_tick(E.cm, E.now);
	assert_int_equal(E.destroys, 3);
	env_finish();
	log_set_level(LOG_LEVEL_INFO);
}

/* ---- fuzz ---- */

static uint64_t fuzz_state = 0x0123456789abcdefull;

static uint32_t fuzz_next(void)
{
	return (uint32_t)(xorshift64(&fuzz_state) >> 16);
}

/* Random bodies under valid headers, with IDs borrowed from real connections so the state machine moves. */
static void test_fuzz(void **state)
{
	static const uint16_t attrs[] = { ATTR_REQ, ATTR_MRA, ATTR_REJ, ATTR_REP, ATTR_RTU, ATTR_DREQ,
					  ATTR_DREP, ATTR_SIDR_REQ, ATTR_SIDR_REP, 0x0019, 0x001a, 0x0001,
					  0xffff };
	struct nvmeof_cm_config c = base_config();
	uint32_t known_ours[16] = { 0 }, known_theirs[16] = { 0 }, known_qpn[16] = { 0 };
	uint8_t m[MAD_SIZE];

	(void)state;
	c.qpn_count = 16;
	c.max_conns = 6;
	log_set_level(LOG_LEVEL_ERROR); /* thousands of refused connects */
	env_start(&c);
	for (unsigned i = 0; i < 20000; i++) {
		unsigned k = fuzz_next() % 16;
		unsigned sent = E.nsent;

		for (unsigned j = 0; j < MAD_SIZE; j += 4)
			mad_put32(m, j, fuzz_next());
		m[H_BASE] = 1;
		m[H_CLASS] = 0x07;
		m[H_CLASSVER] = 2;
		m[H_METHOD] = 0x03;
		mad_put16(m, H_ATTR, attrs[fuzz_next() % (sizeof(attrs) / sizeof(attrs[0]))]);
		if (fuzz_next() % 4 == 0) {
			struct req_opts o = io_opts(fuzz_next() % 64, (uint16_t)(fuzz_next() % 6),
						    (uint16_t)(1 + fuzz_next() % 130));

			build_req(m, &o);
		} else if (fuzz_next() % 2) {
			mad_put32(m, X_LCID, known_theirs[k]);
			mad_put32(m, X_RCID, fuzz_next() % 8 ? known_ours[k] : fuzz_next());
			mad_put24(m, DREQ_RQPN, known_qpn[k]);
		}
		feed(m);
		if (E.nsent > sent && mad_get16(last_sent()->mad, H_ATTR) == ATTR_REP) {
			const uint8_t *rep = last_sent()->mad;

			known_ours[k] = mad_get32(rep, REP_LCID);
			known_theirs[k] = mad_get32(rep, REP_RCID);
			known_qpn[k] = mad_get24(rep, REP_QPN);
			assert_true(known_qpn[k] >= QPN_BASE && known_qpn[k] < QPN_BASE + 16);
		}
		if (fuzz_next() % 64 == 0) {
			E.now += fuzz_next() % 3000;
			nvmeof_cm_tick(E.cm, E.now);
		}
		if (fuzz_next() % 256 == 0) {
			if (fuzz_next() % 2)
				nvmeof_cm_disconnect(E.cm, QPN_BASE + fuzz_next() % 16, E.now);
			else
				nvmeof_cm_established(E.cm, QPN_BASE + fuzz_next() % 16);
		}
		assert_true(E.creates - E.destroys <= 6);
	}
	assert_true(E.creates > 0);
	assert_true(stats().mads_in == 20000);
	env_finish();
	log_set_level(LOG_LEVEL_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_rep),
		cmocka_unit_test(test_admin_limits),
		cmocka_unit_test(test_rtu_establishes),
		cmocka_unit_test(test_rtu_unknown_and_mra_ignored),
		cmocka_unit_test(test_dreq_by_comm_id),
		cmocka_unit_test(test_dreq_by_qpn),
		cmocka_unit_test(test_dreq_unknown),
		cmocka_unit_test(test_dup_req),
		cmocka_unit_test(test_req_in_timewait_stale),
		cmocka_unit_test(test_stale_qpn_reuse),
		cmocka_unit_test(test_rej_invalid_service),
		cmocka_unit_test(test_rej_nvme_checks),
		cmocka_unit_test(test_max_conns),
		cmocka_unit_test(test_queue_create_refuses),
		cmocka_unit_test(test_guest_rej),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_rep_timeout),
		cmocka_unit_test(test_dreq_timeout),
		cmocka_unit_test(test_timewait_release),
		cmocka_unit_test(test_disconnect),
		cmocka_unit_test(test_disconnect_crossing),
		cmocka_unit_test(test_established_api),
		cmocka_unit_test(test_qpn_wrap),
		cmocka_unit_test(test_qpn_skip_held),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_destroy_live_queues),
		cmocka_unit_test(test_sidr),
		cmocka_unit_test(test_comm_ids_unique),
		cmocka_unit_test(test_create_args),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_table_full_recycles),
		cmocka_unit_test(test_max_conns_default),
		cmocka_unit_test(test_debug_logging),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests_name("nvmeof-cm-unit", tests, NULL, NULL);
}
