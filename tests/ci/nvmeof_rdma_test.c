/*
 * nvmeof-rdma-ci: the NVMe-oF controller as an in-process RDMA peer of the
 * ionic device (src/fabric/fabric_nvmeof.c), driven over vfio-user by
 * our own client the way nvme-rdma and rdma_cm drive it in a guest: CM
 * MADs on the GSI queue pair (QP 1) to the controller's address, an RC
 * queue pair per NVMe queue carrying command capsules as SENDs, responses
 * arriving in the guest's receives, data moved by the controller's RDMA
 * READ/WRITE against a registration of the guest's.
 *
 * The tests are the glue's error paths: responses for a guest that posts no
 * receives (held in order, then the protocol's answer past the bound), a
 * SEND from a queue pair that is not the connection's, the connection
 * manager re-created by RDMA and device resets, and queue pairs destroyed
 * with work outstanding. Each asserts on what lands in guest memory.
 *
 * The guest is the host of tests/lib/nvmf_host.c, set up as the kernel's
 * nvme-rdma (privileged QPs): MADs built at the IBA byte offsets (as
 * nvmeof-cm-unit does), capsules at the NVMe and NVMe-oF specifications'
 * offsets; nothing comes from the server's own headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "../lib/nvmf_host.h"
#include "../lib/vfu_client.h"

static const char *binary;
static struct vfc_server srv;
static struct vfc cl;

#define CFG VFU_PCI_CONFIG_REGION

/* ---- the server as started (nvmeof:size=4M) and the host ---- */

#define MAX_CONNS   9   /* queues=8: the CM holds the admin queue and eight I/O queues at once */
#define PENDING_MAX 256 /* responses the glue holds per queue for a guest without receives */
#define BS          512 /* the default bs= */

/* The kernel's nvme-rdma: privileged QPs, the controller at the default ip=, port 4420. */
static const struct nvmf_host_config host_cfg = {
	.host_ip = 0xc0a8c802u,
	.ctrl_ip = 0xc0a8c801u, /* 192.168.200.1 */
	.port = 4420,
	.subnqn = "nvmet-test",
	.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa",
	.hostid = { 0xaa },
	.privileged = true,
};

static uint8_t *gp(struct nvmf_host *n, uint64_t addr) { return guest_ptr(&n->g, addr); }

static void nv_up(struct nvmf_host *n)
{
	int rc = nvmf_host_setup(n, &cl, &host_cfg);

	if (rc)
		fail_msg("host set-up: step %d", rc);
}

static void nv_rdma_up(struct nvmf_host *n)
{
	int rc = nvmf_host_rdma_up(n);

	if (rc)
		fail_msg("RDMA set-up: step %d", rc);
}

static void nv_down(struct nvmf_host *n)
{
	/* The server still answers. */
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	nvmf_host_teardown(n);
}

/* ---- the CM exchange over the GSI QP ---- */

static void gsi_send(struct nvmf_host *n, const uint8_t *mad)
{
	assert_int_equal(nvmf_host_mad_send(n, mad), 0);
}

static void gsi_recv(struct nvmf_host *n, uint8_t *mad)
{
	assert_int_equal(nvmf_host_mad_recv(n, mad, NVMF_HOST_TIMEOUT_MS), 1);
}

/* The controller ends connection c with a DREQ naming guest QP qpn; the guest answers with a DREP. */
static void expect_dreq(struct nvmf_host *n, const struct nvmf_conn *c, uint32_t qpn)
{
	uint8_t mad[MAD_SIZE];

	gsi_recv(n, mad);
	assert_int_equal(mad_get16(mad, H_ATTR), ATTR_DREQ);
	assert_int_equal(mad_get32(mad, X_LCID), c->ctrl_comm_id);
	assert_int_equal(mad_get32(mad, X_RCID), c->host_comm_id);
	assert_int_equal(mad_get24(mad, DREQ_RQPN), qpn);
	nvmf_mad_ids(mad, ATTR_DREP, c->host_comm_id, c->ctrl_comm_id);
	gsi_send(n, mad);
}

/* The controller's QPN is one of its own range. */
static void assert_ctrl_qpn(const struct nvmf_conn *c)
{
	assert_true(c->ctrl_qpn >= 0x00c00000u && c->ctrl_qpn < 0x00d00000u);
}

