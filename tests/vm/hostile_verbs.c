/*
 * hostile_verbs: a guest program that posts random work requests to the device (built and run
 * inside the guest by tests/vm/checks/hostile-guest.sh).
 *
 *   hostile_verbs DEVICE GID_INDEX SEED COUNT
 *
 * An RC queue pair connected to itself and a UD queue pair get COUNT work requests with random
 * opcodes, flags, scatter lists (valid, out of range and unknown keys, odd lengths), remote
 * addresses and keys, and random receives. A queue pair the device puts in the error state is
 * taken back to RTS and the storm goes on. Afterwards a checked exchange on fresh queue pairs
 * (SEND into a receive, RDMA WRITE, RDMA READ, all compared byte for byte) proves that the
 * device still works. Exit status 0 only when that exchange is exact.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#define BUF_SIZE (64 * 1024)
#define QKEY 0x11111111u

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_qp *rc, *ud;
	struct ibv_ah *ah;
	union ibv_gid gid;
	int gidx;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint32_t rnd_below(uint32_t n) { return n ? (uint32_t)(rnd() % n) : 0; }

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Takes qp through RESET to INIT on port 1. The INIT attributes differ by type: an RC queue pair
 * passes its access flags with IBV_QP_ACCESS_FLAGS in extra_mask, a UD one its Q_Key with
 * IBV_QP_QKEY; the attribute outside extra_mask is ignored by ibv_modify_qp.
 */
static int qp_reset_to_init(struct ibv_qp *qp, unsigned int access_flags, uint32_t qkey, int extra_mask)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access_flags;
	a.qkey = qkey;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | extra_mask);
}

