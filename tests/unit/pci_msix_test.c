/*
 * pci-msix-unit: MSI-X raises gathered per batch of the event loop (pci_dev_set_loop), without a
 * vfio-user server. With no server a vector's message cannot be delivered, so sending it leaves
 * it pending in the PBA: the PBA bit shows whether a raise has been sent yet or still waits for
 * the batch's end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pci/pci_dev.h"
#include "util/evloop.h"

#define VECTORS 4

static const struct pci_function fn = {
	.vendor_id = 0x1dd8,
	.device_id = 0x1002,
	.class_code = 0x020000,
	.bars = { [0] = { .size = 0x4000 } },
	.msix_vectors = VECTORS,
	.msix_bar = 0,
	.msix_table_offset = 0x2000,
	.msix_pba_offset = 0x3000,
};

static void nothing(void *arg)
{
	(void)arg;
}

static unsigned pending(struct pci_dev *pd)
{
	unsigned bits = 0;

	for (uint32_t v = 0; v < VECTORS; v++)
		bits |= (unsigned)pci_msix_pending(pd, v) << v;
	return bits;
}

/* Without a loop a raise is sent at once; with one, at the end of the batch. */
static void test_gathered_until_batch_end(void **state)
{
	struct pci_dev *pd = pci_dev_new(&fn);
	struct evloop *loop = evloop_new();

	(void)state;
	assert_non_null(pd);
	assert_non_null(loop);
	pci_msix_notify(pd, 0);
	assert_int_equal(pending(pd), 0x1);
	pci_dev_set_loop(pd, loop);
	pci_msix_notify(pd, 1);
	pci_msix_notify(pd, 3);
	pci_msix_notify(pd, 1);
	assert_int_equal(pending(pd), 0x1); /* not yet */
	evloop_run_deferred(loop);
	assert_int_equal(pending(pd), 0xb);
	/* A raise left gathered when the loop is taken away goes then. */
	pci_msix_notify(pd, 2);
	assert_int_equal(pending(pd), 0xb);
	pci_dev_set_loop(pd, NULL);
	assert_int_equal(pending(pd), 0xf);
	evloop_run_deferred(loop); /* the call taken back does nothing */
	pci_dev_free(pd);
	evloop_free(loop);
}

/* The loop's table of deferred calls full: the raise cannot wait for the batch's end and is sent at once. */
static void test_deferred_table_full(void **state)
{
	struct pci_dev *pd = pci_dev_new(&fn);
	struct evloop *loop = evloop_new();
	unsigned filled = 0;

	(void)state;
	pci_dev_set_loop(pd, loop);
	while (evloop_defer(loop, nothing, NULL) == 0 && filled < 1024)
		filled++;
	assert_true(filled > 0 && filled < 1024);
	pci_msix_notify(pd, 2);
	assert_int_equal(pending(pd), 0x4);
	evloop_run_deferred(loop);
	/* Room again: the next raise waits for the batch's end as before. */
	pci_msix_notify(pd, 1);
	assert_int_equal(pending(pd), 0x4);
	evloop_run_deferred(loop);
	assert_int_equal(pending(pd), 0x6);
	pci_dev_free(pd);
	evloop_free(loop);
}

/* A device freed with a raise gathered: its deferred call is taken back (ASan would see a use after free). */
static void test_freed_with_raise_gathered(void **state)
{
	struct pci_dev *pd = pci_dev_new(&fn);
	struct evloop *loop = evloop_new();

	(void)state;
	pci_dev_set_loop(pd, loop);
	pci_msix_notify(pd, 3);
	pci_dev_free(pd);
	evloop_run_deferred(loop);
	evloop_free(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gathered_until_batch_end),
		cmocka_unit_test(test_deferred_table_full),
		cmocka_unit_test(test_freed_with_raise_gathered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
