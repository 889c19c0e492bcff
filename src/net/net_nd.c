/*
 * IPv6 neighbour discovery (RFC 4861) and ICMPv6 echo (RFC 4443) for one
 * link-local address; see net_nd.h. Addressing from RFC 4291 (link-local,
 * modified EUI-64, solicited-node) and RFC 2464 (IPv6 multicast on Ethernet);
 * the checksum's pseudo-header from RFC 8200 §8.1.
 */
#include "net/net_nd.h"

#include <errno.h>
#include <string.h>

#include "util/inet_csum.h"

#define ETH_IP6_HLEN (sizeof(struct net_eth_hdr) + sizeof(struct net_ip6_hdr))
#define ECHO_HOP_LIMIT 64

/* ff02::1 and its Ethernet group address: where an answer to a solicitation from :: goes. */
static const uint8_t all_nodes[NET_IP6_ALEN] = { 0xff, 0x02, [15] = 0x01 };
static const uint8_t all_nodes_mac[NET_ETH_ALEN] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };

void net_nd_ll_from_mac(const uint8_t mac[NET_ETH_ALEN], uint8_t out[NET_IP6_ALEN])
{
	memset(out, 0, NET_IP6_ALEN);
	out[0] = 0xfe;
	out[1] = 0x80;
	/* The identifier's u/l bit is the MAC's, inverted, so that a universal MAC gives 1 (RFC 4291 appendix A). */
	out[8] = mac[0] ^ 0x02;
	out[9] = mac[1];
	out[10] = mac[2];
	out[11] = 0xff;
	out[12] = 0xfe;
	out[13] = mac[3];
	out[14] = mac[4];
	out[15] = mac[5];
}

void net_nd_solicited_node(const uint8_t addr[NET_IP6_ALEN], uint8_t out[NET_IP6_ALEN])
{
	memset(out, 0, NET_IP6_ALEN);
	out[0] = 0xff;
	out[1] = 0x02;
	out[11] = 0x01;
	out[12] = 0xff;
	memcpy(out + 13, addr + 13, 3);
}

void net_nd_solicited_mac(const uint8_t addr[NET_IP6_ALEN], uint8_t out[NET_ETH_ALEN])
{
	/* 33:33 and the group's low 32 bits: ff and the address's low 24. */
	out[0] = 0x33;
	out[1] = 0x33;
	out[2] = 0xff;
	memcpy(out + 3, addr + 13, 3);
}

static bool ip6_unspecified(const uint8_t a[NET_IP6_ALEN])
{
	static const uint8_t zero[NET_IP6_ALEN];

	return memcmp(a, zero, NET_IP6_ALEN) == 0;
}

static bool ip6_multicast(const uint8_t a[NET_IP6_ALEN])
{
	return a[0] == 0xff;
}

/*
 * The ICMPv6 checksum of msg[0..len) carried in ih (whose addresses are
 * final): the pseudo-header of RFC 8200 §8.1 (source, destination, the
 * 32-bit upper-layer length, three zero bytes and next header 58), then the
 * message. 0 when verifying a correct message.
 */
static uint16_t icmp6_csum(const struct net_ip6_hdr *ih, const void *msg, size_t len)
{
	const uint8_t tail[8] = {
		(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len,
		0, 0, 0, NET_IP6_NEXT_ICMP6,
	};
	uint64_t sum = inet_csum_add(0, ih->src, NET_IP6_ALEN);

	sum = inet_csum_add(sum, ih->dst, NET_IP6_ALEN);
	sum = inet_csum_add(sum, tail, sizeof(tail));
	return inet_csum_fold(inet_csum_add(sum, msg, len));
}

/*
 * The ICMPv6 message in frame[0..len), or NULL: an Ethernet II frame from a
 * unicast MAC holding IPv6 whose payload (within the frame; padding after it
 * ignored) is ICMPv6 directly, at least min bytes, with a correct checksum.
 * An extension header of any kind is refused, not walked: neither
 * neighbour discovery nor echo needs one. *ihp and *mlen: the IPv6 header
 * and the message's length.
 */
static const uint8_t *icmp6_msg(const uint8_t *frame, size_t len, size_t min, const struct net_ip6_hdr **ihp,
				size_t *mlen)
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;
	const struct net_ip6_hdr *ih;
	size_t plen;

	if (frame == NULL || len < ETH_IP6_HLEN || be16_get(eh->type) != NET_ETHERTYPE_IPV6 || (eh->src[0] & 1) != 0)
		return NULL;
	ih = (const struct net_ip6_hdr *)(frame + sizeof(*eh));
	plen = be16_get(ih->plen);
	if (net_ip6_ver(ih) != 6 || ih->next != NET_IP6_NEXT_ICMP6 || plen < min || plen > len - ETH_IP6_HLEN)
		return NULL;
	if (icmp6_csum(ih, frame + ETH_IP6_HLEN, plen) != 0)
		return NULL;
	*ihp = ih;
	*mlen = plen;
	return frame + ETH_IP6_HLEN;
}

