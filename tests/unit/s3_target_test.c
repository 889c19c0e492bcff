/*
 * s3-target-unit: the S3 store through a transport-less connection (s3_conn):
 * raw HTTP in, raw HTTP out, with a fake set of DMA ops standing in for the
 * guest's registered memory. Covers the method set, listings, ranges,
 * multipart, capacity and slots, every error path, and a PUT's atomicity on
 * every path (the RDMA path's own tests are in s3_rdma_test.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <unistd.h>

#include "../lib/xorshift.h"
#include "s3/s3_conn.h"
#include "s3/s3_target.h"
#include "s3/s3_token.h"
#include "util/backend_opts.h"

#include "s3_harness.h"

/* ---- service and bucket ---- */

static void test_list_buckets(void **state)
{
	struct resp r = req_str("GET / HTTP/1.1\r\nHost: s3\r\n\r\n");
	char v[64];

	(void)state;
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"));
	assert_non_null(strstr((char *)r.body, "<Bucket><Name>ernic</Name><CreationDate>"));
	assert_string_equal(hdr(&r, "Content-Type", v, sizeof(v)), "application/xml");
	assert_non_null(hdr(&r, "x-amz-request-id", v, sizeof(v)));
	assert_non_null(hdr(&r, "Date", v, sizeof(v)));
	free_resp(&r);
	r = req_str("HEAD /ernic HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	r = req_str("HEAD /other HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 404);
	r = req_str("GET /other/ HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 404, "NoSuchBucket", "/other/");
	free_resp(&r);
	r = req_str("GET /other/key HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 404, "NoSuchBucket", "/other/key");
	free_resp(&r);
	r = req_str("PUT /ernic HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_error(&r, 409, "BucketAlreadyOwnedByYou", NULL);
	free_resp(&r);
	r = req_str("DELETE /ernic HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 405, "MethodNotAllowed", NULL);
	free_resp(&r);
	r = req_str("PATCH /ernic/k HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_error(&r, 405, "MethodNotAllowed", "/ernic/k");
	free_resp(&r);
	r = req_str("GET /ernic?location HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<LocationConstraint"));
	free_resp(&r);
	r = req_str("GET /ernic/k?acl HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 501, "NotImplemented", NULL);
	free_resp(&r);
	/* DeleteObjects without the integrity header S3 requires */
	r = req_str("POST /ernic?delete HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_error(&r, 400, "InvalidRequest", NULL);
	free_resp(&r);
}

/* ---- objects over the body path ---- */

static void test_put_get_head_delete(void **state)
{
	const size_t sizes[] = { 0, 1, 4096, 1 << 20, (1 << 20) + 7 };
	char v[128], md5[33], want[40];

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *data = pattern(sizes[i], (unsigned)i);
		struct resp r = put_bytes("/ernic/dir/obj", data, sizes[i], "Content-Type: text/plain\r\n");

		assert_int_equal(r.status, 200);
		md5_hex(data, sizes[i], md5);
		snprintf(want, sizeof(want), "\"%s\"", md5);
		assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
		free_resp(&r);

		r = req_str("GET /ernic/dir/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, sizes[i]);
		assert_memory_equal(r.body, data, sizes[i]);
		assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
		assert_string_equal(hdr(&r, "Content-Type", v, sizeof(v)), "text/plain");
		assert_non_null(hdr(&r, "Last-Modified", v, sizeof(v)));
		free_resp(&r);

		r = req_str("HEAD /ernic/dir/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, sizes[i]); /* Content-Length says the size, no body follows */
		assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
		free(data);
	}
	assert_int_equal(s3_store_stats(st)->objects, 1);
	assert_int_equal(s3_store_stats(st)->used_bytes, (1 << 20) + 7);

	struct resp r = req_str("DELETE /ernic/dir/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 204);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->used_bytes, 0);
	r = req_str("GET /ernic/dir/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 404, "NoSuchKey", "/ernic/dir/obj");
	free_resp(&r);
	r = req_str("HEAD /ernic/dir/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 404);
	/* Deletes are idempotent. */
	r = req_str("DELETE /ernic/dir/obj HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 204);
	free_resp(&r);
	/* Percent-encoded keys are stored decoded. */
	r = put_bytes("/ernic/a%20b%2Bc", (const uint8_t *)"x", 1, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("GET /ernic/a%%20b+c HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* A key longer than 1024 bytes. */
	char longkey[1200];
	memset(longkey, 'k', 1025);
	longkey[1025] = '\0';
	r = req_str("GET /ernic/%s HTTP/1.1\r\nHost: s3\r\n\r\n", longkey);
	assert_error(&r, 400, "KeyTooLongError", NULL);
	free_resp(&r);
}

static void test_content_md5(void **state)
{
	struct resp r;

	(void)state;
	/* MD5("hello") = 5d41402abc4b2a76b9719d911017c592, base64 XUFAKrxLKna5cZ2REBfFkg== */
	r = put_bytes("/ernic/h", (const uint8_t *)"hello", 5, "Content-MD5: XUFAKrxLKna5cZ2REBfFkg==\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = put_bytes("/ernic/h", (const uint8_t *)"hellO", 5, "Content-MD5: XUFAKrxLKna5cZ2REBfFkg==\r\n");
	assert_error(&r, 400, "BadDigest", NULL);
	free_resp(&r);
	r = put_bytes("/ernic/h", (const uint8_t *)"hello", 5, "Content-MD5: nonsense\r\n");
	assert_error(&r, 400, "InvalidDigest", NULL);
	free_resp(&r);
	/* The failed PUTs left the first one alone. */
	r = req_str("GET /ernic/h HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, "hello", 5);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->used_bytes, 5);
}

static void test_ranges(void **state)
{
	uint8_t *data = pattern(4096, 3);
	struct resp r = put_bytes("/ernic/r", data, 4096, NULL);
	char v[128];

	(void)state;
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=1024-1535\r\n\r\n");
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, 512);
	assert_memory_equal(r.body, data + 1024, 512);
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes 1024-1535/4096");
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=4000-\r\n\r\n");
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, 96);
	assert_memory_equal(r.body, data + 4000, 96);
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=-100\r\n\r\n");
	assert_int_equal(r.status, 206);
	assert_memory_equal(r.body, data + 3996, 100);
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes 3996-4095/4096");
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=4000-999999\r\n\r\n"); /* end clamped */
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, 96);
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=-99999\r\n\r\n"); /* longer suffix: all */
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, 4096);
	free_resp(&r);
	/* Unsatisfiable: 416 InvalidRange. */
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=4096-\r\n\r\n");
	assert_error(&r, 416, "InvalidRange", NULL);
	assert_string_equal(hdr(&r, "Content-Range", v, sizeof(v)), "bytes */4096");
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=-0\r\n\r\n");
	assert_error(&r, 416, "InvalidRange", NULL);
	free_resp(&r);
	r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=99999999999999999999999-\r\n\r\n");
	assert_error(&r, 416, "InvalidRange", NULL);
	free_resp(&r);
	/* Ignored: malformed, multi-range, reversed, other units. */
	const char *ignored[] = { "bytes=abc", "bytes=1-2,4-5", "bytes=10-5", "items=0-1", "bytes=", "bytes=-" };
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		r = req_str("GET /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: %s\r\n\r\n", ignored[i]);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, 4096);
		free_resp(&r);
	}
	/* HEAD with a range reports the range's length. */
	r = req_str("HEAD /ernic/r HTTP/1.1\r\nHost: s3\r\nRange: bytes=0-9\r\n\r\n");
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, 10);
	free(data);
}

/* ---- listings ---- */

static void put_small(const char *key)
{
	char path[512];
	struct resp r;

	snprintf(path, sizeof(path), "/ernic/%s", key);
	r = put_bytes(path, (const uint8_t *)"x", 1, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void test_list_v1(void **state)
{
	const char *keys[] = { "a/1", "a/2", "b/1", "c", "d&<e>" };
	struct resp r;

	(void)state;
	for (size_t i = 0; i < 5; i++)
		put_small(keys[i]);
	r = req_str("GET /ernic HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>ernic</Name>"));
	assert_int_equal(count((char *)r.body, "<Contents>"), 5);
	assert_non_null(strstr((char *)r.body, "<Key>d&amp;&lt;e&gt;</Key>")); /* escaped */
	assert_non_null(strstr((char *)r.body, "<IsTruncated>false</IsTruncated>"));
	/* Keys come in byte order. */
	assert_true(strstr((char *)r.body, "<Key>a/2</Key>") < strstr((char *)r.body, "<Key>b/1</Key>"));
	free_resp(&r);

	r = req_str("GET /ernic/?prefix=a/ HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Contents>"), 2);
	assert_non_null(strstr((char *)r.body, "<Prefix>a/</Prefix>"));
	free_resp(&r);
	r = req_str("GET /ernic/?delimiter=/ HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Contents>"), 2); /* c, d&<e> */
	assert_int_equal(count((char *)r.body, "<CommonPrefixes>"), 2);
	assert_non_null(strstr((char *)r.body, "<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes>"));
	assert_non_null(strstr((char *)r.body, "<Delimiter>/</Delimiter>"));
	free_resp(&r);
	/* max-keys truncates; NextMarker continues. */
	r = req_str("GET /ernic/?max-keys=2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Contents>"), 2);
	assert_non_null(strstr((char *)r.body, "<IsTruncated>true</IsTruncated>"));
	assert_non_null(strstr((char *)r.body, "<NextMarker>a/2</NextMarker>"));
	assert_non_null(strstr((char *)r.body, "<MaxKeys>2</MaxKeys>"));
	free_resp(&r);
	r = req_str("GET /ernic/?max-keys=2&marker=a/2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_non_null(strstr((char *)r.body, "<Key>b/1</Key>"));
	assert_non_null(strstr((char *)r.body, "<Key>c</Key>"));
	assert_null(strstr((char *)r.body, "<Key>a/2</Key>"));
	free_resp(&r);
	r = req_str("GET /ernic/?max-keys=bogus HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 400, "InvalidArgument", NULL);
	free_resp(&r);
	r = req_str("GET /ernic/?max-keys=-1 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 400, "InvalidArgument", NULL);
	free_resp(&r);
}

static void test_list_v2(void **state)
{
	char tok[256], *p, *e;
	struct resp r;
	int seen = 0;

	(void)state;
	for (int i = 0; i < 7; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%02d", i);
		put_small(k);
	}
	/* Walk the bucket two keys at a time with continuation tokens. */
	tok[0] = '\0';
	for (int page = 0; page < 10; page++) {
		if (tok[0])
			r = req_str("GET /ernic?list-type=2&max-keys=2&continuation-token=%s HTTP/1.1\r\nHost: s3\r\n\r\n", tok);
		else
			r = req_str("GET /ernic?list-type=2&max-keys=2 HTTP/1.1\r\nHost: s3\r\n\r\n");
		assert_int_equal(r.status, 200);
		seen += count((char *)r.body, "<Contents>");
		assert_non_null(strstr((char *)r.body, "<KeyCount>"));
		p = strstr((char *)r.body, "<NextContinuationToken>");
		if (p == NULL) {
			assert_non_null(strstr((char *)r.body, "<IsTruncated>false</IsTruncated>"));
			free_resp(&r);
			break;
		}
		p += strlen("<NextContinuationToken>");
		e = strstr(p, "<");
		snprintf(tok, sizeof(tok), "%.*s", (int)(e - p), p);
		free_resp(&r);
	}
	assert_int_equal(seen, 7);
	r = req_str("GET /ernic?list-type=2&start-after=k04 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Contents>"), 2);
	assert_non_null(strstr((char *)r.body, "<KeyCount>2</KeyCount>"));
	assert_non_null(strstr((char *)r.body, "<StartAfter>k04</StartAfter>"));
	free_resp(&r);
	r = req_str("GET /ernic?list-type=2&continuation-token=zz HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 400, "InvalidArgument", NULL);
	free_resp(&r);
	r = req_str("GET /ernic?list-type=3 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 400, "InvalidArgument", NULL);
	free_resp(&r);
}

/* ---- capacity, slots, maxpart, failed PUTs ---- */

static void test_capacity(void **state)
{
	uint8_t *data = pattern(600 << 10, 1);
	struct resp r;

	(void)state;
	teardown(NULL);
	setup_spec("s3:size=1M,objects=2,maxpart=700K");
	r = put_bytes("/ernic/a", data, 600 << 10, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* A second 600K does not fit in 1M: 507, nothing held. */
	r = put_bytes("/ernic/b", data, 600 << 10, NULL);
	assert_error(&r, 507, "InsufficientStorage", NULL);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->used_bytes, 600 << 10);
	/* Overwriting needs room for both copies while the new one arrives; the old stays intact. */
	r = put_bytes("/ernic/a", data + 1, 500 << 10, NULL);
	assert_error(&r, 507, "InsufficientStorage", NULL);
	free_resp(&r);
	r = req_str("GET /ernic/a HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, 600 << 10);
	assert_memory_equal(r.body, data, 600 << 10);
	free_resp(&r);
	/* Past maxpart: EntityTooLarge, decided from the headers. */
	r = req_str("PUT /ernic/big HTTP/1.1\r\nHost: s3\r\nContent-Length: 800000\r\nExpect: 100-continue\r\n\r\n");
	assert_error(&r, 400, "EntityTooLarge", NULL);
	free_resp(&r);
	assert_true(s3_conn_wants_close(conn)); /* the client was waiting for 100: answered and closed */
	s3_conn_free(conn);
	conn = s3_conn_new(st);
	/* Slots: two keys, the third is refused; overwriting an existing key takes no slot. */
	r = put_bytes("/ernic/s1", (const uint8_t *)"1", 1, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = put_bytes("/ernic/s2", (const uint8_t *)"2", 1, NULL);
	assert_error(&r, 507, "InsufficientStorage", NULL);
	free_resp(&r);
	r = put_bytes("/ernic/s1", (const uint8_t *)"3", 1, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->objects, 2);
	free(data);
}

static void test_interrupted_put(void **state)
{
	const char head[] = "PUT /ernic/x HTTP/1.1\r\nHost: s3\r\nContent-Length: 100000\r\n\r\n";
	uint8_t *data = pattern(100000, 5);
	struct resp r = put_bytes("/ernic/x", (const uint8_t *)"old", 3, NULL);
	size_t olen;

	(void)state;
	free_resp(&r);
	/* Half a body, then the connection is gone: nothing changes, nothing leaks. */
	assert_int_equal(s3_conn_input(conn, (const uint8_t *)head, sizeof(head) - 1), sizeof(head) - 1);
	assert_int_equal(s3_conn_input(conn, data, 50000), 50000);
	assert_int_equal(s3_store_stats(st)->used_bytes, 3 + 100000); /* reserved while in flight */
	s3_conn_input_eof(conn);
	free(drain(&olen));
	assert_int_equal(olen, 0);
	s3_conn_free(conn);
	conn = s3_conn_new(st);
	assert_int_equal(s3_store_stats(st)->used_bytes, 3);
	r = req_str("GET /ernic/x HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, 3);
	assert_memory_equal(r.body, "old", 3);
	free_resp(&r);
	free(data);
}

/* ---- the ETag, hashed as the body arrives ---- */

/* A deterministic generator for split points (xorshift32). */
static uint32_t split_state;

static size_t next_split(size_t max)
{
	return 1 + xorshift32(&split_state) % max;
}

/* Feeds msg to the connection in pieces of 1..max bytes; returns the final response. */
static struct resp exchange_pieces(const uint8_t *msg, size_t len, size_t max)
{
	size_t off = 0, olen, pos = 0;
	uint8_t *out;
	struct resp r;

	while (off < len) {
		size_t n = next_split(max);

		if (n > len - off)
			n = len - off;
		assert_int_equal(s3_conn_input(conn, msg + off, n), n);
		off += n;
	}
	out = drain(&olen);
	do {
		assert_true(parse_resp(out, olen, &pos, &r));
	} while (r.status == 100);
	r.body = malloc(r.body_len + 1);
	assert_true(pos + r.body_len <= olen);
	memcpy(r.body, out + pos, r.body_len);
	r.body[r.body_len] = '\0';
	free(out);
	return r;
}

static void assert_etag(const struct resp *r, const uint8_t *d, size_t n)
{
	char v[128], md5[33], want[40];

	md5_hex(d, n, md5);
	snprintf(want, sizeof(want), "\"%s\"", md5);
	assert_string_equal(hdr(r, "ETag", v, sizeof(v)), want);
}

static void assert_object(const char *path, const uint8_t *d, size_t n)
{
	struct resp r = req_str("GET %s HTTP/1.1\r\nHost: s3\r\n\r\n", path);

	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, n);
	assert_memory_equal(r.body, d, n);
	assert_etag(&r, d, n);
	free_resp(&r);
}

/* Appends n bytes to *msg (of *len, grown as needed). */
static void cat(uint8_t **msg, size_t *len, const void *d, size_t n)
{
	*msg = realloc(*msg, *len + n);
	assert_non_null(*msg);
	memcpy(*msg + *len, d, n);
	*len += n;
}

static void test_etag_incremental(void **state)
{
	const size_t sizes[] = { 1, 65535, 65536, (3 << 20) + 5 };
	char head[512];

	(void)state;
	split_state = 0x9e3779b9u;
	/* Content-Length bodies in pieces of every size up to ~9 KiB: the ETag is the MD5 of the whole. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *d = pattern(sizes[i], 40 + (unsigned)i), *msg = NULL;
		size_t len = 0;
		int n = snprintf(head, sizeof(head), "PUT /ernic/inc HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n",
				 sizes[i]);
		struct resp r;

		cat(&msg, &len, head, (size_t)n);
		cat(&msg, &len, d, sizes[i]);
		r = exchange_pieces(msg, len, 9000);
		assert_int_equal(r.status, 200);
		assert_etag(&r, d, sizes[i]);
		free_resp(&r);
		assert_object("/ernic/inc", d, sizes[i]);
		free(msg);
		free(d);
	}
	/* Content-MD5 checked against the incremental digest, both ways. */
	{
		const size_t n = 200000;
		uint8_t *d = pattern(n, 3), md[16], *msg = NULL;
		unsigned int mdlen = 16;
		char b64[32];
		size_t len = 0;
		int k;
		struct resp r;

		EVP_Digest(d, n, md, &mdlen, EVP_md5(), NULL);
		EVP_EncodeBlock((unsigned char *)b64, md, 16);
		k = snprintf(head, sizeof(head), "PUT /ernic/cmd5 HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n"
			     "Content-MD5: %s\r\n\r\n", n, b64);
		cat(&msg, &len, head, (size_t)k);
		cat(&msg, &len, d, n);
		r = exchange_pieces(msg, len, 4000);
		assert_int_equal(r.status, 200);
		assert_etag(&r, d, n);
		free_resp(&r);
		msg[len - 1] ^= 1;      /* the last byte differs: the digest no longer matches */
		r = exchange_pieces(msg, len, 4000);
		assert_error(&r, 400, "BadDigest", NULL);
		free_resp(&r);
		assert_object("/ernic/cmd5", d, n);
		free(msg);
		free(d);
	}
}


/*
 * Bodies of at least S3_MD5_THREAD_MIN bytes with a Content-Length are
 * hashed on the store's MD5 thread. On a deferring connection the request
 * waits after its last byte (busy, hashing, no output) until the thread's
 * eventfd fires; then s3_conn_work queues the response with the right ETag.
 * Content-MD5 is checked against the thread's digest; a body cut off while
 * the thread hashes it is dropped cleanly (ASan: no read of freed memory),
 * and the old object stays.
 */
static void test_put_hashed_on_thread(void **state)
{
	const size_t n = (4u << 20) + 3;
	uint8_t *d = pattern(n, 61), *out, md[16];
	unsigned int mdlen = 16;
	char head[512], b64[32], v[64], want[40], hex[33];
	struct pollfd pfd = { .fd = s3_store_md5_fd(st), .events = POLLIN };
	struct resp r;
	size_t olen, pos = 0;
	uint64_t cnt;
	int k;

	(void)state;
	assert_true(pfd.fd >= 0);
	s3_conn_defer_transfers(conn);
	for (int round = 0; round < 3; round++) {
		EVP_Digest(d, n, md, &mdlen, EVP_md5(), NULL);
		EVP_EncodeBlock((unsigned char *)b64, md, 16);
		if (round == 2)
			d[n / 2] ^= 1; /* the body no longer matches its Content-MD5: refused, the stored one stays */
		k = snprintf(head, sizeof(head), "PUT /ernic/thr HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n%s%s%s\r\n",
			     n, round ? "Content-MD5: " : "", round ? b64 : "", round ? "\r\n" : "");
		assert_int_equal(s3_conn_input(conn, (const uint8_t *)head, (size_t)k), (size_t)k);
		for (size_t at = 0; at < n;) {
			size_t piece = n - at < 65536 ? n - at : 65536;

			assert_int_equal(s3_conn_input(conn, d + at, piece), piece);
			at += piece;
		}
		/* The thread says when the digest is there, whether or not the connection had to wait. */
		assert_int_equal(poll(&pfd, 1, 10000), 1);
		assert_int_equal(read(pfd.fd, &cnt, sizeof(cnt)), (ssize_t)sizeof(cnt));
		if (s3_conn_busy(conn)) {
			assert_int_equal(pending_output(), 0);
			assert_false(s3_conn_work(conn, 1 << 20));
		}
		assert_false(s3_conn_busy(conn));
		out = drain(&olen);
		pos = 0;
		assert_true(parse_resp(out, olen, &pos, &r));
		assert_int_equal(pos + r.body_len, olen); /* one response, whole */
		r.body = malloc(r.body_len + 1);
		memcpy(r.body, out + pos, r.body_len);
		r.body[r.body_len] = '\0';
		if (round < 2) {
			assert_int_equal(r.status, 200);
			md5_hex(d, n, hex);
			snprintf(want, sizeof(want), "\"%s\"", hex);
			assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
		} else {
			assert_error(&r, 400, "BadDigest", NULL);
			d[n / 2] ^= 1;
		}
		free_resp(&r);
		free(out);
		assert_object("/ernic/thr", d, n);
	}
	/* Cut off mid-body, at every stage of the thread's work: dropped, the object unchanged. */
	for (size_t cut = 1u << 18; cut < n; cut += 1u << 20) {
		k = snprintf(head, sizeof(head), "PUT /ernic/thr HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n", n);
		assert_int_equal(s3_conn_input(conn, (const uint8_t *)head, (size_t)k), (size_t)k);
		assert_int_equal(s3_conn_input(conn, d + 1, cut), cut);
		s3_conn_input_eof(conn);
		free(drain(&olen));
		s3_conn_free(conn);
		conn = s3_conn_new(st);
		s3_conn_defer_transfers(conn);
		assert_object("/ernic/thr", d, n);
	}
	free(d);
}

static void test_etag_aws_chunked(void **state)
{
	const size_t chunks[] = { 65536, 100000, 7, 1 << 20 };
	size_t total = 0, len = 0, blen = 0, off = 0;
	uint8_t *d, *body = NULL, *msg = NULL;
	char line[128], head[512];
	struct resp r;
	int n;

	(void)state;
	split_state = 0x1234567u;
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++)
		total += chunks[i];
	d = pattern(total, 77);
	/* The aws-chunked framing around the payload: the ETag is the MD5 of the decoded bytes only. */
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		n = snprintf(line, sizeof(line), "%zx;chunk-signature=%064x\r\n", chunks[i], 0);
		cat(&body, &blen, line, (size_t)n);
		cat(&body, &blen, d + off, chunks[i]);
		cat(&body, &blen, "\r\n", 2);
		off += chunks[i];
	}
	n = snprintf(line, sizeof(line), "0;chunk-signature=%064x\r\n\r\n", 0);
	cat(&body, &blen, line, (size_t)n);
	n = snprintf(head, sizeof(head), "PUT /ernic/aws HTTP/1.1\r\nHost: s3\r\nContent-Encoding: aws-chunked\r\n"
		     "x-amz-decoded-content-length: %zu\r\nContent-Length: %zu\r\n\r\n", total, blen);
	cat(&msg, &len, head, (size_t)n);
	cat(&msg, &len, body, blen);
	r = exchange_pieces(msg, len, 70000);
	assert_int_equal(r.status, 200);
	assert_etag(&r, d, total);
	free_resp(&r);
	assert_object("/ernic/aws", d, total);
	free(msg);
	free(body);
	free(d);
}

/* Chunked bodies of unknown length grow their blob as they come; the digest does not care where. */
static void test_etag_chunked_growth(void **state)
{
	/* 600 KiB ends below the mapping threshold in a mapped blob, 3 MiB grows and shrinks a mapping. */
	const size_t sizes[] = { 600 << 10, (3 << 20) + 11 };
	const char head[] = "PUT /ernic/grow HTTP/1.1\r\nHost: s3\r\nTransfer-Encoding: chunked\r\n\r\n";

	(void)state;
	split_state = 0xabcdefu;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *d = pattern(sizes[i], 90 + (unsigned)i), *msg = NULL;
		size_t len = 0, off = 0;
		char line[32];
		struct resp r;
		int n;

		cat(&msg, &len, head, sizeof(head) - 1);
		while (off < sizes[i]) {
			size_t c = next_split(70000);

			if (c > sizes[i] - off)
				c = sizes[i] - off;
			n = snprintf(line, sizeof(line), "%zx\r\n", c);
			cat(&msg, &len, line, (size_t)n);
			cat(&msg, &len, d + off, c);
			cat(&msg, &len, "\r\n", 2);
			off += c;
		}
		cat(&msg, &len, "0\r\n\r\n", 5);
		r = exchange_pieces(msg, len, 50000);
		assert_int_equal(r.status, 200);
		assert_etag(&r, d, sizes[i]);
		free_resp(&r);
		assert_object("/ernic/grow", d, sizes[i]);
		assert_int_equal(s3_store_stats(st)->used_bytes, sizes[i]);
		free(msg);
		free(d);
	}
}

/* A PUT becomes visible whole, when its response is sent, never while its body arrives. */
static void test_put_published_whole(void **state)
{
	const size_t size = 2 << 20;
	uint8_t *d = pattern(size, 61);
	struct s3_conn *writer = conn, *reader = s3_conn_new(st);
	char head[256];
	int n = snprintf(head, sizeof(head), "PUT /ernic/pub HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n", size);
	size_t olen;
	struct resp r;

	(void)state;
	/* A new key: absent from GET and listings until the last byte. */
	assert_int_equal(s3_conn_input(writer, (const uint8_t *)head, (size_t)n), (size_t)n);
	assert_int_equal(s3_conn_input(writer, d, size - 1), size - 1);
	conn = reader;
	r = req_str("GET /ernic/pub HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 404, "NoSuchKey", NULL);
	free_resp(&r);
	r = req_str("GET /ernic?prefix=pub HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_null(strstr((char *)r.body, "<Key>pub</Key>"));
	free_resp(&r);
	conn = writer;
	r = exchange(d + size - 1, 1, true);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	conn = reader;
	assert_object("/ernic/pub", d, size);
	/* Replacing it: readers see the old bytes and ETag while the new body arrives, then the new. */
	for (size_t i = 0; i < size; i++)
		d[i] ^= 0x5a;
	conn = writer;
	assert_int_equal(s3_conn_input(writer, (const uint8_t *)head, (size_t)n), (size_t)n);
	assert_int_equal(s3_conn_input(writer, d, size / 2), size / 2);
	free(drain(&olen));
	assert_int_equal(olen, 0);
	conn = reader;
	{
		uint8_t *old = pattern(size, 61);

		assert_object("/ernic/pub", old, size);
		free(old);
	}
	conn = writer;
	r = exchange(d + size / 2, size - size / 2, true);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	conn = reader;
	assert_object("/ernic/pub", d, size);
	s3_conn_free(reader);
	conn = writer;
	free(d);
}

/*
 * The memory of objects that are gone is reused for later ones: a reused
 * mapping never shows its old bytes, and memory a response still sends from
 * is not reused.
 */
static void test_object_memory_reused(void **state)
{
	const size_t big = 3 << 20, mid = (2 << 20) + 5;
	uint8_t *a = pattern(big, 1), *b = pattern(mid, 2), *c = pattern(big, 3), *d = pattern(big, 4);
	struct s3_conn *reader = s3_conn_new(st), *writer = conn;
	const char get[] = "GET /ernic/c HTTP/1.1\r\nHost: s3\r\n\r\n";
	struct resp r;
	uint8_t *out;
	size_t olen, pos = 0;

	(void)state;
	r = put_bytes("/ernic/a", a, big, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("DELETE /ernic/a HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	/* A smaller object in the deleted one's memory: exactly its own bytes. */
	r = put_bytes("/ernic/b", b, mid, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	assert_object("/ernic/b", b, mid);
	r = req_str("HEAD /ernic/b HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, mid);
	/* A response in flight holds the object it sends: replacing it twice leaves those bytes alone. */
	r = put_bytes("/ernic/c", c, big, NULL);
	free_resp(&r);
	assert_int_equal(s3_conn_input(reader, (const uint8_t *)get, sizeof(get) - 1), sizeof(get) - 1);
	r = put_bytes("/ernic/c", d, big, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = put_bytes("/ernic/c", a, big, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	conn = reader;
	out = drain(&olen);
	conn = writer;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, big);
	assert_int_equal(olen - pos, big);
	assert_memory_equal(out + pos, c, big);
	free(out);
	s3_conn_free(reader);
	assert_object("/ernic/c", a, big);
	assert_int_equal(s3_store_stats(st)->used_bytes, mid + big);
	free(a);
	free(b);
	free(c);
	free(d);
}

/* ---- protocol behaviour of the connection ---- */

static void test_conn_behaviour(void **state)
{
	struct resp r;
	size_t olen, pos = 0;
	uint8_t *out;
	char v[64];

	(void)state;
	/* 100-continue, then the body, then the final answer. */
	const char put[] = "PUT /ernic/c HTTP/1.1\r\nHost: s3\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
	assert_int_equal(s3_conn_input(conn, (const uint8_t *)put, sizeof(put) - 1), sizeof(put) - 1);
	out = drain(&olen);
	assert_int_equal(olen, 25);
	assert_memory_equal(out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	free(out);
	r = exchange("abc", 3, true);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* Pipelined: three requests in one write, three responses in order. */
	const char pipe[] = "GET /ernic/c HTTP/1.1\r\nHost: s3\r\n\r\n"
			    "GET /ernic/missing HTTP/1.1\r\nHost: s3\r\n\r\n"
			    "HEAD /ernic/c HTTP/1.1\r\nHost: s3\r\n\r\n";
	assert_int_equal(s3_conn_input(conn, (const uint8_t *)pipe, sizeof(pipe) - 1), sizeof(pipe) - 1);
	out = drain(&olen);
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 200);
	assert_memory_equal(out + pos, "abc", 3);
	pos += r.body_len;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 404);
	pos += r.body_len;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 200);
	assert_int_equal(pos, olen);
	free(out);
	assert_false(s3_conn_wants_close(conn));
	/* aws-chunked uploads are stored decoded. */
	static const char aws_body[] = "b;chunk-signature=0000\r\nhello world\r\n0;chunk-signature=0000\r\n"
				       "x-amz-checksum-crc32:AAAAAA==\r\n\r\n";
	char fixed[512];
	snprintf(fixed, sizeof(fixed), "PUT /ernic/aws HTTP/1.1\r\nHost: s3\r\nContent-Encoding: aws-chunked\r\n"
		 "x-amz-decoded-content-length: 11\r\nContent-Length: %zu\r\n\r\n%s", strlen(aws_body), aws_body);
	r = exchange(fixed, strlen(fixed), true);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("GET /ernic/aws HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, 11);
	assert_memory_equal(r.body, "hello world", 11);
	free_resp(&r);
	/* Chunked body without a known length. */
	r = req_str("PUT /ernic/ch HTTP/1.1\r\nHost: s3\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("GET /ernic/ch HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, 6);
	assert_memory_equal(r.body, "abcdef", 6);
	free_resp(&r);
	/* PUT without any length: 411. */
	r = req_str("PUT /ernic/nolen HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_error(&r, 411, "MissingContentLength", NULL);
	free_resp(&r);
	/* Connection: close is honoured. */
	r = req_str("GET /ernic/c HTTP/1.1\r\nHost: s3\r\nConnection: close\r\n\r\n");
	assert_string_equal(hdr(&r, "Connection", v, sizeof(v)), "close");
	free_resp(&r);
	assert_true(s3_conn_wants_close(conn));
}

static void test_http_errors(void **state)
{
	struct resp r;
	char big[20000];

	(void)state;
	r = req_str("NOT HTTP AT ALL\r\n\r\n");
	assert_error(&r, 400, "BadRequest", NULL);
	free_resp(&r);
	assert_true(s3_conn_wants_close(conn));
	s3_conn_free(conn);
	conn = s3_conn_new(st);
	int n = snprintf(big, sizeof(big), "GET /ernic/x HTTP/1.1\r\n");
	for (int i = 0; i < 70; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "X-H%d: v\r\n", i);
	snprintf(big + n, sizeof(big) - (size_t)n, "\r\n");
	r = req_str("%s", big);
	assert_error(&r, 431, "RequestHeaderSectionTooLarge", NULL);
	free_resp(&r);
	assert_true(s3_conn_wants_close(conn));
}

/* ---- multipart ---- */

static void test_multipart(void **state)
{
	const size_t p1 = 5 << 20, p2 = 1234;
	uint8_t *d1 = pattern(p1, 11), *d2 = pattern(p2, 12);
	char id[64], e1[48], e2[48], xml[1024], want[64], v[128];
	uint8_t md[32], digest[16];
	unsigned int mdlen = 16;
	struct resp r;

	(void)state;
	initiate("mp", id);
	upload_part("mp", id, 1, d1, p1, e1);
	upload_part("mp", id, 2, d2, p2, e2);
	assert_int_equal(s3_store_stats(st)->used_bytes, p1 + p2);
	/* List the parts. */
	r = req_str("GET /ernic/mp?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	assert_int_equal(r.status, 200);
	assert_int_equal(count((char *)r.body, "<Part>"), 2);
	assert_non_null(strstr((char *)r.body, "<Size>1234</Size>"));
	free_resp(&r);
	/* Errors at completion, each leaving the upload usable. */
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e2, e1);
	r = complete("mp", id, xml);
	assert_error(&r, 400, "InvalidPartOrder", NULL);
	free_resp(&r);
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"0000\"</ETag></Part>"
		 "</CompleteMultipartUpload>");
	r = complete("mp", id, xml);
	assert_error(&r, 400, "InvalidPart", NULL);
	free_resp(&r);
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>3</PartNumber><ETag>%s</ETag></Part>"
		 "</CompleteMultipartUpload>", e1);
	r = complete("mp", id, xml);
	assert_error(&r, 400, "InvalidPart", NULL);
	free_resp(&r);
	r = complete("mp", id, "<CompleteMultipartUpload><Part><PartNumber>1</Part>");
	assert_error(&r, 400, "MalformedXML", NULL);
	free_resp(&r);
	r = complete("mp", id, "<Other/>");
	assert_error(&r, 400, "MalformedXML", NULL);
	free_resp(&r);
	r = complete("mp", id, "<CompleteMultipartUpload></CompleteMultipartUpload>");
	assert_error(&r, 400, "MalformedXML", NULL);
	free_resp(&r);
	/* The good one: ETags with and without quotes are both accepted. */
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		 "<Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><ETag>%.32s</ETag><PartNumber> 2 </PartNumber></Part></CompleteMultipartUpload>", e1, e2 + 1);
	r = complete("mp", id, xml);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<CompleteMultipartUploadResult"));
	/* ETag: MD5 of the two binary part digests, then "-2". */
	EVP_Digest(d1, p1, md, &mdlen, EVP_md5(), NULL);
	EVP_Digest(d2, p2, md + 16, &mdlen, EVP_md5(), NULL);
	EVP_Digest(md, 32, digest, &mdlen, EVP_md5(), NULL);
	want[0] = '"';
	for (int i = 0; i < 16; i++)
		sprintf(want + 1 + 2 * i, "%02x", digest[i]);
	strcat(want, "-2\"");
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->used_bytes, p1 + p2); /* parts released, object held */
	assert_int_equal(s3_store_stats(st)->uploads, 0);
	r = req_str("GET /ernic/mp HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, p1 + p2);
	assert_memory_equal(r.body, d1, p1);
	assert_memory_equal(r.body + p1, d2, p2);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free_resp(&r);
	/* The upload is gone now; a retried Complete gets the same answer, as S3 gives it. */
	r = complete("mp", id, xml);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free_resp(&r);
	r = req_str("DELETE /ernic/mp?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	assert_error(&r, 404, "NoSuchUpload", NULL);
	free_resp(&r);
	free(d1);
	free(d2);
}

static void test_multipart_rules(void **state)
{
	uint8_t small[100] = { 1 };
	char id[64], e1[48], e2[48], xml[1024];
	struct resp r;

	(void)state;
	initiate("s", id);
	upload_part("s", id, 1, small, sizeof(small), e1);
	upload_part("s", id, 2, small, sizeof(small), e2);
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("s", id, xml);
	assert_error(&r, 400, "EntityTooSmall", NULL);
	free_resp(&r);
	/* Bad part numbers, unknown uploads, the wrong key. */
	r = req_str("PUT /ernic/s?partNumber=0&uploadId=%s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n", id);
	assert_error(&r, 400, "InvalidArgument", NULL);
	free_resp(&r);
	r = req_str("PUT /ernic/s?partNumber=10001&uploadId=%s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n", id);
	assert_error(&r, 400, "InvalidArgument", NULL);
	free_resp(&r);
	r = req_str("PUT /ernic/s?partNumber=1&uploadId=ffff HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_error(&r, 404, "NoSuchUpload", NULL);
	free_resp(&r);
	r = req_str("PUT /ernic/other?partNumber=1&uploadId=%s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n", id);
	assert_error(&r, 404, "NoSuchUpload", NULL);
	free_resp(&r);
	/* Completing just the last part alone is fine (no size rule for a single part). */
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part>"
		 "</CompleteMultipartUpload>", e2);
	initiate("t", id);
	char eT[48];
	upload_part("t", id, 2, small, sizeof(small), eT);
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part>"
		 "</CompleteMultipartUpload>", eT);
	r = complete("t", id, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* Abort frees the parts; aborting again is NoSuchUpload. */
	uint64_t before = s3_store_stats(st)->used_bytes;
	initiate("u", id);
	upload_part("u", id, 1, small, sizeof(small), e1);
	assert_int_equal(s3_store_stats(st)->used_bytes, before + sizeof(small));
	r = req_str("DELETE /ernic/u?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	assert_int_equal(r.status, 204);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->used_bytes, before);
	r = req_str("DELETE /ernic/u?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	assert_error(&r, 404, "NoSuchUpload", NULL);
	free_resp(&r);
}

/* Parts fed in pieces: each part's ETag is its MD5, the object's the MD5 of those digests, "-3". */
static void test_etag_multipart_incremental(void **state)
{
	const size_t sizes[] = { 5 << 20, (5 << 20) + 3, 4321 };
	uint8_t *d[3], md[48], digest[16];
	char id[64], etag[3][48], xml[1024], want[64], v[128], head[512];
	unsigned int mdlen = 16;
	struct resp r;
	int n;

	(void)state;
	split_state = 0x5eedu;
	initiate("mpi", id);
	for (int i = 0; i < 3; i++) {
		uint8_t *msg = NULL;
		size_t len = 0;

		d[i] = pattern(sizes[i], 200 + (unsigned)i);
		n = snprintf(head, sizeof(head), "PUT /ernic/mpi?partNumber=%d&uploadId=%s HTTP/1.1\r\nHost: s3\r\n"
			     "Content-Length: %zu\r\n\r\n", i + 1, id, sizes[i]);
		cat(&msg, &len, head, (size_t)n);
		cat(&msg, &len, d[i], sizes[i]);
		r = exchange_pieces(msg, len, 66000);
		assert_int_equal(r.status, 200);
		assert_etag(&r, d[i], sizes[i]);
		snprintf(etag[i], sizeof(etag[i]), "%.47s", hdr(&r, "ETag", v, sizeof(v)));
		free_resp(&r);
		free(msg);
		EVP_Digest(d[i], sizes[i], md + 16 * i, &mdlen, EVP_md5(), NULL);
	}
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part><Part><PartNumber>3</PartNumber>"
		 "<ETag>%s</ETag></Part></CompleteMultipartUpload>", etag[0], etag[1], etag[2]);
	r = complete("mpi", id, xml);
	assert_int_equal(r.status, 200);
	EVP_Digest(md, 48, digest, &mdlen, EVP_md5(), NULL);
	want[0] = '"';
	for (int i = 0; i < 16; i++)
		sprintf(want + 1 + 2 * i, "%02x", digest[i]);
	strcat(want, "-3\"");
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	free_resp(&r);
	r = req_str("HEAD /ernic/mpi HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), want);
	assert_int_equal(r.body_len, sizes[0] + sizes[1] + sizes[2]);
	for (int i = 0; i < 3; i++)
		free(d[i]);
}

/* ---- a PUT replaces an object whole or not at all, on every path ---- */

/*
 * Every way an object can be written (Content-Length, chunked and aws-chunked
 * bodies, RDMA by token, multipart completion), each completing and each
 * failing in the ways it can (cut off mid-body, bad Content-MD5, bad framing,
 * an RDMA window outside its registration, a wrong part in the completion, an
 * aborted upload), against one key, while readers are at work: two GETs (one
 * ranged) started before the PUT, whose responses stay partly unsent until
 * after it (as TCP holds what is not yet acknowledged), and GET, HEAD, ranged
 * GET, RDMA GET and a listing halfway through the PUT and after it. Every
 * reader sees the old object or the new one, whole and with its own ETag;
 * a failed PUT leaves the old one and gives back all it held.
 */
enum put_path { PP_LENGTH, PP_CHUNKED, PP_AWS, PP_RDMA, PP_MULTIPART };
enum put_fate { PF_OK, PF_CUT, PF_BAD_MD5, PF_BAD_FRAMING, PF_DMA_FAULT, PF_BAD_PART, PF_ABORTED };

#define AT_KEY "/ernic/atomic"
#define AT_MR_KEY 0x4242u
#define AT_MR_ADDR 0x7e0000000000ull
#define AT_MR_LEN (16u << 20)

struct at_obj {
	uint8_t *d;
	size_t n;
	char etag[48];   /* quoted; a multipart object's is not the MD5 of its bytes */
};

static void at_md5_etag(const uint8_t *d, size_t n, char etag[48])
{
	char md5[33];

	md5_hex(d, n, md5);
	snprintf(etag, 48, "\"%s\"", md5);
}

/* One whole request on a connection of its own; the final response (body read unless HEAD). */
static struct resp at_request(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct resp at_request(const char *fmt, ...)
{
	struct s3_conn *saved = conn;
	char buf[1024];
	struct resp r;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	conn = s3_conn_new(st);
	r = exchange(buf, (size_t)n, strncmp(buf, "HEAD ", 5) != 0);
	s3_conn_free(conn);
	conn = saved;
	return r;
}

/* What every kind of reader sees now is exactly o. */
static void at_expect(const struct at_obj *o, const char *when)
{
	struct fake_mr *m = mr_find(AT_MR_KEY);
	size_t off = o->n / 3, len = o->n / 3 + 1;
	char v[128], want[64];
	struct resp r;

	r = at_request("GET " AT_KEY " HTTP/1.1\r\nHost: s3\r\n\r\n");
	if (r.status != 200 || r.body_len != o->n || memcmp(r.body, o->d, o->n) != 0)
		fail_msg("%s: GET gave %d, %zu bytes, not the %zu bytes expected", when, r.status, r.body_len, o->n);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), o->etag);
	free_resp(&r);
	r = at_request("HEAD " AT_KEY " HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.body_len, o->n);
	assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), o->etag);
	r = at_request("GET " AT_KEY " HTTP/1.1\r\nHost: s3\r\nRange: bytes=%zu-%zu\r\n\r\n", off, off + len - 1);
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, len);
	if (memcmp(r.body, o->d + off, len) != 0)
		fail_msg("%s: a ranged GET differs from the object", when);
	free_resp(&r);
	memset(m->buf + AT_MR_LEN / 2, 0xee, AT_MR_LEN / 2);
	{
		char tok[128];

		r = at_request("GET " AT_KEY " HTTP/1.1\r\nHost: s3\r\nx-amz-rdma-token: %s\r\n\r\n",
			       token_hdr(AT_MR_KEY, AT_MR_ADDR + AT_MR_LEN / 2, AT_MR_LEN / 2, tok));
	}
	assert_rdma(&r, 200, o->n);
	if (memcmp(m->buf + AT_MR_LEN / 2, o->d, o->n) != 0)
		fail_msg("%s: an RDMA GET wrote other bytes than the object's", when);
	free_resp(&r);
	r = at_request("GET /ernic?prefix=atomic HTTP/1.1\r\nHost: s3\r\n\r\n");
	snprintf(want, sizeof(want), "<Size>%zu</Size>", o->n);
	assert_non_null(strstr((char *)r.body, want));
	assert_int_equal(count((char *)r.body, "<Key>"), 1);
	free_resp(&r);
}

/*
 * The TCP stack reads queued output by offset from the first unacknowledged byte
 * (s3_conn_output_peek), sends on at growing offsets while ACKs lag, resends from
 * lower ones, and drops what was acknowledged (s3_conn_output_done). The peek
 * remembers where it ended; whatever the order, every offset must give the bytes
 * the stream has there: eight pipelined GETs' answers, read in random steps with
 * random resends and ACKs, are the same bytes at every reading and parse as the
 * eight answers with the object's bytes.
 */
static void test_output_peek_offsets(void **state)
{
	enum { NREQ = 8, OBJ = 3000, CAP = 64 << 10 };
	uint8_t *obj = pattern(OBJ, 77), *seen = calloc(1, CAP), *known = calloc(1, CAP);
	uint32_t rng = 0x9e3779b9u;
	uint64_t una = 0, nxt = 0;
	struct s3_conn *c = s3_conn_new(st);
	struct resp r = put_bytes("/ernic/peek", obj, OBJ, NULL);
	size_t pos = 0;

	(void)state;
	assert_int_equal(r.status, 200);
	free_resp(&r);
	for (int i = 0; i < NREQ; i++) {
		static const char req[] = "GET /ernic/peek HTTP/1.1\r\nHost: s3\r\n\r\n";

		assert_int_equal(s3_conn_input(c, (const uint8_t *)req, sizeof(req) - 1), sizeof(req) - 1);
	}
	for (int steps = 0; steps < 100000; steps++) {
		uint32_t what = xorshift32(&rng) % 8;
		uint64_t off = nxt - una; /* send on */
		const uint8_t *p;
		size_t k, lim;

		if (what == 0 && nxt > una)
			off = xorshift32(&rng) % (nxt - una); /* a resend from earlier */
		if (what == 1 && nxt > una) {
			k = 1 + xorshift32(&rng) % (nxt - una); /* an ACK: of some, or (often) of all that was sent */
			if (xorshift32(&rng) & 1)
				k = nxt - una;
			s3_conn_output_done(c, k);
			una += k;
			continue;
		}
		k = s3_conn_output_peek(c, off, &p);
		if (k == 0) {
			if (una == nxt && off == 0)
				break; /* everything sent and acknowledged */
			assert_true(off == nxt - una); /* nothing past the end */
			continue;
		}
		lim = 1 + xorshift32(&rng) % 1448; /* a segment's worth at most */
		if (k > lim)
			k = lim;
		assert_true(una + off + k <= CAP);
		for (size_t i = 0; i < k; i++) {
			uint64_t at = una + off + i;

			if (known[at] && seen[at] != p[i])
				fail_msg("byte %llu read as %02x, earlier as %02x", (unsigned long long)at, p[i], seen[at]);
			seen[at] = p[i];
			known[at] = 1;
		}
		if (una + off + k > nxt)
			nxt = una + off + k;
	}
	assert_true(una == nxt && nxt > 0);
	for (int i = 0; i < NREQ; i++) {
		assert_true(parse_resp(seen, (size_t)nxt, &pos, &r));
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, OBJ);
		assert_true(pos + OBJ <= nxt);
		assert_memory_equal(seen + pos, obj, OBJ);
		pos += OBJ;
		free_resp(&r);
	}
	assert_int_equal(pos, (size_t)nxt);
	s3_conn_free(c);
	free(obj);
	free(seen);
	free(known);
}

/* A GET whose response is taken only in part for now; the rest stays queued. */
struct at_reader {
	struct s3_conn *c;
	uint8_t *out;
	size_t len;
};

static void at_reader_start(struct at_reader *rd, const char *range, size_t take)
{
	char req[256];
	int n = snprintf(req, sizeof(req), "GET " AT_KEY " HTTP/1.1\r\nHost: s3\r\n%s%s%s\r\n", range ? "Range: " : "",
			 range ? range : "", range ? "\r\n" : "");
	const uint8_t *p;
	size_t k;

	rd->c = s3_conn_new(st);
	rd->out = malloc(16 << 20); /* the largest object here is 6 MiB */
	rd->len = 0;
	assert_int_equal(s3_conn_input(rd->c, (const uint8_t *)req, (size_t)n), (size_t)n);
	while (rd->len < take && (k = s3_conn_output(rd->c, &p)) > 0) {
		if (k > take - rd->len)
			k = take - rd->len;
		memcpy(rd->out + rd->len, p, k);
		rd->len += k;
		s3_conn_output_done(rd->c, k);
	}
	assert_int_equal(rd->len, take); /* there was more than that to send */
}

/* The rest of the response: exactly want (n bytes at off of the object) behind its head. */
static void at_reader_finish(struct at_reader *rd, const uint8_t *want, size_t n, const char *when)
{
	const uint8_t *p;
	size_t k, pos = 0;
	struct resp r;

	while ((k = s3_conn_output(rd->c, &p)) > 0) {
		memcpy(rd->out + rd->len, p, k);
		rd->len += k;
		s3_conn_output_done(rd->c, k);
	}
	assert_true(parse_resp(rd->out, rd->len, &pos, &r));
	if (r.body_len != n || rd->len - pos != n || memcmp(rd->out + pos, want, n) != 0)
		fail_msg("%s: a GET in flight during the PUT did not get the old object's bytes", when);
	s3_conn_free(rd->c);
	free(rd->out);
}

/* The request bytes of a body PUT of o along path, with the failure fate built in. */
static uint8_t *at_put_msg(enum put_path path, enum put_fate fate, const struct at_obj *o, size_t *len)
{
	uint8_t *msg = NULL, *body = NULL;
	size_t blen = 0, off = 0, chunk = 100000;
	char head[512], line[128], md5b64[32] = "";
	int n;

	*len = 0;
	if (fate == PF_BAD_MD5) {
		uint8_t md[16];
		unsigned int mdlen = 16;

		EVP_Digest(o->d, o->n, md, &mdlen, EVP_md5(), NULL);
		md[7] ^= 1;
		EVP_EncodeBlock((unsigned char *)md5b64, md, 16);
	}
	if (path == PP_LENGTH) {
		n = snprintf(head, sizeof(head), "PUT " AT_KEY " HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n%s%s%s\r\n",
			     o->n, md5b64[0] ? "Content-MD5: " : "", md5b64, md5b64[0] ? "\r\n" : "");
		cat(&msg, len, head, (size_t)n);
		cat(&msg, len, o->d, o->n);
		return msg;
	}
	/* Chunks of 100000 bytes; bad framing spoils the size line of the first chunk past the middle. */
	while (off < o->n) {
		size_t c = o->n - off < chunk ? o->n - off : chunk;
		bool spoil = fate == PF_BAD_FRAMING && off > o->n / 2 && off - chunk <= o->n / 2;

		if (path == PP_AWS)
			n = snprintf(line, sizeof(line), "%zx;chunk-signature=%064x\r\n", spoil ? c + 1 : c, 0);
		else
			n = snprintf(line, sizeof(line), spoil ? "z%zx\r\n" : "%zx\r\n", c);
		cat(&body, &blen, line, (size_t)n);
		cat(&body, &blen, o->d + off, c);
		cat(&body, &blen, "\r\n", 2);
		off += c;
	}
	if (path == PP_AWS) {
		n = snprintf(line, sizeof(line), "0;chunk-signature=%064x\r\n\r\n", 0);
		cat(&body, &blen, line, (size_t)n);
		n = snprintf(head, sizeof(head), "PUT " AT_KEY " HTTP/1.1\r\nHost: s3\r\nContent-Encoding: aws-chunked\r\n"
			     "x-amz-decoded-content-length: %zu\r\nContent-Length: %zu\r\n%s%s%s\r\n", o->n, blen,
			     md5b64[0] ? "Content-MD5: " : "", md5b64, md5b64[0] ? "\r\n" : "");
	} else {
		cat(&body, &blen, "0\r\n\r\n", 5);
		n = snprintf(head, sizeof(head), "PUT " AT_KEY " HTTP/1.1\r\nHost: s3\r\nTransfer-Encoding: chunked\r\n%s%s%s\r\n",
			     md5b64[0] ? "Content-MD5: " : "", md5b64, md5b64[0] ? "\r\n" : "");
	}
	cat(&msg, len, head, (size_t)n);
	cat(&msg, len, body, blen);
	free(body);
	return msg;
}

/* Parts of 5 MiB and the rest; the readers look between the parts. Returns the response of the last step. */
static struct resp at_multipart(enum put_fate fate, struct at_obj *o, const struct at_obj *old)
{
	const size_t p1 = S3_MIN_PART_SIZE;
	char id[64], e1[48], e2[48], xml[512];
	struct resp r;
	uint8_t both[32];
	unsigned int mdlen = 16;

	initiate("atomic", id);
	upload_part("atomic", id, 1, o->d, p1, e1);
	at_expect(old, "between the parts");
	if (fate == PF_CUT) {
		/* The second part cut off, then the upload aborted: the upload and its first part are gone. */
		char head[256];
		int n = snprintf(head, sizeof(head), "PUT " AT_KEY "?partNumber=2&uploadId=%s HTTP/1.1\r\nHost: s3\r\n"
				 "Content-Length: %zu\r\n\r\n", id, o->n - p1);
		struct s3_conn *c = s3_conn_new(st);

		assert_int_equal(s3_conn_input(c, (const uint8_t *)head, (size_t)n), (size_t)n);
		assert_int_equal(s3_conn_input(c, o->d + p1, (o->n - p1) / 2), (o->n - p1) / 2);
		s3_conn_input_eof(c);
		s3_conn_free(c);
		return req_str("DELETE " AT_KEY "?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	}
	upload_part("atomic", id, 2, o->d + p1, o->n - p1, e2);
	at_expect(old, "with every part uploaded");
	if (fate == PF_ABORTED)
		return req_str("DELETE " AT_KEY "?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	if (fate == PF_BAD_PART)
		e2[5] ^= 1;
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("atomic", id, xml);
	if (fate == PF_BAD_PART) {
		/* The upload stays; give it up so the store holds the old object alone again. */
		struct resp a = req_str("DELETE " AT_KEY "?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);

		assert_int_equal(a.status, 204);
		free_resp(&a);
	}
	/* The completed object's ETag: MD5 of the parts' MD5s, "-2". */
	EVP_Digest(o->d, p1, both, &mdlen, EVP_md5(), NULL);
	EVP_Digest(o->d + p1, o->n - p1, both + 16, &mdlen, EVP_md5(), NULL);
	{
		char hex[33];

		md5_hex(both, 32, hex);
		snprintf(o->etag, sizeof(o->etag), "\"%s-2\"", hex);
	}
	return r;
}

static void test_put_atomic_every_path(void **state)
{
	static const struct {
		enum put_path path;
		enum put_fate fate;
		size_t n;
		const char *code;     /* the error a failed PUT answers with (NULL: none, or 204 for an abort) */
	} cases[] = {
		{ PP_LENGTH, PF_OK, (3 << 20) + 17, NULL },          /* the old object's size: its memory may come back */
		{ PP_LENGTH, PF_CUT, (2 << 20) + 1, NULL },
		{ PP_LENGTH, PF_BAD_MD5, 300000, "BadDigest" },
		{ PP_LENGTH, PF_OK, 300000, NULL },
		{ PP_CHUNKED, PF_OK, (3 << 20) + 5, NULL },
		{ PP_CHUNKED, PF_CUT, 1 << 20, NULL },
		{ PP_CHUNKED, PF_BAD_FRAMING, 700000, "" },
		{ PP_CHUNKED, PF_BAD_MD5, 700000, "BadDigest" },
		{ PP_AWS, PF_OK, (2 << 20) + 9, NULL },
		{ PP_AWS, PF_CUT, 900000, NULL },
		{ PP_AWS, PF_BAD_FRAMING, 900000, "" },
		{ PP_AWS, PF_BAD_MD5, 900000, "BadDigest" },
		{ PP_RDMA, PF_OK, (4 << 20) + 3, NULL },
		{ PP_RDMA, PF_DMA_FAULT, 1 << 20, "InternalError" },
		{ PP_RDMA, PF_BAD_MD5, 1 << 20, "BadDigest" },
		{ PP_MULTIPART, PF_OK, (6 << 20) + 11, NULL },
		{ PP_MULTIPART, PF_BAD_PART, (5 << 20) + 100, "InvalidPart" },
		{ PP_MULTIPART, PF_ABORTED, (5 << 20) + 100, NULL },
		{ PP_MULTIPART, PF_CUT, (5 << 20) + 100, NULL },
		{ PP_LENGTH, PF_OK, (6 << 20) + 11, NULL },
	};
	struct fake_mr *m = add_mr(AT_MR_KEY, AT_MR_ADDR, AT_MR_LEN);
	struct at_obj cur = { pattern((3 << 20) + 17, 200), (3 << 20) + 17, "" };
	struct resp r;

	(void)state;
	at_md5_etag(cur.d, cur.n, cur.etag);
	r = put_bytes(AT_KEY, cur.d, cur.n, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct at_obj o = { pattern(cases[i].n, 300 + (unsigned)i), cases[i].n, "" };
		bool ok = cases[i].fate == PF_OK;
		struct at_reader whole, part;
		char when[96], v[128], range[64];
		size_t roff = cur.n / 4, rlen = cur.n / 2;

		snprintf(when, sizeof(when), "case %zu (path %d, fate %d)", i, cases[i].path, cases[i].fate);
		at_md5_etag(o.d, o.n, o.etag);
		/* Readers that started before the PUT and are still being sent the old object after it. */
		at_reader_start(&whole, NULL, 1000);
		snprintf(range, sizeof(range), "bytes=%zu-%zu", roff, roff + rlen - 1);
		at_reader_start(&part, range, 300);
		if (cases[i].path == PP_RDMA) {
			char tok[128];

			memcpy(m->buf, o.d, o.n);
			r = req_str("PUT " AT_KEY " HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n%s%s%s\r\n",
				    token_hdr(AT_MR_KEY, cases[i].fate == PF_DMA_FAULT ? AT_MR_ADDR + AT_MR_LEN - o.n / 2
											 : AT_MR_ADDR, o.n, tok),
				    cases[i].fate == PF_BAD_MD5 ? "Content-MD5: " : "",
				    cases[i].fate == PF_BAD_MD5 ? "AAAAAAAAAAAAAAAAAAAAAA==" : "",
				    cases[i].fate == PF_BAD_MD5 ? "\r\n" : "");
		} else if (cases[i].path == PP_MULTIPART) {
			r = at_multipart(cases[i].fate, &o, &cur);
		} else {
			size_t len, half;
			uint8_t *msg = at_put_msg(cases[i].path, cases[i].fate, &o, &len);

			/* Half the request: the readers see the old object. */
			half = len / 2;
			assert_int_equal(s3_conn_input(conn, msg, half), half);
			at_expect(&cur, when);
			if (cases[i].fate == PF_CUT) {
				size_t olen;

				s3_conn_input_eof(conn);
				free(drain(&olen));
				assert_int_equal(olen, 0);
				s3_conn_free(conn);
				conn = s3_conn_new(st);
				memset(&r, 0, sizeof(r));
			} else {
				r = exchange(msg + half, len - half, true);
				if (cases[i].fate == PF_BAD_FRAMING) {
					assert_int_equal(r.status, 400);
					s3_conn_free(conn); /* the parser gave up on it */
					conn = s3_conn_new(st);
				}
			}
			free(msg);
		}
		if (ok) {
			assert_int_equal(r.status, 200);
			if (cases[i].path != PP_MULTIPART)
				assert_string_equal(hdr(&r, "ETag", v, sizeof(v)), o.etag);
		} else if (cases[i].fate == PF_ABORTED || (cases[i].path == PP_MULTIPART && cases[i].fate == PF_CUT)) {
			assert_int_equal(r.status, 204);
		} else if (cases[i].code && cases[i].code[0]) {
			assert_error(&r, r.status, cases[i].code, NULL);
		}
		free_resp(&r);
		at_expect(ok ? &o : &cur, when);
		/* Meanwhile another object of the old one's size comes and goes: memory freed by then is reused. */
		{
			uint8_t *other = pattern(cur.n, 999);

			r = put_bytes("/ernic/other", other, cur.n, NULL);
			assert_int_equal(r.status, 200);
			free_resp(&r);
			r = req_str("DELETE /ernic/other HTTP/1.1\r\nHost: s3\r\n\r\n");
			free_resp(&r);
			free(other);
		}
		/* The readers from before get the old object whole, although it may be gone from the store. */
		at_reader_finish(&whole, cur.d, cur.n, when);
		at_reader_finish(&part, cur.d + roff, rlen, when);
		/* Nothing but the current object is held. */
		assert_int_equal(s3_store_stats(st)->used_bytes, ok ? o.n : cur.n);
		assert_int_equal(s3_store_stats(st)->uploads, 0);
		if (ok) {
			free(cur.d);
			cur = o;
		} else {
			free(o.d);
		}
	}
	free(cur.d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list_buckets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_get_head_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_content_md5, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupted_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_etag_incremental, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_hashed_on_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_etag_aws_chunked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_etag_chunked_growth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_etag_multipart_incremental, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_published_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_memory_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_behaviour, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multipart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multipart_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_atomic_every_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_peek_offsets, setup, teardown),
	};

	return cmocka_run_group_tests_name("s3-target-unit", tests, NULL, NULL);
}
