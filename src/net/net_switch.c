/* The emulated segment's switch; see net_switch.h. */
#include "net/net_switch.h"

#include <stdlib.h>
#include <string.h>

#define ETH_HLEN 14
#define FDB_SIZE 32

struct fdb_entry {
	uint8_t mac[6];
	int port;     /* -1: empty */
};

struct net_switch {
	struct net_port ports[NET_SWITCH_MAX_PORTS];
	bool used[NET_SWITCH_MAX_PORTS];
	struct fdb_entry fdb[FDB_SIZE];
	unsigned fdb_next;
	struct net_switch_stats stats;
	/*
	 * Where frames for ports without offloads are built. Not reentrant: only
	 * the TAP's input carries offloads, and no port answers with any.
	 */
	bool scratch_busy;
	uint8_t scratch[NET_MAX_FRAME];
	void (*monitor)(void *ctx, const uint8_t *frame, size_t len);
	void *monitor_ctx;
	bool behind;
};

struct emit_ctx {
	const struct net_port *port;
};

struct net_switch *net_switch_new(void)
{
	struct net_switch *sw = calloc(1, sizeof(*sw));

	if (sw)
		for (int i = 0; i < FDB_SIZE; i++)
			sw->fdb[i].port = -1;
	return sw;
}

void net_switch_free(struct net_switch *sw)
{
	free(sw);
}

int net_switch_attach(struct net_switch *sw, const struct net_port *port)
{
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++) {
		if (!sw->used[i]) {
			sw->ports[i] = *port;
			sw->used[i] = true;
			return i;
		}
	}
	return -1;
}

void net_switch_detach(struct net_switch *sw, int id)
{
	if (id < 0 || id >= NET_SWITCH_MAX_PORTS)
		return;
	sw->used[id] = false;
	for (int i = 0; i < FDB_SIZE; i++)
		if (sw->fdb[i].port == id)
			sw->fdb[i].port = -1;
}

static void learn(struct net_switch *sw, const uint8_t *mac, int port)
{
	if (mac[0] & 1)
		return; /* a group address is never a source */
	for (int i = 0; i < FDB_SIZE; i++) {
		if (sw->fdb[i].port >= 0 && memcmp(sw->fdb[i].mac, mac, 6) == 0) {
			sw->fdb[i].port = port;
			return;
		}
	}
	memcpy(sw->fdb[sw->fdb_next].mac, mac, 6);
	sw->fdb[sw->fdb_next].port = port;
	sw->fdb_next = (sw->fdb_next + 1) % FDB_SIZE;
}

static int lookup(const struct net_switch *sw, const uint8_t *mac)
{
	for (int i = 0; i < FDB_SIZE; i++)
		if (sw->fdb[i].port >= 0 && memcmp(sw->fdb[i].mac, mac, 6) == 0)
			return sw->fdb[i].port;
	return -1;
}

static void emit_segment(void *ctx, const uint8_t *frame, size_t len)
{
	const struct emit_ctx *e = ctx;

	e->port->deliver(e->port->ctx, frame, len);
}

/* Hand a frame to port i, doing in software the offloads it does not take. */
static void port_deliver(struct net_switch *sw, int i, const uint8_t *frame, size_t len,
			 const struct net_offload *off)
{
	const struct net_port *p = &sw->ports[i];
	struct emit_ctx e = { .port = p };
	size_t n;

	if (off != NULL && p->deliver_offload != NULL && (!off->csum_partial || off->tcp_csum_partial)) {
		p->deliver_offload(p->ctx, frame, len, off);
		return;
	}
	if (!net_offload_pending(off)) {
		p->deliver(p->ctx, frame, len);
		return;
	}
	if (sw->scratch_busy) {
		sw->stats.dropped_offload++;
		return;
	}
	sw->scratch_busy = true;
	if (off->gso_size) {
		sw->stats.gso_segmented++;
		sw->stats.gso_segments += net_offload_segment(frame, len, off, sw->scratch, sizeof(sw->scratch),
							      emit_segment, &e);
	} else {
		n = net_offload_complete_csum(frame, len, off, sw->scratch, sizeof(sw->scratch));
		sw->stats.csum_completed++;
		if (n)
			p->deliver(p->ctx, sw->scratch, n);
	}
	sw->scratch_busy = false;
}

void net_switch_input(struct net_switch *sw, int id, const uint8_t *frame, size_t len)
{
	net_switch_input_offload(sw, id, frame, len, NULL);
}

/* A datagram of a UDP super-frame, entering as a frame of its own. */
struct udp_entry {
	struct net_switch *sw;
	int id;
};

static void enter_segment(void *ctx, const uint8_t *frame, size_t len)
{
	const struct udp_entry *e = ctx;

	net_switch_input_offload(e->sw, e->id, frame, len, NULL);
}

/*
 * A UDP super-frame to the endpoint whose filter wants it first, whole, if it
 * takes such (deliver_udp_super); it would have had every datagram (a filter
 * looks at headers, and the datagrams' differ only in lengths and
 * identification). Not when it is a group frame or a monitor must see each
 * datagram.
 */
