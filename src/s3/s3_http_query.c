/*
 * Percent-decoding (RFC 3986) and the request's query string: the parameters S3 requests carry
 * (?uploads, ?partNumber=, ?list-type=2, ...), looked up by their decoded names; see s3_http.h.
 */
#include "s3/s3_http.h"
#include "util/parse_int.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

/*
 * Decode one octet at s[*i] of [s, s+n): -1 malformed ("%" without two hex
 * digits) or a decoded NUL, else the octet.
 */
static int decode_at(const char *s, size_t n, size_t *i)
{
	int hi, lo;

	if (s[*i] != '%')
		return (unsigned char)s[(*i)++];
	if (n - *i < 3)
		return -1;
	hi = parse_hex_digit(s[*i + 1]);
	lo = parse_hex_digit(s[*i + 2]);
	if (hi < 0 || lo < 0 || (hi | lo) == 0)
		return -1;
	*i += 3;
	return hi * 16 + lo;
}

int http_percent_decode(const char *in, size_t len, char *out, size_t outlen)
{
	size_t i = 0, o = 0;

	if (!out || outlen == 0)
		return -ENOSPC;
	out[0] = '\0';
	if (!in && len)
		return -EINVAL;
	while (i < len) {
		int c = decode_at(in, len, &i);

		if (c < 0) {
			out[0] = '\0';
			return -EINVAL;
		}
		if (o + 1 >= outlen || o >= INT_MAX) {
			out[0] = '\0';
			return -ENOSPC;
		}
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (int)o;
}

/* Does the raw key [s, s+n) decode to exactly key? */
static bool key_matches(const char *s, size_t n, const char *key)
{
	size_t i = 0, k = 0;

	while (i < n) {
		int c = decode_at(s, n, &i);

		if (c < 0 || key[k] == '\0' || (unsigned char)key[k] != c)
			return false;
		k++;
	}
	return key[k] == '\0';
}

/* First parameter whose decoded key is key: its raw value (NULL if no "="). */
static bool query_find(const struct http_request *r, const char *key, const char **val,
		       size_t *vlen)
{
	const char *q;

	if (!r || !key || !r->query || r->query[0] == '\0')
		return false; /* most requests have no query, and are asked for a dozen names */
	q = r->query;
	for (;;) {
		const char *amp = strchr(q, '&');
		const char *end = amp ? amp : q + strlen(q);
		const char *eq = memchr(q, '=', (size_t)(end - q));
		size_t klen = (size_t)((eq ? eq : end) - q);

		if (end > q && key_matches(q, klen, key)) {
			*val = eq ? eq + 1 : NULL;
			*vlen = eq ? (size_t)(end - eq - 1) : 0;
			return true;
		}
		if (!amp)
			return false;
		q = amp + 1;
	}
}

int http_query_get(const struct http_request *r, const char *key, char *out, size_t outlen)
{
	const char *val;
	size_t vlen;

	if (out && outlen)
		out[0] = '\0';
	if (!query_find(r, key, &val, &vlen))
		return -ENOENT;
	if (!out || outlen == 0)
		return -ENOSPC;
	if (!val)
		return 0;
	return http_percent_decode(val, vlen, out, outlen);
}

bool http_query_has(const struct http_request *r, const char *key)
{
	const char *val;
	size_t vlen;

	return query_find(r, key, &val, &vlen);
}
