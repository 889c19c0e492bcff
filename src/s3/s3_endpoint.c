/* The S3 endpoint on the segment: store + a host with the TCP stack + HTTP connections; see s3_endpoint.h. */
#include "s3/s3_endpoint.h"

#include <stdio.h>
#include <stdlib.h>

#include "net/net_host.h"
#include "s3/s3_conn.h"
#include "s3/s3_target.h"

_Static_assert(S3_WINDOW_MIN >= INET_TCP_WINDOW && S3_WINDOW_MAX <= INET_TCP_WINDOW_MAX,
	       "window= stays within what the stack takes");

#define S3_SERVER_QPN 0x00d00000 /* nominal: no queue pair is ever connected on this path */

struct s3_endpoint {
	struct s3_store *store;
	struct net_host *host;
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
		snprintf(err, errlen, "s3 backend: cannot create the store");
		goto fail;
	}
	ep->host = net_host_new(&hc, loop, sw, err, errlen);
	if (ep->host == NULL)
		goto fail;
	return ep;
fail:
	s3_endpoint_free(ep);
	return NULL;
}

void s3_endpoint_free(struct s3_endpoint *ep)
{
	if (ep == NULL)
		return;
	net_host_free(ep->host);
	s3_store_free(ep->store);
	free(ep);
}

struct s3_store *s3_endpoint_store(struct s3_endpoint *ep)
{
	return ep->store;
}
