/*
 * The event loop: one thread, epoll underneath, file-descriptor watchers.
 *
 * Callbacks run on the loop's thread. A watcher may be removed from inside
 * any callback, its own included; its memory is released after the current
 * batch of events, so a pending event for it is dropped, never delivered.
 *
 * Functions returning int give 0 or -errno.
 */
#ifndef ERNIC_UTIL_EVLOOP_H
#define ERNIC_UTIL_EVLOOP_H

#include <stdint.h>

struct evloop;
struct ev_watch;

/* events: the EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP bits that fired. */
typedef void (*ev_fd_cb)(void *arg, uint32_t events);

struct evloop *evloop_new(void);
void evloop_free(struct evloop *loop);

/* Watch fd for events (EPOLLIN, EPOLLOUT); the caller keeps ownership of fd. */
struct ev_watch *evloop_add_fd(struct evloop *loop, int fd, uint32_t events, ev_fd_cb cb, void *arg);
/* Stop watching; call before closing the fd. w must not be used afterwards; NULL is ignored. */
void evloop_del_fd(struct evloop *loop, struct ev_watch *w);

/*
 * A periodic timer: cb(arg, 0) every interval_ms (first after interval_ms),
 * until evloop_del_timer(). Returns NULL on failure.
 */
struct ev_timer;
struct ev_timer *evloop_add_timer(struct evloop *loop, unsigned interval_ms, ev_fd_cb cb, void *arg);
void evloop_del_timer(struct evloop *loop, struct ev_timer *t);

/*
 * Run fn(arg) once, after the callbacks of the current batch of events (for
 * work that should gather what those callbacks produce, like a TAP flush).
 * Returns 0, or -ENOSPC when too many are pending.
 */
int evloop_defer(struct evloop *loop, void (*fn)(void *arg), void *arg);

/* Milliseconds of a monotonic clock. */
uint64_t evloop_now_ms(void);

/* Dispatch until evloop_stop(). Returns 0, or -errno if epoll itself failed. */
int evloop_run(struct evloop *loop);
void evloop_stop(struct evloop *loop);

#endif