/* Slot k's QP (RC, privileged, PD 1) created as `id` and connected through the CM to NVMe queue qid. */
static struct nvmf_conn cm_connect(struct nvmf_host *n, int k, uint32_t id, uint16_t qid, uint16_t size)
{
	int rc = nvmf_host_cm_connect(n, (unsigned)k, id, qid, size);

	if (rc)
		fail_msg("slot %d, QP %u: CM connect step %d", k, id, rc);
	assert_ctrl_qpn(&n->q[k].conn);
	return n->q[k].conn;
}

/* ---- capsules and responses on slot k ---- */

/* The next SEND completion of slot k: its status (0 for success). */
static int send_done(struct nvmf_host *n, int k)
{
	int st = nvmf_host_send_done(n, (unsigned)k);

	assert_true(st >= 0);
	return st;
}

/* Send one capsule and see it go. */
static void capsule(struct nvmf_host *n, int k, const uint8_t *c)
{
	assert_int_equal(nvmf_host_capsule(n, (unsigned)k, c), 0);
}

static struct nvmf_cpl rsp(struct nvmf_host *n, int k)
{
	struct nvmf_cpl c;

	if (nvmf_host_rsp(n, (unsigned)k, &c, NVMF_HOST_TIMEOUT_MS) != 1)
		fail_msg("slot %d: no response", k);
	return c;
}

/* Nothing arrives on slot k's receive CQ. */
static void assert_no_rsp(struct nvmf_host *n, int k, int wait_ms)
{
	struct nvmf_cpl c = { 0 };
	int got = nvmf_host_rsp(n, (unsigned)k, &c, wait_ms);

	if (got)
		fail_msg("slot %d: unexpected response (%d) cid %u status %#x", k, got, c.cid, c.status);
}

/* One command with a receive posted for it: its response, checked for its CID. */
static struct nvmf_cpl command(struct nvmf_host *n, int k, const uint8_t *c)
{
	struct nvmf_cpl r;

	if (nvmf_host_command(n, (unsigned)k, c, &r) < 0)
		fail_msg("slot %d: no response for cid %u", k, rg_get_le16(c + 2));
	return r;
}

static uint16_t next_cid(struct nvmf_host *n, int k)
{
	return nvmf_host_cid(n, (unsigned)k);
}

/* Fabrics Connect on slot k; the controller ID. */
static uint16_t nvme_connect(struct nvmf_host *n, int k, uint16_t qid, uint16_t sqsize, uint32_t kato, uint16_t cntlid)
{
	struct nvmf_cpl r;
	int st = nvmf_host_fabrics_connect(n, (unsigned)k, qid, sqsize, kato, cntlid, &r);

	if (st != 0)
		fail_msg("Connect of queue %u: status %#x", qid, st);
	return (uint16_t)r.dw0;
}

static uint32_t prop_get(struct nvmf_host *n, int k, uint32_t off)
{
	uint32_t v;

	assert_int_equal(nvmf_host_prop_get(n, (unsigned)k, off, &v), 0);
	return v;
}

/* An admin queue on slot k: Connect (dynamic controller), CC.EN, CSTS.RDY. The controller ID. */
static uint16_t admin_up(struct nvmf_host *n, int k, uint32_t qpn, uint32_t kato, struct nvmf_conn *out)
{
	uint16_t cntlid;

	*out = cm_connect(n, k, qpn, 0, 32);
	cntlid = nvme_connect(n, k, 0, 31, kato, 0xffff);
	assert_int_equal(nvmf_host_prop_set(n, (unsigned)k, NVMF_PROP_CC, NVMF_CC_ENABLE), 0);
	assert_int_equal(prop_get(n, k, NVMF_PROP_CSTS) & 1, 1);
	return cntlid;
}

