/*
 * nvmeof-durable-ci: a file-backed NVMe-oF namespace keeps every write the
 * controller acknowledged as durable across SIGKILL of the server.
 *
 * The real binary runs with --backend nvmeof:file=IMAGE. This client is the
 * guest: our vfio-user client, the guest-side ionic and RDMA helpers, and a
 * minimal NVMe/RDMA host (tests/lib/nvmf_host.c) that connects through the
 * CM on the GSI queue pair and sends capsules on RC queue pairs, as the stock
 * nvme-rdma host does. It keeps up to four commands in flight: writes of 1
 * to 16 blocks (plain and FUA), Flushes and reads, every block of every write
 * stamped with its LBA and a sequence number (so any block read back names
 * the one write it came from, and is checked byte for byte against it). The
 * server is killed with SIGKILL while commands are in flight, six times,
 * each time restarted on the same image.
 *
 * A block is promised durable by a completed FUA write to it, or by a
 * completed Flush submitted after the write to it completed. After each kill
 * the image is read twice, directly from the file and through a restarted
 * server, and every block must hold exactly its promised write or a later
 * one of the same block (never an older one, never a mix); blocks without a
 * promise may hold any write of theirs or zeroes. Each round ends with a
 * plain write made durable by a Flush and a FUA write after it, so a
 * namespace that held data in process memory (ignoring Flush, or FUA, or
 * both) loses promised blocks and fails here. The page cache survives a
 * process kill, so whether fdatasync is called is what nvmeof-target-unit
 * checks (test_file_crash_model), not this test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/nvmf_host.h"
#include "../lib/vfu_client.h"
#include "../lib/xorshift.h"

#define BS          4096u
#define NBLK        4096u                  /* a 16 MiB image */
#define QD          4
#define MAX_NLB     16u
#define ROUNDS      6
#define HOST_IP     0xc0a8c802u            /* 192.168.200.2 */
#define CTRL_IP     0xc0a8c801u            /* 192.168.200.1, the default ip= */
#define NSID        1
#define DATA_SIZE   (128u << 10)           /* a buffer per tag at NVMF_HOST_IO; one for reading the namespace back */
#define BUF(tag)    (NVMF_HOST_IO + (uint64_t)DATA_SIZE * (tag))
_Static_assert(QD * DATA_SIZE <= NVMF_HOST_IO_LEN && MAX_NLB * BS <= DATA_SIZE, "data buffers");

static const char *binary;
static struct vfc_server srv;
static char img[192], backend[256];
static struct vfc cl;

/* ---- the guest: the NVMe-oF host ---- */

static struct nvmf_host host;

static uint8_t *buf(unsigned tag)
{
	return guest_ptr(&host.g, BUF(tag));
}

static void start(void)
{
	const char *args[] = { "--backend", backend, NULL };

	assert_int_equal(vfc_server_spawn(&srv, binary, args), 0);
	assert_int_equal(vfc_open(&cl, srv.sock, 20000), 0);
	{
		/* A user-space host: its QPs unprivileged, capsules and responses under the region's key. */
		const struct nvmf_host_config hc = {
			.host_ip = HOST_IP, .ctrl_ip = CTRL_IP, .port = 4420, .subnqn = "nvmet-test",
			.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:4e564d65-6475-7261-626c-650000000001",
			.hostid = { 0x4e, 0x56 }, .privileged = false,
		};
		int rc = nvmf_host_setup(&host, &cl, &hc);

		if (rc)
			fail_msg("host set-up: step %d", rc);
		/* Slot 0: the admin queue on QP 40; slot 1: I/O queue 1 on QP 41; 32 entries each. */
		rc = nvmf_host_connect(&host, 0, 40, 0, 32, 0);
		if (rc)
			fail_msg("admin queue connect: %d", rc);
		rc = nvmf_host_connect(&host, 1, 41, 1, 32, 0);
		if (rc)
			fail_msg("I/O queue connect: %d", rc);
	}
}

static void guest_gone(void)
{
	nvmf_host_teardown(&host);
	vfc_close(&cl);
}

