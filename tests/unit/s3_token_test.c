/* s3-token-unit: the x-amz-rdma-token and x-amz-rdma-reply wire formats of s3/s3_token.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xorshift.h"
#include "s3/s3_token.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The reference token, written out by hand: transport RC, qpn 0x00c0ffee,
 * gid 00..0f, rkey 0x12345678, addr 0x00007f0011223344, len 0x100000,
 * port 1, lid 0xbeef, every multi-byte field little-endian.
 */
#define REF_HEX                              \
	"01"                                 \
	"eeffc000"                           \
	"000102030405060708090a0b0c0d0e0f"   \
	"78563412"                           \
	"44332211007f0000"                   \
	"0000100000000000"                   \
	"01"                                 \
	"efbe"
#define REF_HEX_UPPER                        \
	"01"                                 \
	"EEFFC000"                           \
	"000102030405060708090A0B0C0D0E0F"   \
	"78563412"                           \
	"44332211007F0000"                   \
	"0000100000000000"                   \
	"01"                                 \
	"EFBE"

#define REF_ADDR 0x00007f0011223344ull
#define REF_LEN  0x100000ull

_Static_assert(sizeof(REF_HEX) - 1 == S3_TOKEN_HEX, "reference hex length");
_Static_assert(sizeof(REF_HEX_UPPER) - 1 == S3_TOKEN_HEX, "reference hex length");

static void ref_image(uint8_t raw[S3_TOKEN_BYTES])
{
	memset(raw, 0xcc, S3_TOKEN_BYTES); /* every byte below must be written */
	raw[0] = 0x01;                     /* transport */
	raw[1] = 0xee;                     /* qpn 0x00c0ffee */
	raw[2] = 0xff;
	raw[3] = 0xc0;
	raw[4] = 0x00;
	for (int i = 0; i < 16; i++)       /* gid */
		raw[5 + i] = (uint8_t)i;
	raw[21] = 0x78;                    /* rkey 0x12345678 */
	raw[22] = 0x56;
	raw[23] = 0x34;
	raw[24] = 0x12;
	raw[25] = 0x44;                    /* addr 0x00007f0011223344 */
	raw[26] = 0x33;
	raw[27] = 0x22;
	raw[28] = 0x11;
	raw[29] = 0x00;
	raw[30] = 0x7f;
	raw[31] = 0x00;
	raw[32] = 0x00;
	raw[33] = 0x00;                    /* len 0x100000 */
	raw[34] = 0x00;
	raw[35] = 0x10;
	raw[36] = 0x00;
	raw[37] = 0x00;
	raw[38] = 0x00;
	raw[39] = 0x00;
	raw[40] = 0x00;
	raw[41] = 0x01;                    /* port */
	raw[42] = 0xef;                    /* lid 0xbeef */
	raw[43] = 0xbe;
}

static struct s3_token ref_token(void)
{
	struct s3_token t;

	memset(&t, 0, sizeof(t));
	t.transport = S3_TRANSPORT_RC;
	t.qpn = 0x00c0ffee;
	for (int i = 0; i < 16; i++)
		t.gid[i] = (uint8_t)i;
	t.rkey = 0x12345678;
	t.addr = REF_ADDR;
	t.len = REF_LEN;
	t.port = 1;
	t.lid = 0xbeef;
	return t;
}

static void assert_ref_fields(const struct s3_token *t, uint64_t addr, uint64_t len)
{
	assert_int_equal(t->transport, 0x01);
	assert_int_equal(t->qpn, 0x00c0ffee);
	for (int i = 0; i < 16; i++)
		assert_int_equal(t->gid[i], i);
	assert_int_equal(t->rkey, 0x12345678);
	assert_true(t->addr == addr);
	assert_true(t->len == len);
	assert_int_equal(t->port, 1);
	assert_int_equal(t->lid, 0xbeef);
}

/* Field-by-field comparison (struct s3_token may have padding). */
static void assert_token_equal(const struct s3_token *a, const struct s3_token *b)
{
	assert_int_equal(a->transport, b->transport);
	assert_int_equal(a->qpn, b->qpn);
	assert_memory_equal(a->gid, b->gid, sizeof(a->gid));
	assert_int_equal(a->rkey, b->rkey);
	assert_true(a->addr == b->addr);
	assert_true(a->len == b->len);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->lid, b->lid);
}

