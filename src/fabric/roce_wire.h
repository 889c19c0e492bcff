/*
 * RoCEv2 wire format: InfiniBand transport packets (IBA Vol 1, ch. 9) carried
 * in Ethernet II / IPv4 / UDP as the RoCEv2 annex (A17) specifies. IPv4 only,
 * no VLAN tag; RC, UC and UD opcodes (the ones the device's queue pairs use) and
 * the CNP of the annex's congestion control.
 *
 * Headers are packed structs with their sizes asserted; multi-byte fields are
 * be16/be32/be64 (util/endian.h) and sub-byte fields are reached through the
 * SHIFT/MASK accessors below. The ICRC is the one exception to network order:
 * it is appended least significant byte first, as Linux rxe and hardware do.
 *
 * Contracts: roce_parse() validates a received frame completely and only then
 * fills the views; roce_build() writes a whole frame or nothing usable. Both
 * return an enum roce_err (ROCE_OK is 0), never an errno; roce_strerror()
 * names every code. Neither allocates, logs or keeps a pointer after it returns.
 */
#ifndef ERNIC_FABRIC_ROCE_WIRE_H
#define ERNIC_FABRIC_ROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/inet_wire.h"
#include "util/endian.h"

/*
 * The Ethernet, IPv4 and UDP headers are net/inet_wire.h's. In a RoCEv2 packet the UDP source
 * port is flow entropy chosen by the sender, the destination port ROCE_UDP_DPORT, the length
 * covers the UDP header and BTH .. ICRC, and the checksum is 0 when sent by us and not checked on
 * receive (the ICRC covers the packet).
 */
#define ROCE_UDP_DPORT      4791    /* the RoCEv2 annex assigns it */

/* ---- Base Transport Header (IBA 9.2) ---------------------------------------- */

/* flags: SE, M, PadCnt, TVer */
#define ROCE_BTH_SE         0x80u
#define ROCE_BTH_M          0x40u
#define ROCE_BTH_PAD_SHIFT  4
#define ROCE_BTH_PAD_MASK   0x03u
#define ROCE_BTH_TVER_SHIFT 0
#define ROCE_BTH_TVER_MASK  0x0fu
#define ROCE_BTH_TVER       0       /* the only transport header version */
/* fb_qpn: FECN, BECN and resv6 (the byte the ICRC masks: "resv8a"), then the destination QP */
#define ROCE_BTH_FECN       0x80000000u
#define ROCE_BTH_BECN       0x40000000u
#define ROCE_BTH_RESV8A_MASK 0xff000000u
#define ROCE_QPN_MASK       0x00ffffffu
/* a_psn: AckReq, resv7, PSN */
#define ROCE_BTH_ACKREQ     0x80000000u
#define ROCE_PSN_MASK       0x00ffffffu

struct roce_bth {
	uint8_t opcode;
	uint8_t flags;
	be16 pkey;
	be32 fb_qpn;
	be32 a_psn;
} __attribute__((packed));

_Static_assert(sizeof(struct roce_bth) == 12, "BTH size");
_Static_assert(offsetof(struct roce_bth, pkey) == 2, "BTH P_Key offset");
_Static_assert(offsetof(struct roce_bth, fb_qpn) == 4, "BTH resv8a/DestQP offset");
_Static_assert(offsetof(struct roce_bth, a_psn) == 8, "BTH AckReq/PSN offset");

