/*
 * Multipart uploads: create, upload a part, complete (the document read
 * with expat; the ETag is the MD5 of the parts' MD5s, then "-N").
 */
#include "s3/s3_internal.h"

#include <ctype.h>
#include <expat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util/parse_int.h"

/*
 * x-amz-checksum-algorithm and x-amz-checksum-type of CreateMultipartUpload,
 * as S3 allows them: CRC64NVME only over the full object, the SHAs only
 * composite, the CRC32s either (composite by default).
 */
static bool upload_checksum_type(struct s3_op *op, const struct http_request *h, struct s3_upload *u)
{
	const char *alg = http_header_get(h, "x-amz-checksum-algorithm");
	const char *type = http_header_get(h, "x-amz-checksum-type");

	if (alg == NULL) {
		if (type) {
			op_error(op, S3_ERR_INVALID_REQUEST, "The x-amz-checksum-type header needs x-amz-checksum-algorithm.");
			return false;
		}
		return true;
	}
	u->cks = s3_cks_from_name(alg);
	if (u->cks == S3_CKS_NONE) {
		op_error(op, S3_ERR_INVALID_REQUEST, "Value for x-amz-checksum-algorithm header is invalid.");
		return false;
	}
	u->cks_full = u->cks == S3_CKS_CRC64NVME;
	if (type) {
		bool full = strcmp(type, "FULL_OBJECT") == 0;

		if ((!full && strcmp(type, "COMPOSITE") != 0) || (full && (u->cks == S3_CKS_SHA1 || u->cks == S3_CKS_SHA256)) ||
		    (!full && u->cks == S3_CKS_CRC64NVME)) {
			op_error(op, S3_ERR_INVALID_REQUEST, "The checksum type is not valid with this checksum algorithm.");
			return false;
		}
		u->cks_full = full;
	}
	return true;
}

