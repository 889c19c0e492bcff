/*
 * evloop-unit: pollers, their removal from a callback, the busy window, the idle back-off, work
 * in slices, the report of long turns and deferred calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
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
	int wake_fd;            /* > 0: an asleep poller's first call writes one byte here */
};

static void wake_by_pipe(int fd)
{
	if (write(fd, "x", 1) != 1)
		fail_msg("pipe write");
}

static enum ev_poll_result count_poll(void *arg)
{
	struct counter *c = arg;

	c->calls++;
	if (c->remove_self)
		evloop_del_poller(c->loop, c->self);
	if (c->stop_after && c->calls == c->stop_after)
		evloop_stop(c->loop);
	if (c->asleep) {
		if (c->wake_fd > 0 && c->calls == 1)
			wake_by_pipe(c->wake_fd);
		return EV_POLL_ASLEEP;
	}
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

/*
 * Every wait the loop makes, with its timeout in microseconds (-1: none, 0: a look without
 * sleeping), recorded by wrapping the two system calls it waits with. The tests below judge the
 * loop by what it asks the kernel for, never by how many turns fit in some time: a loaded machine
 * changes the second, not the first.
 */
#define WAITS_MAX 64
static long waits[WAITS_MAX];
static unsigned nwaits, nsleeps; /* all waits, and those that may sleep (timeout not 0) */

static void note_wait(long us)
{
	if (nwaits < WAITS_MAX)
		waits[nwaits] = us;
	nwaits++;
	nsleeps += us != 0;
}

int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	static int (*real)(int, struct epoll_event *, int, int);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "epoll_wait");
	note_wait(timeout_ms <= 0 ? timeout_ms : timeout_ms * 1000L);
	return real(epfd, evs, max, timeout_ms);
}

int epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts, const sigset_t *mask)
{
	static int (*real)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "epoll_pwait2");
	note_wait(ts ? (long)(ts->tv_sec * 1000000 + ts->tv_nsec / 1000) : -1);
	return real(epfd, evs, max, ts, mask);
}

static void drain_cb(void *arg, uint32_t events)
{
	char c;

	(void)events;
	if (read(*(int *)arg, &c, 1) != 1)
		fail_msg("pipe read");
}

static void test_busy_window(void **state)
{
	struct evloop *loop;
	struct ev_watch *w;
	struct counter c;
	int pfd[2];

	(void)state;
	/* Within a busy window the loop never sleeps: every wait is a look (timeout 0), and the poller
	 * is called between looks until it stops the loop. The window (a minute) outlasts the test. */
	loop = evloop_new();
	c = (struct counter){ .loop = loop, .work_calls = 1, .stop_after = 200 };
	evloop_set_busy_poll(loop, 60000000);
	c.self = evloop_add_poller(loop, count_poll, &c);
	nwaits = 0;
	assert_int_equal(evloop_run(loop), 0);
	assert_int_equal(c.calls, 200);
	assert_true(nwaits >= 1 && nwaits <= WAITS_MAX);
	for (unsigned i = 0; i < nwaits; i++)
		assert_int_equal(waits[i], 0);
	evloop_free(loop);

	/* Without a window an idle loop sleeps between turns, on the ladder: 50 us doubling to 4 ms. */
	loop = evloop_new();
	c = (struct counter){ .loop = loop, .stop_after = 12 };
	c.self = evloop_add_poller(loop, count_poll, &c);
	nwaits = 0;
	assert_int_equal(evloop_run(loop), 0);
	assert_int_equal(c.calls, 12);
	assert_int_equal(nwaits, 12);
	for (unsigned i = 0, us = EVLOOP_IDLE_MIN_US; i < 12; i++, us = evloop_next_idle(us, false))
		assert_int_equal(waits[i], us);
	assert_int_equal(waits[11], EVLOOP_IDLE_MAX_US);
	evloop_free(loop);

	/* A poller that is asleep is called once; the loop then waits without a timeout until an fd
	 * wakes it (here a pipe the poller wrote to), and calls the poller again. */
	loop = evloop_new();
	assert_int_equal(pipe(pfd), 0);
	c = (struct counter){ .loop = loop, .asleep = true, .stop_after = 2, .wake_fd = pfd[1] };
	c.self = evloop_add_poller(loop, count_poll, &c);
	w = evloop_add_fd(loop, pfd[0], EPOLLIN, drain_cb, &pfd[0]);
	assert_non_null(w);
	nwaits = 0;
	assert_int_equal(evloop_run(loop), 0);
	assert_int_equal(c.calls, 2);
	assert_int_equal(nwaits, 2);
	assert_int_equal(waits[0], EVLOOP_IDLE_MIN_US); /* not yet known to be asleep */
	assert_int_equal(waits[1], -1);
	evloop_del_fd(loop, w);
	evloop_free(loop);
	close(pfd[0]);
	close(pfd[1]);
}

