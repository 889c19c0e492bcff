/*
 * nvmeof-target-unit: the NVMe-oF controller fed capsules as the RDMA data
 * path will feed them. Guest memory is a fake behind struct dma_ops with a
 * small key table; responses are captured as the transport would receive
 * them. Every check is on what the target put into guest memory or into a
 * response capsule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/xorshift.h"
#include "nvmeof/nvmeof_target.h"
#include "util/backend_opts.h"

/* ---- seams: fdatasync is interposed so durability ordering can be observed ---------------- */

static int fdatasync_calls;
static int fdatasync_fail; /* errno to fail with, 0 = succeed */
static int crash_fd = -1;  /* the image whose writebacks test_file_crash_model watches */
static void crash_snapshot(void);

int fdatasync(int fd)
{
	int rc;

	fdatasync_calls++;
	if (fdatasync_fail) {
		errno = fdatasync_fail;
		return -1;
	}
	rc = (int)syscall(SYS_fdatasync, fd);
	if (rc == 0 && fd == crash_fd)
		crash_snapshot();
	return rc;
}

/* ---- fake guest memory -------------------------------------------------------------------- */

#define GUEST_MEM (4u << 20)
#define GUEST_BASE 0x100000000ull

enum { ACC_READ = 1, ACC_WRITE = 2 }; /* what the controller may do: RDMA READ / WRITE */

struct key_entry {
	uint32_t key;
	uint64_t addr, len;
	int access;
};

static uint8_t *guest;
static struct key_entry keys[8];
static int dma_reads, dma_writes;

static struct key_entry *key_find(uint32_t key)
{
	for (unsigned int i = 0; i < 8; i++)
		if (key && keys[i].key == key)
			return &keys[i];
	return NULL;
}

static int fake_access(uint32_t key, uint64_t addr, size_t len, int acc, uint8_t **p)
{
	struct key_entry *k = key_find(key);

	if (!k)
		return -ENOKEY;
	if (!(k->access & acc))
		return -EACCES;
	if (addr < k->addr || addr - k->addr > k->len || len > k->len - (addr - k->addr))
		return -EFAULT;
	*p = guest + (addr - GUEST_BASE);
	return 0;
}

static int fake_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	uint8_t *p;
	int rc = fake_access(key, addr, len, ACC_READ, &p);

	(void)ctx;
	if (rc == 0) {
		memcpy(dst, p, len);
		dma_reads++;
	}
	return rc;
}

static int fake_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	uint8_t *p;
	int rc = fake_access(key, addr, len, ACC_WRITE, &p);

	(void)ctx;
	if (rc == 0) {
		memcpy(p, src, len);
		dma_writes++;
	}
	return rc;
}

static const struct dma_ops dma = { .read = fake_read, .write = fake_write };

static void key_add(uint32_t key, uint64_t off, uint64_t len, int access)
{
	for (unsigned int i = 0; i < 8; i++) {
		if (keys[i].key == 0 || keys[i].key == key) {
			keys[i] = (struct key_entry){ key, GUEST_BASE + off, len, access };
			return;
		}
	}
	fail_msg("key table full");
}

/* ---- fake transport ---------------------------------------------------------------------------- */

#define MAX_RSP 512
struct rsp {
	void *qp;
	struct nvme_cpl cpl;
	uint32_t inv;
	int fdatasync_calls; /* how many had happened when the response was sent */
};

static struct rsp rsps[MAX_RSP];
static int nrsp;
static void *disconnects[2 * (NVMEOF_QUEUES_MAX + 2)];
static int ndisconnect;
static uint64_t clock_ms;
static struct nvmeof_target *tgt;
static bool destroy_on_disconnect;

/* Transport handles: each fake connection is an index into qps[]. */
static struct nvmeof_qpair *qps[NVMEOF_QUEUES_MAX + 2];

static void on_rsp(void *ctx, void *qp, const struct nvme_cpl *cpl, uint32_t inv)
{
	(void)ctx;
	assert_true(nrsp < MAX_RSP);
	rsps[nrsp++] = (struct rsp){ qp, *cpl, inv, fdatasync_calls };
}

static void on_disconnect(void *ctx, void *qp)
{
	(void)ctx;
	assert_true(ndisconnect < (int)(sizeof(disconnects) / sizeof(disconnects[0])));
	disconnects[ndisconnect++] = qp;
	if (destroy_on_disconnect) {
		size_t i = (size_t)(uintptr_t)qp;

		nvmeof_qpair_destroy(qps[i]);
		qps[i] = NULL;
	}
}

static uint64_t on_now(void *ctx)
{
	(void)ctx;
	return clock_ms;
}

static const struct nvmeof_target_ops ops = { NULL, on_rsp, on_disconnect, on_now };

/* ---- fixtures ------------------------------------------------------------------------------------ */

static struct nvmeof_config cfg;
static struct nvmeof_ns ns;
static char dir[64], img[96];

static void reset_globals(void)
{
	memset(keys, 0, sizeof(keys));
	memset(qps, 0, sizeof(qps));
	memset(guest, 0, GUEST_MEM);
	nrsp = ndisconnect = dma_reads = dma_writes = 0;
	fdatasync_calls = fdatasync_fail = 0;
	destroy_on_disconnect = true;
	clock_ms = 1000;
}

static int open_target(const char *spec)
{
	struct backend_config b;
	char err[256];

	if (!guest)
		guest = malloc(GUEST_MEM);
	reset_globals();
	if (backend_config_parse(spec, &b, err, sizeof(err)))
		fail_msg("%s: %s", spec, err);
	cfg = b.nvmeof;
	memset(&ns, 0, sizeof(ns));
	ns.fd = -1;
	if (nvmeof_ns_open(&ns, &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	tgt = nvmeof_target_create(&cfg, &ns, &ops);
	return tgt ? 0 : -1;
}

static int setup_ram(void **state)
{
	(void)state;
	return open_target("nvmeof:size=1M,bs=512,queues=4");
}

static int setup_file(void **state)
{
	char spec[160];

	(void)state;
	strcpy(dir, "/tmp/nvmeof-target-unit.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/ns.img", dir);
	snprintf(spec, sizeof(spec), "nvmeof:file=%s,size=1M,bs=4096", img);
	return open_target(spec);
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(qps) / sizeof(qps[0]); i++) {
		nvmeof_qpair_destroy(qps[i]);
		qps[i] = NULL;
	}
	nvmeof_target_destroy(tgt);
	tgt = NULL;
	nvmeof_ns_close(&ns);
	if (dir[0]) {
		unlink(img);
		rmdir(dir);
		dir[0] = '\0';
	}
	return 0;
}

/* ---- capsule builders ------------------------------------------------------------------------------ */

static struct nvme_cmd cmd_new(uint8_t opcode, uint16_t cid)
{
	struct nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.cid = cid;
	c.flags = 1u << 6; /* PSDT: SGL */
	c.dptr.type = NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4; /* keyed, length 0: no data */
	return c;
}

/* An NVM command set command on namespace nsid, no data. */
static struct nvme_cmd io_cmd(uint8_t opcode, uint16_t cid, uint32_t nsid)
{
	struct nvme_cmd c = cmd_new(opcode, cid);

	c.nsid = le32_set(nsid);
	return c;
}

static void sgl_keyed(struct nvme_cmd *c, uint32_t key, uint64_t off, uint32_t len, uint8_t sub)
{
	c->dptr.addr = le64_set(GUEST_BASE + off);
	c->dptr.length[0] = (uint8_t)len;
	c->dptr.length[1] = (uint8_t)(len >> 8);
	c->dptr.length[2] = (uint8_t)(len >> 16);
	for (int i = 0; i < 4; i++)
		c->dptr.key[i] = (uint8_t)(key >> (8 * i));
	c->dptr.type = (uint8_t)(NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4 | sub);
}

/* Submit one capsule; returns the number of responses it produced. */
static int submit(size_t qi, const struct nvme_cmd *c)
{
	int before = nrsp;

	nvmeof_qpair_recv(qps[qi], c, sizeof(*c));
	return nrsp - before;
}

static const struct nvme_cpl *last(void)
{
	assert_true(nrsp > 0);
	return &rsps[nrsp - 1].cpl;
}

static uint16_t st_of(const struct nvme_cpl *c) { return (uint16_t)(le16_get(c->status) >> 1); }

/* Submit and expect exactly one response with status st; returns it. */
static const struct nvme_cpl *expect(size_t qi, const struct nvme_cmd *c, uint16_t st)
{
	assert_int_equal(submit(qi, c), 1);
	assert_int_equal(last()->cid, c->cid);
	if (st_of(last()) != st)
		fail_msg("opcode 0x%02x cid %u: status 0x%04x, expected 0x%04x", c->opcode, c->cid,
			 st_of(last()), st);
	return last();
}

#define DNR(sc) ((uint16_t)((sc) | NVME_STATUS_DNR))
#define DATA_OFF 0x10000u   /* connect data lives here in guest memory */
#define BUF_OFF 0x20000u    /* identify/log buffers */
#define IO_OFF 0x100000u    /* I/O payloads */
#define K_DATA 0x1234u      /* key covering everything, both directions */
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"

static void qp_open(size_t qi, uint16_t qid, uint16_t sqsize)
{
	qps[qi] = nvmeof_qpair_create(tgt, qid, sqsize, &dma, (void *)(uintptr_t)qi);
	assert_non_null(qps[qi]);
}

static struct nvme_cmd connect_cmd(uint16_t cid, uint16_t qid, uint16_t sqsize, uint32_t kato,
				   const char *subnqn, const char *hostnqn, uint16_t cntlid)
{
	struct nvme_cmd c = cmd_new(NVME_FABRICS, cid);
	struct nvmf_connect_cmd *cc = (struct nvmf_connect_cmd *)&c;
	struct nvmf_connect_data *d = (struct nvmf_connect_data *)(guest + DATA_OFF);

	cc->fctype = NVMF_FCTYPE_CONNECT;
	cc->qid = le16_set(qid);
	cc->sqsize = le16_set(sqsize);
	cc->kato = le32_set(kato);
	memset(d, 0, sizeof(*d));
	d->hostid[0] = 0xab;
	d->cntlid = le16_set(cntlid);
	memcpy(d->subnqn, subnqn, strnlen(subnqn, sizeof(d->subnqn)));
	memcpy(d->hostnqn, hostnqn, strnlen(hostnqn, sizeof(d->hostnqn)));
	sgl_keyed(&c, K_DATA, DATA_OFF, sizeof(*d), NVME_SGL_SUBTYPE_ADDRESS);
	return c;
}

static struct nvme_cmd prop_cmd(uint16_t cid, bool set, uint32_t off, unsigned int size8, uint64_t v)
{
	struct nvme_cmd c = cmd_new(NVME_FABRICS, cid);
	struct nvmf_property_cmd *p = (struct nvmf_property_cmd *)&c;

	p->fctype = set ? NVMF_FCTYPE_PROPERTY_SET : NVMF_FCTYPE_PROPERTY_GET;
	p->attrib = (uint8_t)size8;
	p->offset = le32_set(off);
	p->value = le64_set(v);
	return c;
}

static uint64_t prop_get(size_t qi, uint32_t off, unsigned int size8)
{
	struct nvme_cmd c = prop_cmd(0x50, false, off, size8, 0);
	const struct nvme_cpl *r = expect(qi, &c, 0);

	return (uint64_t)le32_get(r->cdw1) << 32 | le32_get(r->cdw0);
}

#define CC_ENABLE (1u | 6u << 16 | 4u << 20)

/* Admin queue in slot 0: connect, enable; returns the cntlid. */
static uint16_t admin_up(uint32_t kato)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	key_add(K_DATA, 0, GUEST_MEM, ACC_READ | ACC_WRITE);
	qp_open(0, 0, 31);
	c = connect_cmd(1, 0, 31, kato, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	cntlid = (uint16_t)le32_get(expect(0, &c, 0)->cdw0);
	c = prop_cmd(2, true, NVME_REG_CC, 0, CC_ENABLE);
	expect(0, &c, 0);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0) & NVME_CSTS_RDY, NVME_CSTS_RDY);
	return cntlid;
}

