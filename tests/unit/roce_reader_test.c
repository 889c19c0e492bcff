/*
 * roce-reader-unit: the pace of READ responses toward a reader that gives no signal
 * (src/fabric/roce_reader.c). A simulated reader (a receive queue of 1000 frames, as a TAP's, that
 * drops what does not fit, consuming at a set rate, in order) and a requester that asks for its
 * next READ once the reader has taken all but `ahead` packets of the ones before (0: one READ at a
 * time; 128: rdma_rxe, which sends no request more than 128 packets past its oldest unanswered
 * one), the request arriving a millisecond later; the responder sends a response whenever the
 * pace lets it. Checked, with no frame dropped: 1 MiB READs one at a time (the reader kept 90%
 * busy) and as rxe asks for them (the pace 15% below to 20% above the reader's, 85% busy) against a reader
 * a little slower than the starting pace, a reader twice as fast found by rising, a reader that
 * slows by a quarter followed down, 16 MiB READs at 3/4 of the pace learned on 1 MiB ones (70%
 * busy); and the window, the wake-up time, the restart after a loss, the verdicts one by one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fabric/roce_reader.h"

#define PMTU      1024u
#define QUEUE_MAX 1000u /* frames a TAP holds toward its reader */
#define TICK_US   10u
#define RTT_US    1000u /* from a READ's completion at the reader to its next request at the responder */
#define MAX_OUT   64u

struct sim {
	struct roce_reader r;
	uint64_t now;
	/* the reader */
	uint64_t rate;           /* bytes/s it consumes */
	uint64_t queue;          /* bytes waiting for it (whole frames) */
	uint64_t consumed;       /* in all, dropped frames counted as consumed so that the run goes on */
	uint64_t credit;         /* consumption owed to it, in bytes * 1e6 (fractions of a tick) */
	uint64_t dropped;
	uint64_t idle_ticks, busy_ticks;
	/* the requester: requests on their way arrive at due[] */
	uint32_t size;
	unsigned ahead;          /* packets before the end of the last READ asked at which it asks for the next */
	uint64_t asked;
	uint64_t due[MAX_OUT];
	unsigned ndue;
	/* the responder's outbox: what is left of each READ owed, in order */
	uint32_t out_left[MAX_OUT];
	unsigned out_head, out_count;
};

static void request(struct sim *s)
{
	assert_true(s->out_count < MAX_OUT);
	s->out_left[(s->out_head + s->out_count) % MAX_OUT] = s->size;
	s->out_count++;
	roce_reader_request(&s->r, s->now);
}

static void sim_init(struct sim *s, uint64_t rate, uint32_t size, unsigned ahead, uint64_t start_rate)
{
	memset(s, 0, sizeof(*s));
	s->now = 1000;
	s->rate = rate;
	s->size = size;
	s->ahead = ahead;
	roce_reader_init(&s->r, PMTU, start_rate, s->now);
	s->asked = 1;
	request(s);
}

/* One tick: requests arrive, the responder sends what the pace allows, the reader consumes. */
static void sim_tick(struct sim *s)
{
	unsigned sent = 0;

	for (unsigned i = 0; i < s->ndue;) {
		if (s->due[i] <= s->now) {
			request(s);
			s->due[i] = s->due[--s->ndue];
		} else {
			i++;
		}
	}
	while (s->out_count > 0 && roce_reader_open(&s->r, s->now)) {
		uint32_t *left = &s->out_left[s->out_head];
		uint32_t n = *left < PMTU ? *left : PMTU;
		bool last;

		assert_true(++sent <= 4 * ROCE_READER_WINDOW_PKTS); /* the window bounds a burst */
		*left -= n;
		last = *left == 0;
		if (last) {
			s->out_head = (s->out_head + 1) % MAX_OUT;
			s->out_count--;
		}
		roce_reader_sent(&s->r, n, s->size, last, s->now);
		if (s->queue / PMTU >= QUEUE_MAX) {
			s->dropped++;
			s->consumed += n;
		} else {
			s->queue += n;
		}
	}
	s->now += TICK_US;
	s->credit += s->rate * TICK_US;
	while (s->queue > 0 && s->credit >= (uint64_t)PMTU * 1000000u) {
		s->queue -= PMTU;
		s->consumed += PMTU;
		s->credit -= (uint64_t)PMTU * 1000000u;
	}
	if (s->queue == 0) {
		s->credit = 0; /* an idle reader saves nothing up */
		s->idle_ticks++;
	} else {
		s->busy_ticks++;
	}
	while (s->consumed + (uint64_t)s->ahead * PMTU >= s->asked * s->size) {
		s->asked++;
		assert_true(s->ndue < MAX_OUT);
		s->due[s->ndue++] = s->now + RTT_US;
	}
}

