/*
 * fuzz-s3-token: the RDMA headers of the S3 store: x-amz-rdma-token (bare
 * hex and the three-field form, s3_token_parse_header), x-amz-rdma-reply
 * (s3_reply_parse) and the Range "bytes=" header the RDMA path shares with
 * the body path, first alone, then in a request against the store with
 * fake DMA ops (fuzz_s3.h: key 0x101 over 64 KiB at 0x10000).
 *
 * input: method:u8, then the token value, a 0x00 byte, the Range value (each
 * stops at the next 0x00; values with CR or LF are not put in a request,
 * they would end the header there). The object "o" holds 1000 bytes; method
 * picks GET (even) or PUT (odd).
 *
 * Checked: a parsed token encodes to 44 bytes that decode to the same token
 * and to 88 hex digits that parse back to it; a reply the parser accepts is
 * formatted and parsed back to the same status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_s3.h"
#include "s3/s3_token.h"

static bool tok_eq(const struct s3_token *a, const struct s3_token *b)
{
	return a->transport == b->transport && a->qpn == b->qpn && memcmp(a->gid, b->gid, 16) == 0 &&
	       a->rkey == b->rkey && a->addr == b->addr && a->len == b->len && a->port == b->port && a->lid == b->lid;
}

static void check_token(const struct s3_token *t)
{
	uint8_t raw[S3_TOKEN_BYTES];
	char hex[S3_TOKEN_HEX + 1];
	struct s3_token back, back2;

	s3_token_encode(t, raw);
	s3_token_decode(raw, &back);
	s3_token_to_hex(t, hex);
	if (s3_token_from_hex(hex, S3_TOKEN_HEX, &back2) || !tok_eq(&back, t) || !tok_eq(&back2, t))
		abort();
}

static bool header_safe(const char *v)
{
	return strpbrk(v, "\r\n") == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	uint8_t method = fz_u8(&f);
	char tok[512], range[128], req[1024], out[2048];
	struct s3_token t;
	enum s3_dialect d;
	struct s3_reply r, r2;
	size_t n = 0, got;
	const uint8_t *p = fz_ptr(&f, fz_left(&f), &got);
	const uint8_t *z = memchr(p, 0, got);

	memset(&t, 0, sizeof(t));
	n = z ? (size_t)(z - p) : got;
	if (n >= sizeof(tok))
		n = sizeof(tok) - 1;
	memcpy(tok, p, n);
	tok[n] = '\0';
	range[0] = '\0';
	if (z) {
		const uint8_t *r0 = z + 1;
		size_t rn = got - (size_t)(r0 - p);
		const uint8_t *z2 = memchr(r0, 0, rn);

		if (z2)
			rn = (size_t)(z2 - r0);
		if (rn >= sizeof(range))
			rn = sizeof(range) - 1;
		memcpy(range, r0, rn);
		range[rn] = '\0';
	}

	if (s3_token_parse_header(tok, &t, &d) == 0) {
		check_token(&t);
		/* a descriptor's transport is DC and its port 1; a hipObject token is 88 digits first */
		if (d == S3_DIALECT_CUOBJ ? t.transport != S3_TRANSPORT_DC || t.port != 1 : strlen(tok) < S3_TOKEN_HEX)
			abort();
	}
	if (s3_token_from_hex(tok, strlen(tok), &t) == 0)
		check_token(&t);
	if (s3_reply_parse(tok, &r) == 0 && r.kind != S3_REPLY_TAG) {
		char back[S3_TOKEN_HEX + 16];

		if (s3_reply_format(r.status, r.kind == S3_REPLY_STATUS_TOKEN ? &r.token : NULL, back,
				    sizeof(back)) < 0 ||
		    s3_reply_parse(back, &r2) || r2.status != r.status || r2.ok != r.ok)
			abort();
	}

	if (header_safe(tok) && header_safe(range)) {
		struct s3_store *st = fs_store_new();
		struct s3_conn *c = s3_conn_new(st);
		static uint8_t body[1000];
		int k;

		k = snprintf(req, sizeof(req), "PUT /ernic/o HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
			     sizeof(body));
		fs_feed(c, (const uint8_t *)req, (size_t)k, 0, out, sizeof(out));
		fs_feed(c, body, sizeof(body), 0, out, sizeof(out));
		k = snprintf(req, sizeof(req), "%s /ernic/o HTTP/1.1\r\nHost: x\r\nx-amz-rdma-token: %s\r\n%s%s%s%s\r\n",
			     method & 1 ? "PUT" : "GET", tok, range[0] ? "Range: " : "", range, range[0] ? "\r\n" : "",
			     method & 1 ? "Content-Length: 0\r\n" : "");
		if (k > 0 && (size_t)k < sizeof(req))
			fs_feed(c, (const uint8_t *)req, (size_t)k, 0, out, sizeof(out));
		s3_conn_free(c);
		s3_store_free(st);
	}
	return 0;
}