static void io_up(size_t qi, uint16_t qid, uint16_t cntlid)
{
	struct nvme_cmd c;

	qp_open(qi, qid, 127);
	c = connect_cmd(3, qid, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	assert_int_equal(le32_get(expect(qi, &c, 0)->cdw0), cntlid);
}

static struct nvme_cmd admin_data_cmd(uint8_t opcode, uint16_t cid, uint32_t len)
{
	struct nvme_cmd c = cmd_new(opcode, cid);

	sgl_keyed(&c, K_DATA, BUF_OFF, len, NVME_SGL_SUBTYPE_ADDRESS);
	return c;
}

static struct nvme_cmd identify(uint16_t cid, uint8_t cns, uint32_t nsid)
{
	struct nvme_cmd c = admin_data_cmd(NVME_ADM_IDENTIFY, cid, 4096);

	c.nsid = le32_set(nsid);
	c.cdw10 = le32_set(cns);
	memset(guest + BUF_OFF, 0xee, 4096);
	return c;
}

static struct nvme_cmd get_log(uint16_t cid, uint8_t lid, uint32_t len, uint64_t off)
{
	struct nvme_cmd c = admin_data_cmd(NVME_ADM_GET_LOG_PAGE, cid, len);
	uint32_t numd = len / 4 - 1;

	c.nsid = le32_set(0xffffffffu);
	c.cdw10 = le32_set(lid | (numd & 0xffffu) << 16);
	c.cdw11 = le32_set(numd >> 16);
	c.cdw12 = le32_set((uint32_t)off);
	c.cdw13 = le32_set((uint32_t)(off >> 32));
	memset(guest + BUF_OFF, 0xee, len);
	return c;
}

static struct nvme_cmd feature(bool set, uint16_t cid, uint8_t fid, uint32_t dw11)
{
	struct nvme_cmd c = cmd_new(set ? NVME_ADM_SET_FEATURES : NVME_ADM_GET_FEATURES, cid);

	c.cdw10 = le32_set(fid);
	c.cdw11 = le32_set(dw11);
	return c;
}

static struct nvme_cmd rw(bool write, uint16_t cid, uint64_t slba, uint32_t nlb, uint64_t off)
{
	struct nvme_cmd c = io_cmd(write ? NVME_IO_WRITE : NVME_IO_READ, cid, cfg.nsid);

	c.cdw10 = le32_set((uint32_t)slba);
	c.cdw11 = le32_set((uint32_t)(slba >> 32));
	c.cdw12 = le32_set(nlb - 1);
	sgl_keyed(&c, K_DATA, off, nlb * cfg.bs, NVME_SGL_SUBTYPE_INVALIDATE);
	return c;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* ---- Connect ---------------------------------------------------------------------------------------- */

static void test_connect_and_enable(void **state)
{
	uint64_t cap;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(5000);
	assert_true(cntlid >= 1 && cntlid <= 0xffef);
	/* The response carries the SQ head and the queue ID. */
	assert_int_equal(le16_get(last()->sqid), 0);
	assert_int_equal(le16_get(last()->sqhd), 3);
	cap = prop_get(0, NVME_REG_CAP, 1);
	assert_int_equal(cap & 0xffff, 127);          /* MQES */
	assert_true(cap & 1ull << 16);                 /* CQR */
	assert_int_equal((cap >> 24) & 0xff, 15);      /* TO */
	assert_true(cap & 1ull << 37);                 /* CSS: NVM */
	assert_int_equal((cap >> 48) & 0xf, 0);        /* MPSMIN 4 KiB */
	assert_int_equal(prop_get(0, NVME_REG_CAP + 4, 0), cap >> 32);
	assert_int_equal(prop_get(0, NVME_REG_VS, 0), 0x00010300);
	assert_int_equal(prop_get(0, NVME_REG_CC, 0), CC_ENABLE);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0), NVME_CSTS_RDY);
	io_up(1, 1, cntlid);
	io_up(2, 4, cntlid);
	assert_int_equal(le16_get(last()->sqid), 4);
}

