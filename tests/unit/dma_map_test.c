/* dma-map-unit: the guest-memory table: overlap rules, exact unmaps, bounded translation and copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "vfio_user/dma_map.h"

static uint8_t a[0x3000], b[0x2000];

static void test_add_overlap(void **state)
{
	struct dma_map *dm = dma_map_new(4);

	(void)state;
	assert_int_equal(dma_map_add(dm, 0x10000, 0x3000, a, DMA_PROT_READ | DMA_PROT_WRITE), 0);
	assert_int_equal(dma_map_add(dm, 0x10000, 0x1000, b, DMA_PROT_READ), -EEXIST);
	assert_int_equal(dma_map_add(dm, 0x12fff, 0x1000, b, DMA_PROT_READ), -EEXIST);
	assert_int_equal(dma_map_add(dm, 0x0f000, 0x1001, b, DMA_PROT_READ), -EEXIST);
	assert_int_equal(dma_map_add(dm, 0x00000, 0x100000, b, DMA_PROT_READ), -EEXIST);
	assert_int_equal(dma_map_add(dm, 0x0f000, 0x1000, b, DMA_PROT_READ), 0);   /* touching below */
	assert_int_equal(dma_map_add(dm, 0x13000, 0x2000, b, DMA_PROT_READ), 0);   /* touching above */
	assert_int_equal(dma_map_add(dm, 0x20000, 0, b, DMA_PROT_READ), -EINVAL);
	assert_int_equal(dma_map_add(dm, UINT64_MAX, 2, b, DMA_PROT_READ), -EINVAL);
	assert_int_equal(dma_map_add(dm, 0x20000, 0x1000, b, 0x4), -EINVAL);
	assert_int_equal(dma_map_add(dm, UINT64_MAX - 0xfff, 0x1000, NULL, DMA_PROT_READ), 0); /* the very top */
	assert_int_equal(dma_map_add(dm, 0x40000, 0x1000, NULL, DMA_PROT_READ), -ENOSPC);
	assert_int_equal(dma_map_count(dm), 4);
	dma_map_free(dm);
}

static void test_remove_exact(void **state)
{
	struct dma_map *dm = dma_map_new(8);
	void *host = NULL;

	(void)state;
	assert_int_equal(dma_map_add(dm, 0x10000, 0x3000, a, DMA_PROT_READ), 0);
	assert_int_equal(dma_map_remove(dm, 0x10000, 0x1000, &host), -ENOENT);
	assert_int_equal(dma_map_remove(dm, 0x11000, 0x2000, &host), -ENOENT);
	assert_int_equal(dma_map_remove(dm, 0x10000, 0x3000, &host), 0);
	assert_ptr_equal(host, a);
	assert_int_equal(dma_map_remove(dm, 0x10000, 0x3000, &host), -ENOENT);
	assert_int_equal(dma_map_count(dm), 0);
	dma_map_free(dm);
}

static int released;
static void count_release(void *host, uint64_t size, void *arg)
{
	(void)host; (void)size; (void)arg;
	released++;
}

