/*
 * The HTTP/1.1 subset of the S3 endpoint; see s3_http.h for the contract.
 *
 * Everything here treats its input as hostile: every length is bounded, the
 * parser reads only the bytes it was given, and the only allocation is the
 * parser itself (fixed size). Boundaries, precisely:
 *
 * - Request line: at most HTTP_MAX_REQUEST_LINE bytes, not counting its line
 *   terminator (CRLF or LF). One byte more is a 414, reported as soon as that
 *   byte arrives.
 * - Header section: at most HTTP_MAX_HEADER_BYTES bytes counted as received
 *   from the first byte of the request line up to and including the LF of the
 *   empty line that ends the headers (every CR and LF counts). More is a 431.
 *   Empty lines ignored before the request line do not count (at most
 *   LEADING_EMPTY_MAX bytes of them, else 400).
 * - At most HTTP_MAX_HEADERS header lines; the next one is a 431.
 * - Chunk size lines (HTTP chunked and aws-chunked alike): at most
 *   CHUNK_LINE_MAX bytes not counting the terminator (else 400); the size is
 *   1..15 significant hex digits (leading zeros are free), more is a 413.
 *   The chunked body total must stay within INT64_MAX (else 413).
 * - Trailers (both layers): at most HTTP_MAX_HEADERS lines and
 *   HTTP_MAX_HEADER_BYTES bytes (including terminators) per layer, else 431;
 *   they are checked for "token:value" shape; those of up to TRAILER_LINE_MAX
 *   bytes are kept while there is room (TRAILER_KEPT per layer) for
 *   http_parser_trailer(), the rest dropped.
 *
 * Return value of http_parse() on the first error: the bytes examined, the
 * offending one included; afterwards 0 with HTTP_EV_ERROR every time.
 * After HTTP_EV_DONE, further calls return HTTP_EV_DONE and consume nothing
 * until http_parser_reset().
 *
 * Storage: request line and header lines are kept in place in buf, their
 * terminators replaced by NULs (so the stored form is never longer than what
 * was counted against HTTP_MAX_HEADER_BYTES); the decoded path has its own
 * buffer. Body bytes are never copied.
 */
#include "s3/s3_http.h"

#include "util/parse_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Each octet's classes (s3_http.h), from the one definition of each, at compile time. */
#define HTTP_CLASS_OF(c) ((HTTP_TOKEN_CHAR(c) ? HTTP_CLASS_TOKEN : 0u) | (HTTP_FIELD_CHAR(c) ? HTTP_CLASS_FIELD : 0u))
#define HTTP_CLASS4(c) HTTP_CLASS_OF(c), HTTP_CLASS_OF((c) + 1), HTTP_CLASS_OF((c) + 2), HTTP_CLASS_OF((c) + 3)
#define HTTP_CLASS16(c) HTTP_CLASS4(c), HTTP_CLASS4((c) + 4), HTTP_CLASS4((c) + 8), HTTP_CLASS4((c) + 12)
#define HTTP_CLASS64(c) HTTP_CLASS16(c), HTTP_CLASS16((c) + 16), HTTP_CLASS16((c) + 32), HTTP_CLASS16((c) + 48)
const uint8_t http_char_class[256] = { HTTP_CLASS64(0), HTTP_CLASS64(64), HTTP_CLASS64(128), HTTP_CLASS64(192) };

#define CHUNK_LINE_MAX    256
#define CHUNK_DIGITS_MAX  15
#define LEADING_EMPTY_MAX 64

/* ---- character classes -------------------------------------------------- */

