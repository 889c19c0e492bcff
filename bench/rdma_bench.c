/*
 * rdma-bench: the RDMA data path of the ionic device (the WQE engine of
 * src/ionic/ionic_rdma_qp.c) against the real server, driven over vfio-user
 * from the host with our own client and guest-side driver library; no guest,
 * no QEMU. Two RC queue pairs A (QP 20) and B (QP 21) are connected to each
 * other on the device's loopback fabric, with memory regions over guest
 * memory (the memfd the library maps into the device):
 *
 *   write     RDMA WRITE A -> B, 4 KiB, 64 KiB, 1 MiB: 96 signaled WQEs in
 *             flight, as bandwidth tools keep their send queue full: each
 *             time 32 complete, 32 more are posted with one SQ doorbell (a
 *             posted write), so the client posts while the server works;
 *             GB/s and messages/s, beside memcpy of the same size between
 *             the same two buffers
 *   read      RDMA READ by A of B's region, 64 KiB and 1 MiB, the same way
 *   send      64-byte SEND A -> B, the same way, each send over a receive
 *             posted on B before it (32 per RQ doorbell); messages/s
 *   pingpong  one 64-byte SEND A -> B, B's RECV completion, one SEND B -> A,
 *             A's RECV completion: round-trip median and 99th percentile
 *             (two posted doorbells per round trip; receives pre-posted 32 at
 *             a time outside the timed part)
 *
 * Completions are taken by polling the CQ rings in guest memory (as a verbs
 * application polling its CQ does), never by interrupt. Before each size is
 * timed, one operation of that size is checked byte for byte (and the byte
 * after it must be untouched): the benchmark fails if the engine moves wrong
 * bytes, and on any completion with an error or of the wrong type.
 *
 * Guest memory is the library's 4 MiB (ionic_guest.h), sealed against
 * shrinking as QEMU seals memfd guest RAM by default: the CQ rings and QP
 * rings of the benchmark sit in the free space between the RDMA admin rings
 * and RG_SCRATCH, the message buffers after them, and the two 1 MiB data
 * buffers fill RG_SCRATCH.
 *
 * Beside each figure, the share of one CPU the server used while it was
 * measured (its run time from /proc/PID/schedstat over the wall time), and on
 * the console how often it went to sleep per doorbell it was sent
 * (voluntary context switches from /proc/PID/status): a server that sleeps
 * must be woken by the next doorbell, one that does not is busy the whole time.
 * Last, `idle`: the server's CPU while the client stays attached, set up and
 * silent (10 s).
 *
 * Every case runs against three servers in one run, one after the other:
 *
 *   trapped-nopoll  doorbells are posted REGION_WRITEs, the server sleeps in
 *                   epoll between messages (--poll-us 0: the server before
 *                   mapped doorbells)
 *   trapped         the same with the busy window after activity (--poll-us 50)
 *   mapped          --mmap-doorbells: the client maps BAR2 and doorbells are
 *                   8-byte stores the server finds by polling
 *
 * Every queue rings its own doorbell word: QP A on page 1, QP B on page 2,
 * the four CQs on pages 3-6 (a mapped word keeps only the last store, so
 * queues of one kind sharing a page could lose a doorbell; see docs/ionic.md).
 *
 * Usage: rdma-bench path/to/rocm-ernic [seconds-per-case] [csv-file] [case[:size]] [mode] [poll-us]
 * (case: write, read, send, pingpong or idle, optionally one size, e.g.
 * write:4096, to run only that, e.g. under perf; mode: one of the three;
 * poll-us: the busy window of the trapped and mapped servers, default 50;
 * an empty argument keeps the default). The
 * CSV has one row per measurement:
 * mode,case,size,msgs_per_s,gbps,memcpy_gbps,median_us,p99_us,server_cpu_pct,line_rt_per_s (empty where
 * one does not apply; line_rt_per_s: the cache-line round trips of the small-message cases).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ionic_rdma_guest.h"
#include "vfu_client.h"

#ifndef BATCH
#define BATCH      32 /* WQEs per doorbell */
#endif
#define WINDOW     (3 * BATCH) /* WQEs in flight in the bandwidth cases (the rings hold 127) */
#define CQ_LOG2    8                      /* 256 CQEs */
#define WQ_LOG2    7                      /* 128 WQEs */
#define WQ_STRIDE  6                      /* 64 bytes: header, body, one SGE */
#define MSG_SIZE   64
#define SMALL_MAX  4096 /* cases up to this size also measure the cache-line round trip */
#define BIG        (1u << 20)

