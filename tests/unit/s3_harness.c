/*
 * The S3 unit tests' harness: a store and a transport-less connection
 * (s3_conn) driven with raw HTTP, and a fake set of DMA ops standing in for
 * the guest's registered memory. See s3_harness.h.
 */
#include "s3_harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_token.h"
#include "util/backend_opts.h"

/* ---- fake guest memory: registrations by key ---- */


struct fake_mr mrs[4];
unsigned nmrs;
unsigned dma_calls;

struct fake_mr *mr_find(uint32_t key)
{
	for (unsigned i = 0; i < nmrs; i++)
		if (mrs[i].key == key)
			return &mrs[i];
	return NULL;
}

static int fake_check(struct fake_mr *m, uint64_t addr, size_t len)
{
	if (addr < m->addr || addr - m->addr > m->len || len > m->len - (addr - m->addr))
		return -EFAULT;
	return 0;
}

/* What a read (write false) or write of [addr, addr + len) under key would answer. */
static int fake_access(uint32_t key, uint64_t addr, size_t len, bool write)
{
	struct fake_mr *m = mr_find(key);

	if (key == 0 || m == NULL)
		return -ENOKEY;
	if (write ? !m->writable : !m->readable)
		return -EACCES;
	return fake_check(m, addr, len);
}

static int fake_read(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len)
{
	int rc = fake_access(key, addr, len, false);

	(void)ctx;
	dma_calls++;
	if (rc == 0)
		memcpy(dst, mr_find(key)->buf + (addr - mr_find(key)->addr), len);
	return rc;
}

static int fake_write(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len)
{
	int rc = fake_access(key, addr, len, true);

	(void)ctx;
	dma_calls++;
	if (rc == 0)
		memcpy(mr_find(key)->buf + (addr - mr_find(key)->addr), src, len);
	return rc;
}

bool dma_check_passes;

static int fake_dma_check(void *ctx, uint32_t key, uint64_t addr, size_t len, bool write)
{
	(void)ctx;
	return dma_check_passes ? 0 : fake_access(key, addr, len, write);
}

static const struct dma_ops fake_ops = { .read = fake_read, .write = fake_write, .check = fake_dma_check };

struct fake_mr *add_mr(uint32_t key, uint64_t addr, size_t len)
{
	struct fake_mr *m = &mrs[nmrs++];

	m->key = key;
	m->addr = addr;
	m->len = len;
	m->buf = calloc(1, len);
	m->readable = m->writable = true;
	return m;
}

/* ---- a store and a connection, raw HTTP both ways ---- */

struct s3_store *st;
struct s3_conn *conn;


struct s3_store *make_store(const char *spec)
{
	struct backend_config cfg;
	char err[256];
	struct s3_token server = { .transport = S3_TRANSPORT_RC, .qpn = 0x00c00042, .port = 1 };

