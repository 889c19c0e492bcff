/*
 * The emulated Ethernet segment: a small learning switch between the guest's
 * NIC, an optional host TAP device and the in-process endpoints (the S3
 * endpoint), which register a filter.
 *
 * A frame entering from any port is first offered to the endpoints: one whose
 * filter wants it (unicast to its MAC, or an ARP request for its address)
 * gets it, and a unicast frame so taken goes nowhere else. Other frames go to
 * the port that last sent from their destination MAC, or, for broadcast,
 * multicast and unknown destinations, to every other wire port. A frame never
 * goes back out of the port it came from.
 */
#ifndef ERNIC_NET_NET_SWITCH_H
#define ERNIC_NET_NET_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_SWITCH_MAX_PORTS 8

struct net_port {
	const char *name;
	void *ctx;
	/* Endpoints only: does this frame belong to it? NULL for wire ports. */
	bool (*wants)(void *ctx, const uint8_t *frame, size_t len);
	/* Take a frame (copy it if it must outlive the call). */
	void (*deliver)(void *ctx, const uint8_t *frame, size_t len);
};

struct net_switch_stats {
	uint64_t frames, to_endpoints, flooded, unicast, dropped_runt;
};

struct net_switch;

struct net_switch *net_switch_new(void);
void net_switch_free(struct net_switch *sw);

/* Attach a port; returns its id, or -1 when the switch is full. The port must outlive the switch or be removed. */
int net_switch_attach(struct net_switch *sw, const struct net_port *port);
void net_switch_detach(struct net_switch *sw, int id);

/* A frame entering from port id. */
void net_switch_input(struct net_switch *sw, int id, const uint8_t *frame, size_t len);

const struct net_switch_stats *net_switch_stats(const struct net_switch *sw);

#endif
