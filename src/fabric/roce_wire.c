/*
 * RoCEv2 wire format (roce_wire.h): the opcode table, the builder, the
 * parser and the ICRC. Tracks IBA Vol 1 release 1.4 ch. 9 (transport
 * headers, opcodes, packet lengths) and the RoCEv2 annex
 * (UDP encapsulation, ICRC over the masked IP/UDP/BTH headers).
 * The ICRC byte order and masking agree with Linux rxe and with a frame
 * captured from a ConnectX-4 Lx (tests/unit/roce_wire_test.c).
 */
#include <string.h>

#include <isa-l/crc.h>

#include "fabric/roce_wire.h"
#include "util/inet_csum.h"

/* ---- opcode table --------------------------------------------------------------- */

#define OP(n, h, s, p, r) { .name = (n), .hdrs = (h), .seg = (s), .payload = (p), .request = (r) }
#define H ROCE_H

static const struct roce_opcode_info roce_opcodes[256] = {
	[ROCE_RC_SEND_FIRST] = OP("RC_SEND_FIRST", 0, ROCE_SEG_FIRST, true, true),
	[ROCE_RC_SEND_MIDDLE] = OP("RC_SEND_MIDDLE", 0, ROCE_SEG_MIDDLE, true, true),
	[ROCE_RC_SEND_LAST] = OP("RC_SEND_LAST", 0, ROCE_SEG_LAST, true, true),
	[ROCE_RC_SEND_LAST_WITH_IMMEDIATE] =
		OP("RC_SEND_LAST_WITH_IMMEDIATE", H(ROCE_HDR_IMMDT), ROCE_SEG_LAST, true, true),
	[ROCE_RC_SEND_ONLY] = OP("RC_SEND_ONLY", 0, ROCE_SEG_ONLY, true, true),
	[ROCE_RC_SEND_ONLY_WITH_IMMEDIATE] =
		OP("RC_SEND_ONLY_WITH_IMMEDIATE", H(ROCE_HDR_IMMDT), ROCE_SEG_ONLY, true, true),
	[ROCE_RC_RDMA_WRITE_FIRST] = OP("RC_RDMA_WRITE_FIRST", H(ROCE_HDR_RETH), ROCE_SEG_FIRST, true, true),
	[ROCE_RC_RDMA_WRITE_MIDDLE] = OP("RC_RDMA_WRITE_MIDDLE", 0, ROCE_SEG_MIDDLE, true, true),
	[ROCE_RC_RDMA_WRITE_LAST] = OP("RC_RDMA_WRITE_LAST", 0, ROCE_SEG_LAST, true, true),
	[ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE] =
		OP("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", H(ROCE_HDR_IMMDT), ROCE_SEG_LAST, true, true),
	[ROCE_RC_RDMA_WRITE_ONLY] = OP("RC_RDMA_WRITE_ONLY", H(ROCE_HDR_RETH), ROCE_SEG_ONLY, true, true),
	[ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE] =
		OP("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", H(ROCE_HDR_RETH) | H(ROCE_HDR_IMMDT), ROCE_SEG_ONLY,
		   true, true),
	[ROCE_RC_RDMA_READ_REQUEST] = OP("RC_RDMA_READ_REQUEST", H(ROCE_HDR_RETH), ROCE_SEG_ONLY, false, true),
	[ROCE_RC_RDMA_READ_RESPONSE_FIRST] =
		OP("RC_RDMA_READ_RESPONSE_FIRST", H(ROCE_HDR_AETH), ROCE_SEG_FIRST, true, false),
	[ROCE_RC_RDMA_READ_RESPONSE_MIDDLE] = OP("RC_RDMA_READ_RESPONSE_MIDDLE", 0, ROCE_SEG_MIDDLE, true, false),
	[ROCE_RC_RDMA_READ_RESPONSE_LAST] =
		OP("RC_RDMA_READ_RESPONSE_LAST", H(ROCE_HDR_AETH), ROCE_SEG_LAST, true, false),
	[ROCE_RC_RDMA_READ_RESPONSE_ONLY] =
		OP("RC_RDMA_READ_RESPONSE_ONLY", H(ROCE_HDR_AETH), ROCE_SEG_ONLY, true, false),
	[ROCE_RC_ACKNOWLEDGE] = OP("RC_ACKNOWLEDGE", H(ROCE_HDR_AETH), ROCE_SEG_ONLY, false, false),
	[ROCE_RC_ATOMIC_ACKNOWLEDGE] = OP("RC_ATOMIC_ACKNOWLEDGE", H(ROCE_HDR_AETH) | H(ROCE_HDR_ATOMICACKETH),
					  ROCE_SEG_ONLY, false, false),
	[ROCE_RC_COMPARE_SWAP] = OP("RC_COMPARE_SWAP", H(ROCE_HDR_ATOMICETH), ROCE_SEG_ONLY, false, true),
	[ROCE_RC_FETCH_ADD] = OP("RC_FETCH_ADD", H(ROCE_HDR_ATOMICETH), ROCE_SEG_ONLY, false, true),
	[ROCE_RC_SEND_LAST_WITH_INVALIDATE] =
		OP("RC_SEND_LAST_WITH_INVALIDATE", H(ROCE_HDR_IETH), ROCE_SEG_LAST, true, true),
	[ROCE_RC_SEND_ONLY_WITH_INVALIDATE] =
		OP("RC_SEND_ONLY_WITH_INVALIDATE", H(ROCE_HDR_IETH), ROCE_SEG_ONLY, true, true),
	/* UC: the SEND and RDMA WRITE opcodes of RC, 0x20 on, with the same headers (IBA 9.2). */
	[ROCE_UC_SEND_FIRST] = OP("UC_SEND_FIRST", 0, ROCE_SEG_FIRST, true, true),
	[ROCE_UC_SEND_MIDDLE] = OP("UC_SEND_MIDDLE", 0, ROCE_SEG_MIDDLE, true, true),
	[ROCE_UC_SEND_LAST] = OP("UC_SEND_LAST", 0, ROCE_SEG_LAST, true, true),
	[ROCE_UC_SEND_LAST_WITH_IMMEDIATE] =
		OP("UC_SEND_LAST_WITH_IMMEDIATE", H(ROCE_HDR_IMMDT), ROCE_SEG_LAST, true, true),
	[ROCE_UC_SEND_ONLY] = OP("UC_SEND_ONLY", 0, ROCE_SEG_ONLY, true, true),
	[ROCE_UC_SEND_ONLY_WITH_IMMEDIATE] =
		OP("UC_SEND_ONLY_WITH_IMMEDIATE", H(ROCE_HDR_IMMDT), ROCE_SEG_ONLY, true, true),
	[ROCE_UC_RDMA_WRITE_FIRST] = OP("UC_RDMA_WRITE_FIRST", H(ROCE_HDR_RETH), ROCE_SEG_FIRST, true, true),
	[ROCE_UC_RDMA_WRITE_MIDDLE] = OP("UC_RDMA_WRITE_MIDDLE", 0, ROCE_SEG_MIDDLE, true, true),
	[ROCE_UC_RDMA_WRITE_LAST] = OP("UC_RDMA_WRITE_LAST", 0, ROCE_SEG_LAST, true, true),
	[ROCE_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE] =
		OP("UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", H(ROCE_HDR_IMMDT), ROCE_SEG_LAST, true, true),
	[ROCE_UC_RDMA_WRITE_ONLY] = OP("UC_RDMA_WRITE_ONLY", H(ROCE_HDR_RETH), ROCE_SEG_ONLY, true, true),
	[ROCE_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE] =
		OP("UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", H(ROCE_HDR_RETH) | H(ROCE_HDR_IMMDT), ROCE_SEG_ONLY,
		   true, true),
	[ROCE_UD_SEND_ONLY] = OP("UD_SEND_ONLY", H(ROCE_HDR_DETH), ROCE_SEG_ONLY, true, true),
	[ROCE_UD_SEND_ONLY_WITH_IMMEDIATE] =
		OP("UD_SEND_ONLY_WITH_IMMEDIATE", H(ROCE_HDR_DETH) | H(ROCE_HDR_IMMDT), ROCE_SEG_ONLY, true, true),
	[ROCE_CNP] = OP("CNP", H(ROCE_HDR_CNP), ROCE_SEG_ONLY, false, false),
};