/*
 * A long task done in slices: EV_POLL_MORE while slices remain, then asleep.
 * At slice `poke` it makes a pipe readable; the pipe's callback notes how
 * many slices had run when it was served.
 */
struct slicer {
	struct evloop *loop;
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
	if (s->calls == s->slices)
		evloop_stop(s->loop);
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
	struct slicer s = { .loop = loop, .slices = 2000, .poke = 10 };
	struct ev_watch *w;

	(void)state;
	assert_int_equal(pipe(s.pipe), 0);
	/* No busy window: without EV_POLL_MORE every turn would sleep 50 us or more. */
	assert_non_null(evloop_add_poller(loop, slice_poll, &s));
	w = evloop_add_fd(loop, s.pipe[0], EPOLLIN, pipe_cb, &s);
	assert_non_null(w);
	nwaits = nsleeps = 0;
	assert_int_equal(evloop_run(loop), 0);
	assert_int_equal(s.calls, s.slices);
	/* The loop slept only before it knew of the work (the first wait, the idle floor): between two
	 * slices it only looked at the fds. */
	assert_true(nwaits >= s.slices);
	assert_int_equal(nsleeps, 1);
	assert_int_equal(waits[0], EVLOOP_IDLE_MIN_US);
	/* The fd that became ready during slice 10 was served before slice 11. */
	assert_int_equal(s.seen_at, s.poke);
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
	/* Two turns in all (the hog's and the one that stops): a loaded machine may stretch the
	 * second past the threshold as well, never the count past two. */
	assert_true(long_turns >= 1 && long_turns <= 2);
	evloop_free(loop);
}

/* Deferred calls: in order, once; one taken back (even by a deferred call of the same batch) does nothing. */
struct deferred_log {
	struct evloop *loop;
	char seen[8];
	unsigned n;
};

static void note_a(void *arg)
{
	struct deferred_log *l = arg;

	l->seen[l->n++] = 'a';
}

static void note_b(void *arg)
{
	struct deferred_log *l = arg;

	l->seen[l->n++] = 'b';
}

static void take_back_b(void *arg)
{
	struct deferred_log *l = arg;

	l->seen[l->n++] = 't';
	evloop_undefer(l->loop, note_b, l);
}

static void test_deferred(void **state)
{
	struct deferred_log l = { .loop = evloop_new() };

	(void)state;
	assert_non_null(l.loop);
	assert_int_equal(evloop_defer(l.loop, note_a, &l), 0);
	assert_int_equal(evloop_defer(l.loop, note_b, &l), 0);
	assert_int_equal(evloop_defer(l.loop, note_a, &l), 0);
	evloop_undefer(l.loop, note_a, &l);
	evloop_run_deferred(l.loop);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.seen[0], 'b');
	evloop_run_deferred(l.loop);            /* nothing left */
	assert_int_equal(l.n, 1);
	assert_int_equal(evloop_defer(l.loop, take_back_b, &l), 0);
	assert_int_equal(evloop_defer(l.loop, note_b, &l), 0);
	assert_int_equal(evloop_defer(l.loop, note_a, &l), 0);
	evloop_run_deferred(l.loop);
	assert_int_equal(l.n, 3);
	assert_memory_equal(l.seen, "bta", 3);
	evloop_free(l.loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_policy),
		cmocka_unit_test(test_pollers_run_and_go),
		cmocka_unit_test(test_busy_window),
		cmocka_unit_test(test_slices),
		cmocka_unit_test(test_long_turn),
		cmocka_unit_test(test_deferred),
	};

	return cmocka_run_group_tests_name("evloop-unit", tests, NULL, NULL);
}
