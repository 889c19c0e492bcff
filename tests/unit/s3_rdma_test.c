/*
 * s3-rdma-unit: the S3 store's RDMA path (x-amz-rdma-token) through a
 * transport-less connection, with fake DMA ops standing in for the guest's
 * registrations. Both dialects: hipObject's 88-hex token (the spec's rules:
 * the reply carries our token, a short window gets a short transfer, a key
 * that cannot serve is a 500) and cuObject's descriptor (bare replies, none
 * on errors, declines with 501 and the body instead). Also what both share:
 * a HEAD moves nothing, ranges and ?partNumber move exactly their bytes,
 * checksums and conditions hold, the counters and the -v line say what
 * happened, and transfers made in slices by s3_conn_work.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "s3/s3_conn.h"
#include "s3/s3_target.h"
#include "s3/s3_token.h"
#include "util/log.h"

#include "s3_harness.h"

/* The client GID our cuObject tokens carry: link-local, which a cuObject reply never echoes. */
#define CU_GID "fe80000000000000021122fffe334455"

/* A cuObject descriptor as NooBaa prints it (16:8:8:4:6:1:32 digits), rsize wider when it must be. */
static const char *cu_token(uint32_t rkey, uint64_t addr, uint64_t len, char out[160])
{
	snprintf(out, 160, "%016" PRIx64 ":%08" PRIx64 ":%08" PRIx32 ":%04x:%06x:1:%s", addr, len, rkey, 0x0007,
		 0x000123, CU_GID);
	return out;
}

static struct resp cu_req(const char *method, const char *path, uint32_t rkey, uint64_t addr, uint64_t len,
			  const char *extra)
{
	char tok[160];

	return req_str("%s %s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n%s\r\n", method, path,
		       cu_token(rkey, addr, len, tok), extra ? extra : "");
}

/* A cuObject success: the status, the bare reply, both counts, nothing in the body. */
static void assert_cu_ok(const struct resp *r, int status, uint64_t moved)
{
	char v[64], want[32];

	assert_int_equal(r->status, status);
	snprintf(want, sizeof(want), "%d", status);
	assert_string_equal(hdr(r, "x-amz-rdma-reply", v, sizeof(v)), want);
	snprintf(want, sizeof(want), "%" PRIu64, moved);
	assert_string_equal(hdr(r, "x-amz-rdma-bytes-transferred", v, sizeof(v)), want);
	assert_string_equal(hdr(r, "x-amz-rdma-bytes", v, sizeof(v)), want);
	assert_string_equal(hdr(r, "Content-Length", v, sizeof(v)), "0");
	assert_int_equal(r->body_len, 0);
}

/* A declined GET: 501 in the reply, the status of a plain GET, the payload in the body. */
static void assert_declined_get(const struct resp *r, int status, const uint8_t *want, size_t len)
{
	char v[64];

	assert_int_equal(r->status, status);
	assert_string_equal(hdr(r, "x-amz-rdma-reply", v, sizeof(v)), "501");
	assert_null(hdr(r, "x-amz-rdma-bytes-transferred", v, sizeof(v)));
	assert_int_equal(r->body_len, len);
	assert_memory_equal(r->body, want, len);
}

static void assert_no_reply(const struct resp *r)
{
	char v[256];

	assert_null(hdr(r, "x-amz-rdma-reply", v, sizeof(v)));
	assert_null(hdr(r, "x-amz-rdma-bytes", v, sizeof(v)));
	assert_null(hdr(r, "x-amz-rdma-bytes-transferred", v, sizeof(v)));
}

/* PUT path's bytes by the body path, which must succeed. */
static void put_plain(const char *path, const uint8_t *d, size_t n)
{
	struct resp r = put_bytes(path, d, n, NULL);

	assert_int_equal(r.status, 200);
	free_resp(&r);
}

static void get_plain_404(const char *path)
{
	struct resp r = req_str("GET %s HTTP/1.1\r\nHost: s3\r\n\r\n", path);

	assert_int_equal(r.status, 404);
	free_resp(&r);
}

/* ---- the hipObject dialect: the spec's rules ---- */

