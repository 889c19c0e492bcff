/* epoll-based event loop; see evloop.h. */
#include "util/evloop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "util/log.h"

struct ev_watch {
	int fd;
	ev_fd_cb cb;
	void *arg;
	bool dead;
	struct ev_watch *next_dead;
};

struct evloop {
	int epfd;
	bool stop;
	struct ev_watch *dead; /* removed watchers, freed after the batch */
};

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

int evloop_mod_fd(struct evloop *loop, struct ev_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	return 0;
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
		reap(loop);
	}
	return 0;
}