static bool udp_whole(struct net_switch *sw, int id, const uint8_t *frame, size_t len, const struct net_offload *off)
{
	if ((frame[0] & 1) || sw->monitor != NULL)
		return false;
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++) {
		const struct net_port *p = &sw->ports[i];

		if (!sw->used[i] || i == id || p->wants == NULL || !p->wants(p->ctx, frame, len))
			continue;
		if (p->deliver_udp_super == NULL)
			return false;
		/*
		 * Learned first, as any frame is before its delivery: the endpoint may answer while it
		 * handles the datagrams (a RoCEv2 node's ACK), and that answer must find the sender.
		 */
		if (id < 0 || id >= NET_SWITCH_MAX_PORTS || !sw->ports[id].no_learn)
			learn(sw, frame + 6, id);
		if (!p->deliver_udp_super(p->ctx, frame, len, off))
			return false;
		sw->stats.frames++;
		sw->stats.to_endpoints++;
		sw->stats.udp_whole++;
		return true;
	}
	return false;
}

void net_switch_input_offload(struct net_switch *sw, int id, const uint8_t *frame, size_t len,
			      const struct net_offload *off)
{
	const uint8_t *dst = frame, *src = frame + 6;
	bool group;
	int out;

	if (len < ETH_HLEN) {
		sw->stats.dropped_runt++;
		return;
	}
	/*
	 * A UDP super-frame (RoCEv2 packets from another server, written as one) goes whole to the
	 * endpoint it is for when that endpoint cuts it itself (a RoCEv2 node, into its receive ring).
	 * Otherwise it is cut here, at its entry: each datagram is a packet of its own to every port
	 * and to the capture, as the wire would have carried it. No wire port takes UDP offloads, and
	 * a TAP merges again what it sends.
	 */
	if (off != NULL && off->gso_udp) {
		struct udp_entry e = { .sw = sw, .id = id };
		unsigned n;

		if (udp_whole(sw, id, frame, len, off))
			return;

		if (sw->scratch_busy) {
			sw->stats.dropped_offload++;
			return;
		}
		sw->scratch_busy = true;
		n = net_offload_segment(frame, len, off, sw->scratch, sizeof(sw->scratch), enter_segment, &e);
		sw->scratch_busy = false;
		sw->stats.gso_segmented++;
		sw->stats.gso_segments += n;
		if (n == 0)
			sw->stats.dropped_offload++;
		return;
	}
	sw->stats.frames++;
	if (sw->monitor)
		sw->monitor(sw->monitor_ctx, frame, len);
	group = (dst[0] & 1) != 0;
	if (id < 0 || id >= NET_SWITCH_MAX_PORTS || !sw->ports[id].no_learn)
		learn(sw, src, id);
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++) {
		if (!sw->used[i] || i == id || sw->ports[i].wants == NULL)
			continue;
		if (sw->ports[i].wants(sw->ports[i].ctx, frame, len)) {
			sw->stats.to_endpoints++;
			port_deliver(sw, i, frame, len, off);
			if (!group)
				return;
		}
	}
	out = group ? -1 : lookup(sw, dst);
	if (out >= 0 && out != id && sw->used[out] && sw->ports[out].wants != NULL) {
		/* Its destination is an endpoint, which did not want it: flooding would leak it to the wire. */
		sw->stats.dropped_unwanted++;
		return;
	}
	if (out >= 0 && out != id && sw->used[out] && sw->ports[out].wants == NULL) {
		sw->stats.unicast++;
		port_deliver(sw, out, frame, len, off);
		return;
	}
	if (out == id)
		return; /* it came from where its destination lives */
	sw->stats.flooded++;
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++)
		if (sw->used[i] && i != id && sw->ports[i].wants == NULL)
			port_deliver(sw, i, frame, len, off);
}

bool net_switch_input_pieces(struct net_switch *sw, int id, const struct iovec *piece, unsigned n,
			     const struct net_offload *off)
{
	const uint8_t *head = n > 0 ? piece[0].iov_base : NULL;
	size_t hlen = n > 0 ? piece[0].iov_len : 0;
	int out;

	if (head == NULL || hlen < ETH_HLEN || n > NET_SWITCH_MAX_PIECES || (head[0] & 1) || sw->monitor != NULL)
		return false;
	out = lookup(sw, head);
	if (out < 0 || out == id || !sw->used[out] || sw->ports[out].wants != NULL ||
	    sw->ports[out].deliver_pieces == NULL)
		return false;
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++)
		if (sw->used[i] && i != id && sw->ports[i].wants != NULL &&
		    sw->ports[i].wants(sw->ports[i].ctx, head, hlen))
			return false;
	sw->stats.frames++;
	if (id < 0 || id >= NET_SWITCH_MAX_PORTS || !sw->ports[id].no_learn)
		learn(sw, head + 6, id);
	sw->stats.unicast++;
	sw->stats.pieces_passed++;
	sw->ports[out].deliver_pieces(sw->ports[out].ctx, piece, n, off);
	return true;
}

void net_switch_set_behind(struct net_switch *sw, bool behind)
{
	sw->behind = behind;
}

bool net_switch_behind(const struct net_switch *sw)
{
	return sw->behind;
}

const struct net_switch_stats *net_switch_stats(const struct net_switch *sw)
{
	return &sw->stats;
}

void net_switch_set_monitor(struct net_switch *sw, void (*fn)(void *ctx, const uint8_t *frame, size_t len),
			    void *ctx)
{
	sw->monitor = fn;
	sw->monitor_ctx = ctx;
}