static void test_connect_errors(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	key_add(K_DATA, 0, GUEST_MEM, ACC_READ | ACC_WRITE);
	qp_open(0, 0, 31);
	/* Nothing but Connect on a fresh queue. */
	c = identify(9, NVME_ID_CNS_CTRL, 0);
	expect(0, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	c = prop_cmd(9, false, NVME_REG_CAP, 1, 0);
	expect(0, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	/* Wrong subsystem NQN: invalid parameter, IPO points at the data's subnqn. */
	c = connect_cmd(1, 0, 31, 0, "nqn.2024-01.example:other", HOSTNQN, NVME_CNTLID_DYNAMIC);
	assert_int_equal(le32_get(expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 1u << 16 | 256);
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, "", NVME_CNTLID_DYNAMIC);
	assert_int_equal(le32_get(expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 1u << 16 | 512);
	/* A host NQN filling the whole field without a terminator. */
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	memset(((struct nvmf_connect_data *)(guest + DATA_OFF))->hostnqn, 'a', 256);
	assert_int_equal(le32_get(expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 1u << 16 | 512);
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, HOSTNQN, 7);
	assert_int_equal(le32_get(expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 1u << 16 | 16);
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	((struct nvmf_connect_cmd *)&c)->recfmt = le16_set(1);
	expect(0, &c, DNR(NVME_SC_CONNECT_FORMAT));
	/* The capsule's qid must be the one the CM accepted. */
	c = connect_cmd(1, 2, 31, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	assert_int_equal(le32_get(expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 42);
	c = connect_cmd(1, 0, 0, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	assert_int_equal(le32_get(expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 44);
	c = connect_cmd(1, 0, 32, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	expect(0, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM));
	/* Connect data must be exactly 1024 bytes, behind a real key. */
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	sgl_keyed(&c, K_DATA, DATA_OFF, 512, 0);
	expect(0, &c, DNR(NVME_SC_SGL_INVALID_DATA));
	sgl_keyed(&c, 0, DATA_OFF, 1024, 0);
	expect(0, &c, DNR(NVME_SC_DATA_XFER_ERROR));
	sgl_keyed(&c, 0x9999, DATA_OFF, 1024, 0);
	expect(0, &c, DNR(NVME_SC_DATA_XFER_ERROR));
	/* Now a good one, then a second Connect on the same queue. */
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	cntlid = (uint16_t)le32_get(expect(0, &c, 0)->cdw0);
	expect(0, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	/* Admin commands wait for CC.EN and CSTS.RDY. */
	c = identify(9, NVME_ID_CNS_CTRL, 0);
	expect(0, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	/* An I/O queue before the controller is ready. */
	qp_open(1, 1, 127);
	c = connect_cmd(3, 1, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	expect(1, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	c = prop_cmd(2, true, NVME_REG_CC, 0, CC_ENABLE);
	expect(0, &c, 0);
	/* Unknown controller, another host, beyond the granted queues, a taken qid. */
	c = connect_cmd(3, 1, 127, 0, cfg.nqn, HOSTNQN, (uint16_t)(cntlid + 1));
	assert_int_equal(le32_get(expect(1, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 1u << 16 | 16);
	c = connect_cmd(3, 1, 127, 0, cfg.nqn, "nqn.2014-08.org.nvmexpress:uuid:other", cntlid);
	expect(1, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM));
	c = connect_cmd(3, 1, 128, 0, cfg.nqn, HOSTNQN, cntlid);
	expect(1, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM));
	qp_open(2, 5, 127);
	c = connect_cmd(3, 5, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	assert_int_equal(le32_get(expect(2, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 42);
	io_up(3, 2, cntlid);
	qp_open(4, 2, 127);
	c = connect_cmd(3, 2, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	expect(4, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	/* The error log saw all of it. */
	c = get_log(10, NVME_LOG_ERROR, 64, 0);
	expect(0, &c, 0);
	{
		const struct nvme_error_slot *e = (const struct nvme_error_slot *)(guest + BUF_OFF);

		assert_int_equal(le64_get(e->error_count), 21);
		assert_int_equal(le16_get(e->sqid), 2);
		assert_int_equal(le16_get(e->cmdid), 3);
		assert_int_equal(le16_get(e->status_field) >> 1, DNR(NVME_SC_CMD_SEQ_ERROR));
		assert_int_equal(e->trtype, 1);
	}
}

static void test_properties(void **state)
{
	struct nvme_cmd c;

	(void)state;
	admin_up(0);
	c = prop_cmd(5, false, 0x20, 0, 0); /* NSSR: not offered */
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = prop_cmd(5, false, NVME_REG_CC, 1, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = prop_cmd(5, false, NVME_REG_CC, 2, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = prop_cmd(5, true, NVME_REG_CAP, 1, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = prop_cmd(5, true, NVME_REG_CSTS, 0, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	/* Unknown Fabrics command type. */
	c = prop_cmd(5, false, NVME_REG_CC, 0, 0);
	((struct nvmf_property_cmd *)&c)->fctype = 0x05;
	expect(0, &c, DNR(NVME_SC_INVALID_OPCODE));
	/* Disable: CSTS.RDY drops; enable with a bad IOSQES: controller fatal status. */
	c = prop_cmd(6, true, NVME_REG_CC, 0, 0);
	expect(0, &c, 0);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0), 0);
	c = prop_cmd(7, true, NVME_REG_CC, 0, 1u | 7u << 16 | 4u << 20);
	expect(0, &c, 0);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0), NVME_CSTS_CFS);
}

static void test_property_on_io_queue(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(0);
	io_up(1, 1, cntlid);
	c = prop_cmd(5, false, NVME_REG_CAP, 1, 0);
	expect(1, &c, DNR(NVME_SC_INVALID_OPCODE));
	c = identify(6, NVME_ID_CNS_CTRL, 0); /* opcode 0x06 is no I/O command */
	expect(1, &c, DNR(NVME_SC_INVALID_OPCODE));
}

/* ---- Identify ------------------------------------------------------------------------------------------- */

static void test_identify(void **state)
{
	const struct nvme_id_ctrl *id = (const struct nvme_id_ctrl *)(guest + BUF_OFF);
	const struct nvme_id_ns *ns_id = (const struct nvme_id_ns *)(guest + BUF_OFF);
	const uint8_t *b = guest + BUF_OFF;
	struct nvme_cmd c;
	uint16_t cntlid;
	uint8_t nguid[16];

	(void)state;
	cntlid = admin_up(5000);
	c = identify(10, NVME_ID_CNS_CTRL, 0);
	expect(0, &c, 0);
	assert_memory_equal(id->sn, "ERNIC0000000000001  ", 20);
	assert_memory_equal(id->mn, "rocm-ernic NVMe-oF target               ", 40);
	assert_int_equal(le16_get(id->cntlid), cntlid);
	assert_int_equal(id->mdts, NVMEOF_MDTS);
	assert_int_equal(id->cntrltype, 1);
	assert_int_equal(le32_get(id->ver), 0x00010300);
	assert_int_equal(id->aerl, 3);
	assert_int_equal(le16_get(id->kas), 10);
	assert_int_equal(id->sqes, 0x66);
	assert_int_equal(id->cqes, 0x44);
	assert_int_equal(le16_get(id->maxcmd), 128);
	assert_int_equal(le32_get(id->nn), 1);
	assert_int_equal(le16_get(id->oncs), 0x0c);
	assert_int_equal(id->vwc & 1, 0); /* RAM: no volatile write cache */
	assert_int_equal(le32_get(id->sgls) & 0x7, 0x5);
	assert_string_equal(id->subnqn, "nvmet-test");
	assert_int_equal(le32_get(id->ioccsz), 4);
	assert_int_equal(le32_get(id->iorcsz), 1);
	assert_int_equal(le16_get(id->icdoff), 0);
	/* Namespace 1: 1 MiB of 512-byte blocks. */
	c = identify(11, NVME_ID_CNS_NS, 1);
	expect(0, &c, 0);
	assert_int_equal(le64_get(ns_id->nsze), 2048);
	assert_int_equal(le64_get(ns_id->ncap), 2048);
	assert_int_equal(ns_id->lbaf[0].ds, 9);
	assert_int_equal(ns_id->flbas, 0);
	assert_int_equal(ns_id->dlfeat & 7, 1);
	memcpy(nguid, ns_id->nguid, 16);
	assert_true(nguid[0] | nguid[5] | nguid[15]);
	/* Bad namespace IDs. */
	c = identify(12, NVME_ID_CNS_NS, 2);
	expect(0, &c, DNR(NVME_SC_INVALID_NS));
	c = identify(12, NVME_ID_CNS_NS, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_NS));
	/* Active namespace list: [1] after 0, empty after 1. */
	c = identify(13, NVME_ID_CNS_NS_ACTIVE_LIST, 0);
	expect(0, &c, 0);
	assert_int_equal(b[0], 1);
	assert_int_equal(b[4] | b[5] | b[4095], 0);
	c = identify(13, NVME_ID_CNS_NS_ACTIVE_LIST, 1);
	expect(0, &c, 0);
	assert_int_equal(b[0] | b[1] | b[2] | b[3], 0);
	c = identify(13, NVME_ID_CNS_NS_ACTIVE_LIST, 0xfffffffe);
	expect(0, &c, DNR(NVME_SC_INVALID_NS));
	/* Descriptor list: NGUID (same as Identify Namespace), UUID, CSI = NVM. */
	c = identify(14, NVME_ID_CNS_NS_DESC_LIST, 1);
	expect(0, &c, 0);
	assert_int_equal(b[0], 2);
	assert_int_equal(b[1], 16);
	assert_memory_equal(b + 4, nguid, 16);
	assert_int_equal(b[20], 3);
	assert_int_equal(b[21], 16);
	assert_int_equal(b[24 + 6] >> 4, 4);
	assert_int_equal(b[40], 4);
	assert_int_equal(b[41], 1);
	assert_int_equal(b[44], 0);
	assert_int_equal(b[45], 0);
	c = identify(14, NVME_ID_CNS_NS_DESC_LIST, 3);
	expect(0, &c, DNR(NVME_SC_INVALID_NS));
	/* CNS 06h for the NVM command set: zeroes; for another command set: invalid. */
	c = identify(15, NVME_ID_CNS_CS_CTRL, 0);
	expect(0, &c, 0);
	assert_int_equal(b[0] | b[4] | b[100], 0);
	c.cdw11 = le32_set(2u << 24);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = identify(16, 0x10, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	/* The data must fit the SGL exactly. */
	c = identify(17, NVME_ID_CNS_CTRL, 0);
	sgl_keyed(&c, K_DATA, BUF_OFF, 4095, 0);
	expect(0, &c, DNR(NVME_SC_SGL_INVALID_DATA));
	/* A key the controller may not write: data transfer error. */
	key_add(0x77, BUF_OFF, 4096, ACC_READ);
	sgl_keyed(&c, 0x77, BUF_OFF, 4096, 0);
	expect(0, &c, DNR(NVME_SC_DATA_XFER_ERROR));
}

static void test_identify_file_vwc(void **state)
{
	const struct nvme_id_ctrl *id = (const struct nvme_id_ctrl *)(guest + BUF_OFF);
	const struct nvme_id_ns *ns_id = (const struct nvme_id_ns *)(guest + BUF_OFF);
	struct nvme_cmd c;

	(void)state;
	admin_up(0);
	c = identify(10, NVME_ID_CNS_CTRL, 0);
	expect(0, &c, 0);
	assert_int_equal(id->vwc & 1, 1);
	c = identify(11, NVME_ID_CNS_NS, 1);
	expect(0, &c, 0);
	assert_int_equal(le64_get(ns_id->nsze), 256);
	assert_int_equal(ns_id->lbaf[0].ds, 12);
	c = feature(false, 12, NVME_FEAT_VOLATILE_WC, 0);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 1);
}

static int setup_ram_max_queues(void **state)
{
	(void)state;
	return open_target("nvmeof:size=1M,bs=512,queues=64");
}

/* queues=64: a host asking for more is told 64; all 64 I/O queues connect and carry a write and a
 * read of their own block; no queue pair exists for qid 65. */
static void test_max_queues(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid, qid;

	(void)state;
	cntlid = admin_up(5000);
	c = feature(true, 20, NVME_FEAT_NUM_QUEUES, 127u << 16 | 127u);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 63u << 16 | 63u);
	for (qid = 1; qid <= NVMEOF_QUEUES_MAX; qid++)
		io_up(qid, qid, cntlid);
	/* No queue pair past the ceiling (the CM answers such a REQ with a REJ). */
	assert_null(nvmeof_qpair_create(tgt, NVMEOF_QUEUES_MAX + 1, 127, &dma, NULL));
	for (qid = 1; qid <= NVMEOF_QUEUES_MAX; qid++) {
		fill(guest + IO_OFF + qid * 512u, 512, qid);
		c = rw(true, (uint16_t)(100 + qid), qid, 1, IO_OFF + qid * 512u);
		expect(qid, &c, 0);
	}
	memset(guest + IO_OFF, 0, (NVMEOF_QUEUES_MAX + 1) * 512u);
	for (qid = NVMEOF_QUEUES_MAX; qid >= 1; qid--) {
		uint8_t want[512];

		c = rw(false, (uint16_t)(200 + qid), qid, 1, IO_OFF + qid * 512u);
		expect(qid, &c, 0);
		fill(want, sizeof(want), qid);
		assert_memory_equal(guest + IO_OFF + qid * 512u, want, sizeof(want));
	}
}

/* ---- Features ------------------------------------------------------------------------------------------------ */

static void test_features(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(5000);
	/* Number of Queues: 32 asked, queues=4 granted (0's based in both halves). */
	c = feature(true, 20, NVME_FEAT_NUM_QUEUES, 31u << 16 | 31u);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 3u << 16 | 3u);
	c = feature(true, 20, NVME_FEAT_NUM_QUEUES, 1u << 16 | 0u);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 1u << 16 | 0u);
	c = feature(false, 21, NVME_FEAT_NUM_QUEUES, 0);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 0);
	c = feature(true, 20, NVME_FEAT_NUM_QUEUES, 0xffffu);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	/* One I/O queue granted: qid 2 is refused, qid 1 accepted, then the count is frozen. */
	qp_open(1, 2, 127);
	c = connect_cmd(3, 2, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	expect(1, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM));
	io_up(2, 1, cntlid);
	c = feature(true, 20, NVME_FEAT_NUM_QUEUES, 3u << 16 | 3u);
	expect(0, &c, DNR(NVME_SC_CMD_SEQ_ERROR));
	/* Keep Alive Timer: rounded up to the 1 s granularity. */
	c = feature(true, 22, NVME_FEAT_KATO, 2500);
	expect(0, &c, 0);
	c = feature(false, 22, NVME_FEAT_KATO, 0);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 3000);
	c = feature(true, 23, NVME_FEAT_ASYNC_EVENT, 0x100);
	expect(0, &c, 0);
	c = feature(false, 23, NVME_FEAT_ASYNC_EVENT, 0);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 0x100);
	/* No write cache on a RAM namespace. */
	c = feature(true, 24, NVME_FEAT_VOLATILE_WC, 1);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = feature(false, 24, NVME_FEAT_VOLATILE_WC, 0);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 0);
	/* Temperature threshold of the composite sensor; others are not there. */
	c = feature(true, 25, NVME_FEAT_TEMP_THRESH, 0x0150);
	expect(0, &c, 0);
	c = feature(false, 25, NVME_FEAT_TEMP_THRESH, 0);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 0x0150);
	c = feature(true, 25, NVME_FEAT_TEMP_THRESH, 1u << 16 | 0x0150);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = feature(true, 26, NVME_FEAT_POWER_MGMT, 1);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	/* Saving is not offered; unknown features are refused. */
	c = feature(true, 27, NVME_FEAT_ARBITRATION, 3);
	c.cdw10 = le32_set(NVME_FEAT_ARBITRATION | 1u << 31);
	expect(0, &c, DNR(NVME_SC_FEATURE_NOT_SAVEABLE));
	c = feature(true, 28, 0x7e, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = feature(false, 28, 0x7e, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	/* Supported capabilities select. */
	c = feature(false, 29, NVME_FEAT_ARBITRATION, 0);
	c.cdw10 = le32_set(NVME_FEAT_ARBITRATION | 3u << 8);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 4);
	/* A feature command carrying data it has no use for. */
	c = feature(true, 30, NVME_FEAT_ARBITRATION, 0);
	sgl_keyed(&c, K_DATA, BUF_OFF, 512, 0);
	expect(0, &c, DNR(NVME_SC_SGL_INVALID_DATA));
}

/* ---- Log pages ---------------------------------------------------------------------------------------------- */

static void test_log_pages(void **state)
{
	const uint8_t *b = guest + BUF_OFF;
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	key_add(K_DATA, 0, GUEST_MEM, ACC_READ | ACC_WRITE);
	/* Some traffic for the SMART counters: 3 writes of 8 blocks, 2 reads. */
	for (int i = 0; i < 3; i++) {
		c = rw(true, (uint16_t)(40 + i), 0, 8, IO_OFF);
		expect(1, &c, 0);
	}
	for (int i = 0; i < 2; i++) {
		c = rw(false, (uint16_t)(50 + i), 0, 8, IO_OFF);
		expect(1, &c, 0);
	}
	c = get_log(30, NVME_LOG_SMART, 512, 0);
	expect(0, &c, 0);
	{
		const struct nvme_smart_log *s = (const struct nvme_smart_log *)b;

		assert_int_equal(le16_get(s->temperature), 313);
		assert_int_equal(s->avail_spare, 100);
		assert_int_equal(s->data_units_read[0], 1);    /* 8 KiB rounds up to one unit */
		assert_int_equal(s->data_units_written[0], 1);
		assert_int_equal(s->host_reads[0], 2);
		assert_int_equal(s->host_writes[0], 3);
		assert_int_equal(s->power_cycles[0], 1);
	}
	c = get_log(31, NVME_LOG_FW_SLOT, 512, 0);
	expect(0, &c, 0);
	assert_int_equal(b[0], 1);
	assert_memory_equal(b + 8, ERNIC_VERSION, strlen(ERNIC_VERSION));
	c = get_log(32, NVME_LOG_CHANGED_NS, 4096, 0);
	expect(0, &c, 0);
	assert_int_equal(b[0] | b[1] | b[4095], 0);
	c = get_log(33, NVME_LOG_CMD_EFFECTS, 4096, 0);
	expect(0, &c, 0);
	assert_int_equal(b[NVME_ADM_IDENTIFY * 4], 1);
	assert_int_equal(b[1024 + NVME_IO_WRITE * 4], 3);
	assert_int_equal(b[0x80 * 4], 0);
	/* A slice at an offset, and a read past the end filled with zeroes. */
	c = get_log(34, NVME_LOG_FW_SLOT, 8, 8);
	expect(0, &c, 0);
	assert_memory_equal(b, ERNIC_VERSION, strlen(ERNIC_VERSION));
	c = get_log(35, NVME_LOG_FW_SLOT, 1024, 0);
	expect(0, &c, 0);
	assert_int_equal(b[0], 1);
	assert_int_equal(b[600] | b[1023], 0);
	c = get_log(36, NVME_LOG_FW_SLOT, 8, 2);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = get_log(36, NVME_LOG_FW_SLOT, 8, 516);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = get_log(37, 0x42, 512, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_LOG_PAGE));
	c = get_log(38, NVME_LOG_DISC, 1024, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_LOG_PAGE));
	c = get_log(39, NVME_LOG_SMART, 512, 0);
	c.nsid = le32_set(2);
	expect(0, &c, DNR(NVME_SC_INVALID_NS));
	c = get_log(39, NVME_LOG_SMART, 512, 0);
	sgl_keyed(&c, K_DATA, BUF_OFF, 256, 0);
	expect(0, &c, DNR(NVME_SC_SGL_INVALID_DATA));
	/* The error log holds the failures above, newest first. */
	c = get_log(40, NVME_LOG_ERROR, 128, 0);
	expect(0, &c, 0);
	{
		const struct nvme_error_slot *e = (const struct nvme_error_slot *)b;

		assert_int_equal(le64_get(e[0].error_count), 6);
		assert_int_equal(le16_get(e[0].cmdid), 39);
		assert_int_equal(le16_get(e[0].status_field) >> 1, DNR(NVME_SC_SGL_INVALID_DATA));
		assert_int_equal(le64_get(e[1].error_count), 5);
		assert_int_equal(le32_get(e[1].nsid), 2);
	}
	c = get_log(41, NVME_LOG_SMART, 512, 0);
	expect(0, &c, 0);
	assert_int_equal(((const struct nvme_smart_log *)b)->num_err_log_entries[0], 6);
}

/* ---- Discovery controller ------------------------------------------------------------------------------------ */

static void test_discovery(void **state)
{
	const struct nvme_id_ctrl *id = (const struct nvme_id_ctrl *)(guest + BUF_OFF);
	const struct nvmf_disc_hdr *h = (const struct nvmf_disc_hdr *)(guest + BUF_OFF);
	const struct nvmf_disc_entry *e = (const struct nvmf_disc_entry *)(guest + BUF_OFF + 1024);
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	key_add(K_DATA, 0, GUEST_MEM, ACC_READ | ACC_WRITE);
	qp_open(0, 0, 31);
	c = connect_cmd(1, 0, 31, 0, NVME_DISC_SUBSYS_NQN, HOSTNQN, NVME_CNTLID_DYNAMIC);
	cntlid = (uint16_t)le32_get(expect(0, &c, 0)->cdw0);
	c = prop_cmd(2, true, NVME_REG_CC, 0, 1); /* nvme discover enables without queue entry sizes */
	expect(0, &c, 0);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0), NVME_CSTS_RDY);
	c = identify(3, NVME_ID_CNS_CTRL, 0);
	expect(0, &c, 0);
	assert_int_equal(id->cntrltype, 2);
	assert_int_equal(le16_get(id->cntlid), cntlid);
	assert_string_equal(id->subnqn, NVME_DISC_SUBSYS_NQN);
	assert_int_equal(le32_get(id->nn), 0);
	c = identify(4, NVME_ID_CNS_NS, 1);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	/* nvme discover reads the header first, then the whole page. */
	c = get_log(5, NVME_LOG_DISC, 16, 0);
	expect(0, &c, 0);
	assert_int_equal(le64_get(h->genctr), 1);
	assert_int_equal(le64_get(h->numrec), 1);
	c = get_log(6, NVME_LOG_DISC, 2048, 0);
	expect(0, &c, 0);
	assert_int_equal(le16_get(h->recfmt), 0);
	assert_int_equal(e->trtype, 1);
	assert_int_equal(e->adrfam, 1);
	assert_int_equal(e->subtype, 2);
	assert_int_equal(le16_get(e->portid), 1);
	assert_int_equal(le16_get(e->cntlid), 0xffff);
	assert_int_equal(le16_get(e->asqsz), 32);
	assert_string_equal(e->trsvcid, "4420");
	assert_string_equal(e->traddr, "192.168.200.1");
	assert_string_equal(e->subnqn, "nvmet-test");
	assert_int_equal(e->tsas_qptype, 1);
	assert_int_equal(e->tsas_prtype, 1);
	assert_int_equal(e->tsas_cms, 1);
	c = get_log(7, NVME_LOG_SMART, 512, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_LOG_PAGE));
	c = feature(true, 8, NVME_FEAT_NUM_QUEUES, 0);
	expect(0, &c, DNR(NVME_SC_INVALID_FIELD));
	c = feature(true, 8, NVME_FEAT_KATO, 30000);
	expect(0, &c, 0);
	/* No I/O queues on a discovery controller, nor a discovery I/O connect. */
	qp_open(1, 1, 127);
	c = connect_cmd(3, 1, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	expect(1, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM));
	c = connect_cmd(3, 1, 127, 0, NVME_DISC_SUBSYS_NQN, HOSTNQN, cntlid);
	assert_int_equal(le32_get(expect(1, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM))->cdw0), 42);
}

/* ---- I/O ---------------------------------------------------------------------------------------------------- */

static void test_read_after_write(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;
	const uint32_t len = 64 * 512;

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	fill(guest + IO_OFF, len, 7);
	c = rw(true, 60, 100, 64, IO_OFF);
	expect(1, &c, 0);
	/* The keyed SGL asked for invalidation: the response says which key. */
	assert_int_equal(rsps[nrsp - 1].inv, K_DATA);
	assert_memory_equal(ns.ram + 100 * 512, guest + IO_OFF, len);
	c = rw(false, 61, 100, 64, IO_OFF + len);
	expect(1, &c, 0);
	assert_memory_equal(guest + IO_OFF + len, guest + IO_OFF, len);
	/* A plain address subtype: no invalidation asked for. */
	sgl_keyed(&c, K_DATA, IO_OFF, len, NVME_SGL_SUBTYPE_ADDRESS);
	expect(1, &c, 0);
	assert_int_equal(rsps[nrsp - 1].inv, 0);
}

static void test_read_after_write_big(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	/* 1 MiB namespace (setup "size=4M" below): one MDTS-sized write and read-back. */
	fill(guest + IO_OFF, NVMEOF_MAX_XFER, 9);
	c = rw(true, 62, 2048, NVMEOF_MAX_XFER / 512, IO_OFF);
	expect(1, &c, 0);
	memset(guest + IO_OFF + NVMEOF_MAX_XFER, 0, NVMEOF_MAX_XFER);
	c = rw(false, 63, 2048, NVMEOF_MAX_XFER / 512, IO_OFF + NVMEOF_MAX_XFER);
	expect(1, &c, 0);
	assert_memory_equal(guest + IO_OFF, guest + IO_OFF + NVMEOF_MAX_XFER, NVMEOF_MAX_XFER);
	/* One block more than MDTS. */
	c = rw(false, 64, 0, NVMEOF_MAX_XFER / 512 + 1, IO_OFF);
	expect(1, &c, DNR(NVME_SC_INVALID_FIELD));
}

static int setup_ram4m(void **state)
{
	(void)state;
	return open_target("nvmeof:size=4M,queues=2");
}

static void test_io_errors(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;
	uint8_t before[4096];

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	memcpy(before, ns.ram, sizeof(before));
	/* LBA range: at the end, across the end, and an slba that would wrap. */
	c = rw(false, 70, 2048, 1, IO_OFF);
	expect(1, &c, DNR(NVME_SC_LBA_RANGE));
	c = rw(false, 70, 2047, 2, IO_OFF);
	expect(1, &c, DNR(NVME_SC_LBA_RANGE));
	c = rw(false, 70, UINT64_MAX, 2, IO_OFF);
	expect(1, &c, DNR(NVME_SC_LBA_RANGE));
	c = rw(false, 70, 2047, 1, IO_OFF);
	expect(1, &c, 0);
	/* SGL length must match the blocks. */
	c = rw(true, 71, 0, 8, IO_OFF);
	sgl_keyed(&c, K_DATA, IO_OFF, 8 * 512 - 1, 0);
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_DATA));
	/* Key 0 (the driver's DMA key), an unknown key, and a key without remote read. */
	sgl_keyed(&c, 0, IO_OFF, 8 * 512, 0);
	expect(1, &c, DNR(NVME_SC_DATA_XFER_ERROR));
	sgl_keyed(&c, 0xdead, IO_OFF, 8 * 512, 0);
	expect(1, &c, DNR(NVME_SC_DATA_XFER_ERROR));
	key_add(0x55, IO_OFF, 8 * 512, ACC_WRITE);
	sgl_keyed(&c, 0x55, IO_OFF, 8 * 512, 0);
	expect(1, &c, DNR(NVME_SC_DATA_XFER_ERROR));
	/* A range that runs past its registration. */
	key_add(0x56, IO_OFF, 4 * 512, ACC_READ | ACC_WRITE);
	sgl_keyed(&c, 0x56, IO_OFF, 8 * 512, 0);
	expect(1, &c, DNR(NVME_SC_DATA_XFER_ERROR));
	assert_memory_equal(ns.ram, before, sizeof(before)); /* none of those wrote anything */
	/* Descriptor types: segment, unkeyed address, in-capsule with data, odd keyed subtype. */
	c = rw(true, 72, 0, 8, IO_OFF);
	c.dptr.type = 0x2 << 4;
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_TYPE));
	c.dptr.type = NVME_SGL_TYPE_DATA_BLOCK << 4 | NVME_SGL_SUBTYPE_ADDRESS;
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_TYPE));
	c.dptr.type = NVME_SGL_TYPE_DATA_BLOCK << 4 | NVME_SGL_SUBTYPE_OFFSET;
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_OFFSET));
	c.dptr.type = NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4 | 0x5;
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_TYPE));
	/* PRPs, fused commands, another namespace, unknown opcodes. */
	c = rw(true, 73, 0, 8, IO_OFF);
	c.flags = 0;
	expect(1, &c, DNR(NVME_SC_INVALID_FIELD));
	c.flags = 1u << 6 | 1u;
	expect(1, &c, DNR(NVME_SC_INVALID_FIELD));
	c = rw(true, 74, 0, 8, IO_OFF);
	c.nsid = le32_set(2);
	expect(1, &c, DNR(NVME_SC_INVALID_NS));
	c.opcode = 0x11;
	expect(1, &c, DNR(NVME_SC_INVALID_OPCODE));
	assert_memory_equal(ns.ram, before, sizeof(before));
}

