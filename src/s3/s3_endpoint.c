/* The S3 endpoint on the segment: store + a host with the TCP stack + HTTP connections; see s3_endpoint.h. */
#include "s3/s3_endpoint.h"

#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>

#include "net/net_host.h"
#include "net/net_nd.h"
#include "s3/s3_conn.h"
#include "s3/s3_target.h"
#include "util/evloop.h"

_Static_assert(S3_WINDOW_MIN >= INET_TCP_WINDOW && S3_WINDOW_MAX <= INET_TCP_WINDOW_MAX,
	       "window= stays within what the stack takes");

#define S3_SERVER_QPN 0x00d00000 /* nominal: no queue pair is ever connected on this path */

/*
 * RDMA transfers in slices, as the RDMA engine moves its own: per turn of the
 * event loop at most SLICE_BYTES or SLICE_NS (a PUT hashes what it reads, at
 * about 0.6 GB/s: the time limit is the one that counts for it), in pieces of
 * PIECE bytes given to the waiting connections in turn.
 */
#define PIECE       (128u << 10)
#define SLICE_BYTES (2u << 20)
#define SLICE_NS    500000u

/* One TCP connection's application: its HTTP connection, on the endpoint's list. */
struct ep_conn {
	struct s3_endpoint *ep;
	struct s3_conn *c;
	struct ep_conn *prev, *next;
};

struct s3_endpoint {
	struct s3_store *store;
	struct net_host *host;
	struct evloop *loop;
	struct ev_poller *work;
	struct ev_watch *md5_done; /* the store's MD5 thread has a digest */
	struct ep_conn *conns;
};

/* ---- the TCP stack's application: one s3_conn per connection ---- */

static void *app_open(void *ctx)
{
	struct s3_endpoint *ep = ctx;
	struct ep_conn *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->c = s3_conn_new(ep->store);
	if (e->c == NULL) {
		free(e);
		return NULL;
	}
	s3_conn_defer_transfers(e->c);
	e->ep = ep;
	e->next = ep->conns;
	if (ep->conns)
		ep->conns->prev = e;
	ep->conns = e;
	return e;
}

static size_t app_input(void *app, const uint8_t *data, size_t len)
{
	struct ep_conn *e = app;

	return s3_conn_input(e->c, data, len);
}

static void app_eof(void *app)
{
	struct ep_conn *e = app;

	s3_conn_input_eof(e->c);
}

static size_t app_peek(void *app, uint64_t off, const uint8_t **data)
{
	struct ep_conn *e = app;

	return s3_conn_output_peek(e->c, off, data);
}

static void app_acked(void *app, size_t n)
{
	struct ep_conn *e = app;

	s3_conn_output_done(e->c, n);
}

static bool app_wants_close(void *app)
{
	struct ep_conn *e = app;

	return s3_conn_wants_close(e->c);
}

