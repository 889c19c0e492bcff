/*
 * s3-tools-unit: the store as real S3 tools use it (issue 24): metadata kept
 * and given back, CopyObject and UploadPartCopy, DeleteObjects, conditional
 * reads and writes (a racing If-None-Match: * included), listings that page
 * across common prefixes, ListMultipartUploads, GET ?partNumber, a retried
 * Complete, and the status codes of keys and subresources the store refuses.
 * Raw HTTP in, raw HTTP out, through s3_harness.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/s3_checksum.h"
#include "s3_harness.h"

static struct resp get(const char *path_and_query, const char *extra)
{
	return req_str("GET /ernic/%s HTTP/1.1\r\nHost: s3\r\n%s\r\n", path_and_query, extra ? extra : "");
}

static struct resp head(const char *key, const char *extra)
{
	return req_str("HEAD /ernic/%s HTTP/1.1\r\nHost: s3\r\n%s\r\n", key, extra ? extra : "");
}

static void put_text(const char *key, const char *text, const char *extra)
{
	char path[512];
	struct resp r;

	snprintf(path, sizeof(path), "/ernic/%s", key);
	r = put_bytes(path, (const uint8_t *)text, strlen(text), extra);
	assert_int_equal(r.status, 200);
	free_resp(&r);
}

/* r is the S3 error status/code; it is freed. */
static void refused(struct resp *r, int status, const char *code)
{
	assert_error(r, status, code, NULL);
	free_resp(r);
}

static void assert_hdr(const struct resp *r, const char *name, const char *want)
{
	char v[4096];

	if (hdr(r, name, v, sizeof(v)) == NULL)
		fail_msg("no %s in:\n%s", name, r->head);
	assert_string_equal(v, want);
}