/* A Read or Write of nlb blocks of namespace 1 at slba, the data at buf under key. */
static void rw_sqe(uint8_t *c, bool write, uint16_t cid, uint64_t slba, uint32_t nlb, uint64_t buf, uint32_t key)
{
	nvmf_sqe_rw(c, write ? NVMF_OP_WRITE : NVMF_OP_READ, cid, 1, slba, nlb, 0);
	nvmf_sqe_data(c, buf, nlb * BS, key);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Write len bytes of pattern seed at slba through slot k, read them back into another buffer, compare. */
static void io_roundtrip(struct nvmf_host *n, int k, uint64_t slba, uint32_t nlb, uint32_t seed)
{
	uint8_t c[64];
	uint8_t *w = gp(n, NVMF_HOST_IO), *r = gp(n, NVMF_HOST_IO + 0x40000);

	fill(w, nlb * BS, seed);
	memset(r, 0x5a, nlb * BS);
	rw_sqe(c, true, next_cid(n, k), slba, nlb, NVMF_HOST_IO, NVMF_HOST_MR_KEY);
	assert_int_equal(nvmf_cpl_sc(command(n, k, c)), 0);
	rw_sqe(c, false, next_cid(n, k), slba, nlb, NVMF_HOST_IO + 0x40000, NVMF_HOST_MR_KEY);
	assert_int_equal(nvmf_cpl_sc(command(n, k, c)), 0);
	assert_memory_equal(r, w, nlb * BS);
}

static bool all_ee(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xee)
			return false;
	return true;
}

/* ---- server ---- */

static int start_server(void **state)
{
	(void)state;
	return vfc_server_start(&srv, "nvmeof-rdma-ci", binary, (const char *const[]){ "-b", "nvmeof:size=4M", NULL });
}

static int stop_server(void **state)
{
	(void)state;
	return vfc_server_stop(&srv);
}

/* ---- tests ---- */

/* The path the error tests depart from: admin queue, an I/O queue, data both ways byte for byte. */
static void test_connect_io(void **state)
{
	struct nvmf_host n;
	struct nvmf_conn a, io;
	uint16_t cntlid;

	(void)state;
	nv_up(&n);
	cntlid = admin_up(&n, 0, 20, 0, &a);
	io = cm_connect(&n, 1, 21, 1, 128);
	assert_int_equal(nvme_connect(&n, 1, 1, 127, 0, cntlid), cntlid);
	assert_true(io.ctrl_qpn != a.ctrl_qpn);
	io_roundtrip(&n, 1, 8, 8, 1);
	io_roundtrip(&n, 1, 0, 1, 2);
	nv_down(&n);
}

/*
 * A guest that posts no receives: the controller's responses wait, in
 * order, and each goes into the next receive the guest posts, SQHD moving
 * with them. Then a host that breaks flow control for good (more capsules
 * outstanding than the glue holds, PENDING_MAX): the controller drops the
 * connection the way the protocol lets it, with a DREQ; what it held is
 * discarded and nothing more reaches the guest's receives.
 */