static void test_write_zeroes_dsm(void **state)
{
	struct nvme_cmd c;
	struct nvme_dsm_range *r = (struct nvme_dsm_range *)(guest + BUF_OFF);
	static const uint8_t zero[64 * 512];
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	fill(ns.ram, ns.size, 3);
	/* Write Zeroes over blocks 10..19, with and without deallocation. */
	c = io_cmd(NVME_IO_WRITE_ZEROES, 80, 1);
	c.cdw10 = le32_set(10);
	c.cdw12 = le32_set(9);
	expect(1, &c, 0);
	assert_memory_equal(ns.ram + 10 * 512, zero, 10 * 512);
	assert_memory_not_equal(ns.ram + 20 * 512, zero, 512);
	assert_memory_not_equal(ns.ram + 9 * 512, zero, 512);
	c.cdw10 = le32_set(16);      /* a page-spanning range, pages handed back */
	c.cdw12 = le32_set(63u | 1u << 25);
	expect(1, &c, 0);
	assert_memory_equal(ns.ram + 16 * 512, zero, 64 * 512);
	assert_memory_not_equal(ns.ram + 80 * 512, zero, 512);
	c.cdw10 = le32_set(2040);
	c.cdw12 = le32_set(15);
	expect(1, &c, DNR(NVME_SC_LBA_RANGE));
	/* DSM deallocate of two ranges. */
	fill(ns.ram, ns.size, 4);
	memset(r, 0, 2 * sizeof(*r));
	r[0].slba = le64_set(100);
	r[0].nlb = le32_set(8);
	r[1].slba = le64_set(500);
	r[1].nlb = le32_set(24);
	c = io_cmd(NVME_IO_DSM, 81, 1);
	c.cdw10 = le32_set(1);
	c.cdw11 = le32_set(1u << 2);
	sgl_keyed(&c, K_DATA, BUF_OFF, 32, 0);
	expect(1, &c, 0);
	assert_memory_equal(ns.ram + 100 * 512, zero, 8 * 512);
	assert_memory_equal(ns.ram + 500 * 512, zero, 24 * 512);
	assert_memory_not_equal(ns.ram + 108 * 512, zero, 512);
	/* One bad range: nothing is deallocated. */
	fill(ns.ram, ns.size, 5);
	r[0].slba = le64_set(200);
	r[1].slba = le64_set(2040);
	expect(1, &c, DNR(NVME_SC_LBA_RANGE));
	assert_memory_not_equal(ns.ram + 200 * 512, zero, 512);
	/* Without the deallocate attribute it is only a hint. */
	c.cdw11 = le32_set(0);
	expect(1, &c, 0);
	assert_memory_not_equal(ns.ram + 200 * 512, zero, 512);
	/* The range list needs (NR + 1) * 16 bytes: one byte short is refused, with nothing done. */
	c.cdw11 = le32_set(1u << 2);
	r[1].slba = le64_set(500);
	sgl_keyed(&c, K_DATA, BUF_OFF, 16, 0);
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_DATA));
	sgl_keyed(&c, K_DATA, BUF_OFF, 31, 0);
	expect(1, &c, DNR(NVME_SC_SGL_INVALID_DATA));
	assert_memory_not_equal(ns.ram + 200 * 512, zero, 512);
	assert_memory_not_equal(ns.ram + 500 * 512, zero, 512);
	/* A longer buffer (Linux sends a whole page): the first NR + 1 ranges count, the rest
	 * of the page (here a third range that would fail) is not read. */
	r[2].slba = le64_set(5000000);
	r[2].nlb = le32_set(1);
	sgl_keyed(&c, K_DATA, BUF_OFF, 4096, 0);
	expect(1, &c, 0);
	assert_memory_equal(ns.ram + 200 * 512, zero, 8 * 512);
	assert_memory_equal(ns.ram + 500 * 512, zero, 24 * 512);
	assert_memory_not_equal(ns.ram + 208 * 512, zero, 512);
	/* Flush on RAM: nothing to write back, success. */
	c = io_cmd(NVME_IO_FLUSH, 82, 0xffffffffu);
	expect(1, &c, 0);
	c.nsid = le32_set(3);
	expect(1, &c, DNR(NVME_SC_INVALID_NS));
}

