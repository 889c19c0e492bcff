/*
 * Byte order and Internet checksums for tests that build and check frames themselves: written
 * here, not taken from the code under test, so that a test never checks the stack with its own
 * arithmetic. Header-only.
 */
#ifndef ERNIC_TESTS_WIRE_BYTES_H
#define ERNIC_TESTS_WIRE_BYTES_H

#include <stddef.h>
#include <stdint.h>

static inline void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)get16(p) << 16) | get16(p + 2);
}

/* The one's-complement sum of n bytes added to s (not folded). */
static inline uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

/* A sum folded to 16 bits and complemented: the checksum field's value. */
static inline uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)(~s & 0xffff);
}

/* The IPv4 pseudo-header's sum for protocol proto and len bytes of transport header and data. */
static inline uint32_t pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + (uint32_t)len;
}

#endif
