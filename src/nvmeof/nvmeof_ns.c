/* Namespace backing store; see nvmeof_ns.h for the image rules. */
#include "nvmeof/nvmeof_ns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

static int open_ram(struct nvmeof_ns *ns, char *err, size_t errlen)
{
	void *p;

	if (ns->size > SIZE_MAX)
		return err_set(err, errlen, "nvmeof backend: cannot allocate %llu bytes",
			    (unsigned long long)ns->size);
	/* Pages are only committed when the guest writes them. */
	p = mmap(NULL, (size_t)ns->size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return err_set(err, errlen, "nvmeof backend: cannot allocate %llu bytes: %s",
			    (unsigned long long)ns->size, strerror(errno));
	ns->ram = p;
	return 0;
}

/* Settle the image's size by the rules in nvmeof_ns.h. */
static int size_image(struct nvmeof_ns *ns, const struct nvmeof_config *cfg, uint64_t cur,
		      char *err, size_t errlen)
{
	uint64_t want = cfg->size;

	if (cur == 0 || (cfg->size_set && want > cur)) {
		if (want > (uint64_t)INT64_MAX)
			return err_set(err, errlen, "nvmeof backend: size=%llu is too large for a file",
				    (unsigned long long)want);
		if (ftruncate(ns->fd, (off_t)want) < 0)
			return err_set(err, errlen, "nvmeof backend: cannot size %s to %llu bytes: %s",
				    cfg->file, (unsigned long long)want, strerror(errno));
		if (cur != 0)
			LOG_INFO("nvmeof backend: grew %s from %llu to %llu bytes", cfg->file,
				 (unsigned long long)cur, (unsigned long long)want);
		ns->size = want;
		return 0;
	}
	if (cfg->size_set && want < cur)
		return err_set(err, errlen, "nvmeof backend: %s is %llu bytes; size=%llu would truncate it",
			    cfg->file, (unsigned long long)cur, (unsigned long long)want);
	if (cur % cfg->bs != 0)
		return err_set(err, errlen, "nvmeof backend: %s is %llu bytes, not a whole number of %u-byte blocks",
			    cfg->file, (unsigned long long)cur, cfg->bs);
	ns->size = cur;
	return 0;
}

/*
 * A new image's inode and its name in the directory reach storage now:
 * fdatasync of the file (Flush, FUA) covers its data and size, never the
 * directory entry, without which a crash of the host would lose the image and
 * everything acknowledged in it. A directory that cannot be synced (EINVAL:
 * the file system has nothing to do) is no error.
 */
static int sync_created(const struct nvmeof_ns *ns, const char *file, char *err, size_t errlen)
{
	char parent[NVMEOF_PATH_MAX];
	const char *slash = strrchr(file, '/');
	int dfd, rc = 0;

	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == file)
		snprintf(parent, sizeof(parent), "/");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - file), file);
	if (fsync(ns->fd) < 0)
		return err_set(err, errlen, "nvmeof backend: cannot sync %s: %s", file, strerror(errno));
	dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_set(err, errlen, "nvmeof backend: cannot open %s to sync it: %s", parent, strerror(errno));
	if (fsync(dfd) < 0 && errno != EINVAL)
		rc = err_set(err, errlen, "nvmeof backend: cannot sync %s: %s", parent, strerror(errno));
	close(dfd);
	return rc;
}

