/*
 * The response side of the S3 endpoint's HTTP/1.1 (see s3_http.h): reason
 * phrases, response heads, and HTTP-dates both ways. The request parser is
 * s3_http.c.
 */
#include "s3/s3_http.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- responses ------------------------------------------------------------ */

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

static void put2(char *o, int v)
{
	o[0] = (char)('0' + v / 10 % 10);
	o[1] = (char)('0' + v % 10);
}

void http_format_date(int64_t unix_time, char out[30])
{
	static const char wday[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char mon[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	const int64_t max = 253402300799; /* 9999-12-31 23:59:59: four-digit years only */
	struct tm tm;
	time_t t;

	if (unix_time < 0)
		unix_time = 0;
	if (unix_time > max)
		unix_time = max;
	t = (time_t)unix_time;
	if (!gmtime_r(&t, &tm) || tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 || tm.tm_mon > 11) {
		memcpy(out, "Thu, 01 Jan 1970 00:00:00 GMT", 30);
		return;
	}
	/* "Sun, 06 Nov 1994 08:49:37 GMT" */
	memcpy(out, wday[tm.tm_wday], 3);
	memcpy(out + 3, ", ", 2);
	put2(out + 5, tm.tm_mday);
	out[7] = ' ';
	memcpy(out + 8, mon[tm.tm_mon], 3);
	out[11] = ' ';
	put2(out + 12, (tm.tm_year + 1900) / 100);
	put2(out + 14, (tm.tm_year + 1900) % 100);
	out[16] = ' ';
	put2(out + 17, tm.tm_hour);
	out[19] = ':';
	put2(out + 20, tm.tm_min);
	out[22] = ':';
	put2(out + 23, tm.tm_sec);
	memcpy(out + 25, " GMT", 5);
}

/* Appends len bytes of s at out + *n (cap bytes in all, one kept for the terminating NUL). */
static bool put_mem(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
	if (len >= cap - *n)
		return false;
	memcpy(out + *n, s, len);
	*n += len;
	out[*n] = '\0';
	return true;
}

static bool put_str(char *out, size_t cap, size_t *n, const char *s)
{
	return put_mem(out, cap, n, s, strlen(s));
}

/* v in decimal. (A response head is written for every request: no printf on that path.) */
static bool put_u64(char *out, size_t cap, size_t *n, unsigned long long v)
{
	char d[20];
	size_t k = sizeof(d);

	do {
		d[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return put_mem(out, cap, n, d + k, sizeof(d) - k);
}

/* A string literal, its length known to the compiler. */
#define PUT_LIT(out, cap, n, lit) put_mem(out, cap, n, lit, sizeof(lit) - 1)

/*
 * Whether s may stand as a header's name (a token, not empty) or value (field-content): no byte
 * that would let the header end early. *len: its length.
 */
static bool safe_field(const char *s, bool name, size_t *len)
{
	if (!s || (name && !*s))
		return false;
	*len = strlen(s);
	return name ? http_all_token_chars(s, *len) : http_all_field_chars(s, *len);
}

/* A header's name or value, checked, then copied: 0, -EINVAL when unsafe, -ENOSPC when it does not fit. */
static int put_field(char *out, size_t cap, size_t *n, const char *s, bool name)
{
	size_t len;

	if (!safe_field(s, name, &len))
		return -EINVAL;
	return put_mem(out, cap, n, s, len) ? 0 : -ENOSPC;
}

int http_format_response_head(const struct http_response_head *h, char *out, size_t cap)
{
	char date[30];
	size_t n = 0;
	bool ok;
	unsigned i;
	int rc = 0;

	if (!out || cap == 0)
		return -ENOSPC;
	out[0] = '\0';
	if (!h || h->status < 100 || h->status > 999 || (h->nheaders && !h->headers))
		return -EINVAL;
	{
		/* The Date of this second, made once a second (gmtime's cost would be every response's). */
		static _Thread_local int64_t date_of = -1;
		static _Thread_local char date_str[30];
		int64_t now = (int64_t)time(NULL);

		if (now != date_of) {
			http_format_date(now, date_str);
			date_of = now;
		}
		memcpy(date, date_str, sizeof(date));
	}
	ok = PUT_LIT(out, cap, &n, "HTTP/1.1 ") && put_u64(out, cap, &n, (unsigned)h->status) &&
	     PUT_LIT(out, cap, &n, " ") && put_str(out, cap, &n, http_reason(h->status)) &&
	     PUT_LIT(out, cap, &n, "\r\nDate: ") && put_mem(out, cap, &n, date, 29) &&
	     PUT_LIT(out, cap, &n, "\r\nServer: rocm-ernic\r\n");
	/* RFC 7230 3.3.2: no Content-Length in 1xx and 204 responses */
	if (ok && h->status >= 200 && h->status != 204)
		ok = PUT_LIT(out, cap, &n, "Content-Length: ") &&
		     put_u64(out, cap, &n, (unsigned long long)h->content_length) && PUT_LIT(out, cap, &n, "\r\n");
	if (ok)
		ok = h->keep_alive ? PUT_LIT(out, cap, &n, "Connection: keep-alive\r\n")
				   : PUT_LIT(out, cap, &n, "Connection: close\r\n");
	/* No response splitting through an extra header: each is checked as it is copied. */
	for (i = 0; ok && rc == 0 && i < h->nheaders; i++) {
		rc = put_field(out, cap, &n, h->headers[i].name, true);
		if (rc == 0 && !PUT_LIT(out, cap, &n, ": "))
			rc = -ENOSPC;
		if (rc == 0)
			rc = put_field(out, cap, &n, h->headers[i].value, false);
		if (rc == 0 && !PUT_LIT(out, cap, &n, "\r\n"))
			rc = -ENOSPC;
	}
	if (ok && rc == 0)
		ok = PUT_LIT(out, cap, &n, "\r\n");
	if (!ok || rc != 0 || n > INT_MAX) {
		out[0] = '\0';
		/* An unsafe header is refused as such, even where the space ran out first. */
		for (i = 0; i < h->nheaders; i++) {
			size_t len;

			if (!safe_field(h->headers[i].name, true, &len) || !safe_field(h->headers[i].value, false, &len))
				return -EINVAL;
		}
		return -ENOSPC;
	}
	return (int)n;
}

int http_parse_date(const char *s, int64_t *out)
{
	/* RFC 9110's preferred form, then the two obsolete ones a recipient must accept. */
	static const char *const forms[] = {
		"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y",
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct tm tm;
		const char *end;

		memset(&tm, 0, sizeof(tm));
		end = strptime(s, forms[i], &tm);
		if (end == NULL)
			continue;
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end != '\0')
			continue;
		*out = (int64_t)timegm(&tm);
		return 0;
	}
	return -EINVAL;
}
