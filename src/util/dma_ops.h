/*
 * How a backend (the S3 store, the NVMe-oF target) reaches guest memory: by
 * memory key, as a remote peer would. The data path implements these with
 * the device's memory-region table and the vfio-user DMA map; unit tests use
 * a fake. Each call resolves the key, checks that [addr, addr + len) lies in
 * the registration and that it allows the access, and copies all or nothing.
 *
 * Errors: -ENOKEY no such key (key 0, the driver's reserved DMA key, is
 * always refused), -EACCES the key does not allow this direction, -EFAULT the
 * range is outside the registration or guest memory.
 */
#ifndef ERNIC_UTIL_DMA_OPS_H
#define ERNIC_UTIL_DMA_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dma_ops {
	void *ctx;
	/* RDMA READ: guest memory named by (key, addr) into dst. */
	int (*read)(void *ctx, uint32_t key, uint64_t addr, void *dst, size_t len);
	/* RDMA WRITE: src into guest memory named by (key, addr). */
	int (*write)(void *ctx, uint32_t key, uint64_t addr, const void *src, size_t len);
	/*
	 * Optional (NULL: only the transfers find out): what read (write false)
	 * or write of [addr, addr + len) under key would answer now, moving
	 * nothing: the S3 store decides before a transfer whether to decline it.
	 */
	int (*check)(void *ctx, uint32_t key, uint64_t addr, size_t len, bool write);
};

#endif