static bool is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static int hexval(unsigned char c)
{
	return parse_hex_digit((char)c);
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* ASCII case-insensitive equality of a NUL-terminated string and [b, b+blen). */
static bool ieq_n(const char *a, const char *b, size_t blen)
{
	size_t i;

	for (i = 0; i < blen; i++)
		if (a[i] == '\0' || lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return false;
	return a[i] == '\0';
}

static bool ieq(const char *a, const char *b)
{
	return ieq_n(a, b, strlen(b));
}

/* Does the comma-separated list value hold token (case-insensitive, OWS trimmed)? */
static bool list_has(const char *value, const char *token)
{
	const char *s = value;

	for (;;) {
		const char *e = strchr(s, ',');
		const char *end = e ? e : s + strlen(s);
		const char *a = s, *b = end;

		while (a < b && is_ows((unsigned char)*a))
			a++;
		while (b > a && is_ows((unsigned char)b[-1]))
			b--;
		if (ieq_n(token, a, (size_t)(b - a)))
			return true;
		if (!e)
			return false;
		s = e + 1;
	}
}

/* ---- chunk framing (used for Transfer-Encoding: chunked and aws-chunked) --- */

#define TRAILER_LINE_MAX 256
#define TRAILER_KEPT     512

enum ck_state {
	CK_SIZE,       /* in a chunk-size line */
	CK_SIZE_LF,    /* its CR seen */
	CK_DATA,       /* chunk data; the caller consumes it */
	CK_DATA_END,   /* the CRLF after chunk data */
	CK_DATA_LF,
	CK_TRAILER,    /* trailer lines after the last chunk */
	CK_TRAILER_LF,
	CK_DONE,
};

enum { SZ_DIGITS, SZ_BWS, SZ_EXT };  /* within a size line */
enum { TR_START, TR_NAME, TR_VALUE }; /* within a trailer line */

struct chunk_dec {
	enum ck_state st;
	int sub;
	bool any_digit;
	unsigned digits;        /* significant hex digits */
	unsigned line_len;      /* size line bytes, terminator excluded */
	uint64_t size;          /* the size being parsed */
	uint64_t remaining;     /* of the current chunk's data */
	uint64_t total;         /* sum of chunk sizes so far */
	uint64_t max_total;
	int over_status;        /* when total would exceed max_total */
	bool exact;             /* total must equal max_total at the end */
	unsigned trailers;
	size_t trailer_bytes;
	/*
	 * Trailer lines are kept (up to TRAILER_LINE_MAX bytes each, TRAILER_KEPT
	 * in all, as "name\0value\0"): aws-chunked carries the body's checksum
	 * there. Longer ones are checked and dropped.
	 */
	char line[TRAILER_LINE_MAX];
	unsigned line_n;
	bool line_long;
	char kept[TRAILER_KEPT];
	size_t kept_len;
};

static void ck_init(struct chunk_dec *c, uint64_t max_total, int over_status, bool exact)
{
	memset(c, 0, sizeof(*c));
	c->st = CK_SIZE;
	c->max_total = max_total;
	c->over_status = over_status;
	c->exact = exact;
}

static int ck_size_line_end(struct chunk_dec *c)
{
	if (!c->any_digit)
		return 400;
	if (c->size == 0) {
		if (c->exact && c->total != c->max_total)
			return 400;
		c->st = CK_TRAILER;
		c->sub = TR_START;
		return 0;
	}
	if (c->size > c->max_total - c->total)
		return c->over_status;
	c->total += c->size;
	c->remaining = c->size;
	c->st = CK_DATA;
	return 0;
}

static void ck_new_size_line(struct chunk_dec *c)
{
	c->st = CK_SIZE;
	c->sub = SZ_DIGITS;
	c->any_digit = false;
	c->digits = 0;
	c->line_len = 0;
	c->size = 0;
}

/* Keep the trailer line just ended ("name:value", OWS around the value trimmed) if there is room. */
static void ck_keep_trailer(struct chunk_dec *c)
{
	const char *colon = memchr(c->line, ':', c->line_n);
	size_t nlen, vstart, vend;

	if (c->line_long || colon == NULL)
		return;
	nlen = (size_t)(colon - c->line);
	vstart = nlen + 1;
	vend = c->line_n;
	while (vstart < vend && is_ows((unsigned char)c->line[vstart]))
		vstart++;
	while (vend > vstart && is_ows((unsigned char)c->line[vend - 1]))
		vend--;
	if (c->kept_len + nlen + (vend - vstart) + 2 > sizeof(c->kept))
		return;
	memcpy(c->kept + c->kept_len, c->line, nlen);
	c->kept[c->kept_len + nlen] = '\0';
	c->kept_len += nlen + 1;
	memcpy(c->kept + c->kept_len, c->line + vstart, vend - vstart);
	c->kept[c->kept_len + (vend - vstart)] = '\0';
	c->kept_len += vend - vstart + 1;
}

static int ck_trailer_line_end(struct chunk_dec *c)
{
	if (c->sub == TR_START) {
		c->st = CK_DONE;
		return 0;
	}
	if (c->sub != TR_VALUE)
		return 400; /* no colon */
	if (++c->trailers > HTTP_MAX_HEADERS)
		return 431;
	ck_keep_trailer(c);
	c->line_n = 0;
	c->line_long = false;
	c->st = CK_TRAILER;
	c->sub = TR_START;
	return 0;
}

/* A trailer byte of the line being read (not its terminator). */
static void ck_trailer_byte(struct chunk_dec *c, unsigned char ch)
{
	if (c->line_n < sizeof(c->line))
		c->line[c->line_n++] = (char)ch;
	else
		c->line_long = true;
}

/* One framing byte; returns 0 or an error status. */
static int ck_byte(struct chunk_dec *c, unsigned char ch)
{
	int v;

	switch (c->st) {
	case CK_SIZE:
		if (ch == '\r') {
			c->st = CK_SIZE_LF;
			return 0;
		}
		if (ch == '\n')
			return ck_size_line_end(c);
		if (++c->line_len > CHUNK_LINE_MAX)
			return 400;
		switch (c->sub) {
		case SZ_DIGITS:
			v = hexval(ch);
			if (v >= 0) {
				c->any_digit = true;
				if (c->digits == 0 && v == 0)
					return 0;
				if (++c->digits > CHUNK_DIGITS_MAX)
					return 413;
				c->size = c->size * 16 + (uint64_t)v;
				return 0;
			}
			if (!c->any_digit)
				return 400;
			if (is_ows(ch))
				c->sub = SZ_BWS;
			else if (ch == ';')
				c->sub = SZ_EXT;
			else
				return 400;
			return 0;
		case SZ_BWS:
			if (ch == ';')
				c->sub = SZ_EXT;
			else if (!is_ows(ch))
				return 400;
			return 0;
		default: /* SZ_EXT: ignored, but no control characters */
			return http_is_field_char(ch) ? 0 : 400;
		}
	case CK_SIZE_LF:
		return ch == '\n' ? ck_size_line_end(c) : 400;
	case CK_DATA_END:
		if (ch == '\r') {
			c->st = CK_DATA_LF;
			return 0;
		}
		if (ch != '\n')
			return 400;
		ck_new_size_line(c);
		return 0;
	case CK_DATA_LF:
		if (ch != '\n')
			return 400;
		ck_new_size_line(c);
		return 0;
	case CK_TRAILER:
		if (++c->trailer_bytes > HTTP_MAX_HEADER_BYTES)
			return 431;
		if (ch == '\r') {
			c->st = CK_TRAILER_LF;
			return 0;
		}
		if (ch == '\n')
			return ck_trailer_line_end(c);
		ck_trailer_byte(c, ch);
		switch (c->sub) {
		case TR_START:
			if (!http_is_token_char(ch))
				return 400; /* folding, empty name, junk */
			c->sub = TR_NAME;
			return 0;
		case TR_NAME:
			if (ch == ':')
				c->sub = TR_VALUE;
			else if (!http_is_token_char(ch))
				return 400;
			return 0;
		default:
			return http_is_field_char(ch) ? 0 : 400;
		}
	case CK_TRAILER_LF:
		if (++c->trailer_bytes > HTTP_MAX_HEADER_BYTES)
			return 431;
		return ch == '\n' ? ck_trailer_line_end(c) : 400;
	case CK_DATA:
	case CK_DONE:
		break;
	}
	return 400; /* not reached: the caller never feeds data or post-end bytes here */
}

/*
 * Run framing bytes until chunk data starts (st == CK_DATA), the framing ends
 * (CK_DONE) or the input runs out. *used: bytes examined (the offending one
 * included on error). Returns 0 or an error status.
 */
static int ck_frame(struct chunk_dec *c, const uint8_t *in, size_t len, size_t *used)
{
	size_t i = 0;

	while (i < len && c->st != CK_DATA && c->st != CK_DONE) {
		int s = ck_byte(c, in[i++]);

		if (s) {
			*used = i;
			return s;
		}
	}
	*used = i;
	return 0;
}

static void ck_consume(struct chunk_dec *c, uint64_t n)
{
	c->remaining -= n;
	if (c->remaining == 0)
		c->st = CK_DATA_END;
}

/* ---- the parser ---------------------------------------------------------- */

enum p_state { PS_START, PS_HEAD, PS_BODY, PS_DONE, PS_ERROR };
enum outer_kind { OUT_NONE, OUT_LENGTH, OUT_CHUNKED };

struct http_parser {
	/* everything up to buf is cleared by http_parser_reset() */
	enum p_state st;
	int status;
	bool headers_done;
	bool cr;              /* a CR was seen; only LF may follow */
	bool in_request_line;
	size_t leading;       /* bytes of empty lines before the request line */
	size_t raw;           /* header-section bytes counted so far */
	size_t pos;           /* bytes used in buf */
	size_t line_start;    /* where the current line starts in buf */
	enum outer_kind outer;
	uint64_t remaining;   /* OUT_LENGTH: body bytes still to come */
	struct chunk_dec ock; /* OUT_CHUNKED framing */
	bool aws;             /* aws-chunked inner framing */
	struct chunk_dec ick;
	struct http_request req;
	char buf[HTTP_MAX_HEADER_BYTES];
	char path[HTTP_MAX_REQUEST_LINE + 1];
};

struct http_parser *http_parser_new(void)
{
	struct http_parser *p = calloc(1, sizeof(*p));

	if (p)
		http_parser_reset(p);
	return p;
}

void http_parser_free(struct http_parser *p)
{
	free(p);
}

void http_parser_reset(struct http_parser *p)
{
	if (!p || p->st == PS_ERROR)
		return; /* an error is final: the connection must close */
	memset(p, 0, offsetof(struct http_parser, buf));
	p->st = PS_START;
}

const struct http_request *http_parser_request(const struct http_parser *p)
{
	return (p && p->headers_done) ? &p->req : NULL;
}

int http_parser_error_status(const struct http_parser *p)
{
	if (!p)
		return 400;
	return p->st == PS_ERROR ? p->status : 0;
}

static size_t fail(struct http_parser *p, int status, size_t used, enum http_event *ev)
{
	p->st = PS_ERROR;
	p->status = status;
	*ev = HTTP_EV_ERROR;
	return used;
}

static bool is_method_char(unsigned char c)
{
	return http_is_token_char(c) && !(c >= 'a' && c <= 'z');
}

/* The request line s[0..n), NUL-terminated at s[n]; parsed in place. */
static int parse_request_line(struct http_parser *p, char *s, size_t n)
{
	struct http_request *r = &p->req;
	char *sp1, *sp2, *target, *version, *q;
	size_t mlen, tlen, vlen, plen, i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c != ' ' && (c <= 0x20 || c >= 0x7f))
			return 400;
	}
	sp1 = memchr(s, ' ', n);
	if (!sp1)
		return 400;
	mlen = (size_t)(sp1 - s);
	if (mlen == 0 || mlen >= sizeof(r->method))
		return 400;
	for (i = 0; i < mlen; i++)
		if (!is_method_char((unsigned char)s[i]))
			return 400;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', n - mlen - 1);
	if (!sp2)
		return 400;
	tlen = (size_t)(sp2 - target);
	version = sp2 + 1;
	vlen = n - (size_t)(version - s);
	if (tlen == 0 || memchr(version, ' ', vlen))
		return 400;
	if (vlen != 8 || memcmp(version, "HTTP/", 5) != 0 || hexval((unsigned char)version[5]) < 0 ||
	    hexval((unsigned char)version[5]) > 9 || version[6] != '.' ||
	    hexval((unsigned char)version[7]) < 0 || hexval((unsigned char)version[7]) > 9)
		return 400;
	if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
		return 505;
	if (target[0] != '/')
		return 400; /* origin-form only */

	memcpy(r->method, s, mlen);
	r->method[mlen] = '\0';
	r->version_minor = version[7] - '0';
	*sp2 = '\0';
	r->target = target;
	q = memchr(target, '?', tlen);
	plen = q ? (size_t)(q - target) : tlen;
	r->query = q ? q + 1 : target + tlen;
	if (http_percent_decode(target, plen, p->path, sizeof(p->path)) < 0)
		return 400;
	r->path = p->path;
	return 0;
}

