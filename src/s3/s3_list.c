/*
 * Listings: ListBuckets, ListObjects (V1 and V2), ListMultipartUploads and
 * ListParts. Paging never repeats or skips a key or a common prefix: a
 * position inside a common prefix skips that prefix whole.
 */
#include "s3/s3_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse_int.h"

#define DEFAULT_MAX_KEYS 1000

void list_buckets(struct s3_op *op)
{
	struct sbuf s = { 0 };
	char date[32];

	iso8601(op->st->created, date);
	sb_puts(&s, XML_DECL "<ListAllMyBucketsResult xmlns=\"" XMLNS "\">");
	sb_puts(&s, "<Owner><ID>rocm-ernic</ID><DisplayName>rocm-ernic</DisplayName></Owner><Buckets>");
	for (const struct s3_store *b = op->st->root; b; b = b->next) {
		iso8601(b->created, date);
		sb_puts(&s, "<Bucket>");
		sb_tag(&s, "Name", b->cfg.bucket);
		sb_tag(&s, "CreationDate", date);
		sb_puts(&s, "</Bucket>");
	}
	sb_puts(&s, "</Buckets></ListAllMyBucketsResult>");
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

/* Text as encoding-type=url asks: all but unreserved characters and '/' percent-encoded. */
static void sb_name(struct sbuf *s, const char *tag, const char *text, bool url)
{
	static const char hex[] = "0123456789ABCDEF";

	if (!url) {
		sb_tag(s, tag, text);
		return;
	}
	sb_printf(s, "<%s>", tag);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '_' || *p == '.' || *p == '~' || *p == '/') {
			sb_add(s, (const char *)p, 1);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			sb_add(s, e, 3);
		}
	}
	sb_printf(s, "</%s>", tag);
}

/* encoding-type: absent, or "url"; false with the error set. */
static bool encoding_type(struct s3_op *op, const struct http_request *h, bool *url)
{
	char v[16];
	int n = http_query_get(h, "encoding-type", v, sizeof(v));

	*url = false;
	if (n == -ENOENT)
		return true;
	if (n < 0 || strcmp(v, "url") != 0) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Invalid Encoding Method specified in Request");
		return false;
	}
	*url = true;
	return true;
}

/*
 * The common prefix a listing position lies in (a marker, start-after or
 * continuation token that is itself a common prefix, or a key inside one):
 * everything under it was listed with it, so the listing skips it whole.
 * Empty when the position is in none.
 */
static void prefix_of_position(const char *start, const char *prefix, const char *delim, char *out, size_t cap)
{
	size_t plen = strlen(prefix);
	const char *d;

	out[0] = '\0';
	if (delim[0] == '\0' || strncmp(start, prefix, plen) != 0)
		return;
	d = strstr(start + plen, delim);
	if (d == NULL || (size_t)(d - start) + strlen(delim) >= cap)
		return;
	memcpy(out, start, (size_t)(d - start) + strlen(delim));
	out[(size_t)(d - start) + strlen(delim)] = '\0';
}

