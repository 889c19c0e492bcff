/*
 * The HTTP/1.1 subset the S3 endpoint speaks: an incremental request parser
 * that accepts input cut anywhere (one byte at a time works) and response
 * head assembly. Knows nothing of TCP, sockets or S3.
 *
 * Parser
 * - Request line "METHOD SP request-target SP HTTP/1.x" (x = 0 or 1), CRLF
 *   line ends (a bare LF is accepted too); origin-form targets only.
 * - Headers: names case-insensitive, values with surrounding white space
 *   trimmed, obsolete line folding refused.
 * - Bodies: Content-Length, or Transfer-Encoding: chunked (chunk extensions
 *   ignored, trailers read and dropped); none for a request without either.
 *   Content-Encoding: aws-chunked (what AWS SDKs and aws-cli send for
 *   streaming uploads): the body is "<hex-size>[;chunk-signature=...]\r\n
 *   <data>\r\n" chunks ending with a 0-size chunk and optional trailing
 *   headers (x-amz-checksum-*); the decoded payload is delivered and
 *   x-amz-decoded-content-length (required then) must match it. aws-chunked
 *   framing may itself travel inside a Content-Length or a chunked body.
 * - Keep-alive: HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with
 *   "Connection: keep-alive". Pipelined requests: parsing stops at the end of
 *   each message; the caller resets and feeds the rest.
 * - Expect: 100-continue is reported; answering it is the caller's business.
 * - Limits: request line HTTP_MAX_REQUEST_LINE bytes, HTTP_MAX_HEADERS
 *   headers, HTTP_MAX_HEADER_BYTES bytes of request line plus headers, chunk
 *   size lines of 256 bytes. Violations end parsing with an error status:
 *   400 for malformed input, 414 for a long request line, 431 for too many or
 *   too large headers, 413 for a body size that does not fit in 63 bits,
 *   501 for a transfer coding other than chunked, 505 for another HTTP version.
 *   After an error the connection must be closed (the parser stays in error).
 *
 * Path and query: the path is percent-decoded (a decoded NUL, or a "%" not
 * followed by two hex digits, is a 400); the raw query string is kept and
 * http_query_get() decodes one parameter ("+" stays "+", as S3 signs it).
 */
#ifndef ERNIC_S3_S3_HTTP_H
#define ERNIC_S3_S3_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_REQUEST_LINE 8192
#define HTTP_MAX_HEADERS      64
#define HTTP_MAX_HEADER_BYTES 16384

struct http_header {
	const char *name;   /* NUL-terminated, as received */
	const char *value;  /* NUL-terminated, trimmed */
};

struct http_request {
	char method[16];
	const char *target;  /* the raw request-target */
	const char *path;    /* percent-decoded path, starts with "/" */
	const char *query;   /* raw query string without "?", "" if none */
	int version_minor;   /* HTTP/1.<version_minor> */
	struct http_header headers[HTTP_MAX_HEADERS];
	unsigned nheaders;
	bool has_content_length;
	uint64_t content_length;     /* as sent (framed length for aws-chunked) */
	bool chunked;                /* Transfer-Encoding: chunked */
	bool aws_chunked;            /* Content-Encoding includes aws-chunked */
	bool has_decoded_length;
	uint64_t decoded_length;     /* x-amz-decoded-content-length */
	bool keep_alive;
	bool expect_continue;
};

enum http_event {
	HTTP_EV_NEED_MORE,   /* all input consumed, nothing to report */
	HTTP_EV_HEADERS,     /* request line and headers complete: http_parser_request() is valid */
	HTTP_EV_BODY,        /* *body, *body_len: decoded body bytes (pointing into the input) */
	HTTP_EV_DONE,        /* the message is complete; call http_parser_reset() for the next */
	HTTP_EV_ERROR,       /* http_parser_error_status() says which; close the connection */
};

struct http_parser; /* opaque; see s3_http.c */

struct http_parser *http_parser_new(void);
void http_parser_free(struct http_parser *p);

/* Forget the finished message (or a fresh start); keeps buffers. Not after an error. */
void http_parser_reset(struct http_parser *p);

/*
 * Feed up to len bytes. Returns how many were consumed and sets *ev. Stops
 * after each event, so a caller loops: feed, handle the event, feed the rest,
 * until HTTP_EV_NEED_MORE, HTTP_EV_DONE or HTTP_EV_ERROR, also when no bytes
 * are left (the DONE after a message's last byte comes from such a call).
 * HTTP_EV_BODY points *body into in (no copy). At HTTP_EV_DONE the bytes
 * after the message are not consumed.
 */
size_t http_parse(struct http_parser *p, const uint8_t *in, size_t len, enum http_event *ev,
		  const uint8_t **body, size_t *body_len);

