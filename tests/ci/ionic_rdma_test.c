/*
 * ionic-rdma-ci: the RDMA admin side of the ionic device, driven over
 * vfio-user by our own client exactly as the stock ionic_rdma driver drives
 * it (Linux 7.2: ionic_admin.c, ionic_controlpath.c, ionic_fw.h): the LIF
 * identity, the queue-level commands 50-53 on the Ethernet admin queue, the
 * RDMA admin queue and its ADMIN completions, CQ arming and the event queue
 * with its MSI-X vector. Every test checks the bytes the device writes into
 * guest memory, the statuses, which interrupts fire, and every hostile-input
 * path; after each the server must still answer.
 *
 * Offsets and values come from /work/shared/research/ionic-interface.md
 * section 4 and the driver sources, not from the device's headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/ionic_rdma_guest.h"
#include "../lib/vfu_client.h"

static const char *binary;
static char dir[64], sock[128];
static pid_t server;
static struct vfc cl;

#define CFG VFU_PCI_CONFIG_REGION
#define BAR0 0
#define BAR2 2
#define DEVCMD 0x800
#define DEVCMD_DATA 0x888
#define INTR_MASK 4
#define INTR_CREDITS 8

/* IB verbs attribute-mask bits MODIFY_QP carries (big-endian on the wire). */
#define IB_QP_STATE              (1u << 0)
#define IB_QP_ACCESS_FLAGS       (1u << 3)
#define IB_QP_PKEY_INDEX         (1u << 4)
#define IB_QP_QKEY               (1u << 6)
#define IB_QP_AV                 (1u << 7)
#define IB_QP_PATH_MTU           (1u << 8)
#define IB_QP_TIMEOUT            (1u << 9)
#define IB_QP_RETRY_CNT          (1u << 10)
#define IB_QP_RNR_RETRY          (1u << 11)
#define IB_QP_RQ_PSN             (1u << 12)
#define IB_QP_MAX_QP_RD_ATOMIC   (1u << 13)
#define IB_QP_MIN_RNR_TIMER      (1u << 15)
#define IB_QP_SQ_PSN             (1u << 16)
#define IB_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define IB_QP_DEST_QPN           (1u << 20)

enum { QPT_RC = 0, QPT_UC = 1, QPT_RD = 2, QPT_UD = 3 };
enum { QPS_RESET = 0, QPS_INIT = 1, QPS_RTR = 2, QPS_RTS = 3 };
#define QPF_PRIVILEGED 0x8000u

/* ---- server and connection ---- */

static int start_server(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ionic-rdma-ci.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	server = vfc_spawn_server(binary, dir, sock, sizeof(sock), (const char *const[]){ "-b", "none", NULL });
	return server > 0 ? 0 : -1;
}

