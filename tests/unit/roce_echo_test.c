/*
 * roce-echo-unit: the acknowledgement clock of READ responses by ICMP echo (src/fabric/roce_echo.c).
 * The states (a peer unknown until it answers, live, back to unknown when it falls silent, mute when
 * it never answers, probed again a minute later), when probes are due (every ROCE_ECHO_EVERY frames;
 * with the window full, for the frames not yet probed and again after the wait), what an answer
 * acknowledges (its probe's frames and every older probe's), answers that match nothing, the ring
 * of outstanding probes overflowing, the wake-up time; and a simulated reader behind a queue of 1000
 * frames that stalls for tens of milliseconds at a time: with the clock live, nothing is dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fabric/roce_echo.h"

/* n frames sent, a probe taken whenever one is due; returns the number of probes taken. */
static unsigned send_frames(struct roce_echo *e, unsigned n, uint64_t now, uint16_t *last_seq)
{
	unsigned probes = 0;

	for (unsigned i = 0; i < n; i++) {
		roce_echo_sent(e, 1);
		if (roce_echo_due(e, now)) {
			*last_seq = roce_echo_probe(e, now);
			probes++;
		}
	}
	return probes;
}

static void test_unknown_to_live(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0xffff;

	(void)state;
	roce_echo_init(&e);
	assert_false(roce_echo_live(&e));
	assert_false(roce_echo_open(&e));
	assert_false(roce_echo_due(&e, 0));
	/* a probe every ROCE_ECHO_EVERY frames, numbered from 0 */
	assert_int_equal(send_frames(&e, ROCE_ECHO_EVERY - 1, 10, &seq), 0);
	assert_int_equal(send_frames(&e, 1, 10, &seq), 1);
	assert_int_equal(seq, 0);
	assert_int_equal(e.probe[0].mark, ROCE_ECHO_EVERY);
	/* unknown: the window does not hold frames back, and no probe goes between the marks */
	assert_int_equal(send_frames(&e, ROCE_ECHO_WINDOW, 20, &seq), ROCE_ECHO_WINDOW / ROCE_ECHO_EVERY);
	assert_int_equal(e.count, 1 + ROCE_ECHO_WINDOW / ROCE_ECHO_EVERY);
	assert_false(roce_echo_open(&e));
	/* the first answer: live, its frames acknowledged, the round trip measured */
	assert_true(roce_echo_answer(&e, 0, 1010));
	assert_true(roce_echo_live(&e));
	assert_int_equal(e.acked, ROCE_ECHO_EVERY);
	assert_int_equal(e.srtt_us, 1000);
	assert_int_equal(e.count, ROCE_ECHO_WINDOW / ROCE_ECHO_EVERY);
	/* 512 + 64 sent, 64 acknowledged: the window is just full */
	assert_false(roce_echo_open(&e));
	/* a later answer acknowledges every probe before it */
	assert_true(roce_echo_answer(&e, 3, 1200));
	assert_int_equal(e.acked, 4 * ROCE_ECHO_EVERY);
	assert_int_equal(e.count, ROCE_ECHO_WINDOW / ROCE_ECHO_EVERY - 3);
	assert_true(roce_echo_open(&e));
	assert_int_equal(e.answers, 2);
	/* an answer to an acknowledged probe, or one never sent, matches nothing */
	assert_false(roce_echo_answer(&e, 1, 1300));
	assert_false(roce_echo_answer(&e, 999, 1300));
	assert_int_equal(e.strays, 2);
	assert_int_equal(e.acked, 4 * ROCE_ECHO_EVERY);
}

