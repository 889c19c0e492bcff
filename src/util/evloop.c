/* epoll-based event loop; see evloop.h. */
#include "util/evloop.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

struct ev_watch {
	int fd;
	ev_fd_cb cb;
	void *arg;
	bool dead;
	struct ev_watch *next_dead;
};

struct ev_poller {
	ev_poll_fn fn;
	void *arg;
	bool dead;              /* removed: unlinked and freed after the turn */
	struct ev_poller *next;
};

#define MAX_DEFERRED 16
/* While busy, the pollers are called back to back for up to this long between two looks at the fds. */
#define SPIN_NS 2000

struct evloop {
	int epfd;
	bool stop;
	struct ev_watch *dead; /* removed watchers, freed after the batch */
	struct { void (*fn)(void *arg); void *arg; } deferred[MAX_DEFERRED];
	unsigned ndeferred;
	struct ev_poller *pollers;
	unsigned npollers;      /* live ones */
	bool pollers_asleep;    /* every poller said EV_POLL_ASLEEP on the last turn */
	bool pollers_more;      /* a poller said EV_POLL_MORE on the last turn */
	unsigned busy_us;
	unsigned idle_us;       /* the sleep between two idle turns, while there are pollers */
	uint64_t last_activity_ns;
	uint64_t longest_turn_ns; /* the longest turn's work, from the wake-up to the next wait */
	unsigned long_turns;    /* turns longer than EVLOOP_LONG_TURN_MS */
};

/*
 * The millisecond the current turn of evloop_run() began on this thread (0:
 * no turn runs). Every caller of evloop_now_ms() in a turn gets it: a turn's
 * frames and timers see one time, and the clock is read once per turn, not
 * once per frame.
 */
static _Thread_local uint64_t turn_ms;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long evloop_poll_timeout(bool busy, bool more, bool have_pollers, unsigned idle_us)
{
	if (busy || more)
		return 0;
	return have_pollers ? (long)idle_us : -1;
}

unsigned evloop_next_idle(unsigned idle_us, bool activity)
{
	if (activity || idle_us < EVLOOP_IDLE_MIN_US)
		return EVLOOP_IDLE_MIN_US;
	return idle_us >= EVLOOP_IDLE_MAX_US / 2 ? EVLOOP_IDLE_MAX_US : idle_us * 2;
}

/* epoll_wait with a timeout in microseconds (-1: none); epoll_pwait2 where the kernel has it. */
static int wait_events(struct evloop *loop, struct epoll_event *evs, int max, long timeout_us)
{
	static bool no_pwait2;

	if (timeout_us > 0 && !no_pwait2) {
		struct timespec ts = { timeout_us / 1000000, (timeout_us % 1000000) * 1000 };
		int n = epoll_pwait2(loop->epfd, evs, max, &ts, NULL);

		if (n >= 0 || errno != ENOSYS)
			return n;
		no_pwait2 = true;
	}
	return epoll_wait(loop->epfd, evs, max, timeout_us <= 0 ? (int)timeout_us : (int)((timeout_us + 999) / 1000));
}

struct ev_poller *evloop_add_poller(struct evloop *loop, ev_poll_fn fn, void *arg)
{
	struct ev_poller *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->fn = fn;
	p->arg = arg;
	p->next = loop->pollers;
	loop->pollers = p;
	loop->npollers++;
	loop->pollers_asleep = false; /* until the new one has said so itself */
	return p;
}

void evloop_del_poller(struct evloop *loop, struct ev_poller *p)
{
	if (p == NULL || p->dead)
		return;
	p->dead = true;
	loop->npollers--;
}

void evloop_set_busy_poll(struct evloop *loop, unsigned busy_us)
{
	loop->busy_us = busy_us;
}

/* Every live poller once; true if one of them found work. */
static bool run_pollers(struct evloop *loop)
{
	bool work = false, asleep = true, more = false;

	for (struct ev_poller *p = loop->pollers; p && !loop->stop; p = p->next) {
		enum ev_poll_result r;

		if (p->dead)
			continue;
		r = p->fn(p->arg);
		work |= r == EV_POLL_WORK || r == EV_POLL_MORE;
		more |= r == EV_POLL_MORE;
		asleep &= r == EV_POLL_ASLEEP;
	}
	loop->pollers_asleep = asleep;
	loop->pollers_more = more;
	return work;
}

int evloop_defer(struct evloop *loop, void (*fn)(void *arg), void *arg)
{
	if (loop->ndeferred == MAX_DEFERRED)
		return -ENOSPC;
	loop->deferred[loop->ndeferred].fn = fn;
	loop->deferred[loop->ndeferred].arg = arg;
	loop->ndeferred++;
	return 0;
}

static void deferred_nothing(void *arg)
{
	(void)arg;
}

/* Entries stay where they are (a batch may be running them): the call taken back does nothing. */
void evloop_undefer(struct evloop *loop, void (*fn)(void *arg), void *arg)
{
	for (unsigned i = 0; i < loop->ndeferred; i++)
		if (loop->deferred[i].fn == fn && loop->deferred[i].arg == arg)
			loop->deferred[i].fn = deferred_nothing;
}

static void run_deferred(struct evloop *loop)
{
	/* A deferred call may defer again; those run in the next round. */
	unsigned n = loop->ndeferred;

	for (unsigned i = 0; i < n; i++)
		loop->deferred[i].fn(loop->deferred[i].arg);
	memmove(loop->deferred, loop->deferred + n, (loop->ndeferred - n) * sizeof(loop->deferred[0]));
	loop->ndeferred -= n;
}

void evloop_run_deferred(struct evloop *loop)
{
	while (loop->ndeferred)
		run_deferred(loop);
}

struct evloop *evloop_new(void)
{
	struct evloop *loop = calloc(1, sizeof(*loop));