/*
 * The options after a solicitation (RFC 4861 §4.6): each at least one unit
 * and inside opt[0..len), so every step moves on and the walk ends. Only the
 * source link-layer address is used: the first one, which must be one unit
 * with a unicast MAC (a second is ignored, as are other types). Whether one
 * was found in *slla, its address in smac.
 */
static int nd_options(const uint8_t *opt, size_t len, bool *slla, uint8_t smac[NET_ETH_ALEN])
{
	size_t off = 0;

	*slla = false;
	while (off < len) {
		const struct net_nd_opt_lla *o = (const struct net_nd_opt_lla *)(opt + off);
		size_t n;

		if (len - off < 2)
			return -EINVAL;         /* no room for the length byte */
		n = (size_t)opt[off + 1] * NET_ND_OPT_UNIT;
		if (n == 0 || n > len - off)
			return -EINVAL;
		if (opt[off] == NET_ND_OPT_SLLA && !*slla) {
			if (n != sizeof(*o) || (o->mac[0] & 1) != 0)
				return -EINVAL;
			memcpy(smac, o->mac, NET_ETH_ALEN);
			*slla = true;
		}
		off += n;
	}
	return 0;
}

int net_nd_parse_ns(const uint8_t *frame, size_t len, const uint8_t target[NET_IP6_ALEN], struct net_nd_ns *out)
{
	const struct net_nd_msg *ns;
	const struct net_ip6_hdr *ih;
	uint8_t snode[NET_IP6_ALEN];
	size_t mlen;
	bool dad;

	/* RFC 4861 §7.1.1: length and checksum (icmp6_msg), hop limit, code, target, options, addresses. */
	ns = (const struct net_nd_msg *)icmp6_msg(frame, len, sizeof(*ns), &ih, &mlen);
	if (ns == NULL || ih->hlim != NET_ND_HOP_LIMIT || ns->type != NET_ICMP6_ND_NS || ns->code != 0)
		return -EINVAL;
	if (ip6_multicast(ns->target) || memcmp(ns->target, target, NET_IP6_ALEN) != 0)
		return -EINVAL;
	if (nd_options((const uint8_t *)(ns + 1), mlen - sizeof(*ns), &out->slla, out->smac) != 0)
		return -EINVAL;
	dad = ip6_unspecified(ih->src);
	if (dad && out->slla)
		return -EINVAL;
	/* From ::, only to the solicited-node group; otherwise to it or to the target itself. */
	net_nd_solicited_node(target, snode);
	if (memcmp(ih->dst, snode, NET_IP6_ALEN) != 0 && (dad || memcmp(ih->dst, target, NET_IP6_ALEN) != 0))
		return -EINVAL;
	/* A group cannot send, and a solicitation from the target's own address is our echo or an impostor. */
	if (ip6_multicast(ih->src) || memcmp(ih->src, target, NET_IP6_ALEN) == 0)
		return -EINVAL;
	if (!out->slla)
		memcpy(out->smac, ((const struct net_eth_hdr *)frame)->src, NET_ETH_ALEN);
	memcpy(out->src, ih->src, NET_IP6_ALEN);
	out->dad = dad;
	return 0;
}

/* The Ethernet and IPv6 headers of an ICMPv6 message of mlen bytes from (smac, src) to (dmac, dst). */
static void put_eth_ip6(uint8_t *frame, const uint8_t dmac[NET_ETH_ALEN], const uint8_t smac[NET_ETH_ALEN],
			const uint8_t src[NET_IP6_ALEN], const uint8_t dst[NET_IP6_ALEN], size_t mlen, uint8_t hlim)
{
	struct net_eth_hdr *eh = (struct net_eth_hdr *)frame;
	struct net_ip6_hdr *ih = (struct net_ip6_hdr *)(frame + sizeof(*eh));

	memcpy(eh->dst, dmac, NET_ETH_ALEN);
	memcpy(eh->src, smac, NET_ETH_ALEN);
	eh->type = be16_set(NET_ETHERTYPE_IPV6);
	ih->ver_tc_flow = be32_set(6u << NET_IP6_VER_SHIFT);
	ih->plen = be16_set((uint16_t)mlen);
	ih->next = NET_IP6_NEXT_ICMP6;
	ih->hlim = hlim;
	memcpy(ih->src, src, NET_IP6_ALEN);
	memcpy(ih->dst, dst, NET_IP6_ALEN);
}

