/* An in-process host on the segment: the in-band stack on a switch port; see net_host.h. */
#include "net/net_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_switch.h"
#include "util/evloop.h"
#include "util/log.h"

#define POLL_MS 20 /* the stack's timers (retransmission, TIME_WAIT) and deferred output */

_Static_assert(1 + INET_TCP_SUPER_PIECES <= NET_SWITCH_MAX_PIECES, "a super-segment's pieces pass the switch whole");

struct net_host {
	const char *name;
	struct evloop *loop;
	struct net_switch *sw;
	int port;
	struct inet_host *inet;
	struct ev_timer *timer;
	struct inet_ops app;
	uint8_t *join;          /* a super-segment's pieces joined, for a port that needs it whole (NET_MAX_FRAME) */
	bool acks_pending;      /* flush_acks() is deferred on the loop */
};

/* The stack's ctx is the host; the application's open() gets its own. */
static void *host_open(void *ctx)
{
	struct net_host *h = ctx;

	return h->app.open(h->app.ctx);
}

static void send_frame(void *ctx, const uint8_t *frame, size_t len)
{
	struct net_host *h = ctx;

	net_switch_input(h->sw, h->port, frame, len);
}

/*
 * A super-segment of the stack's: what a TAP reads from a kernel with TSO,
 * described as net_offload_parse() would describe it. The switch hands it
 * whole to a port that takes offloads (the TAP: one write, of the pieces as
 * they are) and cut, with every checksum, to the others (the guest's NIC).
 */
static void send_super(void *ctx, const struct iovec *piece, unsigned n, uint16_t gso_size)
{
	struct net_host *h = ctx;
	const uint8_t *head = piece[0].iov_base;
	const size_t l4 = NET_ETH_HLEN + 20;
	struct net_offload off = {
		.csum_partial = true,
		.tcp_csum_partial = true,
		.csum_start = (uint16_t)l4,
		.csum_offset = 16,
		.gso_size = gso_size,
		.hdr_len = (uint16_t)(l4 + (size_t)(head[l4 + 12] >> 4) * 4),
	};
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		len += piece[i].iov_len;
	off.pkt_len = (uint32_t)len;
	/* To the TAP as it is, the payload read from where the application keeps it; else joined here. */
	if (net_switch_input_pieces(h->sw, h->port, piece, n, &off))
		return;
	if (h->join == NULL && (h->join = malloc(NET_MAX_FRAME)) == NULL)
		return; /* lost like a frame on a wire: TCP sends it again */
	len = 0;
	for (unsigned i = 0; i < n && len + piece[i].iov_len <= NET_MAX_FRAME; i++) {
		memcpy(h->join + len, piece[i].iov_base, piece[i].iov_len);
		len += piece[i].iov_len;
	}
	net_switch_input_offload(h->sw, h->port, h->join, len, &off);
}

static void flush_acks(void *arg)
{
	struct net_host *h = arg;

	h->acks_pending = false;
	inet_flush_acks(h->inet);
}

/* The ACK of a request waits for the end of the loop's batch: the answer, if it comes by then, carries it. */
static bool defer_acks(void *ctx)
{
	struct net_host *h = ctx;

	if (!h->acks_pending && evloop_defer(h->loop, flush_acks, h) == 0)
		h->acks_pending = true;
	return h->acks_pending;
}

static bool port_wants(void *ctx, const uint8_t *frame, size_t len)
{
	struct net_host *h = ctx;

	return inet_wants_frame(h->inet, frame, len);
}

static void port_deliver(void *ctx, const uint8_t *frame, size_t len)
{
	struct net_host *h = ctx;

	inet_input(h->inet, frame, len, evloop_now_ms());
}

/* From the TAP: a super-frame is one large segment, a checksum the kernel vouched for is not redone. */
static void port_deliver_offload(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off)
{
	struct net_host *h = ctx;
	unsigned flags = off->csum_valid || off->tcp_csum_partial ? INET_TCP_RX_CSUM_OK : 0;

	inet_input_flags(h->inet, frame, len, flags, evloop_now_ms());
}

