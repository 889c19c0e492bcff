/*
 * nvmeof-rdma-bench: what an NVMe-oF 4 KiB read costs the server, end to end through the device,
 * as a host with KVM would see it (issue 27): no guest and no QEMU, but the real server driven over
 * vfio-user by our own host (tests/lib/nvmf_host.c), which does what nvme-rdma over ionic_rdma
 * does: the connection manager over the GSI QP, Fabrics Connect on an admin and an I/O queue, then
 * each read a 64-byte capsule SENT on the I/O queue's RC QP with a 16-byte receive posted for its
 * response, the controller RDMA-WRITING the 4 KiB into the host's registration and SENDING the
 * response. Completions are polled in guest memory; per batch of responses the host reposts the
 * receives and capsules it freed and rings the RQ and SQ doorbells once each, and acknowledges the
 * two CQs once each (four posted vfio-user writes per batch, as the kernel's driver rings one
 * doorbell per queue per batch). The -fr cases add nvme-rdma's per-I/O fast registration: a
 * REG_MR work request (unsignaled, the buffer's one page, the key byte one more each time)
 * before each capsule on the same SQ doorbell, the capsule's keyed SGL asking for remote
 * invalidation, and the controller answering with SEND with invalidate, which unregisters the
 * buffer again (as nvme-rdma with ionic_rdma and nvmet-rdma do; a key left valid would fail the
 * next REG_MR).
 *
 *   qd1    one read outstanding: operations per second and server CPU per operation
 *   qd32   32 outstanding, kept full: the same
 *   qd1-fr, qd32-fr  the same with fast registration per read
 *   region-read  the denominator: a vfio-user REGION_READ of one register, round trip, which is
 *          the least a message costs the server (socket wake, header, body, answer)
 *   memcpy  the other denominator: 4 KiB copied, the data movement of one read
 *
 * Server CPU is its run time from /proc/PID/schedstat over the operations. Every read's data is
 * checked against what was written first (a pattern over the namespace's first 8 MiB), so a wrong
 * byte fails the run. The namespace is RAM (nvmeof:size=64M,bs=4096).
 *
 * Usage: nvmeof-rdma-bench path/to/rocm-ernic [seconds-per-case] [csv-file] [poll-us]
 * The CSV has one row per measurement: case,ops_per_s,server_us_per_op,server_cpu_pct
 * (region-read: round trips; memcpy: ns per copy in server_us_per_op's column as us).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ionic_rdma_guest.h"
#include "nvmf_host.h"
#include "vfu_client.h"

#include "bench_clock.h"

#define NSID      1
#define BS        4096u
#define IO_SLOTS  (NVMF_HOST_IO_LEN / BS)   /* 4 KiB data buffers in the host's region */
#define CHECK_BLKS 2048u                     /* 8 MiB written and checked */
#define IOQ       1                          /* the I/O queue's slot */
#define QSIZE     128
#define PD        1                          /* nvmf_host's protection domain */
#define FR_INDEX0 16                         /* the fast-registration MRs: index FR_INDEX0 + tag */
_Static_assert(QSIZE * BS <= NVMF_HOST_IO_LEN, "a data buffer per tag");

static struct vfc_server srv;
static struct vfc cl;
static struct nvmf_host host;
static double seconds = 1.0;

static double now_s(void)
{
	return bench_now_s();
}

/* The server's time on a CPU so far, in ns. */
static uint64_t server_ns(void)
{
	return bench_cpu_ns(srv.pid);
}

static uint8_t pat(uint64_t blk, uint32_t i)
{
	return (uint8_t)((blk * 2654435761u + i * 31u) >> 3);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "nvmeof-rdma-bench: %s (%d)\n", what, rc);
	vfc_server_remove(&srv);
	exit(1);
}

static uint64_t buf_addr(unsigned tag)
{
	return NVMF_HOST_IO + (uint64_t)(tag % IO_SLOTS) * BS;
}

/* A 4 KiB read (or write) of block blk into (from) buffer tag, with its CID = tag + 1. */
static void rw_sqe(uint8_t sqe[64], uint8_t op, unsigned tag, uint64_t blk)
{
	nvmf_sqe_rw(sqe, op, (uint16_t)(tag + 1), NSID, blk, 1, 0);
	nvmf_sqe_data(sqe, buf_addr(tag), BS, NVMF_HOST_MR_KEY);
}

static bool fast_reg;                        /* the -fr cases */
static uint8_t fr_key[QSIZE];                /* each fast-registration MR's key byte */

/* ib_alloc_mr for every tag (no pages, UKEY_EN | INV_EN). */
static void fast_reg_setup(void)
{
	for (unsigned t = 0; t < QSIZE; t++) {
		int rc = rg_mr_create(&host.g, &host.aq, FR_INDEX0 + t, 0x80, PD, 0, 0, 0, 0, RG_MRF_FAST_REG, 12);

		if (rc != RG_ASTS_OK)
			die("a fast-registration MR could not be made", rc);
		fr_key[t] = 0x80;
	}
}

