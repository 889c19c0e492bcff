/* The S3 error table; see s3_err.h. */
#include "s3/s3_err.h"

static const struct s3_err_desc table[S3_ERR_COUNT] = {
	[S3_OK] = { "OK", "", 200 },
	[S3_ERR_ACCESS_DENIED] = { "AccessDenied", "Access Denied", 403 },
	[S3_ERR_BAD_DIGEST] = { "BadDigest", "The Content-MD5 you specified did not match what we received.", 400 },
	[S3_ERR_BUCKET_ALREADY_OWNED] = { "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.", 409 },
	[S3_ERR_BUCKET_NOT_EMPTY] = { "BucketNotEmpty", "The bucket you tried to delete is not empty.", 409 },
	[S3_ERR_ENTITY_TOO_LARGE] = { "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.", 400 },
	[S3_ERR_ENTITY_TOO_SMALL] = { "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.", 400 },
	[S3_ERR_INCOMPLETE_BODY] = { "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.", 400 },
	[S3_ERR_INSUFFICIENT_STORAGE] = { "InsufficientStorage", "The store does not have enough capacity or object slots left for this request.", 507 },
	[S3_ERR_INTERNAL] = { "InternalError", "We encountered an internal error. Please try again.", 500 },
	[S3_ERR_INVALID_ARGUMENT] = { "InvalidArgument", "Invalid Argument", 400 },
	[S3_ERR_INVALID_BUCKET_NAME] = { "InvalidBucketName", "The specified bucket is not valid.", 400 },
	[S3_ERR_INVALID_DIGEST] = { "InvalidDigest", "The Content-MD5 you specified is not valid.", 400 },
	[S3_ERR_INVALID_PART] = { "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.", 400 },
	[S3_ERR_INVALID_PART_ORDER] = { "InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.", 400 },
	[S3_ERR_INVALID_RANGE] = { "InvalidRange", "The requested range is not satisfiable", 416 },
	[S3_ERR_INVALID_REQUEST] = { "InvalidRequest", "Invalid Request", 400 },
	[S3_ERR_KEY_TOO_LONG] = { "KeyTooLongError", "Your key is too long.", 400 },
	[S3_ERR_MALFORMED_XML] = { "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.", 400 },
	[S3_ERR_METHOD_NOT_ALLOWED] = { "MethodNotAllowed", "The specified method is not allowed against this resource.", 405 },
	[S3_ERR_MISSING_CONTENT_LENGTH] = { "MissingContentLength", "You must provide the Content-Length HTTP header.", 411 },
	[S3_ERR_NO_SUCH_BUCKET] = { "NoSuchBucket", "The specified bucket does not exist", 404 },
	[S3_ERR_NO_SUCH_KEY] = { "NoSuchKey", "The specified key does not exist.", 404 },
	[S3_ERR_NO_SUCH_UPLOAD] = { "NoSuchUpload", "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.", 404 },
	[S3_ERR_NOT_IMPLEMENTED] = { "NotImplemented", "A header or query you provided implies functionality that is not implemented.", 501 },
	[S3_ERR_SLOW_DOWN] = { "SlowDown", "Please reduce your request rate.", 503 },
	[S3_ERR_PRECONDITION_FAILED] = { "PreconditionFailed", "At least one of the pre-conditions you specified did not hold", 412 },
	[S3_ERR_METADATA_TOO_LARGE] = { "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size.", 400 },
	[S3_ERR_INVALID_URI] = { "InvalidURI", "Couldn't parse the specified URI.", 400 },
	[S3_ERR_TOO_MANY_BUCKETS] = { "TooManyBuckets", "You have attempted to create more buckets than allowed.", 400 },
	[S3_ERR_OPERATION_ABORTED] = { "OperationAborted", "A conflicting conditional operation is currently in progress against this resource. Try again.", 409 },
	[S3_ERR_INVALID_RDMA_TOKEN] = { "InvalidRDMAToken", "The x-amz-rdma-token header is malformed.", 400 },
	/* A declined RDMA PUT: the upload did not happen, and the client sends it again with the data in the body. */
	[S3_ERR_RDMA_NOT_SUPPORTED] = { "RDMANotSupported", "RDMA cannot serve this request; send the data in the body.", 200 },
	[S3_ERR_RDMA_TRANSFER_FAILED] = { "RDMATransferFailed", "The RDMA transfer failed.", 500 },
	[S3_ERR_MALFORMED_TRAILER] = { "MalformedTrailerError", "The request contained trailing data that was not well-formed or did not conform to our published schema.", 400 },
	[S3_ERR_INVALID_PART_NUMBER] = { "InvalidPartNumber", "The requested partnumber is not satisfiable", 416 },
	[S3_ERR_BAD_REQUEST] = { "BadRequest", "The request could not be parsed as HTTP/1.1.", 400 },
	[S3_ERR_URI_TOO_LONG] = { "RequestURITooLong", "The request line is too long.", 414 },
	[S3_ERR_HEADERS_TOO_LARGE] = { "RequestHeaderSectionTooLarge", "The request header section is too large.", 431 },
	[S3_ERR_VERSION_NOT_SUPPORTED] = { "HttpVersionNotSupported", "The HTTP version is not supported.", 505 },
};

const struct s3_err_desc *s3_err_desc(enum s3_err e)
{
	if ((unsigned)e >= S3_ERR_COUNT)
		e = S3_ERR_INTERNAL;
	return &table[e];
}

enum s3_err s3_err_from_http(int status)
{
	switch (status) {
	case 413: return S3_ERR_ENTITY_TOO_LARGE;
	case 414: return S3_ERR_URI_TOO_LONG;
	case 431: return S3_ERR_HEADERS_TOO_LARGE;
	case 501: return S3_ERR_NOT_IMPLEMENTED;
	case 505: return S3_ERR_VERSION_NOT_SUPPORTED;
	default: return S3_ERR_BAD_REQUEST;
	}
}
