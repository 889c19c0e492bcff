/*
 * The S3-over-RDMA token (x-amz-rdma-token) and reply (x-amz-rdma-reply)
 * wire formats. Two dialects share the header names (docs/s3.md, "Dialects"):
 *
 *  - hipObject v1 (AMD's RC clients): a 44-byte binary record as 88 hex
 *    characters, below; the reply may carry the server's own token.
 *  - cuObject (NVIDIA's cuObject descriptor, used by the aws-c-s3 RDMA fork,
 *    NooBaa, nixl and MinIO's SDKs): colon-separated hex fields,
 *    "raddr:rsize:rkey:lid:qpn:has_gid:gid" (NooBaa prints them 16, 8, 8, 4,
 *    6, 1 and 32 digits wide; we take 1 up to that many, the GID exactly 32
 *    when has_gid is 1), optionally followed by ":<addr>:<size>" (AIStor's and
 *    nixl's window inside the registration: a 0 means "no override"). Its
 *    replies are bare decimals and no error carries one.
 *
 * hipObject's token: 44 bytes, little-endian, sent as 88 hexadecimal characters (we emit
 * lowercase, accept either case):
 *
 *   offset size field
 *        0    1 transport: 0x00 Dynamic Connection, 0x01 Reliable Connection
 *        1    4 queue-pair number
 *        5   16 GID
 *       21    4 rkey of the client's registered buffer
 *       25    8 remote address of that buffer
 *       33    8 length of the window the server may touch
 *       41    1 port number
 *       42    2 LID
 *
 * Header value: either the 88 hex characters alone, or hipObject's three-field
 * form "<88 hex>:<addr>:<len>" (addr and len in hex, 1..16 digits, hipObject
 * sends 16), where the trailing pair overrides the token's address and length
 * and a 0 in either means "no override".
 *
 * Reply value: "ok" / "err" (legacy cuObject), a bare decimal HTTP status
 * ("200"), or "<status>:<88 hex server token>". This server sends the last.
 *
 * Every parser accepts its input whole or rejects it (-EINVAL), never half.
 */
#ifndef ERNIC_S3_S3_TOKEN_H
#define ERNIC_S3_S3_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

#define S3_TOKEN_BYTES 44
#define S3_TOKEN_HEX   88

#define S3_TRANSPORT_DC 0x00
#define S3_TRANSPORT_RC 0x01

#pragma pack(push, 1)
struct s3_token_wire {
	uint8_t transport;
	le32 qpn;
	uint8_t gid[16];
	le32 rkey;
	le64 addr;
	le64 len;
	uint8_t port;
	le16 lid;
};
#pragma pack(pop)
_Static_assert(sizeof(struct s3_token_wire) == S3_TOKEN_BYTES, "token size");
_Static_assert(offsetof(struct s3_token_wire, qpn) == 1, "qpn");
_Static_assert(offsetof(struct s3_token_wire, gid) == 5, "gid");
_Static_assert(offsetof(struct s3_token_wire, rkey) == 21, "rkey");
_Static_assert(offsetof(struct s3_token_wire, addr) == 25, "addr");
_Static_assert(offsetof(struct s3_token_wire, len) == 33, "len");
_Static_assert(offsetof(struct s3_token_wire, port) == 41, "port");
_Static_assert(offsetof(struct s3_token_wire, lid) == 42, "lid");

/* The token in host form. */
struct s3_token {
	uint8_t transport;
	uint32_t qpn;
	uint8_t gid[16];
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
	uint8_t port;
	uint16_t lid;
};

/* The 44-byte image to and from host form. */
void s3_token_decode(const uint8_t raw[S3_TOKEN_BYTES], struct s3_token *out);
void s3_token_encode(const struct s3_token *t, uint8_t raw[S3_TOKEN_BYTES]);

/* Exactly 88 hex characters (len must be 88); 0 or -EINVAL. */
int s3_token_from_hex(const char *hex, size_t len, struct s3_token *out);
/* 88 lowercase hex characters and a NUL. */
void s3_token_to_hex(const struct s3_token *t, char out[S3_TOKEN_HEX + 1]);

enum s3_dialect {
	S3_DIALECT_HIPOBJ,  /* the 88-hex record, bare or with ":<addr>:<len>" */
	S3_DIALECT_CUOBJ,   /* cuObject's text descriptor */
};

/*
 * An x-amz-rdma-token header value (NUL-terminated; leading and trailing
 * spaces and tabs are ignored) in either dialect, the overrides already
 * applied to out->addr / out->len, and the dialect it was in (dialect may be
 * NULL). A cuObject descriptor fills rkey, addr, len, qpn, lid and gid (all
 * zero without one) and says transport DC, port 1. 0 or -EINVAL; the
 * dialect is set either way (a value with colons whose first field is not
 * 88 characters is a cuObject descriptor, anything else a hipObject token).
 */
int s3_token_parse_header(const char *value, struct s3_token *out, enum s3_dialect *dialect);

/* fe80::/10: a link-local GID (the kind a client registered from decides the kind of GID our reply names). */
bool s3_gid_link_local(const uint8_t gid[16]);

enum s3_reply_kind {
	S3_REPLY_TAG,          /* "ok" or "err" */
	S3_REPLY_STATUS,       /* "200" */
	S3_REPLY_STATUS_TOKEN, /* "200:<88 hex>" */
};

struct s3_reply {
	enum s3_reply_kind kind;
	bool ok;               /* "ok", or a status of 200, 204 or 206 */
	int status;            /* 0 for the tag form */
	struct s3_token token; /* S3_REPLY_STATUS_TOKEN only */
};

/* An x-amz-rdma-reply value, any of the three forms; status 100..599. 0 or -EINVAL. */
int s3_reply_parse(const char *value, struct s3_reply *out);

/*
 * Format "<status>:<88 hex>" (or the bare status when token is NULL) into out.
 * Returns the length written (without the NUL), -ENOSPC when cap cannot hold
 * it and its NUL (out then holds "" if cap > 0), or -EINVAL for a status
 * outside 100..599, which s3_reply_parse() would refuse.
 */
int s3_reply_format(int status, const struct s3_token *token, char *out, size_t cap);

#endif
