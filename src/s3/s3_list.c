/*
 * Listings: ListBuckets, ListObjects (V1 and V2) and ListParts.
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

void list_objects(struct s3_op *op, const struct req *rq)
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