size_t net_nd_build_na(uint8_t *frame, size_t cap, const struct net_nd_ns *ns, const uint8_t mac[NET_ETH_ALEN],
		       const uint8_t target[NET_IP6_ALEN])
{
	struct net_ip6_hdr *ih = (struct net_ip6_hdr *)(frame + sizeof(struct net_eth_hdr));
	struct net_nd_msg *na = (struct net_nd_msg *)(frame + ETH_IP6_HLEN);
	struct net_nd_opt_lla *o = (struct net_nd_opt_lla *)(frame + ETH_IP6_HLEN + sizeof(*na));
	const size_t mlen = sizeof(*na) + sizeof(*o);

	_Static_assert(NET_ND_NA_FRAME_LEN >= NET_ETH_MIN_FRAME, "an advertisement needs no padding");
	if (cap < NET_ND_NA_FRAME_LEN)
		return 0;
	put_eth_ip6(frame, ns->dad ? all_nodes_mac : ns->smac, mac, target, ns->dad ? all_nodes : ns->src, mlen,
		    NET_ND_HOP_LIMIT);
	na->type = NET_ICMP6_ND_NA;
	na->code = 0;
	na->csum = be16_set(0);
	/* Override: the address is ours alone (not anycast), so the answer replaces what the peer cached. */
	na->flags = be32_set(NET_ND_NA_FLAG_O | (ns->dad ? 0 : NET_ND_NA_FLAG_S));
	memcpy(na->target, target, NET_IP6_ALEN);
	o->type = NET_ND_OPT_TLLA;
	o->len = sizeof(*o) / NET_ND_OPT_UNIT;
	memcpy(o->mac, mac, NET_ETH_ALEN);
	na->csum = be16_set(icmp6_csum(ih, na, mlen));
	return NET_ND_NA_FRAME_LEN;
}

bool net_nd_is_ns_for(const uint8_t *frame, size_t len, const uint8_t target[NET_IP6_ALEN])
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;
	const struct net_ip6_hdr *ih;
	const struct net_nd_msg *ns;
	uint8_t group[NET_ETH_ALEN];

	if (frame == NULL || len < ETH_IP6_HLEN + sizeof(*ns))
		return false;
	ih = (const struct net_ip6_hdr *)(frame + sizeof(*eh));
	ns = (const struct net_nd_msg *)(frame + ETH_IP6_HLEN);
	net_nd_solicited_mac(target, group);
	return memcmp(eh->dst, group, NET_ETH_ALEN) == 0 && be16_get(eh->type) == NET_ETHERTYPE_IPV6 &&
	       ih->next == NET_IP6_NEXT_ICMP6 && ns->type == NET_ICMP6_ND_NS &&
	       memcmp(ns->target, target, NET_IP6_ALEN) == 0;
}

size_t net_nd_echo_reply(uint8_t *out, size_t cap, const uint8_t *frame, size_t len,
			 const uint8_t mac[NET_ETH_ALEN], const uint8_t addr[NET_IP6_ALEN])
{
	struct net_ip6_hdr *oi = (struct net_ip6_hdr *)(out + sizeof(struct net_eth_hdr));
	struct net_icmp_echo *er = (struct net_icmp_echo *)(out + ETH_IP6_HLEN);
	const struct net_icmp_echo *eq;
	const struct net_ip6_hdr *ih;
	size_t mlen;

	eq = (const struct net_icmp_echo *)icmp6_msg(frame, len, sizeof(*eq), &ih, &mlen);
	if (eq == NULL || eq->type != NET_ICMP6_ECHO_REQUEST || eq->code != 0 ||
	    memcmp(ih->dst, addr, NET_IP6_ALEN) != 0)
		return 0;
	if (ip6_unspecified(ih->src) || ip6_multicast(ih->src) || memcmp(ih->src, addr, NET_IP6_ALEN) == 0)
		return 0;
	if (mlen > cap || cap - mlen < ETH_IP6_HLEN)
		return 0;               /* RFC 4443 §4.2 wants the data whole: a cut reply is no reply */
	put_eth_ip6(out, ((const struct net_eth_hdr *)frame)->src, mac, addr, ih->src, mlen, ECHO_HOP_LIMIT);
	er->type = NET_ICMP6_ECHO_REPLY;
	er->code = 0;
	er->csum = be16_set(0);
	er->id = eq->id;
	er->seq = eq->seq;
	memcpy(out + ETH_IP6_HLEN + sizeof(*er), frame + ETH_IP6_HLEN + sizeof(*eq), mlen - sizeof(*eq));
	er->csum = be16_set(icmp6_csum(oi, er, mlen));
	return ETH_IP6_HLEN + mlen;
}