/* Guest memory of the benchmark (see ionic_rdma_guest.h for what lies below and above). */
#define B_CQ(i)    (GUEST_IOVA + 0x120000 + 0x2000ull * (i)) /* CQs 10-13: 256 x 32 B each */
#define B_QPR(k)   (GUEST_IOVA + 0x128000 + 0x4000ull * (k)) /* SQ at +0, RQ at +0x2000: 128 x 64 B each */
#define B_MSG      (GUEST_IOVA + 0x130000)                   /* message buffers (MR 3), 64 KiB */
#define B_SEND(k)  (B_MSG + 0x100ull * (k))                  /* what QP k sends */
#define B_RECV(k, i) (B_MSG + 0x1000 + 0x4000ull * (k) + MSG_SIZE * (uint64_t)(i)) /* QP k's receive slot i */
#define B_SRC      RG_SCRATCH                                /* A's 1 MiB (MR 1) */
#define B_DST      (RG_SCRATCH + BIG)                        /* B's 1 MiB (MR 2) */
_Static_assert(B_MSG + 0x10000 <= RG_SCRATCH, "benchmark rings and buffers below RG_SCRATCH");
_Static_assert(B_DST + BIG <= GUEST_IOVA + GUEST_SIZE && BIG * 2 <= RG_SCRATCH_SIZE, "data buffers in guest memory");

/* Memory regions: index, key, virtual address. */
#define MR_SRC  1
#define MR_DST  2
#define MR_MSG  3
#define VA_SRC  0x5500000000ull
#define VA_DST  0x6600000000ull
#define VA_MSG  0x7700000000ull
#define KEY_SRC RG_KEY(MR_SRC, 0x11)
#define KEY_DST RG_KEY(MR_DST, 0x22)
#define KEY_MSG RG_KEY(MR_MSG, 0x33)

#define QPN_A   20u
#define QPN_B   21u
#define PAGE_QP(k) (1u + (k))   /* doorbell pages: QP A 1, QP B 2 */
#define PAGE_CQ(i) (3u + (i))   /* CQs 10-13: pages 3-6 */
#define IDLE_S  10.0
#define ACCESS  (RG_QPF_REMOTE_WRITE | RG_QPF_REMOTE_READ)
#define TIMEOUT_S 5.0

struct bench {
	struct ionic_guest g;
	struct rg_eq eq;
	struct rg_cq acq;
	struct rg_aq aq;
	struct rg_cq cq[4];      /* A send, A receive, B send, B receive */
	uint32_t acked[4];       /* the consumer index last reported to the device */
	struct rg_qp qp[2];      /* A, B */
	double secs;
	FILE *csv;
	const char *mode;
	pid_t server;
	uint64_t posted;         /* doorbells rung so far */
};

enum { CQ_A_SEND, CQ_A_RECV, CQ_B_SEND, CQ_B_RECV };

static pid_t server_pid;                        /* stopped by die() too */
static char dir[32];                            /* the server's socket directory, removed by die() too */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rdma-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		waitpid(server_pid, NULL, 0);
		rmdir(dir);
	}
	exit(1);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The doorbells, counted. */
static void sq_ring(struct bench *b, int k)
{
	rg_sq_ring(&b->g, &b->qp[k]);
	b->posted++;
}

static void rq_ring(struct bench *b, int k)
{
	rg_rq_ring(&b->g, &b->qp[k]);
	b->posted++;
}

/*
 * Take n completions of `type` from CQ ci, spinning on the ring; any error,
 * other type or a wait of TIMEOUT_S ends the run. The consumer index is
 * reported (CQ doorbell, ring 0) every half ring, as a driver does.
 */