/* The receive for its response and the capsule of a read (after its REG_MR with fast registration). */
static void put_read(struct rg_qp *qp, unsigned tag, uint64_t blk)
{
	uint8_t sqe[64];

	nvmf_host_recv_put(&host, IOQ);
	rw_sqe(sqe, NVMF_OP_READ, tag, blk);
	if (fast_reg) {
		uint8_t k = ++fr_key[tag];
		uint32_t key = RG_KEY(FR_INDEX0 + tag, k);

		/* one page: ionic_rdma puts its address in the work request itself, no list */
		rg_post_reg_mr(&host.g, qp, 0, 0, key, k, buf_addr(tag), BS, 0, buf_addr(tag), 1,
			       RG_MRF_LOCAL_WRITE | RG_MRF_REMOTE_WRITE, 12);
		rg_le32(sqe + 35, key);
		sqe[39] = 0x4 << 4 | 0xf;           /* keyed data block, invalidate the key when done */
	}
	nvmf_host_capsule_put(&host, IOQ, sqe);
}

/* Fill the first CHECK_BLKS blocks with the pattern, one write at a time (not timed). */
static void write_pattern(void)
{
	uint8_t sqe[64];
	struct nvmf_cpl cpl;

	for (uint64_t b = 0; b < CHECK_BLKS; b++) {
		uint8_t *p = guest_ptr(&host.g, buf_addr(0));

		for (uint32_t i = 0; i < BS; i++)
			p[i] = pat(b, i);
		rw_sqe(sqe, NVMF_OP_WRITE, 0, b);
		if (nvmf_host_command(&host, IOQ, sqe, &cpl) != 0)
			die("a write of the pattern failed", (int)b);
	}
}

/* The next CQE of cq if one is there (spinning is the caller's). */
static bool poll_cq(struct rg_cq *cq, uint8_t cqe[RG_CQE_SIZE])
{
	return rg_cq_poll(&host.g, cq, cqe);
}

/*
 * Reads at queue depth qd for `seconds`: each completed one checked, then another put in its place.
 * Returns operations per second; *us_per_op the server's CPU per operation, *cpu its share.
 */
static double run_reads(unsigned qd, double *us_per_op, double *cpu)
{
	struct rg_qp *qp = &host.q[IOQ].qp;
	uint8_t cqe[RG_CQE_SIZE];
	uint64_t blk[QSIZE], next = 0, ops = 0, ns0;
	unsigned next_tag = 0;
	double t0, t;

	/* prime: qd receives and qd capsules, one doorbell each */
	for (unsigned i = 0; i < qd; i++) {
		unsigned tag = next_tag++;

		blk[tag % QSIZE] = next % CHECK_BLKS;
		next += 7;
		put_read(qp, tag % QSIZE, blk[tag % QSIZE]);
	}
	ns0 = server_ns();
	t0 = now_s();
	rg_rq_ring(&host.g, qp);
	rg_sq_ring(&host.g, qp);
	do {
		unsigned got = 0;

		/* SEND completions: taken and dropped (the capsule buffers are reused by tag) */
		while (poll_cq(nvmf_host_scq(&host, IOQ), cqe)) {
			if (rg_cqe_error(cqe))
				die("a capsule's SEND completed in error", (int)rg_cqe_error(cqe));
		}
		while (poll_cq(nvmf_host_rcq(&host, IOQ), cqe)) {
			struct nvmf_cpl cpl;
			uint64_t slot = rg_cqe_wqe_id(cqe);
			unsigned tag;
			const uint8_t *p;

			if (rg_cqe_type(cqe) != RG_CQE_RECV || rg_cqe_error(cqe) || slot >= (1u << NVMF_HOST_QP_DEPTH_LOG2))
				die("a response's receive completed wrong", (int)rg_cqe_error(cqe));
			nvmf_cpl_parse(&cpl, guest_ptr(&host.g, NVMF_HOST_RSP(IOQ) + 64 * slot));
			if (cpl.status != 0 || cpl.cid == 0 || cpl.cid > QSIZE)
				die("a read failed", cpl.status);
			tag = cpl.cid - 1u;
			p = guest_ptr(&host.g, buf_addr(tag));
			/* checked: the first and last bytes always, every byte of one read in 64 */
			if (p[0] != pat(blk[tag], 0) || p[BS - 1] != pat(blk[tag], BS - 1))
				die("a read returned wrong bytes", (int)blk[tag]);
			if ((ops & 63) == 0)
				for (uint32_t i = 0; i < BS; i++)
					if (p[i] != pat(blk[tag], i))
						die("a read returned a wrong byte", (int)i);
			ops++;
			got++;
			blk[tag] = next % CHECK_BLKS;
			next += 7;
			put_read(qp, tag, blk[tag]);
		}
		if (got) {
			rg_rq_ring(&host.g, qp);
			rg_sq_ring(&host.g, qp);
			rg_cq_ack(&host.g, nvmf_host_rcq(&host, IOQ));
			rg_cq_ack(&host.g, nvmf_host_scq(&host, IOQ));
		}
		t = now_s();
	} while (t - t0 < seconds);
	*us_per_op = (double)(server_ns() - ns0) / 1e3 / (double)(ops ? ops : 1);
	*cpu = (double)(server_ns() - ns0) / 1e9 / (t - t0) * 100.0;
	/* drain what is still in flight, so the next case starts from an empty queue */
	for (unsigned left = qd; left > 0;) {
		if (poll_cq(nvmf_host_rcq(&host, IOQ), cqe))
			left--;
		while (poll_cq(nvmf_host_scq(&host, IOQ), cqe))
			;
	}
	rg_cq_ack(&host.g, nvmf_host_rcq(&host, IOQ));
	rg_cq_ack(&host.g, nvmf_host_scq(&host, IOQ));
	return (double)ops / (t - t0);
}

