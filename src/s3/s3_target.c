/*
 * The S3 store and its request handling; see s3_target.h.
 *
 * Semantics follow versitygw (backend/common.go, s3err, s3response) where the
 * s3 backend specification is silent: range handling, multipart rules and
 * the completed-upload ETag, the XML documents. Every failure answers with
 * an S3 XML error built from the one table in s3_err.c.
 */
#include "s3/s3_target.h"

#include <ctype.h>
#include <errno.h>
#include <expat.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "s3/s3_err.h"
#include "s3/s3_md5.h"
#include "util/log.h"
#include "util/parse_int.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define MMAP_THRESHOLD (1u << 20)
#define DEFAULT_MAX_KEYS 1000

struct s3_object {
	char *key;
	struct s3_blob *blob;
	char etag[48];          /* quoted */
	char content_type[128];
	int64_t mtime;
};

struct s3_part {
	struct s3_blob *blob;   /* NULL: not uploaded */
	char etag[48];
	uint8_t md5[16];
	int64_t mtime;
};

struct s3_upload {
	char id[33];
	char *key;
	char content_type[128];
	int64_t started;
	struct s3_part *parts;  /* index = part number - 1, allocated on demand up to S3_MAX_PARTS */
	uint32_t nparts_alloc;
	struct s3_upload *next;
};

struct s3_store {
	struct s3_config cfg;
	struct s3_token server_token;
	struct dma_ops dma;
	bool has_dma;
	struct s3_object *objs;   /* sorted by key */
	uint32_t nobjs;
	struct s3_upload *uploads;
	struct s3_store_stats stats;
	uint64_t next_request_id;
	int64_t created;
	struct s3_md5w *md5w;     /* NULL: every body is hashed on the caller's thread */
};

enum op_kind {
	OP_DECIDED,       /* the response is known; body bytes are dropped */
	OP_PUT_OBJECT,    /* body into a new object */
	OP_PUT_PART,      /* body into a multipart part */
	OP_COMPLETE,      /* XML body of CompleteMultipartUpload */
};

struct s3_op {
	struct s3_store *st;
	enum op_kind kind;
	struct s3_response resp;
	char request_id[17];
	char resource[S3_MAX_KEY_LEN + 64];
	char key[S3_MAX_KEY_LEN + 1];
	char upload_id[33];
	uint32_t part;
	char content_type[128];
	bool has_md5;
	uint8_t want_md5[16];
	/* body being received */
	struct s3_blob *blob;
	EVP_MD_CTX *md5;          /* the body's MD5 so far: updated as bytes arrive, final at the end */
	struct s3_md5s *md5s;     /* or the MD5 thread's stream over blob->data, instead of md5 */
	uint64_t expected;        /* bytes announced, when known_len */
	bool known_len;
	uint64_t filled;
	uint64_t reserved;        /* capacity held for this body */
	enum s3_err body_err;     /* set when the body turned out bad; further bytes are dropped */
	bool rdma;                /* the request carried x-amz-rdma-token: its response reports the transfer */
	bool head;                /* HEAD: the response never has a body */
	char *xml;
	size_t xml_len;
	/*
	 * The RDMA transfer still to make (s3_op_work): [done, len) of the token's
	 * window from (rkey, addr); a GET writes from data, which lives in blob
	 * (a reference: the object may be replaced or deleted meanwhile), a PUT
	 * reads into op->blob and hashes as it goes.
	 */
	struct {
		bool write;
		uint32_t rkey;
		uint64_t addr, len, done;
		struct s3_blob *blob;
		const uint8_t *data;
	} xfer;
};

/* ---------------------------------------------------------------- blobs */

/*
 * Object memory of MMAP_THRESHOLD and more is anonymous memory. Mappings of
 * objects that are gone (replaced, deleted, a failed upload) are kept for the
 * next object of about their size: their pages are already there, so a body
 * written into them takes no page fault per 4 KiB (on a virtual machine that
 * costs as much as copying the bytes). Bounded in count and bytes; a mapping
 * is reused only for a length between half and all of its own.
 */
#define MAP_CACHE_SLOTS 4
#define MAP_CACHE_BYTES (128ull << 20)

struct map_cache_entry {
	uint8_t *p;
	size_t len;             /* page-rounded */
};

/* Entries [0, map_cache_n) in the order they were freed. */
static struct map_cache_entry map_cache[MAP_CACHE_SLOTS];
static unsigned map_cache_n;
static size_t map_cache_bytes;

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return len > SIZE_MAX - pg ? SIZE_MAX : (len + pg - 1) / pg * pg;
}

/* Removes entry i and returns it. */
static struct map_cache_entry map_cache_take(unsigned i)
{
	struct map_cache_entry e = map_cache[i];

	memmove(&map_cache[i], &map_cache[i + 1], (map_cache_n - i - 1) * sizeof(map_cache[0]));
	map_cache_n--;
	map_cache_bytes -= e.len;
	return e;
}