static void poison(void *p, size_t n)
{
	memset(p, 0xa5, n);
}

static void assert_poisoned(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(b[i], 0xa5);
}

/* A NUL-terminated copy in a heap block of exactly that size, so ASan sees any over-read. */
static char *exact_dup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	assert_non_null(p);
	memcpy(p, s, n);
	return p;
}

/* ---- layout ---------------------------------------------------------------------------------- */

static void test_decode_reference_image(void **state)
{
	uint8_t raw[S3_TOKEN_BYTES];
	struct s3_token t;

	(void)state;
	ref_image(raw);
	poison(&t, sizeof(t));
	s3_token_decode(raw, &t);
	assert_ref_fields(&t, REF_ADDR, REF_LEN);
}

static void test_encode_reference_image(void **state)
{
	uint8_t want[S3_TOKEN_BYTES], got[S3_TOKEN_BYTES];
	struct s3_token t = ref_token();
	char hex[S3_TOKEN_HEX + 1];

	(void)state;
	ref_image(want);
	memset(got, 0x5a, sizeof(got));
	s3_token_encode(&t, got);
	assert_memory_equal(got, want, S3_TOKEN_BYTES);

	memset(hex, 'X', sizeof(hex));
	s3_token_to_hex(&t, hex);
	assert_int_equal(hex[S3_TOKEN_HEX], '\0');
	assert_string_equal(hex,
		"01eeffc000000102030405060708090a0b0c0d0e0f7856341244332211007f0000000010000000000001efbe");
	assert_string_equal(hex, REF_HEX);
}

static void test_wire_struct_matches_reference(void **state)
{
	uint8_t raw[S3_TOKEN_BYTES];
	struct s3_token_wire w;

	(void)state;
	ref_image(raw);
	memcpy(&w, raw, sizeof(w));
	assert_int_equal(w.transport, 1);
	assert_int_equal(le32_get(w.qpn), 0x00c0ffee);
	assert_int_equal(le32_get(w.rkey), 0x12345678);
	assert_true(le64_get(w.addr) == REF_ADDR);
	assert_true(le64_get(w.len) == REF_LEN);
	assert_int_equal(w.port, 1);
	assert_int_equal(le16_get(w.lid), 0xbeef);
}

static void test_from_hex_reference(void **state)
{
	struct s3_token t;

	(void)state;
	poison(&t, sizeof(t));
	assert_int_equal(s3_token_from_hex(REF_HEX, S3_TOKEN_HEX, &t), 0);
	assert_ref_fields(&t, REF_ADDR, REF_LEN);

	poison(&t, sizeof(t));
	assert_int_equal(s3_token_from_hex(REF_HEX_UPPER, S3_TOKEN_HEX, &t), 0);
	assert_ref_fields(&t, REF_ADDR, REF_LEN);
}

/* The length bounds the read: 88 hex characters with no terminator after them. */
static void test_from_hex_unterminated(void **state)
{
	char *buf = malloc(S3_TOKEN_HEX);
	struct s3_token t;

	(void)state;
	assert_non_null(buf);
	memcpy(buf, REF_HEX, S3_TOKEN_HEX);
	assert_int_equal(s3_token_from_hex(buf, S3_TOKEN_HEX, &t), 0);
	assert_ref_fields(&t, REF_ADDR, REF_LEN);
	free(buf);
}

/* ---- round trips ----------------------------------------------------------------------------- */

