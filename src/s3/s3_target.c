/*
 * The S3 store and its request handling; see s3_target.h.
 *
 * Semantics follow versitygw (backend/common.go, s3err, s3response) where the
 * s3 backend specification is silent: range handling, multipart rules and
 * the completed-upload ETag, the XML documents. Every failure answers with
 * an S3 XML error built from the one table in s3_err.c.
 */
#include "s3/s3_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/log.h"
#include "util/parse_int.h"

void object_headers(struct s3_op *op, const struct s3_object *o, const struct http_request *get)
{
	char date[30];

	http_format_date(o->mtime, date);
	resp_header(&op->resp, "ETag", "%s", o->etag);
	resp_header(&op->resp, "Last-Modified", "%s", date);
	resp_header(&op->resp, "Accept-Ranges", "bytes");
	s3_meta_emit(&op->resp, o->meta, get);
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

static void get_object(struct s3_op *op, const struct req *rq)
{
	struct s3_store *st = op->st;
	long i = store_find(st, rq->key);
	const struct s3_object *o;
	uint64_t start = 0, len, pn = 0;
	char pn_text[16];
	bool pn_has;
	int rr, cond;

	if (i < 0) {
		op_error(op, S3_ERR_NO_SUCH_KEY, NULL);
		return;
	}
	o = &st->objs[i];
	cond = s3_cond_read(rq->http, false, o->etag, o->mtime);
	if (cond == 412) {
		op_error(op, S3_ERR_PRECONDITION_FAILED, NULL);
		return;
	}
	if (cond == 304) {
		char date[30];

		/* Not Modified: the validators, and no body. */
		http_format_date(o->mtime, date);
		ok_empty(op, 304);
		resp_header(&op->resp, "ETag", "%s", o->etag);
		resp_header(&op->resp, "Last-Modified", "%s", date);
		return;
	}
	len = o->blob->len;
	pn_has = http_query_get(rq->http, "partNumber", pn_text, sizeof(pn_text)) >= 0;
	if (pn_has) {
		/* A ranged GET of one part of a multipart object (a whole object is its own part 1). */
		uint32_t n = o->nparts ? o->nparts : 1;

		if (parse_u64_range(pn_text, 1, S3_MAX_PARTS, &pn)) {
			op_error(op, S3_ERR_INVALID_ARGUMENT, "Part number must be an integer between 1 and 10000, inclusive.");
			return;
		}
		if (http_header_get(rq->http, "range")) {
			op_error(op, S3_ERR_INVALID_REQUEST, "Cannot specify both Range header and partNumber query parameter.");
			return;
		}
		if (pn > n) {
			op_error(op, S3_ERR_INVALID_PART_NUMBER, NULL);
			return;
		}
		start = pn == 1 || !o->nparts ? 0 : o->part_ends[pn - 2];
		len = (o->nparts ? o->part_ends[pn - 1] : o->blob->len) - start;
		rr = 1;
	} else {
		rr = parse_range(http_header_get(rq->http, "range"), o->blob->len, &start, &len);
	}
	if (rr < 0) {
		op_error(op, S3_ERR_INVALID_RANGE, NULL);
		resp_header(&op->resp, "Content-Range", "bytes */%zu", o->blob->len);
		return;
	}
	op->resp.status = rr ? 206 : 200;
	object_headers(op, o, rq->head ? NULL : rq->http);
	if (pn_has && o->nparts)
		resp_header(&op->resp, "x-amz-mp-parts-count", "%u", o->nparts);
	/* The object's checksum, when asked for and the whole object is read (S3 gives none for a range). */
	{
		const char *mode = http_header_get(rq->http, "x-amz-checksum-mode");

		if (mode && strcasecmp(mode, "ENABLED") == 0 && (!rr || (pn_has && !o->nparts)))
			checksum_headers(&op->resp, o->cks, o->cks_b64, o->cks_composite ? "COMPOSITE" : "FULL_OBJECT");
	}
	if (rr && len == 0)
		resp_header(&op->resp, "Content-Range", "bytes */0");
	else if (rr)
		resp_header(&op->resp, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/%zu", start,
			    start + len - 1, o->blob->len);
	op->kind = OP_DECIDED;

	if (rq->rdma) {
		uint64_t n = len;

		switch (rdma_admit(op, rq, &n, true)) {
		case RDMA_ERROR:
			return;
		case RDMA_DECLINE:
			break; /* the payload goes in the body, below */
		case RDMA_GO:
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
			return;
		}
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

int base64_md5(const char *v, uint8_t out[16])
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

/*
 * A write's conditions (PUT, CompleteMultipartUpload, CopyObject's
 * destination): If-None-Match: * (the key must not exist) and If-Match (it
 * must, with one of the ETags). S3 takes no other If-None-Match on a write.
 */
bool put_conditions_read(struct s3_op *op, const struct http_request *h)
{
	const char *inm = http_header_get(h, "if-none-match");
	const char *im = http_header_get(h, "if-match");

	if (inm) {
		if (strcmp(inm, "*") != 0) {
			op_error(op, S3_ERR_NOT_IMPLEMENTED, "If-None-Match on a write takes only \"*\".");
			return false;
		}
		op->if_none_match_any = true;
	}
	if (im) {
		if (im[0] == '\0' || strlen(im) >= sizeof(op->if_match)) {
			op_error(op, S3_ERR_INVALID_ARGUMENT, "The If-Match header is empty or too long.");
			return false;
		}
		snprintf(op->if_match, sizeof(op->if_match), "%s", im);
	}
	return true;
}

bool put_conditions_hold(struct s3_op *op)
{
	long i = store_find(op->st, op->key);

	if (op->if_none_match_any && i >= 0) {
		op_error(op, S3_ERR_PRECONDITION_FAILED, NULL);
		return false;
	}
	if (op->if_match[0]) {
		if (i < 0) {
			op_error(op, S3_ERR_NO_SUCH_KEY, NULL);
			return false;
		}
		if (!s3_etag_list_match(op->if_match, op->st->objs[i].etag)) {
			op_error(op, S3_ERR_PRECONDITION_FAILED, NULL);
			return false;
		}
	}
	return true;
}

/* Set up op to receive an object or part body (or move it by RDMA at once). */
void put_begin(struct s3_op *op, const struct req *rq, enum op_kind kind)
{
	struct s3_store *st = op->st;
	const char *cmd5 = http_header_get(rq->http, "content-md5");

	if (kind == OP_PUT_OBJECT) {
		enum s3_err e = s3_meta_from_request(rq->http, "binary/octet-stream", &op->meta);

		if (e != S3_OK) {
			op_error(op, e, NULL);
			return;
		}
		if (!put_conditions_read(op, rq->http) || !put_conditions_hold(op))
			return;
	}
	if (!checksum_read(op, rq->http))
		return;
	if (kind == OP_PUT_PART) {
		/* A part carries the upload's checksum: computed when the client sends none. */
		const struct s3_upload *u = upload_find(st, op->upload_id, op->key);

		if (u && u->cks != S3_CKS_NONE) {
			if (op->cks != S3_CKS_NONE && op->cks != u->cks) {
				char msg[128];

				snprintf(msg, sizeof(msg), "Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s",
					 s3_cks_name(u->cks), s3_cks_name(op->cks));
				op_error(op, S3_ERR_INVALID_REQUEST, msg);
				return;
			}
			op->cks = u->cks;
		}
	}
	if (cmd5) {
		if (base64_md5(cmd5, op->want_md5)) {
			op_error(op, S3_ERR_INVALID_DIGEST, NULL);
			return;
		}
		op->has_md5 = true;
	}
	if (kind == OP_PUT_OBJECT && !store_slot_available(st, op->key)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	if (rq->rdma) {
		uint64_t n = rq->token.len;

		switch (rdma_admit(op, rq, &n, false)) {
		case RDMA_ERROR:
			return;
		case RDMA_DECLINE:
			op_error(op, S3_ERR_RDMA_NOT_SUPPORTED, NULL);
			return;
		case RDMA_GO:
			break;
		}
		op->known_len = true;
		op->expected = n;
	} else if (!body_length(op, rq)) {
		return;
	}
	if (op->known_len) {
		if (!store_reserve(st, op->expected)) {
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
	op->md5 = st->root->spare_md5 ? st->root->spare_md5 : EVP_MD_CTX_new();
	st->root->spare_md5 = NULL;
	if (op->md5 == NULL || EVP_DigestInit_ex(op->md5, st->root->md5 ? st->root->md5 : EVP_md5(), NULL) != 1) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	op->kind = kind;
	if (!rq->rdma && op->known_len && op->expected >= S3_MD5_THREAD_MIN)
		op->md5s = s3_md5s_open(st->root->md5w, op->blob->data); /* NULL: hashed inline after all */
	if (rq->rdma) {
		/* Made by s3_op_work: read into the blob, hashed piece by piece. */
		op->xfer.rkey = rq->token.rkey;
		op->xfer.addr = rq->token.addr;
		op->xfer.len = op->expected;
	}
}

static void object_request(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;
	const char *m = h->method;
	char upload_id[64], partnum[16];
	bool has_upload = http_query_get(h, "uploadId", upload_id, sizeof(upload_id)) >= 0;

	if (http_query_has(h, "acl") || http_query_has(h, "tagging") || http_query_has(h, "retention") ||
	    http_query_has(h, "legal-hold") || http_query_has(h, "attributes") || http_query_has(h, "torrent") ||
	    http_query_has(h, "restore") || http_query_has(h, "select")) {
		op_error(op, S3_ERR_NOT_IMPLEMENTED, NULL);
		return;
	}
	if (has_upload) {
		struct s3_upload *u = upload_find(op->st, upload_id, rq->key);

		if (u == NULL) {
			/* A Complete retried after it succeeded gets the same answer again, as S3 gives. */
			if (strcmp(m, "POST") == 0 && complete_again(op, upload_id))
				return;
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
			op->part = (uint32_t)pn;
			if (http_header_get(h, "x-amz-copy-source"))
				upload_part_copy(op, rq, http_header_get(h, "x-amz-copy-source"));
			else
				put_begin(op, rq, OP_PUT_PART);
		} else if (strcmp(m, "POST") == 0) {
			const struct http_request *hh = rq->http;

			if (!hh->chunked && !hh->aws_chunked && hh->has_content_length && hh->content_length > S3_MAX_XML_BODY) {
				op_error(op, S3_ERR_MALFORMED_XML, "The completion document is too large.");
				return;
			}
			/* x-amz-checksum-<algo> on a Complete: the full object's, checked for a FULL_OBJECT upload */
			if (!put_conditions_read(op, h) || !put_conditions_hold(op) || !checksum_read(op, h))
				return;
			op->kind = OP_COMPLETE;
		} else if (strcmp(m, "DELETE") == 0) {
			persist_upload_remove(op->st, u->id);
			upload_free(op->st, u);
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
			copy_object(op, rq, http_header_get(h, "x-amz-copy-source"));
			return;
		}
		put_begin(op, rq, OP_PUT_OBJECT);
	} else if (strcmp(m, "DELETE") == 0) {
		store_delete(op->st, rq->key); /* idempotent: a missing key is still 204 */
		ok_empty(op, 204);
	} else if (strcmp(m, "POST") == 0 && http_query_has(h, "uploads")) {
		initiate_upload(op, rq);
	} else {
		op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
	}
}

/* ---- begin ---- */

/* Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). */
static bool utf8_valid(const char *str)
{
	const unsigned char *p = (const unsigned char *)str;

	while (*p) {
		unsigned c = *p, n;
		uint32_t cp;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}


/*
 * A request's state, zeroed but for the response's header table and storage
 * (12 KiB that nheaders and hdrused say are empty): the root's spare when it
 * has one, which the last request left.
 */
static struct s3_op *op_new(struct s3_store *st)
{
	struct s3_op *op = st->root->spare_op;
	size_t tail = offsetof(struct s3_op, resp) + offsetof(struct s3_response, hdrused);

	st->root->spare_op = NULL;
	if (op == NULL && (op = malloc(sizeof(*op))) == NULL)
		return NULL;
	memset(op, 0, offsetof(struct s3_op, resp) + offsetof(struct s3_response, headers));
	memset(&op->resp.nheaders, 0, offsetof(struct s3_response, hdrbuf) - offsetof(struct s3_response, nheaders));
	memset((char *)op + tail, 0, sizeof(*op) - tail);
	return op;
}

/* Done with a request's state: kept as the root's spare, or freed. */
static void op_release(struct s3_op *op)
{
	struct s3_store *root = op->st->root;

	if (root->spare_op == NULL)
		root->spare_op = op;
	else
		free(op);
}

struct s3_op *s3_op_begin(struct s3_store *st, const struct http_request *h)
{
	struct s3_op *op = op_new(st);
	struct req rq = { .http = h };
	struct s3_store *b;
	const char *p, *slash, *tok;
	size_t blen;

	if (op == NULL)
		return NULL;
	op->st = st;
	op->kind = OP_DECIDED;
	st->root->stats.requests++;
	{
		uint64_t id = ++st->root->next_request_id;

		/* 16 upper-case hex digits, as "%016" PRIX64 (every request has one: no printf) */
		for (int i = 15; i >= 0; i--, id >>= 4)
			op->request_id[i] = "0123456789ABCDEF"[id & 15];
		op->request_id[16] = '\0';
	}
	s3_strcpy(op->resource, sizeof(op->resource), h->path);
	s3_strcpy(op->method, sizeof(op->method), h->method);
	if (log_enabled(LOG_LEVEL_DEBUG)) { /* for the -v line alone */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		op->t0_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	}
	rq.head = strcmp(h->method, "HEAD") == 0;
	tok = http_header_get(h, "x-amz-rdma-token");
	if (tok && !rq.head) { /* a HEAD has no payload to move: its token is not looked at */
		rq.rdma = true;
		rq.token_ok = s3_token_parse_header(tok, &rq.token, &op->dialect) == 0;
		op->client_ll = rq.token_ok && s3_gid_link_local(rq.token.gid);
		if (op->dialect == S3_DIALECT_CUOBJ)
			st->root->stats.rdma_cuobj++;
		else
			st->root->stats.rdma_hipobj++;
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
	s3_strcpy(op->key, sizeof(op->key), slash ? slash + 1 : "");
	rq.key = op->key;
	if (!utf8_valid(op->key)) {
		op_error(op, S3_ERR_INVALID_URI, "Object keys are UTF-8; this one is not.");
		goto out;
	}

	if (rq.service) {
		if (strcmp(h->method, "GET") == 0)
			list_buckets(op);
		else if (rq.head)
			ok_empty(op, 200);
		else
			op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
	} else if ((b = bucket_find(st->root, rq.bucket)) == NULL) {
		if (rq.key[0] == '\0' && strcmp(h->method, "PUT") == 0 && h->query[0] == '\0' && st->cfg.buckets > 1)
			create_bucket(op, &rq);
		else
			op_error(op, S3_ERR_NO_SUCH_BUCKET, NULL);
	} else {
		op->st = b;
		if (rq.key[0] == '\0')
			bucket_request(op, &rq);
		else
			object_request(op, &rq);
	}
out:
	op->st->ops++; /* a bucket is not deleted under a request that uses it */
	op->resp.close = !h->keep_alive;
	op->rdma = rq.rdma;
	op->head = rq.head;
	return op;
}

/* ---- body and finish ---- */

bool s3_op_wants_body(const struct s3_op *op)
{
	return op->kind != OP_DECIDED && op->body_err == S3_OK && !op->rdma_admitted;
}

void s3_op_body(struct s3_op *op, const uint8_t *data, size_t len)
{
	struct s3_store *st = op->st;

	if (!s3_op_wants_body(op) || len == 0)
		return;
	if (op->kind == OP_COMPLETE || op->kind == OP_DELETE_MULTI) {
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
			if (!store_reserve(st, need - op->reserved)) {
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

/* Done with the body's MD5 context: kept as the root's spare (the next PUT initializes it again), or freed. */
static void md5_release(struct s3_op *op)
{
	struct s3_store *root = op->st->root;

	if (root->spare_md5 == NULL)
		root->spare_md5 = op->md5;
	else
		EVP_MD_CTX_free(op->md5);
	op->md5 = NULL;
}

/* Give back the capacity and memory of a body that will not be stored. */
void drop_body(struct s3_op *op)
{
	s3_md5s_drop(op->md5s); /* first: the thread may be reading the blob */
	op->md5s = NULL;
	store_unreserve(op->st, op->reserved);
	op->reserved = 0;
	s3_blob_put(op->blob);
	op->blob = NULL;
	md5_release(op);
}

/* The body is complete and checked: op->blob holds exactly op->filled bytes. */
bool body_ready(struct s3_op *op, uint8_t digest[16])
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
		store_unreserve(op->st, op->reserved - op->filled);
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
	/* The additional checksum: one pass over the body, only when the client named one. */
	if (!checksum_check(op, op->blob->data, (size_t)op->filled)) {
		drop_body(op);
		return false;
	}
	return true;
}

static void finish_put(struct s3_op *op)
{
	uint8_t digest[16];
	char etag[48];
	struct s3_object *o, tmpl;

	if (!body_ready(op, digest))
		return;
	etag_of(digest, etag);
	/* Decided with the write: nothing ran between this check and the commit. */
	if (!put_conditions_hold(op)) {
		drop_body(op);
		return;
	}
	/* Kept (dir=) before it is published: the file is there when the client hears 200. */
	memset(&tmpl, 0, sizeof(tmpl));
	snprintf(tmpl.etag, sizeof(tmpl.etag), "%s", etag);
	tmpl.meta = op->meta;
	tmpl.mtime = (int64_t)time(NULL);
	if (op->cks != S3_CKS_NONE) {
		tmpl.cks = op->cks;
		s3_cks_b64(op->cks_raw, s3_cks_len(op->cks), tmpl.cks_b64);
	}
	if (!store_slot_available(op->st, op->key)) {
		drop_body(op);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	if (!persist_object(op, op->key, op->blob, &tmpl)) {
		drop_body(op);
		return;
	}
	o = store_commit(op->st, op->key, op->blob, etag, &op->meta);
	if (o == NULL) {
		drop_body(op);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	o->mtime = tmpl.mtime;
	o->cks = tmpl.cks;
	memcpy(o->cks_b64, tmpl.cks_b64, sizeof(o->cks_b64));
	op->blob = NULL; /* the store owns it now, with its reservation */
	op->reserved = 0;
	op->resp.status = 200;
	op->resp.content_length = 0;
	op->resp.send_body = false;
	resp_header(&op->resp, "ETag", "%s", etag);
	checksum_headers(&op->resp, o->cks, o->cks_b64, NULL);
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
	case OP_DELETE_MULTI: finish_delete_objects(op); break;
	case OP_DECIDED: break;
	}
	if (op->resp.status == 0)
		op->resp.status = 500;
	resp_header(&op->resp, "x-amz-request-id", "%s", op->request_id);
	rdma_reply(op);
	if (op->head && op->resp.send_body) {
		/* HEAD answers with the status and headers alone (an error's XML is not sent). */
		op->resp.send_body = false;
		if (op->resp.xml)
			op->resp.content_length = 0;
	}
	op_log(op);
	response_move(resp, &op->resp);
	free(op->xml);
	drop_body(op);
	s3_meta_free(op->meta);
	op->st->ops--;
	op_release(op);
}

void s3_op_abort(struct s3_op *op)
{
	if (op == NULL)
		return;
	xfer_end(op);
	drop_body(op);
	s3_response_release(&op->resp);
	free(op->xml);
	s3_meta_free(op->meta);
	op->st->ops--;
	op_release(op);
}

void s3_store_error_response(struct s3_store *st, int e, const char *resource, struct s3_response *resp)
{
	struct s3_op op = { .st = st };

	snprintf(op.request_id, sizeof(op.request_id), "%016" PRIX64, ++st->root->next_request_id);
	snprintf(op.resource, sizeof(op.resource), "%s", resource ? resource : "");
	op_error(&op, (enum s3_err)e, NULL);
	resp_header(&op.resp, "x-amz-request-id", "%s", op.request_id);
	op.resp.close = true;
	response_move(resp, &op.resp);
}

