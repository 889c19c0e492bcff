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

void net_switch_input(struct net_switch *sw, int id, const uint8_t *frame, size_t len)
{
	const uint8_t *dst = frame, *src = frame + 6;
	bool group;
	int out;

	if (len < ETH_HLEN) {
		sw->stats.dropped_runt++;
		return;
	}
	sw->stats.frames++;
	group = (dst[0] & 1) != 0;
	learn(sw, src, id);
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++) {
		if (!sw->used[i] || i == id || sw->ports[i].wants == NULL)
			continue;
		if (sw->ports[i].wants(sw->ports[i].ctx, frame, len)) {
			sw->stats.to_endpoints++;
			sw->ports[i].deliver(sw->ports[i].ctx, frame, len);
			if (!group)
				return;
		}
	}
	out = group ? -1 : lookup(sw, dst);
	if (out >= 0 && out != id && sw->used[out] && sw->ports[out].wants == NULL) {
		sw->stats.unicast++;
		sw->ports[out].deliver(sw->ports[out].ctx, frame, len);
		return;
	}
	if (out == id)
		return; /* it came from where its destination lives */
	sw->stats.flooded++;
	for (int i = 0; i < NET_SWITCH_MAX_PORTS; i++)
		if (sw->used[i] && i != id && sw->ports[i].wants == NULL)
			sw->ports[i].deliver(sw->ports[i].ctx, frame, len);
}

const struct net_switch_stats *net_switch_stats(const struct net_switch *sw)
{
	return &sw->stats;
}
