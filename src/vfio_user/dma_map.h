/*
 * Guest memory as the device sees it: the table of DMA mappings a vfio-user
 * client has made, and bounded access through it.
 *
 * This is the only way the rest of the program touches guest memory. An I/O
 * virtual address range is usable only while it is mapped, and only in the
 * directions the mapping allows; nothing outside a mapping is ever read or
 * written. A mapping may have no host memory (the client sent no file
 * descriptor); access to it fails like access to unmapped space.
 *
 * A client may still shrink the file behind a mapping later (unless it
 * sealed it: DMA_MAP_NOFAULT); a copy that then hits a missing page fails
 * with -EFAULT (a SIGBUS guard) instead of ending the process, and may have
 * moved part of its bytes.
 *
 * Functions returning int give 0 or -errno.
 */
#ifndef ERNIC_VFIO_USER_DMA_MAP_H
#define ERNIC_VFIO_USER_DMA_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DMA_PROT_READ  0x1 /* the device may read guest memory here */
#define DMA_PROT_WRITE 0x2 /* the device may write guest memory here */
/*
 * Flag for dma_map_add: the file behind the mapping is sealed against
 * shrinking (F_SEAL_SHRINK, as QEMU's memory-backend-memfd does by default)
 * and covers the whole mapping, so no access through it can fault: copies
 * skip the SIGBUS guard (a sigsetjmp per copy, a tenth of a small WQE's cost).
 */
#define DMA_MAP_NOFAULT 0x100

struct dma_map;

struct dma_map *dma_map_new(uint32_t max_entries);
void dma_map_free(struct dma_map *dm);

/*
 * Add [iova, iova + size) backed by host (may be NULL); prot is DMA_PROT_*,
 * with DMA_MAP_NOFAULT if that holds. size > 0 and the range must not wrap. -EEXIST if it overlaps a mapping, -ENOSPC when the table is full.
 */
int dma_map_add(struct dma_map *dm, uint64_t iova, uint64_t size, void *host, int prot);

/* Remove the mapping that is exactly [iova, iova + size); its host pointer goes to *host. -ENOENT otherwise. */
int dma_map_remove(struct dma_map *dm, uint64_t iova, uint64_t size, void **host);

/* Remove every mapping, calling release(host, size, arg) for each one (host may be NULL). */
void dma_map_clear(struct dma_map *dm, void (*release)(void *host, uint64_t size, void *arg), void *arg);

uint32_t dma_map_count(const struct dma_map *dm);

/*
 * A host pointer for [iova, iova + len) when the whole range lies inside one
 * mapping with host memory that allows prot; NULL otherwise. len 0 is NULL.
 * The pointer is valid until the mapping is removed. With DMA_MAP_NOFAULT in
 * prot, only a mapping added with it answers: one that no access can fault,
 * so the caller may touch the bytes (or hand them to a system call) without
 * the SIGBUS guard.
 */
void *dma_map_translate(const struct dma_map *dm, uint64_t iova, uint64_t len, int prot);

/*
 * Guest to guest: copy len bytes from src_iova to dst_iova, each range inside
 * one mapping (else -EFAULT and nothing moves), under the same SIGBUS guard as
 * the other copies. The ranges may overlap.
 */
int dma_map_copy(const struct dma_map *dm, uint64_t dst_iova, uint64_t src_iova, size_t len);

/* Copy guest memory out of / into the guest; the range may span adjacent mappings. -EFAULT if any byte is not accessible. */
int dma_map_read(const struct dma_map *dm, uint64_t iova, void *buf, size_t len);
int dma_map_write(const struct dma_map *dm, uint64_t iova, const void *buf, size_t len);

#endif
