/*
 * nvmeof-bench: the NVMe-oF controller without a fabric. One I/O queue of a
 * 64 MiB RAM namespace is fed Read capsules the way the data path will feed
 * them (64-byte SEND in, 16-byte response out, payload RDMA-WRITTEN through
 * fake DMA ops into one guest buffer), on one core:
 *   - 4 KiB reads: capsules executed per second (the controller's own cost),
 *   - 1 MiB reads: GB/s, beside memcpy of 1 MiB in the same run.
 * Also 4 KiB writes, for the other direction.
 *
 * Usage: nvmeof-bench [seconds-per-case] [csv-file]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvmeof/nvmeof_target.h"
#include "util/backend_opts.h"

#define KEY 0x42u
#define BASE 0x100000000ull
#define GUEST_LEN (4u << 20)

static uint8_t *guest;
static uint64_t responses, failures;

static int rd(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (key != KEY || addr < BASE || addr - BASE > GUEST_LEN || len > GUEST_LEN - (addr - BASE))
		return -EFAULT;
	memcpy(dst, guest + (addr - BASE), len);
	return 0;
}

static int wr(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	(void)ctx;
	if (key != KEY || addr < BASE || addr - BASE > GUEST_LEN || len > GUEST_LEN - (addr - BASE))
		return -EFAULT;
	memcpy(guest + (addr - BASE), src, len);
	return 0;
}

static void on_rsp(void *ctx, void *qp, const struct nvme_cpl *cpl, uint32_t inv)
{
	(void)ctx, (void)qp, (void)inv;
	responses++;
	if (le16_get(cpl->status) >> 1)
		failures++;
}

static void on_disconnect(void *ctx, void *qp) { (void)ctx, (void)qp; }

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t now_ms(void *ctx)
{
	(void)ctx;
	return (uint64_t)(now() * 1000);
}

static struct nvme_cmd command(uint8_t opcode, uint32_t len, uint64_t off)
{
	struct nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.flags = 1u << 6;
	c.dptr.addr = le64_set(BASE + off);
	c.dptr.length[0] = (uint8_t)len;
	c.dptr.length[1] = (uint8_t)(len >> 8);
	c.dptr.length[2] = (uint8_t)(len >> 16);
	c.dptr.key[0] = (uint8_t)KEY;
	c.dptr.type = NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4 | NVME_SGL_SUBTYPE_INVALIDATE;
	return c;
}

static int bring_up(struct nvmeof_target *t, const struct dma_ops *dma, struct nvmeof_qpair **admin,
		    struct nvmeof_qpair **io, const char *nqn)
{
	struct nvmf_connect_data *d = (struct nvmf_connect_data *)guest;
	struct nvme_cmd c = command(NVME_FABRICS, sizeof(*d), 0);
	struct nvmf_connect_cmd *cc = (struct nvmf_connect_cmd *)&c;
	struct nvmf_property_cmd *pc = (struct nvmf_property_cmd *)&c;
	uint64_t before = failures;

	*admin = nvmeof_qpair_create(t, 0, 31, dma, NULL);
	*io = nvmeof_qpair_create(t, 1, 127, dma, NULL);
	memset(d, 0, sizeof(*d));
	d->cntlid = le16_set(NVME_CNTLID_DYNAMIC);
	snprintf(d->subnqn, sizeof(d->subnqn), "%s", nqn);
	snprintf(d->hostnqn, sizeof(d->hostnqn), "nqn.2014-08.org.nvmexpress:uuid:bench");
	cc->fctype = NVMF_FCTYPE_CONNECT;
	cc->sqsize = le16_set(31);
	nvmeof_qpair_recv(*admin, &c, sizeof(c));
	memset(&c, 0, sizeof(c));
	c.opcode = NVME_FABRICS;
	c.dptr.type = NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4;
	pc->fctype = NVMF_FCTYPE_PROPERTY_SET;
	pc->offset = le32_set(NVME_REG_CC);
	pc->value = le64_set(1u | 6u << 16 | 4u << 20);
	nvmeof_qpair_recv(*admin, &c, sizeof(c));
	c = command(NVME_FABRICS, sizeof(*d), 0);
	cc->fctype = NVMF_FCTYPE_CONNECT;
	cc->qid = le16_set(1);
	cc->sqsize = le16_set(127);
	d->cntlid = le16_set(1);
	nvmeof_qpair_recv(*io, &c, sizeof(c));
	return failures == before ? 0 : -1;
}

/* Capsules per second and bytes per second of one kind of I/O command. */
static double run(struct nvmeof_qpair *io, uint8_t opcode, uint32_t bytes, uint32_t bs, uint64_t ns_blocks,
		  double secs, double *gbps)
{
	struct nvme_cmd c = command(opcode, bytes, 0);
	uint32_t nlb = bytes / bs;
	uint64_t slba = 0, n = 0;
	double t0 = now(), el;

	c.nsid = le32_set(1);
	c.cdw12 = le32_set(nlb - 1);
	do {
		for (int i = 0; i < 1024; i++, n++) {
			c.cid = (uint16_t)n;
			c.cdw10 = le32_set((uint32_t)slba);
			c.cdw11 = le32_set((uint32_t)(slba >> 32));
			nvmeof_qpair_recv(io, &c, sizeof(c));
			slba += nlb;
			if (slba + nlb > ns_blocks)
				slba = 0;
		}
	} while ((el = now() - t0) < secs);
	*gbps = (double)n * bytes / el / 1e9;
	return (double)n / el;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	FILE *csv = argc > 2 ? fopen(argv[2], "w") : NULL;
	struct nvmeof_target_ops ops = { NULL, on_rsp, on_disconnect, now_ms };
	struct dma_ops dma = { .read = rd, .write = wr };
	struct backend_config cfg;
	struct nvmeof_ns ns = { .fd = -1 };
	struct nvmeof_target *t;
	struct nvmeof_qpair *admin, *io;
	char err[256];
	uint8_t *src, *dst;
	double iops, gbps, mc_gbps, mc_walk_gbps, t0, el;
	long n;

	guest = malloc(GUEST_LEN);
	src = malloc(1 << 20);
	dst = malloc(1 << 20);
	if (!guest || !src || !dst || backend_config_parse("nvmeof:size=64M", &cfg, err, sizeof(err)) ||
	    nvmeof_ns_open(&ns, &cfg.nvmeof, err, sizeof(err))) {
		fprintf(stderr, "nvmeof-bench: setup failed %s\n", err);
		return 1;
	}
	memset(ns.ram, 0x5a, ns.size); /* touch every page before timing */
	memset(guest, 0, GUEST_LEN);
	t = nvmeof_target_create(&cfg.nvmeof, &ns, &ops);
	if (!t || bring_up(t, &dma, &admin, &io, cfg.nvmeof.nqn)) {
		fprintf(stderr, "nvmeof-bench: connect failed\n");
		return 1;
	}
	if (csv)
		fprintf(csv, "case,size,capsules_per_s,gbps,memcpy_gbps,memcpy_walk_gbps\n");

	iops = run(io, NVME_IO_READ, 4096, ns.bs, ns.size / ns.bs, secs, &gbps);
	printf("read  4 KiB: %10.0f capsules/s  %6.2f GB/s\n", iops, gbps);
	if (csv)
		fprintf(csv, "read,4096,%.0f,%.3f,,\n", iops, gbps);
	iops = run(io, NVME_IO_WRITE, 4096, ns.bs, ns.size / ns.bs, secs, &gbps);
	printf("write 4 KiB: %10.0f capsules/s  %6.2f GB/s\n", iops, gbps);
	if (csv)
		fprintf(csv, "write,4096,%.0f,%.3f,,\n", iops, gbps);

	/*
	 * Two yardsticks: memcpy between two cache-resident 1 MiB buffers, and
	 * memcpy walking the 64 MiB namespace into one 1 MiB buffer, which is
	 * the access pattern the reads below have.
	 */
	memset(src, 1, 1 << 20);
	for (n = 0, t0 = now(); (el = now() - t0) < secs; n++) {
		memcpy(dst, src, 1 << 20);
		__asm__ volatile("" ::: "memory");
	}
	mc_gbps = (double)n * (1 << 20) / el / 1e9;
	for (n = 0, t0 = now(); (el = now() - t0) < secs; n++) {
		memcpy(guest, ns.ram + ((size_t)n % (ns.size >> 20) << 20), 1 << 20);
		__asm__ volatile("" ::: "memory");
	}
	mc_walk_gbps = (double)n * (1 << 20) / el / 1e9;
	iops = run(io, NVME_IO_READ, 1 << 20, ns.bs, ns.size / ns.bs, secs, &gbps);
	printf("read  1 MiB: %10.0f capsules/s  %6.2f GB/s  (memcpy 1 MiB %.2f GB/s cached, %.2f GB/s "
	       "walking the namespace: %.0f%%)\n", iops, gbps, mc_gbps, mc_walk_gbps, 100 * gbps / mc_walk_gbps);
	if (csv)
		fprintf(csv, "read,1048576,%.0f,%.3f,%.3f,%.3f\n", iops, gbps, mc_gbps, mc_walk_gbps);
	if (failures) {
		fprintf(stderr, "nvmeof-bench: %llu commands failed\n", (unsigned long long)failures);
		return 1;
	}
	printf("(%llu responses)\n", (unsigned long long)responses);
	nvmeof_qpair_destroy(io);
	nvmeof_qpair_destroy(admin);
	nvmeof_target_destroy(t);
	nvmeof_ns_close(&ns);
	if (csv)
		fclose(csv);
	free(guest);
	free(src);
	free(dst);
	return 0;
}