static void cq_take(struct bench *b, int ci, uint8_t type, unsigned n, uint8_t last[RG_CQE_SIZE])
{
	struct rg_cq *cq = &b->cq[ci];
	uint8_t cqe[RG_CQE_SIZE];
	double deadline = 0;

	for (unsigned got = 0; got < n;) {
		unsigned spins = 0;

		while (!rg_cq_poll(&b->g, cq, cqe)) {
			cpu_relax();
			if (++spins % 4096 == 0) {
				if (deadline == 0)
					deadline = now_s() + TIMEOUT_S;
				else if (now_s() > deadline)
					die("CQ %u: %u of %u completions after %.0f s", cq->id, got, n, TIMEOUT_S);
			}
		}
		if (rg_cqe_error(cqe) || rg_cqe_type(cqe) != type)
			die("CQ %u: completion type %u (want %u), %s, status %u", cq->id, rg_cqe_type(cqe), type,
			    rg_cqe_error(cqe) ? "error" : "no error", rg_cqe_status(cqe));
		got++;
	}
	if (last)
		memcpy(last, cqe, RG_CQE_SIZE);
	if (cq->cons - b->acked[ci] >= (1u << CQ_LOG2) / 2) {
		rg_db_page(&b->g, PAGE_CQ(ci), RG_QTYPE_CQ, cq->id, 0, cq->cons & ((1u << CQ_LOG2) - 1));
		b->posted++;
		b->acked[ci] = cq->cons;
	}
}

/* CREATE_CQ on the RDMA admin queue (ionic_fw.h layout), as the driver creates verbs CQs, ringing on page dbid. */
static int create_cq(struct bench *b, uint32_t id, uint64_t ring, uint16_t dbid)
{
	uint8_t p[34] = { 0 };
	int st;

	rg_le32(p + 0, 0);            /* EQ 0 */
	p[4] = CQ_LOG2;
	p[5] = 5;                     /* 32-byte CQEs */
	p[7] = 12;
	rg_le32(p + 12, id);
	rg_le32(p + 16, ~0u);         /* tbl_index: the device chooses */
	rg_le32(p + 20, 1);           /* contiguous */
	rg_le64(p + 24, ring);
	rg_le16(p + 32, dbid);
	memset(guest_ptr(&b->g, ring), 0, RG_CQE_SIZE << CQ_LOG2);
	st = rg_admin(&b->g, &b->aq, RG_OP_CREATE_CQ, p, sizeof(p), NULL);
	rg_cq_ack(&b->g, &b->acq);
	return st;
}

/* The driver's probe (RDMA_RESET_LIF, EQ, admin CQ and queue), four CQs, three MRs, A and B in RTS. */
static void setup(struct bench *b, struct vfc *c)
{
	int st;

	ionic_guest_seal_memory(true); /* guest RAM as QEMU's memfd backend gives it */
	if ((st = ionic_guest_setup(&b->g, c)) != 0)
		die("guest set-up failed at step %d", -st);
	b->g.db_wait = false; /* every queue has a doorbell word of its own */
	if ((st = rg_probe(&b->g, &b->eq, &b->acq, &b->aq, 8, 4)) != 0)
		die("RDMA admin queue set-up failed at step %d", -st);
	for (int i = 0; i < 4; i++) {
		if ((st = create_cq(b, 10 + (uint32_t)i, B_CQ(i), (uint16_t)PAGE_CQ(i))) != 0)
			die("CREATE_CQ %d: status %d", 10 + i, st);
		rg_cq_init(&b->cq[i], 10 + (uint32_t)i, CQ_LOG2, B_CQ(i));
	}
	if ((st = rg_mr_create(&b->g, &b->aq, MR_SRC, KEY_SRC & 0xff, 1, VA_SRC, BIG, 1, B_SRC,
			       RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12)) ||
	    (st = rg_mr_create(&b->g, &b->aq, MR_DST, KEY_DST & 0xff, 1, VA_DST, BIG, 1, B_DST,
			       RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE | RG_MRF_REMOTE_READ, 12)) ||
	    (st = rg_mr_create(&b->g, &b->aq, MR_MSG, KEY_MSG & 0xff, 1, VA_MSG, 0x10000, 1, B_MSG,
			       RG_MRF_LOCAL_WRITE, 12)))
		die("CREATE_MR: status %d", st);
	for (int k = 0; k < 2; k++) {
		struct rg_qp *q = &b->qp[k];

		memset(q, 0, sizeof(*q));
		q->id = k ? QPN_B : QPN_A;
		q->dbid = (uint16_t)PAGE_QP(k);
		q->type = RG_QPT_RC;
		q->pd = 1;
		q->sq_cq = 10 + 2 * (uint32_t)k;
		q->rq_cq = 11 + 2 * (uint32_t)k;
		q->sq = B_QPR(k);
		q->rq = B_QPR(k) + 0x2000;
		q->sq_depth_log2 = q->rq_depth_log2 = WQ_LOG2;
		q->sq_stride_log2 = q->rq_stride_log2 = WQ_STRIDE;
		if ((st = rg_qp_create(&b->g, &b->aq, q)) != 0)
			die("CREATE_QP %u: status %d", q->id, st);
	}
	for (int k = 0; k < 2; k++)
		if ((st = rg_qp_to_rts(&b->g, &b->aq, &b->qp[k], b->qp[k ^ 1].id, ACCESS)) != 0)
			die("QP %u to RTS: status %d", b->qp[k].id, st);
}

