/* util-parse-unit: the strict integer, size and address parsers of util/parse_int.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/parse_int.h"

static void test_u64_accepts(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("000123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_u64_rejects(void **state)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "+1", "-1", "1a", "0x10", "1.0", "1,000", "\t1", "1\n", "١",
	};
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse_u64(bad[i], &v), -EINVAL);
		assert_int_equal(v, 42); /* untouched on failure */
	}
	assert_int_equal(parse_u64(NULL, &v), -EINVAL);
}

static void test_u64_overflow(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(parse_u64("99999999999999999999", &v), -ERANGE);
	assert_int_equal(parse_u64("184467440737095516150", &v), -ERANGE);
	assert_int_equal(v, 42);
}

static void test_u64_range(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(parse_u64_range("1", 1, 15, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(parse_u64_range("15", 1, 15, &v), 0);
	assert_int_equal(v, 15);
	assert_int_equal(parse_u64_range("0", 1, 15, &v), -ERANGE);
	assert_int_equal(parse_u64_range("16", 1, 15, &v), -ERANGE);
	assert_int_equal(parse_u64_range("x", 1, 15, &v), -EINVAL);
	assert_int_equal(v, 15);
}

static void test_size_suffixes(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "4096", 4096 },
		{ "1K", 1ull << 10 }, { "1k", 1ull << 10 }, { "1KiB", 1ull << 10 },
		{ "64M", 64ull << 20 }, { "64MiB", 64ull << 20 }, { "64m", 64ull << 20 },
		{ "1G", 1ull << 30 }, { "2GiB", 2ull << 30 }, { "1T", 1ull << 40 }, { "3TiB", 3ull << 40 },
		{ "16777215T", 16777215ull << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 1;
		assert_int_equal(parse_size(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
}

static void test_size_rejects(void **state)
{
	static const char *const bad[] = {
		"", "bogus", "K", "M", "1.5G", "64MB", "64Mi", "64MiBs", "64 M", " 64M", "64M ", "-1M",
		"+1M", "1P", "1E", "0x40M", "1KK", "1Kib", "1kIB", "64iB", "1B",
	};
	uint64_t v = 99;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse_size(bad[i], &v), -EINVAL);
		assert_int_equal(v, 99);
	}
}

static void test_size_overflow(void **state)
{
	uint64_t v = 99;

	(void)state;
	assert_int_equal(parse_size("16777216T", &v), -ERANGE);      /* exactly 2^64 */
	assert_int_equal(parse_size("17179869184G", &v), -ERANGE);   /* 2^64 */
	assert_int_equal(parse_size("18014398509481984K", &v), -ERANGE);
	assert_int_equal(parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(parse_size("99999999999999999999999999M", &v), -ERANGE);
	assert_int_equal(v, 99);
	/* The largest values that still fit. */
	assert_int_equal(parse_size("17179869183G", &v), 0);
	assert_true(v == 17179869183ull << 30);
}

static void test_ipv4(void **state)
{
	uint32_t ip = 1;

	(void)state;
	assert_int_equal(parse_ipv4("192.168.200.1", &ip), 0);
	assert_int_equal(ip, 0xc0a8c801);
	assert_int_equal(parse_ipv4("10.0.0.5", &ip), 0);
	assert_int_equal(ip, 0x0a000005);
	assert_int_equal(parse_ipv4("0.0.0.0", &ip), 0);
	assert_int_equal(ip, 0);
	assert_int_equal(parse_ipv4("255.255.255.255", &ip), 0);
	assert_int_equal(ip, 0xffffffff);

	static const char *const bad[] = {
		"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "1..2.3", ".1.2.3", "1.2.3.",
		"01.2.3.4", "1.2.3.04", "1.2.3.4 ", " 1.2.3.4", "1.2.3.a", "0x1.2.3.4", "1000.1.1.1",
		"1.2.3.-4", "localhost", "::1", "1.2.3.4/24",
	};
	ip = 77;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_ipv4(bad[i], &ip), -EINVAL);
	assert_int_equal(ip, 77);
}

static void test_mac(void **state)
{
	uint8_t m[6] = { 0 };
	static const uint8_t want[6] = { 0x02, 0x53, 0xc0, 0xa8, 0xc8, 0x01 };
	static const uint8_t upper[6] = { 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };

	(void)state;
	assert_int_equal(parse_mac("02:53:c0:a8:c8:01", m), 0);
	assert_memory_equal(m, want, 6);
	assert_int_equal(parse_mac("AA:bb:CC:dd:EE:ff", m), 0);
	assert_memory_equal(m, upper, 6);

	static const char *const bad[] = {
		"", "02:53:c0:a8:c8", "02:53:c0:a8:c8:01:02", "02-53-c0-a8-c8-01", "2:53:c0:a8:c8:01",
		"02:53:c0:a8:c8:1", "02:53:c0:a8:c8:0g", "0253c0a8c801", "02:53:c0:a8:c8:01 ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_mac(bad[i], m), -EINVAL);
	assert_memory_equal(m, upper, 6);
}

static void test_hex_n(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(parse_hex_u64_n("00007f00deadbeefXX", 16, &v), 0);
	assert_true(v == 0x00007f00deadbeefull);
	assert_int_equal(parse_hex_u64_n("FFFFFFFFFFFFFFFF", 16, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_hex_u64_n("a", 1, &v), 0);
	assert_true(v == 10);
	assert_int_equal(parse_hex_u64_n("0000000000000000", 0, &v), -EINVAL);
	assert_int_equal(parse_hex_u64_n("00000000000000000", 17, &v), -EINVAL);
	assert_int_equal(parse_hex_u64_n("12 4", 4, &v), -EINVAL);
	assert_int_equal(parse_hex_u64_n("0x12", 4, &v), -EINVAL);
	assert_true(v == 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u64_accepts),
		cmocka_unit_test(test_u64_rejects),
		cmocka_unit_test(test_u64_overflow),
		cmocka_unit_test(test_u64_range),
		cmocka_unit_test(test_size_suffixes),
		cmocka_unit_test(test_size_rejects),
		cmocka_unit_test(test_size_overflow),
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_hex_n),
	};

	return cmocka_run_group_tests_name("util-parse-unit", tests, NULL, NULL);
}