	if (backend_config_parse(spec, &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	server.gid[10] = 0xff;
	server.gid[11] = 0xff;
	server.gid[12] = 192; server.gid[13] = 168; server.gid[14] = 200; server.gid[15] = 1;
	return s3_store_new(&cfg.s3, &server);
}

int setup_spec(const char *spec)
{
	st = make_store(spec);
	s3_store_set_dma(st, &fake_ops);
	conn = s3_conn_new(st);
	nmrs = 0;
	dma_calls = 0;
	dma_check_passes = false;
	return st && conn ? 0 : -1;
}

int setup(void **state) { (void)state; return setup_spec("s3"); }

int teardown(void **state)
{
	(void)state;
	s3_conn_free(conn);
	s3_store_free(st);
	for (unsigned i = 0; i < nmrs; i++)
		free(mrs[i].buf);
	nmrs = 0;
	return 0;
}

/* Everything the connection has to send, concatenated. */
uint8_t *drain(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *out = malloc(cap);
	const uint8_t *p;
	size_t k;

	while ((k = s3_conn_output(conn, &p)) > 0) {
		while (n + k > cap)
			out = realloc(out, cap *= 2);
		memcpy(out + n, p, k);
		n += k;
		s3_conn_output_done(conn, k);
	}
	*len = n;
	return out;
}

/* Parse one response at *pos of out. */
bool parse_resp(const uint8_t *out, size_t len, size_t *pos, struct resp *r)
{
	const char *start = (const char *)out + *pos, *end;
	size_t hlen;
	const char *cl;

	memset(r, 0, sizeof(*r));
	if (*pos >= len)
		return false;
	end = memmem(start, len - *pos, "\r\n\r\n", 4);
	assert_non_null(end);
	hlen = (size_t)(end - start) + 4;
	assert_true(hlen < sizeof(r->head));
	memcpy(r->head, start, hlen);
	r->head[hlen] = '\0';
	assert_int_equal(sscanf(r->head, "HTTP/1.1 %d", &r->status), 1);
	*pos += hlen;
	if (r->status == 100)
		return true;
	cl = strcasestr(r->head, "\r\nContent-Length: ");
	if (cl == NULL) /* 204 and 304 carry none */
		assert_true(r->status == 204 || r->status == 304);
	r->body_len = cl ? strtoull(cl + 18, NULL, 10) : 0;
	return true;
}

/* Send one request (whole) and return its (final) response; body bytes copied out. */
struct resp exchange(const void *req, size_t len, bool has_body_on_head)
{
	struct resp r;
	size_t olen, pos = 0;
	uint8_t *out;

	size_t used = s3_conn_input(conn, req, len);

	if (used != len) /* only a connection that is closing leaves input behind */
		assert_true(s3_conn_wants_close(conn));
	out = drain(&olen);
	do {
		assert_true(parse_resp(out, olen, &pos, &r));
	} while (r.status == 100);
	if (has_body_on_head) {
		assert_true(pos + r.body_len <= olen);
		r.body = malloc(r.body_len + 1);
		memcpy(r.body, out + pos, r.body_len);
		r.body[r.body_len] = '\0';
		pos += r.body_len;
	}
	assert_int_equal(pos, olen); /* nothing else was sent */
	free(out);
	return r;
}

struct resp req_str(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return exchange(buf, (size_t)n, strncmp(buf, "HEAD ", 5) != 0);
}

struct resp put_bytes(const char *path, const uint8_t *data, size_t len, const char *extra)
{
	char head[8192];
	int n = snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n%s\r\n", path, len,
			 extra ? extra : "");
	uint8_t *msg = malloc((size_t)n + len);
	struct resp r;

	memcpy(msg, head, (size_t)n);
	if (len)
		memcpy(msg + n, data, len);
	r = exchange(msg, (size_t)n + len, true);
	free(msg);
	return r;
}

const char *hdr(const struct resp *r, const char *name, char *out, size_t cap)
{
	char pat[128];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\r\n%s: ", name);
	p = strcasestr(r->head, pat);
	if (p == NULL)
		return NULL;
	p += strlen(pat);
	e = strstr(p, "\r\n");
	snprintf(out, cap, "%.*s", (int)(e - p), p);
	return out;
}

void assert_error(const struct resp *r, int status, const char *code, const char *resource)
{
	char want[512];

	if (r->status != status)
		fail_msg("status %d, want %d: %s", r->status, status, r->body ? (char *)r->body : "");
	snprintf(want, sizeof(want), "<Code>%s</Code>", code);
	if (strstr((char *)r->body, want) == NULL)
		fail_msg("want %s in: %s", want, (char *)r->body);
	assert_non_null(strstr((char *)r->body, "<Message>"));
	assert_non_null(strstr((char *)r->body, "<RequestId>"));
	if (resource) {
		snprintf(want, sizeof(want), "<Resource>%s</Resource>", resource);
		assert_non_null(strstr((char *)r->body, want));
	}
}

void md5_hex(const uint8_t *d, size_t n, char out[33])
{
	uint8_t md[16];
	unsigned int len = 16;

	EVP_Digest(d, n, md, &len, EVP_md5(), NULL);
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 9));
	return p;
}