static void test_responses_wait_for_receives(void **state)
{
	struct nvmf_host n;
	struct nvmf_conn a;
	uint8_t c[64];
	struct nvmf_cpl r;
	uint16_t first, sqhd0;
	const unsigned burst = 24; /* within the admin queue's 32 entries */

	(void)state;
	nv_up(&n);
	admin_up(&n, 0, 20, 0, &a);
	sqhd0 = (uint16_t)(n.q[0].next_cid - 1); /* one capsule per CID so far */

	/* No receive posted: every capsule is taken (its SEND completes), no response lands. */
	first = n.q[0].next_cid;
	for (unsigned i = 0; i < burst; i++) {
		nvmf_sqe_prop(c, next_cid(&n, 0), false, i % 2 ? NVMF_PROP_CSTS : NVMF_PROP_CC, 0);
		nvmf_host_capsule_put(&n, 0, c);
	}
	rg_sq_ring(&n.g, &n.q[0].qp);
	for (unsigned i = 0; i < burst; i++)
		assert_int_equal(send_done(&n, 0), 0);
	assert_no_rsp(&n, 0, 300);
	/* One receive: the oldest response only. */
	nvmf_host_post_recvs(&n, 0, 1);
	r = rsp(&n, 0);
	assert_int_equal(r.cid, first);
	assert_no_rsp(&n, 0, 100);
	/* The rest: in order, each with its own value and the SQ head it had. */
	nvmf_host_post_recvs(&n, 0, burst - 1);
	for (unsigned i = 1; i < burst; i++) {
		r = rsp(&n, 0);
		assert_int_equal(r.cid, (uint16_t)(first + i));
		assert_int_equal(nvmf_cpl_sc(r), 0);
		assert_int_equal(r.dw0, i % 2 ? 1u : NVMF_CC_ENABLE); /* CSTS.RDY, or CC as set */
		assert_int_equal(r.sqhd, (uint16_t)((sqhd0 + 1 + i) % 32));
	}
	assert_no_rsp(&n, 0, 100);
	/* The queue still works. */
	assert_int_equal(prop_get(&n, 0, NVMF_PROP_CSTS) & 1, 1);

	/* Past the bound: PENDING_MAX + 40 capsules without a receive. */
	for (unsigned i = 0; i < PENDING_MAX + 40; i++) {
		nvmf_sqe(c, NVMF_ADM_KEEP_ALIVE, next_cid(&n, 0), 0);
		nvmf_host_capsule_put(&n, 0, c);
	}
	rg_sq_ring(&n.g, &n.q[0].qp);
	for (unsigned i = 0; i < PENDING_MAX + 40; i++)
		assert_int_equal(send_done(&n, 0), 0);
	/* The controller ends the connection: a DREQ for it reaches the GSI QP. */
	expect_dreq(&n, &a, n.q[0].qp.id);
	/* What it held is gone: receives posted now stay empty. */
	nvmf_host_post_recvs(&n, 0, 64);
	assert_no_rsp(&n, 0, 300);
	/* A capsule on the dead connection finds nobody: the SEND fails, as after the transport's retries. */
	nvmf_sqe_prop(c, next_cid(&n, 0), false, NVMF_PROP_CSTS, 0);
	nvmf_host_capsule_put(&n, 0, c);
	rg_sq_ring(&n.g, &n.q[0].qp);
	assert_int_equal(send_done(&n, 0), RG_STS_RETRY_EXCEEDED);

	/* Another host connection is unaffected by all of it. */
	{
		struct nvmf_conn b;

		admin_up(&n, 1, 21, 0, &b);
		assert_true(b.ctrl_qpn != a.ctrl_qpn);
	}
	nv_down(&n);
}

/*
 * A SEND to the controller's QP from a guest QP that is not the one the
 * connection was made for: refused at the transport (the sender's WQE
 * completes with a remote invalid-request error and its QP goes to the
 * error state), and the controller's queue never sees the capsule: a
 * Property Set that would disable the controller changes nothing, no
 * response lands anywhere, and the real connection's SQ head continues
 * from its own capsules.
 */
static void test_send_from_foreign_qp(void **state)
{
	struct nvmf_host n;
	struct nvmf_conn a;
	uint8_t c[64];
	struct nvmf_cpl r;
	uint16_t sqhd;

	(void)state;
	nv_up(&n);
	admin_up(&n, 0, 20, 0, &a);
	nvmf_host_post_recvs(&n, 0, 4); /* the real connection has receives waiting */
	r = (struct nvmf_cpl){ 0 };
	sqhd = (uint16_t)(n.q[0].next_cid - 1);

	/* QP 21 in slot 1, connected by hand to the controller's QP, not through the CM. */
	assert_int_equal(nvmf_host_qp_create(&n, 1, 21), 0);
	assert_int_equal(rg_qp_to_rts(&n.g, &n.aq, &n.q[1].qp, a.ctrl_qpn, RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ),
			 0);
	nvmf_host_post_recvs(&n, 1, 4);
	nvmf_sqe_prop(c, 0x777, true, NVMF_PROP_CC, 0); /* CC.EN = 0: a controller reset, if it got through */
	nvmf_host_capsule_put(&n, 1, c);
	rg_sq_ring(&n.g, &n.q[1].qp);
	assert_int_equal(send_done(&n, 1), RG_STS_REMOTE_INV_REQ);
	assert_no_rsp(&n, 0, 200);
	/*
	 * The foreign QP is in error: one flushed receive completion tells the
	 * driver to flush the rest; none of its receive buffers holds anything.
	 */
	{
		uint8_t cqe[RG_CQE_SIZE];

		assert_true(rg_cq_next(&n.g, nvmf_host_rcq(&n, 1), cqe));
		assert_int_equal(rg_cqe_type(cqe), RG_CQE_RECV);
		assert_true(rg_cqe_error(cqe));
		assert_int_equal(rg_get_be32(cqe + 24), RG_STS_FLUSHED);
		rg_sync(&n.g);
		assert_false(rg_cq_wait(&n.g, nvmf_host_rcq(&n, 1), cqe, 100));
		assert_true(all_ee(gp(&n, NVMF_HOST_RSP(1)), 4 * 64));
	}
	/* The controller is still enabled and ready; the connection's queue head moved only for its own. */
	nvmf_sqe_prop(c, next_cid(&n, 0), false, NVMF_PROP_CC, 0);
	capsule(&n, 0, c);
	r = rsp(&n, 0);
	assert_int_equal(r.dw0, NVMF_CC_ENABLE);
	assert_int_equal(r.sqhd, (uint16_t)((sqhd + 1) % 32));
	assert_int_equal(prop_get(&n, 0, NVMF_PROP_CSTS) & 1, 1);
	nv_down(&n);
}

