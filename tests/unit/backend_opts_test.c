/* backend-opts-unit: the --backend grammar, every option, default and refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "util/backend_opts.h"

static struct backend_config cfg;
static char err[512];

static void parse_ok(const char *spec)
{
	err[0] = '\0';
	memset(&cfg, 0xa5, sizeof(cfg));
	if (backend_config_parse(spec, &cfg, err, sizeof(err)) != 0)
		fail_msg("'%s' refused: %s", spec, err);
}

static void parse_bad(const char *spec, const char *want)
{
	struct backend_config before;

	memset(&cfg, 0x5a, sizeof(cfg));
	before = cfg;
	err[0] = '\0';
	if (backend_config_parse(spec, &cfg, err, sizeof(err)) == 0)
		fail_msg("'%s' accepted", spec);
	assert_string_equal(err, want);
	/* A refused spec leaves the caller's config untouched. */
	assert_memory_equal(&cfg, &before, sizeof(cfg));
}

static void test_names(void **state)
{
	(void)state;
	parse_ok("none");
	assert_int_equal(cfg.kind, BACKEND_NONE);
	parse_ok("loopback");
	assert_int_equal(cfg.kind, BACKEND_LOOPBACK);
	parse_ok("s3");
	assert_int_equal(cfg.kind, BACKEND_S3);
	parse_ok("nvmeof");
	assert_int_equal(cfg.kind, BACKEND_NVMEOF);
	assert_string_equal(backend_kind_name(BACKEND_NVMEOF), "nvmeof");
	assert_string_equal(backend_kind_name(BACKEND_LOOPBACK), "loopback");

	parse_bad("", "unknown backend ''");
	parse_bad("tcp", "unknown backend 'tcp'");
	parse_bad("S3", "unknown backend 'S3'");
	parse_bad("s3x:size=1G", "unknown backend 's3x'");
	parse_bad(":size=1G", "unknown backend ''");
	parse_bad("loopback:foo=1", "loopback backend: unknown option 'foo'");
	parse_bad("none:size=1G", "none backend: unknown option 'size'");
	parse_bad("loopback:", "loopback backend: empty option");
}

static void test_s3_defaults(void **state)
{
	(void)state;
	parse_ok("s3");
	assert_string_equal(cfg.s3.bucket, "ernic");
	assert_true(cfg.s3.size == 268435456ull);
	assert_int_equal(cfg.s3.objects, 256);
	assert_int_equal(cfg.s3.ip, 0xc0a8c801);
	assert_int_equal(cfg.s3.port, 9000);
	assert_true(cfg.s3.maxpart == 268435456ull);
	assert_true(cfg.s3.window == 4ull << 20);
}

static void test_s3_options(void **state)
{
	(void)state;
	parse_ok("s3:size=1G,bucket=bench");
	assert_true(cfg.s3.size == 1ull << 30);
	assert_string_equal(cfg.s3.bucket, "bench");
	assert_int_equal(cfg.s3.objects, 256); /* the rest keep their defaults */

	parse_ok("s3:ip=10.0.0.5,port=8080");
	assert_int_equal(cfg.s3.ip, 0x0a000005);
	assert_int_equal(cfg.s3.port, 8080);
	assert_string_equal(cfg.s3.bucket, "ernic");

	parse_ok("s3:objects=1,maxpart=5MiB,size=512KiB");
	assert_int_equal(cfg.s3.objects, 1);
	assert_true(cfg.s3.maxpart == 5ull << 20);
	assert_true(cfg.s3.size == 512ull << 10);

	/* The TCP window: 64 KiB to 64 MiB. */
	parse_ok("s3:window=64K");
	assert_true(cfg.s3.window == 65536);
	parse_ok("s3:window=64MiB,size=1G");
	assert_true(cfg.s3.window == 64ull << 20);
	parse_ok("s3:window=1000000");
	assert_true(cfg.s3.window == 1000000);

	parse_ok("s3:objects=65536,port=65535");
	assert_int_equal(cfg.s3.objects, 65536);
	assert_int_equal(cfg.s3.port, 65535);
	parse_ok("s3:port=1,size=2T");
	assert_int_equal(cfg.s3.port, 1);
	assert_true(cfg.s3.size == 2ull << 40);

	/* Bucket names: DNS labels of 3..63 characters. */
	parse_ok("s3:bucket=abc");
	parse_ok("s3:bucket=my.bucket-01");
	parse_ok("s3:bucket=0ab");
	parse_ok("s3:bucket=a23456789012345678901234567890123456789012345678901234567890123");
	assert_int_equal(strlen(cfg.s3.bucket), 63);
}