static void sim_run(struct sim *s, uint64_t us)
{
	for (uint64_t end = s->now + us; s->now < end;)
		sim_tick(s);
}

/* What the reader consumed per second over the next us. */
static uint64_t sim_measure(struct sim *s, uint64_t us)
{
	uint64_t c0 = s->consumed, t0 = s->now;

	sim_run(s, us);
	return (s->consumed - c0) * 1000000u / (s->now - t0);
}

/*
 * The pace settled within 15% below and 20% above the reader's rate (above it, the reader's own
 * requests bound what is in flight: no frame was dropped, which the callers check).
 */
static void assert_pace_near(const struct sim *s)
{
	assert_true(s->r.rate * 100 >= s->rate * 85);
	assert_true(s->r.rate * 100 <= s->rate * 120);
}

static void test_one_at_a_time(void **state)
{
	struct sim s;

	(void)state;
	/* A reader at 28 MiB/s (what a TCG guest's rdma_rxe took), one 1 MiB READ at a time. */
	sim_init(&s, 28u << 20, 1u << 20, 0, 0);
	sim_run(&s, 3000000);
	assert_int_equal(s.dropped, 0);
	/*
	 * One READ in flight cannot overflow the queue by much above the reader's rate, so the pace
	 * stays where the gaps stop shrinking; the reader is kept busy.
	 */
	assert_true(s.r.rate >= s.rate);
	assert_true(sim_measure(&s, 2000000) * 100 >= s.rate * 90);
	assert_int_equal(s.dropped, 0);
}

static void test_rxe_like(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 28u << 20, 1u << 20, 128, 0);
	sim_run(&s, 3000000);
	assert_int_equal(s.dropped, 0);
	assert_true(s.r.falls > 0);
	assert_pace_near(&s);
	assert_true(sim_measure(&s, 2000000) * 100 >= s.rate * 85);
	assert_int_equal(s.dropped, 0);
}

static void test_fast_reader(void **state)
{
	struct sim s;

	(void)state;
	/* Twice the starting pace: found by rising, nothing dropped. */
	sim_init(&s, 64u << 20, 1u << 20, 128, 0);
	sim_run(&s, 4000000);
	assert_int_equal(s.dropped, 0);
	assert_true(s.r.rises > 5);
	assert_pace_near(&s);
}

static void test_reader_slows(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 28u << 20, 1u << 20, 128, 0);
	sim_run(&s, 3000000);
	s.rate = 21u << 20;
	sim_run(&s, 3000000);
	assert_int_equal(s.dropped, 0);
	assert_pace_near(&s);
}

static void test_large_after_learning(void **state)
{
	struct sim s;
	uint64_t learned;

	(void)state;
	/* The pace learned on 1 MiB READs (the node keeps it per peer) carries 16 MiB ones whole. */
	sim_init(&s, 28u << 20, 1u << 20, 128, 0);
	sim_run(&s, 3000000);
	learned = s.r.settled;
	sim_init(&s, 28u << 20, 16u << 20, 128, learned);
	assert_true(sim_measure(&s, 6000000) * 100 >= s.rate * 70);
	assert_int_equal(s.dropped, 0);
	assert_true(s.asked >= 8);
	assert_int_equal(s.r.rises, 0); /* a large READ never raises the pace */
}

