/*
 * What the files of the S3 store share (not an interface beyond src/s3):
 * the store's tables, one request in progress, and the helpers each file
 * offers the others.
 *
 *   s3_blob.c       object memory (reference-counted, large ones mapped and reused)
 *   s3_resp.c       text, XML and response building, S3 XML errors
 *   s3_store.c      the object table, uploads, capacity, the store itself
 *   s3_bucket.c     bucket requests; CreateBucket, DeleteBucket (buckets=)
 *   s3_list.c       ListBuckets, ListObjects V1/V2, ListParts
 *   s3_multipart.c  CreateMultipartUpload, UploadPart, CompleteMultipartUpload
 *   s3_meta.c       an object's metadata headers; conditional requests
 *   s3_copy.c       CopyObject, UploadPartCopy
 *   s3_delete.c     DeleteObjects
 *   s3_persist.c    dir=: objects and uploads kept as files, read back at start
 *   s3_rdma.c       the RDMA path: dialects, declines, the transfer, the reply headers
 *   s3_target.c     request routing, GET/PUT/DELETE, bodies
 */
#ifndef ERNIC_S3_S3_INTERNAL_H
#define ERNIC_S3_S3_INTERNAL_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "s3/s3_checksum.h"
#include "s3/s3_err.h"
#include "s3/s3_md5.h"
#include "s3/s3_target.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

#define S3_MAX_USER_META   2048  /* x-amz-meta-* names (after the prefix) and values, as S3 counts */
#define S3_MAX_META_BYTES  8192  /* every stored header, names and values */
#define S3_MAX_META_PAIRS  40

/* Stored headers: n pairs "name\0value\0" in data. Immutable once made. */
struct s3_meta {
	size_t len;
	unsigned n;
	char data[];
};

struct s3_object {
	char *key;
	struct s3_blob *blob;
	char etag[48];          /* quoted */
	struct s3_meta *meta;   /* never NULL: at least its Content-Type */
	int64_t mtime;
	char upload_id[33];     /* the multipart upload it was completed from, or "" */
	uint32_t nparts;        /* parts it was completed from (0: a single PUT or a copy of one) */
	uint64_t *part_ends;    /* nparts cumulative part ends, for GET ?partNumber */
	enum s3_cks cks;        /* its additional checksum, or S3_CKS_NONE */
	bool cks_composite;     /* of its parts' checksums ("-N"), not of its bytes */
	char cks_b64[S3_CKS_B64_MAX];
};

struct s3_part {
	struct s3_blob *blob;   /* NULL: not uploaded */
	char etag[48];
	uint8_t md5[16];
	int64_t mtime;
	enum s3_cks cks;        /* its checksum, or none */
	uint8_t cks_raw[S3_CKS_MAX_LEN];
};

struct s3_upload {
	char id[33];
	char *key;
	struct s3_meta *meta;   /* what the object will carry */
	int64_t started;
	enum s3_cks cks;        /* x-amz-checksum-algorithm of CreateMultipartUpload, or none */
	bool cks_full;          /* x-amz-checksum-type FULL_OBJECT (else COMPOSITE) */
	struct s3_part *parts;  /* index = part number - 1, allocated on demand up to S3_MAX_PARTS */
	uint32_t nparts_alloc;
	struct s3_upload *next;
};

struct s3_store {
	struct s3_config cfg;
	struct s3_token server_token;
	uint8_t server_ll[16];    /* root: the link-local GID our replies name to link-local clients (0: none) */
	struct dma_ops dma;
	bool has_dma;
	struct s3_object *objs;   /* sorted by key */
	uint32_t nobjs;
	struct s3_upload *uploads;
	struct s3_store_stats stats;
	uint64_t next_request_id;
	int64_t created;
	struct s3_md5w *md5w;     /* NULL: every body is hashed on the caller's thread */
	int persist_fd;           /* the dir= directory, or -1 */
	/*
	 * Buckets: the store made by s3_store_new is the first (bucket=) and the
	 * root; CreateBucket adds others (buckets=), each a store of its own on
	 * the root's list. The root's stats, capacity, MD5 thread, DMA ops and
	 * request ids serve them all; a bucket holds its objects and uploads.
	 */
	struct s3_store *root;
	struct s3_store *next;    /* the root's list of the other buckets */
	uint32_t nbuckets;        /* root: how many buckets, itself included */
	uint32_t nuploads;        /* this bucket's uploads in progress */
	unsigned ops;             /* requests begun on this bucket and not finished */
	struct s3_op *spare_op;   /* root: the last request's, kept for the next (a request allocates nothing) */
	EVP_MD_CTX *spare_md5;    /* root: the last PUT's MD5 context, kept for the next */
	EVP_MD *md5;              /* root: MD5, fetched once (an implicit fetch per PUT costs a lookup); NULL: EVP_md5() */
};