#undef H
#undef OP

static const uint8_t roce_hdr_size[ROCE_HDR_NUM] = {
	[ROCE_HDR_DETH] = sizeof(struct roce_deth),
	[ROCE_HDR_RETH] = sizeof(struct roce_reth),
	[ROCE_HDR_ATOMICETH] = sizeof(struct roce_atomiceth),
	[ROCE_HDR_AETH] = sizeof(struct roce_aeth),
	[ROCE_HDR_ATOMICACKETH] = sizeof(struct roce_atomicacketh),
	[ROCE_HDR_IMMDT] = sizeof(struct roce_immdt),
	[ROCE_HDR_IETH] = sizeof(struct roce_ieth),
	[ROCE_HDR_CNP] = ROCE_CNP_RSVD_LEN,
};

const struct roce_opcode_info *roce_opcode_info(uint8_t opcode)
{
	return roce_opcodes[opcode].name ? &roce_opcodes[opcode] : NULL;
}

size_t roce_hdrs_len(unsigned hdrs)
{
	size_t n = 0;

	for (unsigned h = 0; h < ROCE_HDR_NUM; h++)
		if (hdrs & ROCE_H(h))
			n += roce_hdr_size[h];
	return n;
}

/* ---- error table ------------------------------------------------------------------ */

static const char *const roce_err_names[ROCE_ERR_NUM] = {
	[ROCE_OK] = "ok",
	[ROCE_ERR_ETH_SHORT] = "eth-short",
	[ROCE_ERR_ETHERTYPE] = "ethertype",
	[ROCE_ERR_IP_SHORT] = "ip-short",
	[ROCE_ERR_IP_VERSION] = "ip-version",
	[ROCE_ERR_IP_IHL] = "ip-ihl",
	[ROCE_ERR_IP_LENGTH] = "ip-length",
	[ROCE_ERR_IP_CHECKSUM] = "ip-checksum",
	[ROCE_ERR_IP_FRAGMENT] = "ip-fragment",
	[ROCE_ERR_IP_PROTOCOL] = "ip-protocol",
	[ROCE_ERR_UDP_LENGTH] = "udp-length",
	[ROCE_ERR_UDP_PORT] = "udp-port",
	[ROCE_ERR_BTH_SHORT] = "bth-short",
	[ROCE_ERR_BTH_VERSION] = "bth-version",
	[ROCE_ERR_OPCODE] = "opcode",
	[ROCE_ERR_HDR_SHORT] = "hdr-short",
	[ROCE_ERR_PAD] = "pad",
	[ROCE_ERR_PAYLOAD_UNEXPECTED] = "payload-unexpected",
	[ROCE_ERR_PAYLOAD_MTU] = "payload-mtu",
	[ROCE_ERR_PAYLOAD_NOT_FULL] = "payload-not-full",
	[ROCE_ERR_ICRC] = "icrc",
	[ROCE_ERR_NOSPACE] = "nospace",
	[ROCE_ERR_ARG] = "arg",
};

