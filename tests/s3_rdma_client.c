/*
 * s3_rdma_client: the guest-side S3-over-RDMA client (docs/s3.md and the S3 spec, "Testing").
 *
 * Built inside the guest with nothing from the tree but src/util/parse_int.h:
 *
 *   gcc -std=c17 -O2 -Wall -Wextra -Werror -I<dir of parse_int.h> s3_rdma_client.c \
 *       s3_rdma_checks.c s3_rdma_dialects.c -libverbs
 *
 * It opens an RDMA device, registers one buffer (local write, remote read, remote write) and
 * splits it in half: the low half is the source of every PUT, the high half the destination of
 * every GET. It creates a real RC queue pair and mints one x-amz-rdma-token per request, in
 * the dialect being checked (src/s3/s3_token.h):
 *
 *  - hipObject: 44 little-endian bytes as 88 hex characters, the QP's number and the port's
 *    RoCE v2 GID inside: transport u8 (0x01 RC), QPN u32, GID[16], rkey u32, addr u64,
 *    len u64, port u8, LID u16. Answers carry x-amz-rdma-reply "<status>:<88 hex server
 *    token>", x-amz-rdma-bytes and x-amz-rdma-bytes-transferred, on errors too.
 *  - cuObject: the text descriptor raddr:rsize:rkey:lid:qpn:has_gid:gid. Successes carry the
 *    bare status as the reply and the byte count; errors no reply; what RDMA cannot serve
 *    whole is declined with 501 (a GET's payload then in the body).
 *
 * HTTP/1.1 goes over a plain TCP socket (one keep-alive connection, opened again when the
 * server closes it). On the RDMA path the store RDMA-WRITEs a GET's payload into the token's
 * window and RDMA-READs a PUT's payload out of it.
 *
 * Usage: s3_rdma_client [-F] [-m MODE] [-a ADDR] [-p PORT] [-b BUCKET] [-d DEVICE] [-s SIZE] [-n COUNT]
 *   -F         functional mode: every check prints "ok NAME" or "FAIL NAME: reason"; at the end
 *              "all checks passed" and exit status 0, or exit status 1
 *   -m MODE    which checks -F runs: hipobject (the default), cuobject, rc (the RC handshake an
 *              RC client makes toward the reply's server token, from the port's link-local GID
 *              and from its IPv4-mapped one), or all
 *   otherwise  benchmark: one object of SIZE (default 1M; K/M/G suffixes) PUT COUNT times
 *              (default 16) and read back COUNT times, both by RDMA; prints MB/s (10^6 bytes/s)
 *   -a ADDR    endpoint IPv4 address (192.168.200.1)    -p PORT    TCP port (9000)
 *   -b BUCKET  bucket (ernic)                           -d DEVICE  RDMA device (the first)
 * Every object it creates is deleted before it exits.
 */
#include "s3_rdma_client.h"

/* ------------------------------------------------------------------------------------------ */
/* Options */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: s3_rdma_client [-F] [-m MODE] [-a ADDR] [-p PORT] [-b BUCKET] [-d DEVICE] [-s SIZE] [-n COUNT]\n"
		"  -F         functional checks (ok/FAIL per check, \"all checks passed\", exit 0 or 1)\n"
		"  -m MODE    the checks -F runs: hipobject (default), cuobject, rc or all\n"
		"  (no -F)    benchmark: PUT and GET one SIZE object COUNT times by RDMA, print MB/s\n"
		"  -a ADDR    S3 endpoint IPv4 address (default 192.168.200.1)\n"
		"  -p PORT    TCP port (default 9000)\n"
		"  -b BUCKET  bucket (default ernic)\n"
		"  -d DEVICE  RDMA device name (default: the first device)\n"
		"  -s SIZE    benchmark object size, e.g. 4096, 64K, 1M (default 1M)\n"
		"  -n COUNT   benchmark iterations (default 16)\n");
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Byte i of the pattern named by seed: what object "seed" holds at offset i. */
uint8_t pat(uint64_t seed, uint64_t i)
{
	return (uint8_t)(splitmix64(seed * 0x100000001b3ull + i) >> 29);
}

void pat_fill(uint8_t *p, size_t n, uint64_t seed, uint64_t off)
{
	for (size_t j = 0; j < n; j++)
		p[j] = pat(seed, off + j);
}

/* The guard: bytes that differ from the pattern at every position, so any stray write shows. */
void guard_fill(uint8_t *p, size_t n, uint64_t seed, uint64_t off)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (uint8_t)~pat(seed, off + j);
}

