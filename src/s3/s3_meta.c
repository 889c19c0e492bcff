/*
 * What an object carries besides its bytes, and the conditions a request
 * puts on it.
 *
 * Metadata: the user's x-amz-meta-* headers (names lower-cased, as S3 returns
 * them; at most S3_MAX_USER_META bytes of names and values together) and the
 * representation headers S3 stores with an object: Content-Type,
 * Cache-Control, Content-Disposition, Content-Encoding (without the
 * aws-chunked framing token), Content-Language and Expires. They are kept as
 * one allocation of name/value pairs and given back on GET and HEAD, where
 * the response-* query parameters override them.
 *
 * Conditions, as RFC 9110 orders them and S3 answers them: If-Match (or, when
 * absent, If-Unmodified-Since) fails with 412; then If-None-Match (or, when
 * absent, If-Modified-Since) fails a GET or HEAD with 304. A date that does
 * not parse is ignored, as the RFC says.
 */
#include "s3/s3_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define META_PREFIX "x-amz-meta-"

/* The representation headers kept with an object, in the case they are answered in. */
static const char *const stored_headers[] = {
	"Content-Type", "Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires",
};

/* The GET query parameters that override them (same order). */
static const char *const override_params[] = {
	"response-content-type", "response-cache-control", "response-content-disposition",
	"response-content-encoding", "response-content-language", "response-expires",
};

struct meta_build {
	char buf[S3_MAX_META_BYTES];
	size_t len;
	unsigned n;
	bool full;
};

static void add_pair(struct meta_build *b, const char *name, size_t nlen, const char *value)
{
	size_t vlen = strlen(value);

	if (b->len + nlen + vlen + 2 > sizeof(b->buf) || b->n == S3_MAX_META_PAIRS) {
		b->full = true;
		return;
	}
	for (size_t i = 0; i < nlen; i++)
		b->buf[b->len + i] = name[i];
	b->buf[b->len + nlen] = '\0';
	memcpy(b->buf + b->len + nlen + 1, value, vlen + 1);
	b->len += nlen + vlen + 2;
	b->n++;
}

/* Content-Encoding without the aws-chunked token (the framing of this request, not the object's). */
static void strip_aws_chunked(const char *v, char *out, size_t cap)
{
	size_t o = 0;

	out[0] = '\0';
	while (*v) {
		const char *e = strchr(v, ',');
		size_t n = e ? (size_t)(e - v) : strlen(v);
		const char *s = v;

		while (n && isspace((unsigned char)*s)) {
			s++;
			n--;
		}
		while (n && isspace((unsigned char)s[n - 1]))
			n--;
		if (n && !(n == 11 && strncasecmp(s, "aws-chunked", 11) == 0) && o + n + 2 < cap) {
			if (o) {
				out[o++] = ',';
			}
			memcpy(out + o, s, n);
			o += n;
			out[o] = '\0';
		}
		v = e ? e + 1 : v + strlen(v);
	}
}

enum s3_err s3_meta_from_request(const struct http_request *h, const char *default_type, struct s3_meta **out)
{
	struct meta_build mb, *b = &mb; /* 8 KiB on the stack: nothing allocated but what is stored */
	size_t user = 0;
	struct s3_meta *m;

	*out = NULL;
	b->len = 0;
	b->n = 0;
	b->full = false;
	for (size_t k = 0; k < sizeof(stored_headers) / sizeof(stored_headers[0]); k++) {
		const char *v = http_header_get(h, stored_headers[k]);
		char enc[256];

		if (k == 0 && (v == NULL || v[0] == '\0'))
			v = default_type;
		if (k == 3 && v) {
			strip_aws_chunked(v, enc, sizeof(enc));
			v = enc;
		}
		if (v && v[0])
			add_pair(b, stored_headers[k], strlen(stored_headers[k]), v);
	}
	for (unsigned i = 0; i < h->nheaders; i++) {
		const char *name = h->headers[i].name;
		char lower[256];
		size_t nlen = strlen(name);

		if (nlen <= strlen(META_PREFIX) || strncasecmp(name, META_PREFIX, strlen(META_PREFIX)) != 0)
			continue;
		if (nlen >= sizeof(lower))
			return S3_ERR_METADATA_TOO_LARGE;
		for (size_t j = 0; j <= nlen; j++)
			lower[j] = (char)tolower((unsigned char)name[j]);
		/* S3 counts the name after the prefix and the value, in bytes. */
		user += nlen - strlen(META_PREFIX) + strlen(h->headers[i].value);
		if (user > S3_MAX_USER_META)
			return S3_ERR_METADATA_TOO_LARGE;
		add_pair(b, lower, nlen, h->headers[i].value);
	}
	if (b->full)
		return S3_ERR_METADATA_TOO_LARGE;
	m = malloc(sizeof(*m) + b->len);
	if (m == NULL)
		return S3_ERR_INTERNAL;
	m->len = b->len;
	m->n = b->n;
	memcpy(m->data, b->buf, b->len);
	*out = m;
	return S3_OK;
}

