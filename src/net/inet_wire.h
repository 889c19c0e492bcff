/*
 * Wire formats of the in-band TCP/IP stack (inet.h): Ethernet II, ARP for
 * IPv4 over Ethernet, IPv4, ICMP echo and TCP headers, exactly as on the
 * wire; the IPv6 header and the ICMPv6 messages of neighbour discovery
 * (net_nd.h); and the UDP header, which RoCEv2 (fabric/roce_wire.h) shares with
 * the Ethernet and IPv4 ones. Multi-byte fields are be16/be32 (util/endian.h), so they can only be
 * read and written through be16_get()/be16_set() and friends; sub-byte
 * fields are reached through the SHIFT/MASK accessors below, never through
 * bitfields (whose layout the compiler chooses).
 */
#ifndef ERNIC_NET_INET_WIRE_H
#define ERNIC_NET_INET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

/* ---- Ethernet II ---------------------------------------------------------- */

#define NET_ETH_ALEN        6
#define NET_ETH_MIN_FRAME   60      /* without FCS: shorter frames are padded */
#define NET_ETHERTYPE_IPV4  0x0800
#define NET_ETHERTYPE_ARP   0x0806
#define NET_ETHERTYPE_VLAN  0x8100
#define NET_ETHERTYPE_IPV6  0x86dd

struct net_eth_hdr {
	uint8_t dst[NET_ETH_ALEN];
	uint8_t src[NET_ETH_ALEN];
	be16 type;
} __attribute__((packed));

_Static_assert(sizeof(struct net_eth_hdr) == 14, "Ethernet header size");
_Static_assert(offsetof(struct net_eth_hdr, src) == 6, "Ethernet source offset");
_Static_assert(offsetof(struct net_eth_hdr, type) == 12, "Ethernet type offset");

/* ---- ARP (RFC 826), IPv4 over Ethernet only ------------------------------- */

#define NET_ARP_HTYPE_ETHER 1
#define NET_ARP_OP_REQUEST  1
#define NET_ARP_OP_REPLY    2

struct net_arp_pkt {
	be16 htype;
	be16 ptype;
	uint8_t hlen;
	uint8_t plen;
	be16 oper;
	uint8_t sha[NET_ETH_ALEN];
	be32 spa;
	uint8_t tha[NET_ETH_ALEN];
	be32 tpa;
} __attribute__((packed));

_Static_assert(sizeof(struct net_arp_pkt) == 28, "ARP packet size");
_Static_assert(offsetof(struct net_arp_pkt, oper) == 6, "ARP oper offset");
_Static_assert(offsetof(struct net_arp_pkt, sha) == 8, "ARP sha offset");
_Static_assert(offsetof(struct net_arp_pkt, spa) == 14, "ARP spa offset");
_Static_assert(offsetof(struct net_arp_pkt, tha) == 18, "ARP tha offset");
_Static_assert(offsetof(struct net_arp_pkt, tpa) == 24, "ARP tpa offset");

/* ---- IPv4 (RFC 791) --------------------------------------------------------- */

#define NET_IP_PROTO_ICMP   1
#define NET_IP_PROTO_TCP    6
#define NET_IP_PROTO_UDP    17
#define NET_IP_DEFAULT_TTL  64

/* ver_ihl: version in the high nibble, header length in 32-bit words in the low one */
#define NET_IP_VER_SHIFT    4
#define NET_IP_VER_MASK     0x0fu
#define NET_IP_IHL_SHIFT    0
#define NET_IP_IHL_MASK     0x0fu
/* frag: three flag bits, then the fragment offset in 8-byte units */
#define NET_IP_FLAG_RF      0x8000u
#define NET_IP_FLAG_DF      0x4000u
#define NET_IP_FLAG_MF      0x2000u
#define NET_IP_FRAG_OFF_MASK 0x1fffu

struct net_ip_hdr {
	uint8_t ver_ihl;
	uint8_t tos;
	be16 tot_len;
	be16 id;
	be16 frag;
	uint8_t ttl;
	uint8_t proto;
	be16 csum;
	be32 src;
	be32 dst;
} __attribute__((packed));

