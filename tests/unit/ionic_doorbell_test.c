/*
 * ionic-doorbell-unit: the device's mapped doorbell pages without a client:
 * which words it looks at (user pages once a queue was created there), that
 * it takes each store once (the same value
 * twice is two doorbells), that resets (power-on, firmware) drop what was
 * stored and not yet taken, that garbage anywhere is a counted guest error,
 * the trapped BAR2 path beside it, and doorbells while bus mastering is off
 * (latched, bounded, run once it is back, dropped by resets).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../lib/xorshift.h"
#include "ionic/ionic_dev.h"
#include "ionic/ionic_priv.h" /* ionic_db_page_used: what creating an RDMA queue on a page does */

#define WORDS_PER_PAGE 512
#define NWORDS (IONIC_BAR2_SIZE / 8)

static uint64_t pages[NWORDS];
static bool mapped = true;

static uint64_t *db_pages(void *ctx)
{
	(void)ctx;
	return mapped ? pages : NULL;
}

static struct ionic_dev *dev_new(void)
{
	const struct ionic_dev_config cfg = { .mac = { 2, 0, 0, 0, 0, 1 } };
	const struct ionic_dev_env env = { .db_pages = db_pages };
	struct ionic_dev *dev;

	mapped = true;
	ionic_db_pages_clear(pages);
	dev = ionic_dev_new(&cfg, &env);
	if (dev)
		ionic_dev_set_bus_master(dev, true); /* as the driver's pci_set_master() */
	return dev;
}

static uint64_t db(uint32_t qid, uint32_t ring, uint32_t index)
{
	return (uint64_t)qid << 24 | (uint64_t)ring << 16 | index;
}

static void test_clear(void **state)
{
	(void)state;
	memset(pages, 0, sizeof(pages));
	ionic_db_pages_clear(pages);
	for (size_t i = 0; i < NWORDS; i++)
		assert_true(pages[i] == IONIC_DB_EMPTY);
}

/* Whether the device takes a store to (page, word) in one look. */
static bool looked_at(struct ionic_dev *dev, uint32_t page, uint32_t w)
{
	bool taken;

	pages[page * WORDS_PER_PAGE + w] = db(12345, 0, 1);
	taken = ionic_dev_doorbell_poll(dev);
	assert_true((pages[page * WORDS_PER_PAGE + w] == IONIC_DB_EMPTY) == taken);
	pages[page * WORDS_PER_PAGE + w] = IONIC_DB_EMPTY;
	return taken;
}

static void test_words_looked_at(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);
	uint64_t taken = 0;

	(void)state;
	assert_false(ionic_dev_doorbell_poll(dev)); /* nothing stored */
	/*
	 * The kernel's page: the admin queue (0), the RDMA qtypes AQ, SQ, RQ, CQ
	 * (4-7), RX (16-31), TX (32-47). User pages: none until a queue is created
	 * on them, then SQ, RQ and CQ (5-7).
	 */
	for (uint32_t w = 0; w < WORDS_PER_PAGE; w++) {
		bool want = w == 0 || (w >= 4 && w <= 7) || (w >= 16 && w < 48);

		assert_int_equal(looked_at(dev, 0, w), want);
		taken += want;
	}
	for (uint32_t page = 1; page < 64; page++)
		for (uint32_t w = 0; w < 16; w++)
			assert_false(looked_at(dev, page, w));
	pages[9 * WORDS_PER_PAGE + 5] = db(1, 0, 1); /* stored before any queue used page 9: dropped */
	ionic_db_page_used(dev, 9);
	ionic_db_page_used(dev, 63);
	ionic_db_page_used(dev, 64); /* no such page: ignored */
	assert_false(ionic_dev_doorbell_poll(dev));
	for (uint32_t page = 1; page < 64; page++) {
		for (uint32_t w = 0; w < WORDS_PER_PAGE; w++) {
			bool want = (page == 9 || page == 63) && w >= 5 && w <= 7;

			assert_int_equal(looked_at(dev, page, w), want);
			taken += want;
		}
	}
	assert_true(st->db_mapped == taken);
	assert_true(st->doorbells == taken);
	assert_true(st->guest_errors == taken); /* no queue 12345 anywhere */
	/* A reset forgets the user pages again. */
	ionic_dev_reset(dev);
	assert_false(looked_at(dev, 9, 5));
	ionic_dev_free(dev);
}

static void test_same_value_twice(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);

	(void)state;
	/* Stored, taken, stored again with the same value: a second doorbell. */
	pages[0] = db(0, 0, 3);
	assert_true(ionic_dev_doorbell_poll(dev));
	pages[0] = db(0, 0, 3);
	assert_true(ionic_dev_doorbell_poll(dev));
	assert_true(st->db_mapped == 2);
	/* Two stores between two looks: the word keeps the last one, and it is taken once. */
	pages[7] = db(1, 1, 1);
	pages[7] = db(1, 1, 2);
	assert_true(ionic_dev_doorbell_poll(dev));
	assert_false(ionic_dev_doorbell_poll(dev));
	assert_true(st->db_mapped == 3);
	/* A guest that stores all ones writes nothing the device can see. */
	pages[16] = IONIC_DB_EMPTY;
	assert_false(ionic_dev_doorbell_poll(dev));
	ionic_dev_free(dev);
}

static void test_resets_drop_stored(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);

	(void)state;
	/* Stored before a power-on reset (DEVICE_RESET, a client leaving): never rings afterwards. */
	ionic_db_page_used(dev, 3);
	pages[0] = db(0, 0, 1);
	pages[WORDS_PER_PAGE * 3 + 5] = db(7, 0, 9);
	ionic_dev_reset(dev);
	assert_false(ionic_dev_doorbell_poll(dev));
	/* Nor across a simulated firmware reset. */
	pages[32] = db(0, 0, 4);
	ionic_dev_fw_reset(dev, 0);
	assert_false(ionic_dev_doorbell_poll(dev));
	assert_true(st->db_mapped == 0);
	ionic_dev_free(dev);
}

