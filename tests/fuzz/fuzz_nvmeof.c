/*
 * fuzz-nvmeof: NVMe-oF command capsules into the controller
 * (nvmeof_target.c, nvmeof_admin.c, nvmeof_io.c) on three queue pairs, with
 * a fake transport and fake DMA ops, as nvmeof-target-unit drives it.
 *
 * Each input gets a fresh RAM namespace (1 MiB, 512-byte blocks, 4 I/O
 * queues) and controller, queue pairs 0 (admin, sqsize 31), 1 and 2 (I/O
 * qids 1 and 2, sqsize 127), and 64 KiB of guest memory at
 * 0x100000000 under key 0x1234 (read and write) and key 0x5678 (the
 * controller may only read it). Then records:
 *   0 q:u8 len:u8 capsule[len]       a capsule on queue pair q % 3 (a Connect first, as a host does)
 *   1 off:u16 len:u8 bytes           guest memory at off % 64 KiB (Connect data, write payloads)
 *   2 ms:u16                         the clock moves on; the controller's tick (keep-alive)
 *   3 q:u8 qid:u16 sqsize:u16        queue pair q % 3 is destroyed and made again
 * A disconnect the controller asks for is carried out after the capsule,
 * as the transport does; that queue pair is gone until record 3.
 */
#include <errno.h>
#include <stdlib.h>

#include "fuzz.h"
#include "nvmeof/nvmeof_target.h"
#include "util/log.h"

#define GUEST_BASE 0x100000000ull
#define GUEST_LEN  0x10000u
#define KEY_RW     0x1234u
#define KEY_RO     0x5678u
#define NQP        3

static uint8_t guest[GUEST_LEN];
static uint64_t clock_ms;
static bool doomed[NQP];

static int access_check(uint32_t key, uint64_t addr, size_t len, bool write)
{
	if (key != KEY_RW && key != KEY_RO)
		return -ENOKEY;
	if (write && key == KEY_RO)
		return -EACCES;
	if (addr < GUEST_BASE || addr - GUEST_BASE > GUEST_LEN || len > GUEST_LEN - (addr - GUEST_BASE))
		return -EFAULT;
	return 0;
}

static int fake_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	int rc = access_check(key, addr, len, false);

	(void)ctx;
	if (rc == 0)
		memcpy(dst, guest + (addr - GUEST_BASE), len);
	return rc;
}

static int fake_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	int rc = access_check(key, addr, len, true);

	(void)ctx;
	if (rc == 0)
		memcpy(guest + (addr - GUEST_BASE), src, len);
	return rc;
}

static const struct dma_ops dma = { .read = fake_read, .write = fake_write };

static void on_rsp(void *ctx, void *qp, const struct nvme_cpl *cpl, uint32_t inv)
{
	(void)ctx;
	(void)cpl;
	(void)inv;
	if ((uintptr_t)qp >= NQP)
		abort(); /* a response for a queue pair that is not ours */
}

static void on_disconnect(void *ctx, void *qp)
{
	(void)ctx;
	if ((uintptr_t)qp >= NQP)
		abort();
	doomed[(uintptr_t)qp] = true;
}

static uint64_t on_now(void *ctx)
{
	(void)ctx;
	return clock_ms;
}

static const struct nvmeof_target_ops ops = { NULL, on_rsp, on_disconnect, on_now };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nvmeof_config cfg;
	static bool cfg_done;
	struct fz f = { data, size, 0 };
	struct nvmeof_ns ns;
	struct nvmeof_target *t;
	struct nvmeof_qpair *qp[NQP];
	static const uint16_t qid0[NQP] = { 0, 1, 2 }, sq0[NQP] = { 31, 127, 127 };
	char err[256];

	if (!cfg_done) {
		struct backend_config b;

		log_set_level(LOG_LEVEL_ERROR);
		if (backend_config_parse("nvmeof:size=1M,bs=512,queues=4", &b, err, sizeof(err)))
			abort();
		cfg = b.nvmeof;
		cfg_done = true;
	}
	memset(guest, 0, sizeof(guest));
	memset(doomed, 0, sizeof(doomed));
	clock_ms = 1000;
	memset(&ns, 0, sizeof(ns));
	ns.fd = -1;
	if (nvmeof_ns_open(&ns, &cfg, err, sizeof(err)))
		abort();
	t = nvmeof_target_create(&cfg, &ns, &ops);
	if (t == NULL)
		abort();
	for (uintptr_t i = 0; i < NQP; i++)
		qp[i] = nvmeof_qpair_create(t, qid0[i], sq0[i], &dma, (void *)i);

	while (fz_more(&f)) {
		switch (fz_u8(&f) % 4) {
		case 0: {
			unsigned q = fz_u8(&f) % NQP;
			size_t n = fz_u8(&f), got;
			const uint8_t *p = fz_ptr(&f, n, &got);

			if (qp[q])
				nvmeof_qpair_recv(qp[q], p, got);
			break;
		}
		case 1: {
			size_t off = fz_u16(&f) % GUEST_LEN, n = fz_u8(&f);

			if (n > GUEST_LEN - off)
				n = GUEST_LEN - off;
			fz_take(&f, guest + off, n);
			break;
		}
		case 2:
			clock_ms += fz_u16(&f);
			nvmeof_target_tick(t);
			break;
		case 3: {
			unsigned q = fz_u8(&f) % NQP;
			uint16_t qid = fz_u16(&f), sqsize = fz_u16(&f);

			nvmeof_qpair_destroy(qp[q]);
			doomed[q] = false;
			qp[q] = nvmeof_qpair_create(t, qid, sqsize, &dma, (void *)(uintptr_t)q);
			break;
		}
		}
		for (unsigned q = 0; q < NQP; q++) {
			if (doomed[q]) {
				nvmeof_qpair_destroy(qp[q]);
				qp[q] = NULL;
				doomed[q] = false;
			}
		}
	}
	for (unsigned q = 0; q < NQP; q++)
		nvmeof_qpair_destroy(qp[q]);
	nvmeof_target_destroy(t);
	nvmeof_ns_close(&ns);
	return 0;
}
