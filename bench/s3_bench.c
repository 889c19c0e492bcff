/*
 * s3-bench: the S3 store's RDMA path without a network: GET and PUT of 4 KiB,
 * 64 KiB and 1 MiB objects through s3_conn (HTTP request in, response out)
 * and a fake set of DMA ops over one buffer, beside plain memcpy of the same
 * sizes in the same run. GET RDMA-WRITEs the object into the buffer, PUT
 * RDMA-READs it: one copy of the payload each.
 *
 * Usage: s3-bench [seconds-per-case] [csv-file]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3/s3_conn.h"
#include "s3/s3_target.h"
#include "s3/s3_token.h"
#include "util/backend_opts.h"

static uint8_t *guest;
static size_t guest_len;
#define KEY 0x42
#define BASE 0x100000000ull

static int rd(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (key != KEY || addr < BASE || addr - BASE + len > guest_len)
		return -EFAULT;
	memcpy(dst, guest + (addr - BASE), len);
	return 0;
}

static int wr(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	(void)ctx;
	if (key != KEY || addr < BASE || addr - BASE + len > guest_len)
		return -EFAULT;
	memcpy(guest + (addr - BASE), src, len);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One request through a fresh-parsed connection; returns the response status. */
static int run(struct s3_conn *c, const char *req, size_t len)
{
	const uint8_t *p;
	size_t k;
	int status = 0;

	if (s3_conn_input(c, (const uint8_t *)req, len) != len)
		return -1;
	while ((k = s3_conn_output(c, &p)) > 0) {
		if (status == 0 && k > 12)
			status = atoi((const char *)p + 9);
		s3_conn_output_done(c, k);
	}
	return status;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	FILE *csv = argc > 2 ? fopen(argv[2], "w") : NULL;
	static const size_t sizes[] = { 4096, 65536, 1 << 20 };
	struct backend_config cfg;
	char err[128];
	struct dma_ops ops = { .read = rd, .write = wr };

	if (backend_config_parse("s3:size=64M", &cfg, err, sizeof(err)))
		return 1;
	guest_len = 4 << 20;
	guest = malloc(guest_len);
	memset(guest, 0x5a, guest_len);
	if (csv)
		fprintf(csv, "op,size,gbps,memcpy_gbps,ratio\n");
	printf("%-4s %8s %10s %12s %7s\n", "op", "size", "GB/s", "memcpy GB/s", "ratio");
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t sz = sizes[si];
		struct s3_store *st = s3_store_new(&cfg.s3, NULL);
		struct s3_conn *c = s3_conn_new(st);
		struct s3_token t = { .transport = 1, .rkey = KEY, .addr = BASE, .len = sz };
		char hex[S3_TOKEN_HEX + 1], put[512], get[512];
		double t0, el, mc_gbps;
		long n;
		uint8_t *src = malloc(sz), *dst = malloc(sz);

		s3_store_set_dma(st, &ops);
		s3_token_to_hex(&t, hex);
		snprintf(put, sizeof(put), "PUT /ernic/o HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n\r\n", hex);
		t.addr = BASE + (2 << 20);
		s3_token_to_hex(&t, hex);
		snprintf(get, sizeof(get), "GET /ernic/o HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n", hex);

		/* memcpy of the same size, same buffers pattern: the yardstick. */
		memset(src, 1, sz);
		for (n = 0, t0 = now(); (el = now() - t0) < secs; n++) {
			memcpy(dst, src, sz);
			__asm__ volatile("" ::: "memory");
		}
		mc_gbps = (double)n * (double)sz / el / 1e9;

		struct { const char *name; const char *req; } cases[2] = { { "PUT", put }, { "GET", get } };
		for (int ci = 0; ci < 2; ci++) {
			size_t rlen = strlen(cases[ci].req);

			if (run(c, put, strlen(put)) != 200) { /* make sure the object exists */
				fprintf(stderr, "PUT failed\n");
				return 1;
			}
			for (n = 0, t0 = now(); (el = now() - t0) < secs; n++) {
				if (run(c, cases[ci].req, rlen) != 200) {
					fprintf(stderr, "%s failed\n", cases[ci].name);
					return 1;
				}
			}
			double gbps = (double)n * (double)sz / el / 1e9;

			printf("%-4s %8zu %10.2f %12.2f %6.0f%%\n", cases[ci].name, sz, gbps, mc_gbps, 100 * gbps / mc_gbps);
			if (csv)
				fprintf(csv, "%s,%zu,%.3f,%.3f,%.3f\n", cases[ci].name, sz, gbps, mc_gbps, gbps / mc_gbps);
		}
		s3_conn_free(c);
		s3_store_free(st);
		free(src);
		free(dst);
	}
	if (csv)
		fclose(csv);
	free(guest);
	return 0;
}
