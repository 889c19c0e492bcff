/*
 * roce-scale-bench: N servers with --backend roce on one bridge, no guests (issue 28, item 5). Run
 * inside a network namespace whose bridge has TAPs ernic0 .. ernic{N-1} (bench/roce_scale.sh makes
 * it); this program starts the N servers itself, drives every device over vfio-user as ionic_rdma
 * would (tests/lib/ionic_rdma_guest), and connects an RC QP of every server to one of every other
 * (all to all: N x (N - 1) QPs, path MTU 4096, header templates naming the peer's MAC and IPv4
 * address). Each QP first WRITEs a pattern of its own into its peer's memory, checked byte for
 * byte there; then for `seconds` every QP that writes (all of them; with ROCE_SCALE_ONEWAY=1, the
 * even servers' toward the next server) keeps 4 (ROCE_SCALE_DEPTH: 1 to 32) signaled RDMA WRITEs
 * in flight toward its peer, reposted as they complete. A WRITE is 64 KiB, or ROCE_SCALE_LEN bytes
 * (4096 to 65536, whole 4 KiB packets). ROCE_SCALE_OP=read makes them RDMA READs of the peer's
 * pattern (checked the same way, here): the responder then sends the payload and the requester
 * the one request, and a READ's frames are counted as a WRITE's (its packets and one more).
 *
 * Reports, as one CSV line: N, WRITEs completed per second in all, GB/s in all, RoCEv2 frames per
 * second in all (a WRITE's packets and an ACK, 17 frames for 64 KiB and 2 for 4 KiB, at least:
 * what the requesters sent, from the servers' closing counters, is printed beside), the servers'
 * CPU (the mean share of a CPU; microseconds per frame, its sender's and its receiver's together),
 * the WRITE's length, the servers' CPU per WRITE, memcpy of a WRITE's bytes, the frames sent or
 * received per server-core second, and with ROCE_SCALE_ONEWAY=1 the requesters' and the
 * responders' microseconds per frame (empty fields otherwise; printed beside, the share of each
 * side's CPU the kernel took, from the servers' user and system ticks). Beside them, printed: one
 * vfio-user message's round trip (REGION_READ) and the server's CPU for it, after the run.
 *
 * When a pass over the devices finds no completion, the driver arms the send CQs and sleeps on
 * the EQs' interrupt eventfds (as ionic_rdma's kernel users and perftest's --use_event do), so
 * the servers have the machine's cores. Environment: ROCE_SCALE_POLL=yield (or spin) polls
 * instead, with (without) a sched_yield() between passes; ROCE_SCALE_LOG=info lets the servers
 * log their closing statistics; ROCE_SCALE_SERVER_POLL_US=N starts them with --poll-us N (they
 * spin that long after any activity before they sleep).
 *
 * A server's frames per second per core are the frames it sends or receives over its own CPU
 * time: all to all, every server does both, and the figure is that of the servers together.
 * ROCE_SCALE_ONEWAY=1 (N even) measures each side on its own: server 2k keeps its WRITEs in
 * flight toward server 2k + 1 and nothing goes the other way but ACKs, so the even servers' CPU
 * is the requester's cost per frame and the odd servers' the responder's.
 *
 * Usage: roce-scale-bench path/to/rocm-ernic N [seconds] [csv-file]
 */
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "ionic_rdma_guest.h"
#include "vfu_client.h"

#define MAX_N    16
#define PD       1
#define SCQ      10
#define QP_BASE  100                    /* the QP toward peer p is QP_BASE + p */
#define ACCESS   (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ)
#define RINGS    RG_SCRATCH             /* per QP: SQ, then RQ at + 0x2000 */
#define TMPLS    (RG_SCRATCH + 0x40000) /* per QP: its header template */
#define MR_IDX   3
#define MR_KEY   0x5b
#define LKEY     RG_KEY(MR_IDX, MR_KEY)
#define MR_BASE  (RG_SCRATCH + 0x60000)
#define MR_LEN   0x140000u
#define SRC      MR_BASE                               /* what every QP writes */
#define TARGET(p) (MR_BASE + 0x10000ull * (1 + (p)))   /* where peer p's QP writes */
#define WR_MAX   0x10000u                /* the longest WRITE, and the room for each peer's */
#define K_MAX    32                      /* WRITEs in flight per QP: ROCE_SCALE_DEPTH, 4 by default */