static int open_file(struct nvmeof_ns *ns, const struct nvmeof_config *cfg, char *err, size_t errlen)
{
	struct stat st;
	bool created = true;

	/* Created here (and then synced whole), or opened as it is. */
	ns->fd = open(cfg->file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (ns->fd < 0 && errno == EEXIST) {
		created = false;
		ns->fd = open(cfg->file, O_RDWR | O_CLOEXEC);
	}
	if (ns->fd < 0)
		return err_set(err, errlen, "nvmeof backend: cannot open %s: %s", cfg->file, strerror(errno));
	if (fstat(ns->fd, &st) < 0) {
		err_set(err, errlen, "nvmeof backend: cannot stat %s: %s", cfg->file, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(err, errlen, "nvmeof backend: %s is not a regular file", cfg->file);
		goto out_close;
	}
	if (flock(ns->fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			err_set(err, errlen, "nvmeof backend: %s is in use by another process", cfg->file);
		else
			err_set(err, errlen, "nvmeof backend: cannot lock %s: %s", cfg->file, strerror(errno));
		goto out_close;
	}
	if (size_image(ns, cfg, (uint64_t)st.st_size, err, errlen))
		goto out_close;
	if (created && sync_created(ns, cfg->file, err, errlen))
		goto out_close;
	ns->path = cfg->file;
	return 0;

out_close:
	close(ns->fd);
	ns->fd = -1;
	return -1;
}

int nvmeof_ns_open(struct nvmeof_ns *ns, const struct nvmeof_config *cfg, char *err, size_t errlen)
{
	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
	ns->bs = cfg->bs;
	ns->size = cfg->size;
	if (cfg->file[0] == '\0')
		return open_ram(ns, err, errlen);
	return open_file(ns, cfg, err, errlen);
}

bool nvmeof_ns_volatile_cache(const struct nvmeof_ns *ns)
{
	return ns->fd >= 0;
}

static bool in_range(const struct nvmeof_ns *ns, uint64_t off, size_t len)
{
	return off <= ns->size && len <= ns->size - off;
}

int nvmeof_ns_read(struct nvmeof_ns *ns, uint64_t off, void *buf, size_t len)
{
	uint8_t *dst = buf;

	if (!in_range(ns, off, len))
		return -ERANGE;
	if (ns->ram) {
		memcpy(buf, ns->ram + off, len);
		return 0;
	}
	while (len > 0) {
		ssize_t n = pread(ns->fd, dst, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) { /* the image shrank under us: what is gone reads as zeroes */
			memset(dst, 0, len);
			return 0;
		}
		dst += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int nvmeof_ns_write(struct nvmeof_ns *ns, uint64_t off, const void *buf, size_t len, bool fua)
{
	const uint8_t *src = buf;

	if (!in_range(ns, off, len))
		return -ERANGE;
	if (ns->ram) {
		memcpy(ns->ram + off, buf, len);
		return 0;
	}
	while (len > 0) {
		ssize_t n = pwrite(ns->fd, src, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		src += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return fua ? nvmeof_ns_flush(ns) : 0;
}

/* RAM: zero [off, off + len); whole pages go back to the kernel and read as zeroes again. */
static void zero_ram(struct nvmeof_ns *ns, uint64_t off, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)(ns->ram + off), end = start + len;
	uintptr_t a = (start + pg - 1) & ~(pg - 1), b = end & ~(pg - 1);

	if (a < b && madvise((void *)a, b - a, MADV_DONTNEED) == 0) {
		memset((void *)start, 0, a - start);
		memset((void *)b, 0, end - b);
		return;
	}
	memset(ns->ram + off, 0, len);
}

/* File: write zeroes the slow way, for file systems without fallocate modes. */
static int zero_file_by_writes(struct nvmeof_ns *ns, uint64_t off, uint64_t len)
{
	static const uint8_t zeroes[65536];

	while (len > 0) {
		size_t n = len < sizeof(zeroes) ? (size_t)len : sizeof(zeroes);
		int rc = nvmeof_ns_write(ns, off, zeroes, n, false);

		if (rc)
			return rc;
		off += n;
		len -= n;
	}
	return 0;
}

int nvmeof_ns_zero(struct nvmeof_ns *ns, uint64_t off, uint64_t len, bool deallocate)
{
	int mode;

	if (!(off <= ns->size && len <= ns->size - off))
		return -ERANGE;
	if (len == 0)
		return 0;
	if (ns->ram) {
		zero_ram(ns, off, (size_t)len);
		return 0;
	}
	/* A punched hole reads as zeroes and gives the space back; ZERO_RANGE keeps it allocated. */
	mode = deallocate ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
	if (fallocate(ns->fd, mode, (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
		return -errno;
	return zero_file_by_writes(ns, off, len);
}

int nvmeof_ns_flush(struct nvmeof_ns *ns)
{
	if (ns->fd < 0)
		return 0;
	/* Still attempted after a failure (it may write back more), but the failure stands. */
	if (fdatasync(ns->fd) < 0 && ns->wb_err == 0) {
		ns->wb_err = -errno;
		LOG_ERR("nvmeof backend: writeback of %s failed (%s): from now on every Flush and FUA write fails",
			ns->path, strerror(-ns->wb_err));
	}
	return ns->wb_err;
}

void nvmeof_ns_close(struct nvmeof_ns *ns)
{
	if (ns->fd >= 0) {
		int rc = nvmeof_ns_flush(ns);

		if (rc)
			LOG_ERR("nvmeof backend: cannot write back %s: %s", ns->path, strerror(-rc));
		else
			LOG_INFO("nvmeof backend: %s written back", ns->path);
		close(ns->fd);
		ns->fd = -1;
	}
	if (ns->ram) {
		munmap(ns->ram, (size_t)ns->size);
		ns->ram = NULL;
	}
}