/*
 * The guest's RDMA state goes away under live connections: RDMA_RESET_LIF
 * (ionic_rdma's probe after a driver reload), then the whole device
 * (dev_cmd RESET, as after a guest reboot). The connection manager is made
 * anew each time: a fresh REQ is answered, the controller comes up again,
 * the namespace keeps its data, I/O works.
 */
static void test_reconnect_after_reset(void **state)
{
	struct nvmf_host n;
	struct nvmf_conn a, io;
	uint16_t cntlid;
	uint8_t c[64];

	(void)state;
	nv_up(&n);
	cntlid = admin_up(&n, 0, 20, 0, &a);
	io = cm_connect(&n, 1, 21, 1, 128);
	nvme_connect(&n, 1, 1, 127, 0, cntlid);
	io_roundtrip(&n, 1, 64, 4, 7);
	/* A response is waiting for a receive when the reset comes. */
	nvmf_sqe_prop(c, next_cid(&n, 0), false, NVMF_PROP_CSTS, 0);
	capsule(&n, 0, c);

	for (int round = 0; round < 2; round++) {
		uint8_t *d = gp(&n, NVMF_HOST_IO + 0x80000);

		rg_eq_close(&n.eq);
		if (round == 1)
			assert_int_equal(ionic_guest_init_device(&n.g), 0); /* dev_cmd RESET, LIF_INIT, admin queue */
		nv_rdma_up(&n); /* RDMA_RESET_LIF first, then everything again */
		/* The same guest QP numbers connect again, with no REJ for a stale connection. */
		cntlid = admin_up(&n, 0, 20, 0, &a);
		io = cm_connect(&n, 1, 21, 1, 128);
		assert_int_equal(nvme_connect(&n, 1, 1, 127, 0, cntlid), cntlid);
		/* The data written before the resets is there. */
		memset(d, 0, 4 * BS);
		rw_sqe(c, false, next_cid(&n, 1), 64, 4, NVMF_HOST_IO + 0x80000, NVMF_HOST_MR_KEY);
		assert_int_equal(nvmf_cpl_sc(command(&n, 1, c)), 0);
		fill(gp(&n, NVMF_HOST_IO), 4 * BS, 7);
		assert_memory_equal(d, gp(&n, NVMF_HOST_IO), 4 * BS);
		io_roundtrip(&n, 1, 200 + (uint64_t)round, 2, 30 + (uint32_t)round);
		assert_no_rsp(&n, 0, 0); /* nothing from before the reset */
	}
	(void)io;
	nv_down(&n);
}

/*
 * The guest destroys a queue pair with work outstanding at the controller:
 * a READ whose data went out but whose response waits for a receive, and an
 * Asynchronous Event Request. The registration is destroyed too and the
 * memory behind the old receives and the data buffer is given to something
 * else (a pattern). The controller ends the connection at once (a DREQ:
 * without it, a connection with keep-alive off would hold its place in the
 * CM and the controller forever), nothing is written into that memory
 * afterwards, and later connections work: a new QP under the same number
 * gets only its own responses, and more abandoned connections than the CM
 * holds at once do not keep a new one out.
 */