static void test_window_full(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0;
	uint64_t t = 0, wait;

	(void)state;
	roce_echo_init(&e);
	send_frames(&e, ROCE_ECHO_EVERY, t, &seq);
	assert_true(roce_echo_answer(&e, seq, t += 2000)); /* srtt 2 ms: the wait is 8 ms */
	wait = 4 * 2000;
	assert_int_equal(e.acked, ROCE_ECHO_EVERY);
	assert_int_equal(roce_echo_next_us(&e, t), UINT64_MAX); /* not full: nothing to wake for */
	/* up to the window, then full; 10 frames past the last mark, not yet probed */
	while (roce_echo_open(&e))
		send_frames(&e, 1, t, &seq);
	assert_int_equal(e.sent - e.acked, ROCE_ECHO_WINDOW);
	assert_int_equal(e.probed, e.sent); /* 512 is a multiple of 64: the last frame's probe went */
	assert_false(roce_echo_due(&e, t));
	assert_int_equal(roce_echo_next_us(&e, t), t + wait);
	/* the wait passes without an answer: a probe again for the same frames */
	assert_false(roce_echo_due(&e, t + wait - 1));
	assert_true(roce_echo_due(&e, t + wait));
	seq = roce_echo_probe(&e, t + wait);
	assert_int_equal(e.resent, 1);
	assert_int_equal(e.probe[(e.head + e.count - 1) % ROCE_ECHO_PROBES].mark, e.sent);
	/* its answer opens the window whole */
	assert_true(roce_echo_answer(&e, seq, t + wait + 2000));
	assert_int_equal(e.acked, e.sent);
	assert_int_equal(e.count, 0);
	assert_true(roce_echo_open(&e));
}

static void test_full_between_marks(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0;

	(void)state;
	roce_echo_init(&e);
	send_frames(&e, 10, 0, &seq); /* acknowledged later at 10: the marks fall at 74, 138, ... */
	seq = roce_echo_probe(&e, 0);
	assert_true(roce_echo_answer(&e, seq, 100));
	assert_int_equal(e.acked, 10);
	while (roce_echo_open(&e))
		send_frames(&e, 1, 100, &seq);
	/* full at 522, the last mark at 458: the 64 frames since then get their probe at once */
	assert_int_equal(e.sent, 522);
	assert_int_equal(e.probed, 458 + 64); /* the 64th frame since 458 is 522 itself */
	/* with the window full and the newest probe at sent, only the wait brings another */
	assert_false(roce_echo_due(&e, 100));
	/* a full window whose last frames were not probed: due at once */
	e.probed = e.sent - 5;
	assert_true(roce_echo_due(&e, 100));
	assert_int_equal(roce_echo_next_us(&e, 100), 100);
}

static void test_silence_and_mute(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0;
	uint64_t t = 1000;

	(void)state;
	roce_echo_init(&e);
	/* live, then silent for a second with probes out: unknown again, the count started over */
	send_frames(&e, ROCE_ECHO_EVERY, t, &seq);
	assert_true(roce_echo_answer(&e, seq, t + 500));
	t += 500;
	send_frames(&e, 3 * ROCE_ECHO_EVERY, t, &seq);
	roce_echo_check(&e, t + ROCE_ECHO_SILENT_US - 1);
	assert_true(roce_echo_live(&e));
	roce_echo_check(&e, t + ROCE_ECHO_SILENT_US);
	assert_false(roce_echo_live(&e));
	assert_int_equal(e.state, ROCE_ECHO_UNKNOWN);
	assert_int_equal(e.acked, e.sent);
	assert_int_equal(e.count, 0);
	/* unknown and silent for another second of probes: mute, no probes */
	t += ROCE_ECHO_SILENT_US;
	send_frames(&e, ROCE_ECHO_EVERY, t, &seq);
	assert_int_equal(e.count, 1);
	roce_echo_check(&e, t + ROCE_ECHO_SILENT_US);
	assert_int_equal(e.state, ROCE_ECHO_MUTE);
	assert_int_equal(e.mutes, 1);
	assert_int_equal(send_frames(&e, 10 * ROCE_ECHO_EVERY, t + ROCE_ECHO_SILENT_US, &seq), 0);
	assert_false(roce_echo_open(&e));
	assert_int_equal(roce_echo_next_us(&e, t), UINT64_MAX);
	/* a late answer after the verdict does not bring it back */
	assert_false(roce_echo_answer(&e, seq, t + ROCE_ECHO_SILENT_US + 1));
	assert_int_equal(e.state, ROCE_ECHO_MUTE);
	/* a minute on, probed again */
	t += ROCE_ECHO_SILENT_US;
	roce_echo_check(&e, t + ROCE_ECHO_RETRY_US - 1);
	assert_int_equal(e.state, ROCE_ECHO_MUTE);
	roce_echo_check(&e, t + ROCE_ECHO_RETRY_US);
	assert_int_equal(e.state, ROCE_ECHO_UNKNOWN);
	assert_int_equal(send_frames(&e, ROCE_ECHO_EVERY, t + ROCE_ECHO_RETRY_US, &seq), 1);
	assert_true(roce_echo_answer(&e, seq, t + ROCE_ECHO_RETRY_US + 10));
	assert_true(roce_echo_live(&e));
}