void free_resp(struct resp *r)
{
	free(r->body);
	r->body = NULL;
}

const char *xml_text(const struct resp *r, const char *tag, char *out, size_t cap)
{
	char open[64], close[64];
	const char *p, *e;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	p = strstr((const char *)r->body, open);
	assert_non_null(p);
	p += strlen(open);
	e = strstr(p, close);
	assert_non_null(e);
	snprintf(out, cap, "%.*s", (int)(e - p), p);
	return out;
}

/* ---- multipart ---- */

void initiate(const char *key, char id[64])
{
	struct resp r = req_str("POST /ernic/%s?uploads HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\n\r\n", key);

	assert_int_equal(r.status, 200);
	assert_non_null(strstr((char *)r.body, "<InitiateMultipartUploadResult"));
	xml_text(&r, "UploadId", id, 64);
	assert_int_equal(strlen(id), 32);
	free_resp(&r);
}

void upload_part(const char *key, const char *id, int n, const uint8_t *d, size_t len, char etag[48])
{
	char path[256], v[64];
	struct resp r;

	snprintf(path, sizeof(path), "/ernic/%s?partNumber=%d&uploadId=%s", key, n, id);
	r = put_bytes(path, d, len, NULL);
	assert_int_equal(r.status, 200);
	snprintf(etag, 48, "%.47s", hdr(&r, "ETag", v, sizeof(v)));
	free_resp(&r);
}

struct resp complete(const char *key, const char *id, const char *xml)
{
	char head[512];
	static char msg[1 << 16];
	int n = snprintf(head, sizeof(head), "POST /ernic/%s?uploadId=%s HTTP/1.1\r\nHost: s3\r\nContent-Length: %zu\r\n\r\n",
			 key, id, strlen(xml));

	snprintf(msg, sizeof(msg), "%s%s", head, xml);
	return exchange(msg, (size_t)n + strlen(xml), true);
}

/* ---- the RDMA path (hipObject's token) ---- */

const char *token_hdr(uint32_t rkey, uint64_t addr, uint64_t len, char out[128])
{
	struct s3_token t = { .transport = S3_TRANSPORT_RC, .qpn = 0x11, .rkey = rkey, .addr = addr, .len = len, .port = 1 };
	char hex[S3_TOKEN_HEX + 1];

	s3_token_to_hex(&t, hex);
	snprintf(out, 128, "%s", hex);
	return out;
}

struct resp rdma_req(const char *method, const char *path, uint32_t rkey, uint64_t addr, uint64_t len,
			    const char *extra)
{
	char tok[128];

	return req_str("%s %s HTTP/1.1\r\nHost: s3\r\nContent-Length: 0\r\nx-amz-rdma-token: %s\r\n%s\r\n", method, path,
		       token_hdr(rkey, addr, len, tok), extra ? extra : "");
}

void assert_rdma(const struct resp *r, int status, uint64_t moved)
{
	char v[256], want[32];
	struct s3_reply rep;

	assert_int_equal(r->status, status);
	assert_non_null(hdr(r, "x-amz-rdma-reply", v, sizeof(v)));
	assert_int_equal(s3_reply_parse(v, &rep), 0);
	assert_int_equal(rep.kind, S3_REPLY_STATUS_TOKEN);
	assert_int_equal(rep.status, status);
	assert_int_equal(rep.token.qpn, 0x00c00042); /* the server's own token */
	snprintf(want, sizeof(want), "%" PRIu64, moved);
	assert_string_equal(hdr(r, "x-amz-rdma-bytes", v, sizeof(v)), want);
	assert_string_equal(hdr(r, "x-amz-rdma-bytes-transferred", v, sizeof(v)), want);
}

size_t pending_output(void)
{
	const uint8_t *p;

	return s3_conn_output_peek(conn, 0, &p);
}