/* The request whose headers are complete (valid from HTTP_EV_HEADERS until reset). */
const struct http_request *http_parser_request(const struct http_parser *p);
/* After HTTP_EV_DONE: the value of the body's trailer field name (aws-chunked layer first), or NULL. */
const char *http_parser_trailer(const struct http_parser *p, const char *name);

/* After HTTP_EV_ERROR: 400, 413, 414, 431, 501 or 505. */
int http_parser_error_status(const struct http_parser *p);

/* First header of that name (case-insensitive), or NULL. */
const char *http_header_get(const struct http_request *r, const char *name);

/*
 * Find query parameter key and percent-decode its value into out.
 * Returns the decoded length, 0 for a key present without "=value",
 * -ENOENT if absent, -EINVAL if malformed, -ENOSPC if it does not fit.
 */
int http_query_get(const struct http_request *r, const char *key, char *out, size_t outlen);
bool http_query_has(const struct http_request *r, const char *key);

/* Percent-decode [in, in+len) into out (NUL-terminated); -EINVAL or -ENOSPC. */
int http_percent_decode(const char *in, size_t len, char *out, size_t outlen);

/*
 * RFC 9110's token characters (5.6.2 tchar: a visible ASCII character but for the delimiters
 * DQUOTE and "(),/:;<=>?@[\]{}") and field-value characters (5.5: HTAB, SP, VCHAR, obs-text):
 * what a header name and value may hold. They run on every byte of every header, in and out, so
 * each octet's class is looked up in a table of 256 made at compile time from the one definition
 * of each class below (bit 0: token, bit 1: field), and a whole string is checked in one pass of
 * loads and ANDs with no early exit; a chain of compares per byte had been 8% of the server's
 * user time for an S3 GET of 4 KiB.
 */
#define HTTP_TOKEN_CHAR(c)                                                                                   \
	((c) > 0x20 && (c) < 0x7f && (c) != '"' && (c) != '(' && (c) != ')' && (c) != ',' && (c) != '/' &&   \
	 !((c) >= ':' && (c) <= '@') && (c) != '[' && (c) != '\\' && (c) != ']' && (c) != '{' && (c) != '}')
#define HTTP_FIELD_CHAR(c) ((c) == '\t' || ((c) >= 0x20 && (c) != 0x7f))

#define HTTP_CLASS_TOKEN 1u
#define HTTP_CLASS_FIELD 2u

extern const uint8_t http_char_class[256];

static inline bool http_is_token_char(unsigned char c)
{
	return (http_char_class[c] & HTTP_CLASS_TOKEN) != 0;
}

static inline bool http_is_field_char(unsigned char c)
{
	return (http_char_class[c] & HTTP_CLASS_FIELD) != 0;
}

/* Every byte of [s, s + n) in the classes of mask (true for n == 0). */
static inline bool http_all_class(const char *s, size_t n, unsigned mask)
{
	unsigned acc = mask;

	for (size_t i = 0; i < n; i++)
		acc &= http_char_class[(unsigned char)s[i]];
	return acc == mask;
}

static inline bool http_all_token_chars(const char *s, size_t n)
{
	return http_all_class(s, n, HTTP_CLASS_TOKEN);
}

static inline bool http_all_field_chars(const char *s, size_t n)
{
	return http_all_class(s, n, HTTP_CLASS_FIELD);
}

/* Standard reason phrase ("OK", "Partial Content", ...); "Unknown" otherwise. */
const char *http_reason(int status);

/* RFC 7231 IMF-fixdate of t: "Sun, 06 Nov 1994 08:49:37 GMT" (29 characters + NUL). */
void http_format_date(int64_t unix_time, char out[30]);
/* An HTTP-date (IMF-fixdate, or the obsolete RFC 850 and asctime forms): 0, or -EINVAL. */
int http_parse_date(const char *s, int64_t *out);

struct http_response_head {
	int status;
	uint64_t content_length;
	bool keep_alive;
	const struct http_header *headers; /* extra headers, in order */
	unsigned nheaders;
};

/*
 * "HTTP/1.1 <status> <reason>\r\n", Date (now), Server, Content-Length (none
 * for 1xx and 204, RFC 7230 3.3.2), Connection: keep-alive|close, the extra
 * headers, and the blank line. Returns the length (out is NUL-terminated, so
 * cap must exceed it), -ENOSPC (nothing usable written), or -EINVAL for a
 * status outside 100..999 or an extra header whose name is not a token or
 * whose value holds CR, LF or another control character.
 */
int http_format_response_head(const struct http_response_head *h, char *out, size_t cap);

#endif
