/* ARP for IPv4 over Ethernet (RFC 826); see net_arp.h. */
#include "net/net_arp.h"

#include <errno.h>
#include <string.h>

static const uint8_t bcast_mac[NET_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

int net_arp_parse(const uint8_t *p, size_t len, struct net_arp_info *out)
{
	const struct net_arp_pkt *ap = (const struct net_arp_pkt *)p;

	if (len < sizeof(*ap) || be16_get(ap->htype) != NET_ARP_HTYPE_ETHER ||
	    be16_get(ap->ptype) != NET_ETHERTYPE_IPV4 || ap->hlen != NET_ETH_ALEN || ap->plen != 4)
		return -EINVAL;
	out->oper = be16_get(ap->oper);
	if ((out->oper != NET_ARP_OP_REQUEST && out->oper != NET_ARP_OP_REPLY) || (ap->sha[0] & 1) != 0)
		return -EINVAL;
	memcpy(out->sha, ap->sha, NET_ETH_ALEN);
	out->spa = be32_get(ap->spa);
	memcpy(out->tha, ap->tha, NET_ETH_ALEN);
	out->tpa = be32_get(ap->tpa);
	return 0;
}

size_t net_arp_build(uint8_t *frame, size_t cap, uint16_t oper, const uint8_t sha[NET_ETH_ALEN], uint32_t spa,
		     const uint8_t tha[NET_ETH_ALEN], uint32_t tpa)
{
	struct net_eth_hdr *eh = (struct net_eth_hdr *)frame;
	struct net_arp_pkt *ap = (struct net_arp_pkt *)(frame + sizeof(*eh));
	size_t flen = sizeof(*eh) + sizeof(*ap);
	bool request = oper == NET_ARP_OP_REQUEST;

	_Static_assert(sizeof(struct net_eth_hdr) + sizeof(struct net_arp_pkt) <= NET_ETH_MIN_FRAME,
		       "an ARP frame is padded");
	if (cap < NET_ETH_MIN_FRAME)
		return 0;
	memcpy(eh->dst, request ? bcast_mac : tha, NET_ETH_ALEN);
	memcpy(eh->src, sha, NET_ETH_ALEN);
	eh->type = be16_set(NET_ETHERTYPE_ARP);
	ap->htype = be16_set(NET_ARP_HTYPE_ETHER);
	ap->ptype = be16_set(NET_ETHERTYPE_IPV4);
	ap->hlen = NET_ETH_ALEN;
	ap->plen = 4;
	ap->oper = be16_set(oper);
	memcpy(ap->sha, sha, NET_ETH_ALEN);
	ap->spa = be32_set(spa);
	if (request)
		memset(ap->tha, 0, NET_ETH_ALEN);
	else
		memcpy(ap->tha, tha, NET_ETH_ALEN);
	ap->tpa = be32_set(tpa);
	memset(frame + flen, 0, NET_ETH_MIN_FRAME - flen);
	return NET_ETH_MIN_FRAME;
}

bool net_arp_is_request_for(const uint8_t *frame, size_t len, uint32_t ip)
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;
	const struct net_arp_pkt *ap = (const struct net_arp_pkt *)(frame + sizeof(*eh));

	if (len < sizeof(*eh) + sizeof(*ap) || memcmp(eh->dst, bcast_mac, NET_ETH_ALEN) != 0 ||
	    be16_get(eh->type) != NET_ETHERTYPE_ARP)
		return false;
	return be16_get(ap->oper) == NET_ARP_OP_REQUEST && be32_get(ap->tpa) == ip;
}