static void test_rdma_put_get(void **state)
{
	const size_t size = 1 << 20;
	struct fake_mr *m = add_mr(0x1234, 0x7f0000000000ull, 2 * size);
	uint8_t *src = pattern(size, 21);
	char v[64], md5[33], want[40];
	struct resp r;

	(void)state;
	memcpy(m->buf, src, size);
	/* PUT: the store RDMA-READs the low half of the buffer. */
	r = rdma_req("PUT", "/ernic/obj", 0x1234, m->addr, size, NULL);
	assert_rdma(&r, 200, size);
	assert_int_equal(r.body_len, 0);
	md5_hex(src, size, md5);
	snprintf(want, sizeof(want), "\"%s\"", md5);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free_resp(&r);
	/* GET: RDMA-WRITE into the high half; the body path sees the same bytes. */
	r = rdma_req("GET", "/ernic/obj", 0x1234, m->addr + size, size, NULL);
	assert_rdma(&r, 200, size);
	assert_int_equal(r.body_len, 0);
	assert_memory_equal(m->buf + size, src, size);
	free_resp(&r);
	r = req_str("GET /ernic/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_memory_equal(r.body, src, size);
	free_resp(&r);
	/* hipObject's three-field form, overriding address and length. */
	char tok[128], three[200];
	memset(m->buf + size, 0, size);
	snprintf(three, sizeof(three), "%s:%016llx:%016llx", token_hdr(0x1234, 0, 0, tok),
		 (unsigned long long)(m->addr + size), 4096ull);
	r = req_str("GET /ernic/obj HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n", three);
	assert_rdma(&r, 200, 4096);
	assert_memory_equal(m->buf + size, src, 4096);
	assert_int_equal(m->buf[size + 4096], 0);
	free_resp(&r);
	free(src);
}

static void test_rdma_short_and_range(void **state)
{
	const size_t size = 64 << 10;
	struct fake_mr *m = add_mr(0x99, 0x10000, 2 * size);
	uint8_t *src = pattern(size, 22);
	struct resp r = put_bytes("/ernic/o", src, size, NULL);
	char v[64];

	(void)state;
	free_resp(&r);
	memset(m->buf, 0xcc, 2 * size);
	/* A window shorter than the object: the write stops at the window, and says so. */
	r = rdma_req("GET", "/ernic/o", 0x99, m->addr, 1000, NULL);
	assert_rdma(&r, 200, 1000);
	assert_memory_equal(m->buf, src, 1000);
	assert_int_equal(m->buf[1000], 0xcc);
	free_resp(&r);
	/* An empty window: nothing moves. Regression: the transfer kept its reference to the object (a leak). */
	memset(m->buf, 0xcc, 2 * size);
	r = rdma_req("GET", "/ernic/o", 0x99, m->addr, 0, NULL);
	assert_rdma(&r, 200, 0);
	assert_int_equal(m->buf[0], 0xcc);
	free_resp(&r);
	/* A ranged GET moves only the range. */
	memset(m->buf, 0xcc, 2 * size);
	r = rdma_req("GET", "/ernic/o", 0x99, m->addr, size, "Range: bytes=1024-1535\r\n");
	assert_rdma(&r, 206, 512);
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes 1024-1535/65536");
	assert_memory_equal(m->buf, src + 1024, 512);
	assert_int_equal(m->buf[512], 0xcc);
	free_resp(&r);
	free(src);
}

static void test_rdma_errors(void **state)
{
	struct fake_mr *m = add_mr(0x77, 0x20000, 8192);
	struct resp r = put_bytes("/ernic/e", (const uint8_t *)"data", 4, NULL);
	char tok[128];

	(void)state;
	free_resp(&r);
	/* rkey 0 is the driver's reserved DMA key: refused before any DMA. */
	dma_calls = 0;
	r = rdma_req("GET", "/ernic/e", 0, m->addr, 4, NULL);
	assert_rdma(&r, 500, 0);
	assert_int_equal(dma_calls, 0);
	free_resp(&r);
	r = rdma_req("PUT", "/ernic/e2", 0, m->addr, 4, NULL);
	assert_rdma(&r, 500, 0);
	assert_int_equal(dma_calls, 0);
	free_resp(&r);
	/* Unknown key, window outside the registration, read-only registration. */
	r = rdma_req("GET", "/ernic/e", 0x78, m->addr, 4, NULL);
	assert_rdma(&r, 500, 0);
	free_resp(&r);
	r = rdma_req("GET", "/ernic/e", 0x77, m->addr + 8190, 4, NULL);
	assert_rdma(&r, 500, 0);
	free_resp(&r);
	r = rdma_req("PUT", "/ernic/e3", 0x77, m->addr + 4096, 8192, NULL);
	assert_rdma(&r, 500, 0);
	free_resp(&r);
	m->writable = false;
	r = rdma_req("GET", "/ernic/e", 0x77, m->addr, 4, NULL);
	assert_rdma(&r, 500, 0);
	free_resp(&r);
	m->writable = true;
	/* Failed PUTs by RDMA store nothing and hold nothing. */
	r = req_str("HEAD /ernic/e3 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 404);
	assert_int_equal(s3_store_stats(st)->used_bytes, 4);
	/* Malformed token, missing key, wrong bucket: S3 errors, still with the reply header. */
	r = req_str("GET /ernic/e HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: 1234\r\n\r\n");
	assert_int_equal(r.status, 400);
	assert_non_null(hdr(&r, "x-amz-rdma-reply", tok, sizeof(tok)));
	assert_non_null(strstr((char *)r.body, "<Code>InvalidArgument</Code>"));
	free_resp(&r);
	r = rdma_req("GET", "/ernic/nothere", 0x77, m->addr, 4, NULL);
	assert_rdma(&r, 404, 0);
	free_resp(&r);
	r = rdma_req("GET", "/wrong/e", 0x77, m->addr, 4, NULL);
	assert_rdma(&r, 404, 0);
	free_resp(&r);
	/* No guest memory attached at all. */
	s3_store_set_dma(st, NULL);
	r = rdma_req("GET", "/ernic/e", 0x77, m->addr, 4, NULL);
	assert_rdma(&r, 500, 0);
	free_resp(&r);
}

/*
 * Transfers left for s3_conn_work (what the S3 endpoint asks for, so that a
 * 256 MiB transfer does not hold up the event loop): a request is answered
 * only after its last slice, a pipelined request behind it waits (its bytes
 * are not taken), a PUT's ETag is the MD5 of the whole body though it was
 * read and hashed slice by slice, an object replaced by another connection
 * in the middle of a GET is still read whole (the GET holds its bytes), a
 * registration that goes away in the middle ends it with 500 and 0 bytes, a
 * client that sends FIN still gets the response, one that vanishes leaks
 * nothing.
 */
static void test_rdma_deferred(void **state)
{
	const size_t size = 8 << 20, slice = 1 << 20;
	struct fake_mr *m = add_mr(0x4321, 0x7e0000000000ull, 2 * size);
	uint8_t *src = pattern(size, 31), *other = pattern(size, 32);
	char tok[128], req[1024], v[64], md5[33], want[40];
	struct s3_conn *c2;
	struct resp r;
	unsigned calls;
	size_t olen, pos = 0;
	uint8_t *out;
	int n;

	(void)state;
	s3_conn_defer_transfers(conn);
	memcpy(m->buf, src, size);
	/* PUT: nothing answered until the last of its 1 MiB slices. */
	n = snprintf(req, sizeof(req), "PUT /ernic/big HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n\r\n",
		     token_hdr(0x4321, m->addr, size, tok));
	assert_int_equal(s3_conn_input(conn, (const uint8_t *)req, (size_t)n), (size_t)n);
	for (calls = 0; s3_conn_busy(conn); calls++) {
		assert_int_equal(pending_output(), 0);
		s3_conn_work(conn, slice);
	}
	assert_int_equal(calls, size / slice);
	assert_false(s3_conn_work(conn, slice)); /* nothing left */
	out = drain(&olen);
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_rdma(&r, 200, size);
	md5_hex(src, size, md5);
	snprintf(want, sizeof(want), "\"%s\"", md5);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free(out);

	/* A GET with a second request pipelined behind it: the second is not even taken. */
	memset(m->buf + size, 0, size);
	n = snprintf(req, sizeof(req), "GET /ernic/big HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n"
		     "HEAD /ernic/big HTTP/1.1\r\nHost: s3\r\n\r\n", token_hdr(0x4321, m->addr + size, size, tok));
	{
		size_t used = s3_conn_input(conn, (const uint8_t *)req, (size_t)n);

		assert_true(used < (size_t)n);
		assert_true(s3_conn_busy(conn));
		assert_int_equal(s3_conn_input(conn, (const uint8_t *)req + used, (size_t)n - used), 0);
		/* Meanwhile another connection replaces the object. */
		c2 = s3_conn_new(st);
		{
			char head[256];
			int k = snprintf(head, sizeof(head), "PUT /ernic/big HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n", size);
			uint8_t *msg = malloc((size_t)k + size);

			memcpy(msg, head, (size_t)k);
			memcpy(msg + k, other, size);
			assert_int_equal(s3_conn_input(c2, msg, (size_t)k + size), (size_t)k + size);
			free(msg);
		}
		s3_conn_free(c2);
		while (s3_conn_work(conn, slice))
			assert_int_equal(pending_output(), 0);
		/* The GET read the object as it was when it began. */
		assert_memory_equal(m->buf + size, src, size);
		/* Now the pipelined HEAD goes in, and sees the new object. */
		assert_int_equal(s3_conn_input(conn, (const uint8_t *)req + used, (size_t)n - used), (size_t)n - used);
	}
	out = drain(&olen);
	pos = 0;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_rdma(&r, 200, size);
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 200);
	md5_hex(other, size, md5);
	snprintf(want, sizeof(want), "\"%s\"", md5);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	assert_int_equal(pos, olen);
	free(out);

	/* The registration goes away after two slices: 500, 0 bytes, nothing stored. */
	n = snprintf(req, sizeof(req), "PUT /ernic/gone HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n\r\n",
		     token_hdr(0x4321, m->addr, size, tok));
	assert_int_equal(s3_conn_input(conn, (const uint8_t *)req, (size_t)n), (size_t)n);
	assert_true(s3_conn_work(conn, slice));
	assert_true(s3_conn_work(conn, slice));
	m->key = 0x4322;
	assert_false(s3_conn_work(conn, slice));
	m->key = 0x4321;
	out = drain(&olen);
	pos = 0;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_rdma(&r, 500, 0);
	free(out);
	r = req_str("HEAD /ernic/gone HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 404);
	assert_int_equal(s3_store_stats(st)->used_bytes, size);

	/*
	 * A cuObject GET whose registration goes after two slices: the answer falls back to the
	 * body (200, reply 501, the whole object), sent only once the transfer has stopped.
	 */
	{
		char ctok[160];
		uint8_t *obj = NULL;

		r = req_str("GET /ernic/big HTTP/1.1\r\nHost: s3\r\n\r\n");
		assert_int_equal(r.status, 200);
		obj = r.body;
		r.body = NULL;
		free_resp(&r);
		n = snprintf(req, sizeof(req), "GET /ernic/big HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n",
			     cu_token(0x4321, m->addr + size, size, ctok));
		assert_int_equal(s3_conn_input(conn, (const uint8_t *)req, (size_t)n), (size_t)n);
		assert_true(s3_conn_work(conn, slice));
		assert_int_equal(pending_output(), 0);
		assert_true(s3_conn_work(conn, slice));
		m->key = 0x4322;
		assert_false(s3_conn_work(conn, slice));
		m->key = 0x4321;
		out = drain(&olen);
		pos = 0;
		assert_true(parse_resp(out, olen, &pos, &r));
		assert_int_equal(r.status, 200);
		assert_string_equal(hdr(&r, "x-amz-rdma-reply", v, sizeof(v)), "501");
		assert_int_equal(r.body_len, size);
		assert_int_equal(olen - pos, size); /* the body follows the head, whole */
		assert_memory_equal(out + pos, obj, size);
		free(out);
		free(obj);
	}

	/* FIN after the request: the response still comes, then the connection may close. */
	n = snprintf(req, sizeof(req), "GET /ernic/big HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n",
		     token_hdr(0x4321, m->addr + size, 4 * slice, tok));
	assert_int_equal(s3_conn_input(conn, (const uint8_t *)req, (size_t)n), (size_t)n);
	s3_conn_input_eof(conn);
	assert_false(s3_conn_wants_close(conn));
	while (s3_conn_work(conn, slice))
		;
	out = drain(&olen);
	pos = 0;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_rdma(&r, 200, 4 * slice);
	assert_true(s3_conn_wants_close(conn));
	free(out);

	/* A connection that goes away in the middle of a GET: its reference to the object goes too (ASan). */
	c2 = s3_conn_new(st);
	s3_conn_defer_transfers(c2);
	assert_int_equal(s3_conn_input(c2, (const uint8_t *)req, (size_t)n), (size_t)n);
	assert_true(s3_conn_work(c2, slice));
	s3_conn_free(c2);
	free(src);
	free(other);
}

static void test_rdma_maxpart(void **state)
{
	struct fake_mr *m;
	uint8_t *src = pattern(8192, 9);
	struct resp r;

	(void)state;
	teardown(NULL);
	setup_spec("s3:maxpart=4K");
	m = add_mr(0x55, 0x40000, 16384);
	memcpy(m->buf, src, 8192);
	/* PUT larger than maxpart: EntityTooLarge. */
	r = rdma_req("PUT", "/ernic/big", 0x55, m->addr, 8192, NULL);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr((char *)r.body, "EntityTooLarge"));
	free_resp(&r);
	r = rdma_req("PUT", "/ernic/ok", 0x55, m->addr, 4096, NULL);
	assert_rdma(&r, 200, 4096);
	free_resp(&r);
	/* Multipart parts by RDMA too. */
	char id[64];
	initiate("mp", id);
	char path[128];
	snprintf(path, sizeof(path), "/ernic/mp?partNumber=1&uploadId=%s", id);
	r = rdma_req("PUT", path, 0x55, m->addr, 100, NULL);
	assert_rdma(&r, 200, 100);
	free_resp(&r);
	free(src);
}

/* ---- the cuObject dialect ---- */

/*
 * PUT and GET by RDMA with a cuObject descriptor: the bare reply, the byte
 * count, no body; a range and ?partNumber move exactly their bytes into the
 * window's start and nothing past them; AIStor's trailing ":addr:size" pair
 * places the window.
 */
static void test_cuobj_put_get(void **state)
{
	const size_t size = 64 << 10;
	struct fake_mr *m = add_mr(0x4321, 0x7f1000000000ull, 4 * size);
	uint8_t *src = pattern(size, 41);
	char v[64], md5[33], want[40], tok[160], tok2[200];
	struct resp r;

	(void)state;
	memcpy(m->buf, src, size);
	r = cu_req("PUT", "/ernic/cu", 0x4321, m->addr, size, NULL);
	assert_cu_ok(&r, 200, size);
	md5_hex(src, size, md5);
	snprintf(want, sizeof(want), "\"%s\"", md5);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->rdma_cuobj, 1);

	/* GET into the second quarter: the whole object. */
	memset(m->buf + size, 0xee, 3 * size);
	r = cu_req("GET", "/ernic/cu", 0x4321, m->addr + size, size, NULL);
	assert_cu_ok(&r, 200, size);
	assert_memory_equal(m->buf + size, src, size);
	free_resp(&r);

	/* A range: 206, exactly its 1024 bytes at the window's start, the byte after untouched. */
	memset(m->buf + size, 0xee, 3 * size);
	r = cu_req("GET", "/ernic/cu", 0x4321, m->addr + size, size, "Range: bytes=100-1123\r\n");
	assert_cu_ok(&r, 206, 1024);
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes 100-1123/65536");
	assert_memory_equal(m->buf + size, src + 100, 1024);
	assert_int_equal(m->buf[size + 1024], 0xee);
	free_resp(&r);

	/* ?partNumber=1 of a single PUT: the whole object, as a 206 with its Content-Range. */
	memset(m->buf + size, 0xee, 3 * size);
	r = cu_req("GET", "/ernic/cu?partNumber=1", 0x4321, m->addr + size, size, NULL);
	assert_cu_ok(&r, 206, size);
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes 0-65535/65536");
	assert_memory_equal(m->buf + size, src, size);
	free_resp(&r);

	/* The trailing pair moves the window (here to the third quarter; the descriptor names the first). */
	memset(m->buf + size, 0xee, 3 * size);
	snprintf(tok2, sizeof(tok2), "%s:%016" PRIx64 ":%016zx", cu_token(0x4321, m->addr, 16, tok),
		 m->addr + 2 * size, size);
	r = req_str("GET /ernic/cu HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n", tok2);
	assert_cu_ok(&r, 200, size);
	assert_memory_equal(m->buf + 2 * size, src, size);
	assert_int_equal(m->buf[size], 0xee);
	free_resp(&r);
	free(src);
}

