/* The S3 endpoint on the segment: store + TCP stack + HTTP connections; see s3_endpoint.h. */
#include "s3/s3_endpoint.h"

#include <stdio.h>
#include <stdlib.h>

#include "net/net_switch.h"
#include "s3/s3_conn.h"
#include "s3/s3_target.h"
#include "s3/s3_tcp.h"
#include "util/evloop.h"
#include "util/log.h"

#define POLL_MS 20
#define S3_SERVER_QPN 0x00d00000 /* nominal: no queue pair is ever connected on this path */

struct s3_endpoint {
	struct evloop *loop;
	struct net_switch *sw;
	int port;
	struct s3_store *store;
	struct s3_tcp *tcp;
	struct ev_timer *timer;
};

/* ---- the TCP stack's application: one s3_conn per connection ---- */

static void *app_open(void *ctx)
{
	struct s3_endpoint *ep = ctx;

	return s3_conn_new(ep->store);
}

static size_t app_input(void *app, const uint8_t *data, size_t len)
{
	return s3_conn_input(app, data, len);
}

static void app_eof(void *app)
{
	s3_conn_input_eof(app);
}

static size_t app_peek(void *app, uint64_t off, const uint8_t **data)
{
	return s3_conn_output_peek(app, off, data);
}

static void app_acked(void *app, size_t n)
{
	s3_conn_output_done(app, n);
}

static bool app_wants_close(void *app)
{
	return s3_conn_wants_close(app);
}

static void app_close(void *app)
{
	s3_conn_free(app);
}

static void send_frame(void *ctx, const uint8_t *frame, size_t len)
{
	struct s3_endpoint *ep = ctx;

	net_switch_input(ep->sw, ep->port, frame, len);
}

/* ---- the switch port ---- */

static bool port_wants(void *ctx, const uint8_t *frame, size_t len)
{
	struct s3_endpoint *ep = ctx;

	return s3_tcp_wants_frame(ep->tcp, frame, len);
}

static void port_deliver(void *ctx, const uint8_t *frame, size_t len)
{
	struct s3_endpoint *ep = ctx;

	s3_tcp_input(ep->tcp, frame, len, evloop_now_ms());
}

/* From the TAP: a super-frame is one large segment, a checksum the kernel vouched for is not redone. */
static void port_deliver_offload(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off)
{
	struct s3_endpoint *ep = ctx;
	unsigned flags = off->csum_valid || off->tcp_csum_partial ? S3_TCP_RX_CSUM_OK : 0;

	s3_tcp_input_flags(ep->tcp, frame, len, flags, evloop_now_ms());
}

static void on_tick(void *arg, uint32_t events)
{
	struct s3_endpoint *ep = arg;

	(void)events;
	s3_tcp_poll(ep->tcp, evloop_now_ms());
}

struct s3_endpoint *s3_endpoint_new(const struct s3_config *cfg, struct evloop *loop, struct net_switch *sw,
				    char *err, size_t errlen)
{
	struct s3_endpoint *ep = calloc(1, sizeof(*ep));
	struct s3_token server = { .transport = S3_TRANSPORT_RC, .qpn = S3_SERVER_QPN, .port = 1 };
	struct s3_tcp_config tc = { .ip = cfg->ip, .port = cfg->port };
	struct s3_tcp_ops ops = {
		.send_frame = send_frame, .open = app_open, .input = app_input, .input_eof = app_eof,
		.peek = app_peek, .acked = app_acked, .wants_close = app_wants_close, .close = app_close,
	};
	struct net_port np = {
		.name = "s3", .wants = port_wants, .deliver = port_deliver, .deliver_offload = port_deliver_offload,
	};

	if (ep == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ep->loop = loop;
	ep->sw = sw;
	ep->port = -1;
	/* The server's token names it as an RC peer at its IPv4-mapped GID. */
	server.gid[10] = server.gid[11] = 0xff;
	server.gid[12] = (uint8_t)(cfg->ip >> 24);
	server.gid[13] = (uint8_t)(cfg->ip >> 16);
	server.gid[14] = (uint8_t)(cfg->ip >> 8);
	server.gid[15] = (uint8_t)cfg->ip;
	s3_endpoint_mac(cfg->ip, tc.mac);
	ep->store = s3_store_new(cfg, &server);
	ops.ctx = ep;
	ep->tcp = ep->store ? s3_tcp_new(&tc, &ops) : NULL;
	if (ep->tcp == NULL) {
		snprintf(err, errlen, "s3 backend: cannot create the store");
		goto fail;
	}
	np.ctx = ep;
	ep->port = net_switch_attach(sw, &np);
	ep->timer = evloop_add_timer(loop, POLL_MS, on_tick, ep);
	if (ep->port < 0 || ep->timer == NULL) {
		snprintf(err, errlen, "s3 backend: cannot attach the endpoint to the segment");
		goto fail;
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
	evloop_del_timer(ep->loop, ep->timer);
	if (ep->port >= 0)
		net_switch_detach(ep->sw, ep->port);
	s3_tcp_free(ep->tcp);
	s3_store_free(ep->store);
	free(ep);
}

struct s3_store *s3_endpoint_store(struct s3_endpoint *ep)
{
	return ep->store;
}
