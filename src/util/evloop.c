/* epoll-based event loop; see evloop.h. */
#include "util/evloop.h"

#include <errno.h>
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

#define MAX_DEFERRED 16

struct evloop {
	int epfd;
	bool stop;
	struct ev_watch *dead; /* removed watchers, freed after the batch */
	struct { void (*fn)(void *arg); void *arg; } deferred[MAX_DEFERRED];
	unsigned ndeferred;
};

int evloop_defer(struct evloop *loop, void (*fn)(void *arg), void *arg)
{
	if (loop->ndeferred == MAX_DEFERRED)
		return -ENOSPC;
	loop->deferred[loop->ndeferred].fn = fn;
	loop->deferred[loop->ndeferred].arg = arg;
	loop->ndeferred++;
	return 0;
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
}

void evloop_free(struct evloop *loop)
{
	if (loop == NULL)
		return;
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

void evloop_stop(struct evloop *loop)
{
	loop->stop = true;
}

int evloop_run(struct evloop *loop)
{
	struct epoll_event evs[64];

	loop->stop = false;
	while (!loop->stop) {
		int n = epoll_wait(loop->epfd, evs, 64, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !loop->stop; i++) {
			struct ev_watch *w = evs[i].data.ptr;

			if (!w->dead)
				w->cb(w->arg, evs[i].events);
		}
		while (loop->ndeferred && !loop->stop)
			run_deferred(loop);
		reap(loop);
	}
	return 0;
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

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