/* A part of a multipart object by ?partNumber: its bytes only. */
static void test_rdma_part_number(void **state)
{
	const size_t part = 5 << 20;
	struct fake_mr *m = add_mr(0x51, 0x7f2000000000ull, part);
	uint8_t *a = pattern(part, 51), *b = pattern(1000, 52);
	char id[64], e1[48], e2[48], xml[512], v[64];
	struct resp r;

	(void)state;
	initiate("mp", id);
	upload_part("mp", id, 1, a, part, e1);
	upload_part("mp", id, 2, b, 1000, e2);
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("mp", id, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);

	memset(m->buf, 0xee, part);
	r = cu_req("GET", "/ernic/mp?partNumber=2", 0x51, m->addr, part, NULL);
	assert_cu_ok(&r, 206, 1000);
	assert_string_equal(hdr(&r, "x-amz-mp-parts-count", v, sizeof(v)), "2");
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes 5242880-5243879/5243880");
	assert_memory_equal(m->buf, b, 1000);
	assert_int_equal(m->buf[1000], 0xee);
	free_resp(&r);
	/* The same by hipObject's token. */
	memset(m->buf, 0xee, part);
	r = rdma_req("GET", "/ernic/mp?partNumber=1", 0x51, m->addr, part, NULL);
	assert_rdma(&r, 206, part);
	assert_memory_equal(m->buf, a, part);
	free_resp(&r);
	free(a);
	free(b);
}