const char *roce_strerror(enum roce_err err)
{
	if ((unsigned)err >= ROCE_ERR_NUM || roce_err_names[err] == NULL)
		return "unknown";
	return roce_err_names[err];
}

/* ---- ICRC --------------------------------------------------------------------------- */

#define ROCE_ICRC_MASKED_LEN (sizeof(struct net_ip_hdr) + sizeof(struct net_udp_hdr) + sizeof(struct roce_bth))

/*
 * The RoCEv2 annex: the ICRC covers the IP header onwards, with the fields that
 * routers may change replaced by ones, behind 64 bits of ones standing in
 * for the LRH that RoCEv2 lacks. CRC-32 as IBA 7.8.1 defines it is the
 * Ethernet CRC (reflected, inverted in and out), which ISA-L's
 * crc32_gzip_refl computes with carry-less multiplication: the ICRC of every
 * frame sent and received was a quarter of a server's time with a table CRC.
 */
/* The fields of the IPv4, UDP and base headers (ROCE_ICRC_MASKED_LEN bytes at h) that the ICRC leaves out, made ones. */
static void icrc_mask(uint8_t *h)
{
	struct net_ip_hdr *iph = (struct net_ip_hdr *)h;
	struct net_udp_hdr *udp = (struct net_udp_hdr *)(iph + 1);
	struct roce_bth *bth = (struct roce_bth *)(udp + 1);

	iph->tos = 0xff;
	iph->ttl = 0xff;
	iph->csum = be16_set(0xffff);
	udp->csum = be16_set(0xffff);
	bth->fb_qpn = be32_set(be32_get(bth->fb_qpn) | ROCE_BTH_RESV8A_MASK);
}

