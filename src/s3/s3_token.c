/*
 * The x-amz-rdma-token / x-amz-rdma-reply wire formats (see s3_token.h).
 *
 * Every parser stages its result in a local and copies it to *out only once
 * the whole input has been accepted. Input is read in order and parsing stops
 * at the first byte that does not fit, so nothing past a NUL (or past the
 * length given) is ever touched.
 */
#include "s3/s3_token.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "util/parse_int.h"

#define S3_STATUS_MIN 100
#define S3_STATUS_MAX 599
#define S3_STATUS_DIGITS 3

static const char hex_lower[] = "0123456789abcdef";

void s3_token_decode(const uint8_t raw[S3_TOKEN_BYTES], struct s3_token *out)
{
	struct s3_token_wire w;
	struct s3_token t;

	memcpy(&w, raw, sizeof(w));
	t.transport = w.transport;
	t.qpn = le32_get(w.qpn);
	memcpy(t.gid, w.gid, sizeof(t.gid));
	t.rkey = le32_get(w.rkey);
	t.addr = le64_get(w.addr);
	t.len = le64_get(w.len);
	t.port = w.port;
	t.lid = le16_get(w.lid);
	*out = t;
}

void s3_token_encode(const struct s3_token *t, uint8_t raw[S3_TOKEN_BYTES])
{
	struct s3_token_wire w;

	w.transport = t->transport;
	w.qpn = le32_set(t->qpn);
	memcpy(w.gid, t->gid, sizeof(w.gid));
	w.rkey = le32_set(t->rkey);
	w.addr = le64_set(t->addr);
	w.len = le64_set(t->len);
	w.port = t->port;
	w.lid = le16_set(t->lid);
	memcpy(raw, &w, sizeof(w));
}

int s3_token_from_hex(const char *hex, size_t len, struct s3_token *out)
{
	uint8_t raw[S3_TOKEN_BYTES];

	if (hex == NULL || len != S3_TOKEN_HEX)
		return -EINVAL;
	for (size_t i = 0; i < S3_TOKEN_BYTES; i++) {
		/* In order, so a NUL inside the 88 stops us before reading on. */
		int hi = parse_hex_digit(hex[2 * i]);
		int lo;

		if (hi < 0)
			return -EINVAL;
		lo = parse_hex_digit(hex[2 * i + 1]);
		if (lo < 0)
			return -EINVAL;
		raw[i] = (uint8_t)(hi << 4 | lo);
	}
	s3_token_decode(raw, out);
	return 0;
}

