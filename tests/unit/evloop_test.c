/*
 * evloop-unit: pollers, their removal from a callback, the busy window, the idle back-off, work
 * in slices and the report of long turns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "util/evloop.h"

static void test_idle_policy(void **state)
{
	(void)state;
	assert_int_equal(evloop_poll_timeout(true, false, true, 4), 0);
	assert_int_equal(evloop_poll_timeout(true, false, false, 4), 0);
	assert_int_equal(evloop_poll_timeout(false, false, true, 3), 3);
	assert_int_equal(evloop_poll_timeout(false, false, false, 3), -1);
	/* A poller with more work ready: the next turn comes at once, busy window or not. */
	assert_int_equal(evloop_poll_timeout(false, true, true, 3), 0);
	assert_int_equal(evloop_poll_timeout(true, true, true, 3), 0);
	/* Doubling up to the ceiling while nothing happens, back to the floor on activity. */
	assert_int_equal(evloop_next_idle(EVLOOP_IDLE_MIN_US, false), 2 * EVLOOP_IDLE_MIN_US);
	assert_int_equal(evloop_next_idle(1000, false), 2000);
	assert_int_equal(evloop_next_idle(3000, false), EVLOOP_IDLE_MAX_US);
	assert_int_equal(evloop_next_idle(EVLOOP_IDLE_MAX_US, false), EVLOOP_IDLE_MAX_US);
	assert_int_equal(evloop_next_idle(EVLOOP_IDLE_MAX_US, true), EVLOOP_IDLE_MIN_US);
	assert_int_equal(evloop_next_idle(0, false), EVLOOP_IDLE_MIN_US);
	/* The ladder from the floor to the ceiling is short: a handful of wake-ups after each burst. */
	unsigned steps = 0;
	for (unsigned us = EVLOOP_IDLE_MIN_US; us < EVLOOP_IDLE_MAX_US; us = evloop_next_idle(us, false))
		steps++;
	assert_true(steps <= 8);
}

struct counter {
	struct evloop *loop;
	struct ev_poller *self;
	unsigned calls, stop_after, work_calls;
	bool remove_self, asleep;
};

static enum ev_poll_result count_poll(void *arg)
{
	struct counter *c = arg;

	c->calls++;
	if (c->remove_self)
		evloop_del_poller(c->loop, c->self);
	if (c->stop_after && c->calls == c->stop_after)
		evloop_stop(c->loop);
	if (c->asleep)
		return EV_POLL_ASLEEP;
	return c->calls <= c->work_calls ? EV_POLL_WORK : EV_POLL_EMPTY;
}

static void test_pollers_run_and_go(void **state)
{
	struct evloop *loop = evloop_new();
	struct counter once = { .loop = loop, .remove_self = true }, five = { .loop = loop, .stop_after = 5 };

	(void)state;
	once.self = evloop_add_poller(loop, count_poll, &once);
	five.self = evloop_add_poller(loop, count_poll, &five);
	assert_non_null(once.self);
	assert_non_null(five.self);
	/* Without fds the loop still turns (idle ticks), so the pollers are called. */
	assert_int_equal(evloop_run(loop), 0);
	assert_int_equal(five.calls, 5);
	assert_int_equal(once.calls, 1); /* removed itself in its first call */
	evloop_free(loop);
}

static void nothing_cb(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
}

static void stop_cb(void *arg, uint32_t events)
{
	(void)events;
	evloop_stop(arg);
}

/* Poller calls during 60 ms, when the poller finds work in its first call only (or is asleep). */
static unsigned calls_in_60ms(unsigned busy_us, bool asleep)
{
	struct evloop *loop = evloop_new();
	struct counter c = { .loop = loop, .work_calls = 1, .asleep = asleep };
	struct ev_timer *t, *wake;

	evloop_set_busy_poll(loop, busy_us);
	c.self = evloop_add_poller(loop, count_poll, &c);
	t = evloop_add_timer(loop, 60, stop_cb, loop);
	wake = evloop_add_timer(loop, 25, nothing_cb, NULL);
	assert_non_null(t);
	assert_non_null(wake);
	assert_int_equal(evloop_run(loop), 0);
	evloop_del_timer(loop, t);
	evloop_del_timer(loop, wake);
	evloop_free(loop);
	return c.calls;
}