/* A pattern that differs per size and position (so a shifted or stale copy does not pass). */
static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static void check_bytes(const char *what, size_t size, const uint8_t *got, const uint8_t *want, const uint8_t *after,
			size_t room)
{
	for (size_t i = 0; i < size; i++)
		if (got[i] != want[i])
			die("%s %zu bytes: byte %zu is %#04x, want %#04x", what, size, i, got[i], want[i]);
	if (size < room && after[0] != 0)
		die("%s %zu bytes: the byte after the message was written", what, size);
}

/* memcpy of size bytes between the two data buffers, for secs: GB/s. */
static double memcpy_gbps(struct bench *b, size_t size)
{
	uint8_t *s = guest_ptr(&b->g, B_SRC), *d = guest_ptr(&b->g, B_DST);
	double t0 = now_s(), el;
	long n;

	for (n = 0; (el = now_s() - t0) < b->secs; n++) {
		memcpy(d, s, size);
		__asm__ volatile("" ::: "memory");
	}
	return (double)n * (double)size / el / 1e9;
}

/*
 * RDMA WRITE (A's buffer into B's) or READ (B's buffer into A's) of size
 * bytes: one checked, then batches for secs. Messages per second; GB/s in *gbps.
 */
static double rdma_bw(struct bench *b, uint8_t op, size_t size, double *gbps)
{
	struct rg_qp *a = &b->qp[0];
	const struct rg_sge s = { VA_SRC, (uint32_t)size, KEY_SRC };
	uint8_t *src = guest_ptr(&b->g, B_SRC), *dst = guest_ptr(&b->g, B_DST);
	bool write = op == RG_WR_RDMA_WRITE;
	double t0, el;
	uint64_t n = 0;

	/* The check: the far side of the transfer zeroed, one operation, every byte compared. */
	fill(write ? src : dst, size, (uint32_t)size + op);
	memset(write ? dst : src, 0, size < BIG ? size + 1 : size);
	rg_post_rdma(&b->g, a, 0, op, RG_WQE_SIG, 0, VA_DST, KEY_DST, &s, 1);
	sq_ring(b, 0);
	cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, 1, NULL);
	check_bytes(write ? "RDMA WRITE" : "RDMA READ", size, write ? dst : src, write ? src : dst,
		    (write ? dst : src) + size, BIG);

	/* WINDOW in flight; each time BATCH complete, BATCH more are posted behind the rest. */
	t0 = now_s();
	for (uint64_t i = 0; i < WINDOW; i++)
		rg_post_rdma(&b->g, a, i, op, RG_WQE_SIG, 0, VA_DST, KEY_DST, &s, 1);
	sq_ring(b, 0);
	do {
		cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, BATCH, NULL);
		n += BATCH;
		for (unsigned i = 0; i < BATCH; i++)
			rg_post_rdma(&b->g, a, n + WINDOW - BATCH + i, op, RG_WQE_SIG, 0, VA_DST, KEY_DST, &s, 1);
		sq_ring(b, 0);
	} while ((el = now_s() - t0) < b->secs);
	cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, WINDOW, NULL); /* what is still in flight, outside the count */
	*gbps = (double)n * (double)size / el / 1e9;
	return (double)n / el;
}

static struct rg_sge send_sge(int k)
{
	return (struct rg_sge){ VA_MSG + (B_SEND(k) - B_MSG), MSG_SIZE, KEY_MSG };
}

static struct rg_sge recv_sge(int k, unsigned i)
{
	return (struct rg_sge){ VA_MSG + (B_RECV(k, i) - B_MSG), MSG_SIZE, KEY_MSG };
}

/* n receives on QP k (slots 0..BATCH-1 in turn) and its RQ doorbell. */
static void post_recvs(struct bench *b, int k, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct rg_sge r = recv_sge(k, i % BATCH);

		rg_post_recv(&b->g, &b->qp[k], (uint64_t)k << 32 | i, 0, &r, 1);
	}
	rq_ring(b, k);
}