enum op_kind {
	OP_DECIDED,       /* the response is known; body bytes are dropped */
	OP_PUT_OBJECT,    /* body into a new object */
	OP_PUT_PART,      /* body into a multipart part */
	OP_COMPLETE,      /* XML body of CompleteMultipartUpload */
	OP_DELETE_MULTI,  /* XML body of DeleteObjects */
};

struct s3_op {
	struct s3_store *st;
	enum op_kind kind;
	struct s3_response resp;
	char request_id[17];
	char resource[S3_MAX_KEY_LEN + 64];
	char key[S3_MAX_KEY_LEN + 1];
	char upload_id[33];
	uint32_t part;
	struct s3_meta *meta;     /* a PUT's or copy's metadata, until the store takes it */
	/* a PUT's conditions, checked at the headers and again when it commits */
	bool if_none_match_any;   /* If-None-Match: * */
	char if_match[256];       /* If-Match list, or "" */
	/* a body's additional checksum: computed when cks is set, compared when given */
	enum s3_cks cks;
	bool cks_given;           /* in a header: cks_want */
	bool cks_in_trailer;      /* in the aws-chunked trailer named cks_trailer */
	char cks_trailer[32];
	uint8_t cks_want[S3_CKS_MAX_LEN];
	uint8_t cks_raw[S3_CKS_MAX_LEN];  /* what the body's was (after body_ready) */
	bool has_md5;
	uint8_t want_md5[16];
	/* body being received */
	struct s3_blob *blob;
	EVP_MD_CTX *md5;          /* the body's MD5 so far: updated as bytes arrive, final at the end */
	struct s3_md5s *md5s;     /* or the MD5 thread's stream over blob->data, instead of md5 */
	uint64_t expected;        /* bytes announced, when known_len */
	bool known_len;
	uint64_t filled;
	uint64_t reserved;        /* capacity held for this body */
	enum s3_err body_err;     /* set when the body turned out bad; further bytes are dropped */
	bool rdma;                /* the request carried x-amz-rdma-token (not a HEAD, which ignores it) */
	enum s3_dialect dialect;  /* the token's, when rdma */
	bool client_ll;           /* its GID is link-local: so is the one our reply names */
	bool rdma_admitted;       /* RDMA moves this request's payload */
	bool rdma_declined;       /* 501: the body carries a GET's payload, a PUT is sent again */
	const char *rdma_why;     /* why it was declined or failed (the -v line) */
	uint64_t rdma_moved;      /* bytes the transfer moved, once it is over */
	bool head;                /* HEAD: the response never has a body */
	char method[16];          /* for the -v line */
	uint64_t t0_us;           /* when the headers were complete (CLOCK_MONOTONIC) */
	char *xml;
	size_t xml_len;
	/*
	 * The RDMA transfer still to make (s3_op_work): [done, len) of the token's
	 * window from (rkey, addr); a GET writes from data, which lives in blob
	 * (a reference: the object may be replaced or deleted meanwhile), a PUT
	 * reads into op->blob and hashes as it goes.
	 */
	struct {
		bool write;
		uint32_t rkey;
		uint64_t addr, len, done;
		struct s3_blob *blob;
		const uint8_t *data;
	} xfer;
};

struct req {
	const struct http_request *http;
	bool head;
	char bucket[256];
	const char *key;         /* points into op->key; "" for bucket-level requests */
	bool service;            /* "/" */
	bool rdma;               /* x-amz-rdma-token present */
	bool token_ok;
	struct s3_token token;
};