/*
 * What RDMA cannot serve whole is declined: 501, a GET's payload in the body
 * (with the status a plain GET would have), a PUT answered 200 with
 * RDMANotSupported and nothing stored. No DMA is made for any of them.
 */
static void test_cuobj_declines(void **state)
{
	const size_t size = 4096;
	struct fake_mr *m = add_mr(0x61, 0x7f3000000000ull, 2 * size);
	struct fake_mr *ro = add_mr(0x62, 0x7f3100000000ull, 2 * size);
	uint8_t *src = pattern(size, 61), *other = pattern(size, 62);
	char v[64];
	struct resp r;
	unsigned calls;

	(void)state;
	put_plain("/ernic/d", src, size);
	ro->writable = false; /* a registration the server may read but not write */
	calls = dma_calls;

	r = cu_req("GET", "/ernic/d", 0x99, m->addr, size, NULL); /* no such key */
	assert_declined_get(&r, 200, src, size);
	assert_string_equal(hdr(&r, "Content-Length", v, sizeof(v)), "4096");
	free_resp(&r);
	r = cu_req("GET", "/ernic/d", 0x61, m->addr, size - 1, NULL); /* a window one byte short */
	assert_declined_get(&r, 200, src, size);
	free_resp(&r);
	r = cu_req("GET", "/ernic/d", 0x61, m->addr, 511, "Range: bytes=512-1023\r\n"); /* short for the range */
	assert_declined_get(&r, 206, src + 512, 512);
	free_resp(&r);
	r = cu_req("GET", "/ernic/d", 0x62, ro->addr, size, NULL); /* no remote write */
	assert_declined_get(&r, 200, src, size);
	free_resp(&r);
	r = cu_req("GET", "/ernic/d", 0, m->addr, size, NULL); /* the reserved key */
	assert_declined_get(&r, 200, src, size);
	free_resp(&r);
	r = cu_req("GET", "/ernic/d", 0x61, m->addr + size + 1, size, NULL); /* past the registration's end */
	assert_declined_get(&r, 200, src, size);
	free_resp(&r);
	assert_int_equal(dma_calls, calls);

	/* PUT: 200, 501, RDMANotSupported; a new key is not created, an old one keeps its bytes. */
	memcpy(m->buf, other, size);
	r = cu_req("PUT", "/ernic/new", 0x99, m->addr, size, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "x-amz-rdma-reply", v, sizeof(v)), "501");
	assert_string_equal(xml_text(&r, "Code", v, sizeof(v)), "RDMANotSupported");
	assert_null(hdr(&r, "ETag", v, sizeof(v)));
	free_resp(&r);
	get_plain_404("/ernic/new");
	r = cu_req("PUT", "/ernic/d", 0x61, m->addr + size + 1, size, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "x-amz-rdma-reply", v, sizeof(v)), "501");
	free_resp(&r);
	r = req_str("GET /ernic/d HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, src, size);
	free_resp(&r);
	assert_int_equal(dma_calls, calls);

	/* Without guest memory at all, the same. */
	s3_store_set_dma(st, NULL);
	r = cu_req("GET", "/ernic/d", 0x61, m->addr, size, NULL);
	assert_declined_get(&r, 200, src, size);
	free_resp(&r);

	assert_int_equal(s3_store_stats(st)->rdma_declined, 9);
	assert_int_equal(s3_store_stats(st)->rdma_fallback, 7);
	assert_int_equal(s3_store_stats(st)->rdma_cuobj, 9);
	free(src);
	free(other);
}

