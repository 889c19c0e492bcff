/*
 * md5-bench: the single-core OpenSSL MD5 rate, the yardstick of an S3 PUT
 * (whose ETag is the MD5 of the body). A buffer of random bytes is hashed
 * with one EVP MD5 context in 64 KiB updates, as the store hashes a body
 * while it arrives; the best of the runs is printed in GB/s.
 *
 * Usage: md5-bench [MiB, default 64] [runs, default 3]
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#define UPDATE (64u << 10)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	unsigned runs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 3;
	size_t len = mib << 20;
	uint8_t *buf = malloc(len ? len : 1), digest[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	double best = 0;

	if (buf == NULL || ctx == NULL || mib == 0 || mib > 4096 || runs == 0) {
		fprintf(stderr, "usage: md5-bench [MiB 1-4096] [runs]\n");
		return 2;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = getrandom(buf + off, len - off, 0);

		if (n <= 0)
			return 1;
		off += (size_t)n;
	}
	for (unsigned r = 0; r < runs; r++) {
		unsigned int dlen = 0;
		double t0 = now(), t;

		if (EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1)
			return 1;
		for (size_t off = 0; off < len; off += UPDATE)
			EVP_DigestUpdate(ctx, buf + off, len - off < UPDATE ? len - off : UPDATE);
		EVP_DigestFinal_ex(ctx, digest, &dlen);
		t = now() - t0;
		if (t > 0 && (double)len / t > best)
			best = (double)len / t;
	}
	printf("%.3f\n", best / 1e9);
	EVP_MD_CTX_free(ctx);
	free(buf);
	return 0;
}
