/*
 * Byte order in the type: wire fields are one-member structs, so arithmetic
 * on them does not compile and every access goes through an accessor.
 */
#ifndef ERNIC_UTIL_ENDIAN_H
#define ERNIC_UTIL_ENDIAN_H

#include <endian.h>
#include <stdint.h>

typedef struct { uint16_t v; } __attribute__((packed)) le16;
typedef struct { uint32_t v; } __attribute__((packed)) le32;
typedef struct { uint64_t v; } __attribute__((packed)) le64;
typedef struct { uint16_t v; } __attribute__((packed)) be16;
typedef struct { uint32_t v; } __attribute__((packed)) be32;
typedef struct { uint64_t v; } __attribute__((packed)) be64;

static inline uint16_t le16_get(le16 x) { return le16toh(x.v); }
static inline uint32_t le32_get(le32 x) { return le32toh(x.v); }
static inline uint64_t le64_get(le64 x) { return le64toh(x.v); }
static inline le16 le16_set(uint16_t v) { return (le16){ htole16(v) }; }
static inline le32 le32_set(uint32_t v) { return (le32){ htole32(v) }; }
static inline le64 le64_set(uint64_t v) { return (le64){ htole64(v) }; }
static inline uint16_t be16_get(be16 x) { return be16toh(x.v); }
static inline uint32_t be32_get(be32 x) { return be32toh(x.v); }
static inline uint64_t be64_get(be64 x) { return be64toh(x.v); }
static inline be16 be16_set(uint16_t v) { return (be16){ htobe16(v) }; }
static inline be32 be32_set(uint32_t v) { return (be32){ htobe32(v) }; }
static inline be64 be64_set(uint64_t v) { return (be64){ htobe64(v) }; }

#endif