static void test_s3_refusals(void **state)
{
	(void)state;
	parse_bad("s3:size=bogus", "s3 backend: bad size 'bogus'");
	parse_bad("s3:size=", "s3 backend: bad size ''");
	parse_bad("s3:size=0", "s3 backend: bad size '0'");
	parse_bad("s3:size=1X", "s3 backend: bad size '1X'");
	parse_bad("s3:size=18446744073709551616", "s3 backend: bad size '18446744073709551616'");
	parse_bad("s3:size=16777216T", "s3 backend: bad size '16777216T'");
	parse_bad("s3:size=-1", "s3 backend: bad size '-1'");
	parse_bad("s3:maxpart=0", "s3 backend: bad maxpart '0'");
	parse_bad("s3:maxpart=1.5M", "s3 backend: bad maxpart '1.5M'");
	parse_bad("s3:window=65535", "s3 backend: bad window '65535'");
	parse_bad("s3:window=0", "s3 backend: bad window '0'");
	parse_bad("s3:window=65M", "s3 backend: bad window '65M'");
	parse_bad("s3:window=big", "s3 backend: bad window 'big'");
	parse_bad("s3:objects=0", "s3 backend: bad objects '0'");
	parse_bad("s3:objects=65537", "s3 backend: bad objects '65537'");
	parse_bad("s3:objects=1k", "s3 backend: bad objects '1k'");
	parse_bad("s3:objects=", "s3 backend: bad objects ''");
	parse_bad("s3:port=0", "s3 backend: bad port '0'");
	parse_bad("s3:port=65536", "s3 backend: bad port '65536'");
	parse_bad("s3:port=http", "s3 backend: bad port 'http'");
	parse_bad("s3:ip=1.2.3", "s3 backend: bad ip '1.2.3'");
	parse_bad("s3:ip=256.0.0.1", "s3 backend: bad ip '256.0.0.1'");
	parse_bad("s3:ip=0.0.0.0", "s3 backend: bad ip '0.0.0.0'");
	parse_bad("s3:ip=127.0.0.1", "s3 backend: bad ip '127.0.0.1'");
	parse_bad("s3:ip=224.0.0.1", "s3 backend: bad ip '224.0.0.1'");
	parse_bad("s3:ip=255.255.255.255", "s3 backend: bad ip '255.255.255.255'");
	parse_bad("s3:ip=fe80::1", "s3 backend: bad ip 'fe80::1'");
	parse_bad("s3:bucket=ab", "s3 backend: bad bucket 'ab'");
	parse_bad("s3:bucket=", "s3 backend: bad bucket ''");
	parse_bad("s3:bucket=Bench", "s3 backend: bad bucket 'Bench'");
	parse_bad("s3:bucket=-abc", "s3 backend: bad bucket '-abc'");
	parse_bad("s3:bucket=abc-", "s3 backend: bad bucket 'abc-'");
	parse_bad("s3:bucket=.abc", "s3 backend: bad bucket '.abc'");
	parse_bad("s3:bucket=abc.", "s3 backend: bad bucket 'abc.'");
	parse_bad("s3:bucket=ab_c", "s3 backend: bad bucket 'ab_c'");
	parse_bad("s3:bucket=ab/c", "s3 backend: bad bucket 'ab/c'");
	parse_bad("s3:bucket=a234567890123456789012345678901234567890123456789012345678901234",
		  "s3 backend: bad bucket 'a234567890123456789012345678901234567890123456789012345678901234'");
	parse_bad("s3:foo=1", "s3 backend: unknown option 'foo'");
	parse_bad("s3:Size=1G", "s3 backend: unknown option 'Size'");
	parse_bad("s3:size", "s3 backend: option 'size' needs a value");
	parse_bad("s3:size=1G,size=2G", "s3 backend: duplicate option 'size'");
	parse_bad("s3:bucket=abc,size=1G,bucket=abc", "s3 backend: duplicate option 'bucket'");
	parse_bad("s3:", "s3 backend: empty option");
	parse_bad("s3:size=1G,", "s3 backend: empty option");
	parse_bad("s3:,size=1G", "s3 backend: empty option");
	parse_bad("s3:size=1G,,port=1", "s3 backend: empty option");
	parse_bad("s3:size=1G port=1", "s3 backend: bad size '1G port=1'");
}