_Static_assert(sizeof(struct net_ip_hdr) == 20, "IPv4 header size");
_Static_assert(offsetof(struct net_ip_hdr, tot_len) == 2, "IPv4 total length offset");
_Static_assert(offsetof(struct net_ip_hdr, frag) == 6, "IPv4 fragment offset");
_Static_assert(offsetof(struct net_ip_hdr, ttl) == 8, "IPv4 TTL offset");
_Static_assert(offsetof(struct net_ip_hdr, proto) == 9, "IPv4 protocol offset");
_Static_assert(offsetof(struct net_ip_hdr, csum) == 10, "IPv4 checksum offset");
_Static_assert(offsetof(struct net_ip_hdr, src) == 12, "IPv4 source offset");
_Static_assert(offsetof(struct net_ip_hdr, dst) == 16, "IPv4 destination offset");

static inline unsigned net_ip_ver(const struct net_ip_hdr *h)
{
	return ((unsigned)h->ver_ihl >> NET_IP_VER_SHIFT) & NET_IP_VER_MASK;
}

/* Header length in 32-bit words. */
static inline unsigned net_ip_ihl(const struct net_ip_hdr *h)
{
	return ((unsigned)h->ver_ihl >> NET_IP_IHL_SHIFT) & NET_IP_IHL_MASK;
}

static inline uint8_t net_ip_ver_ihl(unsigned ver, unsigned ihl)
{
	return (uint8_t)(((ver & NET_IP_VER_MASK) << NET_IP_VER_SHIFT) |
			 ((ihl & NET_IP_IHL_MASK) << NET_IP_IHL_SHIFT));
}

/* ---- UDP (RFC 768) ----------------------------------------------------------- */

struct net_udp_hdr {
	be16 sport;
	be16 dport;
	be16 len;       /* UDP header + payload */
	be16 csum;      /* 0: none computed */
} __attribute__((packed));

_Static_assert(sizeof(struct net_udp_hdr) == 8, "UDP header size");
_Static_assert(offsetof(struct net_udp_hdr, dport) == 2, "UDP destination port offset");
_Static_assert(offsetof(struct net_udp_hdr, len) == 4, "UDP length offset");
_Static_assert(offsetof(struct net_udp_hdr, csum) == 6, "UDP checksum offset");

/* ---- ICMP echo (RFC 792) ---------------------------------------------------- */

#define NET_ICMP_ECHO_REPLY   0
#define NET_ICMP_ECHO_REQUEST 8

struct net_icmp_echo {
	uint8_t type;
	uint8_t code;
	be16 csum;
	be16 id;
	be16 seq;
} __attribute__((packed));

_Static_assert(sizeof(struct net_icmp_echo) == 8, "ICMP echo header size");
_Static_assert(offsetof(struct net_icmp_echo, csum) == 2, "ICMP checksum offset");
_Static_assert(offsetof(struct net_icmp_echo, id) == 4, "ICMP id offset");
_Static_assert(offsetof(struct net_icmp_echo, seq) == 6, "ICMP sequence offset");

/* ---- IPv6 (RFC 8200) ---------------------------------------------------------- */

#define NET_IP6_ALEN        16
#define NET_IP6_NEXT_ICMP6  58
/* ver_tc_flow: version in the top 4 bits, then the traffic class (8) and the flow label (20) */
#define NET_IP6_VER_SHIFT   28
#define NET_IP6_VER_MASK    0x0fu

struct net_ip6_hdr {
	be32 ver_tc_flow;
	be16 plen;      /* what follows this header */
	uint8_t next;
	uint8_t hlim;
	uint8_t src[NET_IP6_ALEN];
	uint8_t dst[NET_IP6_ALEN];
} __attribute__((packed));

_Static_assert(sizeof(struct net_ip6_hdr) == 40, "IPv6 header size");
_Static_assert(offsetof(struct net_ip6_hdr, plen) == 4, "IPv6 payload length offset");
_Static_assert(offsetof(struct net_ip6_hdr, next) == 6, "IPv6 next header offset");
_Static_assert(offsetof(struct net_ip6_hdr, hlim) == 7, "IPv6 hop limit offset");
_Static_assert(offsetof(struct net_ip6_hdr, src) == 8, "IPv6 source offset");
_Static_assert(offsetof(struct net_ip6_hdr, dst) == 24, "IPv6 destination offset");