/* SIGKILL, right now, whatever is in flight. */
static void kill_server(void)
{
	int status = vfc_server_kill(&srv, SIGKILL);

	assert_true(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	guest_gone();
}

/* ---- blocks that say which write they came from ---- */

struct stamp {
	char magic[8];
	uint64_t lba, seq;
};

static void block_fill(uint8_t *p, uint64_t lba, uint64_t seq)
{
	struct stamp s = { { 'E', 'R', 'N', 'I', 'C', 'D', 'U', 'R' }, lba, seq };
	uint64_t x = (lba + 1) * 0x9e3779b97f4a7c15ull ^ seq * 0xbf58476d1ce4e5b9ull;

	for (size_t i = sizeof(s); i < BS; i += 8) {
		xorshift64(&x);
		memcpy(p + i, &x, 8);
	}
	memcpy(p, &s, sizeof(s));
}

/* The sequence number of the write a block came from: 0 for zeroes, -1 for anything else. */
static int64_t block_seq(const uint8_t *p, uint64_t lba)
{
	static uint8_t want[BS];
	static const uint8_t zero[BS];
	struct stamp s;

	if (memcmp(p, zero, BS) == 0)
		return 0;
	memcpy(&s, p, sizeof(s));
	if (memcmp(s.magic, "ERNICDUR", 8) != 0 || s.lba != lba || s.seq == 0 || s.seq > INT64_MAX)
		return -1;
	block_fill(want, lba, s.seq);
	return memcmp(p, want, BS) == 0 ? (int64_t)s.seq : -1;
}

/* ---- the model ---- */

static uint64_t durable[NBLK];   /* the write promised durable (0: none) */
static uint64_t acked[NBLK];     /* the last write that completed */
static uint64_t issued[NBLK];    /* the last write sent */
static uint8_t busy[NBLK];       /* a command in flight covers it */
static uint64_t next_seq = 1;
static unsigned promised_checked, latest_seen;

struct cmd {
	bool used;
	uint8_t op;
	bool fua;
	uint64_t slba, seq;
	uint32_t nlb;
	uint64_t snap[NBLK];         /* Flush: what had completed when it was sent */
};

static struct cmd cmds[QD];
static uint32_t rng = 0x2545f491u;

static uint32_t rnd(uint32_t n)
{
	return xorshift32(&rng) % n;
}

/* Every block of [slba, slba + nlb) is free of commands in flight. */
static bool range_free(uint64_t slba, uint32_t nlb)
{
	for (uint32_t i = 0; i < nlb; i++)
		if (busy[slba + i])
			return false;
	return true;
}

static void send_cmd(unsigned tag, uint8_t op, bool fua, uint64_t slba, uint32_t nlb)
{
	struct cmd *c = &cmds[tag];
	uint8_t sqe[64], *d = buf(tag);

	memset(c, 0, offsetof(struct cmd, snap));
	c->used = true;
	c->op = op;
	c->fua = fua;
	c->slba = slba;
	c->nlb = nlb;
	if (op == NVMF_OP_FLUSH) {
		memcpy(c->snap, acked, sizeof(acked));
		nvmf_sqe(sqe, NVMF_OP_FLUSH, (uint16_t)tag, NSID);
		assert_int_equal(nvmf_host_submit(&host, 1, sqe), 0);
		return;
	}
	for (uint32_t i = 0; i < nlb; i++)
		busy[slba + i] = 1;
	if (op == NVMF_OP_WRITE) {
		c->seq = next_seq++;
		for (uint32_t i = 0; i < nlb; i++) {
			block_fill(d + (size_t)i * BS, slba + i, c->seq);
			issued[slba + i] = c->seq;
		}
	} else {
		memset(d, 0xee, (size_t)nlb * BS);
	}
	nvmf_sqe_rw(sqe, op, (uint16_t)tag, NSID, slba, nlb, fua ? NVMF_RW_FUA : 0);
	nvmf_sqe_data(sqe, BUF(tag), nlb * BS, NVMF_HOST_MR_KEY);
	assert_int_equal(nvmf_host_submit(&host, 1, sqe), 0);
}

/* One response: its command's promises enter the model. */
static void reap_one(void)
{
	struct nvmf_cpl cpl;
	struct cmd *c;

	if (nvmf_host_rsp(&host, 1, &cpl, NVMF_HOST_TIMEOUT_MS) != 1)
		fail_msg("no response");
	assert_true(cpl.cid < QD);
	c = &cmds[cpl.cid];
	assert_true(c->used);
	if (cpl.status != 0)
		fail_msg("opcode %u at LBA %llu: status 0x%x", c->op, (unsigned long long)c->slba, cpl.status);
	c->used = false;
	if (c->op == NVMF_OP_FLUSH) {
		for (uint32_t b = 0; b < NBLK; b++)
			if (c->snap[b] > durable[b])
				durable[b] = c->snap[b];
		return;
	}
	for (uint32_t i = 0; i < c->nlb; i++) {
		uint64_t b = c->slba + i;

		busy[b] = 0;
		if (c->op == NVMF_OP_WRITE) {
			acked[b] = c->seq;
			if (c->fua)
				durable[b] = c->seq;
		} else if (block_seq(buf(cpl.cid) + (size_t)i * BS, b) != (int64_t)acked[b]) {
			/* Nothing was in flight on this block while the read ran: it reads the last write. */
			fail_msg("read of LBA %llu: not write %llu", (unsigned long long)b, (unsigned long long)acked[b]);
		}
	}
}

static unsigned in_flight(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < QD; i++)
		n += cmds[i].used;
	return n;
}