static int stop_server(void **state)
{
	struct vfc c2;
	int status = 0, alive;
	char cmd[128];

	(void)state;
	/* A fresh client is still served after everything. */
	alive = vfc_connect(&c2, sock, 5000) == 0 && vfc_negotiate(&c2) == 0 &&
		vfc_read32(&c2, CFG, 0) == 0x10021dd8;
	vfc_close(&c2);
	kill(server, SIGTERM);
	waitpid(server, &status, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return -1;
	/* It survived everything and stopped cleanly (a sanitizer report would make this fail). */
	return alive && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int connect_negotiated(void **state)
{
	(void)state;
	if (vfc_connect(&cl, sock, 20000))
		return -1;
	return vfc_negotiate(&cl) == 0 ? 0 : -1;
}

static int disconnect(void **state)
{
	(void)state;
	vfc_close(&cl);
	return 0;
}

/* The server still answers vfio-user commands on this connection. */
static void assert_alive(void)
{
	struct vfu_device_info in = { .argsz = sizeof(in) }, out;
	size_t rlen;
	uint32_t err = 1;

	assert_int_equal(vfc_call(&cl, VFU_CMD_DEVICE_GET_INFO, &in, sizeof(in), NULL, 0, &out, sizeof(out), &rlen,
				  &err), 0);
	assert_int_equal(err, 0);
	assert_int_equal(out.num_regions, 9);
	assert_int_equal(vfc_read32(&cl, CFG, 0), 0x10021dd8);
	assert_int_equal(vfc_read32(&cl, BAR0, 0), 0x44455649);
}

/* ---- a guest with an RDMA admin queue ---- */

struct fx {
	struct ionic_guest g;
	struct rg_eq eq;   /* EQ 0 on vector 2 */
	struct rg_cq acq;  /* CQ 0, the admin CQ */
	struct rg_aq aq;   /* AQ 0 */
};

/* The driver's probe: RDMA_RESET_LIF, an EQ, the admin CQ, the admin queue. */
static void fx_up(struct fx *f, uint8_t cq_depth_log2, uint8_t aq_depth_log2)
{
	assert_int_equal(ionic_guest_setup(&f->g, &cl), 0);
	assert_int_equal(rg_reset_lif(&f->g), 0);
	assert_int_equal(rg_eq_create(&f->g, &f->eq, 0, 2, 10, RG_EQ_RING(0)), 0);
	assert_int_equal(rg_cq_create(&f->g, &f->acq, 0, 0, cq_depth_log2, RG_CQ_RING(0)), 0);
	assert_int_equal(rg_aq_create(&f->g, &f->aq, 0, &f->acq, aq_depth_log2, RG_AQ_RING(0)), 0);
}

static void fx_down(struct fx *f)
{
	assert_alive();
	rg_eq_close(&f->eq);
	ionic_guest_teardown(&f->g);
}

static uint32_t aq_slot(const struct rg_aq *aq)
{
	return aq->prod & ((1u << aq->depth_log2) - 1);
}

/* An ADMIN CQE as the driver checks it: first slot, opcode, status, aqid, type 0, error bit, color. */
static void check_cqe(const uint8_t *cqe, uint32_t idx, uint8_t op, uint32_t aqid, uint32_t st, uint8_t color)
{
	if (rg_cqe_cmd_idx(cqe) != idx || rg_cqe_cmd_op(cqe) != op || rg_cqe_status(cqe) != st ||
	    rg_cqe_qtf(cqe) != (aqid << 8 | 0u << 5 | (st ? 2u : 0u) | color))
		fail_msg("CQE idx %u op %u status %u qtf %#x; want idx %u op %u status %u qtf %#x", rg_cqe_cmd_idx(cqe),
			 rg_cqe_cmd_op(cqe), rg_cqe_status(cqe), rg_cqe_qtf(cqe), idx, op, st,
			 aqid << 8 | (st ? 2u : 0u) | color);
}

/* One command on aq, its CQE checked, the CQ's consumer index returned (ring 0) as the driver does. */
static int admin_on(struct fx *f, struct rg_aq *aq, uint8_t op, const void *p, uint16_t len)
{
	uint8_t cqe[RG_CQE_SIZE], color = aq->cq->color;
	uint32_t first = aq_slot(aq);
	int st = rg_admin(&f->g, aq, op, p, len, cqe);

	if (st < 0)
		fail_msg("admin op %u at slot %u: no completion", op, first);
	check_cqe(cqe, first, op, aq->id, (uint32_t)st, color);
	rg_cq_ack(&f->g, aq->cq);
	return st;
}

static int admin(struct fx *f, uint8_t op, const void *p, uint16_t len)
{
	return admin_on(f, &f->aq, op, p, len);
}

/* Nothing new on a CQ (after a round trip: every doorbell before has been handled). */
static void assert_no_cqe(struct fx *f, struct rg_cq *cq)
{
	uint8_t cqe[RG_CQE_SIZE];

	rg_sync(&f->g);
	if (rg_cq_poll(&f->g, cq, cqe))
		fail_msg("unexpected CQE on CQ %u: idx %u op %u status %u", cq->id, rg_cqe_cmd_idx(cqe), cqe[2],
			 rg_cqe_status(cqe));
}

static void assert_no_eqe(struct fx *f, struct rg_eq *eq)
{
	uint32_t evt;

	rg_sync(&f->g);
	if (rg_eq_poll(&f->g, eq, &evt))
		fail_msg("unexpected EQE %#x on EQ %u", evt, eq->id);
	assert_int_equal(rg_eq_wait_irq(eq, 0), 0);
}

/* ---- admin payloads (offsets per ionic_fw.h) ---- */

static void p_create_cq(uint8_t p[34], uint32_t id, uint32_t eq, uint8_t depth_log2, uint8_t stride_log2,
			uint8_t page_log2, uint32_t map_count, uint64_t dma)
{
	memset(p, 0, 34);
	rg_le32(p + 0, eq);
	p[4] = depth_log2;
	p[5] = stride_log2;
	p[7] = page_log2;
	rg_le32(p + 12, id);
	rg_le32(p + 16, ~0u); /* tbl_index: the device chooses */
	rg_le32(p + 20, map_count);
	rg_le64(p + 24, dma);
}

struct wq {
	uint32_t cq;
	uint8_t depth_log2, stride_log2, page_log2;
	uint32_t map_count;
	uint64_t dma;
};

static void p_create_qp(uint8_t p[64], uint32_t id, uint8_t type, const struct wq *sq, const struct wq *rq)
{
	memset(p, 0, 64);
	rg_le32(p + 0, 1);                  /* pd */
	rg_be32(p + 4, QPF_PRIVILEGED);     /* priv_flags, big-endian */
	if (sq) {
		rg_le32(p + 8, sq->cq);
		p[12] = sq->depth_log2;
		p[13] = sq->stride_log2;
		p[15] = sq->page_log2;
		rg_le32(p + 16, ~0u);
		rg_le32(p + 20, sq->map_count);
		rg_le64(p + 24, sq->dma);
	}
	if (rq) {
		rg_le32(p + 32, rq->cq);
		p[36] = rq->depth_log2;
		p[37] = rq->stride_log2;
		p[39] = rq->page_log2;
		rg_le32(p + 40, ~0u);
		rg_le32(p + 44, rq->map_count);
		rg_le64(p + 48, rq->dma);
	}
	rg_le32(p + 56, id);
	p[62] = type;
}

struct mod {
	uint32_t mask;
	uint16_t access;
	uint32_t rq_psn, sq_psn, qkey_dest;
	uint8_t pmtu, retry, rnr_timer, timeout, rsq_depth, rrq_depth;
	uint16_t pkey;
	uint32_t ah_id_len;
	uint8_t state, cur;
	uint64_t hdr;
};

static void p_modify_qp(uint8_t p[60], uint32_t id, const struct mod *m)
{
	memset(p, 0, 60);
	rg_be32(p + 0, m->mask);
	rg_be16(p + 6, m->access);
	rg_le32(p + 8, m->rq_psn);
	rg_le32(p + 12, m->sq_psn);
	rg_le32(p + 16, m->qkey_dest);
	p[24] = m->pmtu;
	p[25] = m->retry;
	p[26] = m->rnr_timer;
	p[27] = m->timeout;
	p[28] = m->rsq_depth;
	p[29] = m->rrq_depth;
	rg_le16(p + 30, m->pkey);
	rg_le32(p + 32, m->ah_id_len);
	p[39] = (uint8_t)(m->state | m->cur << 4);
	rg_le32(p + 40, ~0u);
	rg_le32(p + 44, ~0u);
	rg_le64(p + 48, m->hdr);
	rg_le32(p + 56, id);
}

static void p_query_qp(uint8_t p[34], uint32_t id, uint64_t hdr, uint64_t sq, uint64_t rq)
{
	memset(p, 0, 34);
	rg_le64(p + 0, hdr);
	rg_le64(p + 8, sq);
	rg_le64(p + 16, rq);
	rg_le32(p + 28, id);
}

static void p_create_mr(uint8_t p[45], uint32_t index, uint8_t key, uint64_t va, uint64_t length, uint32_t map_count,
			uint64_t dma, uint16_t flags, uint8_t page_log2)
{
	memset(p, 0, 45);
	rg_le64(p + 0, va);
	rg_le64(p + 8, length);
	rg_le32(p + 16, 1);
	rg_le32(p + 20, index << 8 | key);
	rg_le32(p + 24, ~0u);
	rg_le32(p + 28, map_count);
	rg_le64(p + 32, dma);
	rg_le16(p + 40, flags);
	p[44] = page_log2;
}

static void p_create_ah(uint8_t p[24], uint32_t id, uint64_t hdr, uint32_t len)
{
	memset(p, 0, 24);
	rg_le64(p + 0, hdr);
	rg_le32(p + 8, len);
	rg_le32(p + 12, 1);
	rg_le32(p + 16, id);
}

static int destroy(struct fx *f, uint8_t op, uint32_t id)
{
	uint8_t p[4];

	rg_le32(p, id);
	return admin(f, op, p, sizeof(p));
}

static int create_qp(struct fx *f, uint32_t id, uint8_t type, const struct wq *sq, const struct wq *rq)
{
	uint8_t p[64];

	p_create_qp(p, id, type, sq, rq);
	return admin(f, RG_OP_CREATE_QP, p, sizeof(p));
}

static int modify_qp(struct fx *f, uint32_t id, const struct mod *m)
{
	uint8_t p[60];

	p_modify_qp(p, id, m);
	return admin(f, RG_OP_MODIFY_QP, p, sizeof(p));
}

static int query_qp(struct fx *f, uint32_t id, uint64_t hdr, uint64_t sq, uint64_t rq)
{
	uint8_t p[34];

	p_query_qp(p, id, hdr, sq, rq);
	return admin(f, RG_OP_QUERY_QP, p, sizeof(p));
}

static int create_cq(struct fx *f, uint32_t id, uint32_t eq, uint8_t depth_log2, uint8_t stride_log2, uint8_t page_log2,
		     uint32_t map_count, uint64_t dma)
{
	uint8_t p[34];

	p_create_cq(p, id, eq, depth_log2, stride_log2, page_log2, map_count, dma);
	return admin(f, RG_OP_CREATE_CQ, p, sizeof(p));
}

static int create_mr(struct fx *f, uint32_t index, uint8_t key, uint64_t va, uint64_t length, uint32_t map_count,
		     uint64_t dma, uint16_t flags, uint8_t page_log2)
{
	uint8_t p[45];

	p_create_mr(p, index, key, va, length, map_count, dma, flags, page_log2);
	return admin(f, RG_OP_CREATE_MR, p, sizeof(p));
}

static int create_ah(struct fx *f, uint32_t id, uint64_t hdr, uint32_t len)
{
	uint8_t p[24];

	p_create_ah(p, id, hdr, len);
	return admin(f, RG_OP_CREATE_AH, p, sizeof(p));
}

static void write_page_list(struct ionic_guest *g, uint64_t at, const uint64_t *pages, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		rg_le64(guest_ptr(g, at + 8ull * i), pages[i]);
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* ---- the LIF identity ---- */

static void test_lif_identity(void **state)
{
	static const struct { uint16_t off; uint8_t qtype; uint32_t min; } blocks[] = {
		{ 424, 4, 1 }, { 436, 5, 2 }, { 448, 6, 2 }, { 460, 7, 2 }, { 472, 8, 4 },
	};
	struct ionic_guest g;
	uint8_t cmd[64] = { 20, 0, 1 }, comp[16], id[512];
	uint64_t caps;

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	/* LIF_IDENTIFY (dev_cmd 20) type classic, version 1: the identity in the data window at 0x888. */
	assert_int_equal(ionic_guest_dev_cmd(&g, cmd, comp), 0);
	assert_int_equal(comp[0], 0);
	assert_int_equal(vfc_read(&cl, BAR0, DEVCMD_DATA, id, sizeof(id)), 0);
	caps = rg_get_le32(id) | (uint64_t)rg_get_le32(id + 4) << 32;
	assert_true(caps & 0x1); /* Ethernet */
	assert_true(caps & 0x2); /* RDMA: the Ethernet driver creates the ionic.rdma aux device */
	assert_int_equal(id[392], 1);  /* rdma.version */
	assert_int_equal(id[393], 11); /* qp_opcodes: libionic refuses <= 10 for version 1 */
	assert_int_equal(id[394], 17); /* admin_opcodes: up to DESTROY_AH, no QP statistics */
	assert_int_equal(id[395], 0);  /* minor_version */
	assert_true(rg_get_le32(id + 396) > 0); /* npts_per_lif */
	assert_true(rg_get_le32(id + 400) > 1); /* nmrs_per_lif (index 0 is reserved) */
	assert_true(rg_get_le32(id + 404) > 0); /* nahs_per_lif */
	assert_int_equal(id[408], 8);  /* max_stride */
	assert_true(id[414] >= 1);     /* udma_shift */
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		const uint8_t *b = id + blocks[i].off;

		assert_int_equal(b[0], blocks[i].qtype);
		assert_true(rg_get_le32(b + 4) >= blocks[i].min);
		assert_int_equal(rg_get_le32(b + 8), 0); /* qid_base: the driver needs eq_base 0 */
	}
	/* The driver's sizing rule: log2(count / 2) > udma_shift for QPs and CQs. */
	for (int i = 1; i <= 3; i++) {
		uint32_t half = rg_get_le32(id + blocks[i].off + 4) / 2;
		int lg = 0;

		while ((1u << (lg + 1)) <= half)
			lg++;
		assert_true(lg > id[414]);
	}
	assert_int_equal(rg_get_le16(id + 484), 0); /* stats_type: no statistics commands */
	assert_alive();
	ionic_guest_teardown(&g);
}

/* ---- commands 50-53 on the Ethernet admin queue ---- */

static void test_queue_cmds(void **state)
{
	struct ionic_guest g;
	uint8_t cmd[64] = { 20, 0, 1 }, comp[16], id[512];
	uint32_t neq, ncq, naq;
	struct rg_eq eq;
	struct rg_cq cq;
	struct rg_aq aq;
	uint8_t cqe[RG_CQE_SIZE];

	(void)state;
	assert_int_equal(ionic_guest_setup(&g, &cl), 0);
	assert_int_equal(ionic_guest_dev_cmd(&g, cmd, comp), 0);
	assert_int_equal(vfc_read(&cl, BAR0, DEVCMD_DATA, id, sizeof(id)), 0);
	naq = rg_get_le32(id + 424 + 4);
	ncq = rg_get_le32(id + 460 + 4);
	neq = rg_get_le32(id + 472 + 4);

	assert_int_equal(rg_reset_lif(&g), 0);
	/* Another LIF: every opcode refused. */
	for (uint8_t op = RG_CMD_RESET_LIF; op <= RG_CMD_CREATE_ADMINQ; op++) {
		assert_true(rg_queue_cmd(&g, op, 1, 0, 2, 4, 2, RG_EQ_RING(0)) > 0);
		assert_true(rg_queue_cmd(&g, op, 0xffff, 0, 2, 4, 2, RG_EQ_RING(0)) > 0);
	}

	/* EQs: id out of range, interrupt past the 32 vectors, wrong stride, then a good one, then a duplicate. */
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, neq, 2, 4, 2, RG_EQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0xffffff, 2, 4, 2, RG_EQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0, 32, 4, 2, RG_EQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0, 0xffffffffu, 4, 2, RG_EQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0, 2, 4, 3, RG_EQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0, 2, 4, 0, RG_EQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0, 2, 17, 2, RG_EQ_RING(0)) > 0);
	assert_int_equal(rg_eq_create(&g, &eq, 0, 2, 10, RG_EQ_RING(0)), 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, 0, 3, 10, 2, RG_EQ_RING(1)) > 0);
	assert_int_equal(rg_queue_cmd(&g, RG_CMD_CREATE_EQ, 0, neq - 1, 31, 10, 2, RG_SCRATCH), 0);

	/* CQs: id out of range, a missing EQ, an EQ id out of range, wrong stride, good, duplicate. */
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, ncq, 0, 8, 5, RG_CQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, 0, 1, 8, 5, RG_CQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, 0, neq, 8, 5, RG_CQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, 0, 0xffffffffu, 8, 5, RG_CQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, 0, 0, 8, 4, RG_CQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, 0, 0, 8, 6, RG_CQ_RING(0)) > 0);
	assert_int_equal(rg_cq_create(&g, &cq, 0, 0, 8, RG_CQ_RING(0)), 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_CQ, 0, 0, 0, 8, 5, RG_CQ_RING(1)) > 0);

	/* Admin queues: id out of range, a missing CQ, a CQ id out of range, wrong stride, good, duplicate. */
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, naq, 0, 4, 6, RG_AQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, 0, 9, 4, 6, RG_AQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, 0, ncq, 4, 6, RG_AQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, 0, 0xffffffffu, 4, 6, RG_AQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, 0, 0, 4, 5, RG_AQ_RING(0)) > 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, 0, 0, 4, 7, RG_AQ_RING(0)) > 0);
	assert_int_equal(rg_aq_create(&g, &aq, 0, &cq, 4, RG_AQ_RING(0)), 0);
	assert_true(rg_queue_cmd(&g, RG_CMD_CREATE_ADMINQ, 0, 0, 0, 4, 6, RG_AQ_RING(1)) > 0);

	/* The refusals created nothing: the admin queue answers a NOOP on the CQ that was accepted. */
	assert_int_equal(rg_admin(&g, &aq, RG_OP_NOOP, NULL, 0, cqe), 0);
	check_cqe(cqe, 0, RG_OP_NOOP, 0, 0, 1);
	assert_false(rg_cq_poll(&g, &cq, cqe));

	/* RDMA_RESET_LIF forgets every queue: the old admin queue is gone, the ids are free again. */
	assert_int_equal(rg_reset_lif(&g), 0);
	rg_aq_put(&g, &aq, RG_OP_NOOP, 0, NULL, 0);
	rg_aq_ring(&g, &aq);
	rg_sync(&g);
	assert_false(rg_cq_poll(&g, &cq, cqe));
	rg_eq_close(&eq);
	assert_int_equal(rg_eq_create(&g, &eq, 0, 2, 10, RG_EQ_RING(0)), 0);
	assert_int_equal(rg_cq_create(&g, &cq, 0, 0, 8, RG_CQ_RING(0)), 0);
	assert_int_equal(rg_aq_create(&g, &aq, 0, &cq, 4, RG_AQ_RING(0)), 0);
	assert_int_equal(rg_admin(&g, &aq, RG_OP_NOOP, NULL, 0, cqe), 0);
	check_cqe(cqe, 0, RG_OP_NOOP, 0, 0, 1); /* a new queue starts at slot 0, color 1 */
	assert_alive();
	rg_eq_close(&eq);
	ionic_guest_teardown(&g);
}