static inline unsigned net_ip6_ver(const struct net_ip6_hdr *h)
{
	return ((unsigned)be32_get(h->ver_tc_flow) >> NET_IP6_VER_SHIFT) & NET_IP6_VER_MASK;
}

/* ---- ICMPv6 (RFC 4443) and neighbour discovery (RFC 4861) ------------------------ */

/* Echo request and reply have the ICMP echo layout (struct net_icmp_echo) with these types. */
#define NET_ICMP6_ECHO_REQUEST 128
#define NET_ICMP6_ECHO_REPLY   129
#define NET_ICMP6_ND_NS        135     /* neighbor solicitation (RFC 4861 §4.3) */
#define NET_ICMP6_ND_NA        136     /* neighbor advertisement (RFC 4861 §4.4) */

#define NET_ND_HOP_LIMIT       255     /* every ND message is sent, and must arrive, with this */
/* flags of an advertisement: router, solicited, override */
#define NET_ND_NA_FLAG_R       0x80000000u
#define NET_ND_NA_FLAG_S       0x40000000u
#define NET_ND_NA_FLAG_O       0x20000000u

/* options: type, length in units of 8 bytes (0 is invalid), value */
#define NET_ND_OPT_UNIT        8
#define NET_ND_OPT_SLLA        1       /* source link-layer address */
#define NET_ND_OPT_TLLA        2       /* target link-layer address */

/* A solicitation or an advertisement up to its options: flags (reserved in a solicitation), the target. */
struct net_nd_msg {
	uint8_t type;
	uint8_t code;
	be16 csum;
	be32 flags;
	uint8_t target[NET_IP6_ALEN];
} __attribute__((packed));

_Static_assert(sizeof(struct net_nd_msg) == 24, "ND solicitation/advertisement size");
_Static_assert(offsetof(struct net_nd_msg, csum) == 2, "ICMPv6 checksum offset");
_Static_assert(offsetof(struct net_nd_msg, flags) == 4, "ND flags offset");
_Static_assert(offsetof(struct net_nd_msg, target) == 8, "ND target offset");

/* A link-layer address option on Ethernet (RFC 4861 §4.6.1): one unit. */
struct net_nd_opt_lla {
	uint8_t type;
	uint8_t len;
	uint8_t mac[NET_ETH_ALEN];
} __attribute__((packed));

_Static_assert(sizeof(struct net_nd_opt_lla) == NET_ND_OPT_UNIT, "ND link-layer address option size");

/* ---- TCP (RFC 793) ------------------------------------------------------------ */

/* off_flags: data offset in 32-bit words in the top nibble, then reserved bits, then flags */
#define NET_TCPH_DOFF_SHIFT 12
#define NET_TCPH_DOFF_MASK  0x0fu
#define NET_TCPH_FLAGS_SHIFT 0
#define NET_TCPH_FLAGS_MASK 0x01ffu
#define NET_TCPH_MIN_LEN    20
#define NET_TCPH_MAX_LEN    60

#define NET_TCPF_FIN 0x001u
#define NET_TCPF_SYN 0x002u
#define NET_TCPF_RST 0x004u
#define NET_TCPF_PSH 0x008u
#define NET_TCPF_ACK 0x010u
#define NET_TCPF_URG 0x020u

#define NET_TCPOPT_EOL      0
#define NET_TCPOPT_NOP      1
#define NET_TCPOPT_MSS      2
#define NET_TCPOPT_MSS_LEN  4
#define NET_TCPOPT_WS       3       /* window scale (RFC 7323 §2): one byte, the shift */
#define NET_TCPOPT_WS_LEN   3
#define NET_TCPOPT_WS_MAX   14      /* a larger shift is taken as 14 (RFC 7323 §2.3) */
#define NET_TCPOPT_SACK_PERM     4  /* SACK permitted (RFC 2018 §2), SYN only */
#define NET_TCPOPT_SACK_PERM_LEN 2
#define NET_TCPOPT_SACK     5       /* SACK blocks (RFC 2018 §3): 2 + 8 per block */
#define NET_TCPOPT_SACK_BLOCK_LEN 8
#define NET_TCPOPT_TS       8       /* timestamps (RFC 7323 §3): TSval, TSecr */
#define NET_TCPOPT_TS_LEN   10
#define NET_TCPOPT_SPACE    40      /* the most option bytes a header holds */

