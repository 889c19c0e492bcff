/* The S3 store for the fuzz targets; see fuzz_s3.h. */
#include "fuzz_s3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/backend_opts.h"
#include "util/log.h"

static uint8_t guest[FS_LEN];

static int fake_check(uint32_t key, uint64_t addr, size_t len)
{
	if (key != FS_KEY)
		return -ENOKEY;
	if (addr < FS_ADDR || addr - FS_ADDR > FS_LEN || len > FS_LEN - (addr - FS_ADDR))
		return -EFAULT;
	return 0;
}

static int fake_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	int rc = fake_check(key, addr, len);

	(void)ctx;
	if (rc == 0)
		memcpy(dst, guest + (addr - FS_ADDR), len);
	return rc;
}

static int fake_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	int rc = fake_check(key, addr, len);

	(void)ctx;
	if (rc == 0)
		memcpy(guest + (addr - FS_ADDR), src, len);
	return rc;
}

/* The check agrees with the transfers, except for odd addresses, where it lets the transfer find the fault. */
static int fake_dma_check(void *ctx, uint32_t key, uint64_t addr, size_t len, bool write)
{
	(void)ctx;
	(void)write;
	return addr & 1 ? 0 : fake_check(key, addr, len);
}

static const struct dma_ops fake_ops = { .read = fake_read, .write = fake_write, .check = fake_dma_check };

struct s3_store *fs_store_new(void)
{
	struct backend_config cfg;
	char err[128];
	struct s3_token server = { .transport = S3_TRANSPORT_RC, .qpn = 0x00d00000, .port = 1 };
	struct s3_store *st;

	log_set_level(LOG_LEVEL_ERROR);
	if (backend_config_parse("s3:size=4M,objects=64,maxpart=1M,buckets=4", &cfg, err, sizeof(err)))
		abort();
	server.gid[10] = server.gid[11] = 0xff;
	server.gid[12] = 192;
	server.gid[13] = 168;
	server.gid[14] = 200;
	server.gid[15] = 1;
	st = s3_store_new(&cfg.s3, &server);
	if (st == NULL)
		abort();
	s3_store_set_dma(st, &fake_ops);
	return st;
}

static size_t take_output(struct s3_conn *c, char *out, size_t cap, size_t have)
{
	const uint8_t *p;
	size_t k;

	while ((k = s3_conn_output(c, &p)) > 0) {
		if (cap && have < cap - 1) {
			size_t n = k < cap - 1 - have ? k : cap - 1 - have;

			memcpy(out + have, p, n);
			have += n;
		}
		s3_conn_output_done(c, k);
	}
	if (cap)
		out[have] = '\0';
	return have;
}

size_t fs_feed(struct s3_conn *c, const uint8_t *p, size_t len, size_t piece, char *out, size_t cap)
{
	size_t used = 0, have = 0;

	if (cap)
		out[0] = '\0';
	while (used < len) {
		size_t n = piece && piece < len - used ? piece : len - used;
		size_t k = s3_conn_input(c, p + used, n);

		have = take_output(c, out, cap, have);
		if (k == 0) {
			/* Nothing taken: once the output is gone it takes more, or never will. */
			k = s3_conn_input(c, p + used, n);
			have = take_output(c, out, cap, have);
			if (k == 0)
				break;
		}
		used += k;
	}
	return have;
}