/* ---- durability on a file image ---------------------------------------------------------------------------- */

static void read_image(uint64_t off, void *buf, size_t len)
{
	int fd = open(img, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void test_file_durability(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;
	uint8_t back[8192];

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	/* A write without FUA with the cache enabled: in the image, not yet written back. */
	fill(guest + IO_OFF, 8192, 11);
	c = rw(true, 90, 3, 2, IO_OFF);
	expect(1, &c, 0);
	assert_int_equal(fdatasync_calls, 0);
	read_image(3 * 4096, back, sizeof(back));
	assert_memory_equal(back, guest + IO_OFF, sizeof(back));
	/* Flush: written back before the response. */
	c = io_cmd(NVME_IO_FLUSH, 91, 1);
	expect(1, &c, 0);
	assert_int_equal(rsps[nrsp - 1].fdatasync_calls, 1);
	/* FUA write: written back before the response. */
	c = rw(true, 92, 5, 1, IO_OFF);
	c.cdw12 = le32_set(0u | 1u << 30);
	expect(1, &c, 0);
	assert_int_equal(rsps[nrsp - 1].fdatasync_calls, 2);
	/* Cache disabled: every write is written through. */
	c = feature(true, 93, NVME_FEAT_VOLATILE_WC, 0);
	expect(0, &c, 0);
	c = rw(true, 94, 6, 1, IO_OFF);
	expect(1, &c, 0);
	assert_int_equal(rsps[nrsp - 1].fdatasync_calls, 3);
	c = feature(true, 95, NVME_FEAT_VOLATILE_WC, 1);
	expect(0, &c, 0);
	/* Writeback failing: Flush and FUA report a write fault, plain writes still land. */
	fdatasync_fail = EIO;
	c = io_cmd(NVME_IO_FLUSH, 96, 1);
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	c = rw(true, 97, 7, 1, IO_OFF);
	c.cdw12 = le32_set(1u << 30);
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	c = rw(true, 98, 8, 1, IO_OFF);
	expect(1, &c, 0);
	/* Write Zeroes with deallocate on the image punches a hole that reads as zeroes. */
	fdatasync_fail = 0;
	c = io_cmd(NVME_IO_WRITE_ZEROES, 99, 1);
	c.cdw10 = le32_set(3);
	c.cdw12 = le32_set(1u | 1u << 25);
	expect(1, &c, 0);
	read_image(3 * 4096, back, sizeof(back));
	for (size_t i = 0; i < sizeof(back); i++)
		assert_int_equal(back[i], 0);
	/* Shutdown: whole namespace written back before SHST reports complete, even on failure. */
	fdatasync_fail = EIO;
	c = prop_cmd(100, true, NVME_REG_CC, 0, CC_ENABLE | 1u << 14);
	expect(0, &c, 0);
	assert_int_equal(rsps[nrsp - 1].fdatasync_calls, 6);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0) & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_CMPLT);
	fdatasync_fail = 0;
}

