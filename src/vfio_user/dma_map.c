/* The DMA mapping table: a sorted array searched by binary search; see dma_map.h. */
#include "vfio_user/dma_map.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct dma_entry {
	uint64_t iova;
	uint64_t size;
	uint8_t *host;
	int prot;
	bool nofault; /* DMA_MAP_NOFAULT: copies need no guard */
};

struct dma_map {
	struct dma_entry *e; /* sorted by iova, never overlapping */
	uint32_t n, max;
};

struct dma_map *dma_map_new(uint32_t max_entries)
{
	struct dma_map *dm = calloc(1, sizeof(*dm));

	if (dm == NULL)
		return NULL;
	dm->e = calloc(max_entries ? max_entries : 1, sizeof(*dm->e));
	if (dm->e == NULL) {
		free(dm);
		return NULL;
	}
	dm->max = max_entries;
	return dm;
}

void dma_map_free(struct dma_map *dm)
{
	if (dm == NULL)
		return;
	free(dm->e);
	free(dm);
}

uint32_t dma_map_count(const struct dma_map *dm)
{
	return dm->n;
}

/* Index of the first entry whose iova is greater than addr. */
static uint32_t upper_bound(const struct dma_map *dm, uint64_t addr)
{
	uint32_t lo = 0, hi = dm->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (dm->e[mid].iova <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry containing addr, or NULL. */
static const struct dma_entry *find(const struct dma_map *dm, uint64_t addr)
{
	uint32_t i = upper_bound(dm, addr);
	const struct dma_entry *e;

	if (i == 0)
		return NULL;
	e = &dm->e[i - 1];
	return addr - e->iova < e->size ? e : NULL;
}

int dma_map_add(struct dma_map *dm, uint64_t iova, uint64_t size, void *host, int prot)
{
	uint32_t i;

	bool nofault = (prot & DMA_MAP_NOFAULT) != 0;

	prot &= ~DMA_MAP_NOFAULT;
	if (size == 0 || iova > UINT64_MAX - (size - 1) || (prot & ~(DMA_PROT_READ | DMA_PROT_WRITE)))
		return -EINVAL;
	i = upper_bound(dm, iova);
	/* The previous entry must end before iova, the next must start after the last byte. */
	if (i > 0 && iova - dm->e[i - 1].iova < dm->e[i - 1].size)
		return -EEXIST;
	if (i < dm->n && dm->e[i].iova - iova < size)
		return -EEXIST;
	if (dm->n == dm->max)
		return -ENOSPC;
	memmove(&dm->e[i + 1], &dm->e[i], (dm->n - i) * sizeof(dm->e[0]));
	dm->e[i] = (struct dma_entry){ .iova = iova, .size = size, .host = host, .prot = prot, .nofault = nofault };
	dm->n++;
	return 0;
}

int dma_map_remove(struct dma_map *dm, uint64_t iova, uint64_t size, void **host)
{
	uint32_t i = upper_bound(dm, iova);

	if (i == 0 || dm->e[i - 1].iova != iova || dm->e[i - 1].size != size)
		return -ENOENT;
	i--;
	if (host)
		*host = dm->e[i].host;
	memmove(&dm->e[i], &dm->e[i + 1], (dm->n - i - 1) * sizeof(dm->e[0]));
	dm->n--;
	return 0;
}

void dma_map_clear(struct dma_map *dm, void (*release)(void *host, uint64_t size, void *arg), void *arg)
{
	for (uint32_t i = 0; i < dm->n; i++)
		if (release)
			release(dm->e[i].host, dm->e[i].size, arg);
	dm->n = 0;
}

/* The host address of [iova, iova + len) inside one mapping allowing prot (its entry in *ep), or NULL. */
static uint8_t *resolve(const struct dma_map *dm, uint64_t iova, uint64_t len, int prot, const struct dma_entry **ep)
{
	const struct dma_entry *e = find(dm, iova);
	uint64_t off;

	if (e == NULL || len == 0 || e->host == NULL || (e->prot & prot) != prot)
		return NULL;
	off = iova - e->iova;
	if (len > e->size - off)
		return NULL;
	*ep = e;
	return e->host + off;
}

void *dma_map_translate(const struct dma_map *dm, uint64_t iova, uint64_t len, int prot)
{
	const struct dma_entry *e;
	uint8_t *p = resolve(dm, iova, len, prot & ~DMA_MAP_NOFAULT, &e);

	return p != NULL && (!(prot & DMA_MAP_NOFAULT) || e->nofault) ? p : NULL;
}

/*
 * A client can shrink the file behind a mapping after mapping it; touching
 * the lost pages then raises SIGBUS. Copies run under a guard that turns
 * such a fault into -EFAULT instead of ending the process. One thread owns
 * the device, so one guard suffices; a SIGBUS outside a guarded copy keeps
 * its default action.
 */
static sigjmp_buf guard_env;
static volatile sig_atomic_t guard_active;
static bool guard_installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (guard_active) {
		guard_active = 0;
		siglongjmp(guard_env, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_guard(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) == 0)
		guard_installed = true;
}

static int guarded_memcpy(void *dst, const void *src, size_t n)
{
	if (!guard_installed)
		install_guard();
	/* No signal mask to save (a syscall per copy): SA_NODEFER keeps SIGBUS unblocked in the handler. */
	if (sigsetjmp(guard_env, 0))
		return -EFAULT;
	guard_active = 1;
	memmove(dst, src, n); /* guest to guest copies may overlap */
	guard_active = 0;
	return 0;
}

/*
 * Walk [iova, iova + len) mapping by mapping; dir is DMA_PROT_READ (guest to buf)
 * or DMA_PROT_WRITE. The whole range is checked before a byte moves, so a
 * failed write leaves guest memory untouched.
 */
static int copy(const struct dma_map *dm, uint64_t iova, uint8_t *buf, size_t len, int dir)
{
	const struct dma_entry *e;

	if (len && iova > UINT64_MAX - (len - 1))
		return -EFAULT;
	/* Most accesses (a WQE, a CQE, a descriptor) lie in one mapping: one lookup, one copy. */
	e = len ? find(dm, iova) : NULL;
	if (e && e->host && (e->prot & dir) && len <= e->size - (iova - e->iova)) {
		void *d = dir == DMA_PROT_READ ? (void *)buf : e->host + (iova - e->iova);
		const void *s = dir == DMA_PROT_READ ? e->host + (iova - e->iova) : buf;

		if (e->nofault) {
			memmove(d, s, len);
			return 0;
		}
		return guarded_memcpy(d, s, len) ? -EFAULT : 0;
	}
	/* Else every piece is checked before any byte moves, then copied. */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t a = iova;
		uint8_t *p = buf;
		size_t left = len;

		while (left > 0) {
			uint64_t off, chunk;

			e = find(dm, a);
			if (e == NULL || e->host == NULL || !(e->prot & dir))
				return -EFAULT;
			off = a - e->iova;
			chunk = e->size - off;
			if (chunk > left)
				chunk = left;
			if (pass == 1 && guarded_memcpy(dir == DMA_PROT_READ ? (void *)p : e->host + off,
							dir == DMA_PROT_READ ? e->host + off : p, chunk))
				return -EFAULT; /* the client took the memory away under us */
			p += chunk;
			left -= chunk;
			a += chunk;
		}
	}
	return 0;
}

int dma_map_copy(const struct dma_map *dm, uint64_t dst_iova, uint64_t src_iova, size_t len)
{
	const struct dma_entry *se, *de;
	void *src = resolve(dm, src_iova, len, DMA_PROT_READ, &se);
	void *dst = src ? resolve(dm, dst_iova, len, DMA_PROT_WRITE, &de) : NULL;

	if (dst == NULL)
		return -EFAULT;
	if (se->nofault && de->nofault) {
		memmove(dst, src, len);
		return 0;
	}
	return guarded_memcpy(dst, src, len);
}

int dma_map_read(const struct dma_map *dm, uint64_t iova, void *buf, size_t len)
{
	return copy(dm, iova, buf, len, DMA_PROT_READ);
}

int dma_map_write(const struct dma_map *dm, uint64_t iova, const void *buf, size_t len)
{
	return copy(dm, iova, (uint8_t *)buf, len, DMA_PROT_WRITE);
}