/* Errors in the cuObject dialect carry no reply header; a descriptor that does not parse is InvalidRDMAToken. */
static void test_cuobj_errors(void **state)
{
	struct fake_mr *m = add_mr(0x71, 0x7f4000000000ull, 4096);
	static const char *bad[] = {
		"0000000000001000:00001000:00000071:0000:000123:1",                    /* six fields */
		"0000000000001000:00001000:00000071:0000:000123:1:" CU_GID ":10",      /* eight */
		"0000000000001000:00001000:000000071:0000:000123:1:" CU_GID,           /* rkey nine digits */
		"0000000000001000:00001000:00000071:0000:000123:2:" CU_GID,            /* has_gid 2 */
		"0000000000001000:00001000:00000071:0000:000123:1:fe80",               /* a GID of 4 digits */
		"0000000000001000::00000071:0000:000123:1:" CU_GID,                    /* an empty field */
		"00000000000010g0:00001000:00000071:0000:000123:1:" CU_GID,            /* not hex */
	};
	char v[64];
	struct resp r;

	(void)state;
	put_plain("/ernic/x", (const uint8_t *)"x", 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = req_str("GET /ernic/x HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n", bad[i]);
		assert_error(&r, 400, "InvalidRDMAToken", "/ernic/x");
		assert_no_reply(&r);
		free_resp(&r);
	}
	r = cu_req("GET", "/ernic/nothere", 0x71, m->addr, 4096, NULL);
	assert_error(&r, 404, "NoSuchKey", "/ernic/nothere");
	assert_no_reply(&r);
	free_resp(&r);
	r = cu_req("PUT", "/nobucket/k", 0x71, m->addr, 4096, NULL);
	assert_int_equal(r.status, 404);
	assert_no_reply(&r);
	free_resp(&r);
	/* A body path request of another kind with a token: RDMA has no part in it, so no reply either. */
	r = req_str("GET /ernic?list-type=2 HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n",
		    "0000000000001000:00001000:00000071:0000:000123:1:" CU_GID);
	assert_int_equal(r.status, 200);
	assert_no_reply(&r);
	assert_non_null(strstr((const char *)r.body, "<ListBucketResult"));
	free_resp(&r);
	(void)v;
}