static int free_tag(void)
{
	for (unsigned i = 0; i < QD; i++)
		if (!cmds[i].used)
			return (int)i;
	return -1;
}

/* Send a random command if a tag and a range are free (Flush and FUA only if durable_ops). */
static void send_random(bool durable_ops)
{
	int tag = free_tag();
	uint32_t r = rnd(100), nlb = 1 + rnd(MAX_NLB);
	uint64_t slba = rnd(NBLK - nlb + 1);

	if (tag < 0)
		return;
	if (r < 15 && durable_ops) {
		send_cmd((unsigned)tag, NVMF_OP_FLUSH, false, 0, 0);
	} else if (range_free(slba, nlb)) {
		if (r < 65)
			send_cmd((unsigned)tag, NVMF_OP_WRITE, false, slba, nlb);
		else if (r < 85)
			send_cmd((unsigned)tag, NVMF_OP_WRITE, durable_ops, slba, nlb);
		else
			send_cmd((unsigned)tag, NVMF_OP_READ, false, slba, nlb);
	}
}

/* One command alone, waited for. */
static void one(uint8_t op, bool fua, uint64_t slba, uint32_t nlb)
{
	assert_int_equal(in_flight(), 0);
	send_cmd(0, op, fua, slba, nlb);
	reap_one();
}

/* ---- checking an image against the model ---- */

/* Block b holds seq: allowed by the model? */
static void check_block(uint64_t b, int64_t seq, const char *where)
{
	if (seq < 0)
		fail_msg("%s: LBA %llu holds neither zeroes nor one whole write", where, (unsigned long long)b);
	if ((uint64_t)seq > issued[b])
		fail_msg("%s: LBA %llu holds write %lld, never sent", where, (unsigned long long)b, (long long)seq);
	if ((uint64_t)seq < durable[b])
		fail_msg("%s: LBA %llu holds write %lld, older than write %llu that was promised durable", where,
			 (unsigned long long)b, (long long)seq, (unsigned long long)durable[b]);
	if (durable[b])
		promised_checked++;
	if ((uint64_t)seq == acked[b])
		latest_seen++;
}

/* The image file itself, read after the server died; its content goes into *copy. */
static void check_file(uint8_t *copy)
{
	int fd = open(img, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, copy, (size_t)NBLK * BS, 0), (ssize_t)NBLK * BS);
	close(fd);
	for (uint64_t b = 0; b < NBLK; b++)
		check_block(b, block_seq(copy + b * BS, b), "image file");
}