static inline bool roce_bth_se(const struct roce_bth *b) { return b->flags & ROCE_BTH_SE; }
static inline bool roce_bth_m(const struct roce_bth *b) { return b->flags & ROCE_BTH_M; }
static inline unsigned roce_bth_pad(const struct roce_bth *b)
{
	return ((unsigned)b->flags >> ROCE_BTH_PAD_SHIFT) & ROCE_BTH_PAD_MASK;
}
static inline unsigned roce_bth_tver(const struct roce_bth *b)
{
	return ((unsigned)b->flags >> ROCE_BTH_TVER_SHIFT) & ROCE_BTH_TVER_MASK;
}
static inline uint16_t roce_bth_pkey(const struct roce_bth *b) { return be16_get(b->pkey); }
static inline bool roce_bth_fecn(const struct roce_bth *b) { return be32_get(b->fb_qpn) & ROCE_BTH_FECN; }
static inline bool roce_bth_becn(const struct roce_bth *b) { return be32_get(b->fb_qpn) & ROCE_BTH_BECN; }
static inline uint32_t roce_bth_dqpn(const struct roce_bth *b) { return be32_get(b->fb_qpn) & ROCE_QPN_MASK; }
static inline bool roce_bth_ackreq(const struct roce_bth *b) { return be32_get(b->a_psn) & ROCE_BTH_ACKREQ; }
static inline uint32_t roce_bth_psn(const struct roce_bth *b) { return be32_get(b->a_psn) & ROCE_PSN_MASK; }

/* ---- Extended transport headers (IBA 9.3) ------------------------------------ */

/* RDMA ETH (9.3.3): RDMA WRITE FIRST/ONLY, RDMA READ REQUEST */
struct roce_reth {
	be64 va;
	be32 rkey;
	be32 dma_len;
} __attribute__((packed));
_Static_assert(sizeof(struct roce_reth) == 16, "RETH size");
_Static_assert(offsetof(struct roce_reth, rkey) == 8, "RETH R_Key offset");

/* Atomic ETH (9.3.4): CMP_SWAP and FETCH_ADD requests */
struct roce_atomiceth {
	be64 va;
	be32 rkey;
	be64 swap_add;  /* swap data, or the value to add */
	be64 compare;   /* compare data (FETCH_ADD: ignored) */
} __attribute__((packed));
_Static_assert(sizeof(struct roce_atomiceth) == 28, "AtomicETH size");
_Static_assert(offsetof(struct roce_atomiceth, swap_add) == 12, "AtomicETH swap offset");
_Static_assert(offsetof(struct roce_atomiceth, compare) == 20, "AtomicETH compare offset");

/* ACK ETH (9.3.5): syndrome in the top byte, MSN below */
#define ROCE_AETH_SYN_SHIFT   24
#define ROCE_AETH_MSN_MASK    0x00ffffffu
/* syndrome: bits 7..5 the kind, bits 4..0 its value (IBA 9.3.5) */
#define ROCE_AETH_KIND_MASK   0xe0u
#define ROCE_AETH_VAL_MASK    0x1fu
#define ROCE_AETH_KIND_ACK    0x00u   /* value: credit count (0x1f: invalid/unlimited) */
#define ROCE_AETH_KIND_RNR    0x20u   /* value: RNR NAK timer code */
#define ROCE_AETH_KIND_NAK    0x60u   /* value: enum roce_nak */
#define ROCE_AETH_CREDITS_INVALID 0x1fu

enum roce_nak {
	ROCE_NAK_PSN_SEQ_ERR = 0,
	ROCE_NAK_INVALID_REQ = 1,
	ROCE_NAK_REM_ACCESS_ERR = 2,
	ROCE_NAK_REM_OP_ERR = 3,
	ROCE_NAK_INVALID_RD_REQ = 4,
};

struct roce_aeth {
	be32 syn_msn;
} __attribute__((packed));
_Static_assert(sizeof(struct roce_aeth) == 4, "AETH size");

static inline uint8_t roce_aeth_syndrome(const struct roce_aeth *a)
{
	return (uint8_t)(be32_get(a->syn_msn) >> ROCE_AETH_SYN_SHIFT);
}
static inline uint32_t roce_aeth_msn(const struct roce_aeth *a) { return be32_get(a->syn_msn) & ROCE_AETH_MSN_MASK; }
static inline uint8_t roce_aeth_kind(uint8_t syn) { return syn & ROCE_AETH_KIND_MASK; }
static inline uint8_t roce_aeth_value(uint8_t syn) { return syn & ROCE_AETH_VAL_MASK; }
static inline uint8_t roce_syn_ack(unsigned credits)
{
	return (uint8_t)(ROCE_AETH_KIND_ACK | (credits & ROCE_AETH_VAL_MASK));
}
static inline uint8_t roce_syn_rnr(unsigned timer)
{
	return (uint8_t)(ROCE_AETH_KIND_RNR | (timer & ROCE_AETH_VAL_MASK));
}
static inline uint8_t roce_syn_nak(enum roce_nak code)
{
	return (uint8_t)(ROCE_AETH_KIND_NAK | ((unsigned)code & ROCE_AETH_VAL_MASK));
}