/* ---- ADMIN completions ---- */

static void test_admin_cqe(void **state)
{
	struct fx f;
	uint8_t cqe[RG_CQE_SIZE], p[4];
	static const uint8_t ops[5] = { RG_OP_NOOP, RG_OP_DESTROY_CQ, RG_OP_NOOP, 99, RG_OP_NOOP };
	static const uint8_t sts[5] = { RG_ASTS_OK, RG_ASTS_BAD_STATE, RG_ASTS_OK, RG_ASTS_BAD_CMD, RG_ASTS_OK };
	struct rg_cq cq1;
	struct rg_aq aq1;
	uint32_t n;

	(void)state;
	fx_up(&f, 3, 4); /* an 8-entry CQ, a 16-slot admin queue: both wrap quickly */
	/* A NOOP: slot 0, op 0, status 0, aqid 0, type ADMIN, color 1. */
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	/* An unknown opcode: error bit, BAD_CMD in status_length, the opcode echoed. */
	assert_int_equal(admin(&f, 99, NULL, 0), RG_ASTS_BAD_CMD);
	assert_int_equal(admin(&f, RG_OP_RESIZE_CQ, NULL, 0), RG_ASTS_BAD_CMD);

	/* Five commands behind one doorbell complete in order, each naming its own first slot. */
	{
		uint32_t first[5];
		uint8_t color;

		rg_le32(p, 999); /* a CQ that does not exist */
		for (int i = 0; i < 5; i++)
			first[i] = rg_aq_put(&f.g, &f.aq, ops[i], ops[i] == RG_OP_DESTROY_CQ ? 4 : 0, p,
					     ops[i] == RG_OP_DESTROY_CQ ? 4 : 0);
		rg_aq_ring(&f.g, &f.aq);
		for (int i = 0; i < 5; i++) {
			color = f.acq.color;
			assert_true(rg_cq_wait(&f.g, &f.acq, cqe, 2000));
			check_cqe(cqe, first[i], ops[i], 0, sts[i], color);
		}
		assert_no_cqe(&f, &f.acq);
		rg_cq_ack(&f.g, &f.acq);
	}

	/* Many NOOPs: the admin ring wraps (slot numbers restart at 0) and the CQ's color flips per pass. */
	n = 8; /* CQEs so far */
	for (int i = 0; i < 40; i++, n++) {
		const uint8_t *raw = guest_ptr(&f.g, RG_CQ_RING(0) + 32ull * (n % 8));

		assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
		assert_int_equal(raw[31] & 1, (n / 8) % 2 == 0 ? 1 : 0);
	}
	/* Slots are counted exactly: 3 + 5 + 40 one-slot commands so far. */
	assert_int_equal(f.aq.prod, 48);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK); /* slot 48 % 16 = 0 checked inside */

	/* A second admin queue completes with its own id in qid_type_flags. */
	assert_int_equal(rg_cq_create(&f.g, &cq1, 1, 0, 3, RG_CQ_RING(1)), 0);
	assert_int_equal(rg_aq_create(&f.g, &aq1, 1, &cq1, 4, RG_AQ_RING(1)), 0);
	assert_int_equal(admin_on(&f, &aq1, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	assert_int_equal(admin_on(&f, &aq1, 77, NULL, 0), RG_ASTS_BAD_CMD);
	assert_no_cqe(&f, &f.acq);

	/* No CQ was armed: no event, no interrupt. */
	assert_no_eqe(&f, &f.eq);
	assert_int_equal(rg_intr_read(&f.g, f.eq.intr, INTR_CREDITS), 0);
	fx_down(&f);
}

/* ---- CREATE_CQ / DESTROY_CQ ---- */

static void test_admin_cq(void **state)
{
	struct fx f;
	struct rg_cq cq40;
	struct rg_aq aq1;
	uint64_t list = RG_SCRATCH + 0x10000, pages[4] = { RG_SCRATCH + 0x20000, RG_SCRATCH + 0x22000 };

	(void)state;
	fx_up(&f, 8, 4);
	/* Contiguous (map_count 1): dma_addr is the ring. */
	memset(guest_ptr(&f.g, RG_SCRATCH), 0, 0x1000);
	assert_int_equal(create_cq(&f, 40, 0, 6, 5, 12, 1, RG_SCRATCH), RG_ASTS_OK);
	/* Shown by completions landing there: an admin queue on that CQ. */
	rg_cq_init(&cq40, 40, 6, RG_SCRATCH);
	assert_int_equal(rg_aq_create(&f.g, &aq1, 1, &cq40, 4, RG_AQ_RING(1)), 0);
	assert_int_equal(admin_on(&f, &aq1, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	assert_int_equal(rg_cqe_qtf(guest_ptr(&f.g, RG_SCRATCH)), 1u << 8 | 1);

	/* Refusals. */
	assert_int_equal(create_cq(&f, 40, 0, 6, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_STATE); /* duplicate */
	assert_int_equal(create_cq(&f, 1024, 0, 6, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_cq(&f, 0xffffff, 0, 6, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_cq(&f, 41, 16, 6, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_INDEX);  /* EQ id */
	assert_int_equal(create_cq(&f, 41, 5, 6, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_STATE);   /* no EQ 5 */
	assert_int_equal(create_cq(&f, 41, 0, 6, 4, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_ATTR);    /* stride */
	assert_int_equal(create_cq(&f, 41, 0, 6, 5, 12, 0, RG_SCRATCH + 0x1000), RG_ASTS_BAD_ATTR);    /* no map */
	assert_int_equal(create_cq(&f, 41, 0, 17, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_BAD_ATTR);   /* depth */
	/* Paged: a page size below 4 KiB, a list that does not cover the ring, a list that is not mapped. */
	write_page_list(&f.g, list, pages, 2);
	assert_int_equal(create_cq(&f, 41, 0, 8, 5, 11, 2, list), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_cq(&f, 41, 0, 9, 5, 12, 2, list), RG_ASTS_BAD_ATTR); /* 16 KiB in 2 pages */
	assert_int_equal(create_cq(&f, 41, 0, 8, 5, 12, 2, RG_UNMAPPED), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_cq(&f, 41, 0, 8, 5, 12, 2, GUEST_IOVA + GUEST_SIZE - 8), RG_ASTS_BAD_ATTR);
	/* ... and none of them left a CQ 41 behind. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 41), RG_ASTS_BAD_STATE);

	/* DESTROY_CQ: a CQ an admin queue completes on stays; a free one goes, once; the id is reusable. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 40), RG_ASTS_BAD_STATE);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 0), RG_ASTS_BAD_STATE);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 1024), RG_ASTS_BAD_INDEX);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 0xffffffffu), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_cq(&f, 41, 0, 8, 5, 12, 2, list), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 41), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 41), RG_ASTS_BAD_STATE);
	assert_int_equal(create_cq(&f, 41, 0, 6, 5, 12, 1, RG_SCRATCH + 0x1000), RG_ASTS_OK);
	assert_int_equal(admin_on(&f, &aq1, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	fx_down(&f);
}

/*
 * A paged CQ: its page list is read once, at CREATE_CQ (the driver frees it
 * when the command completes). The list is then overwritten and an admin
 * queue is put on the CQ: its completions must land in the original pages,
 * in list order (the pages are deliberately not in address order).
 */
static void test_admin_paged_cq(void **state)
{
	struct fx f;
	struct rg_cq pcq;
	struct rg_aq aq1;
	const uint64_t list = RG_SCRATCH, a = RG_SCRATCH + 0x5000, b = RG_SCRATCH + 0x2000;
	const uint64_t decoy[2] = { RG_SCRATCH + 0x8000, RG_SCRATCH + 0xa000 };
	uint64_t pages[2] = { a, b };
	uint8_t cqe[RG_CQE_SIZE];

	(void)state;
	fx_up(&f, 8, 4);
	memset(guest_ptr(&f.g, RG_SCRATCH), 0, 0x10000);
	write_page_list(&f.g, list, pages, 2);
	/* 256 CQEs x 32 B = 8 KiB = two 4 KiB pages. */
	assert_int_equal(create_cq(&f, 50, 0, 8, 5, 12, 2, list), RG_ASTS_OK);
	write_page_list(&f.g, list, decoy, 2);
	rg_cq_init(&pcq, 50, 8, 0);
	pcq.pages[0] = a;
	pcq.pages[1] = b;
	pcq.npages = 2;
	pcq.page_shift = 12;
	assert_int_equal(rg_aq_create(&f.g, &aq1, 1, &pcq, 4, RG_AQ_RING(1)), 0);
	/* 130 commands: CQEs 0..127 fill page a, 128 and 129 start page b. */
	for (uint32_t i = 0; i < 130; i += 10) {
		uint32_t first = aq_slot(&aq1);

		for (uint32_t k = 0; k < 10; k++)
			rg_aq_put(&f.g, &aq1, RG_OP_NOOP, 0, NULL, 0);
		rg_aq_ring(&f.g, &aq1);
		for (uint32_t k = 0; k < 10; k++) {
			assert_true(rg_cq_wait(&f.g, &pcq, cqe, 2000));
			check_cqe(cqe, (first + k) & 15, RG_OP_NOOP, 1, 0, 1);
		}
		rg_cq_ack(&f.g, &pcq);
	}
	assert_int_equal(rg_cqe_cmd_idx(guest_ptr(&f.g, a)), 0);
	assert_int_equal(rg_cqe_qtf(guest_ptr(&f.g, a + 4064)), 1u << 8 | 1);
	assert_int_equal(rg_cqe_cmd_idx(guest_ptr(&f.g, a + 4064)), 127 % 16);
	assert_int_equal(rg_cqe_cmd_idx(guest_ptr(&f.g, b)), 128 % 16);
	assert_int_equal(rg_cqe_cmd_idx(guest_ptr(&f.g, b + 32)), 129 % 16);
	assert_int_equal(rg_cqe_qtf(guest_ptr(&f.g, b + 64)), 0); /* nothing beyond */
	/* The decoy pages and the memory around the list were never written. */
	assert_true(all_bytes(guest_ptr(&f.g, decoy[0]), 0x1000, 0));
	assert_true(all_bytes(guest_ptr(&f.g, decoy[1]), 0x1000, 0));
	assert_true(all_bytes(guest_ptr(&f.g, list + 16), 0x1000 - 16, 0));
	/* The CQ is in use by admin queue 1. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 50), RG_ASTS_BAD_STATE);
	fx_down(&f);
}

/* ---- QPs ---- */

static void test_admin_qp(void **state)
{
	struct fx f;
	const uint64_t sqr = RG_SCRATCH + 0x10000, rqr = RG_SCRATCH + 0x20000, list = RG_SCRATCH + 0x30000;
	const uint64_t hdr = RG_SCRATCH + 0x40000, qsq = RG_SCRATCH + 0x41000, qrq = RG_SCRATCH + 0x42000;
	const uint64_t qhdr = RG_SCRATCH + 0x43000;
	struct wq sq = { .cq = 10, .depth_log2 = 4, .stride_log2 = 6, .page_log2 = 12, .map_count = 1, .dma = sqr };
	struct wq rq = { .cq = 10, .depth_log2 = 4, .stride_log2 = 6, .page_log2 = 12, .map_count = 1, .dma = rqr };
	struct wq bad;
	struct mod m;
	uint8_t tmpl[80];
	const uint8_t *s, *r, *h;

	(void)state;
	fx_up(&f, 8, 4);
	s = guest_ptr(&f.g, qsq);
	r = guest_ptr(&f.g, qrq);
	h = guest_ptr(&f.g, qhdr);
	assert_int_equal(create_cq(&f, 10, 0, 6, 5, 12, 1, RG_SCRATCH), RG_ASTS_OK);

	/* QP 1 is the GSI QP: only UD; QP 0 is reserved. */
	assert_int_equal(create_qp(&f, 1, QPT_RC, &sq, &rq), RG_ASTS_BAD_TYPE);
	assert_int_equal(create_qp(&f, 1, QPT_UC, &sq, &rq), RG_ASTS_BAD_TYPE);
	assert_int_equal(create_qp(&f, 1, QPT_UD, &sq, &rq), RG_ASTS_OK);
	assert_int_equal(create_qp(&f, 0, QPT_UD, &sq, &rq), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_qp(&f, 1024, QPT_RC, &sq, &rq), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_qp(&f, 0xffffff, QPT_RC, &sq, &rq), RG_ASTS_BAD_INDEX);
	/* Types the device does not do: RD, an unknown one. */
	assert_int_equal(create_qp(&f, 5, QPT_RD, &sq, &rq), RG_ASTS_BAD_TYPE);
	assert_int_equal(create_qp(&f, 5, 0x7f, &sq, &rq), RG_ASTS_BAD_TYPE);
	/* A missing CQ (on either side), a CQ id out of range, a stride below 64 B, an unmapped page list. */
	bad = sq;
	bad.cq = 11;
	assert_int_equal(create_qp(&f, 5, QPT_RC, &bad, &rq), RG_ASTS_BAD_STATE);
	assert_int_equal(create_qp(&f, 5, QPT_RC, &sq, &bad), RG_ASTS_BAD_STATE);
	bad.cq = 5000;
	assert_int_equal(create_qp(&f, 5, QPT_RC, &bad, &rq), RG_ASTS_BAD_INDEX);
	bad = sq;
	bad.stride_log2 = 5;
	assert_int_equal(create_qp(&f, 5, QPT_RC, &bad, &rq), RG_ASTS_BAD_ATTR);
	bad = sq;
	bad.map_count = 2;
	bad.dma = RG_UNMAPPED;
	assert_int_equal(create_qp(&f, 5, QPT_RC, &bad, &rq), RG_ASTS_BAD_ATTR);
	bad.depth_log2 = 8; /* 16 KiB in two pages */
	bad.dma = list;
	write_page_list(&f.g, list, (const uint64_t[]){ sqr, sqr + 0x1000 }, 2);
	assert_int_equal(create_qp(&f, 5, QPT_RC, &bad, &rq), RG_ASTS_BAD_ATTR);
	/* An RC QP, with a paged send queue; a duplicate; a UC QP without a receive queue. */
	bad.depth_log2 = 7;
	assert_int_equal(create_qp(&f, 5, QPT_RC, &bad, &rq), RG_ASTS_OK);
	assert_int_equal(create_qp(&f, 5, QPT_RC, &sq, &rq), RG_ASTS_BAD_STATE);
	assert_int_equal(create_qp(&f, 6, QPT_UC, &sq, NULL), RG_ASTS_OK);

	/* A fresh QP queries as RESET with nothing set; no header template is written. */
	memset(guest_ptr(&f.g, qsq), 0xee, 0x3000);
	memset(guest_ptr(&f.g, qhdr), 0xee, 0x100);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(r[0] >> 4, QPS_RESET);
	assert_true(all_bytes(s, 20, 0));
	assert_int_equal(r[0], 0);
	assert_true(all_bytes(r + 1, 11, 0));
	assert_true(all_bytes(h, 0x100, 0xee));

	/* RESET -> INIT -> RTR -> RTS, as ib_modify_qp sends it for an RC QP. */
	for (int i = 0; i < 62; i++)
		tmpl[i] = (uint8_t)(0x30 + i * 7);
	memcpy(guest_ptr(&f.g, hdr), tmpl, 62);
	m = (struct mod){ .mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_ACCESS_FLAGS,
			  .access = QPF_PRIVILEGED | 0x3, .state = QPS_INIT, .cur = QPS_RESET };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);
	m = (struct mod){ .mask = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				  IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER,
			  .access = QPF_PRIVILEGED, .pmtu = 3 + 7 /* IB_MTU_1024 */, .qkey_dest = 0x123456,
			  .rq_psn = 0xabcdef, .rsq_depth = 3, .rnr_timer = 12, .ah_id_len = 7u | 62u << 24, .hdr = hdr,
			  .state = QPS_RTR, .cur = QPS_INIT };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);
	memset(guest_ptr(&f.g, hdr), 0, 62); /* the driver frees the template when the command completes */
	m = (struct mod){ .mask = IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				  IB_QP_MAX_QP_RD_ATOMIC,
			  .access = QPF_PRIVILEGED, .sq_psn = 0x13579b, .timeout = 14, .retry = 7 | 6 << 4,
			  .rrq_depth = 2, .qkey_dest = 0x123456, .state = QPS_RTS, .cur = QPS_RTR };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);

	/* QUERY_QP: 20 bytes of sq info, 12 of rq info, the template; nothing past them. */
	memset(guest_ptr(&f.g, qsq), 0xee, 0x3000);
	memset(guest_ptr(&f.g, qhdr), 0xee, 0x100);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(s[0], 12);                             /* rnr_timer */
	assert_int_equal(s[1], 14);                             /* retry_timeout */
	assert_int_equal(rg_get_be16(s + 4), 0);                /* reserved */
	assert_int_equal(rg_get_be16(s + 6), 0);                /* pkey_id */
	assert_int_equal(rg_get_be32(s + 8), 0x123456);         /* dest_qpn (RC) */
	assert_int_equal(rg_get_be32(s + 12), 0);               /* rate_limit_kbps */
	assert_int_equal(rg_get_be32(s + 16), 0xabcdef);        /* rq_psn */
	assert_int_equal(r[0] >> 4, QPS_RTS);                   /* state */
	assert_int_equal(r[0] & 0xf, 10);                       /* pmtu */
	assert_int_equal(r[1], 0x67);                           /* retry | rnr_retry << 4 */
	assert_int_equal(r[2], 2);                              /* rrq_depth */
	assert_int_equal(r[3], 3);                              /* rsq_depth */
	assert_int_equal(rg_get_be32(r + 4), 0x13579b);         /* sq_psn */
	/* The driver ORs the two access words. */
	assert_int_equal(rg_get_be16(s + 2) | rg_get_be16(r + 8), QPF_PRIVILEGED | 0x3);
	assert_true(all_bytes(s + 20, 0x1000 - 20, 0xee));
	assert_true(all_bytes(r + 12, 0x1000 - 12, 0xee));
	assert_memory_equal(h, tmpl, 62);                       /* the device kept its own copy */
	assert_true(all_bytes(h + 62, 0x100 - 62, 0xee));

	/*
	 * RTS -> RTS changing one retry count. The driver packs both counts into
	 * one byte whatever the mask says, the other one from whatever the caller
	 * left in its ib_qp_attr (0 here); only the masked nibble may change.
	 */
	m = (struct mod){ .mask = IB_QP_RNR_RETRY, .retry = 0 | 5 << 4, .state = QPS_RTS, .cur = QPS_RTS };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);
	assert_int_equal(query_qp(&f, 5, 0, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(r[1] >> 4, 5);
	assert_int_equal(r[1], 0x57); /* the retry count outside the mask is kept */
	m = (struct mod){ .mask = IB_QP_RETRY_CNT, .retry = 3 | 0 << 4, .state = QPS_RTS, .cur = QPS_RTS };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);
	assert_int_equal(query_qp(&f, 5, 0, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(r[1] & 0xf, 3);
	assert_int_equal(r[1], 0x53);
	assert_int_equal(r[0] >> 4, QPS_RTS);

	/* A template longer than the device holds, or unmapped: refused, the QP unchanged. */
	m = (struct mod){ .mask = IB_QP_AV, .ah_id_len = 7u | 81u << 24, .hdr = hdr };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_BAD_ATTR);
	m = (struct mod){ .mask = IB_QP_AV, .ah_id_len = 7u | 40u << 24, .hdr = RG_UNMAPPED };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_BAD_ATTR);
	m = (struct mod){ .mask = IB_QP_AV, .ah_id_len = 7u | 40u << 24, .hdr = GUEST_IOVA + GUEST_SIZE - 20 };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_BAD_ATTR);
	/* A state past ERR: refused before anything else in the command is taken. */
	m = (struct mod){ .mask = IB_QP_STATE | IB_QP_SQ_PSN, .sq_psn = 1, .state = 7, .cur = QPS_RTS };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_BAD_ATTR);
	memset(guest_ptr(&f.g, qhdr), 0xee, 0x100);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(r[0] >> 4, QPS_RTS);
	assert_int_equal(rg_get_be32(r + 4), 0x13579b);
	assert_memory_equal(h, tmpl, 62);
	assert_true(all_bytes(h + 62, 0x100 - 62, 0xee));
	/* A new template of another length replaces the old one. */
	memcpy(guest_ptr(&f.g, hdr), tmpl + 10, 42);
	m = (struct mod){ .mask = IB_QP_AV, .ah_id_len = 8u | 42u << 24, .hdr = hdr };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);
	memset(guest_ptr(&f.g, qhdr), 0xee, 0x100);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_memory_equal(h, tmpl + 10, 42);
	assert_int_equal(h[42], 0xee);
	/* Query buffers the device cannot write; a header address of 0 (no template wanted). */
	assert_int_equal(query_qp(&f, 5, qhdr, RG_UNMAPPED, qrq), RG_ASTS_BAD_ATTR);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, RG_UNMAPPED), RG_ASTS_BAD_ATTR);
	assert_int_equal(query_qp(&f, 5, 0, qsq, qrq), RG_ASTS_OK);

	/* The GSI QP: INIT with the GSI qkey, RTR, RTS; the qkey is what sq info carries for UD. */
	m = (struct mod){ .mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_QKEY, .qkey_dest = 0x80010000u,
			  .access = QPF_PRIVILEGED, .state = QPS_INIT, .cur = QPS_RESET };
	assert_int_equal(modify_qp(&f, 1, &m), RG_ASTS_OK);
	m = (struct mod){ .mask = IB_QP_STATE, .qkey_dest = 0x80010000u, .state = QPS_RTR, .cur = QPS_INIT };
	assert_int_equal(modify_qp(&f, 1, &m), RG_ASTS_OK);
	m = (struct mod){ .mask = IB_QP_STATE | IB_QP_SQ_PSN, .qkey_dest = 0x80010000u, .sq_psn = 0x42,
			  .state = QPS_RTS, .cur = QPS_RTR };
	assert_int_equal(modify_qp(&f, 1, &m), RG_ASTS_OK);
	memset(guest_ptr(&f.g, qsq), 0xee, 0x3000);
	assert_int_equal(query_qp(&f, 1, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(r[0] >> 4, QPS_RTS);
	assert_int_equal(rg_get_be32(s + 8), 0x80010000u);
	assert_int_equal(rg_get_be32(r + 4), 0x42);

	/* Missing and out-of-range QPs. */
	m = (struct mod){ .mask = IB_QP_STATE, .state = QPS_INIT };
	assert_int_equal(modify_qp(&f, 77, &m), RG_ASTS_BAD_STATE);
	assert_int_equal(modify_qp(&f, 5000, &m), RG_ASTS_BAD_INDEX);
	assert_int_equal(query_qp(&f, 77, qhdr, qsq, qrq), RG_ASTS_BAD_STATE);
	assert_int_equal(query_qp(&f, 1024, qhdr, qsq, qrq), RG_ASTS_BAD_INDEX);

	/* Back to RESET. */
	m = (struct mod){ .mask = IB_QP_STATE, .state = QPS_RESET, .cur = QPS_RTS };
	assert_int_equal(modify_qp(&f, 5, &m), RG_ASTS_OK);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_int_equal(r[0] >> 4, QPS_RESET);

	/* DESTROY_QP: once; then the id is free and a new QP there starts from scratch. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 5), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 5), RG_ASTS_BAD_STATE);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_BAD_STATE);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 1024), RG_ASTS_BAD_INDEX);
	assert_true(destroy(&f, RG_OP_DESTROY_QP, 0) != RG_ASTS_OK);
	assert_int_equal(create_qp(&f, 5, QPT_RC, &sq, &rq), RG_ASTS_OK);
	memset(guest_ptr(&f.g, qsq), 0xee, 0x3000);
	memset(guest_ptr(&f.g, qhdr), 0xee, 0x100);
	assert_int_equal(query_qp(&f, 5, qhdr, qsq, qrq), RG_ASTS_OK);
	assert_true(all_bytes(s, 20, 0));
	assert_true(all_bytes(r, 12, 0));
	assert_true(all_bytes(h, 0x100, 0xee));
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 5), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 6), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 1), RG_ASTS_OK);
	/* With its QPs gone, the CQ can go too. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_CQ, 10), RG_ASTS_OK);
	fx_down(&f);
}

/* ---- MRs ---- */

static void test_admin_mr(void **state)
{
	struct fx f;
	const uint64_t list = RG_SCRATCH;
	const uint64_t pages[3] = { RG_SCRATCH + 0x3000, RG_SCRATCH + 0x1000, RG_SCRATCH + 0x7000 };

	(void)state;
	fx_up(&f, 8, 4);
	write_page_list(&f.g, list, pages, 3);
	/* map_count 1: dma_addr is the bus address of va. */
	assert_int_equal(create_mr(&f, 1, 0x11, 0x7000000010ull, 0x2000, 1, RG_SCRATCH + 0x10010, 0x7, 12), RG_ASTS_OK);
	/* A page list: va 0x100 into its first page, 3 pages cover 12 KiB - 0x100. */
	assert_int_equal(create_mr(&f, 2, 0x22, 0x400100, 0x3000 - 0x100, 3, list, 0x1, 12), RG_ASTS_OK);
	write_page_list(&f.g, list, (const uint64_t[]){ 0, 0, 0 }, 3); /* the driver frees the list */
	/* Fast registration (ib_alloc_mr): no pages yet, flags INV_EN | UKEY_EN. */
	assert_int_equal(create_mr(&f, 3, 0x33, 0, 0, 0, 0, 0xa000, 12), RG_ASTS_OK);
	/* Index 0 is reserved (lkey 0 is the privileged DMA key); indexes past the table; a duplicate. */
	assert_int_equal(create_mr(&f, 0, 0x44, 0, 0x1000, 1, RG_SCRATCH, 0x1, 12), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_mr(&f, 2048, 0x44, 0, 0x1000, 1, RG_SCRATCH, 0x1, 12), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_mr(&f, 0xffffff, 0x44, 0, 0x1000, 1, RG_SCRATCH, 0x1, 12), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_mr(&f, 2, 0x44, 0, 0x1000, 1, RG_SCRATCH, 0x1, 12), RG_ASTS_BAD_STATE);
	/* Lists that do not cover [va, va + length): one byte over, and by the in-page offset of va. */
	write_page_list(&f.g, list, pages, 3);
	assert_int_equal(create_mr(&f, 4, 0x44, 0x400000, 0x3001, 3, list, 0x1, 12), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_mr(&f, 4, 0x44, 0x400100, 0x3000, 3, list, 0x1, 12), RG_ASTS_BAD_ATTR);
	/* A page size the device does not take; a list it cannot read; more entries than it holds. */
	assert_int_equal(create_mr(&f, 4, 0x44, 0x400000, 0x1000, 3, list, 0x1, 11), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_mr(&f, 4, 0x44, 0x400000, 0x3000, 3, RG_UNMAPPED, 0x1, 12), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_mr(&f, 4, 0x44, 0x400000, 0x3000, 3, GUEST_IOVA + GUEST_SIZE - 16, 0x1, 12),
			 RG_ASTS_BAD_ATTR);
	assert_int_equal(create_mr(&f, 4, 0x44, 0, 0x1000, 0x7fffffffu, list, 0x1, 12), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_mr(&f, 4, 0x44, 0, 0x1000, 0xffffffffu, list, 0x1, 30), RG_ASTS_BAD_ATTR);
	/* None of the refusals left an MR 4; it can be created and destroyed now. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_MR, 4u << 8 | 0x44), RG_ASTS_BAD_STATE);
	assert_int_equal(create_mr(&f, 4, 0x44, 0x400000, 0x3000, 3, list, 0x1, 12), RG_ASTS_OK);
	/* A memory window (MW1: IS_MW | UKEY_EN). */
	assert_int_equal(create_mr(&f, 5, 0x55, 0, 0, 0, 0, 0x6000, 12), RG_ASTS_OK);

	/* DESTROY_MR names the MR by its key (index << 8 | key): once each; then the index is free. */
	for (uint32_t i = 1; i <= 5; i++)
		assert_int_equal(destroy(&f, RG_OP_DESTROY_MR, i << 8 | i * 0x11), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_MR, 2u << 8 | 0x22), RG_ASTS_BAD_STATE);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_MR, 0), RG_ASTS_BAD_INDEX);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_MR, 2048u << 8), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_mr(&f, 2, 0x23, 0x400100, 0x1000, 1, RG_SCRATCH, 0x1, 12), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_MR, 2u << 8 | 0x23), RG_ASTS_OK);
	fx_down(&f);
}

/* ---- AHs ---- */

static void test_admin_ah(void **state)
{
	struct fx f;
	const uint64_t hdr = RG_SCRATCH;

	(void)state;
	fx_up(&f, 8, 4);
	for (int i = 0; i < 80; i++)
		((uint8_t *)guest_ptr(&f.g, hdr))[i] = (uint8_t)i;
	assert_int_equal(create_ah(&f, 3, hdr, 42), RG_ASTS_OK);   /* Ethernet + IPv4 + UDP */
	assert_int_equal(create_ah(&f, 4, hdr, 66), RG_ASTS_OK);   /* Ethernet + VLAN + IPv6 + UDP */
	assert_int_equal(create_ah(&f, 3, hdr, 42), RG_ASTS_BAD_STATE);
	assert_int_equal(create_ah(&f, 1024, hdr, 42), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_ah(&f, 5, hdr, 81), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_ah(&f, 5, hdr, 0xffffffffu), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_ah(&f, 5, RG_UNMAPPED, 42), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_ah(&f, 5, GUEST_IOVA + GUEST_SIZE - 10, 42), RG_ASTS_BAD_ATTR);
	/* None of those made AH 5. */
	assert_int_equal(destroy(&f, RG_OP_DESTROY_AH, 5), RG_ASTS_BAD_STATE);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_AH, 3), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_AH, 3), RG_ASTS_BAD_STATE);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_AH, 4), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_AH, 1024), RG_ASTS_BAD_INDEX);
	assert_int_equal(create_ah(&f, 3, hdr, 42), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_AH, 3), RG_ASTS_OK);
	fx_down(&f);
}