static void test_ring_overflow(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0;

	(void)state;
	roce_echo_init(&e);
	/* one more probe than the ring holds, none answered: the oldest is forgotten */
	assert_int_equal(send_frames(&e, (ROCE_ECHO_PROBES + 1) * ROCE_ECHO_EVERY, 0, &seq), ROCE_ECHO_PROBES + 1);
	assert_int_equal(e.count, ROCE_ECHO_PROBES);
	assert_false(roce_echo_answer(&e, 0, 10));
	assert_true(roce_echo_answer(&e, 1, 10));
	assert_int_equal(e.acked, 2 * ROCE_ECHO_EVERY);
	assert_true(roce_echo_answer(&e, ROCE_ECHO_PROBES, 10));
	assert_int_equal(e.acked, e.sent);
	assert_int_equal(e.count, 0);
	/* the sequence numbers wrap at 16 bits */
	e.next_seq = 0xffff;
	send_frames(&e, 2 * ROCE_ECHO_EVERY, 20, &seq);
	assert_int_equal(seq, 0);
	assert_true(roce_echo_answer(&e, 0xffff, 30));
	assert_true(roce_echo_answer(&e, 0, 30));
	assert_int_equal(e.acked, e.sent);
	assert_int_equal(e.count, 0);
}

/*
 * A simulated reader's host: a queue of qmax frames in front of it (a TAP's), in order, dropping
 * what does not fit; while it runs it takes `take` frames per 100 us tick; it stalls for `stall`
 * us of every 50 ms; it answers a probe when it takes it, and the answer arrives `delay` us later
 * (plus `jitter` on every third answer: a guest that is slow to answer now and then). The responder
 * sends whenever the window lets it, up to 100 frames per tick.
 */
struct reader_sim {
	unsigned qmax, take;
	uint64_t stall, delay, jitter;
	/* results */
	uint64_t dropped, taken, runs, max_queue, max_window;
	uint64_t idle;          /* chances to take a frame, while running, that found the queue empty */
};

static void run_reader(struct reader_sim *r, struct roce_echo *e, unsigned steps)
{
	enum { QCAP = 8192 + 64, TICK = 100 };
	static long q[QCAP]; /* frames and probes in order; a probe is -1 - seq */
	static struct { uint16_t seq; uint64_t at; } ans[1024];
	unsigned qh = 0, qn = 0, na = 0, nth = 0;
	uint16_t seq;

	assert_true(r->qmax <= 8192);
	for (uint64_t s = 0; s < steps; s++) {
		uint64_t now = s * TICK;
		bool running = now % 50000 >= r->stall;

		for (unsigned i = 0; i < na;) {
			if (ans[i].at <= now) {
				roce_echo_answer(e, ans[i].seq, now);
				ans[i] = ans[--na];
			} else {
				i++;
			}
		}
		roce_echo_check(e, now);
		for (unsigned k = 0; k < 100; k++) {
			if (roce_echo_open(e)) {
				roce_echo_sent(e, 1);
				if (qn < r->qmax)
					q[(qh + qn++) % QCAP] = 1;
				else
					r->dropped++;
			}
			if (roce_echo_due(e, now)) {
				seq = roce_echo_probe(e, now);
				if (qn < r->qmax)
					q[(qh + qn++) % QCAP] = -1 - (long)seq;
				else
					r->dropped++;
			}
		}
		if (qn > r->max_queue)
			r->max_queue = qn;
		if (roce_echo_window(e) > r->max_window)
			r->max_window = roce_echo_window(e);
		if (!running)
			continue;
		r->runs++;
		if (qn < r->take)
			r->idle += r->take - qn;
		for (unsigned k = 0; k < r->take && qn > 0; k++) {
			long v = q[qh];

			qh = (qh + 1) % QCAP;
			qn--;
			if (v < 0) {
				assert_true(na < 1024);
				ans[na].seq = (uint16_t)(-1 - v);
				ans[na++].at = now + r->delay + (++nth % 3 == 0 ? r->jitter : 0);
			} else {
				r->taken++;
			}
		}
	}
}

