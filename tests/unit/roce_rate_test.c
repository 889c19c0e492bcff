/*
 * roce-rate-unit: a RoCEv2 flow's send rate (src/fabric/roce_rate.c): the token bucket (a burst at
 * most, refilled at the rate, no byte credited twice across many small refills), the cut on a
 * congestion signal (by alpha / 2: half at first, little after a quiet spell, half again when the
 * signals keep coming; one per ROCE_RATE_CUT_GAP_US; the floor), the rise after quiet steps of
 * sending (fast recovery halfway back, then additive, the line rate the ceiling) and none while
 * idle, and when a flow that ran dry may send again; late signals (a READ asked for again): a cut
 * to a quarter, one per ROCE_RATE_LATE_GAP_US, the floor, then only the slow rise of a late flow
 * (1/32 per 100 ms of sending, none while idle, no fast recovery), and a flow started late.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fabric/roce_rate.h"

static void test_bucket(void **state)
{
	struct roce_rate r;
	uint64_t t = 1000, sent = 0;
	unsigned frames = 0;

	(void)state;
	roce_rate_init(&r, t);
	assert_int_equal(r.rate, ROCE_RATE_START);
	/* A burst at most leaves at one instant. */
	while (roce_rate_ready(&r, t)) {
		roce_rate_sent(&r, 4096, t);
		frames++;
	}
	assert_int_equal(frames, ROCE_RATE_BURST / 4096);
	assert_true(roce_rate_next_us(&r, t) > t);
	/* Over 10 ms in steps of 1 us, what leaves is the rate's worth (within a frame). */
	for (unsigned i = 0; i < 10000; i++) {
		t++;
		while (roce_rate_ready(&r, t)) {
			roce_rate_sent(&r, 4096, t);
			sent += 4096;
		}
	}
	assert_true(sent <= r.rate / 100 + 4096);
	assert_true(sent + 2 * 4096 >= ROCE_RATE_START / 100);
	/* After a long quiet spell the bucket holds a burst, no more. */
	t += 5000000;
	assert_true(roce_rate_ready(&r, t));
	assert_int_equal(r.tokens, ROCE_RATE_BURST);
}

static void test_cut(void **state)
{
	struct roce_rate r;
	uint64_t t = 0;

	(void)state;
	roce_rate_init(&r, t);
	assert_true(roce_rate_signal(&r, t));
	assert_int_equal(r.rate, ROCE_RATE_START / 2);
	assert_int_equal(r.target, ROCE_RATE_START);
	assert_false(roce_rate_ready(&r, t)); /* the tokens went with the cut */
	assert_true(roce_rate_next_us(&r, t) > t);
	/* A second signal within the gap is the same event. */
	assert_false(roce_rate_signal(&r, t + ROCE_RATE_CUT_GAP_US - 1));
	assert_int_equal(r.rate, ROCE_RATE_START / 2);
	assert_true(roce_rate_signal(&r, t + ROCE_RATE_CUT_GAP_US));
	assert_int_equal(r.rate, ROCE_RATE_START / 4);
	assert_int_equal(r.signals, 3);
	assert_int_equal(r.cuts, 2);
	/* Cut after cut: never below the floor. */
	for (unsigned i = 0; i < 64; i++)
		roce_rate_signal(&r, t += ROCE_RATE_CUT_GAP_US);
	assert_int_equal(r.rate, ROCE_RATE_MIN);
	/* At the floor a flow still gets its turn: tokens come, slowly. */
	t += 1000000;
	assert_true(roce_rate_ready(&r, t));
}

/* One step of ROCE_RATE_STEP_US sending a burst's worth, no signal. */
static void busy_step(struct roce_rate *r, uint64_t *t)
{
	roce_rate_ready(r, *t);
	roce_rate_sent(r, ROCE_RATE_BURST, *t);
	*t += ROCE_RATE_STEP_US;
	roce_rate_ready(r, *t);
}

static void test_recovery(void **state)
{
	struct roce_rate r;
	uint64_t t = 0, before, target;

	(void)state;
	roce_rate_init(&r, t);
	assert_true(roce_rate_signal(&r, t));
	target = r.target;
	/* Fast recovery: halfway back to the rate before the cut, step by step. */
	for (unsigned i = 0; i < ROCE_RATE_FAST_STEPS; i++) {
		before = r.rate;
		busy_step(&r, &t);
		assert_int_equal(r.rate, (before + target) / 2);
		assert_int_equal(r.target, target);
	}
	/* Then the target itself moves up by ROCE_RATE_AI a step. */
	busy_step(&r, &t);
	assert_int_equal(r.target, target + ROCE_RATE_AI);
	/* Idle steps earn nothing: the flow learned nothing about the path. */
	before = r.rate;
	for (unsigned i = 0; i < 10; i++) {
		t += ROCE_RATE_STEP_US;
		roce_rate_ready(&r, t);
	}
	assert_int_equal(r.rate, before);
	/* And the line rate is the ceiling however long it goes well. */
	for (unsigned i = 0; i < 200000; i++)
		busy_step(&r, &t);
	assert_int_equal(r.target, ROCE_RATE_LINE);
	assert_true(r.rate <= ROCE_RATE_LINE && r.rate > ROCE_RATE_LINE - ROCE_RATE_LINE / 1000);
	/* alpha: after a long quiet spell a signal costs little; signal after signal, it costs half. */
	assert_int_equal(r.alpha, 15); /* 1024 decays by 1/16 a step to where 1/16 rounds to nothing */
	before = r.rate;
	assert_true(roce_rate_signal(&r, t));
	assert_true(r.rate > before - before / 100);
	for (unsigned i = 0; i < 100; i++)
		roce_rate_signal(&r, t += ROCE_RATE_CUT_GAP_US);
	assert_true(r.alpha > ROCE_RATE_ALPHA_ONE - ROCE_RATE_G);
	r.rate = before = ROCE_RATE_LINE; /* (the test's hand: off the floor it reached meanwhile) */
	roce_rate_signal(&r, t += ROCE_RATE_CUT_GAP_US);
	assert_true(r.rate < before / 2 + before / 64);
}