void initiate_upload(struct s3_op *op, const struct req *rq)
{
	struct s3_store *st = op->st;
	struct s3_upload *u;
	uint8_t rnd[16];
	struct s3_meta *meta;
	enum s3_err e;
	struct sbuf s = { 0 };

	if (st->root->stats.uploads >= S3_MAX_UPLOADS) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Too many multipart uploads in progress.");
		return;
	}
	/* The object's metadata is given when the upload starts. */
	e = s3_meta_from_request(rq->http, "binary/octet-stream", &meta);
	if (e != S3_OK) {
		op_error(op, e, NULL);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (u == NULL || (u->key = strdup(rq->key)) == NULL) {
		free(u);
		s3_meta_free(meta);
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	u->meta = meta;
	if (!upload_checksum_type(op, rq->http, u)) {
		s3_meta_free(meta);
		free(u->key);
		free(u);
		return;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t c = ++st->root->next_request_id ^ (uint64_t)time(NULL);

		memcpy(rnd, &c, 8);
		memcpy(rnd + 8, &u, sizeof(void *) < 8 ? sizeof(void *) : 8);
	}
	hex_encode(rnd, sizeof(rnd), u->id);
	u->started = (int64_t)time(NULL);
	u->next = st->uploads;
	st->uploads = u;
	st->nuploads++;
	st->root->stats.uploads++;
	if (!persist_upload(op, u)) {
		persist_upload_remove(st, u->id);
		upload_free(st, u);
		return;
	}

	sb_puts(&s, XML_DECL "<InitiateMultipartUploadResult xmlns=\"" XMLNS "\">");
	sb_tag(&s, "Bucket", st->cfg.bucket);
	sb_tag(&s, "Key", rq->key);
	sb_tag(&s, "UploadId", u->id);
	sb_puts(&s, "</InitiateMultipartUploadResult>");
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	if (u->cks != S3_CKS_NONE) {
		char up[16];
		size_t i;

		for (i = 0; s3_cks_name(u->cks)[i] && i + 1 < sizeof(up); i++)
			up[i] = (char)toupper((unsigned char)s3_cks_name(u->cks)[i]);
		up[i] = '\0';
		resp_header(&op->resp, "x-amz-checksum-algorithm", "%s", up);
		resp_header(&op->resp, "x-amz-checksum-type", "%s", u->cks_full ? "FULL_OBJECT" : "COMPOSITE");
	}
	op->kind = OP_DECIDED;
}

struct s3_part *upload_set_part(struct s3_store *st, struct s3_upload *u, uint32_t part, struct s3_blob *blob,
				const uint8_t digest[16])
{
	struct s3_part *p;

	if (part > u->nparts_alloc) {
		uint32_t n = part < 64 ? 64 : part;
		struct s3_part *np = realloc(u->parts, n * sizeof(*np));

		if (np == NULL)
			return NULL;
		memset(np + u->nparts_alloc, 0, (n - u->nparts_alloc) * sizeof(*np));
		u->parts = np;
		u->nparts_alloc = n;
	}
	p = &u->parts[part - 1];
	if (p->blob) { /* uploading a part again replaces it */
		store_unreserve(st, p->blob->len);
		s3_blob_put(p->blob);
	}
	p->blob = blob;
	p->cks = S3_CKS_NONE;
	memcpy(p->md5, digest, 16);
	etag_of(digest, p->etag);
	p->mtime = (int64_t)time(NULL);
	return p;
}

void finish_part(struct s3_op *op)
{
	struct s3_upload *u = upload_find(op->st, op->upload_id, op->key);
	uint8_t digest[16];
	struct s3_part *p;

	if (u == NULL) { /* aborted or completed meanwhile */
		drop_body(op);
		op_error(op, S3_ERR_NO_SUCH_UPLOAD, NULL);
		return;
	}
	if (!body_ready(op, digest))
		return;
	p = upload_set_part(op->st, u, op->part, op->blob, digest);
	if (p == NULL) {
		drop_body(op);
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	p->cks = op->cks;
	memcpy(p->cks_raw, op->cks_raw, sizeof(p->cks_raw));
	op->blob = NULL;
	op->reserved = 0;
	if (!persist_part(op, u, op->part, p))
		return;
	op->resp.status = 200;
	op->resp.content_length = 0;
	op->resp.send_body = false;
	resp_header(&op->resp, "ETag", "%s", p->etag);
	if (p->cks != S3_CKS_NONE) {
		char b64[S3_CKS_B64_MAX];

		s3_cks_b64(p->cks_raw, s3_cks_len(p->cks), b64);
		checksum_headers(&op->resp, p->cks, b64, NULL);
	}
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
	/* a part's Checksum<ALGO>, when the document gives one */
	bool in_cks, has_cks;
	enum s3_cks cks_cur;
	char cks_text[S3_CKS_B64_MAX];
	uint8_t cks_algo[S3_MAX_PARTS];
	char (*cks)[S3_CKS_B64_MAX];
};

static void XMLCALL doc_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct complete_doc *d = ud;
	const char *n = xml_local_name(name);

	(void)attrs;
	d->depth++;
	d->tlen = 0;
	if (d->depth == 1) {
		d->in_root = strcmp(n, "CompleteMultipartUpload") == 0;
		if (!d->in_root)
			d->bad = true;
	} else if (d->depth == 2 && strcmp(n, "Part") == 0) {
		d->in_part = true;
		d->has_num = d->has_etag = d->has_cks = false;
	} else if (d->depth == 3 && d->in_part) {
		d->in_num = strcmp(n, "PartNumber") == 0;
		d->in_etag = strcmp(n, "ETag") == 0;
		d->cks_cur = strncmp(n, "Checksum", 8) == 0 ? s3_cks_from_name(n + 8) : S3_CKS_NONE;
		d->in_cks = d->cks_cur != S3_CKS_NONE;
	}
}

static void XMLCALL doc_text(void *ud, const XML_Char *s, int len)
{
	struct complete_doc *d = ud;

	if (!(d->in_num || d->in_etag || d->in_cks))
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
	if (d->depth == 3 && d->in_part && (d->in_num || d->in_etag || d->in_cks)) {
		d->text[d->tlen] = '\0';
		trim(d->text);
		if (d->in_cks) {
			size_t n = strlen(d->text);

			if (d->has_cks || n >= sizeof(d->cks_text))
				d->bad = true;
			else
				memcpy(d->cks_text, d->text, n + 1);
			d->has_cks = true;
			d->in_cks = false;
		} else if (d->in_num) {
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
			d->cks_algo[d->n] = d->has_cks ? (uint8_t)d->cks_cur : S3_CKS_NONE;
			if (d->has_cks)
				snprintf(d->cks[d->n], sizeof(d->cks[0]), "%s", d->cks_text);
			d->n++;
		}
		d->in_part = false;
	}
	d->depth--;
}

/* Compare ETags, with or without their quotes. */
bool etag_match(const char *stored, const char *given)
{
	size_t n = strlen(given);

	if (n >= 2 && given[0] == '"' && given[n - 1] == '"')
		return strlen(stored) == n && strcmp(stored, given) == 0;
	return strlen(stored) == n + 2 && strncmp(stored + 1, given, n) == 0;
}

struct object_cks {
	enum s3_cks algo;
	bool composite;
	char b64[S3_CKS_B64_MAX];
};

/*
 * The completed object's checksum, for an upload created with one: over its
 * bytes (FULL_OBJECT), or over the digests of its parts followed by "-N"
 * (COMPOSITE), as S3 computes them. A part uploaded without one gets its own
 * computed here. A full-object value the Complete request gives in
 * x-amz-checksum-<algo> is checked. False with the error set.
 */
static bool upload_object_checksum(struct s3_op *op, const struct s3_upload *u, const struct complete_doc *d,
				   const struct s3_blob *blob, struct object_cks *out)
{
	uint8_t raw[S3_CKS_MAX_LEN];
	size_t n = s3_cks_len(u->cks);

	memset(out, 0, sizeof(*out));
	if (u->cks == S3_CKS_NONE)
		return true;
	out->algo = u->cks;
	if (u->cks_full) {
		if (s3_cks_compute(u->cks, blob->data, blob->len, raw)) {
			op_error(op, S3_ERR_INTERNAL, NULL);
			return false;
		}
		s3_cks_b64(raw, n, out->b64);
		if (op->cks_given && op->cks == u->cks && memcmp(op->cks_want, raw, n) != 0) {
			op_error(op, S3_ERR_BAD_DIGEST, "The checksum you specified did not match the calculated checksum.");
			return false;
		}
		return true;
	}
	{
		uint8_t *cat = malloc((size_t)d->n * n);
		char b64[S3_CKS_B64_MAX];

		if (cat == NULL) {
			op_error(op, S3_ERR_INTERNAL, NULL);
			return false;
		}
		for (uint32_t i = 0; i < d->n; i++) {
			const struct s3_part *p = &u->parts[d->nums[i] - 1];

			if (p->cks == u->cks)
				memcpy(cat + i * n, p->cks_raw, n);
			else if (s3_cks_compute(u->cks, p->blob->data, p->blob->len, cat + i * n)) {
				free(cat);
				op_error(op, S3_ERR_INTERNAL, NULL);
				return false;
			}
		}
		if (s3_cks_compute(u->cks, cat, (size_t)d->n * n, raw)) {
			free(cat);
			op_error(op, S3_ERR_INTERNAL, NULL);
			return false;
		}
		free(cat);
		s3_cks_b64(raw, n, b64);
		snprintf(out->b64, sizeof(out->b64), "%.45s-%u", b64, d->n); /* 32 bytes take 44 */
		out->composite = true;
	}
	return true;
}

/* The CompleteMultipartUploadResult of object o. */
static void complete_result(struct s3_op *op, const struct s3_object *o)
{
	struct s3_store *st = op->st;
	struct sbuf s = { 0 };
	char ip[16];

	sb_puts(&s, XML_DECL "<CompleteMultipartUploadResult xmlns=\"" XMLNS "\">");
	format_ipv4(st->cfg.ip, ip);
	sb_printf(&s, "<Location>http://%s:%u/", ip, st->cfg.port);
	sb_xml(&s, st->cfg.bucket);
	sb_puts(&s, "/");
	sb_xml(&s, o->key);
	sb_puts(&s, "</Location>");
	sb_tag(&s, "Bucket", st->cfg.bucket);
	sb_tag(&s, "Key", o->key);
	sb_tag(&s, "ETag", o->etag);
	if (o->cks != S3_CKS_NONE) {
		sb_tag(&s, s3_cks_xml(o->cks), o->cks_b64);
		sb_tag(&s, "ChecksumType", o->cks_composite ? "COMPOSITE" : "FULL_OBJECT");
	}
	sb_puts(&s, "</CompleteMultipartUploadResult>");
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	resp_header(&op->resp, "ETag", "%s", o->etag);
	op->kind = OP_DECIDED;
}

bool complete_again(struct s3_op *op, const char *id)
{
	long i = store_find(op->st, op->key);

	if (i < 0 || op->st->objs[i].upload_id[0] == '\0' || strcmp(op->st->objs[i].upload_id, id) != 0)
		return false;
	complete_result(op, &op->st->objs[i]);
	return true;
}

void finish_complete(struct s3_op *op)
{
	struct s3_store *st = op->st;
	struct s3_upload *u = upload_find(st, op->upload_id, op->key);
	struct complete_doc *d;
	XML_Parser xp;
	uint64_t total = 0;
	uint8_t *cat_md5 = NULL, digest[16];
	struct s3_blob *blob = NULL;
	char etag[48];
	uint64_t *ends;
	struct s3_object *o;
	struct object_cks cks;
	int64_t mtime;

	if (u == NULL) {
		op_error(op, S3_ERR_NO_SUCH_UPLOAD, NULL);
		return;
	}
	if (op->body_err != S3_OK) {
		op_error(op, op->body_err, NULL);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL || (d->etags = calloc(S3_MAX_PARTS, 48)) == NULL ||
	    (d->cks = calloc(S3_MAX_PARTS, sizeof(*d->cks))) == NULL) {
		if (d)
			free(d->etags);
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
		/* A part's checksum in the document must be the one it was uploaded with. */
		if (d->cks_algo[i] != S3_CKS_NONE) {
			char b64[S3_CKS_B64_MAX];

			if (p->cks != d->cks_algo[i]) {
				op_error(op, S3_ERR_INVALID_PART, "A part's checksum is not of the type it was uploaded with.");
				goto out;
			}
			s3_cks_b64(p->cks_raw, s3_cks_len(p->cks), b64);
			if (strcmp(b64, d->cks[i]) != 0) {
				op_error(op, S3_ERR_INVALID_PART, NULL);
				goto out;
			}
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
	if (!store_slot_available(st, u->key)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		goto out;
	}
	/* The parts are concatenated into the object: for a moment both are held. */
	if (total > SIZE_MAX || !store_reserve(st, total)) {
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "The store's capacity is used up.");
		goto out;
	}
	blob = blob_new((size_t)total);
	cat_md5 = malloc((size_t)d->n * 16);
	ends = malloc((size_t)d->n * sizeof(*ends)); /* the part boundaries, for GET ?partNumber */
	if (blob == NULL || cat_md5 == NULL || ends == NULL) {
		store_unreserve(st, total);
		s3_blob_put(blob);
		free(ends);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "Out of memory.");
		goto out;
	}
	total = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct s3_part *p = &u->parts[d->nums[i] - 1];

		if (p->blob->len)
			memcpy(blob->data + total, p->blob->data, p->blob->len);
		total += p->blob->len;
		ends[i] = total;
		memcpy(cat_md5 + 16 * i, p->md5, 16);
	}
	md5_digest(cat_md5, (size_t)d->n * 16, digest);
	{
		char hex[33];

		hex_encode(digest, 16, hex);
		snprintf(etag, sizeof(etag), "\"%s-%u\"", hex, d->n);
	}
	/* The write's conditions, decided with the commit. */
	if (!put_conditions_hold(op)) {
		store_unreserve(st, total);
		s3_blob_put(blob);
		free(ends);
		goto out;
	}
	if (!upload_object_checksum(op, u, d, blob, &cks)) {
		store_unreserve(st, total);
		s3_blob_put(blob);
		free(ends);
		goto out;
	}
	{
		struct s3_object tmpl;

		memset(&tmpl, 0, sizeof(tmpl));
		snprintf(tmpl.etag, sizeof(tmpl.etag), "%s", etag);
		tmpl.meta = u->meta;
		tmpl.mtime = (int64_t)time(NULL);
		tmpl.nparts = d->n;
		tmpl.part_ends = ends;
		tmpl.cks = cks.algo;
		tmpl.cks_composite = cks.composite;
		snprintf(tmpl.cks_b64, sizeof(tmpl.cks_b64), "%s", cks.b64);
		snprintf(tmpl.upload_id, sizeof(tmpl.upload_id), "%s", u->id);
		if (!persist_object(op, u->key, blob, &tmpl)) {
			store_unreserve(st, total);
			s3_blob_put(blob);
			free(ends);
			goto out;
		}
		mtime = tmpl.mtime;
	}
	o = store_commit(st, u->key, blob, etag, &u->meta);
	if (o == NULL) {
		store_unreserve(st, total);
		s3_blob_put(blob);
		free(ends);
		op_error(op, S3_ERR_INSUFFICIENT_STORAGE, "All object slots are in use.");
		goto out;
	}
	o->mtime = mtime;
	o->nparts = d->n;
	o->part_ends = ends;
	o->cks = cks.algo;
	o->cks_composite = cks.composite;
	snprintf(o->cks_b64, sizeof(o->cks_b64), "%s", cks.b64);
	snprintf(o->upload_id, sizeof(o->upload_id), "%s", u->id);
	persist_upload_remove(st, u->id);
	upload_free(st, u); /* the parts' bytes go back; the object holds its own */
	complete_result(op, o);
out:
	free(cat_md5);
	if (d) {
		free(d->etags);
		free(d->cks);
	}
	free(d);
}
