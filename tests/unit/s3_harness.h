/* The S3 unit tests' harness (s3_harness.c). */
#ifndef ERNIC_TESTS_S3_HARNESS_H
#define ERNIC_TESTS_S3_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_conn.h"
#include "s3/s3_target.h"

struct fake_mr {
	uint32_t key;
	uint64_t addr;
	size_t len;
	uint8_t *buf;
	bool readable, writable;
};

extern struct fake_mr mrs[4];
extern unsigned nmrs;
extern unsigned dma_calls;
/* The fake DMA check says yes to everything (the transfer then finds the fault): false by default. */
extern bool dma_check_passes;
extern struct s3_store *st;
extern struct s3_conn *conn;

struct resp {
	int status;
	char head[8192];
	uint8_t *body;
	size_t body_len;
};

struct fake_mr *mr_find(uint32_t key);
struct fake_mr *add_mr(uint32_t key, uint64_t addr, size_t len);
struct s3_store *make_store(const char *spec);
/* A store from backend spec, its fake DMA ops and a connection; setup() is "s3". */
int setup_spec(const char *spec);
int setup(void **state);
int teardown(void **state);
/* Everything the connection has to send, concatenated. */
uint8_t *drain(size_t *len);
/* Parse one response at *pos of out. */
bool parse_resp(const uint8_t *out, size_t len, size_t *pos, struct resp *r);
/* Send one request (whole) and return its (final) response; body bytes copied out. */
struct resp exchange(const void *req, size_t len, bool has_body_on_head);
struct resp req_str(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct resp put_bytes(const char *path, const uint8_t *data, size_t len, const char *extra);
const char *hdr(const struct resp *r, const char *name, char *out, size_t cap);
void assert_error(const struct resp *r, int status, const char *code, const char *resource);
void md5_hex(const uint8_t *d, size_t n, char out[33]);
uint8_t *pattern(size_t n, unsigned seed);
void free_resp(struct resp *r);
/* The text of the first <tag> of r's body (which must have one). */
const char *xml_text(const struct resp *r, const char *tag, char *out, size_t cap);
/* CreateMultipartUpload of key: its id. */
void initiate(const char *key, char id[64]);
/* UploadPart n of key, which must succeed: its ETag. */
void upload_part(const char *key, const char *id, int n, const uint8_t *d, size_t len, char etag[48]);
/* CompleteMultipartUpload of key with the document xml. */
struct resp complete(const char *key, const char *id, const char *xml);

/* A hipObject token (88 hex, QPN 0x11, RC) for (rkey, addr, len), into out. */
const char *token_hdr(uint32_t rkey, uint64_t addr, uint64_t len, char out[128]);
/* method path with that token, Content-Length: 0 and the extra header lines (or NULL). */
struct resp rdma_req(const char *method, const char *path, uint32_t rkey, uint64_t addr, uint64_t len,
		     const char *extra);
/* A hipObject answer: status, the reply "<status>:<the server's token>", both byte counts at moved. */
void assert_rdma(const struct resp *r, int status, uint64_t moved);

/* Bytes the connection has queued for sending, taken without parsing. */
size_t pending_output(void);

#endif