/* Send at the rate for dur_us from *t, in steps of 10 us (a flow that always has frames). */
static void send_for(struct roce_rate *r, uint64_t *t, uint64_t dur_us)
{
	for (uint64_t end = *t + dur_us; *t < end; *t += 10)
		while (roce_rate_ready(r, *t))
			roce_rate_sent(r, 1024, *t);
}

static void test_late(void **state)
{
	struct roce_rate r;
	uint64_t t = 5000, before, raises;

	(void)state;
	roce_rate_init(&r, t);
	send_for(&r, &t, 1000);
	before = r.rate;
	raises = r.raises;
	/* A late signal: a quarter, no fast recovery back to where it was. */
	assert_true(roce_rate_late(&r, t));
	assert_true(r.late);
	assert_int_equal(r.rate, before / 4);
	assert_int_equal(r.target, r.rate);
	/* Another within the gap is the same loss. */
	assert_false(roce_rate_late(&r, t + ROCE_RATE_LATE_GAP_US - 1));
	assert_int_equal(r.rate, before / 4);
	assert_int_equal(r.lates, 2);
	/* 99 ms of sending: no rise yet (a normal flow would have risen ~500 times). */
	send_for(&r, &t, ROCE_RATE_LATE_STEP_US - 1000);
	assert_int_equal(r.rate, before / 4);
	/* Past the step: up by 1/32, once. */
	send_for(&r, &t, 2000);
	assert_int_equal(r.rate, before / 4 + (before / 4 >> ROCE_RATE_LATE_SHIFT));
	assert_int_equal(r.raises, raises + 1);
	/* A second of sending: ten steps, each by 1/32 (about 36% in all, never doubling). */
	before = r.rate;
	send_for(&r, &t, 1000000);
	assert_true(r.rate > before + before / 4 && r.rate < before * 3 / 2);
	/* Idle: no rise (the step that was under way when sending stopped counts once). */
	t += 5000000;
	assert_true(roce_rate_ready(&r, t));
	before = r.rate;
	t += 1000000;
	assert_true(roce_rate_ready(&r, t));
	t += 1000000;
	assert_true(roce_rate_ready(&r, t));
	assert_int_equal(r.rate, before);
	/* Repeated late signals, each past the gap, reach the floor and stay there. */
	for (int i = 0; i < 20; i++) {
		t += ROCE_RATE_LATE_GAP_US;
		roce_rate_late(&r, t);
	}
	assert_int_equal(r.rate, ROCE_RATE_MIN);
	/* A CNP still cuts a late flow, which stays late. */
	send_for(&r, &t, 300000);
	before = r.rate;
	assert_true(roce_rate_signal(&r, t));
	assert_true(r.rate < before || r.rate == ROCE_RATE_MIN);
	assert_true(r.late);
}

/* A flow toward a peer known for late signals starts at the rate given, late, within the bounds. */
static void test_init_late(void **state)
{
	struct roce_rate r;
	uint64_t t = 10;

	(void)state;
	roce_rate_init_late(&r, 20000000, t);
	assert_int_equal(r.rate, 20000000);
	assert_true(r.late);
	/* A late signal at once counts (the gap is measured from an earlier flow's). */
	assert_true(roce_rate_late(&r, t));
	assert_int_equal(r.rate, 5000000);
	roce_rate_init_late(&r, 1, t);
	assert_int_equal(r.rate, ROCE_RATE_MIN);
	roce_rate_init_late(&r, ~0ull, t);
	assert_int_equal(r.rate, ROCE_RATE_LINE);
	/* It rises as a late flow. */
	roce_rate_init_late(&r, 32000000, t);
	send_for(&r, &t, ROCE_RATE_LATE_STEP_US + 1000);
	assert_int_equal(r.rate, 33000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_recovery),
		cmocka_unit_test(test_late),
		cmocka_unit_test(test_init_late),
	};

	return cmocka_run_group_tests_name("roce-rate-unit", tests, NULL, NULL);
}