static void test_translate_and_copy(void **state)
{
	struct dma_map *dm = dma_map_new(8);
	uint8_t buf[0x1800], out[0x1800];

	(void)state;
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)i;
	memset(b, 0xee, sizeof(b));
	/* a at 0x10000..0x13000 (RW), b right after it (read-only), a hole, a mapping without memory. */
	assert_int_equal(dma_map_add(dm, 0x10000, sizeof(a), a, DMA_PROT_READ | DMA_PROT_WRITE), 0);
	assert_int_equal(dma_map_add(dm, 0x13000, sizeof(b), b, DMA_PROT_READ), 0);
	assert_int_equal(dma_map_add(dm, 0x20000, 0x1000, NULL, DMA_PROT_READ | DMA_PROT_WRITE), 0);

	assert_ptr_equal(dma_map_translate(dm, 0x10010, 16, DMA_PROT_READ), a + 0x10);
	assert_ptr_equal(dma_map_translate(dm, 0x12ff0, 16, DMA_PROT_WRITE), a + 0x2ff0);
	assert_null(dma_map_translate(dm, 0x12ff0, 17, DMA_PROT_READ));  /* spans two mappings */
	assert_null(dma_map_translate(dm, 0x13000, 16, DMA_PROT_WRITE)); /* read-only */
	assert_null(dma_map_translate(dm, 0x15000, 1, DMA_PROT_READ));   /* hole */
	assert_null(dma_map_translate(dm, 0x20000, 1, DMA_PROT_READ));   /* no memory */
	assert_null(dma_map_translate(dm, 0x10000, 0, DMA_PROT_READ));
	assert_null(dma_map_translate(dm, 0x10000, UINT64_MAX, DMA_PROT_READ));
	assert_null(dma_map_translate(dm, 0xffff, 2, DMA_PROT_READ));
	/* Asked for memory that cannot fault: none of these was added as such. */
	assert_null(dma_map_translate(dm, 0x10010, 16, DMA_PROT_READ | DMA_MAP_NOFAULT));
	{
		static uint8_t c[0x1000];

		assert_int_equal(dma_map_add(dm, 0x30000, sizeof(c), c, DMA_PROT_READ | DMA_MAP_NOFAULT), 0);
		assert_ptr_equal(dma_map_translate(dm, 0x30010, 16, DMA_PROT_READ | DMA_MAP_NOFAULT), c + 0x10);
		assert_ptr_equal(dma_map_translate(dm, 0x30010, 16, DMA_PROT_READ), c + 0x10);
		assert_null(dma_map_translate(dm, 0x30010, 16, DMA_PROT_WRITE | DMA_MAP_NOFAULT)); /* read-only */
		assert_null(dma_map_translate(dm, 0x30ff0, 17, DMA_PROT_READ | DMA_MAP_NOFAULT));  /* past its end */
		assert_int_equal(dma_map_remove(dm, 0x30000, sizeof(c), NULL), 0);
	}

	/* Copies may cross adjacent mappings. */
	assert_int_equal(dma_map_read(dm, 0x12800, out, 0x1000), 0);
	assert_memory_equal(out, a + 0x2800, 0x800);
	assert_int_equal(out[0x800], 0xee);
	assert_int_equal(out[0xfff], 0xee);
	/* A write that would touch the read-only part changes nothing at all. */
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(dma_map_write(dm, 0x12800, buf, 0x1000), -EFAULT);
	assert_int_equal(a[0x2800], (uint8_t)0x2800);
	assert_int_equal(dma_map_write(dm, 0x12800, buf, 0x800), 0);
	assert_int_equal(a[0x2800], 0x55);
	assert_int_equal(a[0x2fff], 0x55);
	/* Holes, missing memory, wrap-around. */
	assert_int_equal(dma_map_read(dm, 0x14800, out, 0x1000), -EFAULT);
	assert_int_equal(dma_map_read(dm, 0x20000, out, 1), -EFAULT);
	assert_int_equal(dma_map_read(dm, UINT64_MAX, out, 2), -EFAULT);
	assert_int_equal(dma_map_read(dm, 0x10000, out, 0), 0);

	dma_map_clear(dm, count_release, NULL);
	assert_int_equal(released, 3);
	assert_int_equal(dma_map_count(dm), 0);
	assert_int_equal(dma_map_read(dm, 0x10000, out, 1), -EFAULT);
	dma_map_free(dm);
}