static void *blob_map(size_t len)
{
	size_t want = page_round(len);
	unsigned best = map_cache_n;
	void *p;

	for (unsigned i = 0; i < map_cache_n; i++)
		if (map_cache[i].len >= want && map_cache[i].len / 2 <= want &&
		    (best == map_cache_n || map_cache[i].len < map_cache[best].len))
			best = i;
	if (best < map_cache_n) {
		struct map_cache_entry e = map_cache_take(best);

		/* Shrinking never moves the mapping; the tail goes back to the kernel. */
		if (e.len == want || mremap(e.p, e.len, want, 0) != MAP_FAILED)
			return e.p;
		munmap(e.p, e.len);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void blob_unmap(uint8_t *p, size_t len)
{
	struct map_cache_entry e = { .p = p, .len = page_round(len) };

	if (e.len > MAP_CACHE_BYTES) {
		munmap(p, len);
		return;
	}
	while (map_cache_n == MAP_CACHE_SLOTS || map_cache_bytes + e.len > MAP_CACHE_BYTES) {
		struct map_cache_entry old = map_cache_take(0);      /* the oldest goes */

		munmap(old.p, old.len);
	}
	/* Kept, but the kernel may take the pages back under memory pressure (a write keeps them). */
	madvise(p, e.len, MADV_FREE);
	map_cache[map_cache_n++] = e;
	map_cache_bytes += e.len;
}

/* Gives every kept mapping back (the store is going away). */
static void map_cache_drain(void)
{
	while (map_cache_n > 0) {
		struct map_cache_entry e = map_cache_take(0);

		munmap(e.p, e.len);
	}
}

static struct s3_blob *blob_new(size_t len)
{
	struct s3_blob *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->refs = 1;
	b->len = len;
	if (len == 0)
		return b;
	if (len >= MMAP_THRESHOLD) {
		b->data = blob_map(len);
	} else {
		b->data = malloc(len);
	}
	if (b->data == NULL) {
		free(b);
		return NULL;
	}
	return b;
}

static void blob_free_data(uint8_t *data, size_t len)
{
	if (data == NULL)
		return;
	if (len >= MMAP_THRESHOLD)
		blob_unmap(data, len);
	else
		free(data);
}

void s3_blob_put(struct s3_blob *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	blob_free_data(b->data, b->len);
	free(b);
}

/*
 * Grow a blob being filled with a body of unknown length (never shared yet).
 * Mapped memory grows by mremap, which moves pages rather than bytes: no step
 * copies more than MMAP_THRESHOLD, so no step holds up the event loop.
 */
static int blob_grow(struct s3_blob *b, size_t need)
{
	size_t cap = b->len ? b->len : 4096;
	uint8_t *p;

	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->len >= MMAP_THRESHOLD) {
		p = mremap(b->data, b->len, cap, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -ENOMEM;
		b->data = p;
		b->len = cap;
		return 0;
	}
	p = cap >= MMAP_THRESHOLD ? blob_map(cap) : malloc(cap);
	if (p == NULL)
		return -ENOMEM;
	if (b->data)
		memcpy(p, b->data, b->len);
	blob_free_data(b->data, b->len);
	b->data = p;
	b->len = cap;
	return 0;
}

/* Trim a grown blob to its filled length: mapped memory shrinks in place, the rest is copied. */
static struct s3_blob *blob_exact(struct s3_blob *b, size_t filled)
{
	struct s3_blob *n;

	if (b->len == filled)
		return b;
	if (b->len >= MMAP_THRESHOLD && filled >= MMAP_THRESHOLD) {
		/* Shrinking never moves the mapping. */
		if (mremap(b->data, b->len, filled, 0) == MAP_FAILED)
			return NULL;
		b->len = filled;
		return b;
	}
	n = blob_new(filled);
	if (n == NULL)
		return NULL;
	if (filled)
		memcpy(n->data, b->data, filled);
	s3_blob_put(b);
	return n;
}

/* ---------------------------------------------------------------- text */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

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

static void sb_add(struct sbuf *s, const char *str, size_t n)
{
	sb_reserve(s, n);
	if (s->oom)
		return;
	memcpy(s->p + s->len, str, n);
	s->len += n;
	s->p[s->len] = '\0';
}

static void sb_puts(struct sbuf *s, const char *str)
{
	sb_add(s, str, strlen(str));
}

static void sb_printf(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *s, const char *fmt, ...)
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
static void sb_xml(struct sbuf *s, const char *str)
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

static void sb_tag(struct sbuf *s, const char *tag, const char *text)
{
	sb_printf(s, "<%s>", tag);
	sb_xml(s, text);
	sb_printf(s, "</%s>", tag);
}

static void iso8601(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static void hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static void md5(const uint8_t *data, size_t len, uint8_t out[16])
{
	unsigned int n = 16;

	if (EVP_Digest(data ? data : (const uint8_t *)"", len, out, &n, EVP_md5(), NULL) != 1)
		memset(out, 0, 16);
}

static void etag_of(const uint8_t digest[16], char out[48])
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
static void response_move(struct s3_response *dst, const struct s3_response *src)
{
	*dst = *src;
	for (unsigned i = 0; i < dst->nheaders; i++) {
		dst->headers[i].name = dst->hdrbuf + (src->headers[i].name - src->hdrbuf);
		dst->headers[i].value = dst->hdrbuf + (src->headers[i].value - src->hdrbuf);
	}
}

static void resp_header(struct s3_response *r, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void resp_header(struct s3_response *r, const char *name, const char *fmt, ...)
{
	size_t nlen = strlen(name) + 1, room;
	va_list ap;
	int n;

	if (r->nheaders == S3_MAX_RESP_HEADERS || r->hdrused + nlen + 2 > sizeof(r->hdrbuf))
		return;
	room = sizeof(r->hdrbuf) - r->hdrused - nlen;
	va_start(ap, fmt);
	n = vsnprintf(r->hdrbuf + r->hdrused + nlen, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		return;
	memcpy(r->hdrbuf + r->hdrused, name, nlen);
	r->headers[r->nheaders].name = r->hdrbuf + r->hdrused;
	r->headers[r->nheaders].value = r->hdrbuf + r->hdrused + nlen;
	r->nheaders++;
	r->hdrused += nlen + (size_t)n + 1;
}

static void resp_xml(struct s3_response *r, struct sbuf *s)
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

static void op_error(struct s3_op *op, enum s3_err e, const char *detail)
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

/* ---------------------------------------------------------------- objects */

/* Index of key, or -(insertion point) - 1. */
static long find_obj(const struct s3_store *st, const char *key)
{
	long lo = 0, hi = (long)st->nobjs - 1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		int c = strcmp(st->objs[mid].key, key);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

/* First index whose key is greater than (or equal to, if inclusive) key. */
static uint32_t lower_bound(const struct s3_store *st, const char *key, bool inclusive)
{
	long i = find_obj(st, key);

	if (i >= 0)
		return (uint32_t)(inclusive ? i : i + 1);
	return (uint32_t)(-i - 1);
}

static bool reserve(struct s3_store *st, uint64_t n)
{
	if (n > st->cfg.size || st->stats.used_bytes > st->cfg.size - n)
		return false;
	st->stats.used_bytes += n;
	return true;
}

static void unreserve(struct s3_store *st, uint64_t n)
{
	st->stats.used_bytes -= n < st->stats.used_bytes ? n : st->stats.used_bytes;
}

/* Whether a PUT of key may take a slot (replacing an existing key needs none). */
static bool slot_available(const struct s3_store *st, const char *key)
{
	return find_obj(st, key) >= 0 || st->nobjs < st->cfg.objects;
}

/*
 * Store blob under key (its bytes already reserved). Replaces an existing
 * object, whose bytes are released. Returns false (nothing changed) if no slot.
 */
static bool commit_object(struct s3_store *st, const char *key, struct s3_blob *blob, const char *etag,
			  const char *content_type)
{
	long i = find_obj(st, key);
	struct s3_object *o;

	if (i >= 0) {
		o = &st->objs[i];
		unreserve(st, o->blob->len);
		s3_blob_put(o->blob);
	} else {
		char *k = strdup(key);
		uint32_t at = (uint32_t)(-i - 1);

		if (k == NULL || st->nobjs >= st->cfg.objects) {
			free(k);
			return false;
		}
		memmove(&st->objs[at + 1], &st->objs[at], (st->nobjs - at) * sizeof(*o));
		o = &st->objs[at];
		memset(o, 0, sizeof(*o));
		o->key = k;
		st->nobjs++;
	}
	o->blob = blob;
	snprintf(o->etag, sizeof(o->etag), "%s", etag);
	snprintf(o->content_type, sizeof(o->content_type), "%s", content_type);
	o->mtime = (int64_t)time(NULL);
	st->stats.objects = st->nobjs;
	return true;
}

static void delete_object(struct s3_store *st, const char *key)
{
	long i = find_obj(st, key);

	if (i < 0)
		return;
	unreserve(st, st->objs[i].blob->len);
	s3_blob_put(st->objs[i].blob);
	free(st->objs[i].key);
	memmove(&st->objs[i], &st->objs[i + 1], (st->nobjs - (uint32_t)i - 1) * sizeof(st->objs[0]));
	st->nobjs--;
	st->stats.objects = st->nobjs;
}

/* ---------------------------------------------------------------- uploads */

static struct s3_upload *find_upload(struct s3_store *st, const char *id, const char *key)
{
	for (struct s3_upload *u = st->uploads; u; u = u->next)
		if (strcmp(u->id, id) == 0 && (key == NULL || strcmp(u->key, key) == 0))
			return u;
	return NULL;
}

static void free_upload(struct s3_store *st, struct s3_upload *u)
{
	struct s3_upload **pp;

	for (pp = &st->uploads; *pp; pp = &(*pp)->next) {
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	}
	for (uint32_t i = 0; i < u->nparts_alloc; i++) {
		if (u->parts[i].blob) {
			unreserve(st, u->parts[i].blob->len);
			s3_blob_put(u->parts[i].blob);
		}
	}
	free(u->parts);
	free(u->key);
	free(u);
	st->stats.uploads--;
}

/* ---------------------------------------------------------------- store */

struct s3_store *s3_store_new(const struct s3_config *cfg, const struct s3_token *server_token)
{
	struct s3_store *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return NULL;
	st->cfg = *cfg;
	st->objs = calloc(cfg->objects ? cfg->objects : 1, sizeof(*st->objs));
	if (st->objs == NULL) {
		free(st);
		return NULL;
	}
	if (server_token)
		st->server_token = *server_token;
	else
		st->server_token.transport = S3_TRANSPORT_RC;
	st->created = (int64_t)time(NULL);
	st->md5w = s3_md5w_new(); /* without it, bodies are hashed inline */
	return st;
}

void s3_store_free(struct s3_store *st)
{
	if (st == NULL)
		return;
	while (st->uploads)
		free_upload(st, st->uploads);
	for (uint32_t i = 0; i < st->nobjs; i++) {
		s3_blob_put(st->objs[i].blob);
		free(st->objs[i].key);
	}
	free(st->objs);
	s3_md5w_free(st->md5w);
	free(st);
	map_cache_drain();
}

void s3_store_set_dma(struct s3_store *st, const struct dma_ops *ops)
{
	st->has_dma = ops != NULL;
	if (ops)
		st->dma = *ops;
}

int s3_store_md5_fd(const struct s3_store *st)
{
	return s3_md5w_fd(st->md5w);
}

const struct s3_store_stats *s3_store_stats(const struct s3_store *st)
{
	return &st->stats;
}

/* ---------------------------------------------------------------- request handling */

struct req {
	const struct http_request *http;
	bool head;
	char bucket[256];
	const char *key;         /* points into op->key; "" for bucket-level requests */
	bool service;            /* "/" */
	bool rdma;               /* x-amz-rdma-token present */
	bool token_ok;
	struct s3_token token;
};

static void set_rdma(struct s3_op *op, uint64_t moved)
{
	struct s3_token t = op->st->server_token;
	char v[S3_TOKEN_HEX + 16];

	t.addr = 0;
	t.len = moved;
	if (s3_reply_format(op->resp.status, &t, v, sizeof(v)) > 0)
		resp_header(&op->resp, "x-amz-rdma-reply", "%s", v);
	resp_header(&op->resp, "x-amz-rdma-bytes", "%" PRIu64, moved);
	resp_header(&op->resp, "x-amz-rdma-bytes-transferred", "%" PRIu64, moved);
}

static void ok_empty(struct s3_op *op, int status)
{
	op->resp.status = status;
	op->resp.content_length = 0;
	op->resp.send_body = false;
	op->kind = OP_DECIDED;
}

static void object_headers(struct s3_op *op, const struct s3_object *o)
{
	char date[30];

	http_format_date(o->mtime, date);
	resp_header(&op->resp, "ETag", "%s", o->etag);
	resp_header(&op->resp, "Last-Modified", "%s", date);
	resp_header(&op->resp, "Content-Type", "%s", o->content_type);
	resp_header(&op->resp, "Accept-Ranges", "bytes");
}

/* ---- service and bucket ---- */

static void list_buckets(struct s3_op *op)
{
	struct sbuf s = { 0 };
	char date[32];

	iso8601(op->st->created, date);
	sb_puts(&s, XML_DECL "<ListAllMyBucketsResult xmlns=\"" XMLNS "\">");
	sb_puts(&s, "<Owner><ID>rocm-ernic</ID><DisplayName>rocm-ernic</DisplayName></Owner><Buckets><Bucket>");
	sb_tag(&s, "Name", op->st->cfg.bucket);
	sb_tag(&s, "CreationDate", date);
	sb_puts(&s, "</Bucket></Buckets></ListAllMyBucketsResult>");
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	op->kind = OP_DECIDED;
}

static int query_str(const struct http_request *h, const char *key, char *out, size_t cap, bool *present)
{
	int n = http_query_get(h, key, out, cap);

	*present = n >= 0;
	if (n == -ENOENT) {
		out[0] = '\0';
		return 0;
	}
	return n < 0 ? n : 0;
}

/* Continuation tokens are the hex of the last name returned: opaque, and XML-safe. */
static int token_decode(const char *hex, char *out, size_t cap)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = parse_hex_digit(hex[2 * i]), lo = parse_hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return -EINVAL;
		out[i] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	return 0;
}

static void list_objects(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;
	struct s3_store *st = op->st;
	char prefix[S3_MAX_KEY_LEN + 1], delim[64], marker[S3_MAX_KEY_LEN + 1], maxk[24], lt[8];
	char ctoken[2 * S3_MAX_KEY_LEN + 3], after[S3_MAX_KEY_LEN + 1];
	bool has_prefix, has_delim, has_marker, has_maxk, has_lt, has_ct, has_after, v2;
	uint64_t max_keys = DEFAULT_MAX_KEYS, count = 0;
	char last[S3_MAX_KEY_LEN + 1] = "", cp_last[S3_MAX_KEY_LEN + 1] = "";
	bool truncated = false;
	struct sbuf keys = { 0 }, s = { 0 };
	size_t plen;
	uint32_t i;

	if (query_str(h, "prefix", prefix, sizeof(prefix), &has_prefix) ||
	    query_str(h, "delimiter", delim, sizeof(delim), &has_delim) ||
	    query_str(h, "marker", marker, sizeof(marker), &has_marker) ||
	    query_str(h, "max-keys", maxk, sizeof(maxk), &has_maxk) ||
	    query_str(h, "list-type", lt, sizeof(lt), &has_lt) ||
	    query_str(h, "continuation-token", ctoken, sizeof(ctoken), &has_ct) ||
	    query_str(h, "start-after", after, sizeof(after), &has_after)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "A query parameter is malformed or too long.");
		return;
	}
	v2 = has_lt && strcmp(lt, "2") == 0;
	if (has_lt && !v2) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Invalid list-type.");
		return;
	}
	if (has_maxk && parse_u64_range(maxk, 0, INT32_MAX, &max_keys)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Provided max-keys not an integer or within integer range");
		return;
	}
	if (max_keys > DEFAULT_MAX_KEYS)
		max_keys = DEFAULT_MAX_KEYS;
	/* Where to start: after the marker (V1), or after the continuation token / start-after (V2). */
	const char *start = "";
	char decoded[S3_MAX_KEY_LEN + 1];
	if (v2 && has_ct) {
		if (token_decode(ctoken, decoded, sizeof(decoded))) {
			op_error(op, S3_ERR_INVALID_ARGUMENT, "The continuation token provided is incorrect");
			return;
		}
		start = decoded;
	} else if (v2 && has_after) {
		start = after;
	} else if (!v2 && has_marker) {
		start = marker;
	}
	plen = strlen(prefix);
	i = start[0] ? lower_bound(st, start, false) : 0;
	if (plen && strcmp(prefix, start) > 0)
		i = lower_bound(st, prefix, true);
	for (; i < st->nobjs; i++) {
		const struct s3_object *o = &st->objs[i];
		const char *rest;
		const char *d;

		if (strncmp(o->key, prefix, plen) != 0) {
			if (strcmp(o->key, prefix) > 0)
				break; /* sorted: no later key has the prefix */
			continue;
		}
		rest = o->key + plen;
		d = has_delim && delim[0] ? strstr(rest, delim) : NULL;
		if (d) {
			size_t cplen = (size_t)(d - o->key) + strlen(delim);

			if (strlen(cp_last) == cplen && strncmp(cp_last, o->key, cplen) == 0)
				continue; /* inside a common prefix already listed */
			if (count == max_keys) {
				truncated = true;
				break;
			}
			memcpy(cp_last, o->key, cplen);
			cp_last[cplen] = '\0';
			sb_puts(&keys, "<CommonPrefixes>");
			sb_tag(&keys, "Prefix", cp_last);
			sb_puts(&keys, "</CommonPrefixes>");
			snprintf(last, sizeof(last), "%s", cp_last);
			count++;
			continue;
		}
		if (count == max_keys) {
			truncated = true;
			break;
		}
		char date[32];
		iso8601(o->mtime, date);
		sb_puts(&keys, "<Contents>");
		sb_tag(&keys, "Key", o->key);
		sb_tag(&keys, "LastModified", date);
		sb_tag(&keys, "ETag", o->etag);
		sb_printf(&keys, "<Size>%zu</Size>", o->blob->len);
		sb_puts(&keys, "<Owner><ID>rocm-ernic</ID><DisplayName>rocm-ernic</DisplayName></Owner>");
		sb_puts(&keys, "<StorageClass>STANDARD</StorageClass></Contents>");
		snprintf(last, sizeof(last), "%s", o->key);
		count++;
	}
	if (count == 0 && max_keys == 0 && i < st->nobjs)
		truncated = true;

	sb_puts(&s, XML_DECL "<ListBucketResult xmlns=\"" XMLNS "\">");
	sb_tag(&s, "Name", st->cfg.bucket);
	sb_tag(&s, "Prefix", prefix);
	if (v2) {
		if (has_after)
			sb_tag(&s, "StartAfter", after);
		if (has_ct)
			sb_tag(&s, "ContinuationToken", ctoken);
		if (truncated && last[0]) {
			char *hex = malloc(2 * strlen(last) + 1);

			if (hex) {
				hex_encode((const uint8_t *)last, strlen(last), hex);
				sb_tag(&s, "NextContinuationToken", hex);
				free(hex);
			}
		}
		sb_printf(&s, "<KeyCount>%" PRIu64 "</KeyCount>", count);
	} else {
		sb_tag(&s, "Marker", marker);
		if (truncated && last[0])
			sb_tag(&s, "NextMarker", last);
	}
	sb_printf(&s, "<MaxKeys>%" PRIu64 "</MaxKeys>", max_keys);
	if (has_delim)
		sb_tag(&s, "Delimiter", delim);
	sb_printf(&s, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (keys.len)
		sb_add(&s, keys.p, keys.len);
	sb_puts(&s, "</ListBucketResult>");
	if (keys.oom)
		s.oom = true;
	free(keys.p);
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	op->kind = OP_DECIDED;
}

static void bucket_request(struct s3_op *op, const struct req *rq)
{
	const char *m = rq->http->method;
	const struct http_request *h = rq->http;

	if (strcmp(m, "GET") == 0 || rq->head) {
		if (rq->head) {
			ok_empty(op, 200);
			return;
		}
		if (http_query_has(h, "location")) {
			struct sbuf s = { 0 };

			sb_puts(&s, XML_DECL "<LocationConstraint xmlns=\"" XMLNS "\"></LocationConstraint>");
			op->resp.status = 200;
			resp_xml(&op->resp, &s);
			op->kind = OP_DECIDED;
			return;
		}
		if (http_query_has(h, "uploads") || http_query_has(h, "acl") || http_query_has(h, "versioning") ||
		    http_query_has(h, "policy") || http_query_has(h, "tagging") || http_query_has(h, "cors") ||
		    http_query_has(h, "lifecycle") || http_query_has(h, "versions")) {
			op_error(op, S3_ERR_NOT_IMPLEMENTED, NULL);
			return;
		}
		list_objects(op, rq);
		return;
	}
	if (strcmp(m, "PUT") == 0) {
		op_error(op, S3_ERR_BUCKET_ALREADY_OWNED, NULL);
		return;
	}
	if (strcmp(m, "DELETE") == 0) {
		if (op->st->nobjs)
			op_error(op, S3_ERR_BUCKET_NOT_EMPTY, NULL);
		else
			op_error(op, S3_ERR_METHOD_NOT_ALLOWED, "This store serves one bucket, which cannot be deleted.");
		return;
	}
	if (strcmp(m, "POST") == 0 && http_query_has(h, "delete")) {
		op_error(op, S3_ERR_NOT_IMPLEMENTED, "DeleteObjects is not supported; delete objects one at a time.");
		return;
	}
	op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}

/* ---- objects ---- */

/*
 * Range, as versitygw reads it: "bytes=a-b", "bytes=a-" or "bytes=-n". Returns
 * 1 with [*start, *start + *len) for a satisfiable range, 0 to ignore the
 * header (absent, malformed, multi-range, a > b: the whole object, 200), -1
 * for an unsatisfiable one (416).
 */
static int parse_range(const char *v, uint64_t size, uint64_t *start, uint64_t *len)
{
	char a[24] = "", b[24] = "";
	const char *dash;
	uint64_t x = 0, y = 0;
	int ra, rb;

	if (v == NULL || strncmp(v, "bytes=", 6) != 0 || strchr(v, ','))
		return 0;
	v += 6;
	dash = strchr(v, '-');
	if (dash == NULL || (size_t)(dash - v) >= sizeof(a) || strlen(dash + 1) >= sizeof(b))
		return 0;
	memcpy(a, v, (size_t)(dash - v));
	strcpy(b, dash + 1);
	if (a[0] == '\0' && b[0] == '\0')
		return 0;
	ra = a[0] ? parse_u64(a, &x) : 0;
	rb = b[0] ? parse_u64(b, &y) : 0;
	if (ra == -EINVAL || rb == -EINVAL)
		return 0;
	if (ra == -ERANGE || rb == -ERANGE)
		return -1; /* numbers that do not fit are unsatisfiable, not malformed */
	if (a[0] == '\0') { /* suffix: the last y bytes */
		if (y == 0 || size == 0)
			return -1;
		if (y > size)
			y = size;
		*start = size - y;
		*len = y;
		return 1;
	}
	if (b[0] && x > y)
		return 0;
	if (x >= size)
		return -1;
	if (b[0] == '\0' || y >= size)
		y = size - 1;
	*start = x;
	*len = y - x + 1;
	return 1;
}

static const char *dma_error(int rc)
{
	switch (rc) {
	case -ENOKEY: return "The rkey in the token names no memory registration.";
	case -EACCES: return "The memory registration does not allow this access.";
	case -EFAULT: return "The token's window lies outside its memory registration.";
	default: return "The RDMA transfer failed.";
	}
}

/* Common checks of the RDMA path; false with the error response set. */
static bool rdma_usable(struct s3_op *op, const struct req *rq)
{
	if (!rq->token_ok) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "The x-amz-rdma-token header is malformed.");
		return false;
	}
	if (rq->token.rkey == 0) {
		/* Key 0 is the driver's reserved DMA key: raw guest memory, never a registration. */
		op_error(op, S3_ERR_INTERNAL, "The rkey 0 names no memory registration.");
		return false;
	}
	if (!op->st->has_dma) {
		op_error(op, S3_ERR_INTERNAL, "No guest memory is reachable for RDMA.");
		return false;
	}
	return true;
}

static void get_object(struct s3_op *op, const struct req *rq)
{
	struct s3_store *st = op->st;
	long i = find_obj(st, rq->key);
	const struct s3_object *o;
	uint64_t start = 0, len;
	int rr;

	if (i < 0) {
		op_error(op, S3_ERR_NO_SUCH_KEY, NULL);
		return;
	}
	o = &st->objs[i];
	len = o->blob->len;
	rr = parse_range(http_header_get(rq->http, "range"), o->blob->len, &start, &len);
	if (rr < 0) {
		op_error(op, S3_ERR_INVALID_RANGE, NULL);
		resp_header(&op->resp, "Content-Range", "bytes */%zu", o->blob->len);
		return;
	}
	op->resp.status = rr ? 206 : 200;
	object_headers(op, o);
	if (rr)
		resp_header(&op->resp, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/%zu", start,
			    start + len - 1, o->blob->len);
	op->kind = OP_DECIDED;

	if (rq->rdma) {
		uint64_t n = len;

		if (!rdma_usable(op, rq))
			return;
		/* Capped by the client's window and by maxpart: a short transfer, reported as such. */
		if (n > rq->token.len)
			n = rq->token.len;
		if (n > st->cfg.maxpart)
			n = st->cfg.maxpart;
		/* Made by s3_op_work, from a reference to the object's bytes as they are now. */
		op->xfer.write = true;
		op->xfer.rkey = rq->token.rkey;
		op->xfer.addr = rq->token.addr;
		op->xfer.len = n;
		op->xfer.blob = o->blob;
		op->xfer.data = o->blob->data + start;
		o->blob->refs++;
		op->resp.content_length = 0;
		op->resp.send_body = false;
		op->resp.len = n; /* what set_rdma reports */
		return;
	}
	op->resp.content_length = len;
	op->resp.send_body = !rq->head && len > 0;
	if (op->resp.send_body) {
		op->resp.blob = o->blob;
		o->blob->refs++;
		op->resp.off = start;
		op->resp.len = len;
	}
}

static int base64_md5(const char *v, uint8_t out[16])
{
	uint8_t buf[24];
	size_t n = strlen(v);

	if (n != 24)
		return -EINVAL;
	if (EVP_DecodeBlock(buf, (const unsigned char *)v, 24) != 18 || v[22] != '=' || v[23] != '=')
		return -EINVAL;
	memcpy(out, buf, 16);
	return 0;
}

/* The length of the body about to arrive, from the framing; false with an error set. */
static bool body_length(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;

	if (h->aws_chunked) {
		op->known_len = h->has_decoded_length;
		op->expected = h->decoded_length;
	} else if (h->chunked) {
		op->known_len = false;
	} else if (h->has_content_length) {
		op->known_len = true;
		op->expected = h->content_length;
	} else {
		op_error(op, S3_ERR_MISSING_CONTENT_LENGTH, NULL);
		return false;
	}
	if (op->known_len && op->expected > op->st->cfg.maxpart) {
		op_error(op, S3_ERR_ENTITY_TOO_LARGE, NULL);
		return false;
	}
	return true;
}

/* Set up op to receive an object or part body (or move it by RDMA at once). */
static void put_begin(struct s3_op *op, const struct req *rq, enum op_kind kind)
{
	struct s3_store *st = op->st;
	const char *ct = http_header_get(rq->http, "content-type");
	const char *cmd5 = http_header_get(rq->http, "content-md5");

	snprintf(op->content_type, sizeof(op->content_type), "%s",
		 ct && ct[0] && strlen(ct) < sizeof(op->content_type) ? ct : "binary/octet-stream");
	if (cmd5) {
		if (base64_md5(cmd5, op->want_md5)) {
			op_error(op, S3_ERR_INVALID_DIGEST, NULL);
			return;
		}
		op->has_md5 = true;
	}
	if (kind == OP_PUT_OBJECT && !slot_available(st, op->key)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	if (rq->rdma) {
		if (!rdma_usable(op, rq))
			return;
		op->known_len = true;
		op->expected = rq->token.len;
		if (op->expected > st->cfg.maxpart) {
			op_error(op, S3_ERR_ENTITY_TOO_LARGE, NULL);
			return;
		}
	} else if (!body_length(op, rq)) {
		return;
	}
	if (op->known_len) {
		if (!reserve(st, op->expected)) {
			op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "The store's capacity is used up.");
			return;
		}
		op->reserved = op->expected;
	}
	op->blob = blob_new(op->known_len ? (size_t)op->expected : 0);
	if (op->blob == NULL) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Out of memory.");
		return;
	}
	/* On any failure from here, s3_op_finish() gives back the blob, the reservation and the context. */
	op->md5 = EVP_MD_CTX_new();
	if (op->md5 == NULL || EVP_DigestInit_ex(op->md5, EVP_md5(), NULL) != 1) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	op->kind = kind;
	if (!rq->rdma && op->known_len && op->expected >= S3_MD5_THREAD_MIN)
		op->md5s = s3_md5s_open(st->md5w, op->blob->data); /* NULL: hashed inline after all */
	if (rq->rdma) {
		/* Made by s3_op_work: read into the blob, hashed piece by piece. */
		op->xfer.rkey = rq->token.rkey;
		op->xfer.addr = rq->token.addr;
		op->xfer.len = op->expected;
		op->resp.len = op->expected;
	}
}

static void initiate_upload(struct s3_op *op, const struct req *rq)
{
	struct s3_store *st = op->st;
	struct s3_upload *u;
	uint8_t rnd[16];
	const char *ct = http_header_get(rq->http, "content-type");
	struct sbuf s = { 0 };

	if (st->stats.uploads >= S3_MAX_UPLOADS) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Too many multipart uploads in progress.");
		return;
	}
	u = calloc(1, sizeof(*u));
	if (u == NULL || (u->key = strdup(rq->key)) == NULL) {
		free(u);
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t c = ++st->next_request_id ^ (uint64_t)time(NULL);

		memcpy(rnd, &c, 8);
		memcpy(rnd + 8, &u, sizeof(void *) < 8 ? sizeof(void *) : 8);
	}
	hex_encode(rnd, sizeof(rnd), u->id);
	snprintf(u->content_type, sizeof(u->content_type), "%s",
		 ct && ct[0] && strlen(ct) < sizeof(u->content_type) ? ct : "binary/octet-stream");
	u->started = (int64_t)time(NULL);
	u->next = st->uploads;
	st->uploads = u;
	st->stats.uploads++;

	sb_puts(&s, XML_DECL "<InitiateMultipartUploadResult xmlns=\"" XMLNS "\">");
	sb_tag(&s, "Bucket", st->cfg.bucket);
	sb_tag(&s, "Key", rq->key);
	sb_tag(&s, "UploadId", u->id);
	sb_puts(&s, "</InitiateMultipartUploadResult>");
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	op->kind = OP_DECIDED;
}