/* A header line s[0..n), NUL-terminated at s[n]; split in place. */
static int parse_header_line(struct http_parser *p, char *s, size_t n)
{
	struct http_request *r = &p->req;
	size_t colon, vs, ve;

	if (is_ows((unsigned char)s[0]))
		return 400; /* obsolete line folding (or space before the first field) */
	if (r->nheaders >= HTTP_MAX_HEADERS)
		return 431;
	for (colon = 0; colon < n && s[colon] != ':'; colon++)
		if (!http_is_token_char((unsigned char)s[colon]))
			return 400;
	if (colon == 0 || colon == n)
		return 400;
	if (!http_all_field_chars(s + colon + 1, n - colon - 1))
		return 400;
	s[colon] = '\0';
	vs = colon + 1;
	ve = n;
	while (vs < ve && is_ows((unsigned char)s[vs]))
		vs++;
	while (ve > vs && is_ows((unsigned char)s[ve - 1]))
		ve--;
	s[ve] = '\0';
	r->headers[r->nheaders].name = s;
	r->headers[r->nheaders].value = s + vs;
	r->nheaders++;
	return 0;
}

/* Decimal, digits only; 400 if not, 413 above INT64_MAX. */
static int parse_length(const char *v, uint64_t *out)
{
	uint64_t n = 0;
	bool over = false;
	size_t i;

	if (v[0] == '\0')
		return 400;
	for (i = 0; v[i]; i++) {
		unsigned d;

		if (v[i] < '0' || v[i] > '9')
			return 400;
		d = (unsigned)(v[i] - '0');
		if (n > ((uint64_t)INT64_MAX - d) / 10)
			over = true;
		else
			n = n * 10 + d;
	}
	if (over)
		return 413;
	*out = n;
	return 0;
}