/* AtomicAck ETH (9.3.6): the value at the address before the operation */
struct roce_atomicacketh {
	be64 orig;
} __attribute__((packed));
_Static_assert(sizeof(struct roce_atomicacketh) == 8, "AtomicAckETH size");

/* Immediate data (9.3.7), opaque: carried to the receiver's CQE as sent */
struct roce_immdt {
	be32 imm;
} __attribute__((packed));
_Static_assert(sizeof(struct roce_immdt) == 4, "ImmDt size");

/* Invalidate ETH (9.3.8): the R_Key the responder invalidates */
struct roce_ieth {
	be32 rkey;
} __attribute__((packed));
_Static_assert(sizeof(struct roce_ieth) == 4, "IETH size");

/* Datagram ETH (9.3.2): UD only */
struct roce_deth {
	be32 qkey;
	be32 sqp;       /* resv8 then the source QP */
} __attribute__((packed));
_Static_assert(sizeof(struct roce_deth) == 8, "DETH size");
_Static_assert(offsetof(struct roce_deth, sqp) == 4, "DETH source QP offset");

#define ROCE_ICRC_LEN 4

/* Fixed headers in front of the BTH, and the smallest packet (BTH + ICRC, no ETH). */
#define ROCE_L2L4_LEN (sizeof(struct net_eth_hdr) + sizeof(struct net_ip_hdr) + sizeof(struct net_udp_hdr))
#define ROCE_MIN_FRAME (ROCE_L2L4_LEN + sizeof(struct roce_bth) + ROCE_ICRC_LEN)

/* ---- The opcode table (IBA 9.2 opcodes; which ETHs each carries: 9.3) ------------- */

enum roce_opcode {
	ROCE_RC_SEND_FIRST = 0x00,
	ROCE_RC_SEND_MIDDLE = 0x01,
	ROCE_RC_SEND_LAST = 0x02,
	ROCE_RC_SEND_LAST_WITH_IMMEDIATE = 0x03,
	ROCE_RC_SEND_ONLY = 0x04,
	ROCE_RC_SEND_ONLY_WITH_IMMEDIATE = 0x05,
	ROCE_RC_RDMA_WRITE_FIRST = 0x06,
	ROCE_RC_RDMA_WRITE_MIDDLE = 0x07,
	ROCE_RC_RDMA_WRITE_LAST = 0x08,
	ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	ROCE_RC_RDMA_WRITE_ONLY = 0x0a,
	ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
	ROCE_RC_RDMA_READ_REQUEST = 0x0c,
	ROCE_RC_RDMA_READ_RESPONSE_FIRST = 0x0d,
	ROCE_RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
	ROCE_RC_RDMA_READ_RESPONSE_LAST = 0x0f,
	ROCE_RC_RDMA_READ_RESPONSE_ONLY = 0x10,
	ROCE_RC_ACKNOWLEDGE = 0x11,
	ROCE_RC_ATOMIC_ACKNOWLEDGE = 0x12,
	ROCE_RC_COMPARE_SWAP = 0x13,
	ROCE_RC_FETCH_ADD = 0x14,
	ROCE_RC_SEND_LAST_WITH_INVALIDATE = 0x16,
	ROCE_RC_SEND_ONLY_WITH_INVALIDATE = 0x17,
	ROCE_UC_SEND_FIRST = 0x20,
	ROCE_UC_SEND_MIDDLE = 0x21,
	ROCE_UC_SEND_LAST = 0x22,
	ROCE_UC_SEND_LAST_WITH_IMMEDIATE = 0x23,
	ROCE_UC_SEND_ONLY = 0x24,
	ROCE_UC_SEND_ONLY_WITH_IMMEDIATE = 0x25,
	ROCE_UC_RDMA_WRITE_FIRST = 0x26,
	ROCE_UC_RDMA_WRITE_MIDDLE = 0x27,
	ROCE_UC_RDMA_WRITE_LAST = 0x28,
	ROCE_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29,
	ROCE_UC_RDMA_WRITE_ONLY = 0x2a,
	ROCE_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2b,
	ROCE_UD_SEND_ONLY = 0x64,
	ROCE_UD_SEND_ONLY_WITH_IMMEDIATE = 0x65,
	/*
	 * The RoCEv2 Congestion Notification Packet (annex A17.9.3): a receiver whose queue backs up
	 * tells the sending QP (DestQP) to slow down. BTH with BECN set, PSN 0, then 16 reserved bytes.
	 */
	ROCE_CNP = 0x81,
};