/*
 * Regression (a durability hole): after fdatasync failed, the kernel may have
 * dropped the dirty pages it could not write and reports the next fdatasync
 * of the image as a success. A Flush after a failed one must not complete
 * successfully, or it would promise durable writes that may be lost: every
 * later Flush, FUA write and Write Zeroes with FUA fails with Write Fault
 * until the server restarts. Plain writes and reads go on.
 */
static void test_file_writeback_error_sticks(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;
	uint8_t back[4096];

	(void)state;
	cntlid = admin_up(0);
	io_up(1, 1, cntlid);
	fill(guest + IO_OFF, 4096, 21);
	c = rw(true, 10, 3, 1, IO_OFF);
	expect(1, &c, 0);
	fdatasync_fail = EIO;
	c = io_cmd(NVME_IO_FLUSH, 11, 1);
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	/* The storage answers again: the earlier failure still stands. */
	fdatasync_fail = 0;
	c.cid = 12;
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	c = rw(true, 13, 4, 1, IO_OFF);
	c.cdw12 = le32_set(1u << 30);
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	c = io_cmd(NVME_IO_WRITE_ZEROES, 14, 1);
	c.cdw10 = le32_set(5);
	c.cdw12 = le32_set(1u << 30);
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	/* With the write cache off, every write would be a promise: refused too. */
	c = feature(true, 15, NVME_FEAT_VOLATILE_WC, 0);
	expect(0, &c, 0);
	c = rw(true, 16, 6, 1, IO_OFF);
	expect(1, &c, DNR(NVME_SC_WRITE_FAULT));
	c = feature(true, 17, NVME_FEAT_VOLATILE_WC, 1);
	expect(0, &c, 0);
	/* Plain writes still land and read back. */
	c = rw(true, 18, 7, 1, IO_OFF);
	expect(1, &c, 0);
	memset(guest + IO_OFF, 0, 4096);
	c = rw(false, 19, 7, 1, IO_OFF);
	expect(1, &c, 0);
	read_image(7 * 4096, back, sizeof(back));
	assert_memory_equal(back, guest + IO_OFF, sizeof(back));
	/* A shutdown still completes (the host cannot do better), with the failure logged. */
	c = prop_cmd(20, true, NVME_REG_CC, 0, CC_ENABLE | 1u << 14);
	expect(0, &c, 0);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0) & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_CMPLT);
}

/*
 * A crash of the host OS, simulated: what the image held at its last
 * successful fdatasync is all that is sure to survive one (later writes may
 * or may not). The model takes a copy of the image at every fdatasync and,
 * after every command completes (a crash may come right then), checks that
 * each block promised durable is in that copy: the promised write, or a later
 * write of the same block, never an older one. Promises: a completed FUA
 * Write or Write Zeroes, any Write or Write Zeroes completed while the
 * volatile write cache is disabled, and for every block the last write
 * completed before a Flush that completed. Random traffic: writes, Write
 * Zeroes (with and without deallocate and FUA), deallocating DSM, Flush,
 * reads checked against the last completed write, and the write cache
 * switched off and on.
 */
#define CM_BLOCKS 256u     /* the 1 MiB image of setup_file, 4 KiB blocks */

static uint64_t cm_seq;                    /* the last operation sent */
static uint64_t cm_durable[CM_BLOCKS];     /* the operation promised durable (0: none) */
static uint64_t cm_acked[CM_BLOCKS];       /* the last operation that completed on the block */
static bool cm_acked_zero[CM_BLOCKS];      /* ... and it zeroed the block */
static uint64_t cm_last_zero[CM_BLOCKS];   /* the last zeroing operation sent */
static int64_t cm_snap[CM_BLOCKS];         /* the copy: the write a block holds, 0 zeroes, -1 neither */
static uint64_t cm_snap_zero[CM_BLOCKS];   /* cm_last_zero when the copy was taken */
static unsigned cm_snapshots;

static void cm_fill(uint8_t *p, uint64_t lba, uint64_t seq)
{
	uint64_t x = (lba + 1) * 0x9e3779b97f4a7c15ull ^ seq * 0xbf58476d1ce4e5b9ull;

	for (size_t i = 0; i < 4096; i += 8) {
		xorshift64(&x);
		memcpy(p + i, &x, 8);
	}
	memcpy(p, &lba, 8);
	memcpy(p + 8, &seq, 8);
}

/* The write a block came from (its stamp, checked byte for byte), 0 for zeroes, -1 otherwise. */
static int64_t cm_version(const uint8_t *p, uint64_t lba)
{
	static const uint8_t zero[4096];
	uint8_t want[4096];
	uint64_t l, seq;

	if (memcmp(p, zero, sizeof(zero)) == 0)
		return 0;
	memcpy(&l, p, 8);
	memcpy(&seq, p + 8, 8);
	if (l != lba || seq == 0 || seq > cm_seq)
		return -1;
	cm_fill(want, lba, seq);
	return memcmp(p, want, sizeof(want)) == 0 ? (int64_t)seq : -1;
}

static void crash_snapshot(void)
{
	static uint8_t img_copy[CM_BLOCKS * 4096];
	size_t got = 0;

	while (got < sizeof(img_copy)) {
		ssize_t n = pread(crash_fd, img_copy + got, sizeof(img_copy) - got, (off_t)got);

		assert_true(n > 0);
		got += (size_t)n;
	}
	for (uint64_t b = 0; b < CM_BLOCKS; b++) {
		cm_snap[b] = cm_version(img_copy + b * 4096, b);
		cm_snap_zero[b] = cm_last_zero[b];
	}
	cm_snapshots++;
}