static void test_round_trips(void **state)
{
	struct s3_token in[4], out;
	uint8_t raw[S3_TOKEN_BYTES];
	char hex[S3_TOKEN_HEX + 1];
	uint32_t x = 0x2545f491;

	(void)state;
	in[0] = ref_token();
	memset(&in[1], 0, sizeof(in[1]));
	memset(&in[2], 0xff, sizeof(in[2]));
	/* every field distinct, from a simple xorshift */
	memset(&in[3], 0, sizeof(in[3]));
	for (int i = 0; i < 16; i++)
		in[3].gid[i] = (uint8_t)xorshift32(&x);
	in[3].transport = S3_TRANSPORT_DC;
	in[3].qpn = 0xfedcba98;
	in[3].rkey = 0x89abcdef;
	in[3].addr = 0x0123456789abcdefull;
	in[3].len = 0xfedcba9876543210ull;
	in[3].port = 0xfe;
	in[3].lid = 0x1234;

	for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
		poison(&out, sizeof(out));
		s3_token_encode(&in[i], raw);
		s3_token_decode(raw, &out);
		assert_token_equal(&out, &in[i]);

		poison(&out, sizeof(out));
		s3_token_to_hex(&in[i], hex);
		assert_int_equal(strlen(hex), S3_TOKEN_HEX);
		for (size_t k = 0; k < S3_TOKEN_HEX; k++)
			assert_true(isxdigit((unsigned char)hex[k]) && !isupper((unsigned char)hex[k]));
		assert_int_equal(s3_token_from_hex(hex, strlen(hex), &out), 0);
		assert_token_equal(&out, &in[i]);

		poison(&out, sizeof(out));
		assert_int_equal(s3_token_parse_header(hex, &out, NULL), 0);
		assert_token_equal(&out, &in[i]);
	}
	/* the xorshift token encodes big-endian-looking values little-endian */
	s3_token_to_hex(&in[3], hex);
	assert_memory_equal(hex, "00" "98badcfe", 10);
}

/* ---- header parsing -------------------------------------------------------------------------- */

static void test_header_bare(void **state)
{
	static const char *const ok[] = {
		REF_HEX, REF_HEX_UPPER, " " REF_HEX, REF_HEX "\t", " \t " REF_HEX " \t\t",
	};
	struct s3_token t;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		char *v = exact_dup(ok[i]);

		poison(&t, sizeof(t));
		assert_int_equal(s3_token_parse_header(v, &t, NULL), 0);
		assert_ref_fields(&t, REF_ADDR, REF_LEN);
		free(v);
	}
}

static void test_header_overrides(void **state)
{
	static const struct {
		const char *v;
		uint64_t addr, len;
	} ok[] = {
		/* as hipObject sends them: %016lx */
		{ REF_HEX ":00007f00deadb000:0000000000200000", 0x00007f00deadb000ull, 0x200000 },
		{ REF_HEX ":ffffffffffffffff:ffffffffffffffff", UINT64_MAX, UINT64_MAX },
		/* 0 means "no override", each independently */
		{ REF_HEX ":0000000000000000:0000000000000000", REF_ADDR, REF_LEN },
		{ REF_HEX ":0000000000000000:0000000000001000", REF_ADDR, 0x1000 },
		{ REF_HEX ":00007f00deadb000:0000000000000000", 0x00007f00deadb000ull, REF_LEN },
		{ REF_HEX ":0:0", REF_ADDR, REF_LEN },
		{ REF_HEX ":0:1", REF_ADDR, 1 },
		{ REF_HEX ":1:0", 1, REF_LEN },
		/* shorter fields, either case, surrounding blanks */
		{ REF_HEX ":7f00deadb000:200000", 0x7f00deadb000ull, 0x200000 },
		{ REF_HEX ":7F00DEADB000:AbC", 0x7f00deadb000ull, 0xabc },
		{ REF_HEX_UPPER ":a:b", 0xa, 0xb },
		{ "\t " REF_HEX ":10:20 \t", 0x10, 0x20 },
	};
	struct s3_token t;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		char *v = exact_dup(ok[i].v);

		poison(&t, sizeof(t));
		assert_int_equal(s3_token_parse_header(v, &t, NULL), 0);
		assert_ref_fields(&t, ok[i].addr, ok[i].len);
		free(v);
	}
}

/* Every rejection leaves the output exactly as it was. */
static void assert_header_rejected(const char *value)
{
	struct s3_token t;
	char *v = exact_dup(value);

	poison(&t, sizeof(t));
	if (s3_token_parse_header(v, &t, NULL) != -EINVAL)
		fail_msg("accepted: \"%s\"", value);
	assert_poisoned(&t, sizeof(t));
	free(v);
}