/* ---- slot accounting and the ring's wrap point ---- */

static void test_admin_slots_and_wrap(void **state)
{
	struct fx f;
	struct wq sq = { .cq = 10, .depth_log2 = 4, .stride_log2 = 6, .map_count = 1, .dma = RG_SCRATCH + 0x10000 };
	uint8_t p[64];
	struct mod m = { .mask = IB_QP_STATE, .state = QPS_INIT };

	(void)state;
	fx_up(&f, 8, 4);
	assert_int_equal(create_cq(&f, 10, 0, 6, 5, 12, 1, RG_SCRATCH), RG_ASTS_OK); /* 1 slot */
	assert_int_equal(aq_slot(&f.aq), 1);
	/* 4 + 64 bytes: two slots; 4 + 60: one; 4 + 45: one. The next command's slot proves it. */
	assert_int_equal(create_qp(&f, 20, QPT_RC, &sq, &sq), RG_ASTS_OK);
	assert_int_equal(aq_slot(&f.aq), 3);
	assert_int_equal(modify_qp(&f, 20, &m), RG_ASTS_OK);
	assert_int_equal(create_mr(&f, 9, 0, 0, 0x1000, 1, RG_SCRATCH, 0x1, 12), RG_ASTS_OK);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK); /* checks cmd_idx 5 */

	/* Walk to the last slot of the 16-slot ring. */
	while (aq_slot(&f.aq) != 15)
		assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	/*
	 * A 64-byte CREATE_QP in slot 15 whose second half (dbid, type) is in
	 * slot 0. Past the ring's end lies a slot that would make it RC, which
	 * QP 1 refuses: only a device that wraps to slot 0 creates it.
	 */
	memset(guest_ptr(&f.g, RG_AQ_RING(0) + 16 * 64), QPT_RC, 64);
	p_create_qp(p, 1, QPT_UD, &sq, &sq);
	assert_int_equal(admin(&f, RG_OP_CREATE_QP, p, sizeof(p)), RG_ASTS_OK); /* cmd_idx 15 */
	assert_int_equal(((uint8_t *)guest_ptr(&f.g, RG_AQ_RING(0)))[2], QPT_UD); /* it really was in slot 0 */
	assert_int_equal(aq_slot(&f.aq), 1);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK); /* cmd_idx 1 */
	assert_int_equal(query_qp(&f, 1, 0, RG_SCRATCH + 0x20000, RG_SCRATCH + 0x21000), RG_ASTS_OK);

	/* Four slots from slot 14 (14, 15, 0, 1): the next command is in slot 2. */
	while (aq_slot(&f.aq) != 14)
		assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 200), RG_ASTS_OK);
	assert_int_equal(aq_slot(&f.aq), 2);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK); /* cmd_idx 2 */
	/* A too-long command across the wrap is refused and consumes its five slots (13 .. 1). */
	while (aq_slot(&f.aq) != 13)
		assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	assert_int_equal(admin(&f, RG_OP_CREATE_MR, NULL, 290), RG_ASTS_MSG_TOO_BIG);
	assert_int_equal(aq_slot(&f.aq), 2);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	fx_down(&f);
}