static void app_close(void *app)
{
	struct ep_conn *e = app;

	if (e->prev)
		e->prev->next = e->next;
	else
		e->ep->conns = e->next;
	if (e->next)
		e->next->prev = e->prev;
	s3_conn_free(e->c);
	free(e);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The event loop's poller: a slice of the waiting RDMA transfers, a piece per
 * connection in turn. When one ends (its response queued), the stack sends it
 * and offers the connection's held input again; that may start new transfers,
 * which the next turn serves.
 */
static enum ev_poll_result ep_work(void *arg)
{
	struct s3_endpoint *ep = arg;
	uint64_t t0 = 0, moved = 0;
	bool busy = true, finished = false, worked = false;

	/*
	 * The slice's clock starts after the first pass (most turns end there, and
	 * each read of the clock is paid by every request): a slice is at most a
	 * pass longer than SLICE_NS.
	 */
	for (bool first = true; busy && moved < SLICE_BYTES; first = false) {
		if (!first && t0 == 0)
			t0 = mono_ns();
		else if (!first && mono_ns() - t0 >= SLICE_NS)
			break;
		busy = false;
		for (struct ep_conn *e = ep->conns; e; e = e->next) {
			if (!s3_conn_busy(e->c) || s3_conn_hashing(e->c))
				continue; /* a digest to wait for: the MD5 thread's eventfd wakes us */
			worked = true;
			if (s3_conn_work(e->c, PIECE))
				busy = true;
			else
				finished = true;
			moved += PIECE;
		}
	}
	if (finished)
		net_host_service(ep->host); /* may close connections (and free their entries) */
	for (struct ep_conn *e = ep->conns; e; e = e->next)
		if (s3_conn_busy(e->c) && !s3_conn_hashing(e->c))
			return EV_POLL_MORE;
	return worked ? EV_POLL_WORK : EV_POLL_ASLEEP;
}

/* A body's digest is ready: its response can go (ep_work finishes every connection whose is). */
static void on_md5_done(void *arg, uint32_t events)
{
	struct s3_endpoint *ep = arg;
	uint64_t n;

	(void)events;
	if (read(s3_store_md5_fd(ep->store), &n, sizeof(n)) < 0)
		return; /* nothing to clear: woken for another stream already handled */
	ep_work(ep);
}

struct s3_endpoint *s3_endpoint_new(const struct s3_config *cfg, struct evloop *loop, struct net_switch *sw,
				    char *err, size_t errlen)
{
	struct s3_endpoint *ep = calloc(1, sizeof(*ep));
	struct s3_token server = { .transport = S3_TRANSPORT_RC, .qpn = S3_SERVER_QPN, .port = 1 };
	struct net_host_config hc = {
		.name = "s3", .ip = cfg->ip, .port = cfg->port, .window = (uint32_t)cfg->window,
		.app = { .ctx = ep, .open = app_open, .input = app_input, .input_eof = app_eof, .peek = app_peek,
			 .acked = app_acked, .wants_close = app_wants_close, .close = app_close },
	};

	if (ep == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* The server's token names it as an RC peer at its IPv4-mapped GID. */
	server.gid[10] = server.gid[11] = 0xff;
	server.gid[12] = (uint8_t)(cfg->ip >> 24);
	server.gid[13] = (uint8_t)(cfg->ip >> 16);
	server.gid[14] = (uint8_t)(cfg->ip >> 8);
	server.gid[15] = (uint8_t)cfg->ip;
	s3_endpoint_mac(cfg->ip, hc.mac);
	ep->store = s3_store_new(cfg, &server);
	if (ep->store == NULL) {
		if (cfg->dir[0])
			snprintf(err, errlen, "s3 backend: cannot create the store under dir=%s (the log says why)", cfg->dir);
		else
			snprintf(err, errlen, "s3 backend: cannot create the store");
		goto fail;
	}
	{
		/* And at its link-local GID, for clients that registered from theirs (the host answers its ND). */
		uint8_t ll[16];

		net_nd_ll_from_mac(hc.mac, ll);
		s3_store_set_server_ll(ep->store, ll);
	}
	ep->host = net_host_new(&hc, loop, sw, err, errlen);
	if (ep->host == NULL)
		goto fail;
	ep->loop = loop;
	ep->work = evloop_add_poller(loop, ep_work, ep);
	if (ep->work == NULL) {
		snprintf(err, errlen, "s3 backend: cannot schedule its work");
		goto fail;
	}
	if (s3_store_md5_fd(ep->store) >= 0) {
		ep->md5_done = evloop_add_fd(loop, s3_store_md5_fd(ep->store), EPOLLIN, on_md5_done, ep);
		if (ep->md5_done == NULL) {
			snprintf(err, errlen, "s3 backend: cannot watch its MD5 thread");
			goto fail;
		}
	}
	return ep;
fail:
	s3_endpoint_free(ep);
	return NULL;
}

void s3_endpoint_free(struct s3_endpoint *ep)
{
	if (ep == NULL)
		return;
	if (ep->work)
		evloop_del_poller(ep->loop, ep->work);
	if (ep->md5_done)
		evloop_del_fd(ep->loop, ep->md5_done);
	net_host_free(ep->host); /* closes every connection */
	s3_store_free(ep->store);
	free(ep);
}

void s3_endpoint_log_stats(const struct s3_endpoint *ep)
{
	if (ep && ep->store)
		s3_store_log_stats(ep->store);
}

struct s3_store *s3_endpoint_store(struct s3_endpoint *ep)
{
	return ep->store;
}
