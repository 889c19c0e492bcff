/*
 * Joining the emulated segment to an existing host TAP device (--tap): frames
 * the host side writes into the TAP enter the switch, frames the switch sends
 * to this port go out of the TAP. The device must already exist (the server
 * never creates interfaces); one that cannot be opened is a start-up error,
 * one that disappears later is logged and the server goes on without it.
 */
#ifndef ERNIC_NET_TAP_H
#define ERNIC_NET_TAP_H

#include <stddef.h>
#include <stdint.h>

struct evloop;
struct net_switch;
struct tap;

struct tap_stats {
	uint64_t rx_frames, tx_frames, tx_dropped;
	uint64_t gso_frames;  /* writes that carried several merged TCP segments */
};

/* Open ifname and attach it to sw. Returns NULL with a one-line reason in err. */
struct tap *tap_open(const char *ifname, struct evloop *loop, struct net_switch *sw, char *err, size_t errlen);
void tap_close(struct tap *t);

const struct tap_stats *tap_stats(const struct tap *t);

#endif