static void test_qp_destroyed_mid_transfer(void **state)
{
	struct nvmf_host n;
	struct nvmf_conn a, io;
	uint16_t cntlid;
	uint8_t c[64], mad[MAD_SIZE], cqe[RG_CQE_SIZE];
	static uint8_t before[0x10000 + 0x8000];
	const uint64_t dst = NVMF_HOST_IO + 0x40000; /* the outstanding READ's buffer, registration 3 */
	const uint32_t dst_key = RG_KEY(3, 0x44);
	struct rg_qp *q = &n.q[1].qp;
	struct nvmf_cpl r;

	(void)state;
	nv_up(&n);
	assert_int_equal(rg_mr_create(&n.g, &n.aq, 3, 0x44, 1, dst, 0x10000, 1, dst,
				      RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12), 0);
	cntlid = admin_up(&n, 0, 20, 0, &a);
	io = cm_connect(&n, 1, 21, 1, 128);
	nvme_connect(&n, 1, 1, 127, 0, cntlid);
	io_roundtrip(&n, 1, 16, 8, 3);
	/* Outstanding: an AER on the admin queue, a READ's response on the I/O queue (no receive for it). */
	nvmf_sqe(c, NVMF_ADM_AER, next_cid(&n, 0), 0);
	capsule(&n, 0, c);
	memset(gp(&n, dst), 0, 8 * BS);
	rw_sqe(c, false, next_cid(&n, 1), 16, 8, dst, dst_key);
	capsule(&n, 1, c);
	fill(gp(&n, NVMF_HOST_IO), 8 * BS, 3);
	assert_memory_equal(gp(&n, dst), gp(&n, NVMF_HOST_IO), 8 * BS); /* the data went out at once */

	/* The I/O QP goes: the controller ends its connection at once. */
	assert_int_equal(rg_qp_destroy(&n.g, &n.aq, 21), 0);
	expect_dreq(&n, &io, 21);
	/* The registration goes too; the memory behind it and the old receives is reused. */
	assert_int_equal(rg_mr_destroy(&n.g, &n.aq, dst_key), 0);
	fill(gp(&n, dst), 0x10000, 99);
	fill(gp(&n, NVMF_HOST_RSP(1)), 0x8000, 98);
	memcpy(before, gp(&n, dst), 0x10000);
	memcpy(before + 0x10000, gp(&n, NVMF_HOST_RSP(1)), 0x8000);

	/*
	 * A new QP under the same number, receives posted while it is in INIT
	 * (before its REQ), into fresh buffers: a new connection, and the first
	 * response it gets is its own Connect's.
	 */
	assert_int_equal(nvmf_host_qp_create(&n, 1, 21), 0);
	assert_int_equal(rg_qp_modify(&n.g, &n.aq, q, RG_QPS_INIT, RG_QPS_RESET, 0,
				      RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ), 0);
	for (uint32_t i = 0; i < 4; i++) {
		const struct rg_sge sg = { NVMF_HOST_RSP(2) + 64ull * i, 64, 0 };

		rg_post_recv(&n.g, q, 0x100 + i, 0, &sg, 1);
	}
	rg_rq_ring(&n.g, q);
	assert_int_equal(nvmf_host_cm_req(&n, 21, 1, 128, &io.host_comm_id, mad), ATTR_REP);
	io.ctrl_comm_id = mad_get32(mad, REP_LCID);
	io.ctrl_qpn = mad_get24(mad, REP_QPN);
	assert_int_equal(rg_qp_modify(&n.g, &n.aq, q, RG_QPS_RTR, RG_QPS_INIT, io.ctrl_qpn, 0), 0);
	assert_int_equal(rg_qp_modify(&n.g, &n.aq, q, RG_QPS_RTS, RG_QPS_RTR, 0, 0), 0);
	nvmf_mad_ids(mad, ATTR_RTU, io.host_comm_id, io.ctrl_comm_id);
	gsi_send(&n, mad);
	nvmf_host_connect_sqe(&n, c, 0x900, 1, 127, 0, cntlid);
	capsule(&n, 1, c);
	assert_true(rg_cq_next(&n.g, nvmf_host_rcq(&n, 1), cqe));
	assert_false(rg_cqe_error(cqe));
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x100);
	nvmf_cpl_parse(&r, gp(&n, NVMF_HOST_RSP(2)));
	rg_cq_ack(&n.g, nvmf_host_rcq(&n, 1));
	assert_int_equal(r.cid, 0x900);
	assert_int_equal(nvmf_cpl_sc(r), 0);
	assert_int_equal(r.dw0, cntlid);
	/* A READ naming the destroyed key fails at the controller and writes nothing. */
	rw_sqe(c, false, 0x901, 16, 1, dst, dst_key);
	capsule(&n, 1, c);
	assert_true(rg_cq_next(&n.g, nvmf_host_rcq(&n, 1), cqe));
	assert_int_equal(rg_cqe_wqe_id(cqe), 0x101);
	nvmf_cpl_parse(&r, gp(&n, NVMF_HOST_RSP(2) + 64));
	rg_cq_ack(&n.g, nvmf_host_rcq(&n, 1));
	assert_int_equal(r.cid, 0x901);
	assert_true(nvmf_cpl_sc(r) != 0);
	/* The admin queue still answers (its AER stays outstanding: no response for it). */
	assert_int_equal(prop_get(&n, 0, NVMF_PROP_CSTS) & 1, 1);

	/*
	 * More abandoned connections than the CM holds at once: each a new QP,
	 * admin-connected with keep-alive off, a response left waiting, then
	 * destroyed without a DREQ from the guest. Each is ended by the
	 * controller; a new connection still gets in.
	 */
	for (uint32_t i = 0; i < MAX_CONNS + 2; i++) {
		struct nvmf_conn x = cm_connect(&n, 3, 40 + i, 0, 32);

		nvme_connect(&n, 3, 0, 31, 0, 0xffff);
		nvmf_sqe_prop(c, next_cid(&n, 3), false, NVMF_PROP_CSTS, 0);
		capsule(&n, 3, c);
		assert_int_equal(rg_qp_destroy(&n.g, &n.aq, 40 + i), 0);
		expect_dreq(&n, &x, 40 + i);
	}
	{
		struct nvmf_conn y;

		admin_up(&n, 3, 60, 0, &y);
	}
	/* Nothing ever landed in the memory the first QP and registration left behind. */
	usleep(300000); /* a few of the controller's ticks */
	assert_memory_equal(gp(&n, dst), before, 0x10000);
	assert_memory_equal(gp(&n, NVMF_HOST_RSP(1)), before + 0x10000, 0x8000);
	nv_down(&n);
}