/* The ECN field of the IPv4 TOS byte (RFC 3168). */
#define ROCE_ECN_MASK 0x03u
#define ROCE_ECN_ECT0 0x02u
#define ROCE_ECN_CE   0x03u

/* Extension headers an opcode carries; on the wire they follow the BTH in this order. */
enum roce_hdr {
	ROCE_HDR_DETH,
	ROCE_HDR_RETH,
	ROCE_HDR_ATOMICETH,
	ROCE_HDR_AETH,
	ROCE_HDR_ATOMICACKETH,
	ROCE_HDR_IMMDT,
	ROCE_HDR_IETH,
	ROCE_HDR_CNP,           /* a CNP's 16 reserved bytes (zero when sent, ignored when received) */
	ROCE_HDR_NUM,
};
#define ROCE_CNP_RSVD_LEN 16
#define ROCE_H(h) (1u << (h))

enum roce_seg {
	ROCE_SEG_ONLY,      /* a whole message in one packet; payload up to the path MTU */
	ROCE_SEG_FIRST,     /* payload exactly the path MTU */
	ROCE_SEG_MIDDLE,    /* payload exactly the path MTU */
	ROCE_SEG_LAST,      /* payload 1 .. path MTU (0 for a zero-length remainder is not sent) */
};

enum roce_transport {
	ROCE_TRANSPORT_RC = 0x00,
	ROCE_TRANSPORT_UC = 0x20,
	ROCE_TRANSPORT_UD = 0x60,
};
/* A UC opcode's RC twin (the same packet kind and headers): the transport bits cleared. */
#define ROCE_UC_TO_RC(opcode) ((uint8_t)((opcode) & ~ROCE_TRANSPORT_MASK))
#define ROCE_TRANSPORT_MASK 0xe0u

struct roce_opcode_info {
	const char *name;       /* NULL: not an RC, UC or UD opcode we accept */
	uint8_t hdrs;           /* ROCE_H() bits */
	uint8_t seg;            /* enum roce_seg */
	bool payload;           /* the packet may carry payload (else it must carry none) */
	bool request;           /* requester -> responder (else a response or ACK) */
};

/* The entry for an opcode, or NULL when it is none of the RC, UC or UD opcodes above. */
const struct roce_opcode_info *roce_opcode_info(uint8_t opcode);

/* Bytes of the extension headers selected by hdrs (ROCE_H() bits). */
size_t roce_hdrs_len(unsigned hdrs);

/* ---- Errors: one table (roce_wire.c) -------------------------------------------- */

