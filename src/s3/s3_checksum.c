/*
 * The additional checksums of S3 (x-amz-checksum-*): CRC32 (ISA-L, the gzip CRC), CRC32C
 * (ISA-L's crc32_iscsi), SHA-1 and SHA-256 (OpenSSL), and CRC64/NVME, which
 * no Debian library computes (ISA-L has it only from 2.31): a reflected
 * CRC-64 with the polynomial 0xAD93D23594C93659, initial value and final
 * XOR all ones, by a table built at first use. Values travel in base64 of
 * the big-endian digest; a multipart upload's composite checksum is the
 * checksum of its parts' digests, with "-N".
 */
#include "s3/s3_checksum.h"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;   /* as in x-amz-checksum-<name> and x-amz-sdk-checksum-algorithm (any case) */
	const char *xml;    /* the element of ListParts and CompleteMultipartUpload */
	size_t len;
} algos[S3_CKS_COUNT] = {
	[S3_CKS_CRC32] = { "crc32", "ChecksumCRC32", 4 },
	[S3_CKS_CRC32C] = { "crc32c", "ChecksumCRC32C", 4 },
	[S3_CKS_CRC64NVME] = { "crc64nvme", "ChecksumCRC64NVME", 8 },
	[S3_CKS_SHA1] = { "sha1", "ChecksumSHA1", 20 },
	[S3_CKS_SHA256] = { "sha256", "ChecksumSHA256", 32 },
};

const char *s3_cks_name(enum s3_cks a)
{
	return a > S3_CKS_NONE && a < S3_CKS_COUNT ? algos[a].name : "";
}

const char *s3_cks_xml(enum s3_cks a)
{
	return a > S3_CKS_NONE && a < S3_CKS_COUNT ? algos[a].xml : "";
}

size_t s3_cks_len(enum s3_cks a)
{
	return a > S3_CKS_NONE && a < S3_CKS_COUNT ? algos[a].len : 0;
}

enum s3_cks s3_cks_from_name(const char *name)
{
	for (int a = S3_CKS_NONE + 1; a < S3_CKS_COUNT; a++)
		if (strcasecmp(name, algos[a].name) == 0)
			return (enum s3_cks)a;
	return S3_CKS_NONE;
}

static uint64_t crc64nvme_table[256];
static bool crc64nvme_ready;

static uint64_t crc64nvme(uint64_t crc, const uint8_t *p, size_t n)
{
	if (!crc64nvme_ready) {
		for (unsigned i = 0; i < 256; i++) {
			uint64_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ull : c >> 1; /* 0xAD93D23594C93659 reflected */
			crc64nvme_table[i] = c;
		}
		crc64nvme_ready = true;
	}
	crc = ~crc;
	while (n--)
		crc = crc64nvme_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

int s3_cks_compute(enum s3_cks a, const uint8_t *data, size_t len, uint8_t out[S3_CKS_MAX_LEN])
{
	static const uint8_t empty[1];

	if (data == NULL)
		data = empty;
	switch (a) {
	case S3_CKS_CRC32: {
		/* zlib's CRC-32 (gzip's), by ISA-L with carry-less multiplication */
		uint32_t c = crc32_gzip_refl(0, data, len);

		for (int i = 0; i < 4; i++)
			out[i] = (uint8_t)(c >> (24 - 8 * i));
		return 0;
	}
	case S3_CKS_CRC32C: {
		unsigned int c = 0xffffffffu;

		for (size_t off = 0; off < len;) {
			int n = len - off > (1u << 30) ? 1 << 30 : (int)(len - off);

			c = crc32_iscsi((unsigned char *)data + off, n, c);
			off += (size_t)n;
		}
		c = ~c;
		for (int i = 0; i < 4; i++)
			out[i] = (uint8_t)(c >> (24 - 8 * i));
		return 0;
	}
	case S3_CKS_CRC64NVME: {
		uint64_t c = crc64nvme(0, data, len);

		for (int i = 0; i < 8; i++)
			out[i] = (uint8_t)(c >> (56 - 8 * i));
		return 0;
	}
	case S3_CKS_SHA1:
	case S3_CKS_SHA256: {
		unsigned int n = 0;

		return EVP_Digest(data, len, out, &n, a == S3_CKS_SHA1 ? EVP_sha1() : EVP_sha256(), NULL) == 1 ? 0 : -1;
	}
	default:
		return -1;
	}
}

void s3_cks_b64(const uint8_t *raw, size_t n, char out[S3_CKS_B64_MAX])
{
	EVP_EncodeBlock((unsigned char *)out, raw, (int)n);
}

int s3_cks_unb64(enum s3_cks a, const char *b64, uint8_t out[S3_CKS_MAX_LEN])
{
	size_t want = s3_cks_len(a), n = strlen(b64), enc = 4 * ((want + 2) / 3);
	uint8_t buf[S3_CKS_MAX_LEN + 3];
	char canon[S3_CKS_B64_MAX];

	if (want == 0 || n != enc || EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)n) < 0)
		return -1;
	/* Exactly the canonical encoding of want bytes (padding and unused bits included). */
	s3_cks_b64(buf, want, canon);
	if (strcmp(canon, b64) != 0)
		return -1;
	memcpy(out, buf, want);
	return 0;
}