	if (loop == NULL)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		free(loop);
		return NULL;
	}
	return loop;
}

static void reap(struct evloop *loop)
{
	while (loop->dead) {
		struct ev_watch *w = loop->dead;

		loop->dead = w->next_dead;
		free(w);
	}
	for (struct ev_poller **pp = &loop->pollers; *pp;) {
		struct ev_poller *p = *pp;

		if (p->dead) {
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
}

void evloop_free(struct evloop *loop)
{
	if (loop == NULL)
		return;
	for (struct ev_poller *p = loop->pollers; p; p = p->next)
		p->dead = true;
	reap(loop);
	close(loop->epfd);
	free(loop);
}

struct ev_watch *evloop_add_fd(struct evloop *loop, int fd, uint32_t events, ev_fd_cb cb, void *arg)
{
	struct ev_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = events };

	if (w == NULL)
		return NULL;
	w->fd = fd;
	w->cb = cb;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		LOG_ERR("evloop: cannot watch fd %d: %m", fd);
		free(w);
		return NULL;
	}
	return w;
}

void evloop_del_fd(struct evloop *loop, struct ev_watch *w)
{
	if (w == NULL || w->dead)
		return;
	/* The fd may already be closed by its owner; then the kernel dropped it already. */
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	w->next_dead = loop->dead;
	loop->dead = w;
}

int evloop_mod_fd(struct evloop *loop, struct ev_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (w == NULL || w->dead)
		return -EINVAL;
	return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void evloop_stop(struct evloop *loop)
{
	loop->stop = true;
}

int evloop_run(struct evloop *loop)
{
	struct epoll_event evs[64];

	loop->stop = false;
	loop->idle_us = EVLOOP_IDLE_MIN_US;
	loop->last_activity_ns = mono_ns();
	while (!loop->stop) {
		bool busy = loop->busy_us && mono_ns() - loop->last_activity_ns < (uint64_t)loop->busy_us * 1000;
		long timeout = evloop_poll_timeout(busy, loop->npollers > 0 && loop->pollers_more,
						   loop->npollers > 0 && !loop->pollers_asleep, loop->idle_us);
		int n = wait_events(loop, evs, 64, timeout);
		uint64_t woke_ns = mono_ns(), end_ns, turn_ns;
		bool activity;

		turn_ms = woke_ns / 1000000u;

		if (n < 0) {
			turn_ms = 0;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !loop->stop; i++) {
			struct ev_watch *w = evs[i].data.ptr;

			if (!w->dead)
				w->cb(w->arg, evs[i].events);
		}
		activity = n > 0;
		if (loop->npollers && !loop->stop) {
			activity |= run_pollers(loop);
			if (busy && !activity && !loop->pollers_asleep) {
				/*
				 * Look at the pollers more often than at the fds: a look at the
				 * fds is a system call. (Not at pollers that are all asleep:
				 * nothing can reach them but through an fd.)
				 */
				uint64_t until = mono_ns() + SPIN_NS;

				while (!activity && !loop->stop && mono_ns() < until)
					activity = run_pollers(loop);
			}
		}
		/*
		 * Spinning must not keep off this CPU the thread that would bring the
		 * work (a client, a vCPU): let anything runnable here go first.
		 */
		if (busy && !activity)
			sched_yield();
		while (loop->ndeferred && !loop->stop)
			run_deferred(loop);
		reap(loop);
		end_ns = mono_ns();
		turn_ms = 0;
		if (activity) {
			loop->last_activity_ns = end_ns;
			loop->idle_us = evloop_next_idle(loop->idle_us, true);
		} else if (timeout > 0) {
			loop->idle_us = evloop_next_idle(loop->idle_us, false);
		}
		turn_ns = end_ns - woke_ns;
		if (turn_ns > loop->longest_turn_ns)
			loop->longest_turn_ns = turn_ns;
		if (turn_ns >= EVLOOP_LONG_TURN_MS * 1000000ull && ++loop->long_turns <= EVLOOP_LONG_TURNS_LOGGED)
			LOG_WARN("event loop: one turn took %llu ms (%d fds were ready); nothing else was served meanwhile",
				 (unsigned long long)(turn_ns / 1000000), n);
	}
	return 0;
}

void evloop_turn_stats(const struct evloop *loop, uint64_t *longest_us, unsigned *long_turns)
{
	*longest_us = loop->longest_turn_ns / 1000;
	*long_turns = loop->long_turns;
}

struct ev_timer {
	int fd;
	struct ev_watch *w;
	ev_fd_cb cb;
	void *arg;
};

static void on_timer(void *arg, uint32_t events)
{
	struct ev_timer *t = arg;
	uint64_t expirations;

	(void)events;
	if (read(t->fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations))
		return;
	t->cb(t->arg, 0);
}

struct ev_timer *evloop_add_timer(struct evloop *loop, unsigned interval_ms, ev_fd_cb cb, void *arg)
{
	struct ev_timer *t = calloc(1, sizeof(*t));
	struct itimerspec its = {
		.it_interval = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000 },
		.it_value = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000 },
	};

	if (t == NULL)
		return NULL;
	t->cb = cb;
	t->arg = arg;
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->fd < 0 || timerfd_settime(t->fd, 0, &its, NULL) < 0 ||
	    (t->w = evloop_add_fd(loop, t->fd, EPOLLIN, on_timer, t)) == NULL) {
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return NULL;
	}
	return t;
}

void evloop_del_timer(struct evloop *loop, struct ev_timer *t)
{
	if (t == NULL)
		return;
	evloop_del_fd(loop, t->w);
	close(t->fd);
	free(t);
}

uint64_t evloop_now_ms(void)
{
	struct timespec ts;

	if (turn_ms != 0)
		return turn_ms;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
