/*
 * IPv6 neighbour discovery (RFC 4861) for the in-process hosts on the
 * segment, for their link-local address alone: enough for a peer to resolve
 * that address to the host's MAC. A guest's RDMA stack connecting to an
 * fe80:: GID asks exactly this (a neighbor solicitation) before its first
 * packet. Also the ICMPv6 echo of that address (RFC 4443 §4), for ping.
 *
 * The host has no other IPv6 address, sends no solicitations of its own,
 * keeps no neighbour cache (an answer goes where the question came from) and
 * does no duplicate address detection: its address comes from its MAC, which
 * is unique on the segment.
 *
 * Pure functions on (buf, len): no state, no allocation, no logging. Every
 * frame passed in is whole (Ethernet header first) and may be hostile.
 * Addresses are 16 bytes in network order.
 */
#ifndef ERNIC_NET_NET_ND_H
#define ERNIC_NET_NET_ND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/inet_wire.h"

/* The size of every advertisement net_nd_build_na() writes: Ethernet, IPv6, the message, one option. */
#define NET_ND_NA_FRAME_LEN \
	(sizeof(struct net_eth_hdr) + sizeof(struct net_ip6_hdr) + sizeof(struct net_nd_msg) + \
	 sizeof(struct net_nd_opt_lla))

/*
 * The link-local address of an interface with this MAC: fe80::/64 and the
 * modified EUI-64 identifier (RFC 4291 §2.5.1, appendix A): the MAC's
 * universal/local bit flipped and ff:fe put between its halves.
 */
void net_nd_ll_from_mac(const uint8_t mac[NET_ETH_ALEN], uint8_t out[NET_IP6_ALEN]);

/* The solicited-node multicast address of addr (RFC 4291 §2.7.1): ff02::1:ff00:0/104 and addr's low 24 bits. */
void net_nd_solicited_node(const uint8_t addr[NET_IP6_ALEN], uint8_t out[NET_IP6_ALEN]);

/*
 * The Ethernet address a solicitation for addr is sent to: 33:33 and the low
 * 32 bits of addr's solicited-node address (RFC 2464 §7), 33:33:ff:xx:xx:xx.
 */
void net_nd_solicited_mac(const uint8_t addr[NET_IP6_ALEN], uint8_t out[NET_ETH_ALEN]);

/* A solicitation net_nd_parse_ns() accepted: what the answer needs. */
struct net_nd_ns {
	uint8_t src[NET_IP6_ALEN];      /* the solicitation's IPv6 source; all zeros when dad */
	uint8_t smac[NET_ETH_ALEN];     /* the source link-layer option's address, or else the frame's source */
	bool slla;                      /* a source link-layer address option was present */
	bool dad;                       /* sent from :: (duplicate address detection): answered to all nodes */
};

/*
 * Check that frame[0..len) is a valid neighbor solicitation for target, as
 * RFC 4861 §7.1.1 has a receiver check it: IPv6 directly carrying ICMPv6 (an
 * extension header is refused), hop limit 255, type 135 code 0, at least 24
 * bytes, a correct checksum, options each of non-zero length and inside the
 * packet, a source link-layer option (the first, when repeated) one unit long
 * with a unicast address; from :: only to the solicited-node address and
 * without that option. It must also be addressed to target or to its
 * solicited-node address, from a unicast source other than target, and the
 * frame's source must be unicast. The Ethernet destination is not checked
 * (the caller's filter has chosen the frame). Padding after the packet is
 * ignored. 0 and *out filled, or -EINVAL (out unspecified).
 */
int net_nd_parse_ns(const uint8_t *frame, size_t len, const uint8_t target[NET_IP6_ALEN], struct net_nd_ns *out);

/*
 * Write into frame[0..cap) the advertisement that answers ns: from mac and
 * target, with the override flag and a target link-layer option carrying
 * mac, hop limit 255; to ns->smac and ns->src with the solicited flag, or,
 * for a dad solicitation, to all nodes (ff02::1, 33:33:00:00:00:01) without
 * it (RFC 4861 §7.2.4). Returns NET_ND_NA_FRAME_LEN, or 0 when cap is smaller.
 */
size_t net_nd_build_na(uint8_t *frame, size_t cap, const struct net_nd_ns *ns, const uint8_t mac[NET_ETH_ALEN],
		       const uint8_t target[NET_IP6_ALEN]);

/*
 * The filter for the multicast form of a solicitation: whether frame[0..len)
 * is sent to target's solicited-node Ethernet address and claims to be an
 * ICMPv6 neighbor solicitation for target. Only the fields that say so are
 * read; net_nd_parse_ns() checks the rest. (A solicitation sent to the
 * host's own MAC passes the host's unicast filter.)
 */
bool net_nd_is_ns_for(const uint8_t *frame, size_t len, const uint8_t target[NET_IP6_ALEN]);

/*
 * If frame[0..len) is a valid ICMPv6 echo request to addr (type 128 code 0,
 * a correct checksum, from a unicast source other than addr; IPv6 directly
 * carrying ICMPv6), write the echo reply into out[0..cap): from mac and addr
 * to the frame's source MAC and address, hop limit 64, the identifier,
 * sequence number and data echoed whole. Returns the reply's length, or 0:
 * not such a request, or the reply does not fit in cap (nothing is cut).
 * out and frame must not overlap.
 */
size_t net_nd_echo_reply(uint8_t *out, size_t cap, const uint8_t *frame, size_t len,
			 const uint8_t mac[NET_ETH_ALEN], const uint8_t addr[NET_IP6_ALEN]);

#endif