void list_objects(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;
	struct s3_store *st = op->st;
	char prefix[S3_MAX_KEY_LEN + 1], delim[64], marker[S3_MAX_KEY_LEN + 1], maxk[24], lt[8], fo[8];
	char ctoken[2 * S3_MAX_KEY_LEN + 3], after[S3_MAX_KEY_LEN + 1];
	bool has_prefix, has_delim, has_marker, has_maxk, has_lt, has_ct, has_after, has_fo, v2, url, owner;
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
	    query_str(h, "start-after", after, sizeof(after), &has_after) ||
	    query_str(h, "fetch-owner", fo, sizeof(fo), &has_fo)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "A query parameter is malformed or too long.");
		return;
	}
	if (!encoding_type(op, h, &url))
		return;
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
	/* V1 lists the owner of every key; V2 only when fetch-owner=true. */
	owner = !v2 || (has_fo && strcmp(fo, "true") == 0);
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
	/* A start inside a common prefix: that prefix was listed already (it is skipped below). */
	prefix_of_position(start, prefix, delim, cp_last, sizeof(cp_last));
	i = start[0] ? store_lower_bound(st, start, false) : 0;
	if (plen && strcmp(prefix, start) > 0)
		i = store_lower_bound(st, prefix, true);
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
		d = delim[0] ? strstr(rest, delim) : NULL;
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
			sb_name(&keys, "Prefix", cp_last, url);
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
		sb_name(&keys, "Key", o->key, url);
		sb_tag(&keys, "LastModified", date);
		sb_tag(&keys, "ETag", o->etag);
		sb_printf(&keys, "<Size>%zu</Size>", o->blob->len);
		if (owner)
			sb_puts(&keys, "<Owner><ID>rocm-ernic</ID><DisplayName>rocm-ernic</DisplayName></Owner>");
		sb_puts(&keys, "<StorageClass>STANDARD</StorageClass></Contents>");
		snprintf(last, sizeof(last), "%s", o->key);
		count++;
	}
	/* max-keys=0 lists nothing and, as S3 answers it, is not truncated. */
	if (max_keys == 0)
		truncated = false;

	sb_puts(&s, XML_DECL "<ListBucketResult xmlns=\"" XMLNS "\">");
	sb_tag(&s, "Name", st->cfg.bucket);
	sb_name(&s, "Prefix", prefix, url);
	if (v2) {
		if (has_after)
			sb_name(&s, "StartAfter", after, url);
		if (has_ct)
			sb_tag(&s, "ContinuationToken", ctoken);
		if (truncated && last[0]) {
			char *hex = malloc(2 * strlen(last) + 1);

			if (hex) {
				hex_encode((const uint8_t *)last, strlen(last), hex);
				sb_tag(&s, "NextContinuationToken", hex);
				free(hex);
			} else {
				s.oom = true;
			}
		}
		sb_printf(&s, "<KeyCount>%" PRIu64 "</KeyCount>", count);
	} else {
		sb_name(&s, "Marker", marker, url);
		if (truncated && last[0])
			sb_name(&s, "NextMarker", last, url);
	}
	sb_printf(&s, "<MaxKeys>%" PRIu64 "</MaxKeys>", max_keys);
	if (delim[0])
		sb_name(&s, "Delimiter", delim, url);
	if (url)
		sb_puts(&s, "<EncodingType>url</EncodingType>");
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

/* ListMultipartUploads orders uploads by key, then by when they started (then id). */
static int upload_cmp(const void *a, const void *b)
{
	const struct s3_upload *x = *(const struct s3_upload *const *)a, *y = *(const struct s3_upload *const *)b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	if (x->started != y->started)
		return x->started < y->started ? -1 : 1;
	return strcmp(x->id, y->id);
}

