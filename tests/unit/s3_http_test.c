/* s3-http-unit: the incremental HTTP/1.1 request parser and response heads of s3/s3_http.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../lib/xorshift.h"
#include "s3/s3_http.h"

#define NO_SPLIT ((size_t)-1)
#define SIG      "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"

/* ---- helpers ------------------------------------------------------------- */

struct buf {
	uint8_t d[65536];
	size_t n;
};

static struct buf *buf_new(void)
{
	struct buf *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	return b;
}

static void bput(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf((char *)b->d + b->n, sizeof(b->d) - b->n, fmt, ap);
	va_end(ap);
	assert_true(r >= 0 && (size_t)r < sizeof(b->d) - b->n);
	b->n += (size_t)r;
}

static void bmem(struct buf *b, const void *p, size_t n)
{
	assert_true(n <= sizeof(b->d) - b->n);
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void bfill(struct buf *b, char c, size_t n)
{
	assert_true(n <= sizeof(b->d) - b->n);
	memset(b->d + b->n, c, n);
	b->n += n;
}

/* What one message produced. */
struct outcome {
	int status;             /* error status, 0 if none */
	bool done;
	unsigned header_events;
	size_t consumed;
	char snap[65536];       /* the request as text, for comparisons */
	uint8_t body[65536];
	size_t body_len;
};

static struct outcome *outcome_new(void)
{
	struct outcome *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	return o;
}

static void snapshot(const struct http_request *r, char *out, size_t cap)
{
	size_t n;
	int k;
	unsigned i;

	assert_non_null(r);
	k = snprintf(out, cap, "%s|%s|%s|%s|1.%d|cl=%d:%llu|ch=%d|aws=%d|dl=%d:%llu|ka=%d|ec=%d\n",
		     r->method, r->target, r->path, r->query, r->version_minor, r->has_content_length,
		     (unsigned long long)r->content_length, r->chunked, r->aws_chunked,
		     r->has_decoded_length, (unsigned long long)r->decoded_length, r->keep_alive,
		     r->expect_continue);
	assert_true(k > 0 && (size_t)k < cap);
	n = (size_t)k;
	for (i = 0; i < r->nheaders; i++) {
		k = snprintf(out + n, cap - n, "[%s]=[%s]\n", r->headers[i].name, r->headers[i].value);
		assert_true(k > 0 && (size_t)k < cap - n);
		n += (size_t)k;
	}
}

/*
 * Feed in[0..len) to p: in two pieces cut at split, or (split == NO_SPLIT) in
 * pieces of step bytes. Stops at DONE, ERROR, or when the input runs out.
 * Checks the calling contract on every event. Returns the bytes consumed.
 */
static size_t drive(struct http_parser *p, const uint8_t *in, size_t len, size_t step, size_t split,
		    struct outcome *o)
{
	size_t off = 0, piece_end, iter = 0;

	o->status = 0;
	o->done = false;
	o->header_events = 0;
	o->body_len = 0;
	o->snap[0] = '\0';
	piece_end = split != NO_SPLIT ? split : (step < len ? step : len);
	for (;;) {
		enum http_event ev = (enum http_event)99;
		const uint8_t *b = (const uint8_t *)"x";
		size_t bl = 12345, avail = piece_end - off, n;

		n = http_parse(p, in + off, avail, &ev, &b, &bl);
		assert_true(n <= avail);
		assert_true(++iter < 4 * len + 100);
		if (ev == HTTP_EV_BODY) {
			assert_true(bl > 0);
			assert_true(b >= in + off && b + bl <= in + off + n); /* into the input, no copy */
			assert_true(o->body_len + bl <= sizeof(o->body));
			memcpy(o->body + o->body_len, b, bl);
			o->body_len += bl;
		} else {
			assert_null(b);
			assert_int_equal(bl, 0);
		}
		off += n;
		switch (ev) {
		case HTTP_EV_HEADERS:
			assert_true(n > 0);
			o->header_events++;
			snapshot(http_parser_request(p), o->snap, sizeof(o->snap));
			break;
		case HTTP_EV_BODY:
			break;
		case HTTP_EV_NEED_MORE:
			assert_int_equal(off, piece_end);
			if (piece_end == len) {
				o->consumed = off;
				return off;
			}
			piece_end = (split != NO_SPLIT || len - piece_end < step) ? len : piece_end + step;
			break;
		case HTTP_EV_DONE:
			assert_int_equal(o->header_events, 1);
			o->done = true;
			o->consumed = off;
			return off;
		case HTTP_EV_ERROR:
			o->status = http_parser_error_status(p);
			assert_true(o->status != 0);
			o->consumed = off;
			return off;
		default:
			fail_msg("unknown event %d", (int)ev);
		}
	}
}

/* One message from a fresh parser; returns its outcome (caller frees). */
static struct outcome *run(const void *in, size_t len, size_t step, size_t split)
{
	struct http_parser *p = http_parser_new();
	struct outcome *o = outcome_new();

	assert_non_null(p);
	drive(p, in, len, step, split, o);
	http_parser_free(p);
	return o;
}

static struct outcome *run_str(const char *req)
{
	return run(req, strlen(req), SIZE_MAX, NO_SPLIT);
}

static int status_of(const char *req)
{
	struct outcome *o = run(req, strlen(req), SIZE_MAX, NO_SPLIT);
	int s = o->status;

	free(o);
	return s;
}

/* The same message whole, one byte at a time, and in 7-byte pieces: identical results. */
static struct outcome *run_all_ways(const void *in, size_t len)
{
	struct outcome *whole = run(in, len, SIZE_MAX, NO_SPLIT);
	size_t steps[] = { 1, 2, 7 };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct outcome *o = run(in, len, steps[i], NO_SPLIT);

		assert_int_equal(o->status, whole->status);
		assert_int_equal(o->done, whole->done);
		assert_int_equal(o->consumed, whole->consumed);
		assert_string_equal(o->snap, whole->snap);
		assert_int_equal(o->body_len, whole->body_len);
		assert_memory_equal(o->body, whole->body, whole->body_len);
		free(o);
	}
	return whole;
}

/* Every split point of in gives the same outcome as whole. */
static void check_every_split(const void *in, size_t len, const struct outcome *whole)
{
	for (size_t split = 0; split <= len; split++) {
		struct outcome *o = run(in, len, 0, split);

		assert_int_equal(o->status, whole->status);
		assert_int_equal(o->done, whole->done);
		assert_int_equal(o->consumed, whole->consumed);
		assert_string_equal(o->snap, whole->snap);
		assert_int_equal(o->body_len, whole->body_len);
		assert_memory_equal(o->body, whole->body, whole->body_len);
		free(o);
	}
}

/* ---- requests -------------------------------------------------------------- */

