/*
 * The RDMA path of the S3 store (x-amz-rdma-token): whether RDMA serves a
 * request's payload or declines it, the transfer itself, and the
 * x-amz-rdma-* headers of the answer. Two dialects share the headers
 * (s3_token.h) and each gets its own peers' rules; docs/s3.md has them as a
 * table:
 *
 *  - hipObject (the 88-hex token): what spec/s3.txt names. The reply is
 *    "<status>:<our token>" on every answer, a window shorter than the object
 *    gets a short transfer that x-amz-rdma-bytes reports, and a key that
 *    cannot serve (0, unknown, without the right, too small) is a 500.
 *  - cuObject (the text descriptor): what the aws-c-s3 RDMA fork's protocol
 *    and NooBaa do. The reply is a bare "200"/"206" on success and absent on
 *    errors; whatever RDMA cannot serve whole is declined with "501", a GET
 *    then carrying the payload in the body and a PUT answered 200 with
 *    RDMANotSupported, which the client sends again with the data.
 *
 * A HEAD never moves anything, in either dialect: s3_op_begin drops its token.
 */
#include "s3/s3_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

static const char *dma_error(int rc)
{
	switch (rc) {
	case -ENOKEY: return "The rkey in the token names no memory registration.";
	case -EACCES: return "The memory registration does not allow this access.";
	case -EFAULT: return "The token's window lies outside its memory registration.";
	default: return "The RDMA transfer failed.";
	}
}

static const char *dma_why(int rc)
{
	switch (rc) {
	case -ENOKEY: return "unknown-key";
	case -EACCES: return "no-access";
	case -EFAULT: return "outside-registration";
	default: return "transfer-error";
	}
}

static enum rdma_verdict decline(struct s3_op *op, const char *why)
{
	op->rdma_declined = true;
	op->rdma_why = why;
	op->st->root->stats.rdma_declined++;
	return RDMA_DECLINE;
}

/* What the dialect does when RDMA cannot serve: cuObject declines, hipObject answers 500 with detail. */
static enum rdma_verdict cannot(struct s3_op *op, const char *why, const char *detail)
{
	if (op->dialect == S3_DIALECT_CUOBJ)
		return decline(op, why);
	op->rdma_why = why;
	op->st->root->stats.rdma_failed++;
	op_error(op, S3_ERR_INTERNAL, detail);
	return RDMA_ERROR;
}

enum rdma_verdict rdma_admit(struct s3_op *op, const struct req *rq, uint64_t *n, bool get)
{
	struct s3_store *root = op->st->root;
	bool cu = op->dialect == S3_DIALECT_CUOBJ;
	uint64_t maxpart = op->st->cfg.maxpart;
	int rc;

	if (!rq->token_ok) {
		op->rdma_why = "malformed-token";
		if (cu)
			op_error(op, S3_ERR_INVALID_RDMA_TOKEN, NULL);
		else
			op_error(op, S3_ERR_INVALID_ARGUMENT, "The x-amz-rdma-token header is malformed.");
		return RDMA_ERROR;
	}
	if (get) {
		/* cuObject moves the object (or range) whole or not at all; hipObject caps it, and says so. */
		if (cu && (*n > rq->token.len || *n > maxpart))
			return decline(op, *n > rq->token.len ? "window-too-short" : "over-maxpart");
		if (*n > rq->token.len)
			*n = rq->token.len;
		if (*n > maxpart)
			*n = maxpart;
	} else if (*n > maxpart) {
		/* A body of that size would be refused too: nothing to fall back to. */
		op->rdma_why = "over-maxpart";
		op_error(op, S3_ERR_ENTITY_TOO_LARGE, NULL);
		return RDMA_ERROR;
	}
	if (rq->token.rkey == 0) /* the driver's reserved DMA key: raw guest memory, never a registration */
		return cannot(op, "rkey-0", "The rkey 0 names no memory registration.");
	if (!root->has_dma)
		return cannot(op, "no-guest-memory", "No guest memory is reachable for RDMA.");
	if (*n > 0 && root->dma.check && (rc = root->dma.check(root->dma.ctx, rq->token.rkey, rq->token.addr,
								   (size_t)*n, get)) != 0)
		return cannot(op, dma_why(rc), dma_error(rc));
	op->rdma_admitted = true;
	return RDMA_GO;
}

/* ---- the transfer ---- */

bool s3_op_hashing(const struct s3_op *op)
{
	return op->md5s != NULL && op->filled == op->expected && op->body_err == S3_OK &&
	       !s3_md5s_ready(op->md5s, NULL);
}

bool s3_op_busy(const struct s3_op *op)
{
	return op->xfer.done < op->xfer.len || s3_op_hashing(op);
}

void xfer_end(struct s3_op *op)
{
	op->xfer.len = op->xfer.done;
	s3_blob_put(op->xfer.blob);
	op->xfer.blob = NULL;
	op->xfer.data = NULL;
}

/*
 * A cuObject GET whose RDMA WRITE failed part-way (the registration went
 * meanwhile): the answer falls back to the body, as its protocol allows, from
 * the reference the transfer held.
 */