static int rc_connect(struct ctx *c, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	if (qp_reset_to_init(qp,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC,
			     0, IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = c->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)c->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 8;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int ud_connect(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	if (qp_reset_to_init(qp, 0, QKEY, IBV_QP_QKEY))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static struct ibv_qp *qp_new(struct ctx *c, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = c->cq;
	ia.qp_type = type;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	return ibv_create_qp(c->pd, &ia);
}

/* An SGE that is valid, out of range, unkeyed or of an odd length. */
static void rnd_sge(struct ctx *c, struct ibv_sge *s)
{
	switch (rnd_below(6)) {
	case 0: /* somewhere inside the MR */
	case 1:
		s->addr = (uintptr_t)c->buf + rnd_below(BUF_SIZE / 2);
		s->length = rnd_below(BUF_SIZE / 2) + 1;
		s->lkey = c->mr->lkey;
		break;
	case 2: /* runs past the MR */
		s->addr = (uintptr_t)c->buf + BUF_SIZE - rnd_below(64);
		s->length = rnd_below(1 << 20) + 65;
		s->lkey = c->mr->lkey;
		break;
	case 3: /* an unknown key */
		s->addr = (uintptr_t)c->buf;
		s->length = rnd_below(4096) + 1;
		s->lkey = (uint32_t)rnd();
		break;
	case 4: /* a wild address under the right key */
		s->addr = rnd();
		s->length = rnd_below(1 << 16);
		s->lkey = c->mr->lkey;
		break;
	default: /* zero length */
		s->addr = (uintptr_t)c->buf;
		s->length = 0;
		s->lkey = c->mr->lkey;
	}
}

static const enum ibv_wr_opcode ops[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV,
};

static void post_random(struct ctx *c, long *posted, long *refused)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rr, *rbad;
	struct ibv_sge sg[4], rs[4];
	int ud = rnd_below(4) == 0;
	struct ibv_qp *qp = ud ? c->ud : c->rc;

	/* Random receives now and then, on both queue pairs. */
	for (uint32_t n = rnd_below(3); n; n--) {
		memset(&rr, 0, sizeof(rr));
		rr.wr_id = rnd();
		rr.num_sge = (int)rnd_below(5);
		for (int i = 0; i < rr.num_sge; i++)
			rnd_sge(c, &rs[i]);
		rr.sg_list = rs;
		if (ibv_post_recv(rnd_below(2) ? c->rc : c->ud, &rr, &rbad))
			(*refused)++;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rnd();
	wr.opcode = ud ? (rnd_below(2) ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM) : ops[rnd_below(sizeof(ops) / sizeof(ops[0]))];
	wr.num_sge = (int)rnd_below(5);
	for (int i = 0; i < wr.num_sge; i++)
		rnd_sge(c, &sg[i]);
	wr.sg_list = sg;
	wr.send_flags = (unsigned)rnd_below(16) & (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE);
	if (rnd_below(8) == 0) {
		/* Inline data is copied by the provider from our own memory at post time: only there
		 * must the addresses be real (a wild one would fault this program, not the device). */
		wr.send_flags |= IBV_SEND_INLINE;
		for (int i = 0; i < wr.num_sge; i++) {
			sg[i].addr = (uintptr_t)c->buf + rnd_below(BUF_SIZE / 2);
			sg[i].length = rnd_below(2) ? rnd_below(64) : rnd_below(BUF_SIZE / 2);
		}
	}
	wr.imm_data = (uint32_t)rnd();
	if (ud) {
		wr.wr.ud.ah = c->ah;
		wr.wr.ud.remote_qpn = rnd_below(3) ? c->ud->qp_num : (uint32_t)rnd() & 0xffffff;
		wr.wr.ud.remote_qkey = rnd_below(4) ? QKEY : (uint32_t)rnd();
	} else if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = rnd_below(2) ? ((uintptr_t)c->buf + rnd_below(BUF_SIZE)) & ~7ull : rnd();
		wr.wr.atomic.rkey = rnd_below(2) ? c->mr->rkey : (uint32_t)rnd();
		wr.wr.atomic.compare_add = rnd();
		wr.wr.atomic.swap = rnd();
	} else if (wr.opcode == IBV_WR_LOCAL_INV || wr.opcode == IBV_WR_SEND_WITH_INV) {
		wr.invalidate_rkey = (uint32_t)rnd();
	} else {
		wr.wr.rdma.remote_addr = rnd_below(2) ? (uintptr_t)c->buf + rnd_below(BUF_SIZE) : rnd();
		wr.wr.rdma.rkey = rnd_below(2) ? c->mr->rkey : (uint32_t)rnd();
	}
	if (ibv_post_send(qp, &wr, &bad))
		(*refused)++;
	else
		(*posted)++;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return IBV_QPS_ERR;
	return a.qp_state;
}

/* Completions until none come for ms milliseconds; returns how many. */
static long drain(struct ctx *c, int ms, long *errors)
{
	struct ibv_wc wc[16];
	double idle_until = now_s() + ms / 1000.0;
	long n = 0;

	while (now_s() < idle_until) {
		int k = ibv_poll_cq(c->cq, 16, wc);

		if (k < 0)
			return -1;
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				(*errors)++;
		if (k > 0) {
			n += k;
			idle_until = now_s() + ms / 1000.0;
		}
	}
	return n;
}

static int wait_one(struct ctx *c, struct ibv_wc *wc)
{
	double until = now_s() + 10;

	while (now_s() < until) {
		int k = ibv_poll_cq(c->cq, 1, wc);

		if (k < 0)
			return -1;
		if (k == 1)
			return 0;
	}
	return -1;
}

/* The device still works: on fresh queue pairs, a SEND, an RDMA WRITE and an RDMA READ, exact. */
static int sanity(struct ctx *c)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rr, *rbad;
	struct ibv_sge s, r;
	struct ibv_wc wc;
	uint8_t *b = c->buf;
	long errors = 0;

	drain(c, 200, &errors);
	if (c->rc)
		ibv_destroy_qp(c->rc);
	c->rc = qp_new(c, IBV_QPT_RC);
	if (!c->rc || rc_connect(c, c->rc)) {
		fprintf(stderr, "sanity: cannot bring up a new RC queue pair: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < 4096; i++)
		b[i] = (uint8_t)(i * 7 + 3);
	memset(b + 4096, 0, 3 * 4096);
	/* SEND 4096 bytes into a posted receive at +4096. */
	r = (struct ibv_sge){ (uintptr_t)b + 4096, 4096, c->mr->lkey };
	memset(&rr, 0, sizeof(rr));
	rr.wr_id = 1;
	rr.sg_list = &r;
	rr.num_sge = 1;
	s = (struct ibv_sge){ (uintptr_t)b, 4096, c->mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_recv(c->rc, &rr, &rbad) || ibv_post_send(c->rc, &wr, &bad))
		return fprintf(stderr, "sanity: SEND not posted\n"), -1;
	for (int i = 0; i < 2; i++)
		if (wait_one(c, &wc) || wc.status != IBV_WC_SUCCESS)
			return fprintf(stderr, "sanity: SEND completion %d: status %d\n", i, (int)wc.status), -1;
	/* RDMA WRITE of the same bytes to +8192, RDMA READ of them to +12288. */
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b + 8192;
	wr.wr.rdma.rkey = c->mr->rkey;
	if (ibv_post_send(c->rc, &wr, &bad) || wait_one(c, &wc) || wc.status != IBV_WC_SUCCESS)
		return fprintf(stderr, "sanity: RDMA WRITE failed (status %d)\n", (int)wc.status), -1;
	s.addr = (uintptr_t)b + 12288;
	wr.wr_id = 4;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)b + 8192;
	if (ibv_post_send(c->rc, &wr, &bad) || wait_one(c, &wc) || wc.status != IBV_WC_SUCCESS)
		return fprintf(stderr, "sanity: RDMA READ failed (status %d)\n", (int)wc.status), -1;
	for (int k = 1; k < 4; k++)
		if (memcmp(b, b + 4096 * k, 4096))
			return fprintf(stderr, "sanity: copy %d differs\n", k), -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ctx c;
	long count, posted = 0, refused = 0, completions = 0, errors = 0, recoveries = 0;
	int n;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX SEED COUNT\n", argv[0]);
		return 2;
	}
	memset(&c, 0, sizeof(c));
	c.gidx = atoi(argv[2]);
	rng_state = strtoull(argv[3], NULL, 0) | 1;
	count = atol(argv[4]);
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !c.ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			c.ctx = ibv_open_device(list[i]);
	if (!c.ctx)
		return fprintf(stderr, "no device %s\n", argv[1]), 1;
	c.pd = ibv_alloc_pd(c.ctx);
	c.cq = c.pd ? ibv_create_cq(c.ctx, 512, NULL, NULL, 0) : NULL;
	c.buf = aligned_alloc(4096, BUF_SIZE);
	c.mr = c.cq && c.buf ? ibv_reg_mr(c.pd, c.buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
							       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
			     : NULL;
	if (!c.mr || ibv_query_gid(c.ctx, 1, c.gidx, &c.gid))
		return fprintf(stderr, "setup failed: %s\n", strerror(errno)), 1;
	c.rc = qp_new(&c, IBV_QPT_RC);
	c.ud = qp_new(&c, IBV_QPT_UD);
	{
		struct ibv_ah_attr aa;

		memset(&aa, 0, sizeof(aa));
		aa.is_global = 1;
		aa.grh.dgid = c.gid;
		aa.grh.sgid_index = (uint8_t)c.gidx;
		aa.grh.hop_limit = 64;
		aa.port_num = 1;
		c.ah = ibv_create_ah(c.pd, &aa);
	}
	if (!c.rc || !c.ud || !c.ah || rc_connect(&c, c.rc) || ud_connect(c.ud))
		return fprintf(stderr, "queue pairs: %s\n", strerror(errno)), 1;

	for (long i = 0; i < count; i++) {
		post_random(&c, &posted, &refused);
		if (i % 8 == 7) {
			long k = drain(&c, 5, &errors);

			completions += k > 0 ? k : 0;
			if (qp_state(c.rc) != IBV_QPS_RTS) {
				completions += drain(&c, 50, &errors);
				if (rc_connect(&c, c.rc))
					return fprintf(stderr, "RC queue pair does not come back: %s\n", strerror(errno)), 1;
				recoveries++;
			}
			if (qp_state(c.ud) != IBV_QPS_RTS) {
				completions += drain(&c, 50, &errors);
				if (ud_connect(c.ud))
					return fprintf(stderr, "UD queue pair does not come back: %s\n", strerror(errno)), 1;
				recoveries++;
			}
		}
	}
	completions += drain(&c, 200, &errors);
	printf("posted %ld, refused by the provider %ld, completions %ld (%ld in error), queue pairs recovered %ld\n",
	       posted, refused, completions, errors, recoveries);
	if (sanity(&c))
		return 1;
	printf("sanity: SEND, RDMA WRITE and RDMA READ exact after the storm\n");
	ibv_destroy_qp(c.rc);
	ibv_destroy_qp(c.ud);
	ibv_destroy_ah(c.ah);
	ibv_dereg_mr(c.mr);
	ibv_destroy_cq(c.cq);
	ibv_dealloc_pd(c.pd);
	ibv_close_device(c.ctx);
	ibv_free_device_list(list);
	free(c.buf);
	return 0;
}