static void test_header_rejects(void **state)
{
	static const char *const bad[] = {
		"", " ", "   ", "\t", " \t \t",
		/* 87 and 89 characters */
		"01eeffc000000102030405060708090a0b0c0d0e0f7856341244332211007f0000000010000000000001efb",
		REF_HEX "0",
		/* "0x" prefix, in place of two digits or in front of all of them */
		"0xeeffc000000102030405060708090a0b0c0d0e0f7856341244332211007f0000000010000000000001efbe",
		"0x" REF_HEX,
		/* embedded blanks */
		"01eeffc000000102030405060708090a0b0c0d 0e0f7856341244332211007f0000000010000000000001efb",
		"01eeffc000000102030405060708090a0b0c0d\t0e0f7856341244332211007f0000000010000000000001efb",
		REF_HEX " :1:2", REF_HEX ": 1:2", REF_HEX ":1 :2", REF_HEX ":1: 2", REF_HEX ":1:2 3",
		/* two fields, four fields, empty fields, trailing colon */
		REF_HEX ":1", REF_HEX ":1:2:3", REF_HEX ":1:2:", REF_HEX ":",
		REF_HEX "::", REF_HEX "::2", REF_HEX ":1:", ":" REF_HEX, REF_HEX ":1::2",
		/* 17-digit overrides, and "0x" in them */
		REF_HEX ":00000000000000001:1", REF_HEX ":1:00000000000000001",
		REF_HEX ":10000000000000000:1", REF_HEX ":0x1:2", REF_HEX ":1:0x2", REF_HEX ":1:0X2",
		/* non-hex in the overrides, a sign */
		REF_HEX ":1g:2", REF_HEX ":1:2z", REF_HEX ":-1:2", REF_HEX ":+1:2",
		/* other separators and trailing junk */
		REF_HEX ";1;2", REF_HEX ",1,2", REF_HEX ";1:2", REF_HEX "=1:2", REF_HEX "0:1:2",
		REF_HEX "\n", REF_HEX "\r", REF_HEX ":1:2\n",
		"\n" REF_HEX,
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_header_rejected(bad[i]);
	{
		struct s3_token t;

		poison(&t, sizeof(t));
		assert_int_equal(s3_token_parse_header(NULL, &t, NULL), -EINVAL);
		assert_poisoned(&t, sizeof(t));
	}
}

/* A non-hex character at several positions, in every parser that takes the 88 digits. */
static void test_non_hex_positions(void **state)
{
	static const size_t pos[] = { 0, 1, 2, 9, 10, 41, 42, 50, 66, 82, 86, 87 };
	static const char junk[] = { 'g', 'G', 'x', 'z', ':', '-', '.', ' ', '\x80', '\0' };
	struct s3_token t;
	struct s3_reply r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(pos); i++) {
		for (size_t j = 0; j < ARRAY_SIZE(junk); j++) {
			char hex[S3_TOKEN_HEX + 1];
			char header[S3_TOKEN_HEX + 16];
			char reply[S3_TOKEN_HEX + 8];

			memcpy(hex, REF_HEX, sizeof(hex));
			hex[pos[i]] = junk[j];

			poison(&t, sizeof(t));
			assert_int_equal(s3_token_from_hex(hex, S3_TOKEN_HEX, &t), -EINVAL);
			assert_poisoned(&t, sizeof(t));

			memcpy(header, hex, sizeof(hex));
			poison(&t, sizeof(t));
			assert_int_equal(s3_token_parse_header(header, &t, NULL), -EINVAL);
			assert_poisoned(&t, sizeof(t));

			memcpy(header + S3_TOKEN_HEX, ":1:2", 5);
			poison(&t, sizeof(t));
			assert_int_equal(s3_token_parse_header(header, &t, NULL), -EINVAL);
			assert_poisoned(&t, sizeof(t));

			memcpy(reply, "200:", 4);
			memcpy(reply + 4, hex, sizeof(hex));
			poison(&r, sizeof(r));
			assert_int_equal(s3_reply_parse(reply, &r), -EINVAL);
			assert_poisoned(&r, sizeof(r));
		}
	}
}

