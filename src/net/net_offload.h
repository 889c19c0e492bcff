/*
 * Offloads on the emulated segment. A TAP opened with IFF_VNET_HDR and
 * granted TUN_F_CSUM | TUN_F_TSO4 (TUNSETOFFLOAD), and TUN_F_USO4 | USO6
 * where the kernel has them (6.2 and later), hands over each frame behind a
 * virtio_net_hdr (the legacy 10-byte header, in the host's byte order): a
 * TCPv4 frame may then be a segmentation-offload (GSO) super-frame of up to
 * 64 KiB, to be cut at gso_size bytes of payload, a UDP one (IPv4, or IPv6
 * without extension headers) likewise into
 * datagrams of gso_size bytes of payload each (the last may be shorter:
 * RoCEv2 packets, one per datagram, come so from another server of ours),
 * and a checksum may
 * be left partial (NEEDS_CSUM: the field holds only the pseudo-header sum,
 * the sum over [csum_start, end) is still to be added) or vouched for by the
 * kernel (DATA_VALID).
 *
 * net_offload_parse() checks such a header once, against the frame it
 * describes; whatever it returns is safe to act on. A port that takes no
 * offloads (the guest's NIC negotiates none) gets the frame through
 * net_offload_segment() or net_offload_complete_csum(): MSS-sized frames with
 * valid IPv4 and TCP (or UDP) checksums, or the frame with its checksum
 * completed.
 */
#ifndef ERNIC_NET_NET_OFFLOAD_H
#define ERNIC_NET_NET_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_ETH_HLEN   14
/* The largest frame: an IPv4 packet of 65535 bytes behind an Ethernet header. */
#define NET_MAX_FRAME  (NET_ETH_HLEN + 65535)

/* What a valid header said about its frame. */
struct net_offload {
	bool csum_partial;      /* NEEDS_CSUM: finish the sum over [csum_start, end) into csum_start + csum_offset */
	bool csum_valid;        /* DATA_VALID: the kernel verified the frame's checksums */
	bool tcp_csum_partial;  /* csum_partial, and the partial field is the TCP checksum of an IPv4 TCP frame */
	uint16_t csum_start, csum_offset;
	uint16_t gso_size;      /* 0: one frame; else a super-frame, this much payload per segment */
	bool gso_udp;           /* the super-frame is UDP datagrams (IPv4 or IPv6), not TCPv4 */
	uint16_t hdr_len;       /* GSO: Ethernet + IPv4 + TCP (UDP) header bytes, as parsed here (the header's
				 * own hdr_len is only the kernel's hint of its linear part) */
	uint32_t pkt_len;       /* GSO: Ethernet header + the IPv4 total length (trailing bytes ignored) */
};

/* Headers refused, one counter per cause (the frame behind is dropped). */
struct net_offload_stats {
	uint64_t gso_frames;            /* valid super-frames */
	uint64_t gso_udp_frames;        /* of them UDP */
	uint64_t partial_csum;          /* valid frames with a partial checksum */
	uint64_t drop_short;            /* no header, or no Ethernet header behind it */
	uint64_t drop_too_long;         /* frame over NET_MAX_FRAME */
	uint64_t drop_flags;            /* unknown flag bits, or NEEDS_CSUM with DATA_VALID */
	uint64_t drop_csum_bounds;      /* csum_start/csum_offset outside the frame */
	uint64_t drop_hdr_len;          /* hdr_len beyond the frame */
	uint64_t drop_gso_type;         /* anything but NONE, TCPV4 and UDP_L4 (we grant no other) */
	uint64_t drop_gso_size;         /* gso_size 0 */
	uint64_t drop_gso_frame;        /* a super-frame that is not a plain IPv4 TCP segment (UDP datagram)
					 * with its TCP (UDP) checksum partial: fragments, SYN/RST, lengths */
};

/* Size of the header before each frame. */
size_t net_offload_hdr_size(void);

/*
 * buf holds n bytes as read from the TAP: header, then frame. On success
 * returns 0 with *off filled and the frame at buf + net_offload_hdr_size();
 * a frame too large for the reader's buffer shows as n past it and is
 * refused. Otherwise returns -EINVAL (or -EMSGSIZE for a frame too long),
 * with the cause counted in st.
 */
int net_offload_parse(const uint8_t *buf, size_t n, struct net_offload *off, struct net_offload_stats *st);

/* Whether a frame with off needs work before a port without offloads may take it. */
static inline bool net_offload_pending(const struct net_offload *off)
{
	return off != NULL && (off->gso_size != 0 || off->csum_partial);
}

/*
 * Copies a frame whose checksum is partial into out (cap bytes, at least
 * len) and completes it there. Returns the length, or 0 if it does not fit.
 */
size_t net_offload_complete_csum(const uint8_t *frame, size_t len, const struct net_offload *off,
				 uint8_t *out, size_t cap);

/*
 * Cuts a super-frame into frames of at most gso_size bytes of payload, each
 * with its own IPv4 total length, identification (+1 per segment, as the
 * kernel's segmentation numbers them) and header checksum (IPv6: its payload
 * length); for TCP its
 * sequence number and checksum, FIN and PSH on the last segment only; for
 * UDP its length and checksum. Each is built in out (cap bytes: hdr_len +
 * gso_size suffice; for TCP a larger gso_size is cut to what fits, a UDP
 * super-frame that does not fit is refused, since its datagrams may not be
 * cut), padded to the Ethernet minimum, and handed to emit. Returns the
 * number of frames.
 */
unsigned net_offload_segment(const uint8_t *frame, size_t len, const struct net_offload *off, uint8_t *out,
			     size_t cap, void (*emit)(void *ctx, const uint8_t *f, size_t len), void *ctx);

/*
 * The datagrams of an IPv4 UDP super-frame (off->gso_udp) without building
 * them: each() gets, for every datagram in order, its headers in hdr (hlen
 * bytes: Ethernet, IPv4 with the datagram's total length, identification and
 * header checksum as net_offload_segment() gives them, UDP with its length
 * and no checksum, which IPv4 allows) and its payload where it lies in frame.
 * hdr is valid during the call only. For a receiver that copies each datagram
 * once anyway and checks its payload by other means (RoCEv2's ICRC). Returns
 * the number of datagrams, 0 for a super-frame that is not IPv4 UDP.
 */
unsigned net_offload_udp_each(const uint8_t *frame, size_t len, const struct net_offload *off,
			      void (*each)(void *ctx, const uint8_t *hdr, size_t hlen, const uint8_t *payload,
					   size_t plen),
			      void *ctx);

#endif
