/*
 * ARP for IPv4 over Ethernet (RFC 826), shared by the segment's endpoints:
 * the in-band stack (inet_in.c) and the RoCEv2 nodes (fabric/roce_port.c).
 * Pure functions on (buf, len): no state, no allocation, no logging.
 */
#ifndef ERNIC_NET_NET_ARP_H
#define ERNIC_NET_NET_ARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/inet_wire.h"

/* An ARP packet net_arp_parse() accepted; addresses in host order. */
struct net_arp_info {
	uint16_t oper;                  /* NET_ARP_OP_REQUEST or NET_ARP_OP_REPLY */
	uint8_t sha[NET_ETH_ALEN];      /* never a group address */
	uint32_t spa;
	uint8_t tha[NET_ETH_ALEN];
	uint32_t tpa;
};

/*
 * Check the ARP packet p[0..len) (what follows the Ethernet header):
 * Ethernet/IPv4 sizes, a request or a reply, a unicast sender. 0 and *out
 * filled, or -EINVAL (out unspecified).
 */
int net_arp_parse(const uint8_t *p, size_t len, struct net_arp_info *out);

/*
 * Write a whole ARP frame into frame[0..cap), padded with zeros to
 * NET_ETH_MIN_FRAME, from sha/spa to tpa. A request goes to the broadcast
 * address with tha zero (tha is ignored and may be NULL); a reply goes to
 * tha. Returns the frame's length, or 0 when cap is too small.
 */
size_t net_arp_build(uint8_t *frame, size_t cap, uint16_t oper, const uint8_t sha[NET_ETH_ALEN], uint32_t spa,
		     const uint8_t tha[NET_ETH_ALEN], uint32_t tpa);

/* Whether frame[0..len) is a broadcast ARP request for ip (host order): the filter of every endpoint. */
bool net_arp_is_request_for(const uint8_t *frame, size_t len, uint32_t ip);

#endif
