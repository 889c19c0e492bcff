/* nvmeof-ns-unit: namespace backing (RAM and file= images) and the image rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nvmeof/nvmeof_ns.h"
#include "util/backend_opts.h"

static char dir[64];
static char err[512];

/* ---- seam: fsync is interposed to see which files and directories were made durable ---- */

struct synced {
	dev_t dev;
	ino_t ino;
};
static struct synced fsynced[16];
static unsigned nfsynced;

int fsync(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && nfsynced < sizeof(fsynced) / sizeof(fsynced[0]))
		fsynced[nfsynced++] = (struct synced){ st.st_dev, st.st_ino };
	return (int)syscall(SYS_fsync, fd);
}

/* path was fsynced since the count was reset. */
static bool was_fsynced(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	for (unsigned i = 0; i < nfsynced; i++)
		if (fsynced[i].dev == st.st_dev && fsynced[i].ino == st.st_ino)
			return true;
	return false;
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/nvmeof-ns-unit.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct nvmeof_config config(const char *spec)
{
	struct backend_config b;

	if (backend_config_parse(spec, &b, err, sizeof(err)))
		fail_msg("%s: %s", spec, err);
	return b.nvmeof;
}

/* The configuration of nvmeof:file=PATH followed by opts ("" or ",key=value..."). */
static struct nvmeof_config file_config(const char *path, const char *opts)
{
	char spec[256];

	snprintf(spec, sizeof(spec), "nvmeof:file=%s%s", path, opts);
	return config(spec);
}

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void make_file(const char *path, off_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

static void test_ram(void **state)
{
	struct nvmeof_config c = config("nvmeof:size=1M,bs=4096");
	struct nvmeof_ns ns;
	uint8_t buf[8192], out[8192];

	(void)state;
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(ns.size == 1u << 20);
	assert_int_equal(ns.bs, 4096);
	assert_false(nvmeof_ns_volatile_cache(&ns));
	/* Fresh RAM reads as zeroes. */
	assert_int_equal(nvmeof_ns_read(&ns, 0, out, sizeof(out)), 0);
	memset(buf, 0, sizeof(buf));
	assert_memory_equal(out, buf, sizeof(out));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(nvmeof_ns_write(&ns, (1u << 20) - sizeof(buf), buf, sizeof(buf), false), 0);
	assert_int_equal(nvmeof_ns_read(&ns, (1u << 20) - sizeof(buf), out, sizeof(out)), 0);
	assert_memory_equal(out, buf, sizeof(buf));
	/* Out of range, including offsets that would wrap when added to the length. */
	assert_int_equal(nvmeof_ns_read(&ns, (1u << 20) - 1, out, 2), -ERANGE);
	assert_int_equal(nvmeof_ns_write(&ns, 1u << 20, buf, 1, false), -ERANGE);
	assert_int_equal(nvmeof_ns_read(&ns, UINT64_MAX, out, 2), -ERANGE);
	assert_int_equal(nvmeof_ns_read(&ns, 4096, out, SIZE_MAX), -ERANGE);
	assert_int_equal(nvmeof_ns_read(&ns, 1u << 20, out, 0), 0);
	assert_int_equal(nvmeof_ns_flush(&ns), 0);
	nvmeof_ns_close(&ns);
}

static void test_file_created_at_size(void **state)
{
	char path[128];
	struct nvmeof_config c;
	struct nvmeof_ns ns;

	(void)state;
	snprintf(path, sizeof(path), "%s/new.img", dir);
	c = file_config(path, ",size=3M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(ns.size == 3u << 20);
	assert_true(nvmeof_ns_volatile_cache(&ns));
	assert_int_equal(file_size(path), 3 << 20);
	nvmeof_ns_close(&ns);

	/* A new file without size= gets the default 64 MiB. */
	snprintf(path, sizeof(path), "%s/default.img", dir);
	c = file_config(path, "");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(ns.size == 64u << 20);
	assert_int_equal(file_size(path), 64 << 20);
	nvmeof_ns_close(&ns);

	/* So does an existing empty one. */
	snprintf(path, sizeof(path), "%s/empty.img", dir);
	make_file(path, 0);
	c = file_config(path, ",size=1M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_int_equal(file_size(path), 1 << 20);
	nvmeof_ns_close(&ns);
}

/*
 * An image the server creates survives a crash of the host OS once a Flush
 * completed: its data is written back by fdatasync, but its name is in the
 * directory, which fdatasync of the file does not cover. Creating the image
 * syncs the file and its directory; opening an existing one syncs nothing.
 */
static void test_file_created_durably(void **state)
{
	char path[128];
	struct nvmeof_config c;
	struct nvmeof_ns ns;

	(void)state;
	snprintf(path, sizeof(path), "%s/fresh.img", dir);
	c = file_config(path, ",size=1M");
	nfsynced = 0;
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(was_fsynced(path));
	assert_true(was_fsynced(dir));
	nvmeof_ns_close(&ns);
	nfsynced = 0;
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_int_equal(nfsynced, 0);
	nvmeof_ns_close(&ns);
	/* A relative path: the directory is the working directory. */
	{
		char cwd[256];

		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(dir), 0);
		c = config("nvmeof:file=rel.img,size=1M");
		nfsynced = 0;
		assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
		assert_true(was_fsynced("rel.img"));
		assert_true(was_fsynced("."));
		nvmeof_ns_close(&ns);
		assert_int_equal(chdir(cwd), 0);
	}
}

static void test_file_keeps_grows_refuses(void **state)
{
	char path[128], want[512];
	struct nvmeof_config c;
	struct nvmeof_ns ns;

	(void)state;
	snprintf(path, sizeof(path), "%s/old.img", dir);
	make_file(path, 2 << 20);

	/* Without size=, the image keeps its own size. */
	c = file_config(path, ",bs=4096");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(ns.size == 2u << 20);
	nvmeof_ns_close(&ns);
	assert_int_equal(file_size(path), 2 << 20);

	/* The same size is fine, a larger one grows it. */
	c = file_config(path, ",size=2M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	nvmeof_ns_close(&ns);
	c = file_config(path, ",size=5M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(ns.size == 5u << 20);
	nvmeof_ns_close(&ns);
	assert_int_equal(file_size(path), 5 << 20);

	/* A smaller one is refused and the image is untouched. */
	c = file_config(path, ",size=1M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "nvmeof backend: %s is 5242880 bytes; size=1048576 would truncate it", path);
	assert_string_equal(err, want);
	assert_int_equal(file_size(path), 5 << 20);
}

static void test_file_partial_block(void **state)
{
	char path[128], want[512];
	struct nvmeof_config c;
	struct nvmeof_ns ns;

	(void)state;
	snprintf(path, sizeof(path), "%s/odd.img", dir);
	make_file(path, 4096 + 512);
	c = file_config(path, ",bs=4096");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "nvmeof backend: %s is 4608 bytes, not a whole number of 4096-byte blocks", path);
	assert_string_equal(err, want);
	/* With 512-byte blocks the same image is fine. */
	c = file_config(path, "");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_true(ns.size == 4608);
	nvmeof_ns_close(&ns);
}

static void test_file_not_regular_and_locked(void **state)
{
	char path[128], want[512];
	struct nvmeof_config c;
	struct nvmeof_ns ns, ns2;

	(void)state;
	c = file_config(dir, "");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nvmeof backend: cannot open"));

	c = config("nvmeof:file=/dev/null");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "nvmeof backend: /dev/null is not a regular file");

	snprintf(path, sizeof(path), "%s/nodir/x.img", dir);
	c = file_config(path, "");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "nvmeof backend: cannot open %s: No such file or directory", path);
	assert_string_equal(err, want);

	/* Two users of one image: the second is refused. */
	snprintf(path, sizeof(path), "%s/shared.img", dir);
	c = file_config(path, ",size=1M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	assert_int_equal(nvmeof_ns_open(&ns2, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "nvmeof backend: %s is in use by another process", path);
	assert_string_equal(err, want);
	nvmeof_ns_close(&ns);
	assert_int_equal(nvmeof_ns_open(&ns2, &c, err, sizeof(err)), 0);
	nvmeof_ns_close(&ns2);
}

static void test_file_data_persists(void **state)
{
	char path[128];
	struct nvmeof_config c;
	struct nvmeof_ns ns;
	uint8_t buf[4096], out[4096];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/data.img", dir);
	c = file_config(path, ",size=1M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i ^ 0x5a);
	assert_int_equal(nvmeof_ns_write(&ns, 8192, buf, sizeof(buf), true), 0);
	assert_int_equal(nvmeof_ns_write(&ns, 0, buf, 512, false), 0);
	assert_int_equal(nvmeof_ns_flush(&ns), 0);
	assert_int_equal(nvmeof_ns_write(&ns, (1u << 20) - 512, buf, 1024, false), -ERANGE);
	assert_int_equal(nvmeof_ns_read(&ns, 8192, out, sizeof(out)), 0);
	assert_memory_equal(out, buf, sizeof(buf));
	nvmeof_ns_close(&ns);

	/* The bytes are in the image itself, where a restarted server finds them. */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, out, sizeof(out), 8192), sizeof(out));
	assert_memory_equal(out, buf, sizeof(buf));
	assert_int_equal(pread(fd, out, 512, 0), 512);
	assert_memory_equal(out, buf, 512);
	close(fd);

	c = file_config(path, "");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	memset(out, 0, sizeof(out));
	assert_int_equal(nvmeof_ns_read(&ns, 8192, out, sizeof(out)), 0);
	assert_memory_equal(out, buf, sizeof(buf));
	nvmeof_ns_close(&ns);
}

/* Zeroing: exact edges, both backings, with and without deallocation, range checks. */
static void check_zero(struct nvmeof_ns *ns, uint64_t off, uint64_t len, bool dealloc)
{
	static uint8_t pat[256 << 10], out[256 << 10];

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(nvmeof_ns_write(ns, 0, pat, sizeof(pat), false), 0);
	assert_int_equal(nvmeof_ns_zero(ns, off, len, dealloc), 0);
	assert_int_equal(nvmeof_ns_read(ns, 0, out, sizeof(out)), 0);
	for (size_t i = 0; i < sizeof(out); i++)
		if (out[i] != (i >= off && i < off + len ? 0 : pat[i]))
			fail_msg("byte %zu after zeroing [%llu, +%llu)%s: %u", i, (unsigned long long)off,
				 (unsigned long long)len, dealloc ? " with deallocation" : "", out[i]);
}

static void test_zero(void **state)
{
	char path[128];
	struct nvmeof_config c;
	struct nvmeof_ns ns;

	(void)state;
	c = config("nvmeof:size=1M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	check_zero(&ns, 512, 512, false);
	check_zero(&ns, 1536, 200 * 1024, true);  /* whole pages in the middle go back */
	check_zero(&ns, 8192, 8192, true);        /* page aligned both ends */
	assert_int_equal(nvmeof_ns_zero(&ns, (1u << 20) - 512, 1024, true), -ERANGE);
	assert_int_equal(nvmeof_ns_zero(&ns, UINT64_MAX, 2, false), -ERANGE);
	assert_int_equal(nvmeof_ns_zero(&ns, 1u << 20, 0, false), 0);
	nvmeof_ns_close(&ns);

	snprintf(path, sizeof(path), "%s/zero.img", dir);
	c = file_config(path, ",size=1M");
	assert_int_equal(nvmeof_ns_open(&ns, &c, err, sizeof(err)), 0);
	check_zero(&ns, 512, 512, false);
	check_zero(&ns, 4096, 64 * 1024, true);
	check_zero(&ns, 1000, 70000, true);
	assert_int_equal(file_size(path), 1 << 20); /* holes never change the size */
	assert_int_equal(nvmeof_ns_zero(&ns, (1u << 20) - 512, 1024, false), -ERANGE);
	nvmeof_ns_close(&ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ram),
		cmocka_unit_test(test_file_created_at_size),
		cmocka_unit_test(test_file_created_durably),
		cmocka_unit_test(test_file_keeps_grows_refuses),
		cmocka_unit_test(test_file_partial_block),
		cmocka_unit_test(test_file_not_regular_and_locked),
		cmocka_unit_test(test_file_data_persists),
		cmocka_unit_test(test_zero),
	};

	return cmocka_run_group_tests_name("nvmeof-ns-unit", tests, setup, teardown);
}
