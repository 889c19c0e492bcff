/*
 * S3 errors: one table maps each error to its AWS code, message and HTTP
 * status (after versitygw's s3err), and every error response is built from it
 * as <Error><Code/><Message/><Resource/><RequestId/></Error>.
 */
#ifndef ERNIC_S3_S3_ERR_H
#define ERNIC_S3_S3_ERR_H

enum s3_err {
	S3_OK = 0,
	S3_ERR_ACCESS_DENIED,
	S3_ERR_BAD_DIGEST,
	S3_ERR_BUCKET_ALREADY_OWNED,
	S3_ERR_BUCKET_NOT_EMPTY,
	S3_ERR_ENTITY_TOO_LARGE,
	S3_ERR_ENTITY_TOO_SMALL,
	S3_ERR_INCOMPLETE_BODY,
	S3_ERR_INSUFFICIENT_STORAGE,
	S3_ERR_INTERNAL,
	S3_ERR_INVALID_ARGUMENT,
	S3_ERR_INVALID_BUCKET_NAME,
	S3_ERR_INVALID_DIGEST,
	S3_ERR_INVALID_PART,
	S3_ERR_INVALID_PART_ORDER,
	S3_ERR_INVALID_RANGE,
	S3_ERR_INVALID_REQUEST,
	S3_ERR_KEY_TOO_LONG,
	S3_ERR_MALFORMED_XML,
	S3_ERR_METHOD_NOT_ALLOWED,
	S3_ERR_MISSING_CONTENT_LENGTH,
	S3_ERR_NO_SUCH_BUCKET,
	S3_ERR_NO_SUCH_KEY,
	S3_ERR_NO_SUCH_UPLOAD,
	S3_ERR_NOT_IMPLEMENTED,
	S3_ERR_SLOW_DOWN,
	S3_ERR_PRECONDITION_FAILED,
	S3_ERR_METADATA_TOO_LARGE,
	S3_ERR_INVALID_URI,
	S3_ERR_INVALID_PART_NUMBER,
	S3_ERR_MALFORMED_TRAILER,
	S3_ERR_TOO_MANY_BUCKETS,
	S3_ERR_OPERATION_ABORTED,
	/* the cuObject dialect of the RDMA path (its own codes; RDMANotSupported is a 200) */
	S3_ERR_INVALID_RDMA_TOKEN,
	S3_ERR_RDMA_NOT_SUPPORTED,
	S3_ERR_RDMA_TRANSFER_FAILED,
	/* HTTP-level failures of a request that never reached the store */
	S3_ERR_BAD_REQUEST,
	S3_ERR_URI_TOO_LONG,
	S3_ERR_HEADERS_TOO_LARGE,
	S3_ERR_VERSION_NOT_SUPPORTED,
	S3_ERR_COUNT,
};

struct s3_err_desc {
	const char *code;
	const char *message;
	int status;
};

const struct s3_err_desc *s3_err_desc(enum s3_err e);

/* The error for an HTTP parser failure status (400, 413, 414, 431, 501, 505). */
enum s3_err s3_err_from_http(int status);

#endif
