/*
 * net-pcap-unit: the segment's capture (src/net/net_pcap.c) read back byte by byte: the pcap
 * file header (magic, version 2.4, snap length, Ethernet), each record (seconds, microseconds,
 * captured and original length, the frame's bytes), a frame longer than the snap length cut to
 * it and counted, the size limit (the file ends at the last record that fits, later frames
 * counted as cut, none written after), a writer that cannot keep up (the file a pipe nobody reads
 * yet: the ring fills, frames are dropped and counted, never waited for; once the pipe is read
 * every accepted record arrives whole and in order), and a path that cannot be created.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/net_pcap.h"
#include "util/log.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long sz;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)sz + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*n = (size_t)sz;
	return b;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* The record at *off: its fields checked against what was offered, the offset moved past it. */
static void expect_record(const uint8_t *f, size_t flen, size_t *off, uint64_t ts_us, const uint8_t *frame,
			  size_t len)
{
	size_t cap = len < NET_PCAP_SNAPLEN ? len : NET_PCAP_SNAPLEN;

	assert_true(*off + 16 + cap <= flen);
	assert_int_equal(get32(f + *off), ts_us / 1000000u);
	assert_int_equal(get32(f + *off + 4), ts_us % 1000000u);
	assert_int_equal(get32(f + *off + 8), cap);
	assert_int_equal(get32(f + *off + 12), len);
	assert_memory_equal(f + *off + 16, frame, cap);
	*off += 16 + cap;
}

static void test_records(void **state)
{
	char path[] = "/tmp/net-pcap-XXXXXX", err[256];
	static uint8_t big[NET_PCAP_SNAPLEN + 1000];
	uint8_t small[60], eth[1514], *f;
	struct net_pcap *p;
	struct net_pcap_stats st;
	size_t flen, off = 24;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	fill(small, sizeof(small), 1);
	fill(eth, sizeof(eth), 2);
	fill(big, sizeof(big), 3);
	p = net_pcap_open(path, 0, err, sizeof(err));
	assert_non_null(p);
	net_pcap_frame(p, small, sizeof(small), 1700000000123456ull);
	net_pcap_frame(p, eth, sizeof(eth), 1700000001000000ull);
	net_pcap_frame(p, big, sizeof(big), 1700000001999999ull);
	net_pcap_frame(p, NULL, 10, 1); /* nothing */
	st = net_pcap_stats(p);
	assert_int_equal(st.frames, 3);
	assert_int_equal(st.written, 3);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.bytes, 24 + 3 * 16 + 60 + 1514 + NET_PCAP_SNAPLEN);
	net_pcap_close(p);

	f = slurp(path, &flen);
	assert_int_equal(flen, 24 + 3 * 16 + 60 + 1514 + NET_PCAP_SNAPLEN);
	assert_int_equal(get32(f), 0xa1b2c3d4u);
	assert_int_equal(f[4] | f[5] << 8, 2);
	assert_int_equal(f[6] | f[7] << 8, 4);
	assert_int_equal(get32(f + 8), 0);
	assert_int_equal(get32(f + 12), 0);
	assert_int_equal(get32(f + 16), NET_PCAP_SNAPLEN);
	assert_int_equal(get32(f + 20), 1); /* LINKTYPE_ETHERNET */
	expect_record(f, flen, &off, 1700000000123456ull, small, sizeof(small));
	expect_record(f, flen, &off, 1700000001000000ull, eth, sizeof(eth));
	expect_record(f, flen, &off, 1700000001999999ull, big, sizeof(big));
	assert_int_equal(off, flen);
	free(f);
	unlink(path);
}

static void test_size_limit(void **state)
{
	char path[] = "/tmp/net-pcap-XXXXXX", err[256];
	uint8_t eth[1000], *f;
	struct net_pcap *p;
	struct net_pcap_stats st;
	size_t flen, off = 24;
	const uint64_t max = 24 + 3 * (16 + 1000) + 500; /* three records and a half */
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	fill(eth, sizeof(eth), 9);
	p = net_pcap_open(path, max, err, sizeof(err));
	assert_non_null(p);
	for (unsigned i = 0; i < 5; i++)
		net_pcap_frame(p, eth, sizeof(eth), 1000000u * i);
	net_pcap_frame(p, eth, 10, 99); /* small enough to fit, but the capture has ended */
	st = net_pcap_stats(p);
	assert_int_equal(st.written, 3);
	assert_int_equal(st.cut, 3);
	assert_int_equal(st.dropped, 0);
	net_pcap_close(p);
	f = slurp(path, &flen);
	assert_int_equal(flen, 24 + 3 * (16 + 1000));
	for (unsigned i = 0; i < 3; i++)
		expect_record(f, flen, &off, 1000000u * i, eth, sizeof(eth));
	free(f);
	unlink(path);
	/* A limit that cannot hold the file header is refused. */
	assert_null(net_pcap_open(path, 10, err, sizeof(err)));
	assert_non_null(strstr(err, "--pcap-max"));
}