struct net_tcp_hdr {
	be16 sport;
	be16 dport;
	be32 seq;
	be32 ack;
	be16 off_flags;
	be16 wnd;
	be16 csum;
	be16 urp;
} __attribute__((packed));

_Static_assert(sizeof(struct net_tcp_hdr) == NET_TCPH_MIN_LEN, "TCP header size");
_Static_assert(offsetof(struct net_tcp_hdr, seq) == 4, "TCP sequence offset");
_Static_assert(offsetof(struct net_tcp_hdr, ack) == 8, "TCP acknowledgment offset");
_Static_assert(offsetof(struct net_tcp_hdr, off_flags) == 12, "TCP data offset/flags offset");
_Static_assert(offsetof(struct net_tcp_hdr, wnd) == 14, "TCP window offset");
_Static_assert(offsetof(struct net_tcp_hdr, csum) == 16, "TCP checksum offset");
_Static_assert(offsetof(struct net_tcp_hdr, urp) == 18, "TCP urgent pointer offset");

/* The MSS option (kind 2, length 4), wherever it sits among the options. */
struct net_tcp_opt_mss {
	uint8_t kind;
	uint8_t len;
	be16 mss;
} __attribute__((packed));

_Static_assert(sizeof(struct net_tcp_opt_mss) == NET_TCPOPT_MSS_LEN, "TCP MSS option size");
_Static_assert(offsetof(struct net_tcp_opt_mss, mss) == 2, "TCP MSS option value offset");

/* The window scale option (kind 3, length 3). */
struct net_tcp_opt_ws {
	uint8_t kind;
	uint8_t len;
	uint8_t shift;
} __attribute__((packed));

_Static_assert(sizeof(struct net_tcp_opt_ws) == NET_TCPOPT_WS_LEN, "TCP window scale option size");

/* The timestamps option (kind 8, length 10). */
struct net_tcp_opt_ts {
	uint8_t kind;
	uint8_t len;
	be32 tsval;
	be32 tsecr;
} __attribute__((packed));

_Static_assert(sizeof(struct net_tcp_opt_ts) == NET_TCPOPT_TS_LEN, "TCP timestamps option size");
_Static_assert(offsetof(struct net_tcp_opt_ts, tsval) == 2, "TCP TSval offset");
_Static_assert(offsetof(struct net_tcp_opt_ts, tsecr) == 6, "TCP TSecr offset");

/* One SACK block: the first sequence number held and the one past the last. */
struct net_tcp_sack_block {
	be32 left;
	be32 right;
} __attribute__((packed));

_Static_assert(sizeof(struct net_tcp_sack_block) == NET_TCPOPT_SACK_BLOCK_LEN, "TCP SACK block size");
_Static_assert(offsetof(struct net_tcp_sack_block, right) == 4, "TCP SACK right edge offset");

/* Header length in 32-bit words. */
static inline unsigned net_tcph_doff(const struct net_tcp_hdr *h)
{
	return ((unsigned)be16_get(h->off_flags) >> NET_TCPH_DOFF_SHIFT) & NET_TCPH_DOFF_MASK;
}

static inline unsigned net_tcph_flags(const struct net_tcp_hdr *h)
{
	return ((unsigned)be16_get(h->off_flags) >> NET_TCPH_FLAGS_SHIFT) & NET_TCPH_FLAGS_MASK;
}

static inline be16 net_tcph_off_flags(unsigned doff_words, unsigned flags)
{
	return be16_set((uint16_t)(((doff_words & NET_TCPH_DOFF_MASK) << NET_TCPH_DOFF_SHIFT) |
				   ((flags & NET_TCPH_FLAGS_MASK) << NET_TCPH_FLAGS_SHIFT)));
}

/* The fixed part of every frame we build: Ethernet, IPv4 without options, and the transport. */
#define NET_ETH_IP_HLEN   (sizeof(struct net_eth_hdr) + sizeof(struct net_ip_hdr))
#define NET_ETH_IP_TCP_HLEN (NET_ETH_IP_HLEN + sizeof(struct net_tcp_hdr))

#endif
