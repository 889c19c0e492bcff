/*
 * DeleteObjects: POST /bucket?delete with a <Delete> document of up to 1,000
 * keys. S3 requires an integrity header on it (Content-MD5, or the checksum
 * newer SDKs send instead); Content-MD5 is checked against the document.
 * Each key is deleted as a single DELETE would (a missing key is deleted all
 * the same) and answered with <Deleted>, or with <Error> for a key that
 * cannot name an object; Quiet mode answers only the errors.
 */
#include "s3/s3_internal.h"

#include <expat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DELETE_MAX_KEYS 1000

void delete_objects_begin(struct s3_op *op, const struct req *rq)
{
	const struct http_request *h = rq->http;
	const char *cmd5 = http_header_get(h, "content-md5");
	bool checksum = false;

	for (unsigned i = 0; i < h->nheaders; i++)
		if (strncasecmp(h->headers[i].name, "x-amz-checksum-", 15) == 0 ||
		    strcasecmp(h->headers[i].name, "x-amz-sdk-checksum-algorithm") == 0)
			checksum = true;
	if (cmd5 == NULL && !checksum) {
		op_error(op, S3_ERR_INVALID_REQUEST, "Missing required header for this request: Content-MD5");
		return;
	}
	if (cmd5) {
		if (base64_md5(cmd5, op->want_md5)) {
			op_error(op, S3_ERR_INVALID_DIGEST, NULL);
			return;
		}
		op->has_md5 = true;
	}
	if (!h->chunked && !h->aws_chunked && h->has_content_length && h->content_length > S3_MAX_XML_BODY) {
		op_error(op, S3_ERR_MALFORMED_XML, "The delete document is too large.");
		return;
	}
	op->kind = OP_DELETE_MULTI;
}

struct delete_doc {
	int depth;
	bool in_object, bad;
	int field;              /* 0 none, 1 Key, 2 VersionId, 3 Quiet */
	char text[4 * S3_MAX_KEY_LEN + 1];
	size_t tlen;
	bool too_long;
	bool quiet;
	char *key;              /* of the <Object> being read */
	bool key_long;          /* its key was longer than S3 allows */
	bool has_version;
	char version[64];
	uint32_t n;
	char **keys;
	char (*versions)[64];   /* "" when none given */
	bool *key_too_long;
};

static void XMLCALL del_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct delete_doc *d = ud;
	const char *n = xml_local_name(name);

	(void)attrs;
	d->depth++;
	d->tlen = 0;
	d->too_long = false;
	d->field = 0;
	if (d->depth == 1) {
		if (strcmp(n, "Delete") != 0)
			d->bad = true;
	} else if (d->depth == 2 && strcmp(n, "Object") == 0) {
		d->in_object = true;
		d->key = NULL;
		d->key_long = false;
		d->has_version = false;
		d->version[0] = '\0';
	} else if (d->depth == 2 && strcmp(n, "Quiet") == 0) {
		d->field = 3;
	} else if (d->depth == 3 && d->in_object) {
		d->field = strcmp(n, "Key") == 0 ? 1 : strcmp(n, "VersionId") == 0 ? 2 : 0;
	}
}

static void XMLCALL del_text(void *ud, const XML_Char *s, int len)
{
	struct delete_doc *d = ud;

	if (d->field == 0 || len < 0)
		return;
	if (d->tlen + (size_t)len >= sizeof(d->text)) {
		d->too_long = true;
		return;
	}
	memcpy(d->text + d->tlen, s, (size_t)len);
	d->tlen += (size_t)len;
}

