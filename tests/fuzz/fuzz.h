/*
 * What every fuzz target shares: a cursor over libFuzzer's input that never
 * reads past its end (a short input reads as zeros and then stops the
 * target's loop), and the entry point's prototype.
 *
 * A target's input is a stream of operations: one byte picks the operation,
 * the bytes after it are its arguments. The layouts are documented at the
 * top of each target and are what tests/fuzz/gen_corpus.c writes.
 */
#ifndef ERNIC_TESTS_FUZZ_H
#define ERNIC_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
	const uint8_t *p;
	size_t len, pos;
};

static inline bool fz_more(const struct fz *f)
{
	return f->pos < f->len;
}

static inline size_t fz_left(const struct fz *f)
{
	return f->len - f->pos;
}

/* Up to n bytes into out; the rest of out is zeroed. Returns the bytes taken. */
static inline size_t fz_take(struct fz *f, void *out, size_t n)
{
	size_t k = n < fz_left(f) ? n : fz_left(f);

	memcpy(out, f->p + f->pos, k);
	memset((uint8_t *)out + k, 0, n - k);
	f->pos += k;
	return k;
}

/* Up to n bytes in place (*got says how many). */
static inline const uint8_t *fz_ptr(struct fz *f, size_t n, size_t *got)
{
	const uint8_t *p = f->p + f->pos;

	*got = n < fz_left(f) ? n : fz_left(f);
	f->pos += *got;
	return p;
}

static inline uint8_t fz_u8(struct fz *f)
{
	uint8_t v;

	fz_take(f, &v, 1);
	return v;
}

/* Little-endian, as gen_corpus.c writes them. */
static inline uint16_t fz_u16(struct fz *f)
{
	uint8_t b[2];

	fz_take(f, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint8_t b[4];

	fz_take(f, b, 4);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t fz_u64(struct fz *f)
{
	uint64_t lo = fz_u32(f);

	return lo | (uint64_t)fz_u32(f) << 32;
}

#endif