/* One 64-byte SEND A -> B checked: the receive's completion and its bytes. */
static void check_send(struct bench *b)
{
	const struct rg_sge s = send_sge(0), r = recv_sge(1, 0);
	uint8_t *msg = guest_ptr(&b->g, B_SEND(0)), *in = guest_ptr(&b->g, B_RECV(1, 0)), cqe[RG_CQE_SIZE];

	fill(msg, MSG_SIZE, 64);
	memset(in, 0, MSG_SIZE + 1);
	rg_post_recv(&b->g, &b->qp[1], 0xabcdef, 0, &r, 1);
	rq_ring(b, 1);
	rg_post_send(&b->g, &b->qp[0], 0, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &s, 1);
	sq_ring(b, 0);
	cq_take(b, CQ_B_RECV, RG_CQE_RECV, 1, cqe);
	if (rg_cqe_wqe_id(cqe) != 0xabcdef || rg_cqe_status(cqe) != MSG_SIZE ||
	    (rg_cqe_src_qpn_op(cqe) & 0xffffff) != QPN_A || rg_cqe_qid(cqe) != QPN_B)
		die("SEND: receive completion wqe_id %#llx length %u source QP %u on QP %u",
		    (unsigned long long)rg_cqe_wqe_id(cqe), rg_cqe_status(cqe), rg_cqe_src_qpn_op(cqe) & 0xffffff,
		    rg_cqe_qid(cqe));
	cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, 1, NULL);
	check_bytes("SEND", MSG_SIZE, in, msg, in + MSG_SIZE, MSG_SIZE + 1);
}

/* SEND/RECV message rate: BATCH receives on B, BATCH sends on A, all completions. Messages per second. */
static double send_rate(struct bench *b)
{
	const struct rg_sge s = send_sge(0);
	double t0 = now_s(), el;
	uint64_t n = 0;

	/* As rdma_bw: WINDOW sends in flight, each over a receive posted before it. */
	post_recvs(b, 1, WINDOW);
	for (uint64_t i = 0; i < WINDOW; i++)
		rg_post_send(&b->g, &b->qp[0], i, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &s, 1);
	sq_ring(b, 0);
	do {
		cq_take(b, CQ_B_RECV, RG_CQE_RECV, BATCH, NULL);
		cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, BATCH, NULL);
		n += BATCH;
		post_recvs(b, 1, BATCH);
		for (unsigned i = 0; i < BATCH; i++)
			rg_post_send(&b->g, &b->qp[0], n + WINDOW - BATCH + i, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &s, 1);
		sq_ring(b, 0);
	} while ((el = now_s() - t0) < b->secs);
	cq_take(b, CQ_B_RECV, RG_CQE_RECV, WINDOW, NULL);
	cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, WINDOW, NULL);
	return (double)n / el;
}

/* Ping-pong for secs: round-trip times in seconds into *lat (sorted); their number. */
static size_t ping_pong(struct bench *b, double **lat)
{
	const struct rg_sge sa = send_sge(0), sb = send_sge(1);
	size_t cap = 1u << 16, n = 0;
	double *l = malloc(cap * sizeof(*l)), start = now_s();

	if (!l)
		die("out of memory");
	do {
		post_recvs(b, 0, BATCH);
		post_recvs(b, 1, BATCH);
		for (unsigned i = 0; i < BATCH; i++, n++) {
			double t0;

			if (n == cap && !(l = realloc(l, (cap *= 2) * sizeof(*l))))
				die("out of memory");
			t0 = now_s();
			rg_post_send(&b->g, &b->qp[0], n, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &sa, 1);
			sq_ring(b, 0);
			cq_take(b, CQ_B_RECV, RG_CQE_RECV, 1, NULL);
			rg_post_send(&b->g, &b->qp[1], n, RG_WR_SEND, RG_WQE_SIG, 0, 0, 0, 0, &sb, 1);
			sq_ring(b, 1);
			cq_take(b, CQ_A_RECV, RG_CQE_RECV, 1, NULL);
			l[n] = now_s() - t0;
			/* The senders' own completions (written right after the receives'). */
			cq_take(b, CQ_A_SEND, RG_CQE_SEND_MSN, 1, NULL);
			cq_take(b, CQ_B_SEND, RG_CQE_SEND_MSN, 1, NULL);
		}
	} while (now_s() - start < b->secs);
	qsort(l, n, sizeof(*l), cmp_double);
	*lat = l;
	return n;
}