/* ---- hostile admin commands ---- */

static void test_hostile_admin(void **state)
{
	static const uint8_t unknown[] = { RG_OP_RESIZE_CQ, 17, 18, 19, 100, 255 };
	static const struct { uint8_t op; uint16_t len; } short_cmds[] = {
		{ RG_OP_CREATE_CQ, 33 }, { RG_OP_CREATE_QP, 63 }, { RG_OP_CREATE_MR, 44 }, { RG_OP_MODIFY_QP, 59 },
		{ RG_OP_QUERY_QP, 33 }, { RG_OP_CREATE_AH, 23 }, { RG_OP_DESTROY_CQ, 3 }, { RG_OP_DESTROY_QP, 0 },
		{ RG_OP_DESTROY_MR, 2 }, { RG_OP_DESTROY_AH, 1 },
	};
	struct fx f;
	struct wq sq = { .cq = 10, .depth_log2 = 4, .stride_log2 = 6, .map_count = 1, .dma = RG_SCRATCH + 0x10000 };
	uint8_t p[64], cqe[RG_CQE_SIZE], color;
	uint32_t first;

	(void)state;
	fx_up(&f, 8, 4);
	assert_int_equal(create_cq(&f, 10, 0, 6, 5, 12, 1, RG_SCRATCH), RG_ASTS_OK);

	for (size_t i = 0; i < sizeof(unknown); i++)
		assert_int_equal(admin(&f, unknown[i], NULL, 0), RG_ASTS_BAD_CMD);

	/* Payloads shorter than the command's structure: refused, even when the bytes would do. */
	p_create_qp(p, 30, QPT_RC, &sq, &sq);
	for (size_t i = 0; i < sizeof(short_cmds) / sizeof(short_cmds[0]); i++)
		assert_int_equal(admin(&f, short_cmds[i].op, p, short_cmds[i].len), RG_ASTS_BAD_ATTR);
	assert_int_equal(create_qp(&f, 30, QPT_RC, &sq, &sq), RG_ASTS_OK); /* the short one made nothing */

	/* The longest payload taken: 252 bytes, four slots (NOOP ignores it). */
	first = aq_slot(&f.aq);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 252), RG_ASTS_OK);
	assert_int_equal(aq_slot(&f.aq), (first + 4) & 15);
	/* Longer: MSG_TOO_BIG, and exactly the slots the length claims are consumed. */
	first = aq_slot(&f.aq);
	assert_int_equal(admin(&f, RG_OP_CREATE_QP, NULL, 253), RG_ASTS_MSG_TOO_BIG);
	assert_int_equal(aq_slot(&f.aq), (first + 5) & 15);
	first = aq_slot(&f.aq);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 300), RG_ASTS_MSG_TOO_BIG);
	assert_int_equal(aq_slot(&f.aq), (first + 5) & 15);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK); /* its cmd_idx is first + 5 */

	/* A length claiming more slots than the ring has: what was posted is consumed and refused. */
	color = f.acq.color;
	first = rg_aq_put(&f.g, &f.aq, RG_OP_CREATE_QP, 0xffff, p, 60);
	rg_aq_ring(&f.g, &f.aq);
	assert_true(rg_cq_wait(&f.g, &f.acq, cqe, 2000));
	check_cqe(cqe, first, RG_OP_CREATE_QP, 0, RG_ASTS_MSG_TOO_BIG, color);
	rg_cq_ack(&f.g, &f.acq);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK); /* at first + 1 */

	/*
	 * The same on a 4-slot ring with a length within 252 bytes (200: four
	 * slots, which a 4-slot ring can never hold). The three posted slots
	 * carry a complete, valid CREATE_QP for QP 31: it must be refused, not
	 * executed from a truncated command.
	 */
	{
		uint8_t big[60 + 64 + 64] = { 0 };
		struct rg_cq cq1;
		struct rg_aq aq1;
		int st;

		assert_int_equal(rg_cq_create(&f.g, &cq1, 1, 0, 4, RG_CQ_RING(1)), 0);
		assert_int_equal(rg_aq_create(&f.g, &aq1, 1, &cq1, 2, RG_AQ_RING(1)), 0);
		p_create_qp(big, 31, QPT_UD, &sq, &sq);
		first = rg_aq_put(&f.g, &aq1, RG_OP_CREATE_QP, 200, big, sizeof(big)); /* slots 0, 1, 2 */
		rg_aq_ring(&f.g, &aq1);
		assert_true(rg_cq_wait(&f.g, &cq1, cqe, 2000));
		assert_int_equal(rg_cqe_cmd_idx(cqe), first);
		st = (int)rg_cqe_status(cqe);
		/* Longer than the ring: refused, and nothing was created. */
		assert_int_equal(st, RG_ASTS_MSG_TOO_BIG);
		assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 31), RG_ASTS_BAD_STATE);
		rg_cq_ack(&f.g, &cq1);
		/* Either way the small queue carries on in slot 3, after what was consumed. */
		assert_int_equal(admin_on(&f, &aq1, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	}

	/* A two-slot command whose second slot is not posted yet: the device waits for it. */
	color = f.acq.color;
	p_create_qp(p, 32, QPT_RC, &sq, &sq);
	first = rg_aq_put(&f.g, &f.aq, RG_OP_CREATE_QP, 64, p, 64);
	rg_db(&f.g, RG_QTYPE_AQ, 0, 0, (first + 1) & 15);
	assert_no_cqe(&f, &f.acq);
	rg_aq_ring(&f.g, &f.aq);
	assert_true(rg_cq_wait(&f.g, &f.acq, cqe, 2000));
	check_cqe(cqe, first, RG_OP_CREATE_QP, 0, RG_ASTS_OK, color);
	rg_cq_ack(&f.g, &f.acq);
	fx_down(&f);
}