/* Headers complete: derive framing, keep-alive and expectations. */
static int finish_headers(struct http_parser *p)
{
	struct http_request *r = &p->req;
	bool conn_close = false, conn_keep = false, expect = false, te_ok = true;
	unsigned te = 0, i;
	int s;

	for (i = 0; i < r->nheaders; i++) {
		const char *n = r->headers[i].name, *v = r->headers[i].value;
		uint64_t len;

		if (ieq(n, "content-length")) {
			s = parse_length(v, &len);
			if (s)
				return s;
			if (r->has_content_length && r->content_length != len)
				return 400;
			r->has_content_length = true;
			r->content_length = len;
		} else if (ieq(n, "x-amz-decoded-content-length")) {
			s = parse_length(v, &len);
			if (s)
				return s;
			if (r->has_decoded_length && r->decoded_length != len)
				return 400;
			r->has_decoded_length = true;
			r->decoded_length = len;
		} else if (ieq(n, "transfer-encoding")) {
			te++;
			if (!ieq(v, "chunked"))
				te_ok = false;
		} else if (ieq(n, "content-encoding")) {
			if (list_has(v, "aws-chunked"))
				r->aws_chunked = true;
		} else if (ieq(n, "connection")) {
			if (list_has(v, "close"))
				conn_close = true;
			if (list_has(v, "keep-alive"))
				conn_keep = true;
		} else if (ieq(n, "expect")) {
			if (ieq(v, "100-continue"))
				expect = true;
		}
	}
	if (te && r->has_content_length)
		return 400; /* request smuggling territory */
	if (te > 1 || !te_ok)
		return 501; /* anything but a single "chunked" */
	r->chunked = te == 1;
	if (r->version_minor >= 1)
		r->keep_alive = !conn_close;
	else /* HTTP/1.0: opt-in; a 1.0 message with chunked framing is not trusted further */
		r->keep_alive = conn_keep && !conn_close && !r->chunked;
	r->expect_continue = expect && r->version_minor >= 1; /* RFC 7231 5.1.1: ignored for 1.0 */
	if (r->aws_chunked && (!r->has_decoded_length || (!r->chunked && !r->has_content_length)))
		return 400;

	if (r->chunked) {
		p->outer = OUT_CHUNKED;
		ck_init(&p->ock, INT64_MAX, 413, false);
	} else if (r->has_content_length && r->content_length > 0) {
		p->outer = OUT_LENGTH;
		p->remaining = r->content_length;
	} else {
		p->outer = OUT_NONE;
	}
	p->aws = r->aws_chunked;
	if (p->aws)
		ck_init(&p->ick, r->decoded_length, 400, true);
	return 0;
}