/* What the server has done so far: its run time (/proc/PID/schedstat) and how often it slept (/proc/PID/status). */
struct snap {
	double t, cpu_s;
	unsigned long long sleeps;
	uint64_t posted;
};

static struct snap snap_take(struct bench *b)
{
	struct snap s = { now_s(), -1, 0, b->posted };
	char path[64], line[128];
	unsigned long long ns;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)b->server);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%llu", &ns) == 1)
			s.cpu_s = (double)ns / 1e9;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)b->server);
	if ((f = fopen(path, "r")) != NULL) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &s.sleeps) == 1)
				break;
		fclose(f);
	}
	return s;
}

/* Server CPU share in percent over [a, z] (-1 if unknown), and its sleeps per posted write into *sleeps. */
static double snap_cpu(const struct snap *a, const struct snap *z, double *sleeps)
{
	*sleeps = z->posted > a->posted ? (double)(z->sleeps - a->sleeps) / (double)(z->posted - a->posted) : 0;
	return a->cpu_s < 0 || z->cpu_s < 0 ? -1 : (z->cpu_s - a->cpu_s) / (z->t - a->t) * 100;
}

static void row(struct bench *b, const char *name, size_t size, double msgs, double gbps, double mc, double med,
		double p99, double cpu, double line)
{
	char f[7][32]; /* empty where a figure does not apply (negative) */
	const double v[7] = { msgs, gbps, mc, med, p99, cpu, line };

	if (!b->csv)
		return;
	for (int i = 0; i < 7; i++) {
		f[i][0] = 0;
		if (v[i] >= 0)
			snprintf(f[i], sizeof(f[i]), i == 0 || i == 6 ? "%.0f" : i < 3 ? "%.3f" : "%.2f", v[i]);
	}
	fprintf(b->csv, "%s,%s,%zu,%s,%s,%s,%s,%s,%s,%s\n", b->mode, name, size, f[0], f[1], f[2], f[3], f[4], f[5],
		f[6]);
}

/*
 * The denominator of the small-message cases: a cache line bounced between
 * two threads of this process (one writes an odd value and waits for the
 * next even one, the other answers), as many round trips a second as fit in
 * secs. Every small RDMA message costs at least a few such transfers between
 * the client's CPU and the server's (the WQE, the doorbell, the CQE), and on a
 * shared host their cost moves with where the two vCPUs land (twofold between
 * runs here), which memcpy on one CPU does not show.
 */
static _Alignas(64) _Atomic uint64_t line_turn;
static _Atomic bool line_stop;

static void *line_answer(void *arg)
{
	(void)arg;
	for (uint64_t want = 1;; want += 2) {
		uint64_t v;

		while ((v = atomic_load_explicit(&line_turn, memory_order_acquire)) != want) {
			if (atomic_load_explicit(&line_stop, memory_order_relaxed))
				return NULL;
			cpu_relax();
		}
		atomic_store_explicit(&line_turn, want + 1, memory_order_release);
	}
}

static double line_round_trips(double secs)
{
	pthread_t t;
	uint64_t n = 0;
	double t0, el;

	atomic_store(&line_turn, 0);
	atomic_store(&line_stop, false);
	if (pthread_create(&t, NULL, line_answer, NULL))
		die("pthread_create: cannot start the cache-line partner");
	t0 = now_s();
	do {
		for (int i = 0; i < 1000; i++, n++) {
			atomic_store_explicit(&line_turn, 2 * n + 1, memory_order_release);
			while (atomic_load_explicit(&line_turn, memory_order_acquire) != 2 * n + 2)
				cpu_relax();
		}
	} while ((el = now_s() - t0) < secs);
	atomic_store(&line_stop, true);
	pthread_join(t, NULL);
	return (double)n / el;
}

