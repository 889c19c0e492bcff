/*
 * What the files of s3_rdma_client share (s3_rdma_client.c has the usage):
 *
 *   s3_rdma_client.c    options, verbs, HTTP/1.1, the check helpers, the benchmark, main
 *   s3_rdma_checks.c    the hipObject dialect's functional checks (-m hipobject)
 *   s3_rdma_dialects.c  the cuObject dialect's (-m cuobject) and the RC handshake's (-m rc)
 */
#ifndef S3_RDMA_CLIENT_H
#define S3_RDMA_CLIENT_H

#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "parse_int.h"

#define TOKEN_BYTES 44
#define TOKEN_HEX   88
#define TRANSPORT_RC 0x01
#define CU_TOKEN_MAX 160                    /* a cuObject descriptor with the window pair */

#define HEAD_CAP     16384u                 /* largest response head accepted */
#define BODY_CAP     (64u << 20)            /* largest response body accepted */
#define IO_TIMEOUT_S 60                     /* per send/receive on the socket */
#define FUNC_HALF    (2u << 20)             /* half-buffer size of the functional mode */

struct opts {
	bool functional;
	const char *mode;        /* -m: hipobject (default), cuobject, rc or all */
	uint32_t ip;             /* host order */
	uint16_t port;
	const char *bucket;
	const char *device;      /* NULL: the first */
	uint64_t size;           /* benchmark object size */
	uint64_t count;          /* benchmark iterations */
};

struct rdma {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t port;
	uint16_t lid;
	int gid_index;           /* the RoCE v2 IPv4-mapped GID */
	union ibv_gid gid;
	int ll_index;            /* the RoCE v2 link-local GID, or -1 */
	union ibv_gid ll_gid;
	char name[64];
	uint8_t *buf;
	size_t half;             /* buf holds 2 * half bytes */
	uint8_t *lo, *hi;        /* PUT source, GET destination */
};

struct http {
	uint32_t ip;
	uint16_t port;
	int fd;
	bool fresh;              /* no request sent on this connection yet */
	uint8_t in[HEAD_CAP];    /* received, not yet consumed */
	size_t in_len;
	uint8_t *body;           /* the last response's body, NUL-terminated */
	size_t body_cap;
	char err[256];
};

struct http_req {
	const char *method;
	const char *path;
	const char *token;       /* x-amz-rdma-token value, or NULL */
	const char *range;       /* Range value, or NULL */
	const char *extra;       /* more header lines, each ending in CRLF, or NULL */
	const void *body;        /* PUT body, or NULL */
	size_t body_len;
	bool content_length;     /* send Content-Length (body_len) */
};

struct http_resp {
	int status;
	bool has_length;
	uint64_t length;
	bool has_reply;
	char reply[128];
	bool has_bytes, has_bytes_xfer;
	uint64_t bytes, bytes_xfer;
	char etag[96];
	char content_range[96];
	char crc32[32];          /* x-amz-checksum-crc32 */
	char mp_parts[16];       /* x-amz-mp-parts-count */
	bool close;
	const char *body;        /* points into http.body; valid until the next request */
	size_t body_len;
};

struct client {
	struct opts o;
	struct rdma r;
	struct http h;
	char prefix[64];         /* key prefix of this run */
	unsigned passed, failed;
};

/* s3_rdma_client.c */
uint8_t pat(uint64_t seed, uint64_t i);
void pat_fill(uint8_t *p, size_t n, uint64_t seed, uint64_t off);
void guard_fill(uint8_t *p, size_t n, uint64_t seed, uint64_t off);
long scan(const uint8_t *p, size_t from, size_t to, uint64_t seed, uint64_t off, bool want_guard);
double now_s(void);
void put_le(uint8_t *p, size_t *o, uint64_t v, unsigned bytes);
bool gid_is_ipv4_mapped(const union ibv_gid *g);
/* A hipObject token for the window [p, p + len) under rkey, naming this QPN and GID. */
void mint_token_for(const struct rdma *r, uint32_t qpn, const union ibv_gid *gid, uint32_t rkey, const void *p,
		    uint64_t len, char out[TOKEN_HEX + 1]);
/* The same for the client's own QP and IPv4-mapped GID. */
void mint_token(const struct rdma *r, uint32_t rkey, const void *p, uint64_t len, char out[TOKEN_HEX + 1]);
/* A cuObject descriptor (raddr:rsize:rkey:lid:qpn:has_gid:gid, as NooBaa prints it) for the window. */
void mint_cu_token(const struct rdma *r, uint32_t rkey, const void *p, uint64_t len, char out[CU_TOKEN_MAX]);
void http_disconnect(struct http *h);
/* One request and its response. 0, or -1 with h->err set (the connection is then closed). */
int http_do(struct http *h, const struct http_req *q, struct http_resp *r);
void path_of(const struct client *c, const char *bucket, const char *key, char *out, size_t cap);
void key_of(const struct client *c, const char *suffix, char *out, size_t cap);
/* An RDMA request with a hipObject token for a window in the registered buffer. */
int req_rdma(struct client *c, const char *method, const char *bucket, const char *key, uint32_t rkey,
	     const void *win, uint64_t len, const char *range, struct http_resp *r);
/* A request on the bucket with any token (or none), a Range (or NULL) and extra header lines (or NULL). */
int req_token(struct client *c, const char *method, const char *key, const char *token, const char *range,
	      const char *extra, struct http_resp *r);
int req_plain(struct client *c, const char *method, const char *bucket, const char *key, const char *token,
	      const void *body, size_t body_len, struct http_resp *r);
bool ok(struct client *c, const char *name);
bool fail(struct client *c, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *summary(const struct http_resp *r);
/* hipObject's RDMA-path headers at want_status and want_bytes: NULL when they hold, else what did not. */
const char *rdma_headers_problem(const struct http_resp *r, int want_status, uint64_t want_bytes);
bool is_s3_error(const struct http_resp *r, const char *code);
/* Prepare the GET destination: the guard over [0, n), against object `seed` read from `off`. */
void arm(struct client *c, size_t n, uint64_t seed, uint64_t off);

/* s3_rdma_checks.c: the hipObject functional checks; the number that failed. */
unsigned hipobject_checks(struct client *c);
/* s3_rdma_dialects.c: the same for the cuObject dialect, and the RC handshake from each GID kind. */
unsigned cuobject_checks(struct client *c);
unsigned rc_checks(struct client *c);

#endif