/*
 * The ICRC of a packet in two pieces: ipudp, its IPv4 header (no options) and
 * UDP header, and l4, the BTH onwards, l4len bytes up to the ICRC itself
 * (at least a BTH).
 */
static uint32_t icrc_split(const uint8_t *ipudp, const uint8_t *l4, size_t l4len)
{
	/* the 64 bits of ones, then the masked headers: one call of the CRC for both */
	uint8_t m[8 + ROCE_ICRC_MASKED_LEN];
	uint32_t crc;

	memset(m, 0xff, 8);
	memcpy(m + 8, ipudp, sizeof(struct net_ip_hdr) + sizeof(struct net_udp_hdr));
	memcpy(m + 8 + sizeof(struct net_ip_hdr) + sizeof(struct net_udp_hdr), l4, sizeof(struct roce_bth));
	icrc_mask(m + 8);

	crc = crc32_gzip_refl(0, m, sizeof(m));
	crc = crc32_gzip_refl(crc, l4 + sizeof(struct roce_bth), l4len - sizeof(struct roce_bth));
	return crc;
}

uint32_t roce_icrc(const uint8_t *ip, size_t len)
{
	const size_t ipudp = sizeof(struct net_ip_hdr) + sizeof(struct net_udp_hdr);

	if (len < ROCE_ICRC_MASKED_LEN)
		return 0;
	return icrc_split(ip, ip + ipudp, len - ipudp);
}

void roce_icrc_put(uint8_t *p, uint32_t icrc)
{
	le32 v = le32_set(icrc);

	memcpy(p, &v, sizeof(v));
}

uint32_t roce_icrc_get(const uint8_t *p)
{
	le32 v;

	memcpy(&v, p, sizeof(v));
	return le32_get(v);
}

/* ---- builder ------------------------------------------------------------------------ */

size_t roce_payload_offset(uint8_t opcode)
{
	const struct roce_opcode_info *op = roce_opcode_info(opcode);

	return op == NULL ? 0 : ROCE_L2L4_LEN + sizeof(struct roce_bth) + roce_hdrs_len(op->hdrs);
}

/*
 * The headers of the frame d describes, Ethernet through the extension
 * headers, into p: their length in *hlen, the whole frame's (payload, pad
 * and ICRC included) in *total_len. Checks d, and that the frame (whole) or
 * its headers fit in cap.
 */