/* What each case runs; `only` (name or name:size) picks one. */
static const struct bcase {
	const char *name;
	uint8_t op;
	size_t size;
} cases[] = {
	{ "write", RG_WR_RDMA_WRITE, 4096 }, { "write", RG_WR_RDMA_WRITE, 65536 }, { "write", RG_WR_RDMA_WRITE, BIG },
	{ "read", RG_WR_RDMA_READ, 65536 },  { "read", RG_WR_RDMA_READ, BIG },     { "send", RG_WR_SEND, MSG_SIZE },
	{ "pingpong", RG_WR_SEND, MSG_SIZE }, { "idle", 0, 0 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static bool picked(const struct bcase *k, const char *only)
{
	char full[64];

	if (!only)
		return true;
	snprintf(full, sizeof(full), "%s:%zu", k->name, k->size);
	return !strcmp(only, k->name) || !strcmp(only, full);
}

/* One case, printed and written to the CSV; memcpy is measured once per size, before the first case of it. */
static void run_case(struct bench *b, const struct bcase *k)
{
	static size_t mc_size[8];
	static double mc_gbps[8];
	struct snap s0, s1;
	double cpu, sleeps;

	if (k->op == RG_WR_RDMA_WRITE || k->op == RG_WR_RDMA_READ) {
		double mc = 0, gbps, msgs;
		unsigned j;

		for (j = 0; j < 8 && mc_size[j] && mc_size[j] != k->size; j++)
			;
		if (j < 8 && mc_size[j] == 0) {
			mc_size[j] = k->size;
			mc_gbps[j] = memcpy_gbps(b, k->size);
		}
		if (j < 8)
			mc = mc_gbps[j];
		double line = k->size <= SMALL_MAX ? line_round_trips(b->secs) : -1;

		s0 = snap_take(b);
		msgs = rdma_bw(b, k->op, k->size, &gbps);
		s1 = snap_take(b);
		cpu = snap_cpu(&s0, &s1, &sleeps);
		printf("%-8s %8zu  %10.0f msgs/s  %6.2f GB/s  memcpy %6.2f GB/s %4.0f%%  server CPU %3.0f%%, %.2f sleeps/doorbell\n",
		       k->name, k->size, msgs, gbps, mc, 100 * gbps / mc, cpu, sleeps);
		if (line > 0)
			printf("%-8s %8zu  cache-line round trips between two CPUs %10.0f /s: %.2f messages per round trip\n",
			       k->name, k->size, line, msgs / line);
		row(b, k->name, k->size, msgs, gbps, mc, -1, -1, cpu, line);
	} else if (!strcmp(k->name, "send")) {
		double msgs;

		double line;

		check_send(b);
		line = line_round_trips(b->secs);
		s0 = snap_take(b);
		msgs = send_rate(b);
		s1 = snap_take(b);
		cpu = snap_cpu(&s0, &s1, &sleeps);
		printf("%-8s %8zu  %10.0f msgs/s  %6.3f GB/s  %28s  server CPU %3.0f%%, %.2f sleeps/doorbell\n", k->name,
		       k->size, msgs, msgs * (double)k->size / 1e9, "", cpu, sleeps);
		printf("%-8s %8zu  cache-line round trips between two CPUs %10.0f /s: %.2f messages per round trip\n",
		       k->name, k->size, line, msgs / line);
		row(b, k->name, k->size, msgs, msgs * (double)k->size / 1e9, -1, -1, -1, cpu, line);
	} else if (!strcmp(k->name, "idle")) {
		/* Attached, set up, and nothing rung: what an idle guest costs the host. */
		s0 = snap_take(b);
		usleep((useconds_t)(IDLE_S * 1e6));
		s1 = snap_take(b);
		cpu = snap_cpu(&s0, &s1, &sleeps);
		printf("%-8s %8s  server CPU %.2f%% over %.0f s, %.0f wake-ups/s\n", k->name, "", cpu, s1.t - s0.t,
		       (double)(s1.sleeps - s0.sleeps) / (s1.t - s0.t));
		row(b, k->name, 0, -1, -1, -1, -1, -1, cpu, -1);
	} else {
		double *lat, sum = 0, med, p99, line = line_round_trips(b->secs);
		size_t n;

		s0 = snap_take(b);
		n = ping_pong(b, &lat);
		s1 = snap_take(b);
		cpu = snap_cpu(&s0, &s1, &sleeps);
		for (size_t i = 0; i < n; i++)
			sum += lat[i];
		med = lat[n / 2] * 1e6;
		p99 = lat[(size_t)((double)n * 0.99)] * 1e6;
		printf("%-8s %8zu  %10.0f round trips/s  median %.2f us, p99 %.2f us, mean %.2f us  server CPU %3.0f%%, "
		       "%.2f sleeps/doorbell\n", k->name, k->size, (double)n / sum, med, p99, sum / (double)n * 1e6, cpu,
		       sleeps);
		printf("%-8s %8zu  cache-line round trip between two CPUs %.3f us: the median is %.0f of them\n", k->name,
		       k->size, 1e6 / line, med / (1e6 / line));
		row(b, k->name, k->size, (double)n / sum, -1, -1, med, p99, cpu, line);
		free(lat);
	}
}

static const struct bmode {
	const char *name;
	const char *const *args;
} modes[] = {
	{ "trapped-nopoll", (const char *const[]){ "-b", "none", "-L", "warn", "--poll-us", "0", NULL } },
	{ "trapped", (const char *const[]){ "-b", "none", "-L", "warn", NULL } },
	{ "mapped", (const char *const[]){ "-b", "none", "-L", "warn", "--mmap-doorbells", NULL } },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* One server: start it, set up, run the picked cases, stop it. 0, or 1 if it did not stop cleanly. */
static int run_mode(struct bench *b, const char *binary, const struct bmode *m, const char *only, const char *poll_us)
{
	const char *args[16];
	char sock[128];
	struct vfc c;
	int status, n = 0;

	while (m->args[n] && n < 12) {
		args[n] = m->args[n];
		n++;
	}
	if (poll_us && strcmp(m->name, "trapped-nopoll")) {
		args[n++] = "--poll-us";
		args[n++] = poll_us;
	}
	args[n] = NULL;

	strcpy(dir, "/tmp/rdma-bench.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp: cannot make the socket directory");
	b->mode = m->name;
	b->posted = 0;
	memset(b->acked, 0, sizeof(b->acked));
	b->server = server_pid = vfc_spawn_server(binary, dir, sock, sizeof(sock), args);
	if (b->server <= 0 || vfc_connect(&c, sock, 20000) || vfc_negotiate(&c))
		die("cannot reach the server");
	setup(b, &c);
	if (!strcmp(m->name, "mapped") && b->g.bar2.base == NULL)
		die("the server offered no doorbell pages to map");
	printf("== %s: server pid %d; RC QPs %u <-> %u, batches of %d, %.1f s per case, doorbells %s, --poll-us %s\n",
	       m->name, (int)b->server, QPN_A, QPN_B, BATCH, b->secs,
	       b->g.bar2.base ? "stored to the mapped BAR2" : "posted writes",
	       strcmp(m->name, "trapped-nopoll") ? (poll_us ? poll_us : "50") : "0");
	fflush(stdout);
	for (size_t i = 0; i < NCASES; i++)
		if (picked(&cases[i], only)) {
			run_case(b, &cases[i]);
			fflush(stdout);
		}
	rg_eq_close(&b->eq);
	ionic_guest_teardown(&b->g);
	vfc_close(&c);
	kill(b->server, SIGTERM);
	waitpid(b->server, &status, 0);
	server_pid = 0;
	rmdir(dir);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	const char *only = argc > 4 && argv[4][0] ? argv[4] : NULL, *mode = argc > 5 && argv[5][0] ? argv[5] : NULL;
	const char *poll_us = argc > 6 && argv[6][0] ? argv[6] : "50"; /* the server defaults to 0 when trapped */
	struct bench b;
	size_t npicked = 0, nmodes = 0;
	int rc = 0;

	for (size_t i = 0; i < NCASES; i++)
		npicked += picked(&cases[i], only);
	for (size_t i = 0; i < NMODES; i++)
		nmodes += !mode || !strcmp(mode, modes[i].name);
	if (argc < 2 || secs <= 0 || npicked == 0 || nmodes == 0) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic [seconds-per-case] [csv-file] [case[:size]] [mode] [poll-us]\n"
			"cases: write (4096, 65536, 1048576), read (65536, 1048576), send (64), pingpong (64), idle\n"
			"modes: trapped-nopoll, trapped, mapped (default: all three)\n", argv[0]);
		return 2;
	}
	memset(&b, 0, sizeof(b));
	b.secs = secs;
	if (argc > 3 && argv[3][0] && (b.csv = fopen(argv[3], "w")) == NULL) {
		perror(argv[3]);
		return 1;
	}
	if (b.csv)
		fprintf(b.csv, "mode,case,size,msgs_per_s,gbps,memcpy_gbps,median_us,p99_us,server_cpu_pct,line_rt_per_s\n");
	for (size_t i = 0; i < NMODES; i++)
		if (!mode || !strcmp(mode, modes[i].name))
			rc |= run_mode(&b, argv[1], &modes[i], only, poll_us);
	if (b.csv)
		fclose(b.csv);
	return rc;
}
