/*
 * Buckets: the bucket-level requests (ListObjects and ListMultipartUploads
 * are routed to s3_list.c, DeleteObjects to s3_delete.c), and with buckets=
 * above 1 CreateBucket and DeleteBucket. Each bucket is a store of its own on
 * the root's list; see s3_internal.h.
 */
#include "s3/s3_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct s3_store *bucket_find(struct s3_store *root, const char *name)
{
	for (struct s3_store *b = root; b; b = b->next)
		if (strcmp(b->cfg.bucket, name) == 0)
			return b;
	return NULL;
}

struct s3_store *bucket_new(struct s3_store *root, const char *name)
{
	struct s3_config cfg = root->cfg;
	struct s3_store *b, **pp;

	snprintf(cfg.bucket, sizeof(cfg.bucket), "%s", name);
	if (root->cfg.dir[0] &&
	    snprintf(cfg.dir, sizeof(cfg.dir), "%s/buckets/%s", root->cfg.dir, name) >= (int)sizeof(cfg.dir))
		return NULL;
	b = store_alloc(&cfg, root);
	if (b == NULL)
		return NULL;
	b->server_token = root->server_token;
	if (persist_open(b)) {
		store_release(b);
		return NULL;
	}
	/* The list is kept in name order, as ListBuckets answers. */
	for (pp = &root->next; *pp && strcmp((*pp)->cfg.bucket, name) < 0; pp = &(*pp)->next)
		;
	b->next = *pp;
	*pp = b;
	root->nbuckets++;
	return b;
}

void bucket_delete(struct s3_store *b)
{
	struct s3_store *root = b->root, **pp;

	for (pp = &root->next; *pp && *pp != b; pp = &(*pp)->next)
		;
	if (*pp == NULL || b == root)
		return;
	*pp = b->next;
	root->nbuckets--;
	persist_bucket_remove(b);
	store_release(b);
}

/*
 * Bucket subresources the store does not keep: every method on them answers
 * 501 with the S3 error, rather than being taken for the bucket itself.
 */
static const char *const bucket_unsupported[] = {
	"accelerate", "acl", "analytics", "cors", "encryption", "intelligent-tiering", "inventory",
	"lifecycle", "logging", "metadataTable", "metrics", "notification", "object-lock", "ownershipControls",
	"policy", "policyStatus", "publicAccessBlock", "replication", "requestPayment", "tagging",
	"versioning", "versions", "website",
};

/* S3's rules for a new bucket's name: 3 to 63 lower-case letters, digits, dots and hyphens,
 * a letter or digit at each end, no two dots together, not an IPv4 address. */
static bool bucket_name_valid(const char *n)
{
	size_t len = strlen(n);
	unsigned dots = 0, digits_only = 1;

	if (len < 3 || len > 63 || !isalnum((unsigned char)n[0]) || !isalnum((unsigned char)n[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
		if (c == '.' && n[i + 1] == '.')
			return false;
		dots += c == '.';
		if (c != '.' && !(c >= '0' && c <= '9'))
			digits_only = 0;
	}
	return !(dots == 3 && digits_only);
}

/* CreateBucket (buckets= above 1): a new empty bucket, while there is room for one. */
void create_bucket(struct s3_op *op, const struct req *rq)
{
	struct s3_store *root = op->st->root;

	if (!bucket_name_valid(rq->bucket)) {
		op_error(op, S3_ERR_INVALID_BUCKET_NAME, NULL);
		return;
	}
	if (root->nbuckets >= root->cfg.buckets) {
		op_error(op, S3_ERR_TOO_MANY_BUCKETS, NULL);
		return;
	}
	if (bucket_new(root, rq->bucket) == NULL) {
		op_error(op, S3_ERR_INTERNAL, "The bucket could not be made.");
		return;
	}
	ok_empty(op, 200);
	resp_header(&op->resp, "Location", "/%s", rq->bucket);
}

void bucket_request(struct s3_op *op, const struct req *rq)
{
	const char *m = rq->http->method;
	const struct http_request *h = rq->http;

	for (size_t i = 0; i < sizeof(bucket_unsupported) / sizeof(bucket_unsupported[0]); i++) {
		if (http_query_has(h, bucket_unsupported[i])) {
			op_error(op, S3_ERR_NOT_IMPLEMENTED, NULL);
			return;
		}
	}
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
		if (http_query_has(h, "uploads")) {
			list_uploads(op, rq);
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
		struct s3_store *root = op->st->root;

		if (op->st->nobjs || op->st->nuploads) {
			op_error(op, S3_ERR_BUCKET_NOT_EMPTY, NULL);
		} else if (op->st == root) {
			op_error(op, S3_ERR_METHOD_NOT_ALLOWED, "The store's first bucket (bucket=) cannot be deleted.");
		} else if (op->st->ops) {
			op_error(op, S3_ERR_OPERATION_ABORTED, NULL);
		} else {
			bucket_delete(op->st);
			op->st = root;
			ok_empty(op, 204);
		}
		return;
	}
	if (strcmp(m, "POST") == 0 && http_query_has(h, "delete")) {
		delete_objects_begin(op, rq);
		return;
	}
	op_error(op, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}