static void test_from_hex_lengths(void **state)
{
	char buf[S3_TOKEN_HEX + 2];
	struct s3_token t;

	(void)state;
	memcpy(buf, REF_HEX, S3_TOKEN_HEX);
	buf[S3_TOKEN_HEX] = '0';
	buf[S3_TOKEN_HEX + 1] = '\0';
	poison(&t, sizeof(t));
	assert_int_equal(s3_token_from_hex(buf, S3_TOKEN_HEX - 1, &t), -EINVAL);
	assert_int_equal(s3_token_from_hex(buf, S3_TOKEN_HEX + 1, &t), -EINVAL);
	assert_int_equal(s3_token_from_hex(buf, 0, &t), -EINVAL);
	assert_int_equal(s3_token_from_hex("", 0, &t), -EINVAL);
	assert_int_equal(s3_token_from_hex(NULL, S3_TOKEN_HEX, &t), -EINVAL);
	assert_poisoned(&t, sizeof(t));
	/* a string shorter than the length claimed: stops at its NUL */
	{
		char *shortstr = exact_dup("01eeffc0");

		assert_int_equal(s3_token_from_hex(shortstr, S3_TOKEN_HEX, &t), -EINVAL);
		assert_poisoned(&t, sizeof(t));
		free(shortstr);
	}
}

/* ---- replies --------------------------------------------------------------------------------- */

/*
 * cuObject's descriptor, as NooBaa prints it (16:8:8:4:6:1:32 hex digits),
 * with and without AIStor's trailing ":addr:size" window, and the dialect
 * reported; every field read into its place.
 */
static void test_cuobj_descriptor(void **state)
{
	static const uint8_t gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55 };
	const char *desc = "00007f0012345678:00100000:0000abcd:0012:00c0de:1:fe80000000000000021122fffe334455";
	char buf[256];
	struct s3_token t;
	enum s3_dialect d = S3_DIALECT_HIPOBJ;

	(void)state;
	assert_int_equal(strlen(desc), 81);
	assert_int_equal(s3_token_parse_header(desc, &t, &d), 0);
	assert_int_equal(d, S3_DIALECT_CUOBJ);
	assert_int_equal(t.transport, S3_TRANSPORT_DC);
	assert_int_equal(t.addr, 0x00007f0012345678ull);
	assert_int_equal(t.len, 0x100000);
	assert_int_equal(t.rkey, 0xabcd);
	assert_int_equal(t.lid, 0x12);
	assert_int_equal(t.qpn, 0xc0de);
	assert_int_equal(t.port, 1);
	assert_memory_equal(t.gid, gid, 16);
	assert_true(s3_gid_link_local(t.gid));

	/* AIStor/nixl: a window inside the registration; a 0 keeps the descriptor's field. */
	snprintf(buf, sizeof(buf), "  %s:00007f0012345000:0000000000001000\t", desc);
	assert_int_equal(s3_token_parse_header(buf, &t, &d), 0);
	assert_int_equal(t.addr, 0x00007f0012345000ull);
	assert_int_equal(t.len, 0x1000);
	snprintf(buf, sizeof(buf), "%s:0:0", desc);
	assert_int_equal(s3_token_parse_header(buf, &t, &d), 0);
	assert_int_equal(t.addr, 0x00007f0012345678ull);
	assert_int_equal(t.len, 0x100000);

	/* No GID: has_gid 0, whatever the last field says (still hex); narrower fields; a wider size. */
	assert_int_equal(s3_token_parse_header("1000:0000000100000000:7:0:1:0:0", &t, &d), 0);
	assert_int_equal(t.addr, 0x1000);
	assert_int_equal(t.len, 0x100000000ull);
	assert_int_equal(t.rkey, 7);
	for (int i = 0; i < 16; i++)
		assert_int_equal(t.gid[i], 0);
	assert_false(s3_gid_link_local(t.gid));

	/* An 88-digit first field is hipObject's, with or without colons after it. */
	d = S3_DIALECT_CUOBJ;
	assert_int_equal(s3_token_parse_header(REF_HEX, &t, &d), 0);
	assert_int_equal(d, S3_DIALECT_HIPOBJ);
}