static void test_nvmeof_defaults(void **state)
{
	(void)state;
	parse_ok("nvmeof");
	assert_true(cfg.nvmeof.size == 64ull << 20);
	assert_false(cfg.nvmeof.size_set);
	assert_int_equal(cfg.nvmeof.bs, 512);
	assert_string_equal(cfg.nvmeof.file, "");
	assert_string_equal(cfg.nvmeof.nqn, "nvmet-test");
	assert_int_equal(cfg.nvmeof.ip, 0xc0a8c801);
	assert_int_equal(cfg.nvmeof.port, 4420);
	assert_int_equal(cfg.nvmeof.queues, 8);
	assert_int_equal(cfg.nvmeof.nsid, 1);
	assert_string_equal(cfg.nvmeof.model, "rocm-ernic NVMe-oF target");
	assert_string_equal(cfg.nvmeof.serial, "ERNIC0000000000001");
}

static void test_nvmeof_options(void **state)
{
	(void)state;
	parse_ok("nvmeof:size=1G,bs=4096");
	assert_true(cfg.nvmeof.size == 1ull << 30);
	assert_true(cfg.nvmeof.size_set);
	assert_int_equal(cfg.nvmeof.bs, 4096);

	parse_ok("nvmeof:file=/var/tmp/ns0.img,size=1G");
	assert_string_equal(cfg.nvmeof.file, "/var/tmp/ns0.img");
	parse_ok("nvmeof:file=ns.img");
	assert_false(cfg.nvmeof.size_set);

	parse_ok("nvmeof:bs=1024,size=3K");
	parse_ok("nvmeof:bs=2048,size=2048");
	parse_ok("nvmeof:size=512");
	assert_true(cfg.nvmeof.size == 512);

	parse_ok("nvmeof:nqn=nqn.2014-08.org.example:ns1,ip=10.0.0.9,port=4421");
	assert_string_equal(cfg.nvmeof.nqn, "nqn.2014-08.org.example:ns1");
	assert_int_equal(cfg.nvmeof.ip, 0x0a000009);
	assert_int_equal(cfg.nvmeof.port, 4421);

	parse_ok("nvmeof:queues=1,nsid=4294967294");
	assert_int_equal(cfg.nvmeof.queues, 1);
	assert_int_equal(cfg.nvmeof.nsid, 0xfffffffeu);
	parse_ok("nvmeof:queues=64");
	assert_int_equal(cfg.nvmeof.queues, 64);

	parse_ok("nvmeof:model=Model with spaces & ~ punctuation!,serial=S");
	assert_string_equal(cfg.nvmeof.model, "Model with spaces & ~ punctuation!");
	assert_string_equal(cfg.nvmeof.serial, "S");
	parse_ok("nvmeof:model=1234567890123456789012345678901234567890,serial=12345678901234567890");
	assert_int_equal(strlen(cfg.nvmeof.model), 40);
	assert_int_equal(strlen(cfg.nvmeof.serial), 20);
	parse_ok("nvmeof:model=a=b");
	assert_string_equal(cfg.nvmeof.model, "a=b");
}