struct s3_meta *s3_meta_dup(const struct s3_meta *m)
{
	struct s3_meta *c;

	if (m == NULL)
		return NULL;
	c = malloc(sizeof(*c) + m->len);
	if (c)
		memcpy(c, m, sizeof(*c) + m->len);
	return c;
}

void s3_meta_free(struct s3_meta *m)
{
	free(m);
}

/* The pair at *off (NULL after the last), moving *off past it. */
static const char *meta_next(const struct s3_meta *m, size_t *off, const char **value)
{
	const char *name;

	if (m == NULL || *off >= m->len)
		return NULL;
	name = m->data + *off;
	*value = name + strlen(name) + 1;
	*off = (size_t)(*value - m->data) + strlen(*value) + 1;
	return name;
}

const char *s3_meta_get(const struct s3_meta *m, const char *name)
{
	size_t off = 0;
	const char *n, *v;

	while ((n = meta_next(m, &off, &v)) != NULL)
		if (strcasecmp(n, name) == 0)
			return v;
	return NULL;
}

void s3_meta_emit(struct s3_response *r, const struct s3_meta *m, const struct http_request *get)
{
	size_t off = 0;
	const char *n, *v;
	char over[1024];

	while ((n = meta_next(m, &off, &v)) != NULL) {
		bool overridden = false;

		for (size_t k = 0; get && k < sizeof(stored_headers) / sizeof(stored_headers[0]); k++)
			if (strcmp(n, stored_headers[k]) == 0 &&
			    http_query_get(get, override_params[k], over, sizeof(over)) >= 0)
				overridden = true;
		if (!overridden)
			resp_header(r, n, "%s", v);
	}
	/* The overrides, whether or not the object had the header. */
	for (size_t k = 0; get && k < sizeof(stored_headers) / sizeof(stored_headers[0]); k++)
		if (http_query_get(get, override_params[k], over, sizeof(over)) >= 0)
			resp_header(r, stored_headers[k], "%s", over);
}

/* ---------------------------------------------------------------- conditions */

/*
 * Whether etag is in an If-Match / If-None-Match list: "*" matches any
 * object, otherwise comma-separated entity tags, quoted or not, weak (W/)
 * ones compared by their opaque part (S3 has no weak tags).
 */
bool s3_etag_list_match(const char *list, const char *etag)
{
	const char *p = list;

	while (*p) {
		const char *e, *s;
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, ',');
		n = e ? (size_t)(e - p) : strlen(p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		s = p;
		if (n == 1 && *s == '*')
			return true;
		if (n > 2 && s[0] == 'W' && s[1] == '/') {
			s += 2;
			n -= 2;
		}
		if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
			s++;
			n -= 2;
		}
		/* etag is stored quoted */
		if (strlen(etag) == n + 2 && strncmp(etag + 1, s, n) == 0)
			return true;
		p = e ? e + 1 : p + strlen(p);
	}
	return false;
}

int s3_cond_read(const struct http_request *h, bool copy_source, const char *etag, int64_t mtime)
{
	const char *im = http_header_get(h, copy_source ? "x-amz-copy-source-if-match" : "if-match");
	const char *inm = http_header_get(h, copy_source ? "x-amz-copy-source-if-none-match" : "if-none-match");
	const char *ius = http_header_get(h, copy_source ? "x-amz-copy-source-if-unmodified-since" : "if-unmodified-since");
	const char *ims = http_header_get(h, copy_source ? "x-amz-copy-source-if-modified-since" : "if-modified-since");
	int64_t t;
	/* A copy's source conditions all fail with 412: nothing is sent back to revalidate. */
	int not_modified = copy_source ? 412 : 304;

	if (im) {
		if (!s3_etag_list_match(im, etag))
			return 412;
	} else if (ius && http_parse_date(ius, &t) == 0 && mtime > t) {
		return 412;
	}
	if (inm) {
		if (s3_etag_list_match(inm, etag))
			return not_modified;
	} else if (ims && http_parse_date(ims, &t) == 0 && mtime <= t) {
		/* S3 takes If-Modified-Since only when the object exists and the date is past */
		if (t <= (int64_t)time(NULL))
			return not_modified;
	}
	return 0;
}