enum roce_err {
	ROCE_OK = 0,
	ROCE_ERR_ETH_SHORT,         /* shorter than an Ethernet header */
	ROCE_ERR_ETHERTYPE,         /* not IPv4 (VLAN tags and IPv6 are not supported) */
	ROCE_ERR_IP_SHORT,          /* shorter than an IPv4 header */
	ROCE_ERR_IP_VERSION,        /* IP version is not 4 */
	ROCE_ERR_IP_IHL,            /* IPv4 options (IHL != 5) */
	ROCE_ERR_IP_LENGTH,         /* total length disagrees with the frame */
	ROCE_ERR_IP_CHECKSUM,       /* IPv4 header checksum wrong */
	ROCE_ERR_IP_FRAGMENT,       /* MF, a fragment offset or the reserved flag */
	ROCE_ERR_IP_PROTOCOL,       /* not UDP */
	ROCE_ERR_UDP_LENGTH,        /* UDP length disagrees with the IPv4 total length */
	ROCE_ERR_UDP_PORT,          /* destination port is not 4791 */
	ROCE_ERR_BTH_SHORT,         /* no room for a BTH and the ICRC */
	ROCE_ERR_BTH_VERSION,       /* TVer is not 0 */
	ROCE_ERR_OPCODE,            /* not an RC, UC or UD opcode of the table */
	ROCE_ERR_HDR_SHORT,         /* the opcode's extension headers do not fit */
	ROCE_ERR_PAD,               /* packet not a multiple of 4 bytes, or pad count beyond payload */
	ROCE_ERR_PAYLOAD_UNEXPECTED, /* payload or pad on an opcode that carries none */
	ROCE_ERR_PAYLOAD_MTU,       /* payload beyond the path MTU */
	ROCE_ERR_PAYLOAD_NOT_FULL,  /* FIRST/MIDDLE packet whose payload is not the path MTU */
	ROCE_ERR_ICRC,              /* invariant CRC wrong */
	ROCE_ERR_NOSPACE,           /* builder: the caller's buffer is too small */
	ROCE_ERR_ARG,               /* builder/parser: an argument out of range */
	ROCE_ERR_NUM,
};

/* A short constant name for any value (out-of-range values included). */
const char *roce_strerror(enum roce_err err);

/* ---- ICRC (IBA 7.8.1; the RoCEv2 annex) ------------------------------------------- */

/*
 * The ICRC of an IPv4 RoCEv2 packet: ip points at the IPv4 header, len covers
 * it up to (not including) the ICRC, at least IPv4 + UDP + BTH (a shorter
 * len returns 0 and reads nothing). CRC-32 over
 * 8 bytes of 0xFF, then the IPv4, UDP and BTH headers with the variant fields
 * set to all ones (TOS, TTL, header checksum; UDP checksum; BTH resv8a, which
 * holds FECN and BECN), then the rest unchanged. The value is stored on the
 * wire least significant byte first (roce_icrc_put/get).
 */
uint32_t roce_icrc(const uint8_t *ip, size_t len);
void roce_icrc_put(uint8_t *p, uint32_t icrc);
uint32_t roce_icrc_get(const uint8_t *p);

/* ---- Builder ---------------------------------------------------------------------- */

struct roce_frame_desc {
	/* Ethernet, IPv4 (addresses in host order), UDP */
	uint8_t dst_mac[NET_ETH_ALEN], src_mac[NET_ETH_ALEN];
	uint32_t src_ip, dst_ip;
	uint8_t tos, ttl;
	uint16_t ip_id;
	bool df;
	uint16_t sport;
	/* BTH */
	uint8_t opcode;
	bool se, m, fecn, becn, ackreq;
	uint8_t pad;            /* 0..3, (payload_len + pad) % 4 == 0 */
	uint16_t pkey;
	uint32_t dqpn, psn;     /* 24 bits each */
	/* the extension headers the opcode carries (the others are ignored) */
	struct { uint32_t qkey, sqp; } deth;
	struct { uint64_t va; uint32_t rkey, len; } reth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add, compare; } atomic;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	uint64_t atomic_orig;
	uint32_t imm;
	uint32_t ieth_rkey;
	/*
	 * payload (pad bytes are written as zeros): anywhere outside the frame,
	 * or already in place at roce_payload_offset(opcode) in the buffer
	 * roce_build() writes, which then copies nothing
	 */
	const void *payload;
	uint32_t payload_len;
};

/*
 * Where a packet of this opcode carries its payload: the length of its
 * Ethernet, IPv4, UDP, BTH and extension headers; 0 for an opcode outside
 * the table. A sender may put the payload there first (one copy less).
 */
size_t roce_payload_offset(uint8_t opcode);

/*
 * Bytes a sender keeps writable in front of a frame it hands over, so that
 * the node can insert an 802.1Q tag where the frame lies (the MAC addresses
 * move four bytes forward) instead of copying it.
 */