static void test_nvmeof_refusals(void **state)
{
	char longnqn[300], longnqn_spec[400], longnqn_msg[400];

	(void)state;
	parse_bad("nvmeof:size=bogus", "nvmeof backend: bad size 'bogus'");
	parse_bad("nvmeof:size=0", "nvmeof backend: bad size '0'");
	parse_bad("nvmeof:size=", "nvmeof backend: bad size ''");
	parse_bad("nvmeof:size=1000", "nvmeof backend: size 1000 is not a whole number of 512-byte blocks");
	parse_bad("nvmeof:size=6K,bs=4096", "nvmeof backend: size 6144 is not a whole number of 4096-byte blocks");
	parse_bad("nvmeof:bs=4096,size=1K", "nvmeof backend: size 1024 is not a whole number of 4096-byte blocks");
	parse_bad("nvmeof:bs=256", "nvmeof backend: bad bs '256'");
	parse_bad("nvmeof:bs=8192", "nvmeof backend: bad bs '8192'");
	parse_bad("nvmeof:bs=4K", "nvmeof backend: bad bs '4K'");
	parse_bad("nvmeof:bs=", "nvmeof backend: bad bs ''");
	parse_bad("nvmeof:queues=0", "nvmeof backend: bad queues '0'");
	parse_bad("nvmeof:queues=65", "nvmeof backend: bad queues '65'");
	parse_bad("nvmeof:queues=-1", "nvmeof backend: bad queues '-1'");
	parse_bad("nvmeof:nsid=0", "nvmeof backend: bad nsid '0'");
	parse_bad("nvmeof:nsid=4294967295", "nvmeof backend: bad nsid '4294967295'");
	parse_bad("nvmeof:nsid=99999999999", "nvmeof backend: bad nsid '99999999999'");
	parse_bad("nvmeof:model=", "nvmeof backend: bad model ''");
	parse_bad("nvmeof:model=12345678901234567890123456789012345678901",
		  "nvmeof backend: bad model '12345678901234567890123456789012345678901'");
	parse_bad("nvmeof:model=tab\there", "nvmeof backend: bad model 'tab\there'");
	parse_bad("nvmeof:model=caf\xc3\xa9", "nvmeof backend: bad model 'caf\xc3\xa9'");
	parse_bad("nvmeof:serial=", "nvmeof backend: bad serial ''");
	parse_bad("nvmeof:serial=123456789012345678901", "nvmeof backend: bad serial '123456789012345678901'");
	parse_bad("nvmeof:serial=a\x7f", "nvmeof backend: bad serial 'a\x7f'");
	parse_bad("nvmeof:nqn=", "nvmeof backend: bad nqn ''");
	parse_bad("nvmeof:nqn=has space", "nvmeof backend: bad nqn 'has space'");
	parse_bad("nvmeof:nqn=nqn.2014-08.org.nvmexpress.discovery",
		  "nvmeof backend: bad nqn 'nqn.2014-08.org.nvmexpress.discovery'");
	memset(longnqn, 'n', 224);
	longnqn[224] = '\0';
	snprintf(longnqn_spec, sizeof(longnqn_spec), "nvmeof:nqn=%s", longnqn);
	snprintf(longnqn_msg, sizeof(longnqn_msg), "nvmeof backend: bad nqn '%s'", longnqn);
	parse_bad(longnqn_spec, longnqn_msg);
	longnqn[223] = '\0';
	snprintf(longnqn_spec, sizeof(longnqn_spec), "nvmeof:nqn=%s", longnqn);
	parse_ok(longnqn_spec);
	parse_bad("nvmeof:file=", "nvmeof backend: bad file ''");
	parse_bad("nvmeof:ip=192.168.200", "nvmeof backend: bad ip '192.168.200'");
	parse_bad("nvmeof:ip=::ffff:192.168.200.1", "nvmeof backend: bad ip '::ffff:192.168.200.1'");
	parse_bad("nvmeof:port=0", "nvmeof backend: bad port '0'");
	parse_bad("nvmeof:port=70000", "nvmeof backend: bad port '70000'");
	parse_bad("nvmeof:foo", "nvmeof backend: unknown option 'foo'");
	parse_bad("nvmeof:foo=bar", "nvmeof backend: unknown option 'foo'");
	parse_bad("nvmeof:bucket=abc", "nvmeof backend: unknown option 'bucket'");
	parse_bad("nvmeof:size=1G,bs=512,size=2G", "nvmeof backend: duplicate option 'size'");
	parse_bad("nvmeof:bs", "nvmeof backend: option 'bs' needs a value");
	parse_bad("nvmeof:,", "nvmeof backend: empty option");
}

static void test_file_without_size_skips_block_check(void **state)
{
	(void)state;
	/* An existing image keeps its own size; its block check happens at creation. */
	parse_ok("nvmeof:file=x.img,bs=4096");
	assert_false(cfg.nvmeof.size_set);
	assert_int_equal(cfg.nvmeof.bs, 4096);
}

