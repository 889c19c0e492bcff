/*
 * An in-process host on the emulated segment: one IPv4 address and MAC,
 * served by the in-band stack (net/inet.h) and attached to the segment switch
 * as an endpoint. It answers ARP and ICMP echo, and IPv6 neighbor
 * solicitations and echo for its link-local address (fe80:: and the
 * modified EUI-64 of its MAC, net/net_nd.h); with a TCP port it also
 * accepts connections for its application (the S3 endpoint's HTTP), whose
 * timers it runs from the event loop. Without one (port 0) it is an address
 * the guest can resolve and ping, and every TCP SYN gets RST (the NVMe-oF
 * controller's address: its traffic is RoCE on the RDMA engine, not TCP).
 */
#ifndef ERNIC_NET_NET_HOST_H
#define ERNIC_NET_NET_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "net/inet.h"

struct evloop;
struct net_switch;
struct net_host;

struct net_host_config {
	const char *name;       /* the switch port's name, for logs */
	uint32_t ip;            /* host byte order */
	uint8_t mac[6];
	uint16_t port;          /* TCP port, 0: no listener */
	uint32_t window;        /* the TCP receive window for peers that scale (inet_config.window) */
	/* The application's callbacks (send_frame and send_super are the host's own and are ignored); NULL members when port is 0. */
	struct inet_ops app;
};

/* NULL with a one-line reason in err. */
struct net_host *net_host_new(const struct net_host_config *cfg, struct evloop *loop, struct net_switch *sw,
			      char *err, size_t errlen);
void net_host_free(struct net_host *h);

const struct inet_stats *net_host_stats(const struct net_host *h);

/*
 * The application has output, or room for input it refused, outside of a
 * frame's arrival (work of its own finished): serve its connections now
 * rather than at the next tick.
 */
void net_host_service(struct net_host *h);

#endif