/* A complete line [line_start, pos) of the header section. */
static int head_line_end(struct http_parser *p, bool *headers_complete)
{
	size_t start = p->line_start, n = p->pos - start;
	int s;

	if (p->pos >= sizeof(p->buf))
		return 431;
	p->buf[p->pos++] = '\0';
	if (p->in_request_line) {
		p->in_request_line = false;
		s = parse_request_line(p, p->buf + start, n);
	} else if (n == 0) {
		p->pos--; /* the empty line is not stored */
		*headers_complete = true;
		s = finish_headers(p);
	} else {
		s = parse_header_line(p, p->buf + start, n);
	}
	p->line_start = p->pos;
	return s;
}

static size_t parse_head(struct http_parser *p, const uint8_t *in, size_t len, enum http_event *ev)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = in[i];
		bool eol = false, complete = false;
		int s;

		if (p->st == PS_START) {
			if (c == '\r' || c == '\n') {
				if (++p->leading > LEADING_EMPTY_MAX)
					return fail(p, 400, i + 1, ev);
				if (c == '\r' && p->cr)
					return fail(p, 400, i + 1, ev);
				p->cr = c == '\r';
				continue;
			}
			if (p->cr)
				return fail(p, 400, i + 1, ev); /* bare CR */
			p->st = PS_HEAD;
			p->in_request_line = true;
		}

		if (!p->cr && c != '\r' && c != '\n') {
			/*
			 * A run of the line's bytes, up to the next CR or LF, stored in one
			 * copy: the byte-by-byte checks below, done once for the run (the
			 * first byte that would fail them fails here, with the same status).
			 */
			const uint8_t *lf = memchr(in + i, '\n', len - i), *cr;
			size_t end = lf ? (size_t)(lf - in) : len, run, lim, at = SIZE_MAX;
			int status = 431;

			if ((cr = memchr(in + i, '\r', end - i)) != NULL)
				end = (size_t)(cr - in);
			run = end - i;
			if (p->in_request_line) {
				size_t used = p->pos - p->line_start;

				at = used >= HTTP_MAX_REQUEST_LINE ? 0 : HTTP_MAX_REQUEST_LINE - used;
				if (at < run)
					status = 414;
			}
			lim = HTTP_MAX_HEADER_BYTES - p->raw;   /* raw never passes the limit */
			if (lim < at)
				at = lim, status = 431;
			lim = sizeof(p->buf) - p->pos;
			if (lim < at)
				at = lim, status = 431;
			if (at < run)
				return fail(p, status, i + at + 1, ev);
			memcpy(p->buf + p->pos, in + i, run);
			p->pos += run;
			p->raw += run;
			i = end - 1;
			continue;
		}
		if (p->cr) {
			if (c != '\n')
				return fail(p, 400, i + 1, ev);
			p->cr = false;
			eol = true;
		} else if (c == '\r') {
			p->cr = true;
		} else if (c == '\n') {
			eol = true;
		} else {
			if (p->in_request_line && p->pos - p->line_start >= HTTP_MAX_REQUEST_LINE)
				return fail(p, 414, i + 1, ev);
		}
		if (++p->raw > HTTP_MAX_HEADER_BYTES)
			return fail(p, 431, i + 1, ev);
		if (c == '\r')
			continue;
		if (!eol) {
			if (p->pos >= sizeof(p->buf))
				return fail(p, 431, i + 1, ev);
			p->buf[p->pos++] = (char)c;
			continue;
		}
		s = head_line_end(p, &complete);
		if (s)
			return fail(p, s, i + 1, ev);
		if (complete) {
			p->headers_done = true;
			p->st = PS_BODY;
			*ev = HTTP_EV_HEADERS;
			return i + 1;
		}
	}
	*ev = HTTP_EV_NEED_MORE;
	return len;
}