static void test_garbage(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (uint32_t page = 0; page < 64; page += 3)
		ionic_db_page_used(dev, page);
	for (int round = 0; round < 50; round++) {
		for (size_t i = 0; i < NWORDS; i++)
			pages[i] = xorshift64(&x);
		while (ionic_dev_doorbell_poll(dev))
			;
	}
	assert_true(st->guest_errors == st->doorbells); /* no queue exists: every one is a guest error */
	assert_true(st->doorbells > 0);
	ionic_dev_free(dev);
}

static void test_trapped_path(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);
	uint64_t v = db(0, 0, 1), r = 1;

	(void)state;
	mapped = false;
	assert_false(ionic_dev_doorbell_poll(dev)); /* BAR2 traps: nothing to look at */
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	assert_int_equal(ionic_dev_bar2_access(dev, 3, &v, 4, true), 0);                     /* unaligned, short */
	assert_int_equal(ionic_dev_bar2_access(dev, IONIC_BAR2_SIZE - 8, &v, 8, true), 0);   /* last page, word 511 */
	assert_int_equal(ionic_dev_bar2_access(dev, 0, &r, 8, false), 0);
	assert_true(r == 0); /* write-only */
	assert_true(st->doorbells == 3);
	assert_true(st->guest_errors == 3);
	assert_true(st->db_mapped == 0);
	ionic_dev_free(dev);
}

/*
 * Bus mastering off: doorbells are latched, one per word, queue and ring,
 * and run (here: each a guest error, no queue exists) when it comes back.
 */
static void test_bus_master_latch(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);
	uint64_t v;

	(void)state;
	mapped = false;
	ionic_dev_set_bus_master(dev, false);
	v = db(3, 0, 1);
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	v = db(3, 0, 2); /* the same word, queue and ring: replaces the first */
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	v = db(3, 1, 2); /* another ring */
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	v = db(4, 0, 2); /* another queue */
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	v = db(3, 0, 2); /* another page */
	assert_int_equal(ionic_dev_bar2_access(dev, 4096 + 8 * 5, &v, 8, true), 0);
	assert_true(st->doorbells == 5);
	assert_true(st->db_latched == 5);
	assert_true(st->guest_errors == 0); /* nothing has run */
	ionic_dev_set_bus_master(dev, false); /* no change, nothing runs */
	assert_true(st->guest_errors == 0);
	ionic_dev_set_bus_master(dev, true);
	assert_true(st->guest_errors == 4); /* four distinct ones ran */
	ionic_dev_set_bus_master(dev, true);
	assert_true(st->guest_errors == 4); /* and only once */

	/* A reset drops what was latched (the queues it was for are gone); so does a firmware reset. */
	ionic_dev_set_bus_master(dev, false);
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	ionic_dev_reset(dev);
	ionic_dev_set_bus_master(dev, true);
	ionic_dev_set_bus_master(dev, false);
	assert_int_equal(ionic_dev_bar2_access(dev, 8 * 16, &v, 8, true), 0);
	ionic_dev_fw_reset(dev, 0);
	ionic_dev_set_bus_master(dev, true);
	assert_true(st->guest_errors == 4);

	/* Bounded: past IONIC_DB_LATCH_MAX distinct ones, the rest are dropped as guest errors. */
	ionic_dev_set_bus_master(dev, false);
	for (uint32_t i = 0; i < IONIC_DB_LATCH_MAX + 10; i++) {
		v = db(i & 0xffffff, 0, 1);
		assert_int_equal(ionic_dev_bar2_access(dev, 8 * 5, &v, 8, true), 0);
	}
	assert_true(st->guest_errors == 4 + 10);
	ionic_dev_set_bus_master(dev, true);
	assert_true(st->guest_errors == 4 + 10 + IONIC_DB_LATCH_MAX);
	ionic_dev_free(dev);
}

/* Bus mastering off: the mapped pages are not looked at; the stores wait in their words. */
static void test_bus_master_mapped(void **state)
{
	struct ionic_dev *dev = dev_new();
	const struct ionic_dev_stats *st = ionic_dev_stats(dev);

	(void)state;
	ionic_dev_set_bus_master(dev, false);
	pages[0] = db(0, 0, 1);
	pages[16] = db(0, 0, 2);
	assert_false(ionic_dev_doorbell_poll(dev));
	assert_true(pages[0] == db(0, 0, 1) && pages[16] == db(0, 0, 2));
	assert_true(st->doorbells == 0);
	/* Back on: taken at once, each once. */
	ionic_dev_set_bus_master(dev, true);
	assert_true(pages[0] == IONIC_DB_EMPTY && pages[16] == IONIC_DB_EMPTY);
	assert_true(st->db_mapped == 2);
	assert_false(ionic_dev_doorbell_poll(dev));
	/* A reset while off empties the words: nothing rings afterwards. */
	ionic_dev_set_bus_master(dev, false);
	pages[0] = db(0, 0, 3);
	ionic_dev_reset(dev);
	ionic_dev_set_bus_master(dev, true);
	assert_true(st->db_mapped == 2);
	ionic_dev_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_words_looked_at),
		cmocka_unit_test(test_same_value_twice),
		cmocka_unit_test(test_resets_drop_stored),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_trapped_path),
		cmocka_unit_test(test_bus_master_latch),
		cmocka_unit_test(test_bus_master_mapped),
	};

	return cmocka_run_group_tests_name("ionic-doorbell-unit", tests, NULL, NULL);
}