static void test_busy_window(void **state)
{
	(void)state;
	/*
	 * A 30 ms window spins; without one the loop sleeps between idle ticks (50 us doubling to 4 ms:
	 * fewer than 30 turns in 60 ms). The spinning side only needs to beat the sleeping side by a
	 * wide margin: on a machine whose cores are all busy it gets a fraction of one, so no more is
	 * asked than 150 calls (it makes tens of thousands on an idle core).
	 */
	assert_true(calls_in_60ms(30000, false) > 150);
	assert_true(calls_in_60ms(0, false) < 60);
	/* A poller that is asleep is called once, then only when an fd wakes the loop (a 25 ms timer
	 * here, and the 60 ms one that stops it; a loaded machine may serve both in one turn). */
	unsigned asleep = calls_in_60ms(0, true);
	assert_true(asleep == 2 || asleep == 3);
}

/*
 * A long task done in slices: EV_POLL_MORE while slices remain, then asleep.
 * At slice `poke` it makes a pipe readable; the pipe's callback notes how
 * many slices had run when it was served.
 */
struct slicer {
	unsigned slices, calls, poke, seen_at;
	int pipe[2];
};

static enum ev_poll_result slice_poll(void *arg)
{
	struct slicer *s = arg;

	if (s->calls == s->slices)
		return EV_POLL_ASLEEP;
	s->calls++;
	if (s->calls == s->poke && write(s->pipe[1], "x", 1) != 1)
		fail_msg("pipe write");
	return s->calls < s->slices ? EV_POLL_MORE : EV_POLL_WORK;
}

static void pipe_cb(void *arg, uint32_t events)
{
	struct slicer *s = arg;
	char c;

	(void)events;
	if (read(s->pipe[0], &c, 1) == 1)
		s->seen_at = s->calls;
}

static void test_slices(void **state)
{
	struct evloop *loop = evloop_new();
	struct slicer s = { .slices = 2000, .poke = 10 };
	struct ev_watch *w;
	struct ev_timer *t;

	(void)state;
	assert_int_equal(pipe(s.pipe), 0);
	/* No busy window: without EV_POLL_MORE every turn would sleep 50 us or more. */
	assert_non_null(evloop_add_poller(loop, slice_poll, &s));
	w = evloop_add_fd(loop, s.pipe[0], EPOLLIN, pipe_cb, &s);
	t = evloop_add_timer(loop, 60, stop_cb, loop);
	assert_non_null(w);
	assert_non_null(t);
	assert_int_equal(evloop_run(loop), 0);
	/* 2000 slices within 60 ms: the loop did not sleep between them (it would need 100 ms at least). */
	assert_int_equal(s.calls, s.slices);
	/* The fd that became ready during slice 10 was served before slice 11. */
	assert_int_equal(s.seen_at, s.poke);
	evloop_del_timer(loop, t);
	evloop_del_fd(loop, w);
	evloop_free(loop);
	close(s.pipe[0]);
	close(s.pipe[1]);
}

/* A poller that keeps its turn busy for `ms` milliseconds on its first call, then stops the loop. */
struct hog {
	struct evloop *loop;
	unsigned ms, calls;
};

static enum ev_poll_result hog_poll(void *arg)
{
	struct hog *h = arg;

	if (h->calls++ == 0) {
		usleep(h->ms * 1000);
		return EV_POLL_WORK;
	}
	evloop_stop(h->loop);
	return EV_POLL_EMPTY;
}

static void test_long_turn(void **state)
{
	struct evloop *loop = evloop_new();
	struct hog h = { .loop = loop, .ms = EVLOOP_LONG_TURN_MS + 20 };
	uint64_t longest_us = 1;
	unsigned long_turns = 99;

	(void)state;
	/* A fresh loop has had no turn. */
	evloop_turn_stats(loop, &longest_us, &long_turns);
	assert_int_equal(longest_us, 0);
	assert_int_equal(long_turns, 0);
	assert_non_null(evloop_add_poller(loop, hog_poll, &h));
	assert_int_equal(evloop_run(loop), 0);
	/* The hog's turn is the longest and the one long turn (sleeping lasts at least that long). */
	evloop_turn_stats(loop, &longest_us, &long_turns);
	assert_true(longest_us >= (uint64_t)h.ms * 1000);
	assert_int_equal(long_turns, 1);
	evloop_free(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_policy),
		cmocka_unit_test(test_pollers_run_and_go),
		cmocka_unit_test(test_busy_window),
		cmocka_unit_test(test_slices),
		cmocka_unit_test(test_long_turn),
	};

	return cmocka_run_group_tests_name("evloop-unit", tests, NULL, NULL);
}