/* ---- hostile doorbells ---- */

static void test_hostile_doorbells(void **state)
{
	struct fx f;
	struct wq sq = { .cq = 10, .depth_log2 = 4, .stride_log2 = 6, .map_count = 1, .dma = RG_SCRATCH + 0x10000 };
	uint8_t cqe[RG_CQE_SIZE];
	uint32_t head, n = 0;
	uint64_t v = 0x0102030405060708ull;

	(void)state;
	fx_up(&f, 8, 4);
	assert_int_equal(create_cq(&f, 10, 0, 6, 5, 12, 1, RG_SCRATCH), RG_ASTS_OK);
	assert_int_equal(create_qp(&f, 6, QPT_UC, &sq, NULL), RG_ASTS_OK); /* no receive queue */
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);

	/* Arm the admin CQ: any stray completion would also show up as an event. */
	rg_cq_arm(&f.g, &f.acq, 1, 1);
	/* Admin queues that do not exist. */
	rg_db(&f.g, RG_QTYPE_AQ, 1, 0, 1);
	rg_db(&f.g, RG_QTYPE_AQ, 2, 0, 1);
	rg_db(&f.g, RG_QTYPE_AQ, 0xffffff, 7, 0xffff);
	/* CQs that do not exist, and rings a CQ does not have. */
	rg_db(&f.g, RG_QTYPE_CQ, 999, 1, 0);
	rg_db(&f.g, RG_QTYPE_CQ, 1024, 1, 0);
	rg_db(&f.g, RG_QTYPE_CQ, 0xffffff, 0, 5);
	for (uint32_t ring = 3; ring < 8; ring++)
		rg_db(&f.g, RG_QTYPE_CQ, 10, ring, 1);
	/* QPs that do not exist (0 is reserved), a receive queue QP 6 does not have. */
	for (uint32_t qt = RG_QTYPE_SQ; qt <= RG_QTYPE_RQ; qt++) {
		rg_db(&f.g, qt, 0, 0, 1);
		rg_db(&f.g, qt, 77, 0, 1);
		rg_db(&f.g, qt, 1024, 0, 1);
		rg_db(&f.g, qt, 0xffffff, 3, 0xffff);
	}
	rg_db(&f.g, RG_QTYPE_RQ, 6, 0, 1);
	/* EQs have no doorbell; qtypes nobody uses. */
	rg_db(&f.g, RG_QTYPE_EQ, 0, 0, 1);
	for (uint32_t qt = 9; qt <= 15; qt++) {
		rg_db(&f.g, qt, 0, 0, 1);
		rg_db(&f.g, qt, 0xffffff, 7, 0xffff);
	}
	/* Doorbell writes of the wrong width, and one on another doorbell page. */
	vfc_write(&cl, BAR2, 8 * RG_QTYPE_AQ, &v, 4, true);
	vfc_write(&cl, BAR2, 8 * RG_QTYPE_AQ + 4, &v, 4, true);
	vfc_write(&cl, BAR2, 8 * RG_QTYPE_AQ + 1, &v, 2, true);
	v = 1;
	vfc_write(&cl, BAR2, 4096 + 8 * RG_QTYPE_AQ, &v, 8, true);
	assert_no_cqe(&f, &f.acq);
	assert_no_eqe(&f, &f.eq);

	/* An index past the ring that names the current position once reduced: nothing to run. */
	head = aq_slot(&f.aq);
	rg_db(&f.g, RG_QTYPE_AQ, 0, 0, head + 16);
	rg_db(&f.g, RG_QTYPE_AQ, 0, 0, head + 32);
	assert_no_cqe(&f, &f.acq);
	assert_no_eqe(&f, &f.eq);
	/*
	 * 0xffff: a device may ignore it (as the Ethernet queues do) or take it
	 * modulo the ring (slot 15). With every slot a zeroed NOOP, either is
	 * harmless: completions, if any, are NOOPs in order from the head.
	 */
	assert_int_not_equal(head, 15);
	memset(guest_ptr(&f.g, RG_AQ_RING(0)), 0, 16 * 64);
	rg_db(&f.g, RG_QTYPE_AQ, 0, 0, 0xffff);
	rg_sync(&f.g);
	while (rg_cq_poll(&f.g, &f.acq, cqe)) {
		assert_int_equal(rg_cqe_cmd_idx(cqe), (head + n) & 15);
		assert_int_equal(rg_cqe_cmd_op(cqe), RG_OP_NOOP);
		assert_int_equal(rg_cqe_status(cqe), 0);
		n++;
	}
	assert_true(n == 0 || n == 15 - head);
	f.aq.prod += n;
	if (n) { /* the CQ was armed */
		uint32_t evt;

		assert_true(rg_eq_poll(&f.g, &f.eq, &evt));
		assert_int_equal(evt, 0u << 8 | 1);
		assert_int_equal(rg_eq_wait_irq(&f.eq, 1000), 1);
		rg_eq_rearm(&f.g, &f.eq, 1);
	}
	rg_cq_ack(&f.g, &f.acq);

	/* After all that, commands work, complete where expected, and QP 6 is intact. */
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	assert_int_equal(query_qp(&f, 6, 0, RG_SCRATCH + 0x20000, RG_SCRATCH + 0x21000), RG_ASTS_OK);
	assert_int_equal(destroy(&f, RG_OP_DESTROY_QP, 6), RG_ASTS_OK);
	fx_down(&f);
}