struct drain {
	int fd;
	uint8_t *buf;
	size_t len, cap;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	ssize_t k;

	while ((k = read(d->fd, d->buf + d->len, d->cap - d->len)) > 0)
		d->len += (size_t)k;
	return NULL;
}

/* The file is a pipe nobody reads: the writer blocks, the ring fills, frames are dropped, never waited for. */
static void test_writer_behind(void **state)
{
	char path[64], err[256];
	static uint8_t frame[60000];
	struct net_pcap *p;
	struct net_pcap_stats st;
	struct drain d = { 0 };
	pthread_t t;
	int pfd[2];
	size_t off = 24;
	unsigned offered = 0;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd[1]);
	fill(frame, sizeof(frame), 5);
	p = net_pcap_open(path, 0, err, sizeof(err));
	assert_non_null(p);
	close(pfd[1]); /* the capture opened its own */
	/* Twice the ring's worth: this returns (nothing waits for the pipe) with frames dropped. */
	for (unsigned i = 0; i < 2 * NET_PCAP_RING / sizeof(frame); i++, offered++)
		net_pcap_frame(p, frame, sizeof(frame), i);
	st = net_pcap_stats(p);
	assert_int_equal(st.frames, offered);
	assert_true(st.dropped > 0);
	assert_int_equal(st.written + st.dropped, offered);
	assert_true(st.written * (16 + sizeof(frame)) <= NET_PCAP_RING + 65536 + 16 + sizeof(frame));
	/* Now the pipe is read: every accepted record arrives, whole and in order. */
	d.fd = pfd[0];
	d.cap = 24 + (size_t)st.written * (16 + sizeof(frame)) + 1;
	d.buf = malloc(d.cap);
	assert_non_null(d.buf);
	assert_int_equal(pthread_create(&t, NULL, drain_main, &d), 0);
	net_pcap_close(p);
	pthread_join(t, NULL);
	close(pfd[0]);
	assert_int_equal(d.len, 24 + (size_t)st.written * (16 + sizeof(frame)));
	assert_int_equal(get32(d.buf), 0xa1b2c3d4u);
	for (uint64_t i = 0, seen = 0; seen < st.written; i++) {
		/* the timestamps say which frames made it: increasing, each whole */
		uint64_t ts = get32(d.buf + off + 4);

		assert_true(ts >= i);
		i = ts;
		expect_record(d.buf, d.len, &off, ts, frame, sizeof(frame));
		seen++;
	}
	free(d.buf);
}

/*
 * The file stops taking writes (a pipe whose reader went: EPIPE): the writer records the first
 * error and stops writing, frames offered after it are still taken without blocking and the ring
 * keeps moving (nothing dropped for a writer that no longer writes), and closing ends the writer.
 */
static void test_write_fails(void **state)
{
	char path[64], err[256];
	static uint8_t frame[1500];
	struct net_pcap *p;
	struct net_pcap_stats st;
	void (*old)(int);
	int pfd[2];

	(void)state;
	old = signal(SIGPIPE, SIG_IGN); /* as the server does: a write to a gone reader is EPIPE */
	assert_int_equal(pipe(pfd), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd[1]);
	p = net_pcap_open(path, 0, err, sizeof(err));
	assert_non_null(p);
	close(pfd[1]);
	close(pfd[0]); /* the reader goes: every write from here on fails */
	fill(frame, sizeof(frame), 9);
	/*
	 * Frames until three rings' worth went in: only a writer that keeps freeing the ring after
	 * its error lets that much in. A frame the full ring refuses waits a millisecond for the
	 * writer thread (a busy host may not run it at once); at most a minute in all.
	 */
	for (unsigned i = 0, waits = 0; net_pcap_stats(p).written < 3 * NET_PCAP_RING / (16 + sizeof(frame));
	     i++) {
		uint64_t dropped = net_pcap_stats(p).dropped;

		net_pcap_frame(p, frame, sizeof(frame), i);
		if (net_pcap_stats(p).dropped != dropped) {
			assert_true(++waits < 60000);
			usleep(1000);
		}
	}
	st = net_pcap_stats(p);
	assert_int_equal(st.write_errno, EPIPE);
	assert_int_equal(st.written + st.dropped, st.frames);
	net_pcap_close(p); /* logs the failure; returns */
	signal(SIGPIPE, old);
}

static void test_open_fails(void **state)
{
	char err[256];

	(void)state;
	assert_null(net_pcap_open("/nonexistent-dir/x.pcap", 0, err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent-dir/x.pcap"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_writer_behind),
		cmocka_unit_test(test_write_fails),
		cmocka_unit_test(test_open_fails),
	};

	log_set_level(LOG_LEVEL_WARN);
	return cmocka_run_group_tests_name("net-pcap-unit", tests, NULL, NULL);
}
