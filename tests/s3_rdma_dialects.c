/*
 * s3_rdma_client's checks of the cuObject dialect (-m cuobject) and of the RC handshake
 * (-m rc), docs/s3.md "Dialects".
 *
 * cuObject: the token is the text descriptor; a success answers the bare status in
 * x-amz-rdma-reply with x-amz-rdma-bytes-transferred and no body; an error has no reply
 * header; what RDMA cannot serve whole (a window too short, a key the server cannot use) is
 * declined with 501, a GET then carrying its payload in the body and a PUT answered 200 with
 * RDMANotSupported (the client would send it again with the data). A HEAD moves nothing in
 * either dialect, and checksums and conditions hold on the RDMA path.
 *
 * RC: what hipObject's library does after an RDMA operation, moving an RC QP to RTR and RTS
 * toward the server token of the reply, from the GID it put in its own token. The guest
 * kernel refuses an IPv6 source toward an IPv4-mapped destination, so the reply must name a
 * GID of the client's kind, and the segment must resolve it (ARP for the IPv4-mapped one,
 * neighbour discovery for the link-local one).
 */
#include "s3_rdma_client.h"

#define SEED_CU  0x4b1d0c00ull
#define SEED_RC  0x4b1d0d00ull
#define CU_SIZE  4096u
#define UNKNOWN_RKEY 0xfffffe7fu /* no registration has it: the device's key table is far smaller */

/* ---- cuObject ---------------------------------------------------------------------------- */

/* A cuObject success: status and bare reply, the byte count, Content-Length 0. NULL when it holds. */
static const char *cu_problem(const struct http_resp *r, int status, uint64_t bytes)
{
	static char why[512];
	char want[8];

	snprintf(want, sizeof(want), "%d", status);
	if (r->status != status || !r->has_reply || strcmp(r->reply, want) != 0)
		snprintf(why, sizeof(why), "want HTTP %d with reply '%s': %s", status, want, summary(r));
	else if (!r->has_bytes_xfer || r->bytes_xfer != bytes)
		snprintf(why, sizeof(why), "x-amz-rdma-bytes-transferred %s%" PRIu64 ", want %" PRIu64,
			 r->has_bytes_xfer ? "" : "missing, ", r->bytes_xfer, bytes);
	else if (!r->has_length || r->length != 0 || r->body_len != 0)
		snprintf(why, sizeof(why), "Content-Length %" PRIu64 " on an RDMA success, want 0", r->length);
	else
		return NULL;
	return why;
}

/* A declined GET: reply 501, the status of a plain GET, exactly len bytes of object seed from off in the body. */
static const char *declined_problem(const struct http_resp *r, int status, uint64_t seed, uint64_t off, size_t len)
{
	static char why[512];

	if (r->status != status || !r->has_reply || strcmp(r->reply, "501") != 0) {
		snprintf(why, sizeof(why), "want HTTP %d with reply '501': %s", status, summary(r));
		return why;
	}
	if (r->body_len != len) {
		snprintf(why, sizeof(why), "a body of %zu bytes, want %zu", r->body_len, len);
		return why;
	}
	for (size_t i = 0; i < len; i++) {
		if ((uint8_t)r->body[i] != pat(seed, off + i)) {
			snprintf(why, sizeof(why), "body byte %zu differs", i);
			return why;
		}
	}
	return NULL;
}

static bool no_reply(const struct http_resp *r)
{
	return !r->has_reply && !r->has_bytes && !r->has_bytes_xfer;
}

/* CRC-32 (ISO-HDLC, the one x-amz-checksum-crc32 names) and its base64, for the checksum checks. */
static void crc32_b64(const uint8_t *p, size_t n, char out[9])
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t c = 0xffffffffu;
	uint8_t be[4];

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ 0xedb88320u : c >> 1;
	}
	c ^= 0xffffffffu;
	be[0] = (uint8_t)(c >> 24);
	be[1] = (uint8_t)(c >> 16);
	be[2] = (uint8_t)(c >> 8);
	be[3] = (uint8_t)c;
	out[0] = b64[be[0] >> 2];
	out[1] = b64[(be[0] & 3) << 4 | be[1] >> 4];
	out[2] = b64[(be[1] & 15) << 2 | be[2] >> 6];
	out[3] = b64[be[2] & 63];
	out[4] = b64[be[3] >> 2];
	out[5] = b64[(be[3] & 3) << 4];
	out[6] = out[7] = '=';
	out[8] = '\0';
}

