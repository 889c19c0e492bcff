/*
 * roce_fake: the memory side of a fake RoCE RC owner, shared by the RoCE
 * unit tests and the fuzz target. Regions are looked up by R_Key with the
 * bounds (and access rights) a real memory region would check; every helper
 * returns nonzero on an unknown or invalid key, a range outside the region
 * or a missing right, and never asserts, so cmocka tests and libFuzzer
 * targets can both use it and decide themselves what a failure means.
 *
 * A region's buffer is either an exact-size heap block owned by the set
 * (roce_fake_mem_add: any access outside it is an ASan report) or storage
 * the caller keeps (roce_fake_mem_attach).
 */
#ifndef ERNIC_TESTS_ROCE_FAKE_H
#define ERNIC_TESTS_ROCE_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROCE_FAKE_NMR 4

/* Access rights of a region (the fuzz input's access byte uses the same bits). */
enum {
	ROCE_FAKE_WRITE = 1,    /* remote write */
	ROCE_FAKE_READ = 2,     /* remote read */
	ROCE_FAKE_ATOMIC = 4,   /* remote atomic */
	ROCE_FAKE_INVAL = 8,    /* may be invalidated */
	ROCE_FAKE_ALL = 15,
};

struct roce_fake_mr {
	uint32_t rkey;
	uint64_t va;
	uint32_t len;
	uint8_t access;
	bool valid;
	bool owned;     /* buf is a heap block of the set */
	uint8_t *buf;
};

struct roce_fake_mem {
	struct roce_fake_mr mr[ROCE_FAKE_NMR];
	unsigned n;
};

/* A region of len bytes at va in a new exact-size heap block (one byte for len 0), uninitialised. NULL if full. */
struct roce_fake_mr *roce_fake_mem_add(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint32_t len,
				       uint8_t access);
/* A region over the caller's buf of len bytes. NULL if full. */
struct roce_fake_mr *roce_fake_mem_attach(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint8_t *buf,
					  uint32_t len, uint8_t access);
/* Frees the owned blocks and empties the set. */
void roce_fake_mem_free(struct roce_fake_mem *m);

/*
 * The bytes [va, va + len) of the first valid region with rkey, if it has a
 * right in need and the range lies inside it; NULL otherwise.
 */
uint8_t *roce_fake_mem_at(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, uint32_t len, uint8_t need);

int roce_fake_mem_write(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, const void *data, uint32_t len);
int roce_fake_mem_read(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, void *buf, uint32_t len);
/* The 8-byte compare-swap (cmp_swap) or fetch-add at va; *orig gets the old value. No alignment check. */
int roce_fake_mem_atomic(struct roce_fake_mem *m, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add,
			 uint64_t compare, uint64_t *orig);
/* Marks the valid region with rkey that may be invalidated invalid. */
int roce_fake_mem_invalidate(struct roce_fake_mem *m, uint32_t rkey);

/*
 * A frame in the three pieces a RoCEv2 sender hands over (roce_build_pieces: headers, the
 * payload where it lies, pad and ICRC) joined into buf[0..cap): its length, or 0 when the pieces
 * are not of that shape (the headers not the opcode's, no payload, a trailer that is not pad and
 * ICRC, or more than cap bytes).
 */
size_t roce_fake_join(uint8_t *buf, size_t cap, const uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
		      const uint8_t *trailer, size_t tlen);

#endif