/* ---- queues in memory the device cannot reach ---- */

static void test_unmapped_queues(void **state)
{
	struct fx f;
	struct rg_eq eq1;
	struct rg_cq cq1, cqe_end, nowhere;
	struct rg_aq aq1, aq_end;
	const uint64_t end = GUEST_IOVA + GUEST_SIZE;
	uint8_t cqe[RG_CQE_SIZE];
	int st;

	(void)state;
	fx_up(&f, 8, 4);
	/* An admin queue whose ring is nowhere: the device may accept it; its doorbell then reads nothing. */
	assert_int_equal(rg_cq_create(&f.g, &cq1, 1, 0, 4, RG_CQ_RING(1)), 0);
	st = rg_queue_cmd(&f.g, RG_CMD_CREATE_ADMINQ, 0, 1, 1, 4, 6, RG_UNMAPPED);
	assert_true(st >= 0);
	if (st == 0) {
		rg_db(&f.g, RG_QTYPE_AQ, 1, 0, 1);
		rg_db(&f.g, RG_QTYPE_AQ, 1, 0, 5);
		assert_no_cqe(&f, &cq1);
	}
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);

	/* A CQ whose ring is nowhere: commands on the admin queue that completes there get no CQE anywhere. */
	assert_int_equal(rg_reset_lif(&f.g), 0);
	assert_int_equal(rg_queue_cmd(&f.g, RG_CMD_CREATE_EQ, 0, 0, 2, 10, 2, RG_EQ_RING(0)), 0);
	assert_int_equal(rg_queue_cmd(&f.g, RG_CMD_CREATE_CQ, 0, 0, 0, 4, 5, RG_UNMAPPED), 0);
	rg_cq_init(&nowhere, 0, 4, RG_UNMAPPED);
	assert_int_equal(rg_aq_create(&f.g, &aq1, 0, &nowhere, 4, RG_AQ_RING(0)), 0);
	for (int i = 0; i < 3; i++) {
		rg_aq_put(&f.g, &aq1, RG_OP_NOOP, 0, NULL, 0);
		rg_aq_ring(&f.g, &aq1);
	}
	rg_db(&f.g, RG_QTYPE_CQ, 0, 1, 0); /* arm: there are completions the guest never saw */
	rg_db(&f.g, RG_QTYPE_CQ, 0, 0, 3);
	rg_sync(&f.g);
	assert_alive();

	/* An EQ whose ring is nowhere: an armed CQ's event cannot be written; the CQE still is. */
	assert_int_equal(rg_reset_lif(&f.g), 0);
	assert_int_equal(rg_eq_create(&f.g, &eq1, 1, 3, 4, RG_UNMAPPED), 0);
	assert_int_equal(rg_cq_create(&f.g, &cq1, 0, 1, 4, RG_CQ_RING(0)), 0);
	assert_int_equal(rg_aq_create(&f.g, &aq1, 0, &cq1, 4, RG_AQ_RING(0)), 0);
	rg_cq_arm(&f.g, &cq1, 1, 0);
	assert_int_equal(rg_admin(&f.g, &aq1, RG_OP_NOOP, NULL, 0, cqe), 0);
	check_cqe(cqe, 0, RG_OP_NOOP, 0, 0, 1);
	rg_eq_close(&eq1);

	/*
	 * Rings that run off the end of guest memory: an admin ring with two
	 * reachable slots, a CQ with two reachable entries.
	 */
	assert_int_equal(rg_reset_lif(&f.g), 0);
	assert_int_equal(rg_queue_cmd(&f.g, RG_CMD_CREATE_EQ, 0, 0, 2, 10, 2, RG_EQ_RING(0)), 0);
	assert_int_equal(rg_cq_create(&f.g, &cqe_end, 0, 0, 3, end - 2 * RG_CQE_SIZE), 0);
	assert_int_equal(rg_cq_create(&f.g, &cq1, 1, 0, 4, RG_CQ_RING(1)), 0);
	assert_int_equal(rg_aq_create(&f.g, &aq_end, 0, &cq1, 4, end - 2 * RG_AQ_STRIDE), 0);
	assert_int_equal(rg_aq_create(&f.g, &aq1, 1, &cqe_end, 4, RG_AQ_RING(1)), 0);
	/* AQ 0: a NOOP in slot 0, then a two-slot command in slots 1 (reachable) and 2 (not). */
	assert_int_equal(rg_admin(&f.g, &aq_end, RG_OP_NOOP, NULL, 0, cqe), 0);
	check_cqe(cqe, 0, RG_OP_NOOP, 0, 0, 1);
	memset(guest_ptr(&f.g, end - RG_AQ_STRIDE), 0, RG_AQ_STRIDE);
	((uint8_t *)guest_ptr(&f.g, end - RG_AQ_STRIDE))[0] = RG_OP_CREATE_QP;
	rg_le16(guest_ptr(&f.g, end - RG_AQ_STRIDE + 2), 64);
	rg_db(&f.g, RG_QTYPE_AQ, 0, 0, 3);
	rg_db(&f.g, RG_QTYPE_AQ, 0, 0, 5);
	assert_no_cqe(&f, &cq1);
	/* AQ 1 on the CQ at the end: two completions land, the third has nowhere to go. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rg_admin(&f.g, &aq1, RG_OP_NOOP, NULL, 0, cqe), 0);
		check_cqe(cqe, (uint32_t)i, RG_OP_NOOP, 1, 0, 1);
	}
	rg_aq_put(&f.g, &aq1, RG_OP_NOOP, 0, NULL, 0);
	rg_aq_ring(&f.g, &aq1);
	rg_sync(&f.g);
	assert_alive();

	/* And a good set of queues afterwards works. */
	assert_int_equal(rg_reset_lif(&f.g), 0);
	rg_eq_close(&f.eq);
	assert_int_equal(rg_eq_create(&f.g, &f.eq, 0, 2, 10, RG_EQ_RING(0)), 0);
	assert_int_equal(rg_cq_create(&f.g, &f.acq, 0, 0, 8, RG_CQ_RING(0)), 0);
	assert_int_equal(rg_aq_create(&f.g, &f.aq, 0, &f.acq, 4, RG_AQ_RING(0)), 0);
	assert_int_equal(admin(&f, RG_OP_NOOP, NULL, 0), RG_ASTS_OK);
	assert_int_equal(create_cq(&f, 10, 0, 6, 5, 12, 1, RG_SCRATCH), RG_ASTS_OK);
	fx_down(&f);
}