static void test_window_and_wakeup(void **state)
{
	struct roce_reader r;
	uint64_t t = 5000, at;
	unsigned frames = 0;

	(void)state;
	roce_reader_init(&r, PMTU, 0, t);
	assert_int_equal(r.rate, ROCE_READER_START);
	assert_int_equal(r.window, (uint64_t)ROCE_READER_WINDOW_PKTS * PMTU);
	/* At one instant a window leaves, no more. */
	while (roce_reader_open(&r, t)) {
		roce_reader_sent(&r, PMTU, 1u << 20, false, t);
		frames++;
	}
	assert_int_equal(frames, ROCE_READER_WINDOW_PKTS);
	at = roce_reader_next_us(&r, t);
	assert_true(at > t);
	assert_false(roce_reader_open(&r, at - 1));
	assert_true(roce_reader_open(&r, at));
	/* A large READ's responses count 4/3: fewer leave at once. */
	roce_reader_init(&r, PMTU, 0, t);
	frames = 0;
	while (roce_reader_open(&r, t)) {
		roce_reader_sent(&r, PMTU, 16u << 20, false, t);
		frames++;
	}
	assert_int_equal(frames, (ROCE_READER_WINDOW_PKTS * PMTU + PMTU + PMTU / 3 - 1) / (PMTU + PMTU / 3));
	/* A READ asked for again: the pace a quarter lower, the queue empty, no verdict owed. */
	roce_reader_sent(&r, PMTU, 16u << 20, true, t);
	assert_true(r.have_done);
	roce_reader_lost(&r, t);
	assert_int_equal(r.rate, ROCE_READER_START - ROCE_READER_START / 4);
	assert_int_equal(r.queue, 0);
	assert_false(r.have_done);
	assert_int_equal(r.restarts, 1);
	/* Never below the floor, and a second of silence empties any queue. */
	for (int i = 0; i < 40; i++)
		roce_reader_lost(&r, t);
	assert_int_equal(r.rate, ROCE_READER_MIN);
	r.queue = 1u << 30;
	assert_true(roce_reader_open(&r, t + 1000000));
}

static void test_verdicts(void **state)
{
	struct roce_reader r;
	uint64_t rate;

	(void)state;
	roce_reader_init(&r, PMTU, 0, 0);
	/* A request with nothing sent in full and nothing leaving answers nothing. */
	roce_reader_request(&r, 0);
	assert_int_equal(r.rises + r.falls, 0);
	/* One while a READ is still leaving: the reader waits for us, a rise. */
	roce_reader_sent(&r, PMTU, 1u << 20, false, 0);
	roce_reader_request(&r, 1000);
	assert_int_equal(r.rises, 1);
	rate = ROCE_READER_START + (ROCE_READER_START >> ROCE_READER_WAIT_SHIFT);
	assert_int_equal(r.rate, rate);
	/* 1 MiB sent over 30 ms; the request 2 ms after its last response: the least gap, a smaller rise. */
	roce_reader_sent(&r, PMTU, 1u << 20, true, 30000);
	roce_reader_request(&r, 32000);
	assert_int_equal(r.rises, 2);
	assert_int_equal(r.gap_min, 2000);
	assert_int_equal(r.rate, rate + (rate >> ROCE_READER_RISE_SHIFT));
	/* The next 12 ms after its last response: 10 ms of rest, it took 1 MiB in 40 ms. */
	rate = r.rate;
	roce_reader_sent(&r, PMTU, 1u << 20, false, 40000);
	roce_reader_sent(&r, PMTU, 1u << 20, true, 70000);
	roce_reader_request(&r, 82000);
	assert_int_equal(r.falls, 1);
	assert_int_equal(r.rate, (rate + (1u << 20) * 1000000ull / 40000) / 2);
	/* A second request for the same READ answers nothing more. */
	rate = r.rate;
	roce_reader_request(&r, 83000);
	assert_int_equal(r.rate, rate);
	/* One more than a second after the READ it would answer: a pause, no verdict. */
	roce_reader_sent(&r, PMTU, 1u << 20, true, 100000);
	roce_reader_request(&r, 100000 + 2 * ROCE_READER_STALE_US);
	assert_int_equal(r.rate, rate);
	assert_int_equal(r.rises, 2);
	assert_int_equal(r.falls, 1);
	/* A READ of no bytes gives no verdict. */
	rate = r.rate;
	roce_reader_sent(&r, 0, 0, true, 2000000);
	roce_reader_request(&r, 2100000);
	assert_int_equal(r.rate, rate);
	assert_false(r.have_done);
	/* A large READ still leaving raises nothing. */
	roce_reader_sent(&r, PMTU, 16u << 20, false, 3000000);
	roce_reader_request(&r, 3001000);
	assert_int_equal(r.rises, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_at_a_time),
		cmocka_unit_test(test_rxe_like),
		cmocka_unit_test(test_fast_reader),
		cmocka_unit_test(test_reader_slows),
		cmocka_unit_test(test_large_after_learning),
		cmocka_unit_test(test_window_and_wakeup),
		cmocka_unit_test(test_verdicts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