/*
 * The check said yes but the transfer failed (the registration went between
 * them): a cuObject GET falls back to the body, a PUT is a 500
 * RDMATransferFailed with no reply and nothing stored; hipObject's are 500s
 * that report 0 bytes.
 */
static void test_transfer_fails(void **state)
{
	const size_t size = 8192;
	struct fake_mr *m = add_mr(0x81, 0x7f5000000000ull, size);
	uint8_t *src = pattern(size, 81);
	struct resp r;

	(void)state;
	put_plain("/ernic/f", src, size);
	dma_check_passes = true;
	r = cu_req("GET", "/ernic/f", 0x81, m->addr + 4096, size, NULL);
	assert_declined_get(&r, 200, src, size);
	free_resp(&r);
	r = cu_req("GET", "/ernic/f", 0x81, m->addr + 4096, 6000, "Range: bytes=10-6009\r\n");
	assert_declined_get(&r, 206, src + 10, 6000);
	free_resp(&r);
	r = cu_req("PUT", "/ernic/g", 0x81, m->addr + 4096, size, NULL);
	assert_error(&r, 500, "RDMATransferFailed", "/ernic/g");
	assert_no_reply(&r);
	free_resp(&r);
	get_plain_404("/ernic/g");
	r = rdma_req("GET", "/ernic/f", 0x81, m->addr + 4096, size, NULL);
	assert_rdma(&r, 500, 0);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->rdma_failed, 4);
	assert_int_equal(s3_store_stats(st)->rdma_fallback, 2);
	free(src);
}

