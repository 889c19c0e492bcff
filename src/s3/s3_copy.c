/*
 * CopyObject and UploadPartCopy: a PUT whose x-amz-copy-source names an
 * object of this store.
 *
 * A copy shares the source's bytes (blobs are never written once stored), so
 * it costs no copy of the data; its capacity is counted again, as a new
 * object's. It keeps the source's ETag (an MD5 for a single PUT, the
 * multipart form with its part boundaries otherwise) and its checksum. The metadata is the
 * source's (x-amz-metadata-directive COPY, the default) or the request's
 * (REPLACE); a copy onto itself must REPLACE, as S3 requires. The source's
 * conditions are x-amz-copy-source-if-*, each failing with 412; the
 * destination's are a write's (If-None-Match: *, If-Match).
 *
 * UploadPartCopy makes a part from the source or from the byte range of
 * x-amz-copy-source-range; those bytes are copied and hashed, since a part's
 * ETag is the MD5 of its own bytes.
 */
#include "s3/s3_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/parse_int.h"

/*
 * The source object of a copy: "bucket/key" or "/bucket/key", percent-encoded,
 * optionally with "?versionId=null" (the only version an unversioned store
 * has). NULL with the error set.
 */
static const struct s3_object *copy_source(struct s3_op *op, const char *source)
{
	struct s3_store *st = op->st;
	char raw[3 * S3_MAX_KEY_LEN + 512], path[S3_MAX_KEY_LEN + 512];
	const char *q;
	char *slash;
	size_t n;
	long i;

	if (source[0] == '/')
		source++;
	q = strchr(source, '?');
	n = q ? (size_t)(q - source) : strlen(source);
	if (n >= sizeof(raw)) {
		op_error(op, S3_ERR_KEY_TOO_LONG, NULL);
		return NULL;
	}
	memcpy(raw, source, n);
	raw[n] = '\0';
	if (q && strcmp(q, "?versionId=null") != 0) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
		return NULL;
	}
	if (http_percent_decode(raw, n, path, sizeof(path)) < 0) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
		return NULL;
	}
	slash = strchr(path, '/');
	if (slash == NULL || slash == path || slash[1] == '\0') {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
		return NULL;
	}
	*slash = '\0';
	st = bucket_find(st->root, path); /* the source may be in another bucket */
	if (st == NULL) {
		op_error(op, S3_ERR_NO_SUCH_BUCKET, NULL);
		return NULL;
	}
	if (strlen(slash + 1) > S3_MAX_KEY_LEN) {
		op_error(op, S3_ERR_KEY_TOO_LONG, NULL);
		return NULL;
	}
	i = store_find(st, slash + 1);
	if (i < 0) {
		op_error(op, S3_ERR_NO_SUCH_KEY, NULL);
		return NULL;
	}
	return &st->objs[i];
}

static bool source_conditions_hold(struct s3_op *op, const struct req *rq, const struct s3_object *src)
{
	if (s3_cond_read(rq->http, true, src->etag, src->mtime) != 0) {
		op_error(op, S3_ERR_PRECONDITION_FAILED, NULL);
		return false;
	}
	return true;
}

/* <tag xmlns=...><LastModified/><ETag/></tag>, the answer of both copies. */
static void copy_result(struct s3_op *op, const char *tag, int64_t mtime, const char *etag)
{
	struct sbuf s = { 0 };
	char date[32];

	iso8601(mtime, date);
	sb_printf(&s, XML_DECL "<%s xmlns=\"" XMLNS "\">", tag);
	sb_tag(&s, "LastModified", date);
	sb_tag(&s, "ETag", etag);
	sb_printf(&s, "</%s>", tag);
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	op->kind = OP_DECIDED;
}