static void outer_consume(struct http_parser *p, size_t n)
{
	if (p->outer == OUT_LENGTH)
		p->remaining -= n;
	else if (p->outer == OUT_CHUNKED)
		ck_consume(&p->ock, n);
}

static size_t parse_body(struct http_parser *p, const uint8_t *in, size_t len, enum http_event *ev,
			 const uint8_t **body, size_t *body_len)
{
	size_t off = 0;

	for (;;) {
		bool outer_done = false;
		size_t avail = 0, n;
		int s;

		/* Outer layer: the span of body bytes available now. */
		switch (p->outer) {
		case OUT_NONE:
			outer_done = true;
			break;
		case OUT_LENGTH:
			if (p->remaining == 0)
				outer_done = true;
			else
				avail = (uint64_t)(len - off) < p->remaining ? len - off : (size_t)p->remaining;
			break;
		case OUT_CHUNKED:
			if (p->ock.st != CK_DATA) {
				s = ck_frame(&p->ock, in + off, len - off, &n);
				off += n;
				if (s)
					return fail(p, s, off, ev);
			}
			if (p->ock.st == CK_DONE)
				outer_done = true;
			else if (p->ock.st == CK_DATA)
				avail = (uint64_t)(len - off) < p->ock.remaining ? len - off
										  : (size_t)p->ock.remaining;
			break;
		}
		if (outer_done) {
			if (p->aws && p->ick.st != CK_DONE)
				return fail(p, 400, off, ev); /* aws-chunked framing cut short */
			p->st = PS_DONE;
			*ev = HTTP_EV_DONE;
			return off;
		}
		if (avail == 0) {
			*ev = HTTP_EV_NEED_MORE;
			return off;
		}

		/* Inner layer over that span. */
		if (!p->aws) {
			*body = in + off;
			*body_len = avail;
			outer_consume(p, avail);
			*ev = HTTP_EV_BODY;
			return off + avail;
		}
		if (p->ick.st == CK_DONE)
			return fail(p, 400, off + 1, ev); /* bytes after the aws-chunked end */
		if (p->ick.st == CK_DATA) {
			n = (uint64_t)avail < p->ick.remaining ? avail : (size_t)p->ick.remaining;
			*body = in + off;
			*body_len = n;
			ck_consume(&p->ick, n);
			outer_consume(p, n);
			*ev = HTTP_EV_BODY;
			return off + n;
		}
		s = ck_frame(&p->ick, in + off, avail, &n);
		outer_consume(p, n);
		off += n;
		if (s)
			return fail(p, s, off, ev);
	}
}