#define ROCE_FRAME_HEADROOM 4

/*
 * Write the frame d describes into buf[0..cap) and its length into *len:
 * IPv4 header checksum computed, UDP checksum 0, ICRC appended. Refuses an
 * opcode outside the table (ROCE_ERR_OPCODE), out-of-range fields, payload on
 * an opcode without any, a bad pad (ROCE_ERR_ARG) and a short buffer
 * (ROCE_ERR_NOSPACE); buf may then hold a partial frame. No path MTU check:
 * that is the sender's segmentation (the parser checks it on receive).
 */
enum roce_err roce_build(const struct roce_frame_desc *d, uint8_t *buf, size_t cap, size_t *len);

/* The most extension headers one packet carries (RETH and ImmDt, AtomicETH, ...), with room to spare. */
#define ROCE_EXT_HDRS_MAX 32
/* A frame's bytes after its payload: the pad (0 to 3 bytes) and the ICRC. */
#define ROCE_TRAILER_MAX (ROCE_BTH_PAD_MASK + ROCE_ICRC_LEN)

/*
 * The same frame in three pieces, its payload left where d->payload points:
 * the headers (Ethernet through the extension headers) into hdr[0..cap),
 * their length in *hlen; the pad and the ICRC (computed over the three) into
 * trailer, their length in *tlen. The frame is hdr, then the payload, then
 * the trailer: byte for byte what roce_build() writes. Refuses what it
 * refuses; ROCE_ERR_NOSPACE when the headers do not fit.
 */
enum roce_err roce_build_pieces(const struct roce_frame_desc *d, uint8_t *hdr, size_t cap, size_t *hlen,
				uint8_t trailer[ROCE_TRAILER_MAX], size_t *tlen);

/* ---- Parser ----------------------------------------------------------------------- */

/* Views into a frame roce_parse() accepted; headers the opcode lacks are NULL. */
struct roce_pkt {
	const struct net_eth_hdr *eth;
	const struct net_ip_hdr *ip;
	const struct net_udp_hdr *udp;
	const struct roce_bth *bth;
	const struct roce_opcode_info *op;
	const struct roce_deth *deth;
	const struct roce_reth *reth;
	const struct roce_atomiceth *atomic;
	const struct roce_aeth *aeth;
	const struct roce_atomicacketh *atomic_ack;
	const struct roce_immdt *imm;
	const struct roce_ieth *ieth;
	const uint8_t *payload;         /* pad bytes follow it */
	uint32_t payload_len;           /* without the pad */
	uint32_t icrc;
	/* not the parser's: the 802.1Q tag the frame came with, which the node took out before parsing */
	bool vlan;
	uint16_t vlan_tci;
};

/*
 * Validate frame[0..len) (an Ethernet frame without FCS, exactly as long as
 * its IPv4 packet) against path MTU pmtu (bytes: 256..4096 in practice;
 * 0 or above 4096 is ROCE_ERR_ARG) and fill *pkt.
 * Checks, in order: Ethernet type; IPv4 version, IHL, total length against
 * the frame, header checksum, fragmentation, protocol; UDP length and port;
 * BTH room, version, opcode; the opcode's extension headers; pad and payload
 * against the opcode, the frame and pmtu; the ICRC. On an error *pkt is
 * left unspecified. Never reads outside frame[0..len).
 */
enum roce_err roce_parse(const uint8_t *frame, size_t len, uint32_t pmtu, struct roce_pkt *pkt);

/*
 * The same checks for a frame in two pieces, as a UDP super-frame is cut:
 * hdr, its Ethernet, IPv4 and UDP headers (ROCE_L2L4_LEN bytes, read whole),
 * and l4[0..l4len), the UDP payload (BTH onwards, the ICRC last). The views
 * in *pkt point into both. Never reads outside the two.
 */
enum roce_err roce_parse_split(const uint8_t *hdr, const uint8_t *l4, size_t l4len, uint32_t pmtu,
			       struct roce_pkt *pkt);

#endif