void copy_object(struct s3_op *op, const struct req *rq, const char *source)
{
	struct s3_store *st = op->st;
	const struct s3_object *src = copy_source(op, source);
	const char *dir = http_header_get(rq->http, "x-amz-metadata-directive");
	struct s3_blob *blob;
	struct s3_object *o;
	uint64_t *ends = NULL;
	uint32_t nparts;
	char etag[48], cks_b64[S3_CKS_B64_MAX];
	enum s3_cks cks;
	bool replace, cks_composite;
	int64_t mtime;

	if (src == NULL || !source_conditions_hold(op, rq, src))
		return;
	if (dir && strcmp(dir, "COPY") != 0 && strcmp(dir, "REPLACE") != 0) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Unknown metadata directive.");
		return;
	}
	replace = dir && strcmp(dir, "REPLACE") == 0;
	if (!replace && strcmp(src->key, op->key) == 0) {
		op_error(op, S3_ERR_INVALID_REQUEST,
			 "This copy request is illegal because it is trying to copy an object to itself without changing "
			 "the object's metadata, storage class, website redirect location or encryption attributes.");
		return;
	}
	if (!put_conditions_read(op, rq->http) || !put_conditions_hold(op))
		return;
	if (!store_slot_available(st, op->key)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	if (replace) {
		enum s3_err e = s3_meta_from_request(rq->http, "binary/octet-stream", &op->meta);

		if (e != S3_OK) {
			op_error(op, e, NULL);
			return;
		}
	} else if ((op->meta = s3_meta_dup(src->meta)) == NULL) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	nparts = src->nparts;
	if (nparts) {
		ends = malloc(nparts * sizeof(*ends));
		if (ends == NULL) {
			op_error(op, S3_ERR_INTERNAL, NULL);
			return;
		}
		memcpy(ends, src->part_ends, nparts * sizeof(*ends));
	}
	if (!store_reserve(st, src->blob->len)) {
		free(ends);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "The store's capacity is used up.");
		return;
	}
	/* The source may be the object replaced: hold what is taken from it first. */
	blob = src->blob;
	blob->refs++;
	snprintf(etag, sizeof(etag), "%s", src->etag);
	cks = src->cks;
	cks_composite = src->cks_composite;
	snprintf(cks_b64, sizeof(cks_b64), "%s", src->cks_b64);
	{
		struct s3_object tmpl;

		memset(&tmpl, 0, sizeof(tmpl));
		snprintf(tmpl.etag, sizeof(tmpl.etag), "%s", etag);
		tmpl.meta = op->meta;
		tmpl.mtime = (int64_t)time(NULL);
		tmpl.nparts = nparts;
		tmpl.part_ends = ends;
		tmpl.cks = cks;
		tmpl.cks_composite = cks_composite;
		snprintf(tmpl.cks_b64, sizeof(tmpl.cks_b64), "%s", cks_b64);
		if (!persist_object(op, op->key, blob, &tmpl)) {
			store_unreserve(st, blob->len);
			s3_blob_put(blob);
			free(ends);
			return;
		}
		mtime = tmpl.mtime;
	}
	o = store_commit(st, op->key, blob, etag, &op->meta);
	if (o == NULL) {
		store_unreserve(st, blob->len);
		s3_blob_put(blob);
		free(ends);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		return;
	}
	o->mtime = mtime;
	o->nparts = nparts;
	o->part_ends = ends;
	o->cks = cks;
	o->cks_composite = cks_composite;
	snprintf(o->cks_b64, sizeof(o->cks_b64), "%s", cks_b64);
	copy_result(op, "CopyObjectResult", o->mtime, o->etag);
}

void upload_part_copy(struct s3_op *op, const struct req *rq, const char *source)
{
	struct s3_store *st = op->st;
	struct s3_upload *u = upload_find(st, op->upload_id, op->key);
	const struct s3_object *src = copy_source(op, source);
	const char *range = http_header_get(rq->http, "x-amz-copy-source-range");
	uint64_t start = 0, len;
	struct s3_blob *blob;
	struct s3_part *p;
	uint8_t digest[16];

	if (src == NULL || !source_conditions_hold(op, rq, src))
		return;
	if (u == NULL) {
		op_error(op, S3_ERR_NO_SUCH_UPLOAD, NULL);
		return;
	}
	len = src->blob->len;
	if (range) {
		/* Exactly "bytes=first-last", within the source. */
		char a[24], b[24];
		uint64_t last;
		const char *dash = strchr(range, '-');

		if (strncmp(range, "bytes=", 6) != 0 || dash == NULL || (size_t)(dash - range - 6) >= sizeof(a) ||
		    strlen(dash + 1) >= sizeof(b)) {
			op_error(op, S3_ERR_INVALID_ARGUMENT, "The x-amz-copy-source-range value must be of the form bytes=first-last.");
			return;
		}
		memcpy(a, range + 6, (size_t)(dash - range - 6));
		a[dash - range - 6] = '\0';
		strcpy(b, dash + 1);
		if (parse_u64(a, &start) || parse_u64(b, &last) || last < start) {
			op_error(op, S3_ERR_INVALID_ARGUMENT, "The x-amz-copy-source-range value must be of the form bytes=first-last.");
			return;
		}
		if (last >= src->blob->len) {
			char msg[96];

			snprintf(msg, sizeof(msg), "Range specified is not valid for source object of size: %zu", src->blob->len);
			op_error(op, S3_ERR_INVALID_ARGUMENT, msg);
			return;
		}
		len = last - start + 1;
	}
	if (len > st->cfg.maxpart) {
		op_error(op, S3_ERR_ENTITY_TOO_LARGE, NULL);
		return;
	}
	if (!store_reserve(st, len)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "The store's capacity is used up.");
		return;
	}
	blob = blob_new((size_t)len);
	if (blob == NULL) {
		store_unreserve(st, len);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Out of memory.");
		return;
	}
	if (len)
		memcpy(blob->data, src->blob->data + start, (size_t)len);
	md5_digest(blob->data, (size_t)len, digest);
	p = upload_set_part(st, u, op->part, blob, digest);
	if (p == NULL) {
		store_unreserve(st, len);
		s3_blob_put(blob);
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	/* The upload's checksum for the part, as for an uploaded one. */
	if (u->cks != S3_CKS_NONE && s3_cks_compute(u->cks, blob->data, (size_t)len, p->cks_raw) == 0)
		p->cks = u->cks;
	if (!persist_part(op, u, op->part, p))
		return;
	copy_result(op, "CopyPartResult", p->mtime, p->etag);
}