size_t http_parse(struct http_parser *p, const uint8_t *in, size_t len, enum http_event *ev,
		  const uint8_t **body, size_t *body_len)
{
	enum http_event ev_dummy;
	const uint8_t *body_dummy;
	size_t len_dummy;

	if (!ev)
		ev = &ev_dummy;
	if (!body)
		body = &body_dummy;
	if (!body_len)
		body_len = &len_dummy;
	*body = NULL;
	*body_len = 0;
	if (!p) {
		*ev = HTTP_EV_ERROR;
		return 0;
	}
	if (!in)
		len = 0;
	switch (p->st) {
	case PS_START:
	case PS_HEAD:
		return parse_head(p, in, len, ev);
	case PS_BODY:
		return parse_body(p, in, len, ev, body, body_len);
	case PS_DONE:
		*ev = HTTP_EV_DONE;
		return 0;
	case PS_ERROR:
		break;
	}
	*ev = HTTP_EV_ERROR;
	return 0;
}

const char *http_header_get(const struct http_request *r, const char *name)
{
	unsigned i;

	if (!r || !name)
		return NULL;
	for (i = 0; i < r->nheaders && i < HTTP_MAX_HEADERS; i++)
		if (ieq(name, r->headers[i].name))
			return r->headers[i].value;
	return NULL;
}

const char *http_parser_trailer(const struct http_parser *p, const char *name)
{
	const struct chunk_dec *layers[2];

	if (p == NULL || p->st != PS_DONE)
		return NULL;
	layers[0] = p->aws ? &p->ick : NULL;
	layers[1] = p->outer == OUT_CHUNKED ? &p->ock : NULL;
	for (int l = 0; l < 2; l++) {
		const struct chunk_dec *c = layers[l];

		for (size_t off = 0; c && off < c->kept_len;) {
			const char *n = c->kept + off, *v = n + strlen(n) + 1;

			if (strcasecmp(n, name) == 0)
				return v;
			off = (size_t)(v - c->kept) + strlen(v) + 1;
		}
	}
	return NULL;
}