static void list_parts(struct s3_op *op, struct s3_upload *u, const struct req *rq)
{
	struct sbuf s = { 0 };
	char v[24];
	uint64_t marker = 0, max_parts = 1000, n = 0;
	uint32_t next = 0;
	bool truncated = false;

	if (http_query_get(rq->http, "part-number-marker", v, sizeof(v)) >= 0 && parse_u64_range(v, 0, S3_MAX_PARTS, &marker)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Invalid part-number-marker.");
		return;
	}
	if (http_query_get(rq->http, "max-parts", v, sizeof(v)) >= 0 && parse_u64_range(v, 0, 1000, &max_parts)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Invalid max-parts.");
		return;
	}
	sb_puts(&s, XML_DECL "<ListPartsResult xmlns=\"" XMLNS "\">");
	sb_tag(&s, "Bucket", op->st->cfg.bucket);
	sb_tag(&s, "Key", u->key);
	sb_tag(&s, "UploadId", u->id);
	sb_printf(&s, "<PartNumberMarker>%" PRIu64 "</PartNumberMarker>", marker);
	struct sbuf parts = { 0 };
	for (uint32_t i = (uint32_t)marker; i < u->nparts_alloc; i++) {
		const struct s3_part *p = &u->parts[i];
		char date[32];

		if (p->blob == NULL)
			continue;
		if (n == max_parts) {
			truncated = true;
			break;
		}
		iso8601(p->mtime, date);
		sb_printf(&parts, "<Part><PartNumber>%u</PartNumber>", i + 1);
		sb_tag(&parts, "LastModified", date);
		sb_tag(&parts, "ETag", p->etag);
		sb_printf(&parts, "<Size>%zu</Size></Part>", p->blob->len);
		next = i + 1;
		n++;
	}
	sb_printf(&s, "<NextPartNumberMarker>%u</NextPartNumberMarker><MaxParts>%" PRIu64 "</MaxParts>", next, max_parts);
	sb_printf(&s, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (parts.len)
		sb_add(&s, parts.p, parts.len);
	if (parts.oom)
		s.oom = true;
	free(parts.p);
	sb_puts(&s, "<StorageClass>STANDARD</StorageClass></ListPartsResult>");
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	op->kind = OP_DECIDED;
}

static void object_request(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;
	const char *m = h->method;
	char upload_id[64], partnum[16];
	bool has_upload = http_query_get(h, "uploadId", upload_id, sizeof(upload_id)) >= 0;

	if (http_query_has(h, "acl") || http_query_has(h, "tagging") || http_query_has(h, "retention") ||
	    http_query_has(h, "legal-hold") || http_query_has(h, "attributes") || http_query_has(h, "torrent")) {
		op_error(op, S3_ERR_NOT_IMPLEMENTED, NULL);
		return;
	}
	if (has_upload) {
		struct s3_upload *u = find_upload(op->st, upload_id, rq->key);

		if (u == NULL) {
			op_error(op, S3_ERR_NO_SUCH_UPLOAD, NULL);
			return;
		}
		snprintf(op->upload_id, sizeof(op->upload_id), "%s", u->id);
		if (strcmp(m, "PUT") == 0) {
			uint64_t pn;

			if (http_query_get(h, "partNumber", partnum, sizeof(partnum)) < 0 ||
			    parse_u64_range(partnum, 1, S3_MAX_PARTS, &pn)) {
				op_error(op, S3_ERR_INVALID_ARGUMENT, "Part number must be an integer between 1 and 10000, inclusive.");
				return;
			}
			if (http_header_get(h, "x-amz-copy-source")) {
				op_error(op, S3_ERR_NOT_IMPLEMENTED, "UploadPartCopy is not supported.");
				return;
			}
			op->part = (uint32_t)pn;
			put_begin(op, rq, OP_PUT_PART);
		} else if (strcmp(m, "POST") == 0) {
			const struct http_request *hh = rq->http;

			if (!hh->chunked && !hh->aws_chunked && hh->has_content_length && hh->content_length > S3_MAX_XML_BODY) {
				op_error(op, S3_ERR_MALFORMED_XML, "The completion document is too large.");
				return;
			}
			op->kind = OP_COMPLETE;
		} else if (strcmp(m, "DELETE") == 0) {
			free_upload(op->st, u);
			ok_empty(op, 204);
		} else if (strcmp(m, "GET") == 0 && !rq->head) {
			list_parts(op, u, rq);
		} else {
			op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
		}
		return;
	}
	if (strcmp(m, "GET") == 0 || rq->head) {
		get_object(op, rq);
	} else if (strcmp(m, "PUT") == 0) {
		if (http_header_get(h, "x-amz-copy-source")) {
			op_error(op, S3_ERR_NOT_IMPLEMENTED, "CopyObject is not supported.");
			return;
		}
		put_begin(op, rq, OP_PUT_OBJECT);
	} else if (strcmp(m, "DELETE") == 0) {
		delete_object(op->st, rq->key); /* idempotent: a missing key is still 204 */
		ok_empty(op, 204);
	} else if (strcmp(m, "POST") == 0 && http_query_has(h, "uploads")) {
		initiate_upload(op, rq);
	} else {
		op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
	}
}

/* ---- begin ---- */

struct s3_op *s3_op_begin(struct s3_store *st, const struct http_request *h)
{
	struct s3_op *op = calloc(1, sizeof(*op));
	struct req rq = { .http = h };
	const char *p, *slash, *tok;
	size_t blen;

	if (op == NULL)
		return NULL;
	op->st = st;
	op->kind = OP_DECIDED;
	st->stats.requests++;
	snprintf(op->request_id, sizeof(op->request_id), "%016" PRIX64, ++st->next_request_id);
	snprintf(op->resource, sizeof(op->resource), "%s", h->path);
	rq.head = strcmp(h->method, "HEAD") == 0;
	tok = http_header_get(h, "x-amz-rdma-token");
	if (tok) {
		rq.rdma = true;
		rq.token_ok = s3_token_parse_header(tok, &rq.token) == 0;
	}

	p = h->path + 1; /* the parser guarantees a leading "/" */
	slash = strchr(p, '/');
	blen = slash ? (size_t)(slash - p) : strlen(p);
	if (blen == 0) {
		rq.service = true;
	} else if (blen >= sizeof(rq.bucket)) {
		op_error(op, S3_ERR_INVALID_BUCKET_NAME, NULL);
		goto out;
	} else {
		memcpy(rq.bucket, p, blen);
		rq.bucket[blen] = '\0';
	}
	if (slash && strlen(slash + 1) > S3_MAX_KEY_LEN) {
		op_error(op, S3_ERR_KEY_TOO_LONG, NULL);
		goto out;
	}
	snprintf(op->key, sizeof(op->key), "%s", slash ? slash + 1 : "");
	rq.key = op->key;

	if (rq.service) {
		if (strcmp(h->method, "GET") == 0)
			list_buckets(op);
		else if (rq.head)
			ok_empty(op, 200);
		else
			op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
	} else if (strcmp(rq.bucket, st->cfg.bucket) != 0) {
		op_error(op, S3_ERR_NO_SUCH_BUCKET, NULL);
	} else if (rq.key[0] == '\0') {
		bucket_request(op, &rq);
	} else {
		object_request(op, &rq);
	}
out:
	op->resp.close = !h->keep_alive;
	op->rdma = rq.rdma;
	op->head = rq.head;
	return op;
}

/* ---- the RDMA transfer ---- */

bool s3_op_hashing(const struct s3_op *op)
{
	return op->md5s != NULL && op->filled == op->expected && op->body_err == S3_OK &&
	       !s3_md5s_ready(op->md5s, NULL);
}

bool s3_op_busy(const struct s3_op *op)
{
	return op->xfer.done < op->xfer.len || s3_op_hashing(op);
}

/* The transfer stops here (done or failed): its reference goes. */
static void xfer_end(struct s3_op *op)
{
	op->xfer.len = op->xfer.done;
	s3_blob_put(op->xfer.blob);
	op->xfer.blob = NULL;
	op->xfer.data = NULL;
}

bool s3_op_work(struct s3_op *op, uint64_t budget)
{
	struct s3_store *st = op->st;
	uint64_t n = op->xfer.len - op->xfer.done;
	int rc;

	if (n == 0) {
		xfer_end(op); /* an empty transfer holds a reference all the same */
		return false;
	}
	if (n > budget)
		n = budget;
	if (op->xfer.write) {
		rc = st->dma.write(st->dma.ctx, op->xfer.rkey, op->xfer.addr + op->xfer.done,
				   op->xfer.data + op->xfer.done, (size_t)n);
	} else {
		uint8_t *p = op->blob->data + op->xfer.done;

		rc = st->dma.read(st->dma.ctx, op->xfer.rkey, op->xfer.addr + op->xfer.done, p, (size_t)n);
		if (rc == 0 && EVP_DigestUpdate(op->md5, p, (size_t)n) != 1) {
			xfer_end(op);
			op_error(op, S3_ERR_INTERNAL, NULL);
			return false;
		}
	}
	if (rc) {
		/* Nothing is stored and the response says 0 bytes (what moved before is not reported). */
		xfer_end(op);
		op_error(op, S3_ERR_INTERNAL, dma_error(rc));
		return false;
	}
	op->xfer.done += n;
	st->stats.rdma_bytes += n;
	if (!op->xfer.write)
		op->filled = op->xfer.done;
	if (op->xfer.done < op->xfer.len)
		return true;
	xfer_end(op);
	return false;
}

/* ---- body and finish ---- */

bool s3_op_wants_body(const struct s3_op *op)
{
	return op->kind != OP_DECIDED && op->body_err == S3_OK && !op->rdma;
}

void s3_op_body(struct s3_op *op, const uint8_t *data, size_t len)
{
	struct s3_store *st = op->st;

	if (!s3_op_wants_body(op) || len == 0)
		return;
	if (op->kind == OP_COMPLETE) {
		char *p;

		if (op->xml_len + len > S3_MAX_XML_BODY) {
			op->body_err = S3_ERR_MALFORMED_XML;
			return;
		}
		p = realloc(op->xml, op->xml_len + len + 1);
		if (p == NULL) {
			op->body_err = S3_ERR_INTERNAL;
			return;
		}
		op->xml = p;
		memcpy(op->xml + op->xml_len, data, len);
		op->xml_len += len;
		op->xml[op->xml_len] = '\0';
		return;
	}
	if (op->known_len) {
		if (len > op->expected - op->filled) {
			op->body_err = S3_ERR_INVALID_REQUEST; /* more than announced */
			return;
		}
	} else {
		/* Unknown length (chunked): grow, within maxpart and the capacity. */
		uint64_t need = op->filled + len;

		if (need > st->cfg.maxpart) {
			op->body_err = S3_ERR_ENTITY_TOO_LARGE;
			return;
		}
		if (need > op->reserved) {
			if (!reserve(st, need - op->reserved)) {
				op->body_err = S3_ERR_INSUFFICIENT_STORAGE;
				return;
			}
			op->reserved = need;
		}
		if (need > op->blob->len && blob_grow(op->blob, (size_t)need)) {
			op->body_err = S3_ERR_INSUFFICIENT_STORAGE;
			return;
		}
	}
	memcpy(op->blob->data + op->filled, data, len);
	op->filled += len;
	if (op->md5s) {
		/* The MD5 thread follows the copy (the blob was allocated whole: it does not move). */
		s3_md5s_avail(op->md5s, (size_t)op->filled);
		if (op->filled == op->expected)
			s3_md5s_close(op->md5s);
		return;
	}
	/* Hashed now, while the bytes are in cache, rather than in one pass at the end. */
	if (EVP_DigestUpdate(op->md5, data, len) != 1)
		op->body_err = S3_ERR_INTERNAL;
}

/* Give back the capacity and memory of a body that will not be stored. */
static void drop_body(struct s3_op *op)
{
	s3_md5s_drop(op->md5s); /* first: the thread may be reading the blob */
	op->md5s = NULL;
	unreserve(op->st, op->reserved);
	op->reserved = 0;
	s3_blob_put(op->blob);
	op->blob = NULL;
	EVP_MD_CTX_free(op->md5);
	op->md5 = NULL;
}

/* The body is complete and checked: op->blob holds exactly op->filled bytes. */
static bool body_ready(struct s3_op *op, uint8_t digest[16])
{
	if (op->body_err != S3_OK) {
		drop_body(op);
		op_error(op, op->body_err, NULL);
		return false;
	}
	if (op->known_len && op->filled != op->expected) {
		drop_body(op);
		op_error(op, S3_ERR_INCOMPLETE_BODY, NULL);
		return false;
	}
	if (!op->known_len) {
		struct s3_blob *b = blob_exact(op->blob, (size_t)op->filled);

		if (b == NULL) {
			drop_body(op);
			op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Out of memory.");
			return false;
		}
		op->blob = b;
		unreserve(op->st, op->reserved - op->filled);
		op->reserved = op->filled;
	}
	{
		unsigned int n = 0;

		/* Every byte of the body went through s3_op_body() (or the one RDMA READ): the hash is complete. */
		if (op->md5s) {
			bool ok = s3_md5s_wait(op->md5s, digest); /* closed: filled == expected */

			s3_md5s_drop(op->md5s);
			op->md5s = NULL;
			if (!ok) {
				drop_body(op);
				op_error(op, S3_ERR_INTERNAL, NULL);
				return false;
			}
		} else if (EVP_DigestFinal_ex(op->md5, digest, &n) != 1 || n != 16) {
			drop_body(op);
			op_error(op, S3_ERR_INTERNAL, NULL);
			return false;
		}
	}
	if (op->has_md5 && memcmp(digest, op->want_md5, 16) != 0) {
		drop_body(op);
		op_error(op, S3_ERR_BAD_DIGEST, NULL);
		return false;
	}
	return true;
}

static void finish_put(struct s3_op *op)
{
	uint8_t digest[16];
	char etag[48];

	if (!body_ready(op, digest))
		return;
	etag_of(digest, etag);
	if (!commit_object(op->st, op->key, op->blob, etag, op->content_type)) {
		drop_body(op);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	op->blob = NULL; /* the store owns it now, with its reservation */
	op->reserved = 0;
	op->resp.status = 200;
	op->resp.content_length = 0;
	op->resp.send_body = false;
	resp_header(&op->resp, "ETag", "%s", etag);
}

static void finish_part(struct s3_op *op)
{
	struct s3_upload *u = find_upload(op->st, op->upload_id, op->key);
	uint8_t digest[16];
	struct s3_part *p;

	if (u == NULL) { /* aborted or completed meanwhile */
		drop_body(op);
		op_error(op, S3_ERR_NO_SUCH_UPLOAD, NULL);
		return;
	}
	if (!body_ready(op, digest))
		return;
	if (op->part > u->nparts_alloc) {
		uint32_t n = op->part < 64 ? 64 : op->part;
		struct s3_part *np = realloc(u->parts, n * sizeof(*np));

		if (np == NULL) {
			drop_body(op);
			op_error(op, S3_ERR_INTERNAL, NULL);
			return;
		}
		memset(np + u->nparts_alloc, 0, (n - u->nparts_alloc) * sizeof(*np));
		u->parts = np;
		u->nparts_alloc = n;
	}
	p = &u->parts[op->part - 1];
	if (p->blob) { /* uploading a part again replaces it */
		unreserve(op->st, p->blob->len);
		s3_blob_put(p->blob);
	}
	p->blob = op->blob;
	memcpy(p->md5, digest, 16);
	etag_of(digest, p->etag);
	p->mtime = (int64_t)time(NULL);
	op->blob = NULL;
	op->reserved = 0;
	op->resp.status = 200;
	op->resp.content_length = 0;
	op->resp.send_body = false;
	resp_header(&op->resp, "ETag", "%s", p->etag);
}

/* The CompleteMultipartUpload document, read with expat. */
struct complete_doc {
	int depth;
	bool in_root, in_part, in_num, in_etag, bad;
	char text[128];
	size_t tlen;
	bool has_num, has_etag;
	uint64_t num;
	char etag[128];
	uint32_t n;
	uint32_t nums[S3_MAX_PARTS];
	char (*etags)[48];
};

static const char *local_name(const char *name)
{
	const char *c = strrchr(name, ':');

	return c ? c + 1 : name;
}

static void XMLCALL doc_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct complete_doc *d = ud;
	const char *n = local_name(name);

	(void)attrs;
	d->depth++;
	d->tlen = 0;
	if (d->depth == 1) {
		d->in_root = strcmp(n, "CompleteMultipartUpload") == 0;
		if (!d->in_root)
			d->bad = true;
	} else if (d->depth == 2 && strcmp(n, "Part") == 0) {
		d->in_part = true;
		d->has_num = d->has_etag = false;
	} else if (d->depth == 3 && d->in_part) {
		d->in_num = strcmp(n, "PartNumber") == 0;
		d->in_etag = strcmp(n, "ETag") == 0;
	}
}

static void XMLCALL doc_text(void *ud, const XML_Char *s, int len)
{
	struct complete_doc *d = ud;

	if (!(d->in_num || d->in_etag))
		return;
	if (len < 0 || d->tlen + (size_t)len >= sizeof(d->text)) {
		d->bad = true;
		return;
	}
	memcpy(d->text + d->tlen, s, (size_t)len);
	d->tlen += (size_t)len;
}

static void trim(char *s)
{
	size_t n = strlen(s), i = 0;

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	while (isspace((unsigned char)s[i]))
		i++;
	memmove(s, s + i, n - i + 1);
}

static void XMLCALL doc_end(void *ud, const XML_Char *name)
{
	struct complete_doc *d = ud;

	(void)name;
	if (d->depth == 3 && d->in_part && (d->in_num || d->in_etag)) {
		d->text[d->tlen] = '\0';
		trim(d->text);
		if (d->in_num) {
			d->has_num = parse_u64(d->text, &d->num) == 0;
			if (!d->has_num)
				d->bad = true;
		} else {
			snprintf(d->etag, sizeof(d->etag), "%s", d->text);
			d->has_etag = true;
		}
		d->in_num = d->in_etag = false;
	} else if (d->depth == 2 && d->in_part) {
		if (!d->has_num || !d->has_etag || d->n == S3_MAX_PARTS) {
			d->bad = true;
		} else {
			size_t elen = strlen(d->etag);

			d->nums[d->n] = d->num > UINT32_MAX ? UINT32_MAX : (uint32_t)d->num;
			/* An ETag too long to be ours can never match: keep it empty. */
			memcpy(d->etags[d->n], d->etag, elen < 48 ? elen + 1 : 1);
			if (elen >= 48)
				d->etags[d->n][0] = '\0';
			d->n++;
		}
		d->in_part = false;
	}
	d->depth--;
}

/* Compare ETags, with or without their quotes. */
static bool etag_match(const char *stored, const char *given)
{
	size_t n = strlen(given);

	if (n >= 2 && given[0] == '"' && given[n - 1] == '"')
		return strlen(stored) == n && strcmp(stored, given) == 0;
	return strlen(stored) == n + 2 && strncmp(stored + 1, given, n) == 0;
}

static void finish_complete(struct s3_op *op)
{
	struct s3_store *st = op->st;
	struct s3_upload *u = find_upload(st, op->upload_id, op->key);
	struct complete_doc *d;
	XML_Parser xp;
	uint64_t total = 0;
	uint8_t *cat_md5 = NULL, digest[16];
	struct s3_blob *blob = NULL;
	char etag[48], ip[16];
	struct sbuf s = { 0 };

	if (u == NULL) {
		op_error(op, S3_ERR_NO_SUCH_UPLOAD, NULL);
		return;
	}
	if (op->body_err != S3_OK) {
		op_error(op, op->body_err, NULL);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL || (d->etags = calloc(S3_MAX_PARTS, 48)) == NULL) {
		free(d);
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	xp = XML_ParserCreate(NULL);
	if (xp == NULL) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		goto out;
	}
	XML_SetUserData(xp, d);
	XML_SetElementHandler(xp, doc_start, doc_end);
	XML_SetCharacterDataHandler(xp, doc_text);
	if (XML_Parse(xp, op->xml ? op->xml : "", (int)op->xml_len, 1) != XML_STATUS_OK || d->bad || d->n == 0) {
		XML_ParserFree(xp);
		op_error(op, S3_ERR_MALFORMED_XML, NULL);
		goto out;
	}
	XML_ParserFree(xp);
	/* Checked in this order: valid and ascending part numbers, then each part uploaded with
	 * that ETag, then every part but the last at least 5 MiB. */
	for (uint32_t i = 0; i < d->n; i++) {
		if (d->nums[i] < 1 || d->nums[i] > S3_MAX_PARTS) {
			op_error(op, S3_ERR_INVALID_ARGUMENT, "Part number must be an integer between 1 and 10000, inclusive.");
			goto out;
		}
		if (i > 0 && d->nums[i] <= d->nums[i - 1]) {
			op_error(op, S3_ERR_INVALID_PART_ORDER, NULL);
			goto out;
		}
	}
	for (uint32_t i = 0; i < d->n; i++) {
		uint32_t num = d->nums[i];
		const struct s3_part *p = num <= u->nparts_alloc ? &u->parts[num - 1] : NULL;

		if (p == NULL || p->blob == NULL || !etag_match(p->etag, d->etags[i])) {
			op_error(op, S3_ERR_INVALID_PART, NULL);
			goto out;
		}
	}
	for (uint32_t i = 0; i < d->n; i++) {
		const struct s3_part *p = &u->parts[d->nums[i] - 1];

		if (i + 1 < d->n && p->blob->len < S3_MIN_PART_SIZE) {
			op_error(op, S3_ERR_ENTITY_TOO_SMALL, NULL);
			goto out;
		}
		total += p->blob->len;
	}
	if (!slot_available(st, u->key)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		goto out;
	}
	/* The parts are concatenated into the object: for a moment both are held. */
	if (total > SIZE_MAX || !reserve(st, total)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "The store's capacity is used up.");
		goto out;
	}
	blob = blob_new((size_t)total);
	cat_md5 = malloc((size_t)d->n * 16);
	if (blob == NULL || cat_md5 == NULL) {
		unreserve(st, total);
		s3_blob_put(blob);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Out of memory.");
		goto out;
	}
	total = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct s3_part *p = &u->parts[d->nums[i] - 1];

		if (p->blob->len)
			memcpy(blob->data + total, p->blob->data, p->blob->len);
		total += p->blob->len;
		memcpy(cat_md5 + 16 * i, p->md5, 16);
	}
	md5(cat_md5, (size_t)d->n * 16, digest);
	{
		char hex[33];

		hex_encode(digest, 16, hex);
		snprintf(etag, sizeof(etag), "\"%s-%u\"", hex, d->n);
	}
	if (!commit_object(st, u->key, blob, etag, u->content_type)) {
		unreserve(st, total);
		s3_blob_put(blob);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		goto out;
	}
	sb_puts(&s, XML_DECL "<CompleteMultipartUploadResult xmlns=\"" XMLNS "\">");
	format_ipv4(st->cfg.ip, ip);
	sb_printf(&s, "<Location>http://%s:%u/", ip, st->cfg.port);
	sb_xml(&s, st->cfg.bucket);
	sb_puts(&s, "/");
	sb_xml(&s, u->key);
	sb_puts(&s, "</Location>");
	sb_tag(&s, "Bucket", st->cfg.bucket);
	sb_tag(&s, "Key", u->key);
	sb_tag(&s, "ETag", etag);
	sb_puts(&s, "</CompleteMultipartUploadResult>");
	free_upload(st, u); /* the parts' bytes go back; the object holds its own */
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	resp_header(&op->resp, "ETag", "%s", etag);
out:
	free(cat_md5);
	if (d)
		free(d->etags);
	free(d);
}