static void assert_body(const struct resp *r, const char *want)
{
	assert_int_equal(r->body_len, strlen(want));
	assert_memory_equal(r->body, want, strlen(want));
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* ---- metadata ---- */

static const char *meta_headers =
	"Content-Type: text/x-test\r\n"
	"Cache-Control: max-age=60\r\n"
	"Content-Disposition: attachment; filename=\"a.txt\"\r\n"
	"Content-Encoding: gzip\r\n"
	"Content-Language: de\r\n"
	"Expires: Thu, 01 Dec 2033 16:00:00 GMT\r\n"
	"X-Amz-Meta-Mode: 33188\r\n"
	"x-amz-meta-mtime: 1700000000.5\r\n";

static void test_metadata_kept(void **state)
{
	struct resp r;

	(void)state;
	put_text("m", "hello", meta_headers);
	for (int pass = 0; pass < 2; pass++) {
		r = pass ? head("m", NULL) : get("m", NULL);
		assert_int_equal(r.status, 200);
		assert_hdr(&r, "Content-Type", "text/x-test");
		assert_hdr(&r, "Cache-Control", "max-age=60");
		assert_hdr(&r, "Content-Disposition", "attachment; filename=\"a.txt\"");
		assert_hdr(&r, "Content-Encoding", "gzip");
		assert_hdr(&r, "Content-Language", "de");
		assert_hdr(&r, "Expires", "Thu, 01 Dec 2033 16:00:00 GMT");
		/* user metadata comes back with lower-case names, as S3 gives it */
		assert_non_null(strstr(r.head, "\r\nx-amz-meta-mode: 33188\r\n"));
		assert_non_null(strstr(r.head, "\r\nx-amz-meta-mtime: 1700000000.5\r\n"));
		if (!pass)
			assert_body(&r, "hello");
		free_resp(&r);
	}
	/* the response-* overrides of a GET */
	r = get("m?response-content-type=application%2Fjson&response-cache-control=no-cache", NULL);
	assert_int_equal(r.status, 200);
	assert_hdr(&r, "Content-Type", "application/json");
	assert_hdr(&r, "Cache-Control", "no-cache");
	assert_int_equal(count(r.head, "Content-Type:"), 1);
	free_resp(&r);
	/* no Content-Type: S3's default */
	put_text("d", "x", NULL);
	r = head("d", NULL);
	assert_hdr(&r, "Content-Type", "binary/octet-stream");
	free_resp(&r);
}

static void test_metadata_too_large(void **state)
{
	char big[2100], extra[2300];
	struct resp r;

	(void)state;
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(extra, sizeof(extra), "x-amz-meta-k: %s\r\n", big);
	r = put_bytes("/ernic/big", (const uint8_t *)"x", 1, extra);
	refused(&r, 400, "MetadataTooLarge");
	r = head("big", NULL);
	assert_int_equal(r.status, 404);
	free_resp(&r);
	/* 2 KB exactly (name after the prefix and value) is taken */
	big[2048 - 1] = '\0';
	snprintf(extra, sizeof(extra), "x-amz-meta-k: %s\r\n", big);
	r = put_bytes("/ernic/big", (const uint8_t *)"x", 1, extra);
	assert_int_equal(r.status, 200);
	free_resp(&r);
}

/* ---- CopyObject ---- */

static struct resp copy(const char *dst, const char *src, const char *extra)
{
	return req_str("PUT /ernic/%s HTTP/1.1\r\nHost: s3\r\nx-amz-copy-source: %s\r\nContent-Length: 0\r\n%s\r\n", dst, src,
		       extra ? extra : "");
}

static void test_copy_object(void **state)
{
	char etag[64], v[128];
	struct resp r;
	uint64_t used;

	(void)state;
	put_text("src%20key", "copy me", meta_headers);
	r = head("src%20key", NULL);
	assert_non_null(hdr(&r, "ETag", etag, sizeof(etag)));
	free_resp(&r);
	used = s3_store_stats(st)->used_bytes;
	/* COPY (the default): bytes, ETag and metadata; the source named percent-encoded */
	r = copy("dst", "/ernic/src%20key", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<CopyObjectResult"));
	/* the quotes of the ETag escaped in XML, as S3 writes them */
	snprintf(v, sizeof(v), "<ETag>&quot;%.*s&quot;</ETag>", (int)strlen(etag) - 2, etag + 1);
	assert_non_null(strstr((char *)r.body, v));
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->used_bytes, used + 7);
	r = get("dst", NULL);
	assert_body(&r, "copy me");
	assert_hdr(&r, "ETag", etag);
	assert_hdr(&r, "Content-Type", "text/x-test");
	assert_non_null(strstr(r.head, "\r\nx-amz-meta-mode: 33188\r\n"));
	free_resp(&r);
	/* REPLACE: the request's metadata, the same bytes */
	r = copy("dst2", "ernic/src%20key", "x-amz-metadata-directive: REPLACE\r\nContent-Type: text/plain\r\nx-amz-meta-a: b\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("dst2", NULL);
	assert_body(&r, "copy me");
	assert_hdr(&r, "Content-Type", "text/plain");
	assert_null(strstr(r.head, "x-amz-meta-mode"));
	assert_non_null(strstr(r.head, "\r\nx-amz-meta-a: b\r\n"));
	free_resp(&r);
	/* onto itself: only to replace the metadata (how s3fs chmods) */
	r = copy("dst", "/ernic/dst", NULL);
	refused(&r, 400, "InvalidRequest");
	r = copy("dst", "/ernic/dst", "x-amz-metadata-directive: REPLACE\r\nx-amz-meta-mode: 33261\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("dst", NULL);
	assert_body(&r, "copy me");
	assert_non_null(strstr(r.head, "\r\nx-amz-meta-mode: 33261\r\n"));
	assert_hdr(&r, "Content-Type", "binary/octet-stream");
	free_resp(&r);
	/* the source's conditions fail with 412, and nothing is written */
	r = copy("dst3", "/ernic/dst", "x-amz-copy-source-if-match: \"nope\"\r\n");
	refused(&r, 412, "PreconditionFailed");
	snprintf(v, sizeof(v), "x-amz-copy-source-if-none-match: %s\r\n", etag);
	r = copy("dst3", "/ernic/dst", v);
	refused(&r, 412, "PreconditionFailed");
	r = copy("dst3", "/ernic/dst", "x-amz-copy-source-if-modified-since: Fri, 01 Jan 2100 00:00:00 GMT\r\n");
	assert_int_equal(r.status, 200); /* a future date is not a condition S3 applies */
	free_resp(&r);
	snprintf(v, sizeof(v), "x-amz-copy-source-if-match: %s\r\n", etag);
	r = copy("dst4", "/ernic/dst", v);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* the destination's: If-None-Match: * on an existing key */
	r = copy("dst4", "/ernic/dst", "If-None-Match: *\r\n");
	refused(&r, 412, "PreconditionFailed");
	/* sources that name nothing */
	r = copy("x", "/ernic/missing", NULL);
	refused(&r, 404, "NoSuchKey");
	r = copy("x", "/other/dst", NULL);
	refused(&r, 404, "NoSuchBucket");
	r = copy("x", "/ernic", NULL);
	refused(&r, 400, "InvalidArgument");
	r = copy("x", "/ernic/dst?versionId=abc", NULL);
	refused(&r, 400, "InvalidArgument");
	r = head("x", NULL);
	assert_int_equal(r.status, 404);
	free_resp(&r);
	/* the source deleted: the copy keeps its bytes (they are shared, never rewritten) */
	r = req_str("DELETE /ernic/src%%20key HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	r = get("dst2", NULL);
	assert_body(&r, "copy me");
	free_resp(&r);
}

static void test_upload_part_copy(void **state)
{
	const size_t n = 6 << 20;
	uint8_t *d = pattern(n, 3);
	char id[64], e2[48], xml[1024], v[128];
	struct resp r;

	(void)state;
	r = put_bytes("/ernic/big", d, n, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	initiate("joined", id);
	/* part 1: the first 5 MiB of big by range; part 2: the rest uploaded */
	r = req_str("PUT /ernic/joined?partNumber=1&uploadId=%s HTTP/1.1\r\nHost: s3\r\nx-amz-copy-source: ernic/big\r\n"
		    "x-amz-copy-source-range: bytes=0-5242879\r\nContent-Length: 0\r\n\r\n", id);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<CopyPartResult"));
	xml_text(&r, "ETag", v, sizeof(v));
	free_resp(&r);
	{
		char want[40];

		md5_hex(d, 5 << 20, want);
		assert_non_null(strstr(v, want));
	}
	upload_part("joined", id, 2, d + (5 << 20), n - (5 << 20), e2);
	/* a range past the source's end is refused */
	r = req_str("PUT /ernic/joined?partNumber=3&uploadId=%s HTTP/1.1\r\nHost: s3\r\nx-amz-copy-source: ernic/big\r\n"
		    "x-amz-copy-source-range: bytes=0-%zu\r\nContent-Length: 0\r\n\r\n", id, n);
	refused(&r, 400, "InvalidArgument");
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", v, e2);
	r = complete("joined", id, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("joined", NULL);
	assert_int_equal(r.body_len, n);
	assert_memory_equal(r.body, d, n);
	free_resp(&r);
	free(d);
}

/* ---- DeleteObjects ---- */

static struct resp delete_objects(const char *xml, bool with_md5)
{
	char head[512], md5h[64] = "";
	static char msg[1 << 17];
	int n;

	if (with_md5) {
		/* base64 of the document's MD5 */
		uint8_t md[16];
		unsigned int len = 16;

		EVP_Digest(xml, strlen(xml), md, &len, EVP_md5(), NULL);
		memcpy(md5h, "Content-MD5: ", 13);
		EVP_EncodeBlock((unsigned char *)md5h + 13, md, 16);
		strcat(md5h, "\r\n");
	}
	n = snprintf(head, sizeof(head), "POST /ernic?delete HTTP/1.1\r\nHost: s3\r\n%sContent-Length: %zu\r\n\r\n", md5h,
		     strlen(xml));
	snprintf(msg, sizeof(msg), "%s%s", head, xml);
	return exchange(msg, (size_t)n + strlen(xml), true);
}

static void test_delete_objects(void **state)
{
	struct resp r;
	char *xml;
	size_t cap = 1 << 17, len = 0;

	(void)state;
	put_text("a", "1", NULL);
	put_text("b&c", "2", NULL);
	put_text("keep", "3", NULL);
	r = delete_objects("<?xml version=\"1.0\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			   "<Object><Key>a</Key></Object><Object><Key>b&amp;c</Key></Object>"
			   "<Object><Key>never</Key></Object><Object><Key>v</Key><VersionId>3</VersionId></Object>"
			   "</Delete>", true);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<DeleteResult"));
	assert_non_null(strstr((char *)r.body, "<Deleted><Key>a</Key></Deleted>"));
	assert_non_null(strstr((char *)r.body, "<Deleted><Key>b&amp;c</Key></Deleted>"));
	assert_non_null(strstr((char *)r.body, "<Deleted><Key>never</Key></Deleted>")); /* S3 deletes a missing key */
	assert_non_null(strstr((char *)r.body, "<Error><Key>v</Key><VersionId>3</VersionId><Code>NoSuchVersion</Code>"));
	free_resp(&r);
	r = head("a", NULL);
	assert_int_equal(r.status, 404);
	free_resp(&r);
	r = head("keep", NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->objects, 1);
	/* Quiet: only errors are answered */
	r = delete_objects("<Delete><Quiet>true</Quiet><Object><Key>keep</Key></Object></Delete>", true);
	assert_int_equal(r.status, 200);
	assert_null(strstr((char *)r.body, "<Deleted>"));
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->objects, 0);
	/* a document that does not match its Content-MD5 changes nothing */
	put_text("a", "1", NULL);
	{
		char head[256], msg[512];
		const char *doc = "<Delete><Object><Key>a</Key></Object></Delete>";
		int n = snprintf(head, sizeof(head), "POST /ernic?delete HTTP/1.1\r\nHost: s3\r\nContent-MD5: "
				 "1B2M2Y8AsgTpgAmY7PhCfg==\r\nContent-Length: %zu\r\n\r\n", strlen(doc));

		snprintf(msg, sizeof(msg), "%s%s", head, doc);
		r = exchange(msg, (size_t)n + strlen(doc), true);
		refused(&r, 400, "BadDigest");
	}
	assert_int_equal(s3_store_stats(st)->objects, 1);
	/* the checksum header newer SDKs send instead of Content-MD5 is taken as the integrity header */
	{
		char head[256], msg[512];
		const char *doc = "<Delete><Object><Key>a</Key></Object></Delete>";
		int n = snprintf(head, sizeof(head), "POST /ernic?delete HTTP/1.1\r\nHost: s3\r\n"
				 "x-amz-sdk-checksum-algorithm: CRC32\r\nContent-Length: %zu\r\n\r\n", strlen(doc));

		snprintf(msg, sizeof(msg), "%s%s", head, doc);
		r = exchange(msg, (size_t)n + strlen(doc), true);
		assert_int_equal(r.status, 200);
		free_resp(&r);
	}
	assert_int_equal(s3_store_stats(st)->objects, 0);
	/* 1001 keys: more than S3 takes */
	xml = malloc(cap);
	len += (size_t)snprintf(xml + len, cap - len, "<Delete>");
	for (int i = 0; i < 1001; i++)
		len += (size_t)snprintf(xml + len, cap - len, "<Object><Key>k%d</Key></Object>", i);
	snprintf(xml + len, cap - len, "</Delete>");
	r = delete_objects(xml, true);
	refused(&r, 400, "MalformedXML");
	/* an empty or malformed document */
	r = delete_objects("<Delete></Delete>", true);
	refused(&r, 400, "MalformedXML");
	r = delete_objects("<Delete><Object><Key>a</Key></Object>", true);
	refused(&r, 400, "MalformedXML");
	free(xml);
}

/* ---- conditions ---- */

static void test_conditional_get(void **state)
{
	char etag[64], lm[64], v[256];
	struct resp r;

	(void)state;
	put_text("c", "body", NULL);
	r = head("c", NULL);
	hdr(&r, "ETag", etag, sizeof(etag));
	hdr(&r, "Last-Modified", lm, sizeof(lm));
	free_resp(&r);
	/* If-None-Match with the current ETag: 304, the validators, no body */
	snprintf(v, sizeof(v), "If-None-Match: %s\r\n", etag);
	r = get("c", v);
	assert_int_equal(r.status, 304);
	assert_int_equal(r.body_len, 0);
	assert_hdr(&r, "ETag", etag);
	free_resp(&r);
	r = head("c", v);
	assert_int_equal(r.status, 304);
	free_resp(&r);
	r = get("c", "If-None-Match: \"other\", W/\"x\"\r\n");
	assert_int_equal(r.status, 200);
	assert_body(&r, "body");
	free_resp(&r);
	/* If-Match: 412 unless one of the tags (or *) is the object's */
	r = get("c", "If-Match: \"nope\"\r\n");
	refused(&r, 412, "PreconditionFailed");
	snprintf(v, sizeof(v), "If-Match: \"nope\", %s\r\n", etag);
	r = get("c", v);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("c", "If-Match: *\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* dates */
	snprintf(v, sizeof(v), "If-Modified-Since: %s\r\n", lm);
	r = get("c", v);
	assert_int_equal(r.status, 304);
	free_resp(&r);
	r = get("c", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("c", "If-Unmodified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n");
	refused(&r, 412, "PreconditionFailed");
	r = get("c", "If-Unmodified-Since: Saturday, 01-Jan-00 00:00:00 GMT\r\n"); /* RFC 850 form */
	refused(&r, 412, "PreconditionFailed");
	r = get("c", "If-Unmodified-Since: not a date\r\n"); /* ignored */
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* If-Match holding overrides If-Unmodified-Since; If-None-Match overrides If-Modified-Since */
	snprintf(v, sizeof(v), "If-Match: %s\r\nIf-Unmodified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n", etag);
	r = get("c", v);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	snprintf(v, sizeof(v), "If-None-Match: \"other\"\r\nIf-Modified-Since: %s\r\n", lm);
	r = get("c", v);
	assert_int_equal(r.status, 200);
	free_resp(&r);
}

static void test_conditional_put(void **state)
{
	char etag[64], v[256];
	struct resp r;

	(void)state;
	put_text("lock", "first", "If-None-Match: *\r\n");
	r = put_bytes("/ernic/lock", (const uint8_t *)"second", 6, "If-None-Match: *\r\n");
	refused(&r, 412, "PreconditionFailed");
	r = get("lock", NULL);
	assert_body(&r, "first");
	hdr(&r, "ETag", etag, sizeof(etag));
	free_resp(&r);
	r = put_bytes("/ernic/lock", (const uint8_t *)"x", 1, "If-None-Match: \"abc\"\r\n");
	refused(&r, 501, "NotImplemented");
	/* If-Match: the object must exist with that ETag */
	r = put_bytes("/ernic/lock", (const uint8_t *)"third", 5, "If-Match: \"0123\"\r\n");
	refused(&r, 412, "PreconditionFailed");
	r = put_bytes("/ernic/none", (const uint8_t *)"x", 1, "If-Match: \"0123\"\r\n");
	refused(&r, 404, "NoSuchKey");
	snprintf(v, sizeof(v), "If-Match: %s\r\n", etag);
	put_text("lock", "third", v);
	r = get("lock", NULL);
	assert_body(&r, "third");
	free_resp(&r);
}

/*
 * Two clients race for one lock key with If-None-Match: *: both send their
 * headers (each passes the check then), then their bodies; the first body
 * to complete wins, the other is refused when it would commit.
 */
static void test_conditional_put_race(void **state)
{
	struct s3_conn *c1 = conn, *c2 = s3_conn_new(st);
	const char *h1 = "PUT /ernic/race HTTP/1.1\r\nHost: s3\r\nIf-None-Match: *\r\nContent-Length: 5\r\n\r\nAA";
	const char *h2 = "PUT /ernic/race HTTP/1.1\r\nHost: s3\r\nIf-None-Match: *\r\nContent-Length: 5\r\n\r\nBB";
	uint8_t *out;
	size_t olen, pos = 0;
	struct resp r;

	(void)state;
	assert_non_null(c2);
	assert_int_equal(s3_conn_input(c1, (const uint8_t *)h1, strlen(h1)), strlen(h1));
	assert_int_equal(s3_conn_input(c2, (const uint8_t *)h2, strlen(h2)), strlen(h2));
	/* the second client's body completes first */
	assert_int_equal(s3_conn_input(c2, (const uint8_t *)"BBB", 3), 3);
	conn = c2;
	out = drain(&olen);
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 200);
	free(out);
	assert_int_equal(s3_conn_input(c1, (const uint8_t *)"AAA", 3), 3);
	conn = c1;
	out = drain(&olen);
	pos = 0;
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 412);
	free(out);
	r = get("race", NULL);
	assert_body(&r, "BBBBB");
	free_resp(&r);
	s3_conn_free(c2);
}

/* ---- listings ---- */

/* Page through a listing one entry at a time; returns what it saw, in order, space-separated. */
static void page_all(bool v2, const char *extra_query, char *seen, size_t cap)
{
	char pos[1100] = "", q[1400];
	int pages = 0;

	seen[0] = '\0';
	for (;;) {
		struct resp r;
		char *p, *e;
		bool truncated;

		assert_true(++pages < 20); /* a listing that never ends fails here */
		if (v2)
			snprintf(q, sizeof(q), "?list-type=2&max-keys=1&delimiter=/%s%s%s", extra_query,
				 pos[0] ? "&continuation-token=" : "", pos);
		else
			snprintf(q, sizeof(q), "?max-keys=1&delimiter=/%s%s%s", extra_query, pos[0] ? "&marker=" : "", pos);
		r = req_str("GET /ernic%s HTTP/1.1\r\nHost: s3\r\n\r\n", q);
		assert_int_equal(r.status, 200);
		for (const char *tag = "<Key>"; tag; tag = strcmp(tag, "<Key>") == 0 ? "<Prefix>" : NULL) {
			for (p = (char *)r.body; (p = strstr(p, tag)) != NULL; p = e) {
				p += strlen(tag);
				e = strchr(p, '<');
				if (e == p)
					continue; /* the empty <Prefix> of the request */
				if (strcmp(tag, "<Prefix>") == 0 && strstr((char *)r.body, "<CommonPrefixes><Prefix>") == NULL)
					continue;
				snprintf(seen + strlen(seen), cap - strlen(seen), "%.*s ", (int)(e - p), p);
			}
		}
		truncated = strstr((char *)r.body, "<IsTruncated>true</IsTruncated>") != NULL;
		p = strstr((char *)r.body, v2 ? "<NextContinuationToken>" : "<NextMarker>");
		if (p) {
			p = strchr(p, '>') + 1;
			e = strchr(p, '<');
			snprintf(pos, sizeof(pos), "%.*s", (int)(e - p), p);
		}
		free_resp(&r);
		if (!truncated)
			break;
		assert_non_null(p);
	}
}

static void test_list_paging_common_prefixes(void **state)
{
	char seen[512];

	(void)state;
	put_text("a", "1", NULL);
	put_text("boo/1", "1", NULL);
	put_text("boo/2", "1", NULL);
	put_text("boo/3/x", "1", NULL);
	put_text("c", "1", NULL);
	page_all(false, "", seen, sizeof(seen));
	assert_string_equal(seen, "a boo/ c ");
	page_all(true, "", seen, sizeof(seen));
	assert_string_equal(seen, "a boo/ c ");
	/* start-after inside a common prefix skips the whole prefix */
	{
		struct resp r = req_str("GET /ernic?list-type=2&delimiter=/&start-after=boo/1 HTTP/1.1\r\nHost: s3\r\n\r\n");

		assert_int_equal(r.status, 200);
		assert_null(strstr((char *)r.body, "<Prefix>boo/</Prefix>"));
		assert_non_null(strstr((char *)r.body, "<Key>c</Key>"));
		assert_non_null(strstr((char *)r.body, "<KeyCount>1</KeyCount>"));
		free_resp(&r);
	}
}

static void test_list_details(void **state)
{
	struct resp r;

	(void)state;
	put_text("sp%20ace%2Bplus", "1", NULL);
	put_text("k2", "1", NULL);
	/* encoding-type=url: keys (and the echoed parameters) percent-encoded */
	r = req_str("GET /ernic?encoding-type=url&prefix=sp%%20 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<Key>sp%20ace%2Bplus</Key>"));
	assert_non_null(strstr((char *)r.body, "<Prefix>sp%20</Prefix>"));
	assert_non_null(strstr((char *)r.body, "<EncodingType>url</EncodingType>"));
	free_resp(&r);
	r = req_str("GET /ernic?encoding-type=base64 HTTP/1.1\r\nHost: s3\r\n\r\n");
	refused(&r, 400, "InvalidArgument");
	/* max-keys=0: nothing, not truncated */
	r = req_str("GET /ernic?max-keys=0 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_non_null(strstr((char *)r.body, "<IsTruncated>false</IsTruncated>"));
	assert_null(strstr((char *)r.body, "<Contents>"));
	free_resp(&r);
	/* an empty delimiter is no delimiter, and not echoed */
	r = req_str("GET /ernic?delimiter= HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_null(strstr((char *)r.body, "<Delimiter>"));
	assert_int_equal(count((char *)r.body, "<Contents>"), 2);
	free_resp(&r);
	/* V2: Owner only with fetch-owner=true; V1 always */
	r = req_str("GET /ernic?list-type=2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_null(strstr((char *)r.body, "<Owner>"));
	assert_non_null(strstr((char *)r.body, "<KeyCount>2</KeyCount>"));
	free_resp(&r);
	r = req_str("GET /ernic?list-type=2&fetch-owner=true HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Owner>"), 2);
	free_resp(&r);
	r = req_str("GET /ernic HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Owner>"), 2);
	free_resp(&r);
}

static void test_list_uploads(void **state)
{
	char id1[64], id2[64], id3[64], want[128];
	struct resp r;

	(void)state;
	initiate("x/one", id1);
	initiate("x/two", id2);
	initiate("y", id3);
	r = req_str("GET /ernic?uploads HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<ListMultipartUploadsResult"));
	assert_int_equal(count((char *)r.body, "<Upload>"), 3);
	snprintf(want, sizeof(want), "<Key>x/one</Key><UploadId>%s</UploadId>", id1);
	assert_non_null(strstr((char *)r.body, want));
	free_resp(&r);
	/* one at a time: the markers carry on without repeats */
	r = req_str("GET /ernic?uploads&max-uploads=1 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_non_null(strstr((char *)r.body, "<IsTruncated>true</IsTruncated>"));
	assert_non_null(strstr((char *)r.body, "<NextKeyMarker>x/one</NextKeyMarker>"));
	free_resp(&r);
	r = req_str("GET /ernic?uploads&max-uploads=1&key-marker=x/one&upload-id-marker=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id1);
	snprintf(want, sizeof(want), "<Key>x/two</Key><UploadId>%s</UploadId>", id2);
	assert_non_null(strstr((char *)r.body, want));
	assert_int_equal(count((char *)r.body, "<Upload>"), 1);
	free_resp(&r);
	/* with a delimiter */
	r = req_str("GET /ernic?uploads&delimiter=/ HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_non_null(strstr((char *)r.body, "<CommonPrefixes><Prefix>x/</Prefix></CommonPrefixes>"));
	assert_int_equal(count((char *)r.body, "<Upload>"), 1);
	free_resp(&r);
	/* an abort takes it off the list (cleanup of abandoned uploads) */
	r = req_str("DELETE /ernic/y?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id3);
	assert_int_equal(r.status, 204);
	free_resp(&r);
	r = req_str("GET /ernic?uploads HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(count((char *)r.body, "<Upload>"), 2);
	free_resp(&r);
}

/* ---- multipart reads ---- */

static void test_get_part_number(void **state)
{
	const size_t p1 = 5 << 20, p2 = 777;
	uint8_t *d1 = pattern(p1, 5), *d2 = pattern(p2, 6);
	char id[64], e1[48], e2[48], xml[512], v[128];
	struct resp r;

	(void)state;
	initiate("mp", id);
	upload_part("mp", id, 1, d1, p1, e1);
	upload_part("mp", id, 2, d2, p2, e2);
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("mp", id, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("mp?partNumber=2", NULL);
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, p2);
	assert_memory_equal(r.body, d2, p2);
	snprintf(v, sizeof(v), "bytes %zu-%zu/%zu", p1, p1 + p2 - 1, p1 + p2);
	assert_hdr(&r, "Content-Range", v);
	assert_hdr(&r, "x-amz-mp-parts-count", "2");
	free_resp(&r);
	r = head("mp?partNumber=1", NULL);
	assert_int_equal(r.status, 206);
	assert_int_equal(r.body_len, p1);
	free_resp(&r);
	r = get("mp?partNumber=3", NULL);
	refused(&r, 416, "InvalidPartNumber");
	r = get("mp?partNumber=1", "Range: bytes=0-1\r\n");
	refused(&r, 400, "InvalidRequest");
	/* a single PUT is its own part 1, without a parts count */
	put_text("one", "whole", NULL);
	r = get("one?partNumber=1", NULL);
	assert_int_equal(r.status, 206);
	assert_body(&r, "whole");
	assert_null(strstr(r.head, "x-amz-mp-parts-count"));
	free_resp(&r);
	r = get("one?partNumber=2", NULL);
	refused(&r, 416, "InvalidPartNumber");
	/* a copy of the multipart object keeps its parts (its ETag says it has them) */
	r = req_str("PUT /ernic/mp2 HTTP/1.1\r\nHost: s3\r\nx-amz-copy-source: ernic/mp\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("mp2?partNumber=2", NULL);
	assert_int_equal(r.status, 206);
	assert_memory_equal(r.body, d2, p2);
	free_resp(&r);
	free(d1);
	free(d2);
}

static void test_complete_conditions(void **state)
{
	const size_t p1 = 10;
	uint8_t *d1 = pattern(p1, 5);
	char id[64], e1[48], xml[512];
	struct resp r;

	(void)state;
	put_text("exists", "x", NULL);
	initiate("exists", id);
	upload_part("exists", id, 1, d1, p1, e1);
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1);
	{
		char head[512], msg[1024];
		int n = snprintf(head, sizeof(head), "POST /ernic/exists?uploadId=%s HTTP/1.1\r\nHost: s3\r\n"
				 "If-None-Match: *\r\nContent-Length: %zu\r\n\r\n", id, strlen(xml));

		snprintf(msg, sizeof(msg), "%s%s", head, xml);
		r = exchange(msg, (size_t)n + strlen(xml), true);
		refused(&r, 412, "PreconditionFailed");
	}
	/* refused, the upload is still there to complete without the condition */
	r = complete("exists", id, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = get("exists", NULL);
	assert_int_equal(r.body_len, p1);
	free_resp(&r);
	free(d1);
}

/* ---- additional checksums ---- */

/* "123456789" under each algorithm (the catalogue's check values; base64 of the big-endian digest). */
static const struct { const char *name, *b64; } check_values[] = {
	{ "crc32", "y/Q5Jg==" },
	{ "crc32c", "4waSgw==" },
	{ "crc64nvme", "rosUhgp5mIg=" },
	{ "sha1", "98O8HYCOBHMq32eZZczDTKeuNEE=" },
	{ "sha256", "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=" },
};

static void test_checksum_put_get(void **state)
{
	char extra[256], name[64];
	struct resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(check_values) / sizeof(check_values[0]); i++) {
		snprintf(extra, sizeof(extra), "x-amz-checksum-%s: %s\r\n", check_values[i].name, check_values[i].b64);
		snprintf(name, sizeof(name), "x-amz-checksum-%s", check_values[i].name);
		r = put_bytes("/ernic/c", (const uint8_t *)"123456789", 9, extra);
		assert_int_equal(r.status, 200);
		assert_hdr(&r, name, check_values[i].b64);
		free_resp(&r);
		/* returned when asked for */
		r = head("c", "x-amz-checksum-mode: ENABLED\r\n");
		assert_hdr(&r, name, check_values[i].b64);
		assert_hdr(&r, "x-amz-checksum-type", "FULL_OBJECT");
		free_resp(&r);
		r = get("c", "x-amz-checksum-mode: ENABLED\r\n");
		assert_hdr(&r, name, check_values[i].b64);
		assert_body(&r, "123456789");
		free_resp(&r);
		r = get("c", NULL);
		assert_null(strstr(r.head, "x-amz-checksum-"));
		free_resp(&r);
		r = get("c", "x-amz-checksum-mode: ENABLED\r\nRange: bytes=0-3\r\n"); /* not for a range */
		assert_null(strstr(r.head, "x-amz-checksum-"));
		free_resp(&r);
	}
	/* computed when only the algorithm is named */
	r = put_bytes("/ernic/d", (const uint8_t *)"123456789", 9, "x-amz-sdk-checksum-algorithm: CRC32C\r\n");
	assert_int_equal(r.status, 200);
	assert_hdr(&r, "x-amz-checksum-crc32c", "4waSgw==");
	free_resp(&r);
	/* a wrong value: BadDigest, and the object stays as it was */
	r = put_bytes("/ernic/c", (const uint8_t *)"123456780", 9, "x-amz-checksum-crc32: y/Q5Jg==\r\n");
	refused(&r, 400, "BadDigest");
	r = get("c", NULL);
	assert_body(&r, "123456789");
	free_resp(&r);
	/* values that are not one digest's base64, two algorithms, an unknown one */
	r = put_bytes("/ernic/e", (const uint8_t *)"x", 1, "x-amz-checksum-crc32: y/Q5Jg\r\n");
	refused(&r, 400, "InvalidRequest");
	r = put_bytes("/ernic/e", (const uint8_t *)"x", 1, "x-amz-checksum-crc32: rosUhgp5mIg=\r\n");
	refused(&r, 400, "InvalidRequest");
	r = put_bytes("/ernic/e", (const uint8_t *)"x", 1, "x-amz-checksum-crc32: y/Q5Jg==\r\nx-amz-checksum-sha1: 98O8HYCOBHMq32eZZczDTKeuNEE=\r\n");
	refused(&r, 400, "InvalidRequest");
	r = put_bytes("/ernic/e", (const uint8_t *)"x", 1, "x-amz-checksum-md5: y/Q5Jg==\r\n");
	refused(&r, 400, "InvalidRequest");
	r = head("e", NULL);
	assert_int_equal(r.status, 404);
	free_resp(&r);
}

/* An aws-chunked body with its checksum in the trailer, as newer SDKs send it. */
static struct resp put_trailer(const char *key, const char *body, const char *trailer_line)
{
	char framed[512], msg[1024];
	int n = snprintf(framed, sizeof(framed), "%zx\r\n%s\r\n0\r\n%s\r\n", strlen(body), body, trailer_line);
	int m = snprintf(msg, sizeof(msg),
			 "PUT /ernic/%s HTTP/1.1\r\nHost: s3\r\nContent-Encoding: aws-chunked\r\n"
			 "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\nx-amz-trailer: x-amz-checksum-crc32\r\n"
			 "x-amz-decoded-content-length: %zu\r\nContent-Length: %d\r\n\r\n%s",
			 key, strlen(body), n, framed);

	return exchange(msg, (size_t)m, true);
}

static void test_checksum_trailer(void **state)
{
	struct resp r;

	(void)state;
	r = put_trailer("t", "123456789", "x-amz-checksum-crc32:y/Q5Jg==\r\n");
	assert_int_equal(r.status, 200);
	assert_hdr(&r, "x-amz-checksum-crc32", "y/Q5Jg==");
	free_resp(&r);
	r = head("t", "x-amz-checksum-mode: ENABLED\r\n");
	assert_hdr(&r, "x-amz-checksum-crc32", "y/Q5Jg==");
	free_resp(&r);
	r = put_trailer("t", "123456780", "x-amz-checksum-crc32: y/Q5Jg==\r\n");
	refused(&r, 400, "BadDigest");
	/* announced and not sent, or not a digest */
	r = put_trailer("t", "123456789", "");
	refused(&r, 400, "MalformedTrailerError");
	r = put_trailer("t", "123456789", "x-amz-checksum-crc32: nope\r\n");
	refused(&r, 400, "MalformedTrailerError");
	r = get("t", NULL);
	assert_body(&r, "123456789");
	free_resp(&r);
}

static void b64_of(enum s3_cks a, const uint8_t *d, size_t n, char out[S3_CKS_B64_MAX])
{
	uint8_t raw[S3_CKS_MAX_LEN];

	assert_int_equal(s3_cks_compute(a, d, n, raw), 0);
	s3_cks_b64(raw, s3_cks_len(a), out);
}

static void test_checksum_multipart(void **state)
{
	const size_t p1 = 5 << 20, p2 = 4321;
	uint8_t *d = pattern(p1 + p2, 9), raws[8];
	char id[64], e1[48], e2[48], xml[1024], want[S3_CKS_B64_MAX], c1[S3_CKS_B64_MAX], c2[S3_CKS_B64_MAX], v[256];
	struct resp r;

	(void)state;
	/* COMPOSITE CRC32: the CRC32 of the parts' CRC32s, "-2" */
	r = req_str("POST /ernic/comp?uploads HTTP/1.1\r\nHost: s3\r\nx-amz-checksum-algorithm: CRC32\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_hdr(&r, "x-amz-checksum-algorithm", "CRC32");
	assert_hdr(&r, "x-amz-checksum-type", "COMPOSITE");
	xml_text(&r, "UploadId", id, sizeof(id));
	free_resp(&r);
	b64_of(S3_CKS_CRC32, d, p1, c1);
	b64_of(S3_CKS_CRC32, d + p1, p2, c2);
	snprintf(v, sizeof(v), "x-amz-checksum-crc32: %s\r\n", c1);
	{
		char path[128];

		snprintf(path, sizeof(path), "/ernic/comp?partNumber=1&uploadId=%s", id);
		r = put_bytes(path, d, p1, v);
		assert_int_equal(r.status, 200);
		hdr(&r, "ETag", e1, sizeof(e1));
		free_resp(&r);
		/* part 2 without a checksum of its own: computed (the upload has one) */
		snprintf(path, sizeof(path), "/ernic/comp?partNumber=2&uploadId=%s", id);
		r = put_bytes(path, d + p1, p2, NULL);
		assert_int_equal(r.status, 200);
		assert_hdr(&r, "x-amz-checksum-crc32", c2);
		hdr(&r, "ETag", e2, sizeof(e2));
		free_resp(&r);
		/* a part with another algorithm than the upload's */
		snprintf(path, sizeof(path), "/ernic/comp?partNumber=3&uploadId=%s", id);
		r = put_bytes(path, d, 9, "x-amz-checksum-sha1: 98O8HYCOBHMq32eZZczDTKeuNEE=\r\n");
		refused(&r, 400, "InvalidRequest");
	}
	r = req_str("GET /ernic/comp?uploadId=%s HTTP/1.1\r\nHost: s3\r\n\r\n", id);
	snprintf(v, sizeof(v), "<ChecksumCRC32>%s</ChecksumCRC32>", c2);
	assert_non_null(strstr((char *)r.body, v));
	free_resp(&r);
	/* a document naming a part's checksum wrongly */
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag><ChecksumCRC32>%s</ChecksumCRC32></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag><ChecksumCRC32>%s</ChecksumCRC32></Part></CompleteMultipartUpload>",
		 e1, c2, e2, c2);
	r = complete("comp", id, xml);
	refused(&r, 400, "InvalidPart");
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag><ChecksumCRC32>%s</ChecksumCRC32></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag><ChecksumCRC32>%s</ChecksumCRC32></Part></CompleteMultipartUpload>",
		 e1, c1, e2, c2);
	r = complete("comp", id, xml);
	assert_int_equal(r.status, 200);
	{
		uint8_t a[S3_CKS_MAX_LEN], b[S3_CKS_MAX_LEN];

		assert_int_equal(s3_cks_compute(S3_CKS_CRC32, d, p1, a), 0);
		assert_int_equal(s3_cks_compute(S3_CKS_CRC32, d + p1, p2, b), 0);
		memcpy(raws, a, 4);
		memcpy(raws + 4, b, 4);
		b64_of(S3_CKS_CRC32, raws, 8, want);
		strcat(want, "-2");
	}
	snprintf(v, sizeof(v), "<ChecksumCRC32>%s</ChecksumCRC32><ChecksumType>COMPOSITE</ChecksumType>", want);
	assert_non_null(strstr((char *)r.body, v));
	free_resp(&r);
	r = head("comp", "x-amz-checksum-mode: ENABLED\r\n");
	assert_hdr(&r, "x-amz-checksum-crc32", want);
	assert_hdr(&r, "x-amz-checksum-type", "COMPOSITE");
	free_resp(&r);

	/* FULL_OBJECT CRC64NVME: the CRC of the whole object */
	r = req_str("POST /ernic/full?uploads HTTP/1.1\r\nHost: s3\r\nx-amz-checksum-algorithm: CRC64NVME\r\nContent-Length: 0\r\n\r\n");
	assert_hdr(&r, "x-amz-checksum-type", "FULL_OBJECT");
	xml_text(&r, "UploadId", id, sizeof(id));
	free_resp(&r);
	upload_part("full", id, 1, d, p1, e1);
	upload_part("full", id, 2, d + p1, p2, e2);
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("full", id, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	b64_of(S3_CKS_CRC64NVME, d, p1 + p2, want);
	r = head("full", "x-amz-checksum-mode: ENABLED\r\n");
	assert_hdr(&r, "x-amz-checksum-crc64nvme", want);
	assert_hdr(&r, "x-amz-checksum-type", "FULL_OBJECT");
	free_resp(&r);
	/* combinations S3 refuses */
	r = req_str("POST /ernic/bad?uploads HTTP/1.1\r\nHost: s3\r\nx-amz-checksum-algorithm: SHA256\r\n"
		    "x-amz-checksum-type: FULL_OBJECT\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 400, "InvalidRequest");
	r = req_str("POST /ernic/bad?uploads HTTP/1.1\r\nHost: s3\r\nx-amz-checksum-algorithm: CRC64NVME\r\n"
		    "x-amz-checksum-type: COMPOSITE\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 400, "InvalidRequest");
	free(d);
}

/* ---- dir=: kept and read back ---- */

static char persist_dir[64];

static int setup_dir(void **state)
{
	char spec[128];

	(void)state;
	snprintf(persist_dir, sizeof(persist_dir), "/tmp/s3-tools-unit.XXXXXX");
	assert_non_null(mkdtemp(persist_dir));
	snprintf(spec, sizeof(spec), "s3:dir=%s/store", persist_dir);
	return setup_spec(spec);
}

static int teardown_dir(void **state)
{
	char cmd[128];

	teardown(state);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", persist_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The server stops (the store is freed, nothing more is written) and starts again on the same directory. */
static void restart(const char *extra_opts)
{
	char spec[160];

	teardown(NULL);
	snprintf(spec, sizeof(spec), "s3:dir=%s/store%s", persist_dir, extra_opts);
	assert_int_equal(setup_spec(spec), 0);
}

/* CreateMultipartUpload that must fail with status. */
static void initiate_expect_error(const char *key, int status)
{
	struct resp r = req_str("POST /ernic/%s?uploads HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n", key);

	assert_int_equal(r.status, status);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->uploads, 0); /* nothing was left behind */
}

static void test_persist_restart(void **state)
{
	const size_t p1 = 5 << 20, p2 = 1000;
	uint8_t *d = pattern(p1 + p2, 4);
	char id[64], id2[64], e1[48], e2[48], xml[512], etag_mp[64], path[256], v[128];
	struct resp r;
	FILE *f;

	(void)state;
	put_text("plain", "kept bytes", meta_headers);
	r = put_bytes("/ernic/sum", (const uint8_t *)"123456789", 9, "x-amz-checksum-sha256: FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	put_text("gone", "deleted before the restart", NULL);
	r = req_str("DELETE /ernic/gone HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	put_text("replaced", "old", NULL);
	put_text("replaced", "new", NULL);
	initiate("mp", id);
	upload_part("mp", id, 1, d, p1, e1);
	upload_part("mp", id, 2, d + p1, p2, e2);
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("mp", id, xml);
	assert_int_equal(r.status, 200);
	hdr(&r, "ETag", etag_mp, sizeof(etag_mp));
	free_resp(&r);
	r = req_str("PUT /ernic/copied HTTP/1.1\r\nHost: s3\r\nx-amz-copy-source: ernic/plain\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* an upload left in progress, one part in */
	initiate("later", id2);
	upload_part("later", id2, 1, d, p1, e1);
	/* debris a dead server could leave: a file half written, a file that is not ours */
	snprintf(path, sizeof(path), "%s/store/tmp/12-1", persist_dir);
	f = fopen(path, "w");
	fputs("half", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/store/objects/0000", persist_dir);
	f = fopen(path, "w");
	fputs("ERS3OBJ1 but nothing after", f);
	fclose(f);

	restart("");
	assert_int_equal(s3_store_stats(st)->objects, 5);
	assert_int_equal(s3_store_stats(st)->uploads, 1);
	r = get("plain", NULL);
	assert_body(&r, "kept bytes");
	assert_hdr(&r, "Cache-Control", "max-age=60");
	assert_non_null(strstr(r.head, "\r\nx-amz-meta-mode: 33188\r\n"));
	free_resp(&r);
	r = head("sum", "x-amz-checksum-mode: ENABLED\r\n");
	assert_hdr(&r, "x-amz-checksum-sha256", "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=");
	free_resp(&r);
	r = head("gone", NULL);
	assert_int_equal(r.status, 404);
	free_resp(&r);
	r = get("replaced", NULL);
	assert_body(&r, "new");
	free_resp(&r);
	r = get("copied", NULL);
	assert_body(&r, "kept bytes");
	free_resp(&r);
	r = get("mp", NULL);
	assert_int_equal(r.body_len, p1 + p2);
	assert_memory_equal(r.body, d, p1 + p2);
	assert_hdr(&r, "ETag", etag_mp);
	free_resp(&r);
	r = get("mp?partNumber=2", NULL);
	assert_int_equal(r.status, 206);
	assert_memory_equal(r.body, d + p1, p2);
	free_resp(&r);
	/* a Complete retried across the restart gets the same answer */
	r = complete("mp", id, xml);
	assert_int_equal(r.status, 200);
	assert_hdr(&r, "ETag", etag_mp);
	free_resp(&r);
	/* the upload goes on where it was */
	r = req_str("GET /ernic?uploads HTTP/1.1\r\nHost: s3\r\n\r\n");
	snprintf(v, sizeof(v), "<UploadId>%s</UploadId>", id2);
	assert_non_null(strstr((char *)r.body, v));
	free_resp(&r);
	upload_part("later", id2, 2, d + p1, p2, e2);
	snprintf(xml, sizeof(xml),
		 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
		 "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", e1, e2);
	r = complete("later", id2, xml);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	/* the half-written file is gone; the foreign one is left alone */
	snprintf(path, sizeof(path), "%s/store/tmp/12-1", persist_dir);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/store/objects/0000", persist_dir);
	assert_int_equal(access(path, F_OK), 0);
	/* a file that cannot be written: the PUT fails (500), nothing changes, and the store goes on */
	snprintf(path, sizeof(path), "%s/store/tmp", persist_dir);
	assert_int_equal(rmdir(path), 0);
	f = fopen(path, "w"); /* tmp/ is now a plain file: no file can be made under it */
	fclose(f);
	r = put_bytes("/ernic/plain", (const uint8_t *)"lost", 4, NULL);
	refused(&r, 500, "InternalError");
	r = get("plain", NULL);
	assert_body(&r, "kept bytes");
	free_resp(&r);
	initiate_expect_error("blocked", 500);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	/* and a store too small for what is kept takes what fits, leaving the rest on disk */
	restart(",size=6M");
	assert_true(s3_store_stats(st)->used_bytes <= 6u << 20);
	assert_true(s3_store_stats(st)->objects < 6);
	restart("");
	assert_int_equal(s3_store_stats(st)->objects, 6);
	free(d);
}

/* ---- buckets= ---- */

static int setup_buckets(void **state)
{
	(void)state;
	return setup_spec("s3:buckets=3");
}

static void test_buckets(void **state)
{
	struct s3_conn *c2;
	uint8_t *out;
	size_t olen, pos = 0;
	struct resp r;
	const char *h;

	(void)state;
	r = req_str("PUT /bb2 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	assert_hdr(&r, "Location", "/bb2");
	free_resp(&r);
	r = req_str("PUT /bb2 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 409, "BucketAlreadyOwnedByYou");
	r = req_str("PUT /Bad_Name HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 400, "InvalidBucketName");
	r = req_str("PUT /192.168.1.1 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 400, "InvalidBucketName");
	r = req_str("PUT /bb3 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("PUT /bb4 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 400, "TooManyBuckets");
	r = req_str("GET / HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_non_null(strstr((char *)r.body, "<Bucket><Name>ernic</Name>"));
	assert_non_null(strstr((char *)r.body, "<Bucket><Name>bb2</Name>"));
	assert_non_null(strstr((char *)r.body, "<Bucket><Name>bb3</Name>"));
	free_resp(&r);
	r = req_str("HEAD /bb2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("HEAD /bb4 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 404);
	free_resp(&r);
	/* each bucket its own keys; capacity and slots shared */
	r = put_bytes("/bb2/k", (const uint8_t *)"in bb2", 6, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	put_text("k", "in ernic", NULL);
	r = req_str("GET /bb2/k HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_body(&r, "in bb2");
	free_resp(&r);
	r = get("k", NULL);
	assert_body(&r, "in ernic");
	free_resp(&r);
	r = req_str("GET /bb2?list-type=2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_non_null(strstr((char *)r.body, "<Name>bb2</Name>"));
	assert_int_equal(count((char *)r.body, "<Contents>"), 1);
	free_resp(&r);
	assert_int_equal(s3_store_stats(st)->objects, 2);
	assert_int_equal(s3_store_stats(st)->used_bytes, 14);
	/* a copy across buckets */
	r = req_str("PUT /bb3/copied HTTP/1.1\r\nHost: s3\r\nx-amz-copy-source: /bb2/k\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("GET /bb3/copied HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_body(&r, "in bb2");
	free_resp(&r);
	/* DeleteBucket: only empty, only when no request is using it, never the first */
	r = req_str("DELETE /bb2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	refused(&r, 409, "BucketNotEmpty");
	r = req_str("DELETE /bb2/k HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	c2 = s3_conn_new(st);
	h = "PUT /bb2/late HTTP/1.1\r\nHost: s3\r\nContent-Length: 4\r\n\r\nab";
	assert_int_equal(s3_conn_input(c2, (const uint8_t *)h, strlen(h)), strlen(h));
	r = req_str("DELETE /bb2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	refused(&r, 409, "OperationAborted");
	assert_int_equal(s3_conn_input(c2, (const uint8_t *)"cd", 2), 2);
	{
		struct s3_conn *keep = conn;

		conn = c2;
		out = drain(&olen);
		conn = keep;
	}
	assert_true(parse_resp(out, olen, &pos, &r));
	assert_int_equal(r.status, 200);
	free(out);
	s3_conn_free(c2);
	r = req_str("DELETE /bb2/late HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	r = req_str("DELETE /bb2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 204);
	free_resp(&r);
	r = req_str("GET /bb2/k HTTP/1.1\r\nHost: s3\r\n\r\n");
	refused(&r, 404, "NoSuchBucket");
	r = req_str("PUT /bb4 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n"); /* room again */
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = req_str("DELETE /ernic/k HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	r = req_str("DELETE /ernic HTTP/1.1\r\nHost: s3\r\n\r\n");
	refused(&r, 405, "MethodNotAllowed");
}

static void test_buckets_one(void **state)
{
	struct resp r;

	(void)state;
	/* buckets=1 (the default): the specification's one bucket; another name is no bucket */
	r = req_str("PUT /bb2 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 404, "NoSuchBucket");
}

static void test_buckets_kept(void **state)
{
	char spec[128];
	struct resp r;

	(void)state;
	teardown(NULL);
	snprintf(spec, sizeof(spec), "s3:dir=%s/store,buckets=2", persist_dir);
	assert_int_equal(setup_spec(spec), 0);
	r = req_str("PUT /bb2 HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r.status, 200);
	free_resp(&r);
	r = put_bytes("/bb2/k", (const uint8_t *)"kept in bb2", 11, NULL);
	assert_int_equal(r.status, 200);
	free_resp(&r);
	restart(",buckets=2");
	r = req_str("GET /bb2/k HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_body(&r, "kept in bb2");
	free_resp(&r);
	r = req_str("DELETE /bb2/k HTTP/1.1\r\nHost: s3\r\n\r\n");
	free_resp(&r);
	r = req_str("DELETE /bb2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 204);
	free_resp(&r);
	restart(",buckets=2");
	r = req_str("HEAD /bb2 HTTP/1.1\r\nHost: s3\r\n\r\n");
	assert_int_equal(r.status, 404);
	free_resp(&r);
}

/* ---- status codes ---- */

static void test_status_codes(void **state)
{
	static const char *const methods[] = { "GET", "PUT", "DELETE", "POST" };
	static const char *const subs[] = { "versioning", "acl", "policy", "tagging", "lifecycle", "cors", "website",
					    "replication", "encryption", "logging", "notification", "object-lock" };
	struct resp r;

	(void)state;
	/* a key that is not UTF-8 */
	r = req_str("GET /ernic/bad%%FFkey HTTP/1.1\r\nHost: s3\r\n\r\n");
	refused(&r, 400, "InvalidURI");
	r = put_bytes("/ernic/%C0%AF", (const uint8_t *)"x", 1, NULL); /* an overlong "/" */
	refused(&r, 400, "InvalidURI");
	put_text("%E2%82%AC", "euro", NULL); /* well-formed UTF-8 is fine */
	/* every bucket subresource the store does not keep, on every method */
	for (size_t s = 0; s < sizeof(subs) / sizeof(subs[0]); s++) {
		for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
			r = req_str("%s /ernic?%s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n", methods[m], subs[s]);
			if (r.status != 501)
				fail_msg("%s ?%s: %d", methods[m], subs[s], r.status);
			refused(&r, 501, "NotImplemented");
		}
	}
	/* PUT on the bucket itself is still CreateBucket of one it owns */
	r = req_str("PUT /ernic HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n");
	refused(&r, 409, "BucketAlreadyOwnedByYou");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metadata_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_too_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upload_part_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_objects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conditional_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conditional_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conditional_put_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_paging_common_prefixes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_details, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_uploads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_part_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_complete_conditions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checksum_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checksum_trailer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checksum_multipart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_persist_restart, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_buckets, setup_buckets, teardown),
		cmocka_unit_test_setup_teardown(test_buckets_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buckets_kept, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
