/*
 * The event loop: one thread, epoll underneath, file-descriptor watchers and
 * pollers.
 *
 * Callbacks run on the loop's thread. A watcher may be removed from inside
 * any callback, its own included; its memory is released after the current
 * batch of events, so a pending event for it is dropped, never delivered.
 *
 * Polling. Some work is found only by looking (memory a client writes
 * without telling anyone, such as mapped doorbell pages): a poller is called
 * on every turn of the loop and says whether it found work. After any
 * activity (a ready fd, or a poller that found work) the loop spins for a
 * busy window without sleeping, calling the pollers and checking the fds;
 * when the window passes quietly it sleeps, waking every idle interval for
 * the pollers (50 us, doubling up to 4 ms while nothing happens: a short gap
 * costs little latency, a long silence few wake-ups). Without
 * pollers it sleeps until an fd is ready, as a plain epoll loop does; the
 * busy window applies all the same (a reply that follows a message closely
 * is then picked up without a wake-up).
 *
 * Work in slices. A poller may also carry out long work a piece at a time:
 * it does one bounded slice per call and says EV_POLL_MORE while more is
 * ready, and the loop then goes round again at once, looking at the fds
 * before the next slice, so one long task never keeps the fds waiting for
 * longer than a slice.
 *
 * Functions returning int give 0 or -errno.
 */
#ifndef ERNIC_UTIL_EVLOOP_H
#define ERNIC_UTIL_EVLOOP_H

#include <stdbool.h>
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
/* Change the events a watch waits for. 0 or -errno. */
int evloop_mod_fd(struct evloop *loop, struct ev_watch *w, uint32_t events);

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
/* Takes back every pending evloop_defer() of fn(arg): for an owner freed before the batch ends. */
void evloop_undefer(struct evloop *loop, void (*fn)(void *arg), void *arg);
/* Runs the pending deferred calls now, as the end of a batch does (for a driver outside evloop_run(), like a test). */
void evloop_run_deferred(struct evloop *loop);

/*
 * A poller: fn(arg) on every turn of the loop. It returns EV_POLL_WORK when
 * it found (and did) work, which keeps the loop in its busy window,
 * EV_POLL_MORE when it did work and more is ready now (the next turn then
 * follows without sleeping: the fds are looked at, then the pollers are
 * called again), EV_POLL_EMPTY when it looked and found nothing, and
 * EV_POLL_ASLEEP when nothing can arrive for it until an fd wakes the loop
 * (no client, say): while every poller is asleep the loop sleeps until an
 * fd is ready. A poller may be removed from any callback, its own included.
 * Returns NULL on failure.
 */
enum ev_poll_result {
	EV_POLL_ASLEEP,
	EV_POLL_EMPTY,
	EV_POLL_WORK,
	EV_POLL_MORE,
};
typedef enum ev_poll_result (*ev_poll_fn)(void *arg);
struct ev_poller;
struct ev_poller *evloop_add_poller(struct evloop *loop, ev_poll_fn fn, void *arg);
void evloop_del_poller(struct evloop *loop, struct ev_poller *p);

/* The busy window after activity, in microseconds (0: never spin). Default 0. */
void evloop_set_busy_poll(struct evloop *loop, unsigned busy_us);

/*
 * The sleep before the next turn: 0 (spin), -1 (until an fd is ready) or
 * microseconds. more: a poller said EV_POLL_MORE on the last turn.
 */
#define EVLOOP_IDLE_MIN_US 50
#define EVLOOP_IDLE_MAX_US 4000
long evloop_poll_timeout(bool busy, bool more, bool have_pollers, unsigned idle_us);
/* The idle interval after a turn that found nothing (doubling) or found work (back to the minimum). */
unsigned evloop_next_idle(unsigned idle_us, bool activity);

/*
 * Milliseconds of a monotonic clock. Inside a turn of evloop_run() it is the
 * time the turn began (a turn is short: EVLOOP_LONG_TURN_MS is a warning), so
 * do not wait for it to move within a callback.
 */
uint64_t evloop_now_ms(void);

/*
 * How long the loop kept everything else waiting: its longest turn (the work
 * from a wake-up to the next wait, in microseconds) and how many turns took
 * EVLOOP_LONG_TURN_MS or more (the first EVLOOP_LONG_TURNS_LOGGED of those are
 * logged as warnings when they happen).
 */
#define EVLOOP_LONG_TURN_MS 200
#define EVLOOP_LONG_TURNS_LOGGED 10
void evloop_turn_stats(const struct evloop *loop, uint64_t *longest_us, unsigned *long_turns);

/* Dispatch until evloop_stop(). Returns 0, or -errno if epoll itself failed. */
int evloop_run(struct evloop *loop);
void evloop_stop(struct evloop *loop);

#endif