void s3_op_finish(struct s3_op *op, struct s3_response *resp)
{
	/* A transfer the caller left undone is made now, whole. */
	while (s3_op_work(op, UINT64_MAX))
		;
	xfer_end(op);
	switch (op->kind) {
	case OP_PUT_OBJECT: finish_put(op); break;
	case OP_PUT_PART: finish_part(op); break;
	case OP_COMPLETE: finish_complete(op); break;
	case OP_DECIDED: break;
	}
	if (op->resp.status == 0)
		op->resp.status = 500;
	resp_header(&op->resp, "x-amz-request-id", "%s", op->request_id);
	if (op->rdma) {
		/* The RDMA path answers with the transfer in headers and no body of its own. */
		uint64_t moved = op->resp.status < 300 ? op->resp.len : 0;

		set_rdma(op, moved);
		if (op->resp.status < 300) {
			op->resp.content_length = 0;
			op->resp.send_body = false;
		}
		if (!op->resp.blob)
			op->resp.len = 0;
	}
	if (op->head && op->resp.send_body) {
		/* HEAD answers with the status and headers alone (an error's XML is not sent). */
		op->resp.send_body = false;
		if (op->resp.xml)
			op->resp.content_length = 0;
	}
	response_move(resp, &op->resp);
	free(op->xml);
	drop_body(op);
	free(op);
}

void s3_op_abort(struct s3_op *op)
{
	if (op == NULL)
		return;
	xfer_end(op);
	drop_body(op);
	s3_response_release(&op->resp);
	free(op->xml);
	free(op);
}

void s3_store_error_response(struct s3_store *st, int e, const char *resource, struct s3_response *resp)
{
	struct s3_op op = { .st = st };

	snprintf(op.request_id, sizeof(op.request_id), "%016" PRIX64, ++st->next_request_id);
	snprintf(op.resource, sizeof(op.resource), "%s", resource ? resource : "");
	op_error(&op, (enum s3_err)e, NULL);
	resp_header(&op.resp, "x-amz-request-id", "%s", op.request_id);
	op.resp.close = true;
	response_move(resp, &op.resp);
}