static void XMLCALL del_end(void *ud, const XML_Char *name)
{
	struct delete_doc *d = ud;

	(void)name;
	d->text[d->tlen] = '\0';
	if (d->field == 3) {
		if (strcmp(d->text, "true") == 0)
			d->quiet = true;
		else if (strcmp(d->text, "false") != 0)
			d->bad = true;
	} else if (d->field == 1 && d->in_object) {
		free(d->key);
		d->key_long = d->too_long || d->tlen > S3_MAX_KEY_LEN;
		d->key = strdup(d->key_long ? "" : d->text);
		if (d->key == NULL)
			d->bad = true;
	} else if (d->field == 2 && d->in_object) {
		d->has_version = true;
		if (d->tlen >= sizeof(d->version))
			d->text[sizeof(d->version) - 1] = '\0';
		memcpy(d->version, d->text, strlen(d->text) + 1);
	} else if (d->depth == 2 && d->in_object) {
		d->in_object = false;
		if (d->key == NULL || d->n == DELETE_MAX_KEYS) {
			/* An <Object> without a <Key>, or more than S3 takes in one request */
			free(d->key);
			d->key = NULL;
			d->bad = true;
		} else {
			d->key_too_long[d->n] = d->key_long;
			d->keys[d->n] = d->key;
			snprintf(d->versions[d->n], sizeof(d->versions[0]), "%s", d->has_version ? d->version : "");
			d->key = NULL;
			d->n++;
		}
	}
	d->field = 0;
	d->depth--;
}

void finish_delete_objects(struct s3_op *op)
{
	struct delete_doc *d;
	XML_Parser xp;
	struct sbuf s = { 0 };
	uint8_t digest[16];

	if (op->body_err != S3_OK) {
		op_error(op, op->body_err, NULL);
		return;
	}
	if (op->has_md5) {
		md5_digest((const uint8_t *)op->xml, op->xml_len, digest);
		if (memcmp(digest, op->want_md5, 16) != 0) {
			op_error(op, S3_ERR_BAD_DIGEST, NULL);
			return;
		}
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL || (d->keys = calloc(DELETE_MAX_KEYS, sizeof(*d->keys))) == NULL ||
	    (d->versions = calloc(DELETE_MAX_KEYS, sizeof(*d->versions))) == NULL ||
	    (d->key_too_long = calloc(DELETE_MAX_KEYS, sizeof(*d->key_too_long))) == NULL) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		goto out;
	}
	xp = XML_ParserCreate(NULL);
	if (xp == NULL) {
		op_error(op, S3_ERR_INTERNAL, NULL);
		goto out;
	}
	XML_SetUserData(xp, d);
	XML_SetElementHandler(xp, del_start, del_end);
	XML_SetCharacterDataHandler(xp, del_text);
	if (XML_Parse(xp, op->xml ? op->xml : "", (int)op->xml_len, 1) != XML_STATUS_OK || d->bad || d->n == 0) {
		XML_ParserFree(xp);
		op_error(op, S3_ERR_MALFORMED_XML, NULL);
		goto out;
	}
	XML_ParserFree(xp);
	sb_puts(&s, XML_DECL "<DeleteResult xmlns=\"" XMLNS "\">");
	for (uint32_t i = 0; i < d->n; i++) {
		const char *code = NULL, *msg = NULL;

		if (d->key_too_long[i]) {
			code = "KeyTooLongError";
			msg = "Your key is too long.";
		} else if (d->keys[i][0] == '\0') {
			code = "InvalidArgument";
			msg = "An object key is empty.";
		} else if (d->versions[i][0] && strcmp(d->versions[i], "null") != 0) {
			code = "NoSuchVersion";
			msg = "The specified version does not exist.";
		}
		if (code) {
			sb_puts(&s, "<Error>");
			sb_tag(&s, "Key", d->keys[i]);
			if (d->versions[i][0])
				sb_tag(&s, "VersionId", d->versions[i]);
			sb_tag(&s, "Code", code);
			sb_tag(&s, "Message", msg);
			sb_puts(&s, "</Error>");
			continue;
		}
		store_delete(op->st, d->keys[i]);
		if (d->quiet)
			continue;
		sb_puts(&s, "<Deleted>");
		sb_tag(&s, "Key", d->keys[i]);
		if (d->versions[i][0])
			sb_tag(&s, "VersionId", d->versions[i]);
		sb_puts(&s, "</Deleted>");
	}
	sb_puts(&s, "</DeleteResult>");
	op->resp.status = 200;
	resp_xml(&op->resp, &s);
out:
	if (d) {
		for (uint32_t i = 0; i < d->n && d->keys; i++)
			free(d->keys[i]);
		free(d->key);
		free(d->keys);
		free(d->versions);
		free(d->key_too_long);
	}
	free(d);
}