static enum roce_err build_head(const struct roce_frame_desc *d, uint8_t *p, size_t cap, bool whole, size_t *hlen,
				size_t *total_len)
{
	const struct roce_opcode_info *op = roce_opcode_info(d->opcode);
	struct net_eth_hdr eth;
	struct net_ip_hdr ip;
	struct net_udp_hdr udp;
	struct roce_bth bth;
	size_t hdrs, l4, total, off;

	if (op == NULL)
		return ROCE_ERR_OPCODE;
	if (d->payload_len > UINT16_MAX)
		return ROCE_ERR_ARG;
	if (d->pad > ROCE_BTH_PAD_MASK || (d->payload_len + d->pad) % 4 != 0 || d->dqpn > ROCE_QPN_MASK ||
	    d->psn > ROCE_PSN_MASK || (d->payload_len > 0 && d->payload == NULL))
		return ROCE_ERR_ARG;
	if (!op->payload && (d->payload_len > 0 || d->pad > 0))
		return ROCE_ERR_ARG;
	if ((op->hdrs & ROCE_H(ROCE_HDR_DETH)) && d->deth.sqp > ROCE_QPN_MASK)
		return ROCE_ERR_ARG;
	if ((op->hdrs & ROCE_H(ROCE_HDR_AETH)) && d->aeth.msn > ROCE_AETH_MSN_MASK)
		return ROCE_ERR_ARG;
	/* The payload is bounded above, so these sums cannot wrap; the IPv4 total length is 16 bits. */
	hdrs = sizeof(bth) + roce_hdrs_len(op->hdrs);
	l4 = sizeof(udp) + hdrs + d->payload_len + d->pad + ROCE_ICRC_LEN;
	if (sizeof(ip) + l4 > UINT16_MAX)
		return ROCE_ERR_ARG;
	total = sizeof(eth) + sizeof(ip) + l4;
	if ((whole ? total : ROCE_L2L4_LEN + hdrs) > cap)
		return ROCE_ERR_NOSPACE;

	memcpy(eth.dst, d->dst_mac, sizeof(eth.dst));
	memcpy(eth.src, d->src_mac, sizeof(eth.src));
	eth.type = be16_set(NET_ETHERTYPE_IPV4);

	ip.ver_ihl = net_ip_ver_ihl(4, sizeof(ip) / 4);
	ip.tos = d->tos;
	ip.tot_len = be16_set((uint16_t)(sizeof(ip) + l4));
	ip.id = be16_set(d->ip_id);
	ip.frag = be16_set(d->df ? NET_IP_FLAG_DF : 0);
	ip.ttl = d->ttl;
	ip.proto = NET_IP_PROTO_UDP;
	ip.csum = be16_set(0);
	ip.src = be32_set(d->src_ip);
	ip.dst = be32_set(d->dst_ip);
	ip.csum = be16_set(inet_csum_fold(inet_csum_add(0, &ip, sizeof(ip))));

	udp.sport = be16_set(d->sport);
	udp.dport = be16_set(ROCE_UDP_DPORT);
	udp.len = be16_set((uint16_t)l4);
	udp.csum = be16_set(0);

	bth.opcode = d->opcode;
	bth.flags = (uint8_t)((d->se ? ROCE_BTH_SE : 0) | (d->m ? ROCE_BTH_M : 0) |
			      ((unsigned)d->pad << ROCE_BTH_PAD_SHIFT) | (ROCE_BTH_TVER << ROCE_BTH_TVER_SHIFT));
	bth.pkey = be16_set(d->pkey);
	bth.fb_qpn = be32_set((d->fecn ? ROCE_BTH_FECN : 0) | (d->becn ? ROCE_BTH_BECN : 0) | d->dqpn);
	bth.a_psn = be32_set((d->ackreq ? ROCE_BTH_ACKREQ : 0) | d->psn);

	memcpy(p, &eth, sizeof(eth));
	memcpy(p + sizeof(eth), &ip, sizeof(ip));
	memcpy(p + sizeof(eth) + sizeof(ip), &udp, sizeof(udp));
	off = ROCE_L2L4_LEN;
	memcpy(p + off, &bth, sizeof(bth));
	off += sizeof(bth);

	/* Extension headers in wire order (enum roce_hdr). */
	if (op->hdrs & ROCE_H(ROCE_HDR_DETH)) {
		struct roce_deth h = { be32_set(d->deth.qkey), be32_set(d->deth.sqp) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_RETH)) {
		struct roce_reth h = { be64_set(d->reth.va), be32_set(d->reth.rkey), be32_set(d->reth.len) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_ATOMICETH)) {
		struct roce_atomiceth h = { be64_set(d->atomic.va), be32_set(d->atomic.rkey),
					    be64_set(d->atomic.swap_add), be64_set(d->atomic.compare) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_AETH)) {
		struct roce_aeth h = { be32_set((uint32_t)d->aeth.syndrome << ROCE_AETH_SYN_SHIFT | d->aeth.msn) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_ATOMICACKETH)) {
		struct roce_atomicacketh h = { be64_set(d->atomic_orig) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_IMMDT)) {
		struct roce_immdt h = { be32_set(d->imm) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_IETH)) {
		struct roce_ieth h = { be32_set(d->ieth_rkey) };

		memcpy(p + off, &h, sizeof(h));
		off += sizeof(h);
	}
	if (op->hdrs & ROCE_H(ROCE_HDR_CNP)) {
		memset(p + off, 0, ROCE_CNP_RSVD_LEN);
		off += ROCE_CNP_RSVD_LEN;
	}
	*hlen = off;
	*total_len = total;
	return ROCE_OK;
}