/* ---------------------------------------------------------------- additional checksums */

#define CKS_PREFIX "x-amz-checksum-"

bool checksum_read(struct s3_op *op, const struct http_request *h)
{
	const char *sdk = http_header_get(h, "x-amz-sdk-checksum-algorithm");
	const char *trailer = http_header_get(h, "x-amz-trailer");
	enum s3_cks given = S3_CKS_NONE;
	char msg[128];

	for (unsigned i = 0; i < h->nheaders; i++) {
		const char *n = h->headers[i].name;
		enum s3_cks a;

		if (strncasecmp(n, CKS_PREFIX, strlen(CKS_PREFIX)) != 0 || strcasecmp(n, CKS_PREFIX "mode") == 0 ||
		    strcasecmp(n, CKS_PREFIX "type") == 0 || strcasecmp(n, CKS_PREFIX "algorithm") == 0)
			continue;
		a = s3_cks_from_name(n + strlen(CKS_PREFIX));
		if (a == S3_CKS_NONE) {
			op_error(op, S3_ERR_INVALID_REQUEST, "The checksum algorithm is not one S3 knows.");
			return false;
		}
		if (given != S3_CKS_NONE) {
			op_error(op, S3_ERR_INVALID_REQUEST,
				 "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
			return false;
		}
		if (s3_cks_unb64(a, h->headers[i].value, op->cks_want)) {
			snprintf(msg, sizeof(msg), "Value for " CKS_PREFIX "%s header is invalid.", s3_cks_name(a));
			op_error(op, S3_ERR_INVALID_REQUEST, msg);
			return false;
		}
		given = a;
	}
	if (given != S3_CKS_NONE) {
		op->cks = given;
		op->cks_given = true;
	}
	if (trailer) {
		enum s3_cks a = strncasecmp(trailer, CKS_PREFIX, strlen(CKS_PREFIX)) == 0
					? s3_cks_from_name(trailer + strlen(CKS_PREFIX)) : S3_CKS_NONE;

		if (a == S3_CKS_NONE || strlen(trailer) >= sizeof(op->cks_trailer) || (given && given != a)) {
			op_error(op, S3_ERR_INVALID_REQUEST, "The x-amz-trailer header names no checksum this request can carry.");
			return false;
		}
		op->cks = a;
		op->cks_in_trailer = !op->cks_given;
		snprintf(op->cks_trailer, sizeof(op->cks_trailer), "%s", trailer);
	}
	if (sdk) {
		enum s3_cks a = s3_cks_from_name(sdk);

		if (a == S3_CKS_NONE || (op->cks != S3_CKS_NONE && op->cks != a)) {
			op_error(op, S3_ERR_INVALID_REQUEST, "Value for x-amz-sdk-checksum-algorithm header is invalid.");
			return false;
		}
		op->cks = a;   /* without a value: computed and kept */
	}
	return true;
}

void s3_op_trailer(struct s3_op *op, const char *value)
{
	if (!op->cks_in_trailer)
		return;
	op->cks_in_trailer = false;
	if (value == NULL || s3_cks_unb64(op->cks, value, op->cks_want)) {
		op->body_err = S3_ERR_MALFORMED_TRAILER;
		return;
	}
	op->cks_given = true;
}

const char *s3_op_wants_trailer(const struct s3_op *op)
{
	return op->cks_in_trailer ? op->cks_trailer : NULL;
}

bool checksum_check(struct s3_op *op, const uint8_t *data, size_t len)
{
	char msg[96];

	if (op->cks == S3_CKS_NONE)
		return true;
	if (op->cks_in_trailer) {
		/* announced, never sent */
		op_error(op, S3_ERR_MALFORMED_TRAILER, NULL);
		return false;
	}
	if (s3_cks_compute(op->cks, data, len, op->cks_raw)) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		return false;
	}
	if (op->cks_given && memcmp(op->cks_raw, op->cks_want, s3_cks_len(op->cks)) != 0) {
		snprintf(msg, sizeof(msg), "The %s you specified did not match the calculated checksum.",
			 s3_cks_xml(op->cks) + strlen("Checksum"));
		op_error(op, S3_ERR_BAD_DIGEST, msg);
		return false;
	}
	return true;
}

void checksum_headers(struct s3_response *r, enum s3_cks a, const char *b64, const char *type)
{
	char name[48];

	if (a == S3_CKS_NONE)
		return;
	snprintf(name, sizeof(name), CKS_PREFIX "%s", s3_cks_name(a));
	resp_header(r, name, "%s", b64);
	if (type)
		resp_header(r, CKS_PREFIX "type", "%s", type);
}