static void on_tick(void *arg, uint32_t events)
{
	struct net_host *h = arg;

	(void)events;
	inet_poll(h->inet, evloop_now_ms());
}

struct net_host *net_host_new(const struct net_host_config *cfg, struct evloop *loop, struct net_switch *sw,
			      char *err, size_t errlen)
{
	struct net_host *h = calloc(1, sizeof(*h));
	struct inet_config ic = { .ip = cfg->ip, .port = cfg->port, .window = cfg->window };
	struct inet_ops ops = cfg->app;
	struct net_port np = {
		.name = cfg->name, .wants = port_wants, .deliver = port_deliver,
		.deliver_offload = port_deliver_offload,
	};

	if (h == NULL) {
		snprintf(err, errlen, "%s: out of memory", cfg->name);
		return NULL;
	}
	h->name = cfg->name;
	h->loop = loop;
	h->sw = sw;
	h->port = -1;
	memcpy(ic.mac, cfg->mac, sizeof(ic.mac));
	h->app = cfg->app;
	ops.ctx = h;
	ops.send_frame = send_frame;
	ops.send_super = send_super;
	ops.open = cfg->app.open ? host_open : NULL;
	ops.defer_acks = defer_acks;
	h->inet = inet_new(&ic, &ops);
	if (h->inet == NULL) {
		snprintf(err, errlen, "%s: cannot create its TCP/IP stack", cfg->name);
		goto fail;
	}
	np.ctx = h;
	h->port = net_switch_attach(sw, &np);
	if (h->port < 0) {
		snprintf(err, errlen, "%s: cannot attach to the segment", cfg->name);
		goto fail;
	}
	if (cfg->port != 0) {
		h->timer = evloop_add_timer(loop, POLL_MS, on_tick, h);
		if (h->timer == NULL) {
			snprintf(err, errlen, "%s: cannot start its timers", cfg->name);
			goto fail;
		}
	}
	return h;
fail:
	net_host_free(h);
	return NULL;
}

/* What the stack did, in one line (tests read it at exit). */
static void log_stats(const struct net_host *h)
{
	const struct inet_stats *st = inet_stats(h->inet);

	LOG_INFO("%s: tcp: %llu connections accepted (window scaling %llu, SACK %llu, timestamps %llu); "
		 "%llu retransmits (%llu fast recoveries, %llu timeouts, %llu tail probes); SACK blocks %llu in, %llu out; "
		 "%llu out-of-order segments held, %llu dropped; %llu refused by PAWS; "
		 "%llu super-segments out carrying %llu segments; %llu ACKs held to the end of a batch went alone",
		 h->name, (unsigned long long)st->conns_accepted, (unsigned long long)st->opts_ws,
		 (unsigned long long)st->opts_sack, (unsigned long long)st->opts_ts,
		 (unsigned long long)st->retransmits, (unsigned long long)st->fast_retransmits,
		 (unsigned long long)st->timeouts, (unsigned long long)st->tlp_probes,
		 (unsigned long long)st->sack_blocks_in,
		 (unsigned long long)st->sack_blocks_out, (unsigned long long)st->ooo_held,
		 (unsigned long long)st->drop_out_of_order, (unsigned long long)st->drop_paws,
		 (unsigned long long)st->super_out, (unsigned long long)st->super_segs,
		 (unsigned long long)st->acks_deferred_alone);
}

void net_host_free(struct net_host *h)
{
	if (h == NULL)
		return;
	if (h->inet != NULL && h->timer != NULL)
		log_stats(h);
	evloop_del_timer(h->loop, h->timer);
	if (h->acks_pending)
		evloop_undefer(h->loop, flush_acks, h);
	if (h->port >= 0)
		net_switch_detach(h->sw, h->port);
	inet_free(h->inet);
	free(h->join);
	free(h);
}

const struct inet_stats *net_host_stats(const struct net_host *h)
{
	return inet_stats(h->inet);
}

void net_host_service(struct net_host *h)
{
	inet_poll(h->inet, evloop_now_ms());
}