/* ---- what the dialects share ---- */

/* A HEAD with a token of either kind moves nothing and answers as a plain HEAD. */
static void test_head_moves_nothing(void **state)
{
	const size_t size = 3000;
	struct fake_mr *m = add_mr(0x91, 0x7f6000000000ull, size);
	uint8_t *src = pattern(size, 91);
	char tok[160], v[64];
	struct resp r;
	unsigned calls;

	(void)state;
	put_plain("/ernic/h", src, size);
	memset(m->buf, 0xee, size);
	calls = dma_calls;
	r = req_str("HEAD /ernic/h HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n",
			      token_hdr(0x91, m->addr, size, tok));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Length", v, sizeof(v)), "3000");
	assert_no_reply(&r);
	free_resp(&r);
	r = req_str("HEAD /ernic/h HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n",
			      cu_token(0x91, m->addr, size, tok));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Length", v, sizeof(v)), "3000");
	assert_no_reply(&r);
	free_resp(&r);
	assert_int_equal(dma_calls, calls);
	for (size_t i = 0; i < size; i++)
		assert_int_equal(m->buf[i], 0xee);
	assert_int_equal(s3_store_stats(st)->rdma_hipobj + s3_store_stats(st)->rdma_cuobj, 0);
	free(src);
}

static void crc32_b64(const uint8_t *d, size_t n, char out[16])
{
	uint32_t c = (uint32_t)crc32(0, d, (uInt)n);
	uint8_t be[4] = { (uint8_t)(c >> 24), (uint8_t)(c >> 16), (uint8_t)(c >> 8), (uint8_t)c };

	EVP_EncodeBlock((unsigned char *)out, be, 4);
}

/*
 * Checksums and conditions hold on the RDMA path: a PUT's x-amz-checksum-*
 * is checked against what RDMA read and stored; a wrong one stores nothing;
 * a GET with x-amz-checksum-mode returns it; If-None-Match on a GET answers
 * 304 and If-None-Match: * on a PUT 412, with no DMA made.
 */
static void test_checksums_conditions(void **state)
{
	const size_t size = 10000;
	struct fake_mr *m = add_mr(0xa1, 0x7f7000000000ull, 2 * size);
	uint8_t *src = pattern(size, 101);
	char b64[16], extra[128], v[64], etag[64];
	struct resp r;
	unsigned calls;

	(void)state;
	memcpy(m->buf, src, size);
	crc32_b64(src, size, b64);
	snprintf(extra, sizeof(extra), "x-amz-checksum-crc32: %s\r\n", b64);
	r = cu_req("PUT", "/ernic/c", 0xa1, m->addr, size, extra);
	assert_cu_ok(&r, 200, size);
	assert_string_equal(hdr(&r, "x-amz-checksum-crc32", v, sizeof(v)), b64);
	snprintf(etag, sizeof(etag), "%s", hdr(&r, "ETag", v, sizeof(v)));
	free_resp(&r);
	r = rdma_req("PUT", "/ernic/c2", 0xa1, m->addr, size, extra);
	assert_rdma(&r, 200, size);
	free_resp(&r);

	/* A checksum that does not match: 400 BadDigest, nothing stored (cuObject: no reply; hipObject: its reply). */
	r = cu_req("PUT", "/ernic/bad", 0xa1, m->addr, size, "x-amz-checksum-crc32: AAAAAA==\r\n");
	assert_error(&r, 400, "BadDigest", "/ernic/bad");
	assert_no_reply(&r);
	free_resp(&r);
	r = rdma_req("PUT", "/ernic/bad", 0xa1, m->addr, size, "x-amz-checksum-crc32: AAAAAA==\r\n");
	assert_rdma(&r, 400, 0);
	free_resp(&r);
	get_plain_404("/ernic/bad");

	/* GET by RDMA with the checksum asked for. */
	r = cu_req("GET", "/ernic/c", 0xa1, m->addr + size, size, "x-amz-checksum-mode: ENABLED\r\n");
	assert_cu_ok(&r, 200, size);
	assert_string_equal(hdr(&r, "x-amz-checksum-crc32", v, sizeof(v)), b64);
	assert_memory_equal(m->buf + size, src, size);
	free_resp(&r);

	/* Conditions: decided before any DMA. */
	calls = dma_calls;
	snprintf(extra, sizeof(extra), "If-None-Match: %s\r\n", etag);
	r = cu_req("GET", "/ernic/c", 0xa1, m->addr + size, size, extra);
	assert_int_equal(r.status, 304);
	assert_no_reply(&r);
	free_resp(&r);
	r = rdma_req("GET", "/ernic/c", 0xa1, m->addr + size, size, "If-Match: \"0123\"\r\n");
	assert_rdma(&r, 412, 0);
	free_resp(&r);
	r = cu_req("PUT", "/ernic/c", 0xa1, m->addr, size, "If-None-Match: *\r\n");
	assert_error(&r, 412, "PreconditionFailed", "/ernic/c");
	assert_no_reply(&r);
	free_resp(&r);
	assert_int_equal(dma_calls, calls);
	free(src);
}