void list_uploads(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;
	struct s3_store *st = op->st;
	char prefix[S3_MAX_KEY_LEN + 1], delim[64], kmark[S3_MAX_KEY_LEN + 1], umark[64], maxu[24];
	bool has_prefix, has_delim, has_kmark, has_umark, has_maxu, url, truncated = false;
	uint64_t max_uploads = DEFAULT_MAX_KEYS, count = 0;
	char cp_last[S3_MAX_KEY_LEN + 1] = "", next_key[S3_MAX_KEY_LEN + 1] = "", next_id[33] = "";
	struct s3_upload **all;
	struct sbuf items = { 0 }, s = { 0 };
	size_t plen, n = 0, i = 0;

	if (query_str(h, "prefix", prefix, sizeof(prefix), &has_prefix) ||
	    query_str(h, "delimiter", delim, sizeof(delim), &has_delim) ||
	    query_str(h, "key-marker", kmark, sizeof(kmark), &has_kmark) ||
	    query_str(h, "upload-id-marker", umark, sizeof(umark), &has_umark) ||
	    query_str(h, "max-uploads", maxu, sizeof(maxu), &has_maxu)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "A query parameter is malformed or too long.");
		return;
	}
	if (!encoding_type(op, h, &url))
		return;
	if (has_maxu && parse_u64_range(maxu, 0, INT32_MAX, &max_uploads)) {
		op_error(op, S3_ERR_INVALID_ARGUMENT, "Provided max-uploads not an integer or within integer range");
		return;
	}
	if (max_uploads > DEFAULT_MAX_KEYS)
		max_uploads = DEFAULT_MAX_KEYS;
	all = calloc(st->nuploads ? st->nuploads : 1, sizeof(*all));
	if (all == NULL) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		return;
	}
	plen = strlen(prefix);
	for (struct s3_upload *u = st->uploads; u && n < st->nuploads; u = u->next)
		if (strncmp(u->key, prefix, plen) == 0)
			all[n++] = u;
	qsort(all, n, sizeof(*all), upload_cmp);
	/* After the key marker; with an upload-id marker, after that upload of the marker's key. */
	if (has_kmark && kmark[0]) {
		prefix_of_position(kmark, prefix, delim, cp_last, sizeof(cp_last));
		while (i < n && strcmp(all[i]->key, kmark) < 0)
			i++;
		if (has_umark && umark[0]) {
			size_t j = i;

			while (j < n && strcmp(all[j]->key, kmark) == 0 && strcmp(all[j]->id, umark) != 0)
				j++;
			if (j < n && strcmp(all[j]->key, kmark) == 0)
				i = j + 1;
			else
				while (i < n && strcmp(all[i]->key, kmark) == 0)
					i++;
		} else {
			while (i < n && strcmp(all[i]->key, kmark) == 0)
				i++;
		}
	}
	for (; i < n; i++) {
		const struct s3_upload *u = all[i];
		const char *d = delim[0] ? strstr(u->key + plen, delim) : NULL;
		char date[32];

		if (d) {
			size_t cplen = (size_t)(d - u->key) + strlen(delim);

			if (strlen(cp_last) == cplen && strncmp(cp_last, u->key, cplen) == 0)
				continue;
			if (count == max_uploads) {
				truncated = true;
				break;
			}
			memcpy(cp_last, u->key, cplen);
			cp_last[cplen] = '\0';
			sb_puts(&items, "<CommonPrefixes>");
			sb_name(&items, "Prefix", cp_last, url);
			sb_puts(&items, "</CommonPrefixes>");
			snprintf(next_key, sizeof(next_key), "%s", cp_last);
			next_id[0] = '\0';
			count++;
			continue;
		}
		if (count == max_uploads) {
			truncated = true;
			break;
		}
		iso8601(u->started, date);
		sb_puts(&items, "<Upload>");
		sb_name(&items, "Key", u->key, url);
		sb_tag(&items, "UploadId", u->id);
		sb_puts(&items, "<Initiator><ID>rocm-ernic</ID><DisplayName>rocm-ernic</DisplayName></Initiator>");
		sb_puts(&items, "<Owner><ID>rocm-ernic</ID><DisplayName>rocm-ernic</DisplayName></Owner>");
		sb_puts(&items, "<StorageClass>STANDARD</StorageClass>");
		sb_tag(&items, "Initiated", date);
		sb_puts(&items, "</Upload>");
		snprintf(next_key, sizeof(next_key), "%s", u->key);
		snprintf(next_id, sizeof(next_id), "%s", u->id);
		count++;
	}
	if (max_uploads == 0)
		truncated = false;
	free(all);
	sb_puts(&s, XML_DECL "<ListMultipartUploadsResult xmlns=\"" XMLNS "\">");
	sb_tag(&s, "Bucket", st->cfg.bucket);
	sb_name(&s, "KeyMarker", kmark, url);
	sb_tag(&s, "UploadIdMarker", umark);
	if (truncated) {
		sb_name(&s, "NextKeyMarker", next_key, url);
		sb_tag(&s, "NextUploadIdMarker", next_id);
	}
	if (plen)
		sb_name(&s, "Prefix", prefix, url);
	if (delim[0])
		sb_name(&s, "Delimiter", delim, url);
	if (url)
		sb_puts(&s, "<EncodingType>url</EncodingType>");
	sb_printf(&s, "<MaxUploads>%" PRIu64 "</MaxUploads>", max_uploads);
	sb_printf(&s, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (items.len)
		sb_add(&s, items.p, items.len);
	sb_puts(&s, "</ListMultipartUploadsResult>");
	if (items.oom)
		s.oom = true;
	free(items.p);
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
	op->kind = OP_DECIDED;
}

void list_parts(struct s3_op *op, struct s3_upload *u, const struct req *rq)
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
		sb_printf(&parts, "<Size>%zu</Size>", p->blob->len);
		if (p->cks != S3_CKS_NONE) {
			char b64[S3_CKS_B64_MAX];

			s3_cks_b64(p->cks_raw, s3_cks_len(p->cks), b64);
			sb_tag(&parts, s3_cks_xml(p->cks), b64);
		}
		sb_puts(&parts, "</Part>");
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