struct node {
	struct vfc_server srv;
	struct vfc c;
	struct ionic_guest g;
	struct rg_eq eq;
	struct rg_cq acq, scq;
	struct rg_aq aq;
	struct rg_qp qp[MAX_N];
	uint8_t mac[6];
	uint32_t ip;
	uint64_t wqe_id;
	bool armed; /* the send CQ is armed and has not fired since: arming it again asks nothing new */
};

static struct node nodes[MAX_N];
static unsigned n;
static enum { WAIT_IRQ, WAIT_YIELD, WAIT_SPIN } idle_wait = WAIT_IRQ; /* ROCE_SCALE_POLL=yield|spin */
static uint64_t irq_waits, irq_events;
static uint32_t wr_len = WR_MAX;         /* ROCE_SCALE_LEN: 4096 .. 65536, whole 4 KiB packets */
static unsigned frames_per_write = WR_MAX / 4096 + 1; /* its packets and an ACK */
static unsigned depth = 4;               /* ROCE_SCALE_DEPTH: WRITEs in flight per QP, 1 .. K_MAX */
static bool oneway;                      /* ROCE_SCALE_ONEWAY=1: server 2k writes to 2k + 1 only */
static bool reads;                       /* ROCE_SCALE_OP=read: RDMA READs of the peer's pattern instead */

/* Does server i keep WRITEs in flight toward p in the timed run? */
static bool writes_to(unsigned i, unsigned p)
{
	return oneway ? i % 2 == 0 && p == i + 1 : p != i;
}

static uint64_t server_ns(const struct node *x)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)x->srv.pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

/*
 * Server x's CPU time so far in user space and in the kernel, in clock ticks (/proc/PID/stat,
 * utime and stime: sampled at each tick, so a share of them over seconds is the split of the CPU
 * time schedstat counts exactly).
 */
static void server_ticks(const struct node *x, unsigned long long *user, unsigned long long *sys)
{
	char path[64], buf[1024], *p;
	size_t got;
	FILE *f;

	*user = *sys = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)x->srv.pid);
	if ((f = fopen(path, "r")) == NULL)
		return;
	got = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[got] = 0;
	/* after the command's closing parenthesis: state is field 3, utime 14 and stime 15 */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", user, sys) != 2)
		*user = *sys = 0;
}

static void die(const char *what, unsigned i, int rc)
{
	fprintf(stderr, "roce-scale-bench: %s (server %u, %d)\n", what, i, rc);
	for (unsigned k = 0; k < n; k++)
		vfc_server_remove(&nodes[k].srv);
	exit(1);
}

static uint8_t pat(unsigned from, unsigned to, uint32_t i)
{
	return (uint8_t)(from * 37 + to * 11 + i * 7 + (i >> 9));
}

static uint32_t psn_of(unsigned from, unsigned to)
{
	return 0x1000u * (from + 1) + to;
}