struct cu_keys {
	char obj[96], big[96], declined[96], bad[96], crc[96];
};

/* PUT size bytes by cuObject RDMA, GET them into the whole high half (the object's size caps it). */
static bool cu_round_trip(struct client *c, const char *name, const char *key, uint64_t seed, size_t size)
{
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[CU_TOKEN_MAX];
	const char *why;
	size_t guard = size + 4096 <= r->half ? size + 4096 : r->half;
	long bad;

	pat_fill(r->lo, size, seed, 0);
	mint_cu_token(r, r->mr->rkey, r->lo, size, tok);
	if (req_token(c, "PUT", key, tok, NULL, NULL, &resp))
		return fail(c, name, "PUT %s: %s", key, c->h.err);
	if ((why = cu_problem(&resp, 200, size)))
		return fail(c, name, "PUT %s: %s", key, why);
	if (resp.etag[0] == '\0')
		return fail(c, name, "PUT %s: no ETag", key);
	arm(c, guard, seed, 0);
	mint_cu_token(r, r->mr->rkey, r->hi, r->half, tok);
	if (req_token(c, "GET", key, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", key, c->h.err);
	if ((why = cu_problem(&resp, 200, size)))
		return fail(c, name, "GET %s: %s", key, why);
	if ((bad = scan(r->hi, 0, size, seed, 0, false)) >= 0)
		return fail(c, name, "GET %s: byte %ld of %zu differs", key, bad, size);
	if ((bad = scan(r->hi, size, guard, seed, 0, true)) >= 0)
		return fail(c, name, "GET %s: byte %ld past the object was written", key, bad);
	return ok(c, name);
}

/* A range and ?partNumber=1 move exactly their bytes to the window's start, as 206s. */
static bool cu_range_part(struct client *c, const struct cu_keys *k)
{
	static const char name[] = "cu-range-part";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[CU_TOKEN_MAX], path[160];
	const char *why;
	long bad;

	arm(c, CU_SIZE, SEED_CU, 1024);
	mint_cu_token(r, r->mr->rkey, r->hi, 512, tok); /* exactly the range's size */
	if (req_token(c, "GET", k->obj, tok, "bytes=1024-1535", NULL, &resp))
		return fail(c, name, "GET %s: %s", k->obj, c->h.err);
	if ((why = cu_problem(&resp, 206, 512)))
		return fail(c, name, "range: %s", why);
	if (strcmp(resp.content_range, "bytes 1024-1535/4096") != 0)
		return fail(c, name, "range: Content-Range '%s'", resp.content_range);
	if ((bad = scan(r->hi, 0, 512, SEED_CU, 1024, false)) >= 0 ||
	    (bad = scan(r->hi, 512, CU_SIZE, SEED_CU, 1024, true)) >= 0)
		return fail(c, name, "range: byte %ld of the window is wrong", bad);

	arm(c, CU_SIZE + 4096, SEED_CU, 0);
	snprintf(path, sizeof(path), "%s?partNumber=1", k->obj);
	mint_cu_token(r, r->mr->rkey, r->hi, r->half, tok);
	if (req_token(c, "GET", path, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", path, c->h.err);
	if ((why = cu_problem(&resp, 206, CU_SIZE)))
		return fail(c, name, "partNumber: %s", why);
	if (strcmp(resp.content_range, "bytes 0-4095/4096") != 0)
		return fail(c, name, "partNumber: Content-Range '%s'", resp.content_range);
	if ((bad = scan(r->hi, 0, CU_SIZE, SEED_CU, 0, false)) >= 0 ||
	    (bad = scan(r->hi, CU_SIZE, CU_SIZE + 4096, SEED_CU, 0, true)) >= 0)
		return fail(c, name, "partNumber: byte %ld of the window is wrong", bad);
	return ok(c, name);
}

/* Declines: a window too short, a key the server cannot use (GET: the body instead; PUT: RDMANotSupported). */
static bool cu_declines(struct client *c, const struct cu_keys *k)
{
	static const char name[] = "cu-declines";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[CU_TOKEN_MAX];
	const char *why;
	long bad;

	arm(c, CU_SIZE, SEED_CU, 0);
	mint_cu_token(r, r->mr->rkey, r->hi, CU_SIZE - 1, tok);
	if (req_token(c, "GET", k->obj, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", k->obj, c->h.err);
	if ((why = declined_problem(&resp, 200, SEED_CU, 0, CU_SIZE)))
		return fail(c, name, "a window one byte short: %s", why);
	mint_cu_token(r, UNKNOWN_RKEY, r->hi, CU_SIZE, tok);
	if (req_token(c, "GET", k->obj, tok, "bytes=100-199", NULL, &resp))
		return fail(c, name, "GET %s: %s", k->obj, c->h.err);
	if ((why = declined_problem(&resp, 206, SEED_CU, 100, 100)))
		return fail(c, name, "an unknown key, ranged: %s", why);
	/* rkey 0 (the driver's reserved key), and a window running past the registration's end */
	mint_cu_token(r, 0, r->hi, CU_SIZE, tok);
	if (req_token(c, "GET", k->obj, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", k->obj, c->h.err);
	if ((why = declined_problem(&resp, 200, SEED_CU, 0, CU_SIZE)))
		return fail(c, name, "rkey 0: %s", why);
	mint_cu_token(r, r->mr->rkey, r->hi + r->half - CU_SIZE / 2, CU_SIZE, tok);
	if (req_token(c, "GET", k->obj, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", k->obj, c->h.err);
	if ((why = declined_problem(&resp, 200, SEED_CU, 0, CU_SIZE)))
		return fail(c, name, "a window past the registration: %s", why);
	if ((bad = scan(r->hi, 0, CU_SIZE, SEED_CU, 0, true)) >= 0)
		return fail(c, name, "a declined GET wrote byte %ld of the window", bad);
	/* a registration the server may not write (local access only): declined, the buffer untouched */
	{
		uint8_t *ro = aligned_alloc(4096, CU_SIZE);
		struct ibv_mr *mr = ro ? ibv_reg_mr(r->pd, ro, CU_SIZE, IBV_ACCESS_LOCAL_WRITE) : NULL;
		bool good;

		if (mr == NULL) {
			free(ro);
			return fail(c, name, "cannot register a local-only buffer: %s", strerror(errno));
		}
		guard_fill(ro, CU_SIZE, SEED_CU, 0);
		mint_cu_token(r, mr->rkey, ro, CU_SIZE, tok);
		good = req_token(c, "GET", k->obj, tok, NULL, NULL, &resp) == 0 &&
		       declined_problem(&resp, 200, SEED_CU, 0, CU_SIZE) == NULL && scan(ro, 0, CU_SIZE, SEED_CU, 0, true) < 0;
		ibv_dereg_mr(mr);
		free(ro);
		if (!good)
			return fail(c, name, "a key without remote write: %s", summary(&resp));
	}

	pat_fill(r->lo, CU_SIZE, SEED_CU, 0);
	mint_cu_token(r, UNKNOWN_RKEY, r->lo, CU_SIZE, tok);
	if (req_token(c, "PUT", k->declined, tok, NULL, NULL, &resp))
		return fail(c, name, "PUT %s: %s", k->declined, c->h.err);
	if (resp.status != 200 || !resp.has_reply || strcmp(resp.reply, "501") != 0 ||
	    !is_s3_error(&resp, "RDMANotSupported") || resp.etag[0])
		return fail(c, name, "a PUT naming an unknown key: want 200, reply 501, RDMANotSupported and no ETag: %s",
			    summary(&resp));
	if (req_plain(c, "GET", NULL, k->declined, NULL, NULL, 0, &resp))
		return fail(c, name, "GET %s: %s", k->declined, c->h.err);
	if (resp.status != 404)
		return fail(c, name, "the declined PUT stored an object: %s", summary(&resp));
	return ok(c, name);
}

/* Errors carry no reply header: a missing key, a descriptor that does not parse (InvalidRDMAToken). */
static bool cu_errors(struct client *c, const struct cu_keys *k)
{
	static const char name[] = "cu-errors";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[CU_TOKEN_MAX], *colon;

	mint_cu_token(r, r->mr->rkey, r->hi, CU_SIZE, tok);
	if (req_token(c, "GET", k->bad, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", k->bad, c->h.err);
	if (resp.status != 404 || !is_s3_error(&resp, "NoSuchKey") || !no_reply(&resp))
		return fail(c, name, "a missing key: want 404 NoSuchKey without RDMA headers: %s", summary(&resp));
	colon = strrchr(tok, ':');
	*colon = '\0'; /* six fields */
	if (req_token(c, "GET", k->obj, tok, NULL, NULL, &resp))
		return fail(c, name, "GET %s: %s", k->obj, c->h.err);
	if (resp.status != 400 || !is_s3_error(&resp, "InvalidRDMAToken") || !no_reply(&resp))
		return fail(c, name, "a six-field descriptor: want 400 InvalidRDMAToken without RDMA headers: %s",
			    summary(&resp));
	return ok(c, name);
}

/* A HEAD with a token of either dialect: the plain HEAD's answer, nothing moved. */
static bool head_moves_nothing(struct client *c, const struct cu_keys *k)
{
	static const char name[] = "head-moves-nothing";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[CU_TOKEN_MAX];
	long bad;

	for (int dialect = 0; dialect < 2; dialect++) {
		arm(c, CU_SIZE, SEED_CU, 0);
		if (dialect)
			mint_cu_token(r, r->mr->rkey, r->hi, CU_SIZE, tok);
		else
			mint_token(r, r->mr->rkey, r->hi, CU_SIZE, tok);
		if (req_token(c, "HEAD", k->obj, tok, NULL, NULL, &resp))
			return fail(c, name, "HEAD %s: %s", k->obj, c->h.err);
		if (resp.status != 200 || resp.length != CU_SIZE || !no_reply(&resp))
			return fail(c, name, "HEAD with a %s token: want 200, Content-Length 4096, no RDMA headers: %s",
				    dialect ? "cuObject" : "hipObject", summary(&resp));
		if ((bad = scan(r->hi, 0, CU_SIZE, SEED_CU, 0, true)) >= 0)
			return fail(c, name, "HEAD with a %s token wrote byte %ld of the window",
				    dialect ? "cuObject" : "hipObject", bad);
	}
	return ok(c, name);
}

/* x-amz-checksum-crc32 on an RDMA PUT is checked and kept, a wrong one stores nothing; a condition moves nothing. */
static bool cu_checksum_condition(struct client *c, const struct cu_keys *k)
{
	static const char name[] = "cu-checksum-condition";
	struct rdma *r = &c->r;
	struct http_resp resp;
	char tok[CU_TOKEN_MAX], crc[9], extra[128], etag[96];
	long bad;

	pat_fill(r->lo, CU_SIZE, SEED_CU, 0);
	crc32_b64(r->lo, CU_SIZE, crc);
	mint_cu_token(r, r->mr->rkey, r->lo, CU_SIZE, tok);
	snprintf(extra, sizeof(extra), "x-amz-checksum-crc32: %s\r\n", crc);
	if (req_token(c, "PUT", k->crc, tok, NULL, extra, &resp))
		return fail(c, name, "PUT %s: %s", k->crc, c->h.err);
	if (cu_problem(&resp, 200, CU_SIZE) || strcmp(resp.crc32, crc) != 0)
		return fail(c, name, "PUT with the right CRC32 %s: %s (checksum '%s')", crc, summary(&resp), resp.crc32);
	snprintf(etag, sizeof(etag), "%s", resp.etag);
	if (req_token(c, "PUT", k->bad, tok, NULL, "x-amz-checksum-crc32: AAAAAA==\r\n", &resp))
		return fail(c, name, "PUT %s: %s", k->bad, c->h.err);
	if (resp.status != 400 || !is_s3_error(&resp, "BadDigest") || !no_reply(&resp))
		return fail(c, name, "PUT with a wrong CRC32: want 400 BadDigest without RDMA headers: %s", summary(&resp));
	if (req_plain(c, "GET", NULL, k->bad, NULL, NULL, 0, &resp) || resp.status != 404)
		return fail(c, name, "the PUT with a wrong checksum stored an object");

	arm(c, CU_SIZE, SEED_CU, 0);
	mint_cu_token(r, r->mr->rkey, r->hi, CU_SIZE, tok);
	if (req_token(c, "GET", k->crc, tok, NULL, "x-amz-checksum-mode: ENABLED\r\n", &resp))
		return fail(c, name, "GET %s: %s", k->crc, c->h.err);
	if (cu_problem(&resp, 200, CU_SIZE) || strcmp(resp.crc32, crc) != 0)
		return fail(c, name, "GET with x-amz-checksum-mode: %s (checksum '%s', want %s)", summary(&resp),
			    resp.crc32, crc);
	arm(c, CU_SIZE, SEED_CU, 0);
	snprintf(extra, sizeof(extra), "If-None-Match: %s\r\n", etag);
	if (req_token(c, "GET", k->crc, tok, NULL, extra, &resp))
		return fail(c, name, "GET %s: %s", k->crc, c->h.err);
	if (resp.status != 304 || !no_reply(&resp))
		return fail(c, name, "GET If-None-Match its ETag: want 304 without RDMA headers: %s", summary(&resp));
	if ((bad = scan(r->hi, 0, CU_SIZE, SEED_CU, 0, true)) >= 0)
		return fail(c, name, "the 304 wrote byte %ld of the window", bad);
	return ok(c, name);
}

unsigned cuobject_checks(struct client *c)
{
	unsigned failed = c->failed;
	struct cu_keys k;
	struct http_resp resp;
	const char *all[] = { k.obj, k.big, k.declined, k.bad, k.crc };

	key_of(c, "cu", k.obj, sizeof(k.obj));
	key_of(c, "cu-1m", k.big, sizeof(k.big));
	key_of(c, "cu-declined", k.declined, sizeof(k.declined));
	key_of(c, "cu-missing", k.bad, sizeof(k.bad));
	key_of(c, "cu-crc", k.crc, sizeof(k.crc));
	if (cu_round_trip(c, "cu-round-trip-4k", k.obj, SEED_CU, CU_SIZE)) {
		cu_range_part(c, &k);
		cu_declines(c, &k);
		cu_errors(c, &k);
		head_moves_nothing(c, &k);
	}
	cu_round_trip(c, "cu-round-trip-1m", k.big, SEED_CU + 1, 1u << 20);
	cu_checksum_condition(c, &k);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (req_plain(c, "DELETE", NULL, all[i], NULL, NULL, 0, &resp) || resp.status != 204)
			fprintf(stderr, "s3_rdma_client: cleanup: DELETE %s failed\n", all[i]);
	return c->failed - failed;
}

/* ---- the RC handshake -------------------------------------------------------------------- */

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* The server token of a "<status>:<88 hex>" reply: its QPN and GID. */
static bool server_token(const char *reply, uint32_t *qpn, union ibv_gid *gid)
{
	const char *hex = strchr(reply, ':');
	uint8_t raw[TOKEN_BYTES];

	if (hex == NULL || strlen(++hex) != TOKEN_HEX)
		return false;
	for (int i = 0; i < TOKEN_BYTES; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		raw[i] = (uint8_t)(hi << 4 | lo);
	}
	*qpn = (uint32_t)raw[1] | (uint32_t)raw[2] << 8 | (uint32_t)raw[3] << 16 | (uint32_t)raw[4] << 24;
	memcpy(gid->raw, raw + 5, 16);
	return true;
}

static bool gid_link_local(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/*
 * From the GID at gid_index: a fresh RC QP in the token, an RDMA PUT, then the QP to RTR and
 * RTS toward the reply's server token (as hipObject's library does), then the object read back.
 */
static bool rc_handshake(struct client *c, const char *name, int gid_index, const union ibv_gid *gid,
			 const char *key)
{
	struct rdma *r = &c->r;
	struct http_resp resp;
	struct ibv_qp_init_attr qia = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a, qa;
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp;
	char tok[TOKEN_HEX + 1], sgid[INET6_ADDRSTRLEN];
	union ibv_gid peer;
	uint32_t peer_qpn;
	const char *why;
	bool good = false;
	long bad;

	if (gid_index < 0)
		return fail(c, name, "the port has no RoCE v2 GID of this kind");
	qp = ibv_create_qp(r->pd, &qia);
	if (qp == NULL)
		return fail(c, name, "ibv_create_qp: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = r->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fail(c, name, "INIT: %s", strerror(errno));
		goto out;
	}
	pat_fill(r->lo, CU_SIZE, SEED_RC, 0);
	mint_token_for(r, qp->qp_num, gid, r->mr->rkey, r->lo, CU_SIZE, tok);
	if (req_token(c, "PUT", key, tok, NULL, NULL, &resp)) {
		fail(c, name, "PUT %s: %s", key, c->h.err);
		goto out;
	}
	if ((why = rdma_headers_problem(&resp, 200, CU_SIZE))) {
		fail(c, name, "PUT %s: %s", key, why);
		goto out;
	}
	if (!server_token(resp.reply, &peer_qpn, &peer)) {
		fail(c, name, "no server token in the reply '%s'", resp.reply);
		goto out;
	}
	inet_ntop(AF_INET6, peer.raw, sgid, sizeof(sgid));
	if (gid_link_local(&peer) != gid_link_local(gid) || gid_is_ipv4_mapped(&peer) != gid_is_ipv4_mapped(gid)) {
		fail(c, name, "the reply names GID %s, not of the kind of the token's", sgid);
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = r->port;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		fail(c, name, "RTR toward QPN 0x%x at %s from GID %d: %s", peer_qpn, sgid, gid_index, strerror(errno));
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC)) {
		fail(c, name, "RTS: %s", strerror(errno));
		goto out;
	}
	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi) || qa.qp_state != IBV_QPS_RTS) {
		fail(c, name, "the QP is not in RTS after the handshake");
		goto out;
	}
	/* The object the handshake was about, read back by the same QP's token. */
	arm(c, CU_SIZE, SEED_RC, 0);
	mint_token_for(r, qp->qp_num, gid, r->mr->rkey, r->hi, CU_SIZE, tok);
	if (req_token(c, "GET", key, tok, NULL, NULL, &resp)) {
		fail(c, name, "GET %s: %s", key, c->h.err);
		goto out;
	}
	if ((why = rdma_headers_problem(&resp, 200, CU_SIZE))) {
		fail(c, name, "GET %s: %s", key, why);
		goto out;
	}
	if ((bad = scan(r->hi, 0, CU_SIZE, SEED_RC, 0, false)) >= 0) {
		fail(c, name, "GET %s: byte %ld differs", key, bad);
		goto out;
	}
	printf("# %s: QPN %u from GID %d to server QPN 0x%x at %s: RTS\n", name, qp->qp_num, gid_index, peer_qpn, sgid);
	good = ok(c, name);
out:
	ibv_destroy_qp(qp);
	if (req_plain(c, "DELETE", NULL, key, NULL, NULL, 0, &resp) || resp.status != 204)
		fprintf(stderr, "s3_rdma_client: cleanup: DELETE %s failed\n", key);
	return good;
}

unsigned rc_checks(struct client *c)
{
	unsigned failed = c->failed;
	char key[96];

	key_of(c, "rc-ll", key, sizeof(key));
	rc_handshake(c, "rc-handshake-link-local", c->r.ll_index, &c->r.ll_gid, key);
	key_of(c, "rc-v4", key, sizeof(key));
	rc_handshake(c, "rc-handshake-ipv4", c->r.gid_index, &c->r.gid, key);
	return c->failed - failed;
}