/* A crash now: every promise is kept by the last copy. */
static void cm_check(const char *after)
{
	for (uint64_t b = 0; b < CM_BLOCKS; b++) {
		int64_t v = cm_snap[b];
		uint64_t d = cm_durable[b];

		if (v < 0)
			fail_msg("after %s: block %llu of the synced image is neither zeroes nor one whole write", after,
				 (unsigned long long)b);
		/* Zeroes satisfy a promise if a zeroing no older than it had been sent when the copy was taken. */
		if (d && (v > 0 ? (uint64_t)v < d : cm_snap_zero[b] < d))
			fail_msg("after %s: a crash would lose block %llu: operation %llu was promised durable, "
				 "the synced image holds %s %lld", after, (unsigned long long)b, (unsigned long long)d,
				 v ? "write" : "zeroes of at most", v ? (long long)v : (long long)cm_snap_zero[b]);
	}
}

static uint32_t cm_rng = 0x6d2b79f5u;

static uint32_t cm_rnd(uint32_t n)
{
	return xorshift32(&cm_rng) % n;
}

/* The blocks of [slba, slba + nlb) completed with operation seq; promised durable too if durable. */
static void cm_complete(uint64_t slba, uint32_t nlb, uint64_t seq, bool zero, bool durable)
{
	for (uint64_t b = slba; b < slba + nlb; b++) {
		cm_acked[b] = seq;
		cm_acked_zero[b] = zero;
		if (durable)
			cm_durable[b] = seq;
	}
}

static void test_file_crash_model(void **state)
{
	static const char *const names[] = { "write", "FUA write", "Write Zeroes", "Write Zeroes with FUA",
					     "deallocate", "Flush", "read", "write cache off", "write cache on" };
	struct nvme_cmd c;
	uint16_t cntlid, cid = 0;
	bool wce = true;
	unsigned counts[9] = { 0 };

	(void)state;
	assert_int_equal(ns.size, CM_BLOCKS * 4096ull);
	cntlid = admin_up(0);
	io_up(1, 1, cntlid);
	memset(cm_durable, 0, sizeof(cm_durable));
	memset(cm_acked, 0, sizeof(cm_acked));
	memset(cm_acked_zero, 1, sizeof(cm_acked_zero));
	memset(cm_last_zero, 0, sizeof(cm_last_zero));
	memset(cm_snap, 0, sizeof(cm_snap)); /* the new image: zeroes */
	memset(cm_snap_zero, 0, sizeof(cm_snap_zero));
	cm_seq = 0;
	cm_snapshots = 0;
	crash_fd = ns.fd;
	for (int i = 0; i < 4000; i++) {
		uint32_t kind = cm_rnd(100), nlb = 1 + cm_rnd(8);
		uint64_t slba = cm_rnd(CM_BLOCKS - nlb + 1), seq = ++cm_seq;
		unsigned k;

		cid++;
		nrsp = 0;
		if (kind < 50) { /* writes, plain and FUA */
			bool fua = kind >= 35;

			k = fua ? 1 : 0;
			for (uint32_t j = 0; j < nlb; j++)
				cm_fill(guest + IO_OFF + j * 4096, slba + j, seq);
			c = rw(true, cid, slba, nlb, IO_OFF);
			c.cdw12 = le32_set((nlb - 1) | (fua ? 1u << 30 : 0));
			expect(1, &c, 0);
			cm_complete(slba, nlb, seq, false, fua || !wce);
		} else if (kind < 62) { /* Write Zeroes: deallocate or not, FUA or not */
			bool fua = cm_rnd(2), deac = cm_rnd(2);

			k = fua ? 3 : 2;
			for (uint64_t b = slba; b < slba + nlb; b++)
				cm_last_zero[b] = seq;
			c = io_cmd(NVME_IO_WRITE_ZEROES, cid, 1);
			c.cdw10 = le32_set((uint32_t)slba);
			c.cdw12 = le32_set((nlb - 1) | (deac ? 1u << 25 : 0) | (fua ? 1u << 30 : 0));
			expect(1, &c, 0);
			cm_complete(slba, nlb, seq, true, fua || !wce);
		} else if (kind < 67) { /* DSM deallocate of one range: zeroes, promised nothing */
			struct nvme_dsm_range *r = (struct nvme_dsm_range *)(guest + BUF_OFF);

			k = 4;
			for (uint64_t b = slba; b < slba + nlb; b++)
				cm_last_zero[b] = seq;
			memset(r, 0, sizeof(*r));
			r->slba = le64_set(slba);
			r->nlb = le32_set(nlb);
			c = io_cmd(NVME_IO_DSM, cid, 1);
			c.cdw11 = le32_set(1u << 2);
			sgl_keyed(&c, K_DATA, BUF_OFF, sizeof(*r), NVME_SGL_SUBTYPE_ADDRESS);
			expect(1, &c, 0);
			cm_complete(slba, nlb, seq, true, false);
		} else if (kind < 80) { /* Flush: everything completed before it */
			k = 5;
			c = io_cmd(NVME_IO_FLUSH, cid, kind & 1 ? 0xffffffffu : 1);
			expect(1, &c, 0);
			for (uint64_t b = 0; b < CM_BLOCKS; b++)
				cm_durable[b] = cm_acked[b];
		} else if (kind < 96) { /* a read sees the last completed operation */
			k = 6;
			memset(guest + IO_OFF, 0xee, nlb * 4096);
			c = rw(false, cid, slba, nlb, IO_OFF);
			expect(1, &c, 0);
			for (uint32_t j = 0; j < nlb; j++) {
				int64_t v = cm_version(guest + IO_OFF + j * 4096, slba + j);

				if (v != (cm_acked_zero[slba + j] ? 0 : (int64_t)cm_acked[slba + j]))
					fail_msg("read of block %llu: version %lld, want %llu", (unsigned long long)(slba + j),
						 (long long)v, (unsigned long long)cm_acked[slba + j]);
			}
		} else { /* the volatile write cache off or on */
			wce = !wce;
			k = wce ? 8 : 7;
			c = feature(true, cid, NVME_FEAT_VOLATILE_WC, wce);
			expect(0, &c, 0);
		}
		counts[k]++;
		cm_check(names[k]);
	}
	crash_fd = -1;
	/* Every kind of operation ran, and the image was written back many times. */
	for (unsigned k = 0; k < 9; k++)
		assert_true(counts[k] > 10);
	assert_true(cm_snapshots > 500);
}

/* ---- keep-alive, teardown, AER ----------------------------------------------------------------------------- */

static void test_keep_alive_timeout(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(4500); /* rounded up to 5 s */
	io_up(1, 1, cntlid);
	io_up(2, 2, cntlid);
	clock_ms += 4000;
	c = cmd_new(NVME_ADM_KEEP_ALIVE, 110); /* a 5 s period from here */
	expect(0, &c, 0);
	clock_ms += 4900;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 0);
	/* Traffic on an I/O queue counts as keep-alive (TBKAS, as nvmet): the period ends with it
	 * and the next one starts. */
	c = rw(false, 111, 0, 1, IO_OFF);
	expect(1, &c, 0);
	clock_ms += 200;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 0);
	clock_ms += 4900;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 0);
	/* a whole period with nothing in it: lost */
	clock_ms += 200;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 3);
	/* I/O queues first, the admin queue last. */
	assert_ptr_equal(disconnects[0], (void *)2);
	assert_ptr_equal(disconnects[1], (void *)1);
	assert_ptr_equal(disconnects[2], (void *)0);
	assert_null(qps[0]);
	/* The controller is gone: its cntlid no longer admits I/O queues. */
	qp_open(3, 1, 127);
	c = connect_cmd(3, 1, 127, 0, cfg.nqn, HOSTNQN, cntlid);
	expect(3, &c, DNR(NVME_SC_CONNECT_INVALID_PARAM));
	{
		struct nvmeof_target_stats s;

		nvmeof_target_get_stats(tgt, &s);
		assert_int_equal(s.ka_timeouts, 1);
	}
}

/* A host tearing down its I/O queues has stopped its keep-alives: each queue it takes down
 * counts as traffic, so a slow teardown does not lose the controller before its shutdown. */
static void test_keep_alive_teardown(void **state)
{
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(5000);
	io_up(1, 1, cntlid);
	io_up(2, 2, cntlid);
	clock_ms += 4900;
	nvmeof_qpair_destroy(qps[2]);
	qps[2] = NULL;
	clock_ms += 200;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 0);
	clock_ms += 4800;
	nvmeof_qpair_destroy(qps[1]);
	qps[1] = NULL;
	clock_ms += 300;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 0);
	/* then nothing for a whole period: lost */
	clock_ms += 5000;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 1);
	assert_ptr_equal(disconnects[0], (void *)0);
}

static void test_keep_alive_deferred_destroy(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	destroy_on_disconnect = false; /* the transport tears down later */
	cntlid = admin_up(1000);
	io_up(1, 1, cntlid);
	clock_ms += 1500;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 2);
	/* Capsules on a queue being torn down are not answered; the status says fatal. */
	c = cmd_new(NVME_ADM_KEEP_ALIVE, 120);
	assert_int_equal(submit(0, &c), 0);
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 2);
	/* kato 0: never times out. */
	nvmeof_qpair_destroy(qps[1]);
	qps[1] = NULL;
	nvmeof_qpair_destroy(qps[0]);
	qps[0] = NULL;
	admin_up(0);
	clock_ms += 1000000;
	nvmeof_target_tick(tgt);
	assert_int_equal(ndisconnect, 2);
}