/*
 * The same seen from bus mastering: with Bus Master Enable clear the
 * controller's responses cannot be delivered and nothing of guest memory
 * changes; set again, they arrive in order.
 */
static void test_bus_master_holds_responses(void **state)
{
	struct nvmf_host n;
	struct nvmf_conn a;
	uint8_t c[64];
	static uint8_t before[GUEST_SIZE];
	uint16_t first;

	(void)state;
	nv_up(&n);
	admin_up(&n, 0, 20, 0, &a);
	first = n.q[0].next_cid;
	for (int i = 0; i < 3; i++) {
		nvmf_sqe_prop(c, next_cid(&n, 0), false, NVMF_PROP_CSTS, 0);
		nvmf_host_capsule_put(&n, 0, c);
	}
	vfc_write32(&cl, CFG, 0x04, 0x0002, false);
	/* Receives and capsules rung with bus mastering off. */
	{
		struct rg_qp *q = &n.q[0].qp;

		for (int i = 0; i < 3; i++)
			nvmf_host_recv_put(&n, 0);
		memcpy(before, n.g.mem, GUEST_SIZE);
		rg_rq_ring(&n.g, q);
		rg_sq_ring(&n.g, q);
	}
	rg_sync(&n.g);
	usleep(300000);
	assert_memory_equal(n.g.mem, before, GUEST_SIZE);
	vfc_write32(&cl, CFG, 0x04, 0x0006, false);
	for (int i = 0; i < 3; i++)
		assert_int_equal(send_done(&n, 0), 0);
	for (int i = 0; i < 3; i++) {
		struct nvmf_cpl r = rsp(&n, 0);

		assert_int_equal(r.cid, (uint16_t)(first + i));
		assert_int_equal(r.dw0 & 1, 1);
	}
	nv_down(&n);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_connect_io, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_responses_wait_for_receives, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_send_from_foreign_qp, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_reconnect_after_reset, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_qp_destroyed_mid_transfer, vfc_fixture_open, vfc_fixture_close),
		cmocka_unit_test_setup_teardown(test_bus_master_holds_responses, vfc_fixture_open, vfc_fixture_close),
	};

	binary = vfc_test_binary(argc, argv);
	if (!binary)
		return 2;
	vfc_fixture_use(&cl, &srv);
	return cmocka_run_group_tests_name("nvmeof-rdma-ci", tests, start_server, stop_server);
}