/* The first j in [from, to) where p[j] is not pattern (want_guard false) or guard; -1 if none. */
long scan(const uint8_t *p, size_t from, size_t to, uint64_t seed, uint64_t off, bool want_guard)
{
	for (size_t j = from; j < to; j++) {
		uint8_t want = pat(seed, off + j);

		if (want_guard)
			want = (uint8_t)~want;
		if (p[j] != want)
			return (long)j;
	}
	return -1;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void put_le(uint8_t *p, size_t *o, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[(*o)++] = (uint8_t)(v >> (8 * i));
}

/* ------------------------------------------------------------------------------------------ */
/* Verbs */

bool gid_is_ipv4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

/* Open the device, find an active port and its RoCE v2 IPv4 GID, register, create the RC QP. */
static int rdma_open(struct rdma *r, const char *want, size_t half, char *err, size_t errlen)
{
	struct ibv_device **list;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	int n = 0;

	memset(r, 0, sizeof(*r));
	r->gid_index = -1;
	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		snprintf(err, errlen, "no RDMA devices (%s)", list ? "none listed" : strerror(errno));
		if (list)
			ibv_free_device_list(list);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (want && strcmp(ibv_get_device_name(list[i]), want) != 0)
			continue;
		snprintf(r->name, sizeof(r->name), "%s", ibv_get_device_name(list[i]));
		r->ctx = ibv_open_device(list[i]);
		if (r->ctx == NULL) {
			snprintf(err, errlen, "ibv_open_device(%s): %s", r->name, strerror(errno));
			ibv_free_device_list(list);
			return -1;
		}
		break;
	}
	ibv_free_device_list(list);
	if (r->ctx == NULL) {
		snprintf(err, errlen, "no RDMA device named '%s'", want);
		return -1;
	}
	if (ibv_query_device(r->ctx, &dattr)) {
		snprintf(err, errlen, "ibv_query_device(%s): %s", r->name, strerror(errno));
		return -1;
	}
	for (unsigned p = 1; p <= dattr.phys_port_cnt && p <= 255; p++) {
		if (ibv_query_port(r->ctx, (uint8_t)p, &pattr) == 0 && pattr.state == IBV_PORT_ACTIVE) {
			r->port = (uint8_t)p;
			r->lid = pattr.lid;
			break;
		}
	}
	if (r->port == 0) {
		snprintf(err, errlen, "%s has no active port (of %u)", r->name, dattr.phys_port_cnt);
		return -1;
	}
	ibv_query_port(r->ctx, r->port, &pattr);
	r->ll_index = -1;
	for (int i = 0; i < pattr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(r->ctx, r->port, (uint32_t)i, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (r->gid_index < 0 && gid_is_ipv4_mapped(&e.gid)) {
			r->gid_index = i;
			r->gid = e.gid;
		} else if (r->ll_index < 0 && e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80) {
			r->ll_index = i;
			r->ll_gid = e.gid;
		}
	}
	if (r->gid_index < 0) {
		snprintf(err, errlen, "%s port %u has no RoCE v2 IPv4 GID (no IPv4 address on its netdev?)",
			 r->name, r->port);
		return -1;
	}

	r->half = half;
	if (posix_memalign((void **)&r->buf, 4096, 2 * half)) {
		snprintf(err, errlen, "cannot allocate %zu bytes", 2 * half);
		r->buf = NULL;
		return -1;
	}
	memset(r->buf, 0, 2 * half);
	r->lo = r->buf;
	r->hi = r->buf + half;

	r->pd = ibv_alloc_pd(r->ctx);
	if (r->pd == NULL) {
		snprintf(err, errlen, "ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	r->mr = ibv_reg_mr(r->pd, r->buf, 2 * half,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (r->mr == NULL) {
		snprintf(err, errlen, "ibv_reg_mr of %zu bytes: %s", 2 * half, strerror(errno));
		return -1;
	}
	r->cq = ibv_create_cq(r->ctx, 16, NULL, NULL, 0);
	if (r->cq == NULL) {
		snprintf(err, errlen, "ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	struct ibv_qp_init_attr qia = {
		.send_cq = r->cq,
		.recv_cq = r->cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	r->qp = ibv_create_qp(r->pd, &qia);
	if (r->qp == NULL) {
		snprintf(err, errlen, "ibv_create_qp(RC): %s", strerror(errno));
		return -1;
	}
	/* INIT, as a client would before connecting; nothing on this path needs more. */
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = r->port,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
	};
	if (ibv_modify_qp(r->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		snprintf(err, errlen, "ibv_modify_qp(INIT): %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void rdma_close(struct rdma *r)
{
	if (r->qp)
		ibv_destroy_qp(r->qp);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ctx)
		ibv_close_device(r->ctx);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

static const char hex_digits[] = "0123456789abcdef";

void mint_token_for(const struct rdma *r, uint32_t qpn, const union ibv_gid *gid, uint32_t rkey, const void *p,
		    uint64_t len, char out[TOKEN_HEX + 1])
{
	uint8_t raw[TOKEN_BYTES];
	size_t o = 0;

	raw[o++] = TRANSPORT_RC;
	put_le(raw, &o, qpn, 4);
	memcpy(raw + o, gid->raw, 16);
	o += 16;
	put_le(raw, &o, rkey, 4);
	put_le(raw, &o, (uint64_t)(uintptr_t)p, 8);
	put_le(raw, &o, len, 8);
	raw[o++] = r->port;
	put_le(raw, &o, r->lid, 2);
	for (size_t i = 0; i < TOKEN_BYTES; i++) {
		out[2 * i] = hex_digits[raw[i] >> 4];
		out[2 * i + 1] = hex_digits[raw[i] & 15];
	}
	out[TOKEN_HEX] = '\0';
}

void mint_token(const struct rdma *r, uint32_t rkey, const void *p, uint64_t len, char out[TOKEN_HEX + 1])
{
	mint_token_for(r, r->qp->qp_num, &r->gid, rkey, p, len, out);
}

void mint_cu_token(const struct rdma *r, uint32_t rkey, const void *p, uint64_t len, char out[CU_TOKEN_MAX])
{
	char gid[33];

	for (int i = 0; i < 16; i++) {
		gid[2 * i] = hex_digits[r->gid.raw[i] >> 4];
		gid[2 * i + 1] = hex_digits[r->gid.raw[i] & 15];
	}
	gid[32] = '\0';
	snprintf(out, CU_TOKEN_MAX, "%016" PRIx64 ":%08" PRIx64 ":%08" PRIx32 ":%04x:%06x:1:%s",
		 (uint64_t)(uintptr_t)p, len, rkey, (unsigned)r->lid, (unsigned)(r->qp->qp_num & 0xffffff), gid);
}

/* ------------------------------------------------------------------------------------------ */
/* HTTP/1.1 over one TCP connection */

void http_disconnect(struct http *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->in_len = 0;
}

static int http_connect(struct http *h)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(h->port), .sin_addr.s_addr = htonl(h->ip) };
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int one = 1;
	char ip[16];

	format_ipv4(h->ip, ip);
	h->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (h->fd < 0) {
		snprintf(h->err, sizeof(h->err), "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(h->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(h->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(h->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(h->err, sizeof(h->err), "connect to %s:%u: %s", ip, h->port, strerror(errno));
		http_disconnect(h);
		return -1;
	}
	h->fresh = true;
	h->in_len = 0;
	return 0;
}

static int send_all(struct http *h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = send(h->fd, b, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(h->err, sizeof(h->err), "send: %s",
				 k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "timed out" : strerror(errno));
			return -1;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Receive more into h->in; the byte count, 0 at EOF, -1 on an error (h->err set). */
static ssize_t recv_more(struct http *h)
{
	for (;;) {
		ssize_t k = recv(h->fd, h->in + h->in_len, sizeof(h->in) - h->in_len, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			snprintf(h->err, sizeof(h->err), "receive: no answer within %d s", IO_TIMEOUT_S);
			return -1;
		}
		if (k < 0) {
			snprintf(h->err, sizeof(h->err), "receive: %s", strerror(errno));
			return -1;
		}
		h->in_len += (size_t)k;
		return k;
	}
}

static void trim(char **s, char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

/* A header value into a NUL-terminated copy; -1 if it does not fit. */
static int copy_value(char *dst, size_t cap, const char *v, size_t n)
{
	if (n >= cap)
		return -1;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

static int parse_u64_value(struct http *h, const char *name, const char *v, size_t n, uint64_t *out)
{
	char tmp[32];

	if (copy_value(tmp, sizeof(tmp), v, n) || parse_u64(tmp, out)) {
		snprintf(h->err, sizeof(h->err), "bad %s header '%.*s'", name, (int)(n < 40 ? n : 40), v);
		return -1;
	}
	return 0;
}

/* Parse the response head in h->in[0, head_len) (the blank line included). */
static int parse_head(struct http *h, size_t head_len, struct http_resp *r)
{
	char *p = (char *)h->in, *end = p + head_len - 2; /* the final CRLF is the blank line */
	char *eol = memchr(p, '\n', (size_t)(end - p));
	char code[4];
	uint64_t status;

	if (eol == NULL || eol - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    (p[12] != ' ' && p[12] != '\r')) {
		snprintf(h->err, sizeof(h->err), "malformed status line '%.*s'",
			 (int)(eol ? (eol - p < 60 ? eol - p : 60) : 20), p);
		return -1;
	}
	memcpy(code, p + 9, 3);
	code[3] = '\0';
	if (parse_u64_range(code, 100, 599, &status)) {
		snprintf(h->err, sizeof(h->err), "bad status code '%s'", code);
		return -1;
	}
	r->status = (int)status;
	for (p = eol + 1; p < end; p = eol + 1) {
		char *colon, *v, *ve;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		ve = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		colon = memchr(p, ':', (size_t)(ve - p));
		if (colon == NULL || colon == p) {
			snprintf(h->err, sizeof(h->err), "malformed header line '%.*s'",
				 (int)(ve - p < 60 ? ve - p : 60), p);
			return -1;
		}
		v = colon + 1;
		trim(&v, &ve);
		size_t nl = (size_t)(colon - p), vl = (size_t)(ve - v);
#define IS(n) (nl == sizeof(n) - 1 && strncasecmp(p, n, nl) == 0)
		if (IS("content-length")) {
			if (parse_u64_value(h, "Content-Length", v, vl, &r->length))
				return -1;
			r->has_length = true;
		} else if (IS("transfer-encoding")) {
			snprintf(h->err, sizeof(h->err), "unexpected Transfer-Encoding '%.*s'", (int)(vl < 40 ? vl : 40), v);
			return -1;
		} else if (IS("x-amz-rdma-reply")) {
			if (copy_value(r->reply, sizeof(r->reply), v, vl)) {
				snprintf(h->err, sizeof(h->err), "x-amz-rdma-reply of %zu characters", vl);
				return -1;
			}
			r->has_reply = true;
		} else if (IS("x-amz-rdma-bytes")) {
			if (parse_u64_value(h, "x-amz-rdma-bytes", v, vl, &r->bytes))
				return -1;
			r->has_bytes = true;
		} else if (IS("x-amz-rdma-bytes-transferred")) {
			if (parse_u64_value(h, "x-amz-rdma-bytes-transferred", v, vl, &r->bytes_xfer))
				return -1;
			r->has_bytes_xfer = true;
		} else if (IS("etag")) {
			copy_value(r->etag, sizeof(r->etag), v, vl); /* an over-long one stays "" */
		} else if (IS("content-range")) {
			copy_value(r->content_range, sizeof(r->content_range), v, vl);
		} else if (IS("x-amz-checksum-crc32")) {
			copy_value(r->crc32, sizeof(r->crc32), v, vl);
		} else if (IS("x-amz-mp-parts-count")) {
			copy_value(r->mp_parts, sizeof(r->mp_parts), v, vl);
		} else if (IS("connection")) {
			r->close = vl == 5 && strncasecmp(v, "close", 5) == 0;
		}
#undef IS
	}
	return 0;
}

/* One request and its response. 0, or -1 with h->err set (the connection is then closed). */
int http_do(struct http *h, const struct http_req *q, struct http_resp *r)
{
	char head[1024];
	char ip[16];
	size_t head_len = 0;     /* of the response */
	int n;

	format_ipv4(h->ip, ip);
	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: s3_rdma_client\r\n",
		     q->method, q->path, ip, h->port);
	if (n > 0 && (size_t)n < sizeof(head) && q->content_length)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %zu\r\n", q->body_len);
	if (n > 0 && (size_t)n < sizeof(head) && q->token)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "x-amz-rdma-token: %s\r\n", q->token);
	if (n > 0 && (size_t)n < sizeof(head) && q->range)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Range: %s\r\n", q->range);
	if (n > 0 && (size_t)n < sizeof(head) && q->extra)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "%s", q->extra);
	if (n > 0 && (size_t)n < sizeof(head))
		n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
	if (n <= 0 || (size_t)n >= sizeof(head)) {
		snprintf(h->err, sizeof(h->err), "request head too long");
		return -1;
	}

	for (int attempt = 0;; attempt++) {
		bool reused;

		head_len = 0;
		memset(r, 0, sizeof(*r));
		if (h->fd < 0 && http_connect(h))
			return -1;
		reused = !h->fresh;
		h->fresh = false;
		if (send_all(h, head, (size_t)n) || (q->body_len && send_all(h, q->body, q->body_len))) {
			http_disconnect(h);
			if (reused && attempt == 0)
				continue; /* the server closed a kept-alive connection: once more, afresh */
			return -1;
		}
		/* The head: up to the blank line. */
		for (;;) {
			uint8_t *blank = NULL;

			for (size_t i = 3; i < h->in_len; i++) {
				if (h->in[i - 3] == '\r' && h->in[i - 2] == '\n' && h->in[i - 1] == '\r' && h->in[i] == '\n') {
					blank = h->in + i + 1;
					break;
				}
			}
			if (blank) {
				head_len = (size_t)(blank - h->in);
				break;
			}
			if (h->in_len == sizeof(h->in)) {
				snprintf(h->err, sizeof(h->err), "response head larger than %u bytes", HEAD_CAP);
				http_disconnect(h);
				return -1;
			}
			ssize_t k = recv_more(h);

			if (k == 0) {
				bool nothing = h->in_len == 0;

				snprintf(h->err, sizeof(h->err), "connection closed %s", nothing ? "before a response" : "inside the response head");
				http_disconnect(h);
				if (nothing && reused && attempt == 0)
					break;
				return -1;
			}
			if (k < 0) {
				http_disconnect(h);
				return -1;
			}
		}
		if (head_len == 0)
			continue; /* retry on a new connection */
		if (parse_head(h, head_len, r)) {
			http_disconnect(h);
			return -1;
		}
		break;
	}

	/* The body, by Content-Length (none at all for HEAD, 1xx, 204 and 304). */
	bool no_body = strcmp(q->method, "HEAD") == 0 || r->status < 200 || r->status == 204 || r->status == 304;
	uint64_t want = no_body ? 0 : r->length;

	if (!no_body && !r->has_length) {
		snprintf(h->err, sizeof(h->err), "HTTP %d response without Content-Length", r->status);
		http_disconnect(h);
		return -1;
	}
	if (want > BODY_CAP) {
		snprintf(h->err, sizeof(h->err), "response body of %" PRIu64 " bytes (more than %u)", want, BODY_CAP);
		http_disconnect(h);
		return -1;
	}
	memmove(h->in, h->in + head_len, h->in_len - head_len);
	h->in_len -= head_len;
	if (h->body_cap < want + 1) {
		uint8_t *nb = realloc(h->body, (size_t)want + 1);

		if (nb == NULL) {
			snprintf(h->err, sizeof(h->err), "out of memory for a %" PRIu64 "-byte body", want);
			http_disconnect(h);
			return -1;
		}
		h->body = nb;
		h->body_cap = (size_t)want + 1;
	}
	size_t got = 0;

	while (got < want) {
		if (h->in_len == 0) {
			ssize_t k = recv_more(h);

			if (k <= 0) {
				if (k == 0)
					snprintf(h->err, sizeof(h->err), "connection closed after %zu of %" PRIu64 " body bytes",
						 got, want);
				http_disconnect(h);
				return -1;
			}
		}
		size_t take = h->in_len < want - got ? h->in_len : (size_t)(want - got);

		memcpy(h->body + got, h->in, take);
		memmove(h->in, h->in + take, h->in_len - take);
		h->in_len -= take;
		got += take;
	}
	h->body[got] = '\0';
	r->body = (const char *)h->body;
	r->body_len = got;
	if (r->close)
		http_disconnect(h);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The client */

void path_of(const struct client *c, const char *bucket, const char *key, char *out, size_t cap)
{
	snprintf(out, cap, "/%s%s%s", bucket ? bucket : c->o.bucket, key ? "/" : "", key ? key : "");
}

void key_of(const struct client *c, const char *suffix, char *out, size_t cap)
{
	snprintf(out, cap, "%s-%s", c->prefix, suffix);
}

int req_rdma(struct client *c, const char *method, const char *bucket, const char *key, uint32_t rkey,
		    const void *win, uint64_t len, const char *range, struct http_resp *r)
{
	char path[512], tok[TOKEN_HEX + 1];
	struct http_req q = { .method = method, .path = path, .token = tok, .range = range,
			      .content_length = strcmp(method, "PUT") == 0 };

	path_of(c, bucket, key, path, sizeof(path));
	mint_token(&c->r, rkey, win, len, tok);
	return http_do(&c->h, &q, r);
}

int req_token(struct client *c, const char *method, const char *key, const char *token, const char *range,
	      const char *extra, struct http_resp *r)
{
	char path[512];
	struct http_req q = { .method = method, .path = path, .token = token, .range = range, .extra = extra,
			      .content_length = strcmp(method, "PUT") == 0 };

	path_of(c, NULL, key, path, sizeof(path));
	return http_do(&c->h, &q, r);
}

int req_plain(struct client *c, const char *method, const char *bucket, const char *key,
		     const char *token, const void *body, size_t body_len, struct http_resp *r)
{
	char path[512];
	struct http_req q = { .method = method, .path = path, .token = token, .body = body, .body_len = body_len,
			      .content_length = strcmp(method, "PUT") == 0 };

	path_of(c, bucket, key, path, sizeof(path));
	return http_do(&c->h, &q, r);
}

bool ok(struct client *c, const char *name)
{
	printf("ok %s\n", name);
	fflush(stdout);
	c->passed++;
	return true;
}

/* One line per failure, whatever the reason quotes (XML documents hold line breaks). */
bool fail(struct client *c, const char *name, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (char *p = why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	printf("FAIL %s: %s\n", name, why);
	fflush(stdout);
	c->failed++;
	return false;
}

/* A one-line summary of a response for failure messages. */
const char *summary(const struct http_resp *r)
{
	static char s[400];
	const char *code = r->body ? strstr(r->body, "<Code>") : NULL;
	const char *msg = r->body ? strstr(r->body, "<Message>") : NULL;

	snprintf(s, sizeof(s), "HTTP %d, reply '%s', bytes %s%" PRIu64 ", Content-Length %" PRIu64 "%s%.60s%s%.100s",
		 r->status, r->has_reply ? r->reply : "(none)", r->has_bytes ? "" : "(none) ", r->bytes, r->length,
		 code ? ", " : "", code ? code : "", msg ? ", " : "", msg ? msg : "");
	return s;
}

/*
 * The RDMA-path headers of a response: the status, x-amz-rdma-reply "<status>:<88 hex>",
 * x-amz-rdma-bytes (and -transferred, equal) at want_bytes, and for a success no body.
 * Returns NULL when all hold, else what did not.
 */
const char *rdma_headers_problem(const struct http_resp *r, int want_status, uint64_t want_bytes)
{
	static char why[512];
	char st[8];
	uint64_t v, status;
	const char *colon;

	if (r->status != want_status) {
		snprintf(why, sizeof(why), "want HTTP %d: %s", want_status, summary(r));
		return why;
	}
	if (!r->has_reply) {
		snprintf(why, sizeof(why), "no x-amz-rdma-reply header: %s", summary(r));
		return why;
	}
	colon = strchr(r->reply, ':');
	if (colon == NULL || (size_t)(colon - r->reply) >= sizeof(st) || strlen(colon + 1) != TOKEN_HEX) {
		snprintf(why, sizeof(why), "x-amz-rdma-reply '%s' is not <status>:<88 hex>", r->reply);
		return why;
	}
	memcpy(st, r->reply, (size_t)(colon - r->reply));
	st[colon - r->reply] = '\0';
	if (parse_u64_range(st, 100, 599, &status) || (int)status != r->status) {
		snprintf(why, sizeof(why), "x-amz-rdma-reply '%.8s...' does not carry the status %d", r->reply, r->status);
		return why;
	}
	for (size_t i = 0; i < TOKEN_HEX; i += 16) {
		if (parse_hex_u64_n(colon + 1 + i, TOKEN_HEX - i < 16 ? TOKEN_HEX - i : 16, &v)) {
			snprintf(why, sizeof(why), "x-amz-rdma-reply server token is not hex: '%s'", colon + 1);
			return why;
		}
	}
	if (!r->has_bytes || r->bytes != want_bytes) {
		snprintf(why, sizeof(why), "x-amz-rdma-bytes %s%" PRIu64 ", want %" PRIu64 " (%s)",
			 r->has_bytes ? "" : "missing, ", r->bytes, want_bytes, summary(r));
		return why;
	}
	if (!r->has_bytes_xfer || r->bytes_xfer != r->bytes) {
		snprintf(why, sizeof(why), "x-amz-rdma-bytes-transferred %s%" PRIu64 ", x-amz-rdma-bytes %" PRIu64,
			 r->has_bytes_xfer ? "" : "missing, ", r->bytes_xfer, r->bytes);
		return why;
	}
	if (want_status < 300 && (!r->has_length || r->length != 0)) {
		snprintf(why, sizeof(why), "Content-Length %" PRIu64 " on an RDMA-path success, want 0", r->length);
		return why;
	}
	return NULL;
}

/* An S3 XML error document with the given code. */
bool is_s3_error(const struct http_resp *r, const char *code)
{
	char tag[80];

	snprintf(tag, sizeof(tag), "<Code>%s</Code>", code);
	return r->body && strstr(r->body, "<Error>") && strstr(r->body, tag);
}

/* Prepare the GET destination: the guard over [0, n), against object `seed` read from `off`. */
void arm(struct client *c, size_t n, uint64_t seed, uint64_t off)
{
	guard_fill(c->r.hi, n, seed, off);
}

/* The endpoint answers and serves the bucket: GET / lists it. Without that nothing else can pass. */
static bool check_endpoint(struct client *c)
{
	static const char name[] = "endpoint";
	struct http_resp resp;
	char want[96];
	char path[2] = "/";
	struct http_req q = { .method = "GET", .path = path };

	if (http_do(&c->h, &q, &resp))
		return fail(c, name, "GET /: %s", c->h.err);
	snprintf(want, sizeof(want), "<Name>%s</Name>", c->o.bucket);
	if (resp.status != 200 || !resp.body || !strstr(resp.body, "<ListAllMyBucketsResult"))
		return fail(c, name, "GET /: want 200 with a ListAllMyBucketsResult, got %s", summary(&resp));
	if (!strstr(resp.body, want))
		return fail(c, name, "the endpoint does not serve bucket '%s': '%.300s'", c->o.bucket, resp.body);
	return ok(c, name);
}

/* ------------------------------------------------------------------------------------------ */
/* Benchmark */

#define SEED_BENCH 0x4b1d0100ull

static int bench(struct client *c)
{
	struct rdma *r = &c->r;
	struct http_resp resp;
	const char *why;
	char key[96];
	size_t size = (size_t)c->o.size;
	double t0, put_s, get_s;
	long bad;
	int rc = 1;

	key_of(c, "bench", key, sizeof(key));
	pat_fill(r->lo, size, SEED_BENCH, 0);
	t0 = now_s();
	for (uint64_t i = 0; i < c->o.count; i++) {
		if (req_rdma(c, "PUT", NULL, key, r->mr->rkey, r->lo, size, NULL, &resp)) {
			fprintf(stderr, "s3_rdma_client: PUT %s: %s\n", key, c->h.err);
			goto out;
		}
		if ((why = rdma_headers_problem(&resp, 200, size))) {
			fprintf(stderr, "s3_rdma_client: PUT %s: %s\n", key, why);
			goto out;
		}
	}
	put_s = now_s() - t0;
	memset(r->hi, 0, size);
	t0 = now_s();
	for (uint64_t i = 0; i < c->o.count; i++) {
		if (req_rdma(c, "GET", NULL, key, r->mr->rkey, r->hi, size, NULL, &resp)) {
			fprintf(stderr, "s3_rdma_client: GET %s: %s\n", key, c->h.err);
			goto out;
		}
		if ((why = rdma_headers_problem(&resp, 200, size))) {
			fprintf(stderr, "s3_rdma_client: GET %s: %s\n", key, why);
			goto out;
		}
	}
	get_s = now_s() - t0;
	if ((bad = scan(r->hi, 0, size, SEED_BENCH, 0, false)) >= 0) {
		fprintf(stderr, "s3_rdma_client: GET %s: byte %ld differs from what was PUT\n", key, bad);
		goto out;
	}
	printf("PUT %zu bytes x %" PRIu64 ": %.3f s, %.2f MB/s\n", size, c->o.count, put_s,
	       (double)size * (double)c->o.count / put_s / 1e6);
	printf("GET %zu bytes x %" PRIu64 ": %.3f s, %.2f MB/s\n", size, c->o.count, get_s,
	       (double)size * (double)c->o.count / get_s / 1e6);
	rc = 0;
out:
	if (req_plain(c, "DELETE", NULL, key, NULL, NULL, 0, &resp) || resp.status != 204) {
		fprintf(stderr, "s3_rdma_client: DELETE %s failed\n", key);
		rc = 1;
	}
	return rc;
}

/* The checks -m names, after the endpoint's: "all checks passed" and 0 when none failed. */
static int functional(struct client *c)
{
	bool all = strcmp(c->o.mode, "all") == 0;

	if (!check_endpoint(c)) {
		printf("%u passed, %u failed (the remaining checks need the endpoint)\n", c->passed, c->failed);
		return 1;
	}
	if (all || strcmp(c->o.mode, "hipobject") == 0)
		hipobject_checks(c);
	if (all || strcmp(c->o.mode, "cuobject") == 0)
		cuobject_checks(c);
	if (all || strcmp(c->o.mode, "rc") == 0)
		rc_checks(c);
	printf("%u passed, %u failed\n", c->passed, c->failed);
	if (c->failed == 0) {
		printf("all checks passed\n");
		return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	static struct client c; /* large (the receive buffer): not on the stack */
	char err[256];
	uint64_t v;
	size_t half;
	int opt, rc;

	c.o.ip = 0xc0a8c801; /* 192.168.200.1 */
	c.o.port = 9000;
	c.o.bucket = "ernic";
	c.o.size = 1u << 20;
	c.o.count = 16;
	c.o.mode = "hipobject";
	while ((opt = getopt(argc, argv, "Fm:a:p:b:d:s:n:h")) != -1) {
		switch (opt) {
		case 'F':
			c.o.functional = true;
			break;
		case 'm':
			if (strcmp(optarg, "hipobject") && strcmp(optarg, "cuobject") && strcmp(optarg, "rc") &&
			    strcmp(optarg, "all")) {
				fprintf(stderr, "s3_rdma_client: -m wants hipobject, cuobject, rc or all, not '%s'\n", optarg);
				return 2;
			}
			c.o.mode = optarg;
			break;
		case 'a':
			if (parse_ipv4(optarg, &c.o.ip)) {
				fprintf(stderr, "s3_rdma_client: -a wants an IPv4 address, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (parse_u64_range(optarg, 1, 65535, &v)) {
				fprintf(stderr, "s3_rdma_client: -p wants a port 1..65535, not '%s'\n", optarg);
				return 2;
			}
			c.o.port = (uint16_t)v;
			break;
		case 'b':
			if (optarg[0] == '\0' || strlen(optarg) > 63 || strpbrk(optarg, "/?# \t\r\n%")) {
				fprintf(stderr, "s3_rdma_client: -b wants a bucket name, not '%s'\n", optarg);
				return 2;
			}
			c.o.bucket = optarg;
			break;
		case 'd':
			c.o.device = optarg;
			break;
		case 's':
			if (parse_size(optarg, &v) || v == 0 || v > (1ull << 30)) {
				fprintf(stderr, "s3_rdma_client: -s wants a size of 1 byte to 1G, not '%s'\n", optarg);
				return 2;
			}
			c.o.size = v;
			break;
		case 'n':
			if (parse_u64_range(optarg, 1, 1000000, &v)) {
				fprintf(stderr, "s3_rdma_client: -n wants a count 1..1000000, not '%s'\n", optarg);
				return 2;
			}
			c.o.count = v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "s3_rdma_client: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	half = c.o.functional ? FUNC_HALF : (size_t)((c.o.size + 4095) & ~(uint64_t)4095);
	if (rdma_open(&c.r, c.o.device, half, err, sizeof(err))) {
		printf("FAIL setup: %s\n", err);
		rdma_close(&c.r);
		return 1;
	}
	snprintf(c.prefix, sizeof(c.prefix), "s3-rdma-client-%ld", (long)getpid());
	c.h.ip = c.o.ip;
	c.h.port = c.o.port;
	c.h.fd = -1;
	{
		char ip[16];
		char gid[INET6_ADDRSTRLEN];

		format_ipv4(c.o.ip, ip);
		inet_ntop(AF_INET6, c.r.gid.raw, gid, sizeof(gid));
		printf("# %s port %u, RoCE v2 GID %d (%s), RC QPN %u, MR rkey 0x%x, %zu + %zu bytes at %p; "
		       "endpoint http://%s:%u/%s\n",
		       c.r.name, c.r.port, c.r.gid_index, gid, c.r.qp->qp_num, c.r.mr->rkey, c.r.half, c.r.half,
		       (void *)c.r.buf, ip, c.o.port, c.o.bucket);
		fflush(stdout);
	}
	rc = c.o.functional ? functional(&c) : bench(&c);
	http_disconnect(&c.h);
	free(c.h.body);
	rdma_close(&c.r);
	return rc;
}