static void test_admin_queue_teardown(void **state)
{
	struct nvme_cmd c;
	uint16_t cntlid;

	(void)state;
	cntlid = admin_up(0);
	io_up(1, 1, cntlid);
	io_up(2, 2, cntlid);
	nvmeof_qpair_destroy(qps[0]);
	qps[0] = NULL;
	assert_int_equal(ndisconnect, 2);
	assert_null(qps[1]);
	assert_null(qps[2]);
	/* A controller reset (CC.EN 1 -> 0) takes the I/O queues but keeps the admin queue. */
	cntlid = admin_up(0);
	io_up(1, 1, cntlid);
	c = prop_cmd(130, true, NVME_REG_CC, 0, 0);
	expect(0, &c, 0);
	assert_int_equal(ndisconnect, 3);
	assert_null(qps[1]);
	assert_int_equal(prop_get(0, NVME_REG_CSTS, 0), 0);
	c = prop_cmd(131, true, NVME_REG_CC, 0, CC_ENABLE);
	expect(0, &c, 0);
	io_up(1, 1, cntlid);
}

static void test_aer_and_abort(void **state)
{
	struct nvme_cmd c;

	(void)state;
	admin_up(0);
	for (uint16_t i = 0; i < 4; i++) {
		c = cmd_new(NVME_ADM_ASYNC_EVENT, (uint16_t)(140 + i));
		assert_int_equal(submit(0, &c), 0); /* parked */
	}
	c = cmd_new(NVME_ADM_ASYNC_EVENT, 144);
	expect(0, &c, DNR(NVME_SC_ASYNC_LIMIT));
	/* Abort the second AER: it completes as aborted, then Abort says it did (dw0 bit 0 = 0). */
	c = cmd_new(NVME_ADM_ABORT, 150);
	c.cdw10 = le32_set(141u << 16 | 0u);
	assert_int_equal(submit(0, &c), 2);
	assert_int_equal(rsps[nrsp - 2].cpl.cid, 141);
	assert_int_equal(st_of(&rsps[nrsp - 2].cpl), NVME_SC_ABORT_REQ);
	assert_int_equal(rsps[nrsp - 1].cpl.cid, 150);
	assert_int_equal(st_of(&rsps[nrsp - 1].cpl), 0);
	assert_int_equal(le32_get(rsps[nrsp - 1].cpl.cdw0), 0);
	/* Nothing to abort: dw0 bit 0 = 1. */
	c.cdw10 = le32_set(141u << 16);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 1);
	c.cdw10 = le32_set(140u << 16 | 1u);
	assert_int_equal(le32_get(expect(0, &c, 0)->cdw0), 1);
	/* A slot is free again. */
	c = cmd_new(NVME_ADM_ASYNC_EVENT, 145);
	assert_int_equal(submit(0, &c), 0);
	c = cmd_new(NVME_ADM_ASYNC_EVENT, 146);
	expect(0, &c, DNR(NVME_SC_ASYNC_LIMIT));
}

static void test_sq_head_and_short_capsules(void **state)
{
	struct nvmeof_target_stats s;
	struct nvme_cmd c;
	uint16_t cntlid;
	int before;

	(void)state;
	cntlid = admin_up(0);
	qp_open(1, 1, 127);
	c = connect_cmd(3, 1, 3, 0, cfg.nqn, HOSTNQN, cntlid); /* a 4-entry queue */
	expect(1, &c, 0);
	assert_int_equal(le16_get(last()->sqhd), 1);
	for (int i = 0; i < 5; i++) {
		c = rw(false, (uint16_t)(160 + i), 0, 1, IO_OFF);
		expect(1, &c, 0);
	}
	assert_int_equal(le16_get(last()->sqhd), (1 + 5) % 4);
	/* Too short to carry a command ID: dropped without a response, and the head stays. */
	before = nrsp;
	nvmeof_qpair_recv(qps[1], &c, 63);
	assert_int_equal(nrsp, before);
	nvmeof_target_get_stats(tgt, &s);
	assert_int_equal(s.dropped, 1);
	expect(1, &c, 0);
	assert_int_equal(le16_get(last()->sqhd), (1 + 6) % 4);
}

static void test_controller_limit(void **state)
{
	struct nvmeof_qpair *held[NVMEOF_MAX_CTRLS], *q;
	uint16_t ids[NVMEOF_MAX_CTRLS];
	struct nvme_cmd c;

	(void)state;
	key_add(K_DATA, 0, GUEST_MEM, ACC_READ | ACC_WRITE);
	c = connect_cmd(1, 0, 31, 0, cfg.nqn, HOSTNQN, NVME_CNTLID_DYNAMIC);
	for (size_t i = 0; i < NVMEOF_MAX_CTRLS; i++) {
		held[i] = nvmeof_qpair_create(tgt, 0, 31, &dma, (void *)(uintptr_t)19);
		nrsp = 0;
		nvmeof_qpair_recv(held[i], &c, sizeof(c));
		assert_int_equal(nrsp, 1);
		assert_int_equal(st_of(last()), 0);
		ids[i] = (uint16_t)le32_get(last()->cdw0);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(ids[i], ids[j]);
	}
	/* Every controller slot is taken: the next host hears the controller is busy. */
	q = nvmeof_qpair_create(tgt, 0, 31, &dma, (void *)(uintptr_t)19);
	nrsp = 0;
	nvmeof_qpair_recv(q, &c, sizeof(c));
	assert_int_equal(st_of(last()), DNR(NVME_SC_CONNECT_CTRL_BUSY));
	/* Dropping one admin queue frees its controller; the next gets a fresh ID. */
	nvmeof_qpair_destroy(held[5]);
	held[5] = NULL;
	nrsp = 0;
	nvmeof_qpair_recv(q, &c, sizeof(c));
	assert_int_equal(st_of(last()), 0);
	for (size_t j = 0; j < NVMEOF_MAX_CTRLS; j++)
		assert_int_not_equal(le32_get(last()->cdw0), ids[j]);
	nvmeof_qpair_destroy(q);
	for (size_t i = 0; i < NVMEOF_MAX_CTRLS; i++)
		nvmeof_qpair_destroy(held[i]);
}

/* ---- hostile input ---------------------------------------------------------------------------------------------- */

static void test_fuzz_capsules(void **state)
{
	uint32_t seed = 12345;
	static int hist[0x800];
	uint16_t cntlid;

	(void)state;
	memset(hist, 0, sizeof(hist));
	cntlid = admin_up(0);
	io_up(1, 1, cntlid);
	destroy_on_disconnect = true;
	for (int i = 0; i < 200000; i++) {
		struct nvme_cmd c;
		uint8_t *p = (uint8_t *)&c;
		size_t qi = (i & 1) ? 1 : 0;
		int got;

		for (size_t j = 0; j < sizeof(c); j++) {
			seed = seed * 1103515245u + 12345u;
			p[j] = (uint8_t)(seed >> 16);
		}
		/*
		 * Two in three capsules are biased to get past the first checks: SGLs,
		 * a real key most of the time, our namespace, small block counts, and
		 * a data length that often matches them.
		 */
		if (i % 3 != 0) {
			uint32_t nlb = le32_get(c.cdw12) & 0xfu;
			uint32_t len = (i % 4) ? (nlb + 1) * 512 : le32_get(c.cdw14) % 8192u;

			c.flags = 1u << 6;
			c.opcode = (uint8_t)(qi ? (c.opcode % 10) : (c.opcode % 0x20));
			if (i % 5)
				c.nsid = le32_set(1);
			if (i % 2) {
				c.cdw10 = le32_set(le32_get(c.cdw10) % 2100u);
				c.cdw11 = le32_set(0);
				c.cdw12 = le32_set(le32_get(c.cdw12) & 0x4200000fu);
			}
			sgl_keyed(&c, (i % 7) ? K_DATA : 0, le32_get(c.cdw13) % (2u << 20), len,
				  (uint8_t)(le32_get(c.cdw15) & 1 ? 0xf : 0));
		}
		if (c.opcode == NVME_FABRICS && ((struct nvmf_property_cmd *)&c)->fctype == 0 &&
		    (le32_get(((struct nvmf_property_cmd *)&c)->offset) == NVME_REG_CC))
			continue; /* keep the controller enabled so the command sets get exercised */
		if (c.opcode == NVME_ADM_ASYNC_EVENT || (c.opcode == NVME_ADM_SET_FEATURES && qi == 0))
			continue;
		if (!qps[qi])
			break;
		nrsp = 0;
		got = submit(qi, &c);
		if (got == 1)
			hist[st_of(last()) & 0x7ff]++;
		if (got > 1)
			fail_msg("capsule %d: %d responses", i, got);
	}
	assert_non_null(qps[0]);
	assert_non_null(qps[1]);
	/* The capsules reached the command sets: successes and the deeper failures all occur. */
	assert_true(hist[NVME_SC_SUCCESS] > 10000);
	assert_true(hist[NVME_SC_LBA_RANGE] > 100);
	assert_true(hist[NVME_SC_SGL_INVALID_DATA] > 100);
	assert_true(hist[NVME_SC_DATA_XFER_ERROR] > 100);
	assert_true(hist[NVME_SC_INVALID_OPCODE] > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_connect_and_enable, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_connect_errors, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_properties, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_property_on_io_queue, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_identify, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_identify_file_vwc, setup_file, teardown),
		cmocka_unit_test_setup_teardown(test_features, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_max_queues, setup_ram_max_queues, teardown),
		cmocka_unit_test_setup_teardown(test_log_pages, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_discovery, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_read_after_write, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_read_after_write_big, setup_ram4m, teardown),
		cmocka_unit_test_setup_teardown(test_io_errors, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_write_zeroes_dsm, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_file_durability, setup_file, teardown),
		cmocka_unit_test_setup_teardown(test_file_crash_model, setup_file, teardown),
		cmocka_unit_test_setup_teardown(test_file_writeback_error_sticks, setup_file, teardown),
		cmocka_unit_test_setup_teardown(test_keep_alive_timeout, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_keep_alive_teardown, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_keep_alive_deferred_destroy, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_admin_queue_teardown, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_aer_and_abort, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_sq_head_and_short_capsules, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_controller_limit, setup_ram, teardown),
		cmocka_unit_test_setup_teardown(test_fuzz_capsules, setup_ram, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
