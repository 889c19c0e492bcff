/*
 * Text, XML and response building for the S3 store, and the S3 XML error
 * every failure answers with (from the one table in s3_err.c).
 */
#include "s3/s3_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- text */

static void sb_reserve(struct sbuf *s, size_t more)
{
	size_t cap;
	char *p;

	if (s->oom || s->len + more + 1 <= s->cap)
		return;
	cap = s->cap ? s->cap : 1024;
	while (cap < s->len + more + 1)
		cap *= 2;
	p = realloc(s->p, cap);
	if (p == NULL) {
		s->oom = true;
		return;
	}
	s->p = p;
	s->cap = cap;
}

void sb_add(struct sbuf *s, const char *str, size_t n)
{
	sb_reserve(s, n);
	if (s->oom)
		return;
	memcpy(s->p + s->len, str, n);
	s->len += n;
	s->p[s->len] = '\0';
}

void sb_puts(struct sbuf *s, const char *str)
{
	sb_add(s, str, strlen(str));
}

void sb_printf(struct sbuf *s, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_add(s, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Escape text for XML character data; control characters become numeric references. */
void sb_xml(struct sbuf *s, const char *str)
{
	for (; *str; str++) {
		unsigned char c = (unsigned char)*str;

		switch (c) {
		case '&': sb_puts(s, "&amp;"); break;
		case '<': sb_puts(s, "&lt;"); break;
		case '>': sb_puts(s, "&gt;"); break;
		case '"': sb_puts(s, "&quot;"); break;
		case '\'': sb_puts(s, "&apos;"); break;
		default:
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				sb_printf(s, "&#x%X;", c);
			else
				sb_add(s, (const char *)&c, 1);
		}
	}
}

void sb_tag(struct sbuf *s, const char *tag, const char *text)
{
	sb_printf(s, "<%s>", tag);
	sb_xml(s, text);
	sb_printf(s, "</%s>", tag);
}

void iso8601(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

void hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void md5_digest(const uint8_t *data, size_t len, uint8_t out[16])
{
	unsigned int n = 16;

	if (EVP_Digest(data ? data : (const uint8_t *)"", len, out, &n, EVP_md5(), NULL) != 1)
		memset(out, 0, 16);
}

void etag_of(const uint8_t digest[16], char out[48])
{
	char hex[33];

	hex_encode(digest, 16, hex);
	snprintf(out, 48, "\"%s\"", hex);
}

/* ---------------------------------------------------------------- responses */

void s3_response_release(struct s3_response *r)
{
	free(r->xml);
	s3_blob_put(r->blob);
	r->xml = NULL;
	r->blob = NULL;
}

/* Move a response: its header pointers follow the header storage they point into. */
void response_move(struct s3_response *dst, const struct s3_response *src)
{
	/* Field by field: only the used part of the header storage is copied. */
	dst->status = src->status;
	dst->nheaders = src->nheaders;
	dst->hdrused = src->hdrused;
	memcpy(dst->hdrbuf, src->hdrbuf, src->hdrused);
	dst->content_length = src->content_length;
	dst->send_body = src->send_body;
	dst->xml = src->xml;
	dst->blob = src->blob;
	dst->off = src->off;
	dst->len = src->len;
	dst->close = src->close;
	for (unsigned i = 0; i < dst->nheaders; i++) {
		dst->headers[i].name = dst->hdrbuf + (src->headers[i].name - src->hdrbuf);
		dst->headers[i].value = dst->hdrbuf + (src->headers[i].value - src->hdrbuf);
	}
}

void resp_header(struct s3_response *r, const char *name, const char *fmt, ...)
{
	size_t nlen = strlen(name) + 1, room;
	va_list ap;
	int n;

	if (r->nheaders == S3_MAX_RESP_HEADERS || r->hdrused + nlen + 2 > sizeof(r->hdrbuf))
		return;
	room = sizeof(r->hdrbuf) - r->hdrused - nlen;
	va_start(ap, fmt);
	if (strchr(fmt, '%') == NULL || strcmp(fmt, "%s") == 0) {
		/* A constant, or one string: copied (every response has several; printf is not free). */
		const char *v = fmt[0] == '%' ? va_arg(ap, const char *) : fmt;
		size_t vl = strlen(v);

		n = vl < room ? (int)vl : -1;
		if (n >= 0)
			memcpy(r->hdrbuf + r->hdrused + nlen, v, vl + 1);
	} else {
		n = vsnprintf(r->hdrbuf + r->hdrused + nlen, room, fmt, ap);
	}
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		return;
	memcpy(r->hdrbuf + r->hdrused, name, nlen);
	r->headers[r->nheaders].name = r->hdrbuf + r->hdrused;
	r->headers[r->nheaders].value = r->hdrbuf + r->hdrused + nlen;
	r->nheaders++;
	r->hdrused += nlen + (size_t)n + 1;
}

void resp_header_u64(struct s3_response *r, const char *name, uint64_t v)
{
	char d[21];
	size_t k = sizeof(d) - 1;

	d[k] = '\0';
	do {
		d[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	resp_header(r, name, "%s", d + k);
}

void resp_xml(struct s3_response *r, struct sbuf *s)
{
	if (s->oom) {
		free(s->p);
		r->status = 500;
		r->content_length = 0;
		r->send_body = false;
		return;
	}
	resp_header(r, "Content-Type", "application/xml");
	r->xml = s->p;
	r->content_length = s->len;
	r->send_body = true;
}

void op_error(struct s3_op *op, enum s3_err e, const char *detail)
{
	const struct s3_err_desc *d = s3_err_desc(e);
	struct s3_response *r = &op->resp;
	struct sbuf s = { 0 };

	s3_response_release(r);
	r->status = d->status;
	r->send_body = false;
	r->content_length = 0;
	sb_puts(&s, XML_DECL "<Error>");
	sb_tag(&s, "Code", d->code);
	sb_tag(&s, "Message", detail ? detail : d->message);
	sb_tag(&s, "Resource", op->resource);
	sb_tag(&s, "RequestId", op->request_id);
	sb_puts(&s, "</Error>");
	resp_xml(r, &s);
	op->kind = OP_DECIDED;
}


void ok_empty(struct s3_op *op, int status)
{
	op->resp.status = status;
	op->resp.content_length = 0;
	op->resp.send_body = false;
	op->kind = OP_DECIDED;
}

const char *xml_local_name(const char *name)
{
	const char *c = strrchr(name, ':');

	return c ? c + 1 : name;
}