static void test_cuobj_rejects(void **state)
{
	static const char *bad[] = {
		"", ":", "1:2:3:4:5:0:0:", ":1:2:3:4:5:0:0",
		"1:2:3:4:5:0",                               /* six fields */
		"1:2:3:4:5:0:0:1",                           /* eight */
		"1:2:3:4:5:0:0:1:2:3",                       /* ten */
		"10000000000000000:2:3:4:5:0:0",             /* an address of 17 digits */
		"1:20000000000000000:3:4:5:0:0",             /* a size of 17 */
		"1:2:100000000:4:5:0:0",                     /* an rkey of 9 */
		"1:2:3:10000:5:0:0",                         /* a LID of 5 */
		"1:2:3:4:1000000:0:0",                       /* a QPN of 7 */
		"1:2:3:4:5:00:0",                            /* has_gid of 2 digits */
		"1:2:3:4:5:2:0",                             /* has_gid 2 */
		"1:2:3:4:5:1:0",                             /* a GID of 1 digit */
		"1:2:3:4:5:1:fe80000000000000021122fffe33445",   /* of 31 */
		"1:2:3:4:5:1:fe80000000000000021122fffe3344556", /* of 33 */
		"1:2:3:4:5:1:fe80000000000000021122fffe33445g",  /* not hex */
		"1:2:3:4:5:0:0:10000000000000000:1",         /* a window address of 17 */
		"1:2:3:4:5:0:0:1:",                          /* an empty size */
		"1:2: 3:4:5:0:0", "0x1:2:3:4:5:0:0", "-1:2:3:4:5:0:0",
	};
	struct s3_token t;
	enum s3_dialect d;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		poison(&t, sizeof(t));
		if (s3_token_parse_header(bad[i], &t, &d) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_poisoned(&t, sizeof(t));
	}
	/* A value without colons that is not 88 digits is a hipObject token gone wrong. */
	assert_int_equal(s3_token_parse_header("1234", &t, &d), -EINVAL);
	assert_int_equal(d, S3_DIALECT_HIPOBJ);
	assert_int_equal(s3_token_parse_header("1:2:3", &t, &d), -EINVAL);
	assert_int_equal(d, S3_DIALECT_CUOBJ);
}

static void test_reply_forms(void **state)
{
	static const struct {
		const char *v;
		enum s3_reply_kind kind;
		bool ok;
		int status;
	} good[] = {
		{ "ok", S3_REPLY_TAG, true, 0 },
		{ "OK", S3_REPLY_TAG, true, 0 },
		{ "Ok", S3_REPLY_TAG, true, 0 },
		{ "err", S3_REPLY_TAG, false, 0 },
		{ "ERR", S3_REPLY_TAG, false, 0 },
		{ "200", S3_REPLY_STATUS, true, 200 },
		{ "204", S3_REPLY_STATUS, true, 204 },
		{ "206", S3_REPLY_STATUS, true, 206 },
		{ "201", S3_REPLY_STATUS, false, 201 },
		{ "100", S3_REPLY_STATUS, false, 100 },
		{ "404", S3_REPLY_STATUS, false, 404 },
		{ "599", S3_REPLY_STATUS, false, 599 },
		{ "200:" REF_HEX, S3_REPLY_STATUS_TOKEN, true, 200 },
		{ "206:" REF_HEX_UPPER, S3_REPLY_STATUS_TOKEN, true, 206 },
		{ "500:" REF_HEX, S3_REPLY_STATUS_TOKEN, false, 500 },
	};
	struct s3_reply r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		char *v = exact_dup(good[i].v);

		poison(&r, sizeof(r));
		assert_int_equal(s3_reply_parse(v, &r), 0);
		assert_int_equal(r.kind, good[i].kind);
		assert_int_equal(r.ok, good[i].ok);
		assert_int_equal(r.status, good[i].status);
		if (good[i].kind == S3_REPLY_STATUS_TOKEN)
			assert_ref_fields(&r.token, REF_ADDR, REF_LEN);
		free(v);
	}
}

static void test_reply_round_trip(void **state)
{
	struct s3_token t = ref_token();
	struct s3_reply r;
	char buf[128];
	int n;

	(void)state;
	memset(buf, 'X', sizeof(buf));
	n = s3_reply_format(200, &t, buf, sizeof(buf));
	assert_int_equal(n, 3 + 1 + S3_TOKEN_HEX);
	assert_int_equal(strlen(buf), (size_t)n);
	assert_string_equal(buf, "200:" REF_HEX);

	poison(&r, sizeof(r));
	assert_int_equal(s3_reply_parse(buf, &r), 0);
	assert_int_equal(r.kind, S3_REPLY_STATUS_TOKEN);
	assert_true(r.ok);
	assert_int_equal(r.status, 200);
	assert_token_equal(&r.token, &t);

	memset(buf, 'X', sizeof(buf));
	n = s3_reply_format(404, NULL, buf, sizeof(buf));
	assert_int_equal(n, 3);
	assert_string_equal(buf, "404");
	poison(&r, sizeof(r));
	assert_int_equal(s3_reply_parse(buf, &r), 0);
	assert_int_equal(r.kind, S3_REPLY_STATUS);
	assert_false(r.ok);
	assert_int_equal(r.status, 404);
}