static void get_fallback(struct s3_op *op)
{
	struct s3_blob *b = op->xfer.blob;

	op->resp.blob = b;
	op->resp.off = (uint64_t)(op->xfer.data - b->data);
	op->resp.len = op->xfer.len;
	op->resp.content_length = op->xfer.len;
	op->resp.send_body = op->xfer.len > 0;
	op->xfer.blob = NULL; /* the response holds it now */
	op->xfer.data = NULL;
	op->xfer.len = op->xfer.done = 0;
	op->rdma_admitted = false;
	op->rdma_declined = true;
	op->st->root->stats.rdma_declined++;
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
		rc = st->root->dma.write(st->root->dma.ctx, op->xfer.rkey, op->xfer.addr + op->xfer.done,
				   op->xfer.data + op->xfer.done, (size_t)n);
	} else {
		uint8_t *p = op->blob->data + op->xfer.done;

		rc = st->root->dma.read(st->root->dma.ctx, op->xfer.rkey, op->xfer.addr + op->xfer.done, p, (size_t)n);
		if (rc == 0 && EVP_DigestUpdate(op->md5, p, (size_t)n) != 1) {
			xfer_end(op);
			op_error(op, S3_ERR_INTERNAL, NULL);
			return false;
		}
	}
	if (rc) {
		/* Nothing is stored and the response says 0 bytes (what moved before is not reported). */
		st->root->stats.rdma_failed++;
		op->rdma_why = dma_why(rc);
		if (op->dialect == S3_DIALECT_CUOBJ && op->xfer.write) {
			get_fallback(op);
			return false;
		}
		xfer_end(op);
		if (op->dialect == S3_DIALECT_CUOBJ)
			op_error(op, S3_ERR_RDMA_TRANSFER_FAILED, dma_error(rc));
		else
			op_error(op, S3_ERR_INTERNAL, dma_error(rc));
		return false;
	}
	op->xfer.done += n;
	st->root->stats.rdma_bytes += n;
	if (!op->xfer.write)
		op->filled = op->xfer.done;
	if (op->xfer.done < op->xfer.len)
		return true;
	op->rdma_moved = op->xfer.done;
	xfer_end(op);
	return false;
}

/* ---- the answer ---- */

static void bytes_headers(struct s3_op *op, uint64_t moved)
{
	/* The spec's name, and the one hipObject, versitygw, MinIO, NooBaa and nixl read. */
	resp_header_u64(&op->resp, "x-amz-rdma-bytes", moved);
	resp_header_u64(&op->resp, "x-amz-rdma-bytes-transferred", moved);
}

/* An answer whose payload RDMA moved has no body of its own. */
static void no_body(struct s3_op *op)
{
	op->resp.content_length = 0;
	op->resp.send_body = false;
	s3_blob_put(op->resp.blob);
	op->resp.blob = NULL;
	op->resp.len = 0;
}

void rdma_reply(struct s3_op *op)
{
	bool ok = op->resp.status < 300;
	uint64_t moved = ok && op->rdma_admitted ? op->rdma_moved : 0;
	char v[S3_TOKEN_HEX + 16];

	if (!op->rdma)
		return;
	if (op->dialect == S3_DIALECT_CUOBJ) {
		if (op->rdma_declined) {
			resp_header(&op->resp, "x-amz-rdma-reply", "501");
			if (op->resp.send_body && op->resp.blob)
				op->st->root->stats.rdma_fallback++;
		} else if (op->rdma_admitted && ok) {
			resp_header_u64(&op->resp, "x-amz-rdma-reply", (uint64_t)op->resp.status);
			bytes_headers(op, moved);
			no_body(op);
		}
		return; /* no reply header on an error, nor on a request RDMA had no part in */
	}
	/* hipObject: our own token on every answer, its GID of the kind the client's is. */
	{
		struct s3_token t = op->st->server_token;
		static const uint8_t zero[16];

		if (op->client_ll && memcmp(op->st->root->server_ll, zero, sizeof(zero)) != 0)
			memcpy(t.gid, op->st->root->server_ll, sizeof(t.gid));
		t.addr = 0;
		t.len = moved;
		if (s3_reply_format(op->resp.status, &t, v, sizeof(v)) > 0)
			resp_header(&op->resp, "x-amz-rdma-reply", "%s", v);
		bytes_headers(op, moved);
		if (ok && op->rdma_admitted)
			no_body(op);
	}
}

/* ---- the -v line ---- */

void op_log(const struct s3_op *op)
{
	char res[160];
	const char *dialect = !op->rdma ? "-" : op->dialect == S3_DIALECT_CUOBJ ? "cuobject" : "hipobject";
	const char *how = !op->rdma ? "body" : op->rdma_admitted ? "rdma" : op->rdma_declined ? "declined" : "none";
	struct timespec ts;
	uint64_t now;
	size_t i;

	if (!log_enabled(LOG_LEVEL_DEBUG))
		return;
	/* The resource as the client sent it, control bytes masked: it is the client's text. */
	for (i = 0; i + 1 < sizeof(res) && op->resource[i]; i++)
		res[i] = (unsigned char)op->resource[i] < 0x20 || op->resource[i] == 0x7f ? '?' : op->resource[i];
	res[i] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	LOG_DEBUG("s3: %s %s%s: %d, dialect %s, payload %s%s%s, %" PRIu64 " bytes by RDMA, %" PRIu64 " us", op->method,
		  res, op->resource[i] ? "..." : "", op->resp.status, dialect, how, op->rdma_why ? " " : "",
		  op->rdma_why ? op->rdma_why : "", op->rdma_admitted ? op->rdma_moved : 0,
		  now >= op->t0_us ? now - op->t0_us : 0);
}
