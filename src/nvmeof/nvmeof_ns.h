/*
 * The NVMe-oF namespace's backing store: anonymous memory, or a file= image.
 *
 * Image rules (applied by nvmeof_ns_open): a missing or empty file is created
 * at the configured size; an existing image is never shrunk: a larger size=
 * grows it, a smaller one is refused, and without size= the image keeps its
 * own size, which must be a whole number of blocks. The image is locked
 * (flock) so two servers never share it. An image created here is synced
 * with its directory before it is served, so it survives a crash of the host
 * (fdatasync of the file never covers its name).
 *
 * File-backed namespaces go through pread/pwrite rather than a mapping, so a
 * full disk is an error status, never a SIGBUS. They have a volatile write
 * cache (the page cache); nvmeof_ns_flush() writes it back. Once a writeback
 * has failed, every later one reports that failure, although fdatasync may
 * succeed again: the kernel can drop the pages it could not write and forget
 * the error, so nothing written before can be promised durable any more.
 *
 * Functions returning int give 0 or -errno.
 */
#ifndef ERNIC_NVMEOF_NVMEOF_NS_H
#define ERNIC_NVMEOF_NVMEOF_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/backend_opts.h"

struct nvmeof_ns {
	uint64_t size;      /* bytes, a whole number of blocks */
	uint32_t bs;        /* logical block size */
	uint8_t *ram;       /* RAM namespace: the whole namespace; NULL when file-backed */
	int fd;             /* file-backed: the image; -1 for RAM */
	const char *path;   /* file-backed: the image's path (borrowed from the config) */
	int wb_err;         /* file-backed: the first failed writeback (-errno), for good; 0 if none */
};

/*
 * Create the namespace the config describes. Returns 0, or -1 with a one-line
 * reason in err, e.g. "nvmeof backend: /x.img is 1073741824 bytes; size=67108864
 * would truncate it".
 */
int nvmeof_ns_open(struct nvmeof_ns *ns, const struct nvmeof_config *cfg, char *err, size_t errlen);

/* True when writes may sit in a volatile cache (file-backed namespaces). */
bool nvmeof_ns_volatile_cache(const struct nvmeof_ns *ns);

/* Copy len bytes at byte offset off. The range must lie inside the namespace (-ERANGE). */
int nvmeof_ns_read(struct nvmeof_ns *ns, uint64_t off, void *buf, size_t len);
/* With fua, the data has reached the image's storage when this returns 0 (see wb_err). */
int nvmeof_ns_write(struct nvmeof_ns *ns, uint64_t off, const void *buf, size_t len, bool fua);

/*
 * Make [off, off + len) read as zeroes. With deallocate the space is given
 * back (a punched hole, or pages returned to the kernel for RAM); otherwise
 * it stays allocated where the backing can tell the difference.
 */
int nvmeof_ns_zero(struct nvmeof_ns *ns, uint64_t off, uint64_t len, bool deallocate);

/* Write back everything written so far (a no-op for RAM); wb_err once any writeback failed. */
int nvmeof_ns_flush(struct nvmeof_ns *ns);

/* Flush (logging a failure), then release everything. Safe on a zeroed struct with fd -1. */
void nvmeof_ns_close(struct nvmeof_ns *ns);

#endif
