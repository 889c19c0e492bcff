/*
 * Object memory: reference-counted blobs; large ones are anonymous mappings,
 * kept after use for the next object of about their size. See s3_internal.h.
 */
#include "s3/s3_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MMAP_THRESHOLD (1u << 20)

/* ---------------------------------------------------------------- blobs */

/*
 * Object memory of MMAP_THRESHOLD and more is anonymous memory. Mappings of
 * objects that are gone (replaced, deleted, a failed upload) are kept for the
 * next object of about their size: their pages are already there, so a body
 * written into them takes no page fault per 4 KiB (on a virtual machine that
 * costs as much as copying the bytes). Bounded in count and bytes; a mapping
 * is reused only for a length between half and all of its own.
 */
#define MAP_CACHE_SLOTS 4
#define MAP_CACHE_BYTES (128ull << 20)

struct map_cache_entry {
	uint8_t *p;
	size_t len;             /* page-rounded */
};

/* Entries [0, map_cache_n) in the order they were freed. */
static struct map_cache_entry map_cache[MAP_CACHE_SLOTS];
static unsigned map_cache_n;
static size_t map_cache_bytes;

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return len > SIZE_MAX - pg ? SIZE_MAX : (len + pg - 1) / pg * pg;
}

/* Removes entry i and returns it. */
static struct map_cache_entry map_cache_take(unsigned i)
{
	struct map_cache_entry e = map_cache[i];

	memmove(&map_cache[i], &map_cache[i + 1], (map_cache_n - i - 1) * sizeof(map_cache[0]));
	map_cache_n--;
	map_cache_bytes -= e.len;
	return e;
}

static void *blob_map(size_t len)
{
	size_t want = page_round(len);
	unsigned best = map_cache_n;
	void *p;

	for (unsigned i = 0; i < map_cache_n; i++)
		if (map_cache[i].len >= want && map_cache[i].len / 2 <= want &&
		    (best == map_cache_n || map_cache[i].len < map_cache[best].len))
			best = i;
	if (best < map_cache_n) {
		struct map_cache_entry e = map_cache_take(best);

		/* Shrinking never moves the mapping; the tail goes back to the kernel. */
		if (e.len == want || mremap(e.p, e.len, want, 0) != MAP_FAILED)
			return e.p;
		munmap(e.p, e.len);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void blob_unmap(uint8_t *p, size_t len)
{
	struct map_cache_entry e = { .p = p, .len = page_round(len) };

	if (e.len > MAP_CACHE_BYTES) {
		munmap(p, len);
		return;
	}
	while (map_cache_n == MAP_CACHE_SLOTS || map_cache_bytes + e.len > MAP_CACHE_BYTES) {
		struct map_cache_entry old = map_cache_take(0);      /* the oldest goes */

		munmap(old.p, old.len);
	}
	/* Kept, but the kernel may take the pages back under memory pressure (a write keeps them). */
	madvise(p, e.len, MADV_FREE);
	map_cache[map_cache_n++] = e;
	map_cache_bytes += e.len;
}

/* Gives every kept mapping back (the store is going away). */
void map_cache_drain(void)
{
	while (map_cache_n > 0) {
		struct map_cache_entry e = map_cache_take(0);

		munmap(e.p, e.len);
	}
}

struct s3_blob *blob_new(size_t len)
{
	struct s3_blob *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->refs = 1;
	b->len = len;
	if (len == 0)
		return b;
	if (len >= MMAP_THRESHOLD) {
		b->data = blob_map(len);
	} else {
		b->data = malloc(len);
	}
	if (b->data == NULL) {
		free(b);
		return NULL;
	}
	return b;
}

static void blob_free_data(uint8_t *data, size_t len)
{
	if (data == NULL)
		return;
	if (len >= MMAP_THRESHOLD)
		blob_unmap(data, len);
	else
		free(data);
}

void s3_blob_put(struct s3_blob *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	blob_free_data(b->data, b->len);
	free(b);
}

/*
 * Grow a blob being filled with a body of unknown length (never shared yet).
 * Mapped memory grows by mremap, which moves pages rather than bytes: no step
 * copies more than MMAP_THRESHOLD, so no step holds up the event loop.
 */
int blob_grow(struct s3_blob *b, size_t need)
{
	size_t cap = b->len ? b->len : 4096;
	uint8_t *p;

	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->len >= MMAP_THRESHOLD) {
		p = mremap(b->data, b->len, cap, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -ENOMEM;
		b->data = p;
		b->len = cap;
		return 0;
	}
	p = cap >= MMAP_THRESHOLD ? blob_map(cap) : malloc(cap);
	if (p == NULL)
		return -ENOMEM;
	if (b->data)
		memcpy(p, b->data, b->len);
	blob_free_data(b->data, b->len);
	b->data = p;
	b->len = cap;
	return 0;
}

/* Trim a grown blob to its filled length: mapped memory shrinks in place, the rest is copied. */
struct s3_blob *blob_exact(struct s3_blob *b, size_t filled)
{
	struct s3_blob *n;

	if (b->len == filled)
		return b;
	if (b->len >= MMAP_THRESHOLD && filled >= MMAP_THRESHOLD) {
		/* Shrinking never moves the mapping. */
		if (mremap(b->data, b->len, filled, 0) == MAP_FAILED)
			return NULL;
		b->len = filled;
		return b;
	}
	n = blob_new(filled);
	if (n == NULL)
		return NULL;
	if (filled)
		memcpy(n->data, b->data, filled);
	s3_blob_put(b);
	return n;
}