enum roce_err roce_build(const struct roce_frame_desc *d, uint8_t *buf, size_t cap, size_t *len)
{
	uint8_t *p = buf;
	size_t off, total;
	enum roce_err rc = build_head(d, p, cap, true, &off, &total);

	if (rc != ROCE_OK)
		return rc;
	if (d->payload_len > 0 && d->payload != p + off)
		memcpy(p + off, d->payload, d->payload_len);
	off += d->payload_len;
	memset(p + off, 0, d->pad);
	off += d->pad;
	roce_icrc_put(p + off, roce_icrc(p + sizeof(struct net_eth_hdr), off - sizeof(struct net_eth_hdr)));
	off += ROCE_ICRC_LEN;
	*len = off;
	return ROCE_OK;
}

enum roce_err roce_build_pieces(const struct roce_frame_desc *d, uint8_t *hdr, size_t cap, size_t *hlen,
				uint8_t trailer[ROCE_TRAILER_MAX], size_t *tlen)
{
	static const uint8_t zeros[ROCE_BTH_PAD_MASK];
	/* the 64 bits of ones, the masked IPv4, UDP and base headers, the extension headers: one call */
	uint8_t m[8 + ROCE_ICRC_MASKED_LEN + ROCE_EXT_HDRS_MAX];
	const size_t bth_end = ROCE_L2L4_LEN + sizeof(struct roce_bth);
	size_t off, total, ext;
	uint32_t crc;
	enum roce_err rc = build_head(d, hdr, cap, false, &off, &total);

	if (rc != ROCE_OK)
		return rc;
	ext = off - bth_end;
	if (ext > ROCE_EXT_HDRS_MAX)
		return ROCE_ERR_ARG; /* never: the table's longest set of extension headers fits */
	memset(m, 0xff, 8);
	memcpy(m + 8, hdr + sizeof(struct net_eth_hdr), ROCE_ICRC_MASKED_LEN);
	icrc_mask(m + 8);
	memcpy(m + 8 + ROCE_ICRC_MASKED_LEN, hdr + bth_end, ext);
	crc = crc32_gzip_refl(0, m, 8 + ROCE_ICRC_MASKED_LEN + ext);
	if (d->payload_len > 0)
		crc = crc32_gzip_refl(crc, d->payload, d->payload_len);
	if (d->pad > 0)
		crc = crc32_gzip_refl(crc, zeros, d->pad);
	memset(trailer, 0, d->pad);
	roce_icrc_put(trailer + d->pad, crc);
	*hlen = off;
	*tlen = (size_t)d->pad + ROCE_ICRC_LEN;
	return ROCE_OK;
}