/* Made live by a first exchange of round trip rtt. */
static void make_live(struct roce_echo *e, uint64_t rtt)
{
	uint16_t seq;

	roce_echo_init(e);
	roce_echo_sent(e, ROCE_ECHO_EVERY);
	seq = roce_echo_probe(e, 0);
	assert_true(roce_echo_answer(e, seq, rtt));
	assert_true(roce_echo_live(e));
}

/*
 * A reader slower than us behind 1000 frames that stalls 30 ms in every 50 (rdma_rxe in a virtual
 * machine on a loaded host): nothing dropped, kept busy while it runs, its queue far from full.
 */
static void test_stalling_reader(void **state)
{
	struct reader_sim r = { .qmax = 1000, .take = 40, .stall = 30000, .delay = 200 };
	struct roce_echo e;

	(void)state;
	make_live(&e, 200);
	run_reader(&r, &e, 20000);
	assert_int_equal(r.dropped, 0);
	assert_true(roce_echo_live(&e));
	assert_true(r.idle * 10 <= r.runs * 40); /* it waited for us less than 10% of the time it ran */
	assert_true(r.max_queue < 900);
	assert_true(e.resent < e.probes / 10);
}

/*
 * The same reader without stalls but with a queue that must build up: the window shrinks until a
 * few hundred frames wait (not the 512 it started with) and the reader stays busy.
 */
static void test_slow_reader_queue(void **state)
{
	struct reader_sim r = { .qmax = 1000, .take = 10, .stall = 0, .delay = 200 };
	struct roce_echo e;

	(void)state;
	make_live(&e, 200);
	run_reader(&r, &e, 20000);
	assert_int_equal(r.dropped, 0);
	assert_true(r.idle * 100 <= r.runs * 10); /* it waited for us less than 1% of the time */
	assert_true(e.shrunk > 0);
	assert_true(roce_echo_window(&e) < ROCE_ECHO_WINDOW);
	assert_true(r.max_queue < 900);
}

/*
 * A fast reader whose host answers late (a server that drains its TAP at once, a slow guest that
 * answers the probes: 3 ms, and 10 ms more every third answer): no queue builds, so the window
 * grows to what the round trip needs, and the responder is held back far less than a fixed
 * window of 512 would hold it (512 frames per 3 ms).
 */
static void test_fast_reader_slow_answers(void **state)
{
	struct reader_sim r = { .qmax = 8192, .take = 1000, .stall = 0, .delay = 3000, .jitter = 10000 };
	struct roce_echo e;

	(void)state;
	make_live(&e, 3000);
	run_reader(&r, &e, 20000); /* 2 s */
	assert_int_equal(r.dropped, 0);
	assert_int_equal(roce_echo_window(&e), ROCE_ECHO_WINDOW_MAX);
	assert_int_equal(e.shrunk, 0);
	/* more than three times what 512 frames per 3 ms would have moved */
	assert_true(r.taken > 3 * (2000000 / 3000) * 512);
}