static void test_overlong_item(void **state)
{
	static char spec[10000];

	(void)state;
	strcpy(spec, "nvmeof:file=");
	memset(spec + strlen(spec), 'a', 5000);
	spec[12 + 5000] = '\0';
	assert_int_equal(backend_config_parse(spec, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nvmeof backend: option too long"));

	/* Longest file name that fits: 4095 bytes. */
	memset(spec + 12, 'a', 4095);
	spec[12 + 4095] = '\0';
	parse_ok(spec);
	assert_int_equal(strlen(cfg.nvmeof.file), 4095);
	spec[12 + 4095] = 'a';
	spec[12 + 4096] = '\0';
	assert_int_equal(backend_config_parse(spec, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nvmeof backend: bad file 'aaaa"));
}

static void test_endpoint_mac(void **state)
{
	uint8_t m[6];
	static const uint8_t want1[6] = { 0x02, 0x53, 0xc0, 0xa8, 0xc8, 0x01 };
	static const uint8_t want2[6] = { 0x02, 0x53, 0x0a, 0x00, 0x00, 0x05 };

	(void)state;
	s3_endpoint_mac(0xc0a8c801, m);
	assert_memory_equal(m, want1, 6);
	s3_endpoint_mac(0x0a000005, m);
	assert_memory_equal(m, want2, 6);
}

/* roce: mtu caps the path MTU, timeout floors the ACK timeout code, retry replaces a retry count of 0. */
static void test_roce(void **state)
{
	(void)state;
	parse_ok("roce");
	assert_int_equal(cfg.kind, BACKEND_ROCE);
	assert_string_equal(backend_kind_name(BACKEND_ROCE), "roce");
	assert_int_equal(cfg.roce.mtu, 4096);
	assert_int_equal(cfg.roce.timeout, 14);
	assert_int_equal(cfg.roce.retry, 7);
	parse_ok("roce:mtu=1024,timeout=0,retry=0");
	assert_int_equal(cfg.roce.mtu, 1024);
	assert_int_equal(cfg.roce.timeout, 0);
	assert_int_equal(cfg.roce.retry, 0);
	parse_ok("roce:retry=3,mtu=2048");
	assert_int_equal(cfg.roce.mtu, 2048);
	assert_int_equal(cfg.roce.retry, 3);
	assert_int_equal(cfg.roce.timeout, 14);
	parse_ok("roce:mtu=256,timeout=31");
	assert_int_equal(cfg.roce.mtu, 256);
	assert_int_equal(cfg.roce.timeout, 31);
	parse_ok("roce:mtu=512");
	assert_int_equal(cfg.roce.mtu, 512);
	assert_int_equal(cfg.roce.ip, 0); /* any address */
	parse_ok("roce:ip=192.168.200.10,mtu=1024");
	assert_int_equal(cfg.roce.ip, 0xc0a8c80a);
	assert_int_equal(cfg.roce.mtu, 1024);
	assert_int_equal(backend_host_mac(&cfg, (uint8_t[6]){ 0 }), -1); /* no host of its own on the segment */

	parse_bad("roce:mtu=1500", "roce backend: bad mtu '1500'");
	parse_bad("roce:mtu=8192", "roce backend: bad mtu '8192'");
	parse_bad("roce:mtu=", "roce backend: bad mtu ''");
	parse_bad("roce:timeout=32", "roce backend: bad timeout '32'");
	parse_bad("roce:timeout=-1", "roce backend: bad timeout '-1'");
	parse_bad("roce:retry=8", "roce backend: bad retry '8'");
	parse_bad("roce:retry=x", "roce backend: bad retry 'x'");
	parse_bad("roce:ip=127.0.0.1", "roce backend: bad ip '127.0.0.1'");
	parse_bad("roce:ip=10.0.0", "roce backend: bad ip '10.0.0'");
	parse_bad("roce:mtu=1024,mtu=2048", "roce backend: duplicate option 'mtu'");
	parse_bad("roce:mtu", "roce backend: option 'mtu' needs a value");
	parse_bad("roce:", "roce backend: empty option");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_s3_defaults),
		cmocka_unit_test(test_s3_options),
		cmocka_unit_test(test_s3_refusals),
		cmocka_unit_test(test_nvmeof_defaults),
		cmocka_unit_test(test_nvmeof_options),
		cmocka_unit_test(test_nvmeof_refusals),
		cmocka_unit_test(test_file_without_size_skips_block_check),
		cmocka_unit_test(test_overlong_item),
		cmocka_unit_test(test_endpoint_mac),
		cmocka_unit_test(test_roce),
	};

	return cmocka_run_group_tests_name("backend-opts-unit", tests, NULL, NULL);
}