static void node_up(unsigned i, const char *bin)
{
	struct node *x = &nodes[i];
	char tap[16], mac[24];
	const char *level = getenv("ROCE_SCALE_LOG"); /* info: the servers' closing statistics too */
	const char *poll = getenv("ROCE_SCALE_SERVER_POLL_US");
	const char *args[] = { "--backend", "roce", "--tap", tap, "--mac", mac, "-L", level ? level : "warn",
			       poll ? "--poll-us" : NULL, poll, NULL };
	int rc;

	snprintf(tap, sizeof(tap), "ernic%u", i);
	x->mac[0] = 0x02, x->mac[4] = 0x01, x->mac[5] = (uint8_t)i;
	snprintf(mac, sizeof(mac), "02:00:00:00:01:%02x", i);
	x->ip = 0xc0a8c814u + i; /* 192.168.200.20 + i */
	if (vfc_server_start(&x->srv, "roce-scale-bench", bin, args))
		die("cannot start the server", i, 0);
	if (vfc_open(&x->c, x->srv.sock, 20000) || ionic_guest_setup(&x->g, &x->c))
		die("cannot set the device up", i, 0);
	if ((rc = rg_probe(&x->g, &x->eq, &x->acq, &x->aq, 8, 4)) != 0)
		die("RDMA probe", i, rc);
	memset(guest_ptr(&x->g, RG_SCRATCH), 0, RG_SCRATCH_SIZE);
	if ((rc = rg_cq_create_aq(&x->g, &x->aq, &x->scq, SCQ, 0, 8, RG_CQ_RING(1))) != RG_ASTS_OK)
		die("CQ", i, rc);
	rc = rg_mr_create(&x->g, &x->aq, MR_IDX, MR_KEY, PD, MR_BASE, MR_LEN, 1, MR_BASE,
			  RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12);
	if (rc != RG_ASTS_OK)
		die("MR", i, rc);
}

static void qp_up(unsigned i, unsigned p)
{
	struct node *x = &nodes[i], *y = &nodes[p];
	struct rg_qp *q = &x->qp[p];
	uint8_t t[RG_ROCE4_HDR_LEN];
	struct rg_qp_path path;
	int rc;

	memset(q, 0, sizeof(*q));
	q->id = QP_BASE + p;
	q->type = RG_QPT_RC;
	q->pd = PD;
	q->sq_cq = q->rq_cq = SCQ;
	q->sq = RINGS + 0x4000ull * p;
	q->rq = q->sq + 0x2000;
	q->sq_depth_log2 = q->rq_depth_log2 = 6;
	q->sq_stride_log2 = q->rq_stride_log2 = 7;
	if ((rc = rg_qp_create(&x->g, &x->aq, q)) != 0)
		die("QP create", i, rc);
	rg_roce4_template(t, y->mac, x->mac, x->ip, y->ip, 0, 64);
	path = (struct rg_qp_path){ .tmpl = t, .len = sizeof(t), .at = TMPLS + 0x100ull * p, .sq_psn = psn_of(i, p),
				    .rq_psn = psn_of(p, i), .pmtu_log2 = 12 };
	if ((rc = rg_qp_to_rts_path(&x->g, &x->aq, q, QP_BASE + i, ACCESS, &path)) != 0)
		die("QP to RTS", i, rc);
}

/* Node i's next operation toward peer p: a WRITE of its pattern into the peer, or a READ of the peer's into it. */
static void post_write(unsigned i, unsigned p)
{
	struct node *x = &nodes[i];
	struct rg_sge sge = { SRC, wr_len, LKEY };

	if (reads) {
		sge.va = TARGET(p); /* the peer's pattern lands where a WRITE of it would have */
		rg_post_rdma(&x->g, &x->qp[p], ++x->wqe_id, RG_WR_RDMA_READ, RG_WQE_SIG, 0, SRC, LKEY, &sge, 1);
		return;
	}
	rg_post_rdma(&x->g, &x->qp[p], ++x->wqe_id, RG_WR_RDMA_WRITE, RG_WQE_SIG, 0, TARGET(i), LKEY, &sge, 1);
}

/* Take node i's send completions: each must be a clean one; how many, and which QPs (by peer) they free. */
static unsigned reap(unsigned i, unsigned freed[MAX_N])
{
	struct node *x = &nodes[i];
	uint8_t cqe[RG_CQE_SIZE];
	unsigned got = 0;

	while (rg_cq_poll(&x->g, &x->scq, cqe)) {
		uint32_t qid = rg_cqe_qid(cqe);

		if (rg_cqe_error(cqe) || rg_cqe_type(cqe) != RG_CQE_SEND_MSN || qid < QP_BASE || qid >= QP_BASE + n)
			die(reads ? "a READ completed wrong" : "a WRITE completed wrong", i, (int)rg_cqe_error(cqe));
		freed[qid - QP_BASE]++;
		got++;
	}
	if (got)
		rg_cq_ack(&x->g, &x->scq);
	return got;
}