/* Growth needs a full window; one slow answer is not a queue; the least round trip is renewed. */
static void test_window_rules(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0;
	uint64_t t = 1000;
	uint32_t w;

	(void)state;
	make_live(&e, 1000);
	/* answers at the least round trip, the window never full: it stays */
	for (int i = 0; i < 20; i++) {
		send_frames(&e, ROCE_ECHO_EVERY, t, &seq);
		assert_true(roce_echo_answer(&e, seq, t + 1000));
		t += 1000;
	}
	assert_int_equal(roce_echo_window(&e), ROCE_ECHO_WINDOW);
	/* full, then answered at the least round trip: an eighth more, once for that round trip */
	while (roce_echo_open(&e))
		send_frames(&e, 1, t, &seq);
	assert_true(roce_echo_answer(&e, seq, t + 1000));
	t += 1000;
	assert_int_equal(roce_echo_window(&e), ROCE_ECHO_WINDOW + ROCE_ECHO_WINDOW / 8);
	w = roce_echo_window(&e);
	/* one answer ten times slower among quick ones: the least of the last four is quick, it grows */
	while (roce_echo_open(&e))
		send_frames(&e, 1, t, &seq);
	assert_true(roce_echo_answer(&e, seq, t + 10000));
	t += 10000;
	assert_true(roce_echo_window(&e) > w);
	w = roce_echo_window(&e);
	/* four slow ones in a row: a queue of most of the window, it shrinks by an eighth */
	for (int i = 0; i < 4; i++) {
		while (roce_echo_open(&e))
			send_frames(&e, 1, t, &seq);
		assert_true(roce_echo_answer(&e, seq, t + 10000));
		t += 10000;
	}
	assert_true(roce_echo_window(&e) < w);
	assert_true(e.shrunk >= 1);
	/*
	 * The round trip is 10 ms for good: the least is taken afresh every ten seconds from what
	 * was seen in the ten before, so after two such turns it is 10 ms and the window grows again.
	 */
	w = roce_echo_window(&e);
	for (int i = 0; i < 8; i++) {
		if (i == 0 || i == 4)
			t += ROCE_ECHO_BASE_AGE_US;
		while (roce_echo_open(&e))
			send_frames(&e, 1, t, &seq);
		assert_true(roce_echo_answer(&e, seq, t + 10000));
		t += 10000;
	}
	assert_true(e.base_us == 10000);
	assert_true(roce_echo_window(&e) > w);
	/* a READ lost after its responses went: the window halves; never below the least */
	w = roce_echo_window(&e);
	roce_echo_lost(&e, true);
	assert_int_equal(roce_echo_window(&e), w / 2);
	for (int i = 0; i < 10; i++)
		roce_echo_lost(&e, true);
	assert_int_equal(roce_echo_window(&e), ROCE_ECHO_WINDOW_MIN);
	/* one asked again while held: the count starts over, the window stays */
	roce_echo_lost(&e, false);
	assert_int_equal(roce_echo_window(&e), ROCE_ECHO_WINDOW_MIN);
	assert_int_equal(e.acked, e.sent);
	assert_true(roce_echo_open(&e));
}

/* A peer that sends CNPs: no probes from then on, an answer does not bring the window back. */
static void test_off(void **state)
{
	struct roce_echo e;
	uint16_t seq = 0;

	(void)state;
	make_live(&e, 100);
	send_frames(&e, ROCE_ECHO_EVERY, 200, &seq);
	roce_echo_off(&e);
	assert_false(roce_echo_live(&e));
	assert_false(roce_echo_open(&e));
	assert_int_equal(send_frames(&e, 10 * ROCE_ECHO_WINDOW, 300, &seq), 0);
	assert_false(roce_echo_answer(&e, seq, 400));
	roce_echo_check(&e, 400 + ROCE_ECHO_RETRY_US + ROCE_ECHO_SILENT_US);
	assert_int_equal(e.state, ROCE_ECHO_OFF);
	assert_int_equal(roce_echo_next_us(&e, 500), UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_to_live),
		cmocka_unit_test(test_window_full),
		cmocka_unit_test(test_full_between_marks),
		cmocka_unit_test(test_silence_and_mute),
		cmocka_unit_test(test_ring_overflow),
		cmocka_unit_test(test_stalling_reader),
		cmocka_unit_test(test_slow_reader_queue),
		cmocka_unit_test(test_fast_reader_slow_answers),
		cmocka_unit_test(test_window_rules),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
