/*
 * s3_rdma_client's checks of the hipObject dialect (-m hipobject): its 88-hex token, and
 * the rules of the project's S3 specification for it. Every reply is "<status>:<88 hex
 * server token>" with both byte counts; a window shorter than the object gets a short
 * transfer; rkey 0 and an unknown key are 500s; errors are S3 XML documents.
 */
#include "s3_rdma_client.h"

#define SEED_4K   0x4b1d0004ull
#define SEED_1M   0x4b1d0100ull

struct state {
	char key4k[96], key1m[96], keybody[96], keymissing[96], keybadtok[96], keyrkey0[96];
	char etag4k[96];
};

/* PUT `size` bytes by RDMA from the low half, GET them by RDMA into the high half, compare. */
static bool check_round_trip(struct client *c, const char *name, const char *key, uint64_t seed, size_t size,
			     char *etag_out, size_t etag_cap)
{
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	char etag[96];
	size_t guard = size + 4096 <= r->half ? size + 4096 : r->half;
	long bad;

	pat_fill(r->lo, size, seed, 0);
	if (req_rdma(c, "PUT", NULL, key, r->mr->rkey, r->lo, size, NULL, &resp))
		return fail(c, name, "PUT %s: %s", key, c->h.err);
	if ((why = rdma_headers_problem(&resp, 200, size)))
		return fail(c, name, "PUT %s: %s", key, why);
	if (resp.etag[0] == '\0')
		return fail(c, name, "PUT %s: no ETag", key);
	snprintf(etag, sizeof(etag), "%s", resp.etag);

	/* The GET window is the whole high half: the object's size must cap the transfer. */
	arm(c, guard, seed, 0);
	if (req_rdma(c, "GET", NULL, key, r->mr->rkey, r->hi, r->half, NULL, &resp))
		return fail(c, name, "GET %s: %s", key, c->h.err);
	if ((why = rdma_headers_problem(&resp, 200, size)))
		return fail(c, name, "GET %s: %s", key, why);
	if ((bad = scan(r->hi, 0, size, seed, 0, false)) >= 0)
		return fail(c, name, "GET %s: byte %ld of %zu differs (0x%02x, want 0x%02x)", key, bad, size,
			    r->hi[bad], pat(seed, (uint64_t)bad));
	if ((bad = scan(r->hi, size, guard, seed, 0, true)) >= 0)
		return fail(c, name, "GET %s: byte %ld past the %zu-byte object was written", key, bad, size);
	if (strcmp(resp.etag, etag) != 0)
		return fail(c, name, "GET %s: ETag %s, the PUT answered %s", key, resp.etag, etag);
	if (etag_out)
		snprintf(etag_out, etag_cap, "%s", etag);
	return ok(c, name);
}

static bool check_ranged_get(struct client *c, const struct state *s)
{
	static const char name[] = "rdma-ranged-get";
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	long bad;

	arm(c, 4096, SEED_4K, 1024);
	if (req_rdma(c, "GET", NULL, s->key4k, r->mr->rkey, r->hi, r->half, "bytes=1024-1535", &resp))
		return fail(c, name, "GET %s: %s", s->key4k, c->h.err);
	if ((why = rdma_headers_problem(&resp, 206, 512)))
		return fail(c, name, "%s", why);
	if (strcmp(resp.content_range, "bytes 1024-1535/4096") != 0)
		return fail(c, name, "Content-Range '%s', want 'bytes 1024-1535/4096'", resp.content_range);
	if ((bad = scan(r->hi, 0, 512, SEED_4K, 1024, false)) >= 0)
		return fail(c, name, "placed byte %ld (object byte %ld) differs", bad, bad + 1024);
	if ((bad = scan(r->hi, 512, 4096, SEED_4K, 1024, true)) >= 0)
		return fail(c, name, "byte %ld past the 512 placed bytes was written", bad);
	return ok(c, name);
}

