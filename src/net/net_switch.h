/*
 * The emulated Ethernet segment: a small learning switch between the guest's
 * NIC, an optional host TAP device and the in-process endpoints (the S3
 * endpoint), which register a filter.
 *
 * A frame entering from any port is first offered to the endpoints: one whose
 * filter wants it (unicast to its MAC, an ARP request for its address, or an
 * IPv6 neighbor solicitation to its solicited-node group) gets it, and a
 * unicast frame so taken goes nowhere else; a broadcast or multicast one so
 * taken still goes on to the wire ports, as below. Other frames go to
 * the port that last sent from their destination MAC, or, for broadcast,
 * multicast and unknown destinations, to every other wire port. A frame never
 * goes back out of the port it came from. A unicast frame whose destination
 * MAC was last seen on an endpoint that did not want it is dropped (counted
 * in dropped_unwanted), not flooded to the wire ports.
 *
 * Endpoints reach each other through the same path: an endpoint's frame
 * enters with net_switch_input() from its own port id and is offered to
 * every other endpoint's filter. Delivery is synchronous, so a deliver()
 * that answers at once re-enters the switch; an endpoint that may answer
 * to an answer (the RoCEv2 nodes) queues what it receives instead.
 *
 * A frame from the host TAP may carry offloads (net_offload.h): a TCPv4
 * segmentation-offload super-frame, a partial checksum. An endpoint that
 * declares deliver_offload gets it as it is (the in-band TCP stack takes a
 * super-frame as one large segment); every other port gets what a wire would
 * carry: the super-frame cut into MSS-sized frames, checksums completed.
 */
#ifndef ERNIC_NET_NET_SWITCH_H
#define ERNIC_NET_NET_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "net/net_offload.h"

#define NET_SWITCH_MAX_PORTS 8
#define NET_SWITCH_MAX_PIECES 64   /* pieces of a frame net_switch_input_pieces() hands over */

struct net_port {
	const char *name;
	void *ctx;
	/* Endpoints only: does this frame belong to it? NULL for wire ports. */
	bool (*wants)(void *ctx, const uint8_t *frame, size_t len);
	/* Take a frame (copy it if it must outlive the call). */
	void (*deliver)(void *ctx, const uint8_t *frame, size_t len);
	/*
	 * Endpoints only, optional: take a frame with its offloads as they came
	 * (off is never NULL here; it was checked by net_offload_parse()). A
	 * partial checksum reaches it only at the TCP checksum of an IPv4 TCP
	 * segment (tcp_csum_partial); any other is completed first and the
	 * frame comes through deliver().
	 */
	void (*deliver_offload)(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off);
	/*
	 * Wire ports only, optional: take a frame with offloads (or none: off
	 * NULL) in pieces, as net_switch_input_pieces() got it (the pieces are valid during the
	 * call only). A port with this has deliver_offload too.
	 */
	void (*deliver_pieces)(void *ctx, const struct iovec *piece, unsigned n, const struct net_offload *off);
	/*
	 * Endpoints only, optional: take a UDP super-frame (off->gso_udp) whole
	 * instead of its datagrams one at a time (the RoCEv2 nodes cut it into
	 * their own receive ring: net_offload_udp_each()). Offered only when it
	 * would have been this endpoint's (the first to want its headers), it is
	 * unicast and no monitor is set; false: not taken, the switch cuts it.
	 */
	bool (*deliver_udp_super)(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off);
	/*
	 * Endpoints only: frames it sends do not teach the switch where their
	 * source MAC lives. For an endpoint that speaks with a wire port's MAC
	 * (the guest's RoCE function sends as the guest): the guest's other
	 * traffic must still find the guest's port.
	 */
	bool no_learn;
};

struct net_switch_stats {
	uint64_t frames, to_endpoints, flooded, unicast, dropped_runt;
	uint64_t dropped_unwanted; /* unicast to an endpoint's MAC that the endpoint did not want */
	uint64_t gso_segmented;    /* super-frames cut for a port without offloads */
	uint64_t gso_segments;     /* the frames they were cut into */
	uint64_t csum_completed;   /* partial checksums completed for a port without offloads */
	uint64_t dropped_offload;  /* an offload met inside another's delivery (never expected), or a UDP
				    * super-frame that could not be cut */
	uint64_t pieces_passed;    /* frames in pieces handed over as they were (net_switch_input_pieces) */
	uint64_t udp_whole;        /* UDP super-frames an endpoint took whole (deliver_udp_super) */
};

struct net_switch;

struct net_switch *net_switch_new(void);
void net_switch_free(struct net_switch *sw);

/* Attach a port; returns its id, or -1 when the switch is full. The port must outlive the switch or be removed. */
int net_switch_attach(struct net_switch *sw, const struct net_port *port);
void net_switch_detach(struct net_switch *sw, int id);

/* A frame entering from port id. */
void net_switch_input(struct net_switch *sw, int id, const uint8_t *frame, size_t len);
/* The same, with the offloads net_offload_parse() found (NULL: none). */
void net_switch_input_offload(struct net_switch *sw, int id, const uint8_t *frame, size_t len,
			      const struct net_offload *off);

/*
 * A frame with offloads in n pieces (an in-process host's TCP super-segment:
 * piece[0] holds every header, Ethernet through the TCP options; the rest is
 * payload where the application keeps it; at most NET_SWITCH_MAX_PIECES), or
 * without any (off NULL: a RoCEv2 packet, its headers, its payload where it
 * lies in guest memory, its pad and ICRC).
 * Handed over as it is, with no copy, when it is unicast to a MAC last seen
 * on a wire port that takes pieces, no endpoint wants it (each is asked with piece[0]: their filters
 * look at headers only) and no monitor is set. Otherwise nothing is done and
 * false is returned: the caller joins the pieces and uses
 * net_switch_input_offload().
 */
bool net_switch_input_pieces(struct net_switch *sw, int id, const struct iovec *piece, unsigned n,
			     const struct net_offload *off);

const struct net_switch_stats *net_switch_stats(const struct net_switch *sw);

/*
 * Whether the host side of the segment is ahead of us: a TAP's reads ended
 * at their budget several wakeups in a row, so its kernel queue has kept
 * growing. Set by the TAP for the frames of one wakeup's reads (cleared
 * after them, and when the TAP goes), read by the ports that answer a
 * backlog with congestion notifications (the RoCEv2 nodes). A batch of one wakeup, however
 * large, is not a backlog: a super-frame brings many packets at once.
 */
void net_switch_set_behind(struct net_switch *sw, bool behind);
bool net_switch_behind(const struct net_switch *sw);

/*
 * Something that sees every frame entering the switch (from any port, runts
 * aside), before it is delivered, as it came (offloads included): the
 * segment's capture (net_pcap.h). NULL fn: none.
 */
void net_switch_set_monitor(struct net_switch *sw, void (*fn)(void *ctx, const uint8_t *frame, size_t len),
			    void *ctx);

#endif
