/*
 * The S3 store: one bucket of objects in anonymous memory, with the request
 * handling of the s3 backend specification (path-style addressing, listings
 * V1 and V2, ranged GET, multipart uploads, S3 XML errors) and the RDMA path
 * (x-amz-rdma-token: GET by RDMA WRITE, PUT by RDMA READ, through dma_ops).
 *
 * It is fed parsed requests (struct http_request) and body bytes, and
 * produces responses; it knows nothing of TCP or queues.
 *
 * Capacity: object bytes and multipart part bytes count against size=; an
 * object overwritten by a PUT keeps its bytes until the new one is complete,
 * so a failed PUT leaves it intact and leaks nothing. objects= counts stored
 * keys. Object data is reference-counted, so a response may go on sending an
 * object that a later request replaced or deleted.
 *
 * A body's MD5 (its ETag, or its part's) is computed as the bytes arrive, one
 * EVP context per PUT or part, so finishing a PUT costs no pass over the
 * object. A body whose length was announced and is at least
 * S3_MD5_THREAD_MIN bytes is hashed by the store's MD5 thread (s3_md5.h)
 * following the copy into the object, overlapping with the caller's work;
 * its op is then busy (s3_op_busy, s3_op_hashing) from its last byte until
 * the digest is ready, and the thread's eventfd (s3_store_md5_fd) says when. The object is published (replacing the old one, in one step) only
 * when its body is complete and checked; until then a GET sees the old one.
 */
#ifndef ERNIC_S3_S3_TARGET_H
#define ERNIC_S3_S3_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_http.h"
#include "s3/s3_token.h"
#include "util/backend_opts.h"
#include "util/dma_ops.h"

#define S3_MAX_KEY_LEN        1024
#define S3_MAX_PARTS          10000
#define S3_MIN_PART_SIZE      (5ull << 20)
#define S3_MAX_UPLOADS        1024
#define S3_MAX_XML_BODY       (1u << 20)
#define S3_MAX_RESP_HEADERS   64
#define S3_MD5_THREAD_MIN     (256u << 10)

/* Object data shared by the store and responses in flight. */
struct s3_blob {
	unsigned refs;
	size_t len;
	uint8_t *data;
};

void s3_blob_put(struct s3_blob *b);

/* (response_move in s3_resp.c copies it field by field: a new field goes there too.) */
struct s3_response {
	int status;
	struct http_header headers[S3_MAX_RESP_HEADERS];
	unsigned nheaders;
	char hdrbuf[10240];          /* storage for header names and values */
	size_t hdrused;
	uint64_t content_length;    /* what Content-Length says */
	bool send_body;             /* false for HEAD and empty responses */
	char *xml;                  /* owned body, or NULL */
	struct s3_blob *blob;       /* referenced body: blob->data[off, off+len) */
	uint64_t off, len;
	bool close;                 /* close the connection after this response */
};

/* Release what a response holds (safe on a zeroed response). */
void s3_response_release(struct s3_response *r);

struct s3_store_stats {
	uint64_t used_bytes;        /* object and part bytes held */
	uint32_t objects;
	uint32_t uploads;
	uint64_t requests;
	uint64_t rdma_bytes;
	/* requests with an x-amz-rdma-token (HEAD aside), by dialect, and how they ended */
	uint64_t rdma_hipobj, rdma_cuobj;
	uint64_t rdma_declined;     /* answered 501 */
	uint64_t rdma_fallback;     /* GETs whose payload the HTTP body carried instead */
	uint64_t rdma_failed;       /* transfers that failed part-way (or at the start, without a decline) */
};

struct s3_store;

/* server_token: what the x-amz-rdma-reply carries (may be NULL: an all-zero RC token). */
struct s3_store *s3_store_new(const struct s3_config *cfg, const struct s3_token *server_token);
void s3_store_free(struct s3_store *st);

/* The guest memory the RDMA path reaches (NULL: RDMA requests get 500, or a decline). */
void s3_store_set_dma(struct s3_store *st, const struct dma_ops *ops);
/* The link-local GID our replies name to a client whose token's GID is link-local (docs/s3.md). */
void s3_store_set_server_ll(struct s3_store *st, const uint8_t gid[16]);
/* The counters in one line at info level (exit, SIGUSR2). */
void s3_store_log_stats(const struct s3_store *st);

const struct s3_store_stats *s3_store_stats(const struct s3_store *st);
/* Readable when a body hashed on the MD5 thread has its digest (read it to clear it); -1 if none. */
int s3_store_md5_fd(const struct s3_store *st);

/*
 * An error response for a request the store never saw (HTTP-level failures):
 * the S3 XML error of e, with resource and a fresh request id; closes the connection.
 */
void s3_store_error_response(struct s3_store *st, int e, const char *resource, struct s3_response *resp);

/* One request in progress. */
struct s3_op;

/*
 * Headers are complete: start handling req (only valid during this call; the
 * op copies what it needs). Never NULL (out of memory answers 500).
 */
struct s3_op *s3_op_begin(struct s3_store *st, const struct http_request *req);

/*
 * The op wants the request body (false when the response is already known,
 * e.g. an error found from the headers; body bytes fed then are dropped).
 */
bool s3_op_wants_body(const struct s3_op *op);

/* Body bytes, in order. */
void s3_op_body(struct s3_op *op, const uint8_t *data, size_t len);

/*
 * The trailer field the body's checksum comes in (aws-chunked), or NULL;
 * after the body, its value (NULL when the trailer lacked it) goes to
 * s3_op_trailer before s3_op_finish.
 */
const char *s3_op_wants_trailer(const struct s3_op *op);
void s3_op_trailer(struct s3_op *op, const char *value);

/*
 * The RDMA transfer of an x-amz-rdma-token request (a GET's RDMA WRITE, a
 * PUT's or UploadPart's RDMA READ with the MD5 of what it read) is made
 * through s3_op_work, at most `budget` bytes a call, so a large one need not
 * hold up the caller's thread: true while bytes are left (s3_op_busy). A
 * failure ends it with the error response. s3_op_finish makes whatever is
 * left at once, so a caller that never calls s3_op_work gets the transfer
 * whole.
 */
bool s3_op_busy(const struct s3_op *op);
/* Busy only waiting for the MD5 thread: s3_op_work has nothing to do until s3_store_md5_fd fires. */
bool s3_op_hashing(const struct s3_op *op);
bool s3_op_work(struct s3_op *op, uint64_t budget);

/* The body is complete: fill *resp and free the op. */
void s3_op_finish(struct s3_op *op, struct s3_response *resp);

/* The connection went away: drop the op, change nothing in the store. */
void s3_op_abort(struct s3_op *op);

#endif