/* The character classes against their definitions (RFC 9110 5.6.2 tchar, 5.5 field-content), every octet. */
static void test_char_classes(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		bool alnum = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
		bool punct = c != 0 && strchr("!#$%&'*+-.^_`|~", (int)c) != NULL;

		assert_int_equal(http_is_token_char((unsigned char)c), alnum || punct);
		assert_int_equal(http_is_field_char((unsigned char)c), c == '\t' || (c >= 0x20 && c != 0x7f));
		{
			/* the whole-string forms, the byte alone and inside a run of good ones */
			char one = (char)c, run[40];

			memset(run, 'a', sizeof(run));
			run[23] = (char)c;
			assert_int_equal(http_all_token_chars(&one, 1), alnum || punct);
			assert_int_equal(http_all_token_chars(run, sizeof(run)), alnum || punct);
			assert_int_equal(http_all_field_chars(&one, 1), http_is_field_char((unsigned char)c));
			assert_int_equal(http_all_field_chars(run, sizeof(run)), http_is_field_char((unsigned char)c));
		}
	}
}

static void test_get_headers(void **state)
{
	static const char req[] = "GET /bucket/key.txt?versionId=3 HTTP/1.1\r\n"
				  "Host: example.com:9000\r\n"
				  "X-Amz-Date:   20260101T000000Z  \r\n"
				  "x-empty:\r\n"
				  "Range:\tbytes=0-9\t\r\n"
				  "X-Dup: first\r\n"
				  "x-dup: second\r\n"
				  "\r\n";
	struct http_parser *p = http_parser_new();
	struct outcome *o = outcome_new();
	const struct http_request *r;

	(void)state;
	assert_null(http_parser_request(p));
	drive(p, (const uint8_t *)req, strlen(req), SIZE_MAX, NO_SPLIT, o);
	assert_int_equal(o->status, 0);
	assert_true(o->done);
	assert_int_equal(o->consumed, strlen(req));
	assert_int_equal(o->body_len, 0);
	r = http_parser_request(p);
	assert_non_null(r);
	assert_string_equal(r->method, "GET");
	assert_string_equal(r->target, "/bucket/key.txt?versionId=3");
	assert_string_equal(r->path, "/bucket/key.txt");
	assert_string_equal(r->query, "versionId=3");
	assert_int_equal(r->version_minor, 1);
	assert_int_equal(r->nheaders, 6);
	assert_string_equal(r->headers[1].name, "X-Amz-Date");
	assert_string_equal(http_header_get(r, "HOST"), "example.com:9000");
	assert_string_equal(http_header_get(r, "x-amz-date"), "20260101T000000Z");
	assert_string_equal(http_header_get(r, "X-EMPTY"), "");
	assert_string_equal(http_header_get(r, "range"), "bytes=0-9");
	assert_string_equal(http_header_get(r, "X-DUP"), "first");
	assert_null(http_header_get(r, "Host2"));
	assert_null(http_header_get(r, "Hos"));
	assert_false(r->has_content_length);
	assert_false(r->chunked);
	assert_false(r->aws_chunked);
	assert_true(r->keep_alive);
	assert_false(r->expect_continue);
	/* DONE again until reset, nothing consumed */
	{
		enum http_event ev;
		const uint8_t *b;
		size_t bl;

		assert_int_equal(http_parse(p, (const uint8_t *)"GET", 3, &ev, &b, &bl), 0);
		assert_int_equal(ev, HTTP_EV_DONE);
	}
	http_parser_free(p);
	free(o);
}

static void test_get_bytewise(void **state)
{
	static const char req[] = "\r\nDELETE /b/k%20x?uploadId=abc HTTP/1.1\r\n"
				  "Host: h\r\n"
				  "Authorization: AWS4-HMAC-SHA256 Credential=a/b, Signature=c\r\n"
				  "Expect:  100-continue \n" /* a bare LF line end too */
				  "\r\n";
	struct outcome *o;

	(void)state;
	o = run_all_ways(req, strlen(req));
	assert_true(o->done);
	assert_string_equal(o->snap, "DELETE|/b/k%20x?uploadId=abc|/b/k x|uploadId=abc|1.1|cl=0:0|ch=0|"
				     "aws=0|dl=0:0|ka=1|ec=1\n"
				     "[Host]=[h]\n"
				     "[Authorization]=[AWS4-HMAC-SHA256 Credential=a/b, Signature=c]\n"
				     "[Expect]=[100-continue]\n");
	check_every_split(req, strlen(req), o);
	free(o);
}

static void test_content_length_every_split(void **state)
{
	struct buf *b = buf_new(), *payload = buf_new();
	struct outcome *o;

	(void)state;
	for (size_t i = 0; i < 300; i++) /* binary, with CRLFs and NULs in it */
		payload->d[payload->n++] = (uint8_t)(i % 7 == 0 ? '\r' : i % 7 == 1 ? '\n' : i * 37);
	bput(b, "PUT /bucket/obj HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n", payload->n);
	bmem(b, payload->d, payload->n);
	o = run_all_ways(b->d, b->n);
	assert_int_equal(o->status, 0);
	assert_true(o->done);
	assert_int_equal(o->consumed, b->n);
	assert_int_equal(o->body_len, payload->n);
	assert_memory_equal(o->body, payload->d, payload->n);
	assert_non_null(strstr(o->snap, "|cl=1:300|"));
	check_every_split(b->d, b->n, o);

	/* Content-Length: 0 is a complete message without a body */
	free(o);
	o = run_str("PUT /x HTTP/1.1\r\nContent-Length: 0\r\n\r\nNEXT");
	assert_true(o->done);
	assert_int_equal(o->consumed, 38);
	assert_int_equal(o->body_len, 0);
	free(o);
	free(b);
	free(payload);
}

static void test_chunked(void **state)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz";
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	bput(b, "POST /b?delete HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:  Chunked \r\n\r\n");
	bput(b, "5;ext=1\r\nhello\r\n");
	bput(b, "1A ; name=\"quoted value\"\r\n%s\r\n", alpha);
	bput(b, "0003\n\r\n\r\n"); /* bare LF after the size, leading zeros, data holding CRLF CR */
	bput(b, "0;last\r\nX-Trailer: v\r\nOther:w\r\n\r\n");
	o = run_all_ways(b->d, b->n);
	assert_int_equal(o->status, 0);
	assert_true(o->done);
	assert_int_equal(o->consumed, b->n);
	assert_int_equal(o->body_len, 5 + 26 + 3);
	assert_memory_equal(o->body, "hello", 5);
	assert_memory_equal(o->body + 5, alpha, 26);
	assert_memory_equal(o->body + 31, "\r\n\r", 3);
	assert_non_null(strstr(o->snap, "|cl=0:0|ch=1|"));
	assert_null(strstr(o->snap, "X-Trailer")); /* trailers are dropped */
	check_every_split(b->d, b->n, o);
	free(o);

	/* the bytes after the message stay unconsumed */
	bput(b, "GET / HTTP/1.1\r\n\r\n");
	o = run(b->d, b->n, SIZE_MAX, NO_SPLIT);
	assert_true(o->done);
	assert_int_equal(o->consumed, b->n - 18);
	free(o);
	free(b);
}

static uint8_t payload_byte(size_t i)
{
	static const char tricky[] = "0;chunk-signature=\r\n\r\n0\r\n";

	return i < sizeof(tricky) - 1 ? (uint8_t)tricky[i] : (uint8_t)(i * 131 + 7);
}

