/* S3's additional checksums (x-amz-checksum-*); see s3_checksum.c. */
#ifndef ERNIC_S3_S3_CHECKSUM_H
#define ERNIC_S3_S3_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

enum s3_cks { S3_CKS_NONE, S3_CKS_CRC32, S3_CKS_CRC32C, S3_CKS_CRC64NVME, S3_CKS_SHA1, S3_CKS_SHA256, S3_CKS_COUNT };

#define S3_CKS_MAX_LEN 32   /* SHA-256 */
#define S3_CKS_B64_MAX 64   /* base64 of 32 bytes and a "-10000" suffix, NUL */

/* "crc32", ...: the suffix of its header; "" for none. */
const char *s3_cks_name(enum s3_cks a);
/* "ChecksumCRC32", ...: its XML element. */
const char *s3_cks_xml(enum s3_cks a);
/* Digest bytes: 4, 8, 20 or 32. */
size_t s3_cks_len(enum s3_cks a);
/* By name, any case; S3_CKS_NONE when unknown. */
enum s3_cks s3_cks_from_name(const char *name);
/* The digest of data, big-endian: 0, or -1. */
int s3_cks_compute(enum s3_cks a, const uint8_t *data, size_t len, uint8_t out[S3_CKS_MAX_LEN]);
void s3_cks_b64(const uint8_t *raw, size_t n, char out[S3_CKS_B64_MAX]);
/* A header value: exactly the base64 of one digest of a: 0, or -1. */
int s3_cks_unb64(enum s3_cks a, const char *b64, uint8_t out[S3_CKS_MAX_LEN]);

#endif