static void test_reply_rejects(void **state)
{
	static const char *const bad[] = {
		"", " ", "20", "2000", "099", "0200", "600", "999", "000", "200:", "200: ",
		/* 87 and 89 hex after the status */
		"200:01eeffc000000102030405060708090a0b0c0d0e0f7856341244332211007f0000000010000000000001efb",
		"200:" REF_HEX "0",
		"200:" REF_HEX ":", "200:" REF_HEX " ", "200::" REF_HEX, "200 :" REF_HEX,
		"200 " REF_HEX, "200;" REF_HEX, "200-" REF_HEX, "200" REF_HEX,
		":" REF_HEX, REF_HEX, "ok:", "ok:" REF_HEX, "err:", "okay", "o", "e", "er", "error",
		"ok ", " ok", "-200", "+200", "200 ", " 200", "2OO", "0x0c8", "200\n", "2e2",
	};
	struct s3_reply r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *v = exact_dup(bad[i]);

		poison(&r, sizeof(r));
		if (s3_reply_parse(v, &r) != -EINVAL)
			fail_msg("accepted: \"%s\"", bad[i]);
		assert_poisoned(&r, sizeof(r));
		free(v);
	}
	poison(&r, sizeof(r));
	assert_int_equal(s3_reply_parse(NULL, &r), -EINVAL);
	assert_poisoned(&r, sizeof(r));
}

static void test_reply_format_space(void **state)
{
	struct s3_token t = ref_token();
	const size_t need = 3 + 1 + S3_TOKEN_HEX + 1;
	char buf[128];

	(void)state;
	/* one byte short of room for the NUL, and less */
	for (size_t cap = 0; cap < need; cap++) {
		memset(buf, 'X', sizeof(buf));
		assert_int_equal(s3_reply_format(200, &t, buf, cap), -ENOSPC);
		if (cap > 0)
			assert_int_equal(buf[0], '\0');
		for (size_t k = cap; k < sizeof(buf); k++)
			assert_int_equal(buf[k], 'X'); /* nothing past cap */
	}
	memset(buf, 'X', sizeof(buf));
	assert_int_equal(s3_reply_format(200, &t, buf, need), (int)need - 1);
	assert_string_equal(buf, "200:" REF_HEX);
	assert_int_equal(buf[need], 'X');

	for (size_t cap = 0; cap < 4; cap++) {
		memset(buf, 'X', sizeof(buf));
		assert_int_equal(s3_reply_format(200, NULL, buf, cap), -ENOSPC);
		for (size_t k = cap; k < sizeof(buf); k++)
			assert_int_equal(buf[k], 'X');
	}
	assert_int_equal(s3_reply_format(200, NULL, buf, 4), 3);
	assert_string_equal(buf, "200");
	assert_int_equal(s3_reply_format(200, NULL, NULL, 0), -ENOSPC);

	/* statuses the parser would refuse are never formatted */
	assert_int_equal(s3_reply_format(99, NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(s3_reply_format(600, &t, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(s3_reply_format(-200, NULL, buf, sizeof(buf)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_reference_image),
		cmocka_unit_test(test_encode_reference_image),
		cmocka_unit_test(test_wire_struct_matches_reference),
		cmocka_unit_test(test_from_hex_reference),
		cmocka_unit_test(test_from_hex_unterminated),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_header_bare),
		cmocka_unit_test(test_header_overrides),
		cmocka_unit_test(test_header_rejects),
		cmocka_unit_test(test_non_hex_positions),
		cmocka_unit_test(test_from_hex_lengths),
		cmocka_unit_test(test_cuobj_descriptor),
		cmocka_unit_test(test_cuobj_rejects),
		cmocka_unit_test(test_reply_forms),
		cmocka_unit_test(test_reply_round_trip),
		cmocka_unit_test(test_reply_rejects),
		cmocka_unit_test(test_reply_format_space),
	};

	return cmocka_run_group_tests_name("s3-token-unit", tests, NULL, NULL);
}