/*
 * Nothing completed on any device: sleep until one interrupts, as ionic_rdma's
 * kernel consumers and perftest's --use_event do. Every send CQ not armed yet is
 * armed (ring 1; the device raises the EQ's vector at once if completions are
 * already waiting; an arm lasts until it fires, so a CQ with nothing to report
 * is armed once), then the EQs' eventfds are polled; the events are taken off each
 * EQ that fired and its vector gets its credits back, unmasked.
 */
static void wait_irq(void)
{
	struct pollfd pfd[MAX_N];

	for (unsigned i = 0; i < n; i++) {
		if (!nodes[i].armed)
			rg_cq_arm(&nodes[i].g, &nodes[i].scq, 1, (uint16_t)nodes[i].scq.cons);
		nodes[i].armed = true;
		pfd[i] = (struct pollfd){ .fd = nodes[i].eq.irq_fd, .events = POLLIN };
	}
	irq_waits++;
	if (poll(pfd, n, 100) <= 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		uint64_t v;
		uint32_t evt, got = 0;

		if (!(pfd[i].revents & POLLIN) || read(pfd[i].fd, &v, sizeof(v)) != sizeof(v))
			continue;
		while (rg_eq_poll(&nodes[i].g, &nodes[i].eq, &evt))
			got++;
		if (got)
			nodes[i].armed = false; /* the arm fired: one shot */
		irq_events += got;
		rg_eq_rearm(&nodes[i].g, &nodes[i].eq, got);
	}
}