static bool check_short_window(struct client *c, const struct state *s)
{
	static const char name[] = "rdma-short-window";
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	long bad;

	arm(c, 4096, SEED_4K, 0);
	if (req_rdma(c, "GET", NULL, s->key4k, r->mr->rkey, r->hi, 1000, NULL, &resp))
		return fail(c, name, "GET %s: %s", s->key4k, c->h.err);
	if ((why = rdma_headers_problem(&resp, 200, 1000)))
		return fail(c, name, "%s", why);
	if ((bad = scan(r->hi, 0, 1000, SEED_4K, 0, false)) >= 0)
		return fail(c, name, "byte %ld inside the window differs", bad);
	if ((bad = scan(r->hi, 1000, 4096, SEED_4K, 0, true)) >= 0)
		return fail(c, name, "byte %ld past the 1000-byte window was written", bad);
	return ok(c, name);
}

static bool check_rkey_zero(struct client *c, const struct state *s)
{
	static const char name[] = "rdma-rkey-zero";
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	long bad;

	/* GET of an existing object naming rkey 0: 500, nothing written. */
	arm(c, 4096, SEED_4K, 0);
	if (req_rdma(c, "GET", NULL, s->key4k, 0, r->hi, 4096, NULL, &resp))
		return fail(c, name, "GET %s: %s", s->key4k, c->h.err);
	if ((why = rdma_headers_problem(&resp, 500, 0)))
		return fail(c, name, "GET: %s", why);
	if ((bad = scan(r->hi, 0, 4096, SEED_4K, 0, true)) >= 0)
		return fail(c, name, "GET answered 500 but byte %ld of the window was written", bad);
	/* PUT naming rkey 0: 500, nothing stored. */
	pat_fill(r->lo, 4096, SEED_4K, 0);
	if (req_rdma(c, "PUT", NULL, s->keyrkey0, 0, r->lo, 4096, NULL, &resp))
		return fail(c, name, "PUT %s: %s", s->keyrkey0, c->h.err);
	if ((why = rdma_headers_problem(&resp, 500, 0)))
		return fail(c, name, "PUT: %s", why);
	if (req_plain(c, "GET", NULL, s->keyrkey0, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", s->keyrkey0, c->h.err);
	if (resp.status != 404)
		return fail(c, name, "the refused PUT stored an object: GET %s answered %s", s->keyrkey0, summary(&resp));
	return ok(c, name);
}

static bool check_missing_key(struct client *c, const struct state *s)
{
	static const char name[] = "missing-key";
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	long bad;

	arm(c, 4096, SEED_4K, 0);
	if (req_rdma(c, "GET", NULL, s->keymissing, r->mr->rkey, r->hi, 4096, NULL, &resp))
		return fail(c, name, "GET %s: %s", s->keymissing, c->h.err);
	if ((why = rdma_headers_problem(&resp, 404, 0)))
		return fail(c, name, "%s", why);
	if (!is_s3_error(&resp, "NoSuchKey"))
		return fail(c, name, "no NoSuchKey XML error document: '%.200s'", resp.body);
	if ((bad = scan(r->hi, 0, 4096, SEED_4K, 0, true)) >= 0)
		return fail(c, name, "byte %ld of the window was written", bad);
	/* The same without a token: the plain S3 answer. */
	if (req_plain(c, "GET", NULL, s->keymissing, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s (no token): %s", s->keymissing, c->h.err);
	if (resp.status != 404 || !is_s3_error(&resp, "NoSuchKey"))
		return fail(c, name, "GET without a token: want 404 NoSuchKey, got %s", summary(&resp));
	return ok(c, name);
}

static bool check_malformed_token(struct client *c, const struct state *s)
{
	static const char name[] = "malformed-token";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[TOKEN_HEX + 1];
	const char *why;
	long bad;

	/* PUT with 88 characters that are not hex: 400, nothing stored. */
	memset(tok, 'g', TOKEN_HEX);
	tok[TOKEN_HEX] = '\0';
	if (req_plain(c, "PUT", NULL, s->keybadtok, tok, NULL, 0, &resp))
		return fail(c, name, "PUT %s: %s", s->keybadtok, c->h.err);
	if ((why = rdma_headers_problem(&resp, 400, 0)))
		return fail(c, name, "PUT with a non-hex token: %s", why);
	if (req_plain(c, "GET", NULL, s->keybadtok, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", s->keybadtok, c->h.err);
	if (resp.status != 404)
		return fail(c, name, "the refused PUT stored an object: GET answered %s", summary(&resp));
	/* GET with a valid token cut short by two characters: 400, nothing written. */
	mint_token(r, r->mr->rkey, r->hi, 4096, tok);
	tok[TOKEN_HEX - 2] = '\0';
	arm(c, 4096, SEED_4K, 0);
	if (req_plain(c, "GET", NULL, s->key4k, tok, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", s->key4k, c->h.err);
	if ((why = rdma_headers_problem(&resp, 400, 0)))
		return fail(c, name, "GET with an 86-character token: %s", why);
	if ((bad = scan(r->hi, 0, 4096, SEED_4K, 0, true)) >= 0)
		return fail(c, name, "GET answered 400 but byte %ld of the window was written", bad);
	return ok(c, name);
}

static bool check_wrong_bucket(struct client *c, const struct state *s)
{
	static const char name[] = "wrong-bucket";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char bucket[128];
	const char *why;
	long bad;

	snprintf(bucket, sizeof(bucket), "%s-no-such-bucket", c->o.bucket);
	arm(c, 4096, SEED_4K, 0);
	if (req_rdma(c, "GET", bucket, s->key4k, r->mr->rkey, r->hi, 4096, NULL, &resp))
		return fail(c, name, "GET /%s/%s: %s", bucket, s->key4k, c->h.err);
	if ((why = rdma_headers_problem(&resp, 404, 0)))
		return fail(c, name, "%s", why);
	if (!is_s3_error(&resp, "NoSuchBucket"))
		return fail(c, name, "no NoSuchBucket XML error document: '%.200s'", resp.body);
	if ((bad = scan(r->hi, 0, 4096, SEED_4K, 0, true)) >= 0)
		return fail(c, name, "byte %ld of the window was written", bad);
	return ok(c, name);
}

/* The body path: no token, the payload in the HTTP body; and across paths with the RDMA objects. */
static bool check_body_path(struct client *c, const struct state *s)
{
	static const char name[] = "body-path";
	struct http_resp resp;
	uint8_t data[4096];
	char etag[96];

	pat_fill(data, sizeof(data), SEED_4K, 0); /* the content of the RDMA-PUT 4 KiB object */
	if (req_plain(c, "PUT", NULL, s->keybody, NULL, data, sizeof(data), &resp))
		return fail(c, name, "PUT %s: %s", s->keybody, c->h.err);
	if (resp.status != 200 || resp.etag[0] == '\0')
		return fail(c, name, "PUT %s: want 200 with an ETag, got %s", s->keybody, summary(&resp));
	if (resp.has_reply || resp.has_bytes)
		return fail(c, name, "PUT without a token answered with RDMA headers (reply '%s')", resp.reply);
	snprintf(etag, sizeof(etag), "%s", resp.etag);
	/* Same bytes, same MD5: the RDMA PUT stored exactly what was in the buffer. */
	if (s->etag4k[0] && strcmp(etag, s->etag4k) != 0)
		return fail(c, name, "ETag %s of the body PUT differs from %s of the same 4 KiB put by RDMA", etag,
			    s->etag4k);

	if (req_plain(c, "GET", NULL, s->keybody, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", s->keybody, c->h.err);
	if (resp.status != 200 || resp.body_len != sizeof(data) || resp.has_reply)
		return fail(c, name, "GET %s: want 200 with a 4096-byte body and no RDMA headers, got %s", s->keybody,
			    summary(&resp));
	if (memcmp(resp.body, data, sizeof(data)) != 0)
		return fail(c, name, "GET %s: the body differs from what was PUT", s->keybody);
	if (strcmp(resp.etag, etag) != 0)
		return fail(c, name, "GET %s: ETag %s, the PUT answered %s", s->keybody, resp.etag, etag);

	/* The object put by RDMA, read through the body. */
	if (req_plain(c, "GET", NULL, s->key4k, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", s->key4k, c->h.err);
	if (resp.status != 200 || resp.body_len != sizeof(data) || memcmp(resp.body, data, sizeof(data)) != 0)
		return fail(c, name, "GET %s (put by RDMA) through the body: %s, %s", s->key4k, summary(&resp),
			    resp.status == 200 && resp.body_len == sizeof(data) ? "content differs" : "wrong answer");

	/* The object put through the body, read by RDMA. */
	struct rdma *r = &c->r;
	const char *why;
	long bad;

	arm(c, 8192, SEED_4K, 0);
	if (req_rdma(c, "GET", NULL, s->keybody, r->mr->rkey, r->hi, r->half, NULL, &resp))
		return fail(c, name, "GET %s by RDMA: %s", s->keybody, c->h.err);
	if ((why = rdma_headers_problem(&resp, 200, sizeof(data))))
		return fail(c, name, "GET %s by RDMA: %s", s->keybody, why);
	if ((bad = scan(r->hi, 0, sizeof(data), SEED_4K, 0, false)) >= 0 ||
	    (bad = scan(r->hi, sizeof(data), 8192, SEED_4K, 0, true)) >= 0)
		return fail(c, name, "GET %s by RDMA: byte %ld wrong", s->keybody, bad);
	return ok(c, name);
}

static bool listing_has(const struct http_resp *r, const char *key)
{
	char tag[160];

	snprintf(tag, sizeof(tag), "<Key>%s</Key>", key);
	return r->body && strstr(r->body, tag) != NULL;
}

static bool check_listing(struct client *c, const struct state *s)
{
	static const char name[] = "listing";
	const char *keys[] = { s->key4k, s->key1m, s->keybody };
	struct http_resp resp;
	char want[96];

	if (req_plain(c, "GET", NULL, NULL, NULL, NULL, 0, &resp))
		return fail(c, name, "GET /%s: %s", c->o.bucket, c->h.err);
	if (resp.status != 200 || !resp.body || !strstr(resp.body, "<ListBucketResult"))
		return fail(c, name, "GET /%s: want 200 with a ListBucketResult, got %s", c->o.bucket, summary(&resp));
	snprintf(want, sizeof(want), "<Name>%s</Name>", c->o.bucket);
	if (!strstr(resp.body, want))
		return fail(c, name, "the listing does not name the bucket '%s'", c->o.bucket);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!listing_has(&resp, keys[i]))
			return fail(c, name, "key %s is not listed: '%.300s'", keys[i], resp.body);
	if (listing_has(&resp, s->keybadtok) || listing_has(&resp, s->keyrkey0) || listing_has(&resp, s->keymissing))
		return fail(c, name, "a key never stored is listed: '%.300s'", resp.body);
	return ok(c, name);
}

static bool check_delete(struct client *c, const struct state *s)
{
	static const char name[] = "delete";
	const char *keys[] = { s->key4k, s->key1m, s->keybody };
	struct http_resp resp;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (req_plain(c, "DELETE", NULL, keys[i], NULL, NULL, 0, &resp))
			return fail(c, name, "DELETE %s: %s", keys[i], c->h.err);
		if (resp.status != 204)
			return fail(c, name, "DELETE %s: want 204, got %s", keys[i], summary(&resp));
	}
	if (req_plain(c, "GET", NULL, NULL, NULL, NULL, 0, &resp))
		return fail(c, name, "GET /%s: %s", c->o.bucket, c->h.err);
	if (resp.status != 200)
		return fail(c, name, "GET /%s: %s", c->o.bucket, summary(&resp));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (listing_has(&resp, keys[i]))
			return fail(c, name, "key %s is still listed after its DELETE", keys[i]);
	return ok(c, name);
}

static bool check_deleted_404(struct client *c, const struct state *s)
{
	static const char name[] = "deleted-404";
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	long bad;

	if (req_plain(c, "GET", NULL, s->key4k, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", s->key4k, c->h.err);
	if (resp.status != 404 || !is_s3_error(&resp, "NoSuchKey"))
		return fail(c, name, "GET %s after DELETE: want 404 NoSuchKey, got %s", s->key4k, summary(&resp));
	arm(c, 4096, SEED_1M, 0);
	if (req_rdma(c, "GET", NULL, s->key1m, r->mr->rkey, r->hi, 4096, NULL, &resp))
		return fail(c, name, "GET %s: %s", s->key1m, c->h.err);
	if ((why = rdma_headers_problem(&resp, 404, 0)))
		return fail(c, name, "GET %s by RDMA after DELETE: %s", s->key1m, why);
	if ((bad = scan(r->hi, 0, 4096, SEED_1M, 0, true)) >= 0)
		return fail(c, name, "GET %s answered 404 but byte %ld of the window was written", s->key1m, bad);
	/* Deletes are idempotent. */
	if (req_plain(c, "DELETE", NULL, s->key4k, NULL, NULL, 0, &resp))
		return fail(c, name, "DELETE %s again: %s", s->key4k, c->h.err);
	if (resp.status != 204)
		return fail(c, name, "DELETE of a deleted key: want 204, got %s", summary(&resp));
	return ok(c, name);
}

/* Delete whatever this run may have left (quietly; DELETE of a missing key is a 204). */
static void cleanup_keys(struct client *c, const struct state *s)
{
	const char *keys[] = { s->key4k, s->key1m, s->keybody, s->keybadtok, s->keyrkey0, s->keymissing };
	struct http_resp resp;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (req_plain(c, "DELETE", NULL, keys[i], NULL, NULL, 0, &resp))
			fprintf(stderr, "s3_rdma_client: cleanup: DELETE %s: %s\n", keys[i], c->h.err);
		else if (resp.status != 204)
			fprintf(stderr, "s3_rdma_client: cleanup: DELETE %s: %s\n", keys[i], summary(&resp));
	}
}

unsigned hipobject_checks(struct client *c)
{
	struct state s = { 0 };

	unsigned failed = c->failed;


	key_of(c, "4k", s.key4k, sizeof(s.key4k));
	key_of(c, "1m", s.key1m, sizeof(s.key1m));
	key_of(c, "body", s.keybody, sizeof(s.keybody));
	key_of(c, "missing", s.keymissing, sizeof(s.keymissing));
	key_of(c, "badtoken", s.keybadtok, sizeof(s.keybadtok));
	key_of(c, "rkey0", s.keyrkey0, sizeof(s.keyrkey0));

	check_round_trip(c, "rdma-round-trip-4k", s.key4k, SEED_4K, 4096, s.etag4k, sizeof(s.etag4k));
	check_round_trip(c, "rdma-round-trip-1m", s.key1m, SEED_1M, 1u << 20, NULL, 0);
	check_ranged_get(c, &s);
	check_short_window(c, &s);
	check_rkey_zero(c, &s);
	check_missing_key(c, &s);
	check_malformed_token(c, &s);
	check_wrong_bucket(c, &s);
	check_body_path(c, &s);
	check_listing(c, &s);
	check_delete(c, &s);
	check_deleted_404(c, &s);
	cleanup_keys(c, &s);
	return c->failed - failed;
}