/* The namespace read through the restarted server: the same bytes as the file. */
static void check_namespace(const uint8_t *copy)
{
	const uint32_t per = DATA_SIZE / BS;

	for (uint64_t b = 0; b < NBLK; b += per) {
		uint8_t sqe[64];
		struct nvmf_cpl cpl;

		nvmf_sqe_rw(sqe, NVMF_OP_READ, nvmf_host_cid(&host, 1), NSID, b, per, 0);
		nvmf_sqe_data(sqe, BUF(0), per * BS, NVMF_HOST_MR_KEY);
		assert_int_equal(nvmf_host_command(&host, 1, sqe, &cpl), 0);
		if (memcmp(buf(0), copy + b * BS, (size_t)per * BS) != 0)
			fail_msg("LBAs %llu-%llu read through the server differ from the image file",
				 (unsigned long long)b, (unsigned long long)(b + per - 1));
	}
}

/* After a check, what the image holds is what completed (nothing is in flight any more). */
static void model_settle(const uint8_t *copy)
{
	for (uint64_t b = 0; b < NBLK; b++) {
		acked[b] = (uint64_t)block_seq(copy + b * BS, b);
		busy[b] = 0;
	}
	memset(cmds, 0, sizeof(cmds));
}

/* ---- the test ---- */

static void traffic(unsigned ops)
{
	unsigned done = 0;

	while (done < ops) {
		while (in_flight() < QD && rnd(4) != 0)
			send_random(true);
		if (in_flight() == 0)
			send_random(true);
		if (in_flight()) {
			reap_one();
			done++;
		}
	}
	while (in_flight())
		reap_one();
}

static void test_kill_during_traffic(void **state)
{
	static uint8_t copy[(size_t)NBLK * BS];
	const uint32_t tail = 1000;     /* the round's last promises: LBAs tail.. */

	(void)state;
	start();
	for (unsigned round = 0; round < ROUNDS; round++) {
		unsigned before = promised_checked, flying;
		const uint64_t t_flush = tail + 40 * round, t_fua = t_flush + 16;

		rng = 0x2545f491u + round;
		traffic(300 + rnd(300));
		/*
		 * The round's last promises, nothing after them that could write back: a plain write
		 * made durable by a Flush and a FUA write, in one order or the other (a namespace that
		 * honours only one of the two may still cover the other with it when it comes later).
		 */
		if (round % 2 == 0) {
			one(NVMF_OP_WRITE, true, t_fua, 8);
			one(NVMF_OP_WRITE, false, t_flush, 8);
			one(NVMF_OP_FLUSH, false, 0, 0);
		} else {
			one(NVMF_OP_WRITE, false, t_flush, 8);
			one(NVMF_OP_FLUSH, false, 0, 0);
			one(NVMF_OP_WRITE, true, t_fua, 8);
		}
		/* Then plain writes and reads in flight, and the kill. */
		for (unsigned i = 0; i < 64 && in_flight() < QD; i++)
			send_random(false);
		flying = in_flight();
		usleep(rnd(3000)); /* the server may be anywhere in them */
		kill_server();
		check_file(copy);
		start();
		check_namespace(copy);
		model_settle(copy);
		/* The round's own promises were among those checked. */
		assert_true(durable[t_flush] != 0 && durable[t_fua] != 0);
		assert_true(promised_checked - before >= 16);
		print_message("round %u: killed with %u commands in flight; %u promised blocks held, %u blocks at "
			      "their last write\n", round, flying, promised_checked - before, latest_seen);
		latest_seen = 0;
	}
	/* A clean stop still works on an image that went through all of it. */
	{
		int status = vfc_server_kill(&srv, SIGTERM);

		guest_gone();
		assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
		check_file(copy);
	}
}

static int setup(void **state)
{
	int fd;

	(void)state;
	if (vfc_server_mkdir(&srv, "nvmeof-durable-ci"))
		return -1;
	snprintf(img, sizeof(img), "%s/ns.img", srv.dir);
	snprintf(backend, sizeof(backend), "nvmeof:file=%s,size=%u,bs=%u", img, NBLK * BS, BS);
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return vfc_server_remove(&srv);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kill_during_traffic, setup, teardown),
	};

	binary = vfc_test_binary(argc, argv);
	if (!binary)
		return 2;
	return cmocka_run_group_tests_name("nvmeof-durable-ci", tests, NULL, NULL);
}