int main(int argc, char **argv)
{
	const char *bin = argc > 1 ? argv[1] : NULL;
	double seconds = argc > 3 && argv[3][0] ? atof(argv[3]) : 3.0, t0, t;
	uint64_t writes = 0, ns0[MAX_N], cpu_ns = 0, side_ns[2] = { 0, 0 };
	unsigned long long u0[MAX_N], s0[MAX_N], side_user[2] = { 0, 0 }, side_sys[2] = { 0, 0 };
	FILE *csv = NULL;

	n = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	if (getenv("ROCE_SCALE_LEN") != NULL) {
		char *end;
		unsigned long v = strtoul(getenv("ROCE_SCALE_LEN"), &end, 0);

		if (*end != '\0' || v < 4096 || v > WR_MAX || v % 4096) {
			fprintf(stderr, "roce-scale-bench: ROCE_SCALE_LEN is 4096 to 65536, in whole 4 KiB packets\n");
			return 2;
		}
		wr_len = (uint32_t)v;
		frames_per_write = wr_len / 4096 + 1;
	}
	if (getenv("ROCE_SCALE_DEPTH") != NULL) {
		char *end;
		unsigned long v = strtoul(getenv("ROCE_SCALE_DEPTH"), &end, 0);

		if (*end != '\0' || v < 1 || v > K_MAX) {
			fprintf(stderr, "roce-scale-bench: ROCE_SCALE_DEPTH is 1 to %d WRITEs in flight per QP\n", K_MAX);
			return 2;
		}
		depth = (unsigned)v;
	}
	oneway = getenv("ROCE_SCALE_ONEWAY") != NULL && strcmp(getenv("ROCE_SCALE_ONEWAY"), "1") == 0;
	if (getenv("ROCE_SCALE_OP") != NULL) {
		reads = strcmp(getenv("ROCE_SCALE_OP"), "read") == 0;
		if (!reads && strcmp(getenv("ROCE_SCALE_OP"), "write") != 0) {
			fprintf(stderr, "roce-scale-bench: ROCE_SCALE_OP is write or read\n");
			return 2;
		}
	}
	if (getenv("ROCE_SCALE_POLL") != NULL)
		idle_wait = strcmp(getenv("ROCE_SCALE_POLL"), "spin") == 0 ? WAIT_SPIN : WAIT_YIELD;
	if (bin == NULL || n < 2 || n > MAX_N || seconds <= 0 || (oneway && n % 2)) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic N(2..%d; even with ROCE_SCALE_ONEWAY=1) [seconds] [csv-file]\n",
			argv[0], MAX_N);
		return 2;
	}
	ionic_guest_seal_memory(true);
	for (unsigned i = 0; i < n; i++)
		node_up(i, bin);
	for (unsigned i = 0; i < n; i++)
		for (unsigned p = 0; p < n; p++)
			if (p != i)
				qp_up(i, p);
	/* Every QP's pattern into its peer, checked there. */
	for (unsigned i = 0; i < n; i++) {
		uint8_t *src = guest_ptr(&nodes[i].g, SRC);

		for (uint32_t k = 0; k < wr_len; k++)
			src[k] = (uint8_t)(i * 37 + k * 7 + (k >> 9)); /* pat(i, *, k) without the peer's term */
	}
	for (unsigned i = 0; i < n; i++) {
		for (unsigned p = 0; p < n; p++) {
			unsigned freed[MAX_N] = { 0 };
			double w0 = bench_now_s();
			const uint8_t *dst;

			if (p == i)
				continue;
			post_write(i, p);
			rg_sq_ring(&nodes[i].g, &nodes[i].qp[p]);
			while (reap(i, freed) == 0)
				if (bench_now_s() - w0 > 30)
					die(reads ? "the checked READ did not complete" : "the checked WRITE did not complete", i, (int)p);
			/* a WRITE's bytes in the peer, a READ's (the peer's pattern) here */
			dst = reads ? guest_ptr(&nodes[i].g, TARGET(p)) : guest_ptr(&nodes[p].g, TARGET(i));
			for (uint32_t k = 0; k < wr_len; k++)
				if (dst[k] != (uint8_t)(pat(reads ? p : i, 0, k)))
					die(reads ? "a READ brought wrong bytes" : "a WRITE landed wrong bytes", i, (int)p);
		}
	}
	/* depth WRITEs in flight on every QP, reposted as they complete. */
	for (unsigned i = 0; i < n; i++) {
		ns0[i] = server_ns(&nodes[i]);
		server_ticks(&nodes[i], &u0[i], &s0[i]);
		for (unsigned p = 0; p < n; p++) {
			if (!writes_to(i, p))
				continue;
			for (unsigned k = 0; k < depth; k++)
				post_write(i, p);
			rg_sq_ring(&nodes[i].g, &nodes[i].qp[p]);
		}
	}
	t0 = bench_now_s();
	do {
		bool any = false;

		for (unsigned i = 0; i < n; i++) {
			unsigned freed[MAX_N] = { 0 };

			if (reap(i, freed) == 0)
				continue;
			any = true;
			for (unsigned p = 0; p < n; p++) {
				if (!freed[p])
					continue;
				writes += freed[p];
				for (unsigned k = 0; k < freed[p]; k++)
					post_write(i, p);
				rg_sq_ring(&nodes[i].g, &nodes[i].qp[p]);
			}
		}
		/*
		 * Nothing completed on any device: the servers have the work, let them have the CPU.
		 * ROCE_SCALE_POLL=yield polls with a sched_yield() between passes, =spin without (a busy
		 * guest's perftest; the driver then takes a core of this machine from the servers).
		 */
		if (!any && idle_wait == WAIT_IRQ)
			wait_irq();
		else if (!any && idle_wait == WAIT_YIELD)
			sched_yield();
		t = bench_now_s();
	} while (t - t0 < seconds);
	for (unsigned i = 0; i < n; i++) {
		uint64_t d = server_ns(&nodes[i]) - ns0[i];
		unsigned long long u, k;

		cpu_ns += d;
		side_ns[i % 2] += d;
		server_ticks(&nodes[i], &u, &k);
		side_user[i % 2] += u - u0[i];
		side_sys[i % 2] += k - s0[i];
	}
	if (writes == 0)
		die(reads ? "no READ completed" : "no WRITE completed", 0, 0);
	{
		double wps = (double)writes / (t - t0), fps = wps * frames_per_write;
		double per_write = (double)cpu_ns / 1e3 / (double)writes, mc = bench_memcpy_us(wr_len, 0.2);
		double frames = (double)writes * frames_per_write;
		/* every frame is sent by one server and received by another: twice handled */
		double per_core = cpu_ns ? 2 * frames / ((double)cpu_ns / 1e9) : 0;
		char sides[64] = ",,";

		const char *op = reads ? "READ" : "WRITE";

		printf("N=%u: %u QPs %s %u-byte %ss, %.0f %ss/s, %.2f GB/s, %.0f frames/s; servers' CPU %.1f%% each on "
		       "average, %.3f us per frame, %.2f us per %s (memcpy of its bytes %.2f us)\n", n,
		       oneway ? n / 2 : n * (n - 1), reads ? "reading" : "writing",
		       wr_len, op, wps, op, wps * wr_len / 1e9, fps, (double)cpu_ns / 1e9 / (t - t0) / n * 100,
		       per_write / frames_per_write, per_write, op, mc);
		printf("N=%u: %.0f frames sent or received per server-core second (%.3f us of a server's CPU per frame "
		       "it handles)\n", n, per_core, per_core > 0 ? 1e6 / per_core : 0);
		if (oneway) {
			/* the even servers only requested, the odd ones only responded */
			double req_us = side_ns[0] / 1e3 / frames, resp_us = side_ns[1] / 1e3 / frames;

			printf("N=%u, one way: requesters %.3f us per frame (%.0f per core second), responders %.3f us "
			       "(%.0f per core second)\n", n, req_us, req_us > 0 ? 1e6 / req_us : 0, resp_us,
			       resp_us > 0 ? 1e6 / resp_us : 0);
			snprintf(sides, sizeof(sides), ",%.3f,%.3f", req_us, resp_us);
			/* each side's CPU split by its ticks: what the kernel took, set beside the TAP floor */
			if (side_user[0] + side_sys[0] && side_user[1] + side_sys[1])
				printf("N=%u, one way, in the kernel: requesters %.3f us per frame (%.0f%% of their CPU), "
				       "responders %.3f (%.0f%%)\n", n,
				       req_us * side_sys[0] / (side_user[0] + side_sys[0]),
				       100.0 * side_sys[0] / (side_user[0] + side_sys[0]),
				       resp_us * side_sys[1] / (side_user[1] + side_sys[1]),
				       100.0 * side_sys[1] / (side_user[1] + side_sys[1]));
		}
		printf("N=%u: the driver waited %s; %" PRIu64 " waits, %" PRIu64 " events\n", n,
		       idle_wait == WAIT_IRQ ? "for interrupts" : idle_wait == WAIT_YIELD ? "polling, yielding" : "spinning",
		       irq_waits, irq_events);
		if (argc > 4 && argv[4][0] && (csv = fopen(argv[4], "a")) != NULL) {
			fprintf(csv, "%u,%.0f,%.3f,%.0f,%.1f,%.3f,%u,%.3f,%.3f,%.0f%s\n", n, wps, wps * wr_len / 1e9, fps,
				(double)cpu_ns / 1e9 / (t - t0) / n * 100, per_write / frames_per_write, wr_len, per_write,
				mc, per_core, sides);
			fclose(csv);
		}
	}
	/* let the last WRITEs finish, then the servers go */
	{
		double w0 = bench_now_s();

		while (bench_now_s() - w0 < 2) {
			unsigned freed[MAX_N];

			for (unsigned i = 0; i < n; i++)
				reap(i, freed);
		}
	}
	/* the denominator for the vfio-user interface: one message's round trip to a quiet server */
	bench_region_read(&nodes[0].c, nodes[0].srv.pid, 0.3, NULL);
	if (nodes[0].eq.irq_fd >= 0)
		bench_posted_irq(&nodes[0].c, nodes[0].srv.pid, nodes[0].eq.irq_fd, nodes[0].eq.intr, 0.3, NULL);
	for (unsigned i = 0; i < n; i++) {
		ionic_guest_teardown(&nodes[i].g);
		vfc_close(&nodes[i].c);
		if (vfc_server_stop(&nodes[i].srv))
			fprintf(stderr, "roce-scale-bench: server %u did not exit cleanly\n", i);
	}
	return 0;
}