static void test_many_sorted(void **state)
{
	struct dma_map *dm = dma_map_new(1024);
	static uint8_t pages[1024][16];

	(void)state;
	/* Insert out of order; every lookup lands in its own mapping. */
	for (uint32_t i = 0; i < 1024; i++) {
		uint32_t k = (i * 389) % 1024;

		assert_int_equal(dma_map_add(dm, (uint64_t)k * 0x1000, 16, pages[k], DMA_PROT_READ), 0);
	}
	for (uint32_t k = 0; k < 1024; k++) {
		assert_ptr_equal(dma_map_translate(dm, (uint64_t)k * 0x1000 + 3, 4, DMA_PROT_READ), pages[k] + 3);
		assert_null(dma_map_translate(dm, (uint64_t)k * 0x1000 + 16, 1, DMA_PROT_READ));
	}
	dma_map_free(dm);
}

/* Guest to guest: within one mapping each, overlapping ranges, and every refusal moves nothing. */
static void guest_to_guest_copy(int flags)
{
	struct dma_map *dm = dma_map_new(8);
	static uint8_t ga[0x3000], gb[0x1000];
	uint8_t want[0x3000];

	for (size_t i = 0; i < sizeof(ga); i++)
		ga[i] = (uint8_t)(i * 7);
	memset(gb, 0x55, sizeof(gb));
	assert_int_equal(dma_map_add(dm, 0x10000, sizeof(ga), ga, DMA_PROT_READ | DMA_PROT_WRITE | flags), 0);
	assert_int_equal(dma_map_add(dm, 0x13000, sizeof(gb), gb, DMA_PROT_READ | flags), 0);
	memcpy(want, ga, sizeof(ga));
	/* Overlapping, forwards: the bytes as they were before the copy. */
	memmove(want + 0x100, want, 0x800);
	assert_int_equal(dma_map_copy(dm, 0x10100, 0x10000, 0x800), 0);
	assert_memory_equal(ga, want, sizeof(ga));
	/* From the read-only mapping into the writable one. */
	memcpy(want + 0x2000, gb, 0x800);
	assert_int_equal(dma_map_copy(dm, 0x12000, 0x13000, 0x800), 0);
	assert_memory_equal(ga, want, sizeof(ga));
	/* Refused: ga read-only destination, ga source spanning two mappings, unmapped, wrapping. */
	assert_int_equal(dma_map_copy(dm, 0x13000, 0x10000, 16), -EFAULT);
	assert_int_equal(dma_map_copy(dm, 0x10000, 0x12ff0, 0x20), -EFAULT);
	assert_int_equal(dma_map_copy(dm, 0x10000, 0x30000, 16), -EFAULT);
	assert_int_equal(dma_map_copy(dm, 0x10000, UINT64_MAX - 4, 16), -EFAULT);
	assert_memory_equal(ga, want, sizeof(ga));
	for (size_t i = 0; i < sizeof(gb); i++)
		assert_int_equal(gb[i], 0x55);
	/* Reads and writes inside one mapping (the path a WQE or CQE takes), and one refused. */
	uint8_t out[64], in[64];
	memset(in, 0xa5, sizeof(in));
	assert_int_equal(dma_map_read(dm, 0x10040, out, sizeof(out)), 0);
	assert_memory_equal(out, ga + 0x40, sizeof(out));
	assert_int_equal(dma_map_write(dm, 0x10040, in, sizeof(in)), 0);
	assert_memory_equal(ga + 0x40, in, sizeof(in));
	assert_int_equal(dma_map_write(dm, 0x13000, in, sizeof(in)), -EFAULT);
	assert_int_equal(gb[0], 0x55);
	dma_map_free(dm);
}

/* The same with the guard (any file) and without it (a file sealed against shrinking): the same bytes, the same refusals. */
static void test_guest_to_guest_copy(void **state)
{
	(void)state;
	guest_to_guest_copy(0);
	guest_to_guest_copy(DMA_MAP_NOFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_overlap),
		cmocka_unit_test(test_remove_exact),
		cmocka_unit_test(test_translate_and_copy),
		cmocka_unit_test(test_many_sorted),
		cmocka_unit_test(test_guest_to_guest_copy),
	};

	return cmocka_run_group_tests_name("dma-map-unit", tests, NULL, NULL);
}