/* A growing text buffer; oom set once an allocation failed (the text is then dropped). */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* s3_blob.c */
struct s3_blob *blob_new(size_t len);
int blob_grow(struct s3_blob *b, size_t need);
struct s3_blob *blob_exact(struct s3_blob *b, size_t filled);
void map_cache_drain(void);

/* s3_resp.c */
void sb_add(struct sbuf *s, const char *str, size_t n);
void sb_puts(struct sbuf *s, const char *str);
void sb_printf(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_xml(struct sbuf *s, const char *str);
void sb_tag(struct sbuf *s, const char *tag, const char *text);
void iso8601(int64_t t, char out[32]);
void hex_encode(const uint8_t *in, size_t n, char *out);
void md5_digest(const uint8_t *data, size_t len, uint8_t out[16]);
void etag_of(const uint8_t digest[16], char out[48]);
void response_move(struct s3_response *dst, const struct s3_response *src);
void resp_header(struct s3_response *r, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A header whose value is v in decimal. */
void resp_header_u64(struct s3_response *r, const char *name, uint64_t v);
void resp_xml(struct s3_response *r, struct sbuf *s);
void op_error(struct s3_op *op, enum s3_err e, const char *detail);
void ok_empty(struct s3_op *op, int status);
/* An element name read by expat without its namespace prefix ("s3:Part" is "Part"). */
const char *xml_local_name(const char *name);

/* s3_store.c */
long store_find(const struct s3_store *st, const char *key);
uint32_t store_lower_bound(const struct s3_store *st, const char *key, bool inclusive);
bool store_reserve(struct s3_store *st, uint64_t n);
void store_unreserve(struct s3_store *st, uint64_t n);
bool store_slot_available(const struct s3_store *st, const char *key);
/* Takes blob and *meta (set to NULL) when it succeeds; NULL when no slot is left. */
struct s3_object *store_commit(struct s3_store *st, const char *key, struct s3_blob *blob, const char *etag,
			       struct s3_meta **meta);
void store_delete(struct s3_store *st, const char *key);
struct s3_upload *upload_find(struct s3_store *st, const char *id, const char *key);
void upload_free(struct s3_store *st, struct s3_upload *u);
/* A bucket's store with cfg (root NULL: it is the root); NULL when out of memory. */
struct s3_store *store_alloc(const struct s3_config *cfg, struct s3_store *root);
/* Free what a bucket holds and the bucket (not the root's shared parts). */
void store_release(struct s3_store *st);

/* The bucket named name under root's, or NULL. */
struct s3_store *bucket_find(struct s3_store *root, const char *name);
/* A new empty bucket (kept under dir= when the store has one): NULL when it cannot be made. */
struct s3_store *bucket_new(struct s3_store *root, const char *name);
/* Remove an empty bucket that no request is using (never the root). */
void bucket_delete(struct s3_store *b);

void bucket_request(struct s3_op *op, const struct req *rq);
void create_bucket(struct s3_op *op, const struct req *rq);

/* s3_list.c */
void list_buckets(struct s3_op *op);
void list_objects(struct s3_op *op, const struct req *rq);
void list_parts(struct s3_op *op, struct s3_upload *u, const struct req *rq);
void list_uploads(struct s3_op *op, const struct req *rq);

/* s3_multipart.c */
void initiate_upload(struct s3_op *op, const struct req *rq);
void finish_part(struct s3_op *op);
/* Part `part` of u becomes blob (reserved by the caller) with MD5 digest; NULL when out of memory (nothing taken). */
struct s3_part *upload_set_part(struct s3_store *st, struct s3_upload *u, uint32_t part, struct s3_blob *blob,
				const uint8_t digest[16]);
void finish_complete(struct s3_op *op);
/* When the object at op->key was completed from upload id: its result answered again (true). */
bool complete_again(struct s3_op *op, const char *id);
bool etag_match(const char *stored, const char *given);

/* s3_meta.c */
enum s3_err s3_meta_from_request(const struct http_request *h, const char *default_type, struct s3_meta **out);
struct s3_meta *s3_meta_dup(const struct s3_meta *m);
void s3_meta_free(struct s3_meta *m);
const char *s3_meta_get(const struct s3_meta *m, const char *name);
/* The stored headers into r; get (or NULL) supplies the response-* overrides of a GET. */
void s3_meta_emit(struct s3_response *r, const struct s3_meta *m, const struct http_request *get);
bool s3_etag_list_match(const char *list, const char *etag);
/* 0 when the read may go on, else the status: 412, or 304 (412 for a copy's source). */
int s3_cond_read(const struct http_request *h, bool copy_source, const char *etag, int64_t mtime);

/* The x-amz-checksum-* / x-amz-sdk-checksum-algorithm / x-amz-trailer of a body into op; false with the error set. */
bool checksum_read(struct s3_op *op, const struct http_request *h);
/* After the body: compute op->cks_raw and compare with what was given; false with the error set. */
bool checksum_check(struct s3_op *op, const uint8_t *data, size_t len);
/* x-amz-checksum-<algo>: value (and, for an object, its type) into the response. */
void checksum_headers(struct s3_response *r, enum s3_cks a, const char *b64, const char *type);

/* s3_persist.c: each false with the error response set; true at once without dir= */
int persist_open(struct s3_store *st);     /* 0, or -errno (logged) */
void persist_close(struct s3_store *st);
/* The object key will be: o's fields (etag, meta, mtime, checksum, parts, upload id) and blob. */
bool persist_object(struct s3_op *op, const char *key, const struct s3_blob *blob, const struct s3_object *o);
void persist_object_remove(const struct s3_store *st, const char *key);
bool persist_upload(struct s3_op *op, const struct s3_upload *u);
bool persist_part(struct s3_op *op, const struct s3_upload *u, uint32_t part, const struct s3_part *p);
void persist_upload_remove(const struct s3_store *st, const char *id);
/* The directory of an empty bucket other than the first. */
void persist_bucket_remove(const struct s3_store *b);

/* s3_copy.c */
void copy_object(struct s3_op *op, const struct req *rq, const char *source);
void upload_part_copy(struct s3_op *op, const struct req *rq, const char *source);

/* s3_delete.c */
void delete_objects_begin(struct s3_op *op, const struct req *rq);
void finish_delete_objects(struct s3_op *op);

/* s3_rdma.c */
enum rdma_verdict {
	RDMA_GO,       /* op->xfer is the caller's to set up */
	RDMA_DECLINE,  /* 501: a GET answers with the body, a PUT with RDMANotSupported */
	RDMA_ERROR,    /* the error response is set */
};
/*
 * Whether RDMA serves the payload of a GET (get: *n bytes of the object to
 * write, capped here to what the dialect sends) or of a PUT or UploadPart
 * (*n: the token's length, to read).
 */
enum rdma_verdict rdma_admit(struct s3_op *op, const struct req *rq, uint64_t *n, bool get);
/* The x-amz-rdma-* headers of op's response, by dialect (s3_op_finish). */
void rdma_reply(struct s3_op *op);
/* The transfer stops here (done or failed): its reference goes. */
void xfer_end(struct s3_op *op);
/* The -v line of a finished request. */
void op_log(const struct s3_op *op);

/* s3_target.c */
/* ETag, Last-Modified and the stored headers; get (or NULL) gives a GET's response-* overrides. */
void object_headers(struct s3_op *op, const struct s3_object *o, const struct http_request *get);
/* A write's If-None-Match / If-Match into op (false with the error set), then against the key as it is now. */
bool put_conditions_read(struct s3_op *op, const struct http_request *h);
bool put_conditions_hold(struct s3_op *op);
void put_begin(struct s3_op *op, const struct req *rq, enum op_kind kind);
/* A Content-MD5 value (base64 of 16 bytes): 0, or -EINVAL. */
int base64_md5(const char *v, uint8_t out[16]);
void drop_body(struct s3_op *op);
bool body_ready(struct s3_op *op, uint8_t digest[16]);

/* src into dst (cap bytes), cut short to fit, NUL-terminated: snprintf's "%s" without printf. */
static inline void s3_strcpy(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

#endif