/* ---- parser ------------------------------------------------------------------------- */

static const void *roce_take(const uint8_t *base, size_t *off, size_t n)
{
	const void *p = base + *off;

	*off += n;
	return p;
}

/*
 * Ethernet, IPv4 and UDP of a packet len bytes long whose first
 * ROCE_L2L4_LEN bytes (or all, when it is shorter) are at frame: the checks
 * that need only those headers and the length.
 */
static enum roce_err parse_l2l4(const uint8_t *frame, size_t len)
{
	const struct net_eth_hdr *eth = (const struct net_eth_hdr *)frame;
	const struct net_ip_hdr *ip;
	const struct net_udp_hdr *udp;
	size_t l3len;
	uint16_t frag;

	if (len < sizeof(*eth))
		return ROCE_ERR_ETH_SHORT;
	if (be16_get(eth->type) != NET_ETHERTYPE_IPV4)
		return ROCE_ERR_ETHERTYPE;

	/* IPv4: the header alone first, then the packet it describes. */
	l3len = len - sizeof(*eth);
	ip = (const struct net_ip_hdr *)(frame + sizeof(*eth));
	if (l3len < sizeof(*ip))
		return ROCE_ERR_IP_SHORT;
	if (net_ip_ver(ip) != 4)
		return ROCE_ERR_IP_VERSION;
	if (net_ip_ihl(ip) != sizeof(*ip) / 4)
		return ROCE_ERR_IP_IHL;
	/* RoCE frames exceed the 60-byte Ethernet minimum, so no trailing padding is legitimate. */
	if (be16_get(ip->tot_len) != l3len)
		return ROCE_ERR_IP_LENGTH;
	if (inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))) != 0)
		return ROCE_ERR_IP_CHECKSUM;
	frag = be16_get(ip->frag);
	if (frag & (NET_IP_FLAG_RF | NET_IP_FLAG_MF | NET_IP_FRAG_OFF_MASK))
		return ROCE_ERR_IP_FRAGMENT;
	if (ip->proto != NET_IP_PROTO_UDP)
		return ROCE_ERR_IP_PROTOCOL;

	/* UDP */
	if (l3len - sizeof(*ip) < sizeof(*udp))
		return ROCE_ERR_UDP_LENGTH;
	udp = (const struct net_udp_hdr *)(ip + 1);
	if (be16_get(udp->len) != l3len - sizeof(*ip))
		return ROCE_ERR_UDP_LENGTH;
	if (be16_get(udp->dport) != ROCE_UDP_DPORT)
		return ROCE_ERR_UDP_PORT;
	return ROCE_OK;
}

/*
 * The BTH onwards: l4[0..len) after headers parse_l2l4() accepted at hdr
 * (ROCE_L2L4_LEN bytes); offsets count from l4.
 */
static enum roce_err parse_l4(const uint8_t *hdr, const uint8_t *l4, size_t len, uint32_t pmtu,
			      struct roce_pkt *pkt)
{
	const struct roce_bth *bth;
	const struct roce_opcode_info *op;
	size_t off = 0, hdrs, region, pad;

	/* BTH: room for it and the ICRC, then what it says. */
	if (len < sizeof(*bth) + ROCE_ICRC_LEN)
		return ROCE_ERR_BTH_SHORT;
	bth = roce_take(l4, &off, sizeof(*bth));
	if (roce_bth_tver(bth) != ROCE_BTH_TVER)
		return ROCE_ERR_BTH_VERSION;
	op = roce_opcode_info(bth->opcode);
	if (op == NULL)
		return ROCE_ERR_OPCODE;
	hdrs = roce_hdrs_len(op->hdrs);
	if (len - off - ROCE_ICRC_LEN < hdrs)
		return ROCE_ERR_HDR_SHORT;