int main(int argc, char **argv)
{
	const char *bin = argc > 1 ? argv[1] : NULL;
	const char *csv_path = argc > 3 && argv[3][0] ? argv[3] : NULL;
	const char *poll = argc > 4 && argv[4][0] ? argv[4] : "0";
	const char *args[] = { "--backend", "nvmeof:size=64M,bs=4096", "--poll-us", poll, NULL };
	const struct nvmf_host_config hc = {
		.host_ip = 0xc0a8c802u, .ctrl_ip = 0xc0a8c801u, .port = 4420, .subnqn = "nvmet-test",
		.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000bb",
		.hostid = { 0xbb }, .privileged = true,
	};
	FILE *csv = NULL;
	int rc;

	if (bin == NULL) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic [seconds-per-case] [csv-file] [poll-us]\n", argv[0]);
		return 2;
	}
	if (argc > 2 && argv[2][0])
		seconds = atof(argv[2]);
	if (seconds <= 0)
		seconds = 1.0;
	if (vfc_server_start(&srv, "nvmeof-rdma-bench", bin, args))
		die("cannot start the server", 0);
	if (vfc_open(&cl, srv.sock, 20000))
		die("cannot connect to the server", 0);
	ionic_guest_seal_memory(true); /* guest RAM as QEMU's memfd backend gives it (the server copies unguarded) */
	if ((rc = nvmf_host_setup(&host, &cl, &hc)) != 0)
		die("host set-up", rc);
	if ((rc = nvmf_host_connect(&host, 0, 40, 0, 32, 0)) != 0)
		die("admin queue connect", rc);
	if ((rc = nvmf_host_connect(&host, IOQ, 41, 1, QSIZE, 0)) != 0)
		die("I/O queue connect", rc);
	write_pattern();
	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (csv)
			fprintf(csv, "case,ops_per_s,server_us_per_op,server_cpu_pct\n");
	}
	printf("nvmeof-rdma-bench: %.1f s per case, server --poll-us %s\n", seconds, poll);
	fast_reg_setup();
	/*
	 * A B B A twice over: the depths alternated, and without and with fast registration, so that
	 * neither is always measured on a warmer server.
	 */
	{
		static const struct { unsigned qd; bool fr; } order[] = {
			{ 1, false }, { 32, false }, { 32, true }, { 1, true },
			{ 1, true }, { 32, true }, { 32, false }, { 1, false },
		};

		for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			double us, cpu, ops;

			fast_reg = order[i].fr;
			ops = run_reads(order[i].qd, &us, &cpu);
			printf("  qd%-2u%s read 4 KiB: %9.0f ops/s, server %6.2f us/op (CPU %5.1f%%)\n", order[i].qd,
			       fast_reg ? "-fr" : "   ", ops, us, cpu);
			fflush(stdout);
			if (csv)
				fprintf(csv, "qd%u%s,%.0f,%.3f,%.1f\n", order[i].qd, fast_reg ? "-fr" : "", ops, us, cpu);
		}
	}
	/* the denominators: a message round trip, and the copy */
	bench_region_read(&cl, srv.pid, seconds, csv);
	if (host.eq.irq_fd >= 0 && bench_posted_irq(&cl, srv.pid, host.eq.irq_fd, host.eq.intr, seconds, csv))
		die("a posted interrupt trigger was not signalled", 0);
	{
		double us = bench_memcpy_us(BS, seconds);

		printf("  memcpy 4 KiB: %.0f ns each\n", us * 1e3);
		fflush(stdout);
		if (csv && us > 0)
			fprintf(csv, "memcpy,%.0f,%.4f,\n", 1e6 / us, us);
	}
	if (csv)
		fclose(csv);
	nvmf_host_teardown(&host);
	vfc_close(&cl);
	if (vfc_server_stop(&srv)) {
		fprintf(stderr, "nvmeof-rdma-bench: the server did not exit cleanly\n");
		return 1;
	}
	return 0;
}