void s3_token_to_hex(const struct s3_token *t, char out[S3_TOKEN_HEX + 1])
{
	uint8_t raw[S3_TOKEN_BYTES];

	s3_token_encode(t, raw);
	for (size_t i = 0; i < S3_TOKEN_BYTES; i++) {
		out[2 * i] = hex_lower[raw[i] >> 4];
		out[2 * i + 1] = hex_lower[raw[i] & 0xf];
	}
	out[S3_TOKEN_HEX] = '\0';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* hipObject: "<88 hex>" or "<88 hex>:<addr>:<len>" in s[0..n). */
static int parse_hipobj(const char *s, size_t n, struct s3_token *out)
{
	struct s3_token t;
	const char *end = s + n, *f2, *f3;
	uint64_t addr, len;

	if (n < S3_TOKEN_HEX || s3_token_from_hex(s, S3_TOKEN_HEX, &t))
		return -EINVAL;
	if (n == S3_TOKEN_HEX) {
		*out = t;
		return 0;
	}
	if (s[S3_TOKEN_HEX] != ':')
		return -EINVAL;
	f2 = s + S3_TOKEN_HEX + 1;
	f3 = memchr(f2, ':', (size_t)(end - f2));
	if (f3 == NULL)
		return -EINVAL;
	/* parse_hex_u64_n refuses empty and over-long fields, and a third ':' */
	if (parse_hex_u64_n(f2, (size_t)(f3 - f2), &addr))
		return -EINVAL;
	f3++;
	if (parse_hex_u64_n(f3, (size_t)(end - f3), &len))
		return -EINVAL;
	if (addr != 0)
		t.addr = addr;
	if (len != 0)
		t.len = len;
	*out = t;
	return 0;
}

/*
 * cuObject: seven colon-separated hex fields, raddr:rsize:rkey:lid:qpn:has_gid:gid,
 * then optionally :addr:size. Each field at most as wide as NooBaa prints it
 * (rsize and the trailing pair: 16 digits); the GID is 32 digits when has_gid
 * is 1 and ignored (1..32 digits) when it is 0.
 */
#define CUOBJ_FIELDS_MIN 7
#define CUOBJ_FIELDS_MAX 9

static int parse_cuobj(const char *s, size_t n, struct s3_token *out)
{
	static const uint8_t width[CUOBJ_FIELDS_MAX] = { 16, 16, 8, 4, 6, 1, 32, 16, 16 };
	const char *f[CUOBJ_FIELDS_MAX];
	size_t flen[CUOBJ_FIELDS_MAX];
	uint64_t v[CUOBJ_FIELDS_MAX] = { 0 };
	struct s3_token t;
	const char *p = s, *end = s + n;
	unsigned nf = 0;

	while (p <= end) {
		const char *c = memchr(p, ':', (size_t)(end - p));
		const char *fe = c ? c : end;

		if (nf == CUOBJ_FIELDS_MAX)
			return -EINVAL;
		f[nf] = p;
		flen[nf] = (size_t)(fe - p);
		if (flen[nf] == 0 || flen[nf] > width[nf])
			return -EINVAL;
		nf++;
		if (c == NULL)
			break;
		p = c + 1;
	}
	if (nf != CUOBJ_FIELDS_MIN && nf != CUOBJ_FIELDS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < nf; i++) {
		if (i == 6) { /* the GID: hex, read below when has_gid says it is one */
			for (size_t k = 0; k < flen[i]; k++)
				if (parse_hex_digit(f[i][k]) < 0)
					return -EINVAL;
			continue;
		}
		if (parse_hex_u64_n(f[i], flen[i], &v[i]))
			return -EINVAL;
	}
	if (v[5] > 1)
		return -EINVAL;
	memset(&t, 0, sizeof(t));
	t.transport = S3_TRANSPORT_DC;
	t.addr = v[0];
	t.len = v[1];
	t.rkey = (uint32_t)v[2];
	t.lid = (uint16_t)v[3];
	t.qpn = (uint32_t)v[4];
	t.port = 1;
	if (v[5] == 1) {
		if (flen[6] != 32)
			return -EINVAL;
		for (unsigned i = 0; i < 16; i++)
			t.gid[i] = (uint8_t)(parse_hex_digit(f[6][2 * i]) << 4 | parse_hex_digit(f[6][2 * i + 1]));
	}
	if (nf == CUOBJ_FIELDS_MAX) {
		if (v[7] != 0)
			t.addr = v[7];
		if (v[8] != 0)
			t.len = v[8];
	}
	*out = t;
	return 0;
}

int s3_token_parse_header(const char *value, struct s3_token *out, enum s3_dialect *dialect)
{
	struct s3_token t;
	const char *s, *end, *colon;
	enum s3_dialect d;
	size_t n;

	if (value == NULL || out == NULL)
		return -EINVAL;
	s = value;
	while (is_blank(*s))
		s++;
	end = s + strlen(s);
	while (end > s && is_blank(end[-1]))
		end--;
	n = (size_t)(end - s);

	/*
	 * The dialects part at the first field: a cuObject descriptor always has
	 * colons and never an 88-digit first field. What is neither counts as a
	 * hipObject token gone wrong (the dialect is reported even then).
	 */
	colon = memchr(s, ':', n);
	d = colon && (size_t)(colon - s) != S3_TOKEN_HEX ? S3_DIALECT_CUOBJ : S3_DIALECT_HIPOBJ;
	if (dialect)
		*dialect = d;
	if (d == S3_DIALECT_CUOBJ ? parse_cuobj(s, n, &t) : parse_hipobj(s, n, &t))
		return -EINVAL;
	*out = t;
	return 0;
}

bool s3_gid_link_local(const uint8_t gid[16])
{
	return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

static bool status_ok(int status)
{
	return status == 200 || status == 204 || status == 206;
}

/*
 * The tags are matched case-insensitively ("OK", "Err"): cuObject sends them
 * lowercase, and nothing else could be meant by another case.
 */
int s3_reply_parse(const char *value, struct s3_reply *out)
{
	struct s3_reply r;
	const char *p;
	int status = 0;
	size_t nd = 0;

	if (value == NULL)
		return -EINVAL;
	memset(&r, 0, sizeof(r));

	if (strcasecmp(value, "ok") == 0 || strcasecmp(value, "err") == 0) {
		r.kind = S3_REPLY_TAG;
		r.ok = (value[0] == 'o' || value[0] == 'O');
		r.status = 0;
		*out = r;
		return 0;
	}

	for (p = value; *p >= '0' && *p <= '9'; p++) {
		if (++nd > S3_STATUS_DIGITS)
			return -EINVAL;
		status = status * 10 + (*p - '0');
	}
	if (nd == 0 || status < S3_STATUS_MIN || status > S3_STATUS_MAX)
		return -EINVAL;
	r.status = status;
	r.ok = status_ok(status);

	if (*p == '\0') {
		r.kind = S3_REPLY_STATUS;
		*out = r;
		return 0;
	}
	if (*p != ':')
		return -EINVAL;
	p++;
	/* from_hex stops at a NUL among the 88, so p[88] is only read after 88 hex digits. */
	if (s3_token_from_hex(p, S3_TOKEN_HEX, &r.token) || p[S3_TOKEN_HEX] != '\0')
		return -EINVAL;
	r.kind = S3_REPLY_STATUS_TOKEN;
	*out = r;
	return 0;
}

int s3_reply_format(int status, const struct s3_token *token, char *out, size_t cap)
{
	size_t need = S3_STATUS_DIGITS + (token ? 1 + S3_TOKEN_HEX : 0);

	if (status < S3_STATUS_MIN || status > S3_STATUS_MAX)
		return -EINVAL;
	if (out == NULL || cap < need + 1) {
		if (out != NULL && cap > 0)
			out[0] = '\0';
		return -ENOSPC;
	}
	/* 100..599: exactly three digits */
	out[0] = (char)('0' + status / 100);
	out[1] = (char)('0' + status / 10 % 10);
	out[2] = (char)('0' + status % 10);
	out[S3_STATUS_DIGITS] = '\0';
	if (token) {
		out[S3_STATUS_DIGITS] = ':';
		s3_token_to_hex(token, out + S3_STATUS_DIGITS + 1);
	}
	return (int)need;
}