	memset(pkt, 0, sizeof(*pkt));
	pkt->eth = (const struct net_eth_hdr *)hdr;
	pkt->ip = (const struct net_ip_hdr *)(pkt->eth + 1);
	pkt->udp = (const struct net_udp_hdr *)(pkt->ip + 1);
	pkt->bth = bth;
	pkt->op = op;
	if (op->hdrs & ROCE_H(ROCE_HDR_DETH))
		pkt->deth = roce_take(l4, &off, sizeof(*pkt->deth));
	if (op->hdrs & ROCE_H(ROCE_HDR_RETH))
		pkt->reth = roce_take(l4, &off, sizeof(*pkt->reth));
	if (op->hdrs & ROCE_H(ROCE_HDR_ATOMICETH))
		pkt->atomic = roce_take(l4, &off, sizeof(*pkt->atomic));
	if (op->hdrs & ROCE_H(ROCE_HDR_AETH))
		pkt->aeth = roce_take(l4, &off, sizeof(*pkt->aeth));
	if (op->hdrs & ROCE_H(ROCE_HDR_ATOMICACKETH))
		pkt->atomic_ack = roce_take(l4, &off, sizeof(*pkt->atomic_ack));
	if (op->hdrs & ROCE_H(ROCE_HDR_IMMDT))
		pkt->imm = roce_take(l4, &off, sizeof(*pkt->imm));
	if (op->hdrs & ROCE_H(ROCE_HDR_IETH))
		pkt->ieth = roce_take(l4, &off, sizeof(*pkt->ieth));
	if (op->hdrs & ROCE_H(ROCE_HDR_CNP))
		off += ROCE_CNP_RSVD_LEN; /* reserved: not looked at */

	/* Payload and pad (IBA ch. 9: the packet is a multiple of 4 bytes; FIRST/MIDDLE carry the path MTU). */
	region = len - off - ROCE_ICRC_LEN;
	pad = roce_bth_pad(bth);
	if (!op->payload && (region > 0 || pad > 0))
		return ROCE_ERR_PAYLOAD_UNEXPECTED;
	if (region % 4 != 0 || pad > region)
		return ROCE_ERR_PAD;
	if (region - pad > pmtu)
		return ROCE_ERR_PAYLOAD_MTU;
	if ((op->seg == ROCE_SEG_FIRST || op->seg == ROCE_SEG_MIDDLE) && region - pad != pmtu)
		return ROCE_ERR_PAYLOAD_NOT_FULL;
	pkt->payload = l4 + off;
	pkt->payload_len = (uint32_t)(region - pad);

	pkt->icrc = roce_icrc_get(l4 + len - ROCE_ICRC_LEN);
	if (icrc_split(hdr + sizeof(struct net_eth_hdr), l4, len - ROCE_ICRC_LEN) != pkt->icrc)
		return ROCE_ERR_ICRC;
	return ROCE_OK;
}

enum roce_err roce_parse(const uint8_t *frame, size_t len, uint32_t pmtu, struct roce_pkt *pkt)
{
	enum roce_err err;

	if (pmtu == 0 || pmtu > 4096)
		return ROCE_ERR_ARG;
	if ((err = parse_l2l4(frame, len)) != ROCE_OK)
		return err;
	return parse_l4(frame, frame + ROCE_L2L4_LEN, len - ROCE_L2L4_LEN, pmtu, pkt);
}

enum roce_err roce_parse_split(const uint8_t *hdr, const uint8_t *l4, size_t l4len, uint32_t pmtu,
			       struct roce_pkt *pkt)
{
	enum roce_err err;

	if (pmtu == 0 || pmtu > 4096 || l4len > SIZE_MAX - ROCE_L2L4_LEN)
		return ROCE_ERR_ARG;
	if ((err = parse_l2l4(hdr, ROCE_L2L4_LEN + l4len)) != ROCE_OK)
		return err;
	return parse_l4(hdr, l4, l4len, pmtu, pkt);
}