/* aws-chunked framing of n payload bytes in chunks of csize, signed, with checksum trailers. */
static void build_aws(struct buf *b, size_t n, size_t csize, bool trailers)
{
	for (size_t off = 0; off < n; off += csize) {
		size_t c = n - off < csize ? n - off : csize;

		bput(b, "%zx;chunk-signature=%s\r\n", c, SIG);
		for (size_t i = 0; i < c; i++)
			b->d[b->n++] = payload_byte(off + i);
		bput(b, "\r\n");
	}
	bput(b, "0;chunk-signature=%s\r\n", SIG);
	if (trailers)
		bput(b, "x-amz-checksum-crc32:sOO8/Q==\r\nx-amz-trailer-signature:%s\r\n", SIG);
	bput(b, "\r\n");
}

static void aws_head(struct buf *b, uint64_t decoded)
{
	bput(b, "PUT /bucket/big HTTP/1.1\r\nHost: h\r\n"
		"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER\r\n"
		"Content-Encoding: gzip, aws-chunked\r\n"
		"x-amz-trailer: x-amz-checksum-crc32\r\n"
		"x-amz-decoded-content-length: %llu\r\n",
	     (unsigned long long)decoded);
}

/* aws-chunked inside Content-Length. */
static void aws_in_length(struct buf *b, size_t n, uint64_t decoded, int64_t cl_delta)
{
	struct buf *framed = buf_new();

	build_aws(framed, n, 64, true);
	aws_head(b, decoded);
	bput(b, "Content-Length: %zu\r\n\r\n", (size_t)((int64_t)framed->n + cl_delta));
	bmem(b, framed->d, framed->n);
	free(framed);
}

/* aws-chunked inside Transfer-Encoding: chunked, outer chunks of ochunk bytes. */
static void aws_in_chunked(struct buf *b, size_t n, uint64_t decoded, size_t ochunk)
{
	struct buf *framed = buf_new();
	unsigned k = 0;

	build_aws(framed, n, 64, true);
	aws_head(b, decoded);
	bput(b, "Transfer-Encoding: chunked\r\n\r\n");
	for (size_t off = 0; off < framed->n; off += ochunk, k++) {
		size_t c = framed->n - off < ochunk ? framed->n - off : ochunk;

		bput(b, k % 2 ? "%zX;outer=%u\r\n" : "%zx\r\n", c, k);
		bmem(b, framed->d + off, c);
		bput(b, "\r\n");
	}
	bput(b, "0\r\nOuter-Trailer: z\r\n\r\n");
	free(framed);
}

static void check_payload(const struct outcome *o, size_t n)
{
	assert_int_equal(o->status, 0);
	assert_true(o->done);
	assert_int_equal(o->body_len, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(o->body[i], payload_byte(i));
}

static void test_aws_chunked_in_length(void **state)
{
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	aws_in_length(b, 150, 150, 0);
	o = run_all_ways(b->d, b->n);
	check_payload(o, 150);
	assert_int_equal(o->consumed, b->n);
	assert_non_null(strstr(o->snap, "|ch=0|aws=1|dl=1:150|"));
	check_every_split(b->d, b->n, o);
	free(o);

	/* unsigned streaming: no extension, no trailer, bare LFs */
	b->n = 0;
	aws_head(b, 3);
	bput(b, "Content-Length: 9\r\n\r\n3\nabc\n0\n\n");
	o = run_all_ways(b->d, b->n);
	assert_true(o->done);
	assert_int_equal(o->body_len, 3);
	assert_memory_equal(o->body, "abc", 3);
	free(o);
	free(b);
}

static void test_aws_chunked_in_chunked(void **state)
{
	size_t ochunks[] = { 1, 7, 64, 1000 };
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	for (size_t i = 0; i < sizeof(ochunks) / sizeof(ochunks[0]); i++) {
		b->n = 0;
		aws_in_chunked(b, 150, 150, ochunks[i]);
		o = run_all_ways(b->d, b->n);
		check_payload(o, 150);
		assert_int_equal(o->consumed, b->n);
		assert_non_null(strstr(o->snap, "|ch=1|aws=1|dl=1:150|"));
		if (ochunks[i] == 7)
			check_every_split(b->d, b->n, o);
		free(o);
	}
	free(b);
}

static void test_aws_chunked_errors(void **state)
{
	struct buf *b = buf_new();
	struct outcome *o;
	struct {
		uint64_t decoded;
		int64_t cl_delta;
	} cases[] = { { 149, 0 }, { 151, 0 }, { 0, 0 }, { 150, -1 }, { 150, +1 } };

	(void)state;
	/* wrong decoded length, framing cut short by Content-Length, bytes after the framing */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b->n = 0;
		aws_in_length(b, 150, cases[i].decoded, cases[i].cl_delta);
		if (cases[i].cl_delta > 0)
			bput(b, "X");
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, 400);
		assert_false(o->done);
		free(o);
	}
	/* wrong decoded length inside chunked */
	for (uint64_t d = 149; d <= 151; d += 2) {
		b->n = 0;
		aws_in_chunked(b, 150, d, 7);
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, 400);
		free(o);
	}
	/* outer chunked ends before the inner framing does */
	b->n = 0;
	aws_head(b, 3);
	bput(b, "Transfer-Encoding: chunked\r\n\r\n5\r\n3\r\nab\r\n0\r\n\r\n");
	assert_int_equal(status_of((const char *)b->d), 400);
	/* missing x-amz-decoded-content-length */
	assert_int_equal(status_of("PUT /b/k HTTP/1.1\r\nContent-Encoding: aws-chunked\r\n"
				   "Content-Length: 5\r\n\r\n0\r\n\r\n"),
			 400);
	/* aws-chunked with no body framing at all */
	assert_int_equal(status_of("PUT /b/k HTTP/1.1\r\nContent-Encoding: aws-chunked\r\n"
				   "x-amz-decoded-content-length: 0\r\n\r\n"),
			 400);
	/* a chunk larger than the decoded length is refused at its size line */
	b->n = 0;
	aws_head(b, 4);
	bput(b, "Content-Length: 100\r\n\r\n5;chunk-signature=%s\r\n", SIG);
	o = run(b->d, b->n, SIZE_MAX, NO_SPLIT);
	assert_int_equal(o->status, 400);
	assert_int_equal(o->body_len, 0);
	free(o);
	/* the exact decoded length of an empty object works */
	b->n = 0;
	aws_head(b, 0);
	bput(b, "Content-Length: 5\r\n\r\n0\r\n\r\n");
	o = run(b->d, b->n, SIZE_MAX, NO_SPLIT);
	assert_true(o->done);
	assert_int_equal(o->body_len, 0);
	free(o);
	free(b);
}

static void test_pipelined(void **state)
{
	static const char reqs[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
				   "PUT /b HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
				   "\r\n" /* a stray CRLF between messages is ignored */
				   "POST /c?x=1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "2\r\nok\r\n0\r\n\r\n";
	static const char *const snaps[] = { "GET|/a|", "PUT|/b|", "POST|/c?x=1|" };
	static const char *const bodies[] = { "", "hello", "ok" };
	size_t steps[] = { SIZE_MAX, 1, 3 };

	(void)state;
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		struct http_parser *p = http_parser_new();
		struct outcome *o = outcome_new();
		size_t off = 0;

		for (int m = 0; m < 3; m++) {
			off += drive(p, (const uint8_t *)reqs + off, strlen(reqs) - off, steps[s], NO_SPLIT, o);
			assert_true(o->done);
			assert_int_equal(strncmp(o->snap, snaps[m], strlen(snaps[m])), 0);
			assert_int_equal(o->body_len, strlen(bodies[m]));
			assert_memory_equal(o->body, bodies[m], o->body_len);
			http_parser_reset(p);
			assert_null(http_parser_request(p));
		}
		assert_int_equal(off, strlen(reqs));
		http_parser_free(p);
		free(o);
	}
}

