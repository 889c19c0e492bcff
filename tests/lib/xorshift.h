/*
 * Marsaglia's xorshift generators (J. Stat. Softw. 8(14), 2003) for the
 * tests' deterministic data and choices: each call advances *s and returns
 * it. A seed of 0 stays 0. Header-only.
 */
#ifndef ERNIC_TESTS_XORSHIFT_H
#define ERNIC_TESTS_XORSHIFT_H

#include <stdint.h>

/* xorshift32, shifts 13, 17, 5. */
static inline uint32_t xorshift32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* xorshift64, shifts 13, 7, 17. */
static inline uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