/* ---- events: CQ arming, EQEs, the EQ's vector ---- */

/* Post a NOOP on aq and take its CQE. */
static void noop(struct fx *f, struct rg_aq *aq)
{
	uint8_t cqe[RG_CQE_SIZE], color = aq->cq->color;
	uint32_t first = aq_slot(aq);

	rg_aq_put(&f->g, aq, RG_OP_NOOP, 0, NULL, 0);
	rg_aq_ring(&f->g, aq);
	rg_sync(&f->g);
	assert_true(rg_cq_wait(&f->g, aq->cq, cqe, 2000));
	check_cqe(cqe, first, RG_OP_NOOP, aq->id, 0, color);
}

/* Exactly one new EQE, naming CQ cq_id (type CQ, code NOTIFY), and one interrupt on the EQ's vector. */
static void expect_event(struct fx *f, struct rg_eq *eq, uint32_t cq_id)
{
	uint8_t color = eq->color;
	uint32_t evt;

	rg_sync(&f->g);
	assert_true(rg_eq_poll(&f->g, eq, &evt));
	assert_int_equal(evt, cq_id << 8 | 0u << 4 | 0u << 1 | color);
	assert_false(rg_eq_poll(&f->g, eq, &evt));
	assert_int_equal(rg_eq_wait_irq(eq, 1000), 1);
	/* The vector masked itself (mask_on_assert) and counts one outstanding event. */
	assert_int_equal(rg_intr_read(&f->g, eq->intr, INTR_MASK), 1);
	assert_int_equal(rg_intr_read(&f->g, eq->intr, INTR_CREDITS), 1);
	rg_eq_rearm(&f->g, eq, 1);
	assert_int_equal(rg_intr_read(&f->g, eq->intr, INTR_MASK), 0);
	assert_int_equal(rg_intr_read(&f->g, eq->intr, INTR_CREDITS), 0);
}

static void test_events(void **state)
{
	struct fx f;
	struct rg_eq eq;
	struct rg_cq cq, cq4;
	struct rg_aq aq1;
	const uint32_t *ring;
	uint32_t evt;

	(void)state;
	assert_int_equal(ionic_guest_setup(&f.g, &cl), 0);
	assert_int_equal(rg_reset_lif(&f.g), 0);
	f.eq.irq_fd = -1;
	/* EQ 1 on vector 3 with 4 entries (it wraps soon); CQ 3 on it; admin queue 0 on CQ 3. */
	assert_int_equal(rg_eq_create(&f.g, &eq, 1, 3, 2, RG_EQ_RING(1)), 0);
	assert_int_equal(rg_cq_create(&f.g, &cq, 3, 1, 4, RG_CQ_RING(0)), 0);
	assert_int_equal(rg_aq_create(&f.g, &f.aq, 0, &cq, 4, RG_AQ_RING(0)), 0);
	ring = guest_ptr(&f.g, RG_EQ_RING(1));

	/* Not armed: a completion, no event, no interrupt. */
	noop(&f, &f.aq);
	assert_no_eqe(&f, &eq);
	assert_int_equal(rg_intr_read(&f.g, eq.intr, INTR_CREDITS), 0);

	/* Consumer index reported, armed (the arm index is a rolling count: any value): quiet until the next CQE. */
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 1, 0x5a5a);
	assert_no_eqe(&f, &eq);
	noop(&f, &f.aq);
	expect_event(&f, &eq, 3);
	/* The arm is used up: the next completion brings no event. */
	noop(&f, &f.aq);
	assert_no_eqe(&f, &eq);

	/* Armed while completions beyond the last ring-0 index exist: an event at once. */
	rg_cq_arm(&f.g, &cq, 1, 0x5a5b);
	expect_event(&f, &eq, 3);
	/* Caught up and armed: quiet; the next CQE brings the event (the EQ's last entry). */
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 1, 0);
	assert_no_eqe(&f, &eq);
	noop(&f, &f.aq);
	expect_event(&f, &eq, 3);
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 1, 1);
	noop(&f, &f.aq);
	expect_event(&f, &eq, 3);
	/* The EQ wraps: entry 0 again, color 0; the others keep color 1. */
	assert_int_equal(eq.cons, 4);
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 1, 2);
	noop(&f, &f.aq);
	expect_event(&f, &eq, 3);
	assert_int_equal(rg_get_be32((const uint8_t *)&ring[0]), 3u << 8 | 0);
	for (int i = 1; i < 4; i++)
		assert_int_equal(rg_get_be32((const uint8_t *)&ring[i]), 3u << 8 | 1);

	/* mask_on_assert: an event while the vector is masked waits for the unmask. */
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 1, 3);
	noop(&f, &f.aq);
	rg_sync(&f.g);
	assert_true(rg_eq_poll(&f.g, &eq, &evt));
	assert_int_equal(rg_eq_wait_irq(&eq, 1000), 1);
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 1, 4);
	noop(&f, &f.aq);
	rg_sync(&f.g);
	assert_true(rg_eq_poll(&f.g, &eq, &evt));
	assert_int_equal(evt, 3u << 8 | 0);
	assert_int_equal(rg_eq_wait_irq(&eq, 100), 0);          /* masked */
	assert_int_equal(rg_intr_read(&f.g, eq.intr, INTR_CREDITS), 2);
	rg_eq_rearm(&f.g, &eq, 1);                              /* unmask: the pending one goes out */
	assert_int_equal(rg_eq_wait_irq(&eq, 1000), 1);
	rg_eq_rearm(&f.g, &eq, 1);
	assert_int_equal(rg_intr_read(&f.g, eq.intr, INTR_CREDITS), 0);

	/* Ring 2 arms for solicited completions only: an admin completion is not one. */
	rg_cq_ack(&f.g, &cq);
	rg_cq_arm(&f.g, &cq, 2, 5);
	assert_no_eqe(&f, &eq);
	noop(&f, &f.aq);
	assert_no_eqe(&f, &eq);
	/* ... and a ring-1 arm with that completion unreported signals at once. */
	rg_cq_arm(&f.g, &cq, 1, 6);
	expect_event(&f, &eq, 3);

	/* Two CQs on one EQ: the event names the one that was armed. */
	rg_cq_ack(&f.g, &cq);
	assert_int_equal(rg_cq_create(&f.g, &cq4, 4, 1, 4, RG_CQ_RING(1)), 0);
	assert_int_equal(rg_aq_create(&f.g, &aq1, 1, &cq4, 4, RG_AQ_RING(1)), 0);
	rg_cq_arm(&f.g, &cq4, 1, 0);
	noop(&f, &f.aq);           /* CQ 3: not armed */
	assert_no_eqe(&f, &eq);
	noop(&f, &aq1);            /* CQ 4: armed */
	expect_event(&f, &eq, 4);

	/* Arming CQs that do not exist does nothing. */
	rg_db(&f.g, RG_QTYPE_CQ, 100, 1, 0);
	rg_db(&f.g, RG_QTYPE_CQ, 1024, 1, 0);
	rg_db(&f.g, RG_QTYPE_CQ, 0xffffff, 2, 0);
	assert_no_eqe(&f, &eq);

	/* Creating, arming and destroying a CQ that never completes anything raises nothing. */
	{
		uint8_t p[34];
		struct rg_cq cq20;

		rg_cq_init(&cq20, 20, 4, RG_SCRATCH);
		p_create_cq(p, 20, 1, 4, 5, 12, 1, RG_SCRATCH);
		assert_int_equal(admin_on(&f, &f.aq, RG_OP_CREATE_CQ, p, sizeof(p)), RG_ASTS_OK);
		assert_no_eqe(&f, &eq);
		rg_cq_arm(&f.g, &cq20, 1, 0);
		assert_no_eqe(&f, &eq);
		rg_le32(p, 20);
		assert_int_equal(admin_on(&f, &f.aq, RG_OP_DESTROY_CQ, p, 4), RG_ASTS_OK);
		assert_no_eqe(&f, &eq);
	}
	rg_eq_close(&eq);
	assert_alive();
	ionic_guest_teardown(&f.g);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lif_identity, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_queue_cmds, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_cqe, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_cq, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_paged_cq, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_qp, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_mr, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_ah, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_admin_slots_and_wrap, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_hostile_admin, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_hostile_doorbells, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_unmapped_queues, connect_negotiated, disconnect),
		cmocka_unit_test_setup_teardown(test_events, connect_negotiated, disconnect),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic\n", argv[0]);
		return 2;
	}
	binary = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("ionic-rdma-ci", tests, start_server, stop_server);
}