static void test_keep_alive(void **state)
{
	static const struct {
		const char *req;
		bool keep;
	} cases[] = {
		{ "GET / HTTP/1.1\r\n\r\n", true },
		{ "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false },
		{ "GET / HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n", true },
		{ "GET / HTTP/1.1\r\nConnection: TE, CLOSE\r\n\r\n", false },
		{ "GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", true },
		{ "GET / HTTP/1.0\r\n\r\n", false },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true },
		{ "GET / HTTP/1.0\r\nConnection: Upgrade , keep-alive\r\n\r\n", true },
		{ "GET / HTTP/1.0\r\nConnection: close\r\n\r\n", false },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome *o = run(cases[i].req, strlen(cases[i].req), SIZE_MAX, NO_SPLIT);

		assert_true(o->done);
		if (!strstr(o->snap, cases[i].keep ? "|ka=1|" : "|ka=0|"))
			fail_msg("case %zu: %s", i, o->snap);
		free(o);
	}
}

static void test_expect_continue(void **state)
{
	struct http_parser *p = http_parser_new();
	static const char req[] = "PUT /b/k HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n";
	enum http_event ev;
	const uint8_t *b;
	size_t bl, n;
	struct outcome *o;

	(void)state;
	/* reported at HEADERS, before any body byte exists */
	n = http_parse(p, (const uint8_t *)req, strlen(req), &ev, &b, &bl);
	assert_int_equal(n, strlen(req));
	assert_int_equal(ev, HTTP_EV_HEADERS);
	assert_true(http_parser_request(p)->expect_continue);
	assert_int_equal(http_parse(p, (const uint8_t *)"", 0, &ev, &b, &bl), 0);
	assert_int_equal(ev, HTTP_EV_NEED_MORE);
	assert_int_equal(http_parse(p, (const uint8_t *)"abc", 3, &ev, &b, &bl), 3);
	assert_int_equal(ev, HTTP_EV_BODY);
	assert_int_equal(bl, 3);
	assert_int_equal(http_parse(p, NULL, 0, &ev, &b, &bl), 0);
	assert_int_equal(ev, HTTP_EV_DONE);
	http_parser_free(p);

	o = run_str("GET / HTTP/1.1\r\nExpect: 100-continue-ish\r\n\r\n");
	assert_true(o->done);
	assert_non_null(strstr(o->snap, "|ec=0\n"));
	free(o);
	o = run_str("GET / HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(o->snap, "|ec=0\n"));
	free(o);
	o = run_str("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	assert_true(o->done);
	assert_non_null(strstr(o->snap, "|ec=0\n")); /* RFC 7231 5.1.1: ignored for 1.0 */
	free(o);
}

static void test_path_decoding(void **state)
{
	struct outcome *o;

	(void)state;
	o = run_str("GET /bucket/a%2Fb+c%20d%c3%A9/ HTTP/1.1\r\n\r\n");
	assert_true(o->done);
	assert_string_equal(o->snap, "GET|/bucket/a%2Fb+c%20d%c3%A9/|/bucket/a/b+c d\xc3\xa9/||1.1|cl=0:0|"
				     "ch=0|aws=0|dl=0:0|ka=1|ec=0\n");
	free(o);
	assert_int_equal(status_of("GET /a%00b HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(status_of("GET /a%4 HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(status_of("GET /a% HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(status_of("GET /a%zz HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(status_of("GET /a%4?x=1 HTTP/1.1\r\n\r\n"), 400);
	/* the query is kept raw; only the path is decoded */
	assert_int_equal(status_of("GET /a?x=%zz HTTP/1.1\r\n\r\n"), 0);
}

static void test_query(void **state)
{
	static const char req[] = "GET /b?a=1&b&c=%2F&empty=&plus=a+b&bad=%zz&%6Bey=v%3D&&a=2&nul=%00 "
				  "HTTP/1.1\r\n\r\n";
	struct http_parser *p = http_parser_new();
	struct outcome *o = outcome_new();
	const struct http_request *r;
	char out[16];

	(void)state;
	drive(p, (const uint8_t *)req, strlen(req), SIZE_MAX, NO_SPLIT, o);
	assert_true(o->done);
	r = http_parser_request(p);
	assert_string_equal(r->path, "/b");
	assert_string_equal(r->query, "a=1&b&c=%2F&empty=&plus=a+b&bad=%zz&%6Bey=v%3D&&a=2&nul=%00");
	assert_int_equal(http_query_get(r, "a", out, sizeof(out)), 1);
	assert_string_equal(out, "1"); /* the first one wins */
	memset(out, 'x', sizeof(out));
	assert_int_equal(http_query_get(r, "b", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(http_query_get(r, "c", out, sizeof(out)), 1);
	assert_string_equal(out, "/");
	memset(out, 'x', sizeof(out));
	assert_int_equal(http_query_get(r, "empty", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(http_query_get(r, "plus", out, sizeof(out)), 3);
	assert_string_equal(out, "a+b");
	assert_int_equal(http_query_get(r, "bad", out, sizeof(out)), -EINVAL);
	assert_int_equal(http_query_get(r, "nul", out, sizeof(out)), -EINVAL);
	assert_int_equal(http_query_get(r, "key", out, sizeof(out)), 2); /* key compared decoded */
	assert_string_equal(out, "v=");
	assert_int_equal(http_query_get(r, "%6Bey", out, sizeof(out)), -ENOENT);
	assert_int_equal(http_query_get(r, "missing", out, sizeof(out)), -ENOENT);
	assert_int_equal(http_query_get(r, "", out, sizeof(out)), -ENOENT);
	assert_int_equal(http_query_get(r, "plus", out, 3), -ENOSPC); /* "a+b" needs 4 */
	assert_int_equal(http_query_get(r, "plus", out, 4), 3);
	assert_int_equal(http_query_get(r, "b", out, 0), -ENOSPC);
	assert_true(http_query_has(r, "a"));
	assert_true(http_query_has(r, "b"));
	assert_true(http_query_has(r, "empty"));
	assert_true(http_query_has(r, "key"));
	assert_true(http_query_has(r, "bad"));
	assert_false(http_query_has(r, "missing"));
	assert_false(http_query_has(r, "em"));
	assert_false(http_query_has(r, "emptyx"));
	http_parser_free(p);

	/* no query at all */
	o->done = false;
	p = http_parser_new();
	drive(p, (const uint8_t *)"GET /b HTTP/1.1\r\n\r\n", strlen("GET /b HTTP/1.1\r\n\r\n"), SIZE_MAX,
	      NO_SPLIT, o);
	assert_true(o->done);
	r = http_parser_request(p);
	assert_string_equal(r->query, "");
	assert_int_equal(http_query_get(r, "a", out, sizeof(out)), -ENOENT);
	assert_false(http_query_has(r, ""));
	http_parser_free(p);
	free(o);
}

static void test_percent_decode(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(http_percent_decode("a%2fb+%41", 9, out, sizeof(out)), 5);
	assert_string_equal(out, "a/b+A");
	assert_int_equal(http_percent_decode("abc", 2, out, sizeof(out)), 2); /* length bounded */
	assert_string_equal(out, "ab");
	assert_int_equal(http_percent_decode("", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(http_percent_decode("%4", 2, out, sizeof(out)), -EINVAL);
	assert_int_equal(http_percent_decode("%41", 2, out, sizeof(out)), -EINVAL); /* cut at len */
	assert_int_equal(http_percent_decode("%g1", 3, out, sizeof(out)), -EINVAL);
	assert_int_equal(http_percent_decode("%00", 3, out, sizeof(out)), -EINVAL);
	assert_int_equal(http_percent_decode("abcdefgh", 8, out, sizeof(out)), -ENOSPC);
	assert_int_equal(http_percent_decode("abcdefg", 7, out, sizeof(out)), 7);
	assert_int_equal(http_percent_decode("%41%42%43%44%45%46%47", 21, out, sizeof(out)), 7);
	assert_string_equal(out, "ABCDEFG");
}

/* ---- limits and errors ------------------------------------------------------ */

/* "GET /aaa... HTTP/1.1": a request line of exactly len bytes (terminator excluded). */
static void request_line(struct buf *b, size_t len)
{
	bput(b, "GET /");
	bfill(b, 'a', len - 14);
	bput(b, " HTTP/1.1");
}

static void test_request_line_limit(void **state)
{
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	for (int lf = 0; lf < 2; lf++) {
		const char *eol = lf ? "\n" : "\r\n";

		b->n = 0;
		request_line(b, HTTP_MAX_REQUEST_LINE);
		bput(b, "%s%s", eol, eol);
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, 0);
		assert_true(o->done);
		free(o);

		b->n = 0;
		request_line(b, HTTP_MAX_REQUEST_LINE + 1);
		bput(b, "%s%s", eol, eol);
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, 414);
		/* refused at the byte that makes it too long, not at the line end */
		assert_int_equal(o->consumed, HTTP_MAX_REQUEST_LINE + 1);
		free(o);
	}
	/* leading empty lines do not count */
	b->n = 0;
	bput(b, "\r\n\r\n");
	request_line(b, HTTP_MAX_REQUEST_LINE);
	bput(b, "\r\n\r\n");
	assert_int_equal(status_of((const char *)b->d), 0);
	free(b);
}

static void test_header_count_limit(void **state)
{
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	bput(b, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		bput(b, "X-H%d: %d\r\n", i, i);
	bput(b, "\r\n");
	o = run_all_ways(b->d, b->n);
	assert_true(o->done);
	assert_non_null(strstr(o->snap, "[X-H63]=[63]\n"));
	free(o);

	b->n -= 2;
	bput(b, "X-H64: 64\r\n\r\n");
	o = run_all_ways(b->d, b->n);
	assert_int_equal(o->status, 431);
	free(o);
	free(b);
}

static void test_header_bytes_limit(void **state)
{
	/* request line + CRLF (16) + "X-Pad: " (7) + pad + CRLF (2) + final CRLF (2) */
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	for (int extra = 0; extra < 2; extra++) {
		b->n = 0;
		bput(b, "GET / HTTP/1.1\r\nX-Pad: ");
		bfill(b, 'p', HTTP_MAX_HEADER_BYTES - 27 + (size_t)extra);
		bput(b, "\r\n\r\n");
		assert_int_equal(b->n, HTTP_MAX_HEADER_BYTES + (size_t)extra);
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, extra ? 431 : 0);
		assert_int_equal(o->done, !extra);
		free(o);
	}
	/* many headers filling the section; total bytes still counted across lines */
	b->n = 0;
	bput(b, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 60; i++) {
		bput(b, "X-%02d: ", i);
		bfill(b, 'v', 300);
		bput(b, "\r\n");
	}
	bput(b, "\r\n");
	assert_int_equal(status_of((const char *)b->d), 431);
	free(b);
}

static void test_error_statuses(void **state)
{
	static const struct {
		const char *req;
		int status; /* 0: headers accepted */
	} cases[] = {
		/* request line */
		{ "get / HTTP/1.1\r\n\r\n", 400 },
		{ "GeT / HTTP/1.1\r\n\r\n", 400 },
		{ "ABCDEFGHIJKLMNO / HTTP/1.1\r\n\r\n", 0 },
		{ "ABCDEFGHIJKLMNOP / HTTP/1.1\r\n\r\n", 400 },
		{ "M-SEARCH / HTTP/1.1\r\n\r\n", 0 },
		{ " GET / HTTP/1.1\r\n\r\n", 400 },
		{ "GET  / HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1 \r\n\r\n", 400 },
		{ "GET /\r\n\r\n", 400 },
		{ "GET\r\n\r\n", 400 },
		{ "GET * HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://h/ HTTP/1.1\r\n\r\n", 400 },
		{ "GET a/b HTTP/1.1\r\n\r\n", 400 },
		{ "GET /a\tb HTTP/1.1\r\n\r\n", 400 },
		{ "GET /a\x7f HTTP/1.1\r\n\r\n", 400 },
		{ "GET /\xc3\xa9 HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.2\r\n\r\n", 505 },
		{ "GET / HTTP/0.9\r\n\r\n", 505 },
		{ "GET / HTTP/3.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.0\r\n\r\n", 0 },
		{ "GET / HTTP/1\r\n\r\n", 400 },
		{ "GET / HTTP/1.10\r\n\r\n", 400 },
		{ "GET / HTTP/1.1x\r\n\r\n", 400 },
		{ "GET / HTTP/1.a\r\n\r\n", 400 },
		{ "GET / HTTP/a.1\r\n\r\n", 400 },
		{ "GET / http/1.1\r\n\r\n", 400 },
		{ "GET / HTTX/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/11\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\rX\n\r\n", 400 }, /* bare CR */
		{ "\r\rGET / HTTP/1.1\r\n\r\n", 400 },
		{ "\rGET / HTTP/1.1\r\n\r\n", 400 },
		/* headers */
		{ "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\r\n\tfolded\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\n: empty-name\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nBad(Name): x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x01" "c\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: caf\xc3\xa9\r\n\r\n", 0 }, /* obs-text is allowed */
		{ "GET / HTTP/1.1\r\nA:\r\n\r\n", 0 },
		/* Content-Length */
		{ "PUT / HTTP/1.1\r\nContent-Length: 12a\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\n", 0 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 00009223372036854775807\r\n\r\n", 0 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n", 413 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", 0 },
		{ "PUT / HTTP/1.1\r\nx-amz-decoded-content-length: 1x\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nx-amz-decoded-content-length: 9223372036854775808\r\n\r\n", 413 },
		/* Transfer-Encoding */
		{ "PUT / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunkedx\r\n\r\n", 501 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", 501 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: \t CHUNKED \t\r\n\r\n", 0 },
		/* chunk framing */
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n", 0 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", 413 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n000000000000000000001\r\nx", 0 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nx\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n;ext\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n 1\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a\x01\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\rx", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naX1\r\nb\r\n0\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\rb", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nNoColon\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n: x\r\n\r\n", 400 },
		{ "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: \x01\r\n\r\n", 400 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome *o = run_all_ways(cases[i].req, strlen(cases[i].req));

		if (o->status != cases[i].status)
			fail_msg("case %zu (%s): status %d, want %d", i, cases[i].req, o->status,
				 cases[i].status);
		if (cases[i].status == 0)
			assert_int_equal(o->header_events, 1);
		free(o);
	}
}

static void test_chunk_size_line_limit(void **state)
{
	struct buf *b = buf_new();

	(void)state;
	/* the size line is at most 256 bytes, its CRLF not counted */
	for (int extra = 0; extra < 2; extra++) {
		b->n = 0;
		bput(b, "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;");
		bfill(b, 'e', 256 - 2 + (size_t)extra);
		bput(b, "\r\nx\r\n0\r\n\r\n");
		struct outcome *o = run_all_ways(b->d, b->n);

		assert_int_equal(o->status, extra ? 400 : 0);
		if (!extra) {
			assert_true(o->done);
			assert_int_equal(o->body_len, 1);
		}
		free(o);
	}
	free(b);
}

/* Trailers: HTTP_MAX_HEADERS lines, HTTP_MAX_HEADER_BYTES bytes (every CR, LF and the empty line). */
static void test_trailer_limits(void **state)
{
	struct buf *b = buf_new();
	struct outcome *o;

	(void)state;
	for (int extra = 0; extra < 2; extra++) {
		b->n = 0;
		bput(b, "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n");
		for (int i = 0; i < HTTP_MAX_HEADERS + extra; i++)
			bput(b, "T%d:v\r\n", i);
		bput(b, "\r\n");
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, extra ? 431 : 0);
		assert_int_equal(o->done, !extra);
		free(o);
	}
	for (int k = 0; k < 4; k++) {
		int extra = k % 2;
		const char *eol = k < 2 ? "\r\n" : "\n";
		size_t head;

		b->n = 0;
		bput(b, "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n");
		head = b->n;
		bput(b, "T: ");
		bfill(b, 't', HTTP_MAX_HEADER_BYTES - 3 - 2 * strlen(eol) + (size_t)extra);
		bput(b, "%s%s", eol, eol);
		assert_int_equal(b->n - head, HTTP_MAX_HEADER_BYTES + (size_t)extra);
		o = run_all_ways(b->d, b->n);
		assert_int_equal(o->status, extra ? 431 : 0);
		assert_int_equal(o->done, !extra);
		free(o);
	}
	/* the same limits hold for aws-chunked trailers inside the body */
	b->n = 0;
	aws_head(b, 1);
	bput(b, "Transfer-Encoding: chunked\r\n\r\n");
	{
		struct buf *inner = buf_new();

		bput(inner, "1\r\nx\r\n0\r\n");
		for (int i = 0; i < HTTP_MAX_HEADERS + 1; i++)
			bput(inner, "x-amz-t%d:v\r\n", i);
		bput(inner, "\r\n");
		bput(b, "%zx\r\n", inner->n);
		bmem(b, inner->d, inner->n);
		bput(b, "\r\n0\r\n\r\n");
		free(inner);
	}
	o = run_all_ways(b->d, b->n);
	assert_int_equal(o->status, 431);
	free(o);
	free(b);
}

static void test_error_is_sticky(void **state)
{
	static const char good[] = "GET / HTTP/1.1\r\n\r\n";
	struct http_parser *p = http_parser_new();
	enum http_event ev;
	const uint8_t *b;
	size_t bl, n;

	(void)state;
	n = http_parse(p, (const uint8_t *)"GET / HTTP/9.9\r\n", 16, &ev, &b, &bl);
	assert_int_equal(ev, HTTP_EV_ERROR);
	assert_int_equal(n, 16);
	assert_int_equal(http_parser_error_status(p), 505);
	for (int i = 0; i < 3; i++) {
		n = http_parse(p, (const uint8_t *)good, strlen(good), &ev, &b, &bl);
		assert_int_equal(ev, HTTP_EV_ERROR);
		assert_int_equal(n, 0);
		assert_int_equal(http_parser_error_status(p), 505);
	}
	http_parser_reset(p); /* not allowed after an error: it stays in error */
	n = http_parse(p, (const uint8_t *)good, strlen(good), &ev, &b, &bl);
	assert_int_equal(ev, HTTP_EV_ERROR);
	assert_int_equal(n, 0);
	assert_int_equal(http_parser_error_status(p), 505);

	/* an error inside a body stays too, and the request stays readable */
	http_parser_free(p);
	p = http_parser_new();
	assert_int_equal(http_parser_error_status(p), 0);
	static const char chunked[] = "PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz";
	n = http_parse(p, (const uint8_t *)chunked, strlen(chunked), &ev, &b, &bl);
	assert_int_equal(ev, HTTP_EV_HEADERS);
	n = http_parse(p, (const uint8_t *)chunked + n, strlen(chunked) - n, &ev, &b, &bl);
	assert_int_equal(ev, HTTP_EV_ERROR);
	assert_int_equal(http_parser_error_status(p), 400);
	assert_string_equal(http_parser_request(p)->path, "/x");
	n = http_parse(p, (const uint8_t *)"1\r\na\r\n0\r\n\r\n", 12, &ev, &b, &bl);
	assert_int_equal(ev, HTTP_EV_ERROR);
	assert_int_equal(n, 0);
	http_parser_free(p);
}

static void test_leading_empty_lines(void **state)
{
	struct buf *b = buf_new();

	(void)state;
	assert_int_equal(status_of("\r\nGET / HTTP/1.1\r\n\r\n"), 0);
	assert_int_equal(status_of("\n\n\r\nGET / HTTP/1.1\r\n\r\n"), 0);
	for (int i = 0; i < 32; i++)
		bput(b, "\r\n");
	bput(b, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of((const char *)b->d), 0); /* 64 bytes of them are fine */
	b->n = 0;
	for (int i = 0; i < 1000; i++)
		bput(b, "\r\n");
	bput(b, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of((const char *)b->d), 400); /* but not without bound */
	free(b);
}

/* ---- responses -------------------------------------------------------------- */

static void check_date_shape(const char *d)
{
	/* "Sun, 06 Nov 1994 08:49:37 GMT" */
	assert_int_equal(strlen(d), 29);
	assert_memory_equal(d + 3, ", ", 2);
	assert_memory_equal(d + 25, " GMT", 4);
	assert_true(d[19] == ':' && d[22] == ':');
}

static void test_response_head(void **state)
{
	static const struct http_header extra[] = {
		{ "ETag", "\"d41d8cd98f00b204e9800998ecf8427e\"" },
		{ "x-amz-request-id", "42" },
	};
	struct http_response_head h = { .status = 206, .content_length = 1234, .keep_alive = true,
					.headers = extra, .nheaders = 2 };
	char out[512], date[30];
	const char *d;
	int n;

	(void)state;
	n = http_format_response_head(&h, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(out));
	assert_int_equal(strncmp(out, "HTTP/1.1 206 Partial Content\r\nDate: ", 36), 0);
	d = out + 36;
	memcpy(date, d, 29);
	date[29] = '\0';
	check_date_shape(date);
	assert_string_equal(d + 29, "\r\nServer: rocm-ernic\r\n"
				    "Content-Length: 1234\r\n"
				    "Connection: keep-alive\r\n"
				    "ETag: \"d41d8cd98f00b204e9800998ecf8427e\"\r\n"
				    "x-amz-request-id: 42\r\n"
				    "\r\n");

	h = (struct http_response_head){ .status = 404, .content_length = 0, .keep_alive = false };
	n = http_format_response_head(&h, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(strncmp(out, "HTTP/1.1 404 Not Found\r\n", 24), 0);
	assert_non_null(strstr(out, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
	assert_int_equal(strcmp(out + n - 4, "\r\n\r\n"), 0);

	/* a large length, printed in full */
	h.status = 200;
	h.content_length = UINT64_MAX;
	assert_true(http_format_response_head(&h, out, sizeof(out)) > 0);
	assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(out, "\r\nContent-Length: 18446744073709551615\r\n"));

	/* none in 1xx and 204 (RFC 7230 3.3.2) */
	h.status = 204;
	assert_true(http_format_response_head(&h, out, sizeof(out)) > 0);
	assert_null(strstr(out, "Content-Length"));
	assert_non_null(strstr(out, "HTTP/1.1 204 No Content\r\n"));
	h.status = 100;
	assert_true(http_format_response_head(&h, out, sizeof(out)) > 0);
	assert_null(strstr(out, "Content-Length"));
}

static void test_response_head_refuses(void **state)
{
	static const struct http_header crlf[] = { { "X-A", "a\r\nSet-Cookie: evil" } };
	static const struct http_header badname[] = { { "X A", "v" } };
	static const struct http_header nullv[] = { { "X-A", NULL } };
	struct http_response_head h = { .status = 200, .content_length = 7, .keep_alive = true };
	char big[512];
	int full;

	(void)state;
	full = http_format_response_head(&h, big, sizeof(big));
	assert_true(full > 0);
	/* every capacity below length + NUL fails without writing past cap */
	for (size_t cap = 0; cap <= (size_t)full + 1; cap++) {
		uint8_t *mem = malloc(cap + 32);
		int n;

		assert_non_null(mem);
		memset(mem, 0xA5, cap + 32);
		n = http_format_response_head(&h, (char *)mem, cap);
		if (cap <= (size_t)full) {
			assert_int_equal(n, -ENOSPC);
			if (cap)
				assert_int_equal(mem[0], '\0');
		} else {
			assert_int_equal(n, full);
			assert_int_equal(strlen((char *)mem), (size_t)full);
		}
		for (size_t i = cap; i < cap + 32; i++)
			assert_int_equal(mem[i], 0xA5);
		free(mem);
	}
	/* The same with headers, cut anywhere in a name or a value. */
	{
		static const struct http_header two[] = { { "ETag", "\"0123\"" }, { "x-amz-rdma-bytes", "4096" } };

		h.headers = two;
		h.nheaders = 2;
		full = http_format_response_head(&h, big, sizeof(big));
		assert_true(full > 0);
		assert_non_null(strstr(big, "\r\nETag: \"0123\"\r\nx-amz-rdma-bytes: 4096\r\n\r\n"));
		for (size_t cap = 0; cap <= (size_t)full + 1; cap++) {
			char *mem = malloc(cap + 32);

			assert_non_null(mem);
			memset(mem, 0x5A, cap + 32);
			assert_int_equal(http_format_response_head(&h, mem, cap), cap <= (size_t)full ? -ENOSPC : full);
			if (cap)
				assert_true(mem[0] == '\0' || cap > (size_t)full);
			for (size_t i = cap; i < cap + 32; i++)
				assert_int_equal(mem[i], 0x5A);
			free(mem);
		}
	}
	/* An unsafe header is refused as such, whatever the room. */
	h.headers = crlf;
	h.nheaders = 1;
	assert_int_equal(http_format_response_head(&h, big, 8), -EINVAL);
	assert_int_equal(http_format_response_head(&h, big, sizeof(big)), -EINVAL);
	h.headers = badname;
	assert_int_equal(http_format_response_head(&h, big, sizeof(big)), -EINVAL);
	h.headers = nullv;
	assert_int_equal(http_format_response_head(&h, big, sizeof(big)), -EINVAL);
	h.headers = NULL;
	assert_int_equal(http_format_response_head(&h, big, sizeof(big)), -EINVAL);
	h.nheaders = 0;
	h.status = 99;
	assert_int_equal(http_format_response_head(&h, big, sizeof(big)), -EINVAL);
	h.status = 1000;
	assert_int_equal(http_format_response_head(&h, big, sizeof(big)), -EINVAL);
}

static void test_format_date(void **state)
{
	char out[31];

	(void)state;
	out[30] = 'Z'; /* canary */
	http_format_date(784111777, out);
	assert_string_equal(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	http_format_date(0, out);
	assert_string_equal(out, "Thu, 01 Jan 1970 00:00:00 GMT");
	http_format_date(951782400, out);
	assert_string_equal(out, "Tue, 29 Feb 2000 00:00:00 GMT");
	http_format_date(1798761599, out);
	assert_string_equal(out, "Thu, 31 Dec 2026 23:59:59 GMT");
	http_format_date(INT64_MAX, out); /* clamped to four-digit years */
	assert_string_equal(out, "Fri, 31 Dec 9999 23:59:59 GMT");
	http_format_date(-5, out);
	assert_string_equal(out, "Thu, 01 Jan 1970 00:00:00 GMT");
	assert_int_equal(out[30], 'Z');
}

static void test_reason(void **state)
{
	static const struct {
		int status;
		const char *reason;
	} cases[] = {
		{ 100, "Continue" }, { 200, "OK" }, { 204, "No Content" }, { 206, "Partial Content" },
		{ 304, "Not Modified" }, { 400, "Bad Request" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 405, "Method Not Allowed" }, { 409, "Conflict" },
		{ 411, "Length Required" }, { 412, "Precondition Failed" },
		{ 413, "Payload Too Large" }, { 414, "URI Too Long" },
		{ 416, "Range Not Satisfiable" }, { 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
		{ 503, "Service Unavailable" }, { 505, "HTTP Version Not Supported" },
		{ 507, "Insufficient Storage" }, { 299, "Unknown" }, { 0, "Unknown" }, { -1, "Unknown" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(http_reason(cases[i].status), cases[i].reason);
}

/* ---- fuzz ------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	return (uint32_t)(xorshift64(&rng_state) >> 16);
}

/*
 * Random heads, whole against byte by byte and in 7-byte pieces: the parser
 * takes a run of a line's bytes at once, and must fail at the very byte, with
 * the very status, that one byte at a time would. Lines of random length around
 * the limits (a request line of HTTP_MAX_REQUEST_LINE, a head of
 * HTTP_MAX_HEADER_BYTES), CR, LF and control bytes in random places.
 */
static void test_random_heads_all_ways(void **state)
{
	static const char target_chars[] = "abcXYZ-0/?=", field_chars[] = "abcXYZ-:0 \t/?=%";
	struct buf *b = buf_new();
	unsigned seen414 = 0, seen431 = 0, seen400 = 0, done = 0;

	(void)state;
	rng_state = 0x5DEECE66Dull;
	for (int it = 0; it < 120; it++) {
		struct outcome *o;
		unsigned lines = 1 + rnd() % 6;

		b->n = 0;
		bput(b, "%s", rnd() % 8 ? "GET /b/" : "\r\nPUT /b/");
		for (unsigned l = 0; l < lines && b->n < sizeof(b->d) - 12000; l++) {
			size_t n = rnd() % 4 == 0 ? HTTP_MAX_REQUEST_LINE - 16 + rnd() % 32 : rnd() % 60;
			const char *alphabet = l == 0 ? target_chars : field_chars;
			size_t na = l == 0 ? sizeof(target_chars) - 1 : sizeof(field_chars) - 1;

			if (l > 0) {
				bput(b, "X-H%u: ", l);
				if (rnd() % 3 == 0)
					n = (HTTP_MAX_HEADER_BYTES - b->n) - 8 + rnd() % 16;
			}
			for (size_t i = 0; i < n && b->n < sizeof(b->d) - 64; i++) {
				unsigned r = rnd() % 20000;

				b->d[b->n++] = r == 0 ? '\r' : r == 1 ? '\n' : r == 2 ? (uint8_t)(rnd() % 32) :
					       (uint8_t)alphabet[rnd() % na];
			}
			bput(b, l == 0 ? " HTTP/1.1%s" : "%s", rnd() % 5 ? "\r\n" : "\n");
		}
		bput(b, "\r\n");
		o = run_all_ways(b->d, b->n);
		seen414 += o->status == 414;
		seen431 += o->status == 431;
		seen400 += o->status == 400;
		done += o->done;
		free(o);
	}
	print_message("[   INFO   ] %u 414, %u 431, %u 400, %u complete\n", seen414, seen431, seen400, done);
	/* Every way out was taken. */
	assert_true(seen414 > 0 && seen431 > 0 && seen400 > 0 && done > 0);
	free(b);
}

/*
 * Random bytes and mutated valid requests, cut at random points, into exactly
 * sized heap buffers (so ASan sees any overread). Checks only the contract.
 */
static void test_fuzz(void **state)
{
	static const char alphabet[] = "GETPUT /?=&%:;0123456789abcdefHTP.\r\n\t x";
	struct buf *seeds[5];
	struct buf *work = buf_new();

	(void)state;
	for (int i = 0; i < 5; i++)
		seeds[i] = buf_new();
	bput(seeds[0], "GET /b/k%%2Fx?a=1&b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
	bput(seeds[1], "PUT /b/k HTTP/1.0\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n0123456789");
	bput(seeds[2], "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n");
	aws_in_length(seeds[3], 70, 70, 0);
	aws_in_chunked(seeds[4], 70, 70, 13);

	rng_state = 0x9E3779B97F4A7C15ull;
	for (int it = 0; it < 2000; it++) {
		struct http_parser *p = http_parser_new();
		uint8_t *in;
		size_t len, off = 0;
		int mode = (int)(rnd() % 4), guard = 0;

		work->n = 0;
		if (mode == 0) {
			len = rnd() % 400;
			for (size_t i = 0; i < len; i++)
				work->d[work->n++] = (uint8_t)rnd();
		} else if (mode == 1) {
			len = rnd() % 400;
			for (size_t i = 0; i < len; i++)
				work->d[work->n++] = (uint8_t)alphabet[rnd() % (sizeof(alphabet) - 1)];
		} else {
			const struct buf *s = seeds[rnd() % 5];
			int muts = 1 + (int)(rnd() % 4);

			bmem(work, s->d, s->n);
			for (int m = 0; m < muts && work->n > 0; m++) {
				size_t at = rnd() % work->n;

				switch (rnd() % 4) {
				case 0: /* flip */
					work->d[at] ^= (uint8_t)(1u << (rnd() % 8));
					break;
				case 1: /* replace */
					work->d[at] = (uint8_t)alphabet[rnd() % (sizeof(alphabet) - 1)];
					break;
				case 2: /* delete */
					memmove(work->d + at, work->d + at + 1, work->n - at - 1);
					work->n--;
					break;
				default: /* truncate */
					work->n = at;
					break;
				}
			}
		}
		len = work->n;
		in = malloc(len ? len : 1);
		assert_non_null(in);
		memcpy(in, work->d, len);
		while (off <= len) {
			size_t piece = 1 + rnd() % 64, n;
			enum http_event ev;
			const uint8_t *b;
			size_t bl;

			if (piece > len - off)
				piece = len - off;
			n = http_parse(p, in + off, piece, &ev, &b, &bl);
			assert_true(n <= piece);
			assert_true(++guard < 10000);
			if (ev == HTTP_EV_BODY) {
				assert_true(bl > 0 && b >= in + off && b + bl <= in + off + n);
			} else if (ev == HTTP_EV_HEADERS) {
				const struct http_request *r = http_parser_request(p);

				assert_non_null(r);
				assert_true(r->nheaders <= HTTP_MAX_HEADERS);
				assert_true(r->path[0] == '/');
				assert_true(strlen(r->target) <= HTTP_MAX_REQUEST_LINE);
				for (unsigned h = 0; h < r->nheaders; h++)
					(void)http_header_get(r, r->headers[h].name);
			} else if (ev == HTTP_EV_ERROR) {
				int s = http_parser_error_status(p);

				assert_true(s == 400 || s == 413 || s == 414 || s == 431 || s == 501 ||
					    s == 505);
				assert_int_equal(http_parse(p, in, len, &ev, &b, &bl), 0);
				assert_int_equal(ev, HTTP_EV_ERROR);
				break;
			} else if (ev == HTTP_EV_DONE) {
				http_parser_reset(p); /* pipelining: go on with the rest */
			}
			off += n;
			if (ev == HTTP_EV_NEED_MORE && off == len)
				break;
		}
		free(in);
		http_parser_free(p);
	}
	for (int i = 0; i < 5; i++)
		free(seeds[i]);
	free(work);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_char_classes),
		cmocka_unit_test(test_get_headers),
		cmocka_unit_test(test_get_bytewise),
		cmocka_unit_test(test_content_length_every_split),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_aws_chunked_in_length),
		cmocka_unit_test(test_aws_chunked_in_chunked),
		cmocka_unit_test(test_aws_chunked_errors),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_expect_continue),
		cmocka_unit_test(test_path_decoding),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_percent_decode),
		cmocka_unit_test(test_request_line_limit),
		cmocka_unit_test(test_header_count_limit),
		cmocka_unit_test(test_header_bytes_limit),
		cmocka_unit_test(test_error_statuses),
		cmocka_unit_test(test_chunk_size_line_limit),
		cmocka_unit_test(test_trailer_limits),
		cmocka_unit_test(test_error_is_sticky),
		cmocka_unit_test(test_leading_empty_lines),
		cmocka_unit_test(test_response_head),
		cmocka_unit_test(test_response_head_refuses),
		cmocka_unit_test(test_format_date),
		cmocka_unit_test(test_reason),
		cmocka_unit_test(test_random_heads_all_ways),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests_name("s3-http-unit", tests, NULL, NULL);
}