/* A hipObject request naming (method, path) with t's token from GID gid: its status and parsed reply. */
static int gid_request(const char *method, const char *path, struct s3_token *t, const uint8_t gid[16],
		       struct s3_reply *rep)
{
	char hex[S3_TOKEN_HEX + 1], v[256];
	struct resp r;
	int status;

	memcpy(t->gid, gid, 16);
	s3_token_to_hex(t, hex);
	r = req_str("%s %s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n\r\n", method, path, hex);
	status = r.status;
	assert_int_equal(s3_reply_parse(hdr(&r, "x-amz-rdma-reply", v, sizeof(v)), rep), 0);
	free_resp(&r);
	return status;
}

/*
 * hipObject's reply names our token with a GID of the kind the client's is:
 * our link-local GID to a client that registered from its link-local one (an
 * RC QP cannot go from an IPv6 source to an IPv4-mapped destination), our
 * IPv4-mapped GID otherwise. The QPN is always ours.
 */
static void test_hipobj_reply_gid(void **state)
{
	static const uint8_t ll[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x53, 0xc0, 0xff, 0xfe, 0xa8, 0xc8, 0x01 };
	static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 200, 1 };
	static const uint8_t client_ll[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56 };
	static const uint8_t client_v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 200, 2 };
	struct fake_mr *m = add_mr(0xb1, 0x7f8000000000ull, 4096);
	struct s3_token t = { .transport = S3_TRANSPORT_RC, .qpn = 0x12, .rkey = 0xb1, .addr = m->addr, .len = 4096,
			      .port = 1 };
	struct s3_reply rep;

	(void)state;
	s3_store_set_server_ll(st, ll);
	/* From the link-local GID. */
	assert_int_equal(gid_request("PUT", "/ernic/g", &t, client_ll, &rep), 200);
	assert_int_equal(rep.kind, S3_REPLY_STATUS_TOKEN);
	assert_memory_equal(rep.token.gid, ll, 16);
	assert_int_equal(rep.token.qpn, 0x00c00042);
	/* From the IPv4-mapped one. */
	assert_int_equal(gid_request("GET", "/ernic/g", &t, client_v4, &rep), 200);
	assert_memory_equal(rep.token.gid, v4, 16);
	assert_int_equal(rep.token.len, 4096);
	/* An error keeps the rule. */
	assert_int_equal(gid_request("GET", "/ernic/none", &t, client_ll, &rep), 404);
	assert_int_equal(rep.status, 404);
	assert_memory_equal(rep.token.gid, ll, 16);
}

/* The -v line of a request: method, resource, status, dialect, how the payload went and why, the bytes. */
static void test_log_line(void **state)
{
	struct fake_mr *m = add_mr(0xc1, 0x7f9000000000ull, 4096);
	uint8_t *src = pattern(100, 111);
	char path[] = "/tmp/s3-rdma-log-XXXXXX", text[4096];
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;
	struct resp r;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	put_plain("/ernic/l", src, 100);
	log_set_level(LOG_LEVEL_DEBUG);
	fflush(stderr);
	dup2(fd, 2);
	r = cu_req("GET", "/ernic/l", 0xdead, m->addr, 4096, NULL);
	free_resp(&r);
	r = rdma_req("GET", "/ernic/l", 0xc1, m->addr, 4096, NULL);
	free_resp(&r);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	log_set_level(LOG_LEVEL_INFO);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	unlink(path);
	assert_true(n > 0);
	text[n] = '\0';
	assert_non_null(strstr(text, "s3: GET /ernic/l: 200, dialect cuobject, payload declined unknown-key, 0 bytes by RDMA, "));
	assert_non_null(strstr(text, "s3: GET /ernic/l: 200, dialect hipobject, payload rdma, 100 bytes by RDMA, "));
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rdma_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_short_and_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_maxpart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cuobj_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_part_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cuobj_declines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cuobj_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transfer_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_moves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checksums_conditions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hipobj_reply_gid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_line, setup, teardown),
	};

	return cmocka_run_group_tests_name("s3-rdma-unit", tests, NULL, NULL);
}
