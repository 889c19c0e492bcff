/*
 * Offload headers and their software fallback; see net_offload.h. The
 * header's meaning is that of the virtio specification (1.2, 5.1.6
 * "Device Operation", struct virtio_net_hdr) and of Linux's tun driver,
 * which fills it from the socket buffer (virtio_net_hdr_from_skb): hdr_len
 * is the length of the buffer's linear part, a hint only; csum_start counts
 * from the start of the Ethernet header. Every field is checked against the
 * frame before it is used.
 */
#include "net/net_offload.h"

#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "util/inet_csum.h"

/* IPv4 (RFC 791) and TCP (RFC 793) field offsets, from the start of each header. */
#define IP_TOT_LEN   2
#define IP_ID        4
#define IP_FRAG      6
#define IP_PROTO     9
#define IP_CSUM      10
#define IP_SRC       12
#define IP_HLEN_MIN  20
#define IP_FRAG_MASK 0x3fffu    /* MF and the fragment offset */
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define UDP_LEN      4
#define UDP_CSUM     6
#define UDP_HLEN     8
#define TCP_SEQ      4
#define TCP_DOFF     12
#define TCP_FLAGS    13
#define TCP_CSUM     16
#define TCP_HLEN_MIN 20
#define TCP_FIN      0x01u
#define TCP_SYN      0x02u
#define TCP_RST      0x04u
#define TCP_PSH      0x08u
#define TCP_CWR      0x80u
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define IP6_PLEN     4
#define IP6_NEXT     6
#define IP6_SRC      8
#define IP6_HLEN     40
#define ETH_MIN_FRAME  60

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5     /* Linux 6.2's uapi; older headers lack it */
#endif

#define KNOWN_FLAGS (VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID)

_Static_assert(sizeof(struct virtio_net_hdr) == 10, "legacy virtio_net_hdr size");
_Static_assert(offsetof(struct virtio_net_hdr, hdr_len) == 2, "virtio_net_hdr hdr_len offset");
_Static_assert(offsetof(struct virtio_net_hdr, gso_size) == 4, "virtio_net_hdr gso_size offset");
_Static_assert(offsetof(struct virtio_net_hdr, csum_start) == 6, "virtio_net_hdr csum_start offset");
_Static_assert(offsetof(struct virtio_net_hdr, csum_offset) == 8, "virtio_net_hdr csum_offset offset");

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }

size_t net_offload_hdr_size(void)
{
	return sizeof(struct virtio_net_hdr);
}

/*
 * IPv4 TCP headers of frame: returns the offset of the TCP header and sets
 * *hdr (through the TCP header) and *pkt (Ethernet header + IPv4 total
 * length), or 0 when the frame is not an unfragmented IPv4 TCP segment.
 */
static size_t tcp4_headers(const uint8_t *f, size_t len, size_t *hdr, size_t *pkt)
{
	const uint8_t *ip = f + NET_ETH_HLEN;
	size_t ihl, tot, doff;

	if (len < NET_ETH_HLEN + IP_HLEN_MIN || get16(f + 12) != ETHERTYPE_IPV4 || (ip[0] >> 4) != 4 ||
	    ip[IP_PROTO] != IP_PROTO_TCP || (get16(ip + IP_FRAG) & IP_FRAG_MASK) != 0)
		return 0;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	tot = get16(ip + IP_TOT_LEN);
	if (ihl < IP_HLEN_MIN || tot > len - NET_ETH_HLEN || tot < ihl || tot - ihl < TCP_HLEN_MIN)
		return 0;
	doff = (size_t)(ip[ihl + TCP_DOFF] >> 4) * 4;
	if (doff < TCP_HLEN_MIN || doff > tot - ihl)
		return 0;
	*hdr = NET_ETH_HLEN + ihl + doff;
	*pkt = NET_ETH_HLEN + tot;
	return NET_ETH_HLEN + ihl;
}

/*
 * UDP headers of frame, as tcp4_headers: the offset of the UDP header, *hdr
 * through it, *pkt the packet's end; 0 unless an unfragmented IPv4 datagram,
 * or an IPv6 one with no extension header, whose UDP length is the rest of
 * the packet.
 */
static size_t udp_headers(const uint8_t *f, size_t len, size_t *hdr, size_t *pkt)
{
	const uint8_t *ip = f + NET_ETH_HLEN;
	size_t ihl, tot;

	if (len < NET_ETH_HLEN + IP_HLEN_MIN)
		return 0;
	if (get16(f + 12) == ETHERTYPE_IPV6) {
		if (len < NET_ETH_HLEN + IP6_HLEN || (ip[0] >> 4) != 6 || ip[IP6_NEXT] != IP_PROTO_UDP)
			return 0;
		ihl = IP6_HLEN;
		tot = IP6_HLEN + (size_t)get16(ip + IP6_PLEN);
	} else {
		if (get16(f + 12) != ETHERTYPE_IPV4 || (ip[0] >> 4) != 4 || ip[IP_PROTO] != IP_PROTO_UDP ||
		    (get16(ip + IP_FRAG) & IP_FRAG_MASK) != 0)
			return 0;
		ihl = (size_t)(ip[0] & 0x0f) * 4;
		tot = get16(ip + IP_TOT_LEN);
		if (ihl < IP_HLEN_MIN || tot < ihl)
			return 0;
	}
	if (tot > len - NET_ETH_HLEN || tot - ihl < UDP_HLEN || get16(ip + ihl + UDP_LEN) != tot - ihl)
		return 0;
	*hdr = NET_ETH_HLEN + ihl + UDP_HLEN;
	*pkt = NET_ETH_HLEN + tot;
	return NET_ETH_HLEN + ihl;
}

int net_offload_parse(const uint8_t *buf, size_t n, struct net_offload *off, struct net_offload_stats *st)
{
	struct virtio_net_hdr vh;
	const uint8_t *f;
	size_t len, th = 0, hdr = 0, pkt = 0;

	memset(off, 0, sizeof(*off));
	if (n < sizeof(vh) + NET_ETH_HLEN) {
		st->drop_short++;
		return -EINVAL;
	}
	if (n - sizeof(vh) > NET_MAX_FRAME) {
		st->drop_too_long++;
		return -EMSGSIZE;
	}
	memcpy(&vh, buf, sizeof(vh));
	f = buf + sizeof(vh);
	len = n - sizeof(vh);
	if ((vh.flags & ~KNOWN_FLAGS) != 0 ||
	    (vh.flags & KNOWN_FLAGS) == KNOWN_FLAGS) {
		st->drop_flags++;
		return -EINVAL;
	}
	if (vh.hdr_len > len) {
		st->drop_hdr_len++;
		return -EINVAL;
	}
	if (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		/* The field (2 bytes at csum_start + csum_offset) lies after the Ethernet header, inside the frame. */
		if (vh.csum_start < NET_ETH_HLEN || vh.csum_start > len || vh.csum_offset > len - vh.csum_start ||
		    len - vh.csum_start - vh.csum_offset < 2) {
			st->drop_csum_bounds++;
			return -EINVAL;
		}
		off->csum_partial = true;
		off->csum_start = vh.csum_start;
		off->csum_offset = vh.csum_offset;
		th = tcp4_headers(f, len, &hdr, &pkt);
		off->tcp_csum_partial = th != 0 && vh.csum_start == th && vh.csum_offset == TCP_CSUM;
	}
	off->csum_valid = (vh.flags & VIRTIO_NET_HDR_F_DATA_VALID) != 0;
	switch (vh.gso_type) {
	case VIRTIO_NET_HDR_GSO_NONE:
		break;
	case VIRTIO_NET_HDR_GSO_TCPV4:
		if (vh.gso_size == 0) {
			st->drop_gso_size++;
			return -EINVAL;
		}
		/* Only what the kernel's TSO makes: an IPv4 TCP segment, its TCP checksum partial, no SYN/RST. */
		if (!off->tcp_csum_partial || (f[th + TCP_FLAGS] & (TCP_SYN | TCP_RST)) != 0) {
			st->drop_gso_frame++;
			return -EINVAL;
		}
		off->gso_size = vh.gso_size;
		off->hdr_len = (uint16_t)hdr;
		off->pkt_len = (uint32_t)pkt;
		st->gso_frames++;
		break;
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		if (vh.gso_size == 0) {
			st->drop_gso_size++;
			return -EINVAL;
		}
		/* What the kernel's UDP segmentation takes: an IPv4 or IPv6 datagram, its UDP checksum partial. */
		th = udp_headers(f, len, &hdr, &pkt);
		if (th == 0 || !off->csum_partial || vh.csum_start != th || vh.csum_offset != UDP_CSUM) {
			st->drop_gso_frame++;
			return -EINVAL;
		}
		off->gso_size = vh.gso_size;
		off->gso_udp = true;
		off->hdr_len = (uint16_t)hdr;
		off->pkt_len = (uint32_t)pkt;
		st->gso_frames++;
		st->gso_udp_frames++;
		break;
	default:
		st->drop_gso_type++;    /* TCPV6, UDP (fragmentation), the ECN bit: never granted */
		return -EINVAL;
	}
	if (off->csum_partial)
		st->partial_csum++;
	return 0;
}

size_t net_offload_complete_csum(const uint8_t *frame, size_t len, const struct net_offload *off,
				 uint8_t *out, size_t cap)
{
	size_t at;
	uint16_t c;

	if (len > cap)
		return 0;
	memcpy(out, frame, len);
	if (!off->csum_partial || off->csum_start > len || off->csum_offset > len - off->csum_start ||
	    len - off->csum_start - off->csum_offset < 2)
		return len;
	/* The field holds the pseudo-header sum: it is part of the sum, then replaced by the result. */
	at = (size_t)off->csum_start + off->csum_offset;
	c = inet_csum_fold(inet_csum_add(0, out + off->csum_start, len - off->csum_start));
	put16(out + at, c ? c : 0xffff);        /* 0 would mean "no checksum" to UDP; -0 is the same to TCP */
	return len;
}

static void ip_csum(uint8_t *ip, size_t ihl)
{
	put16(ip + IP_CSUM, 0);
	put16(ip + IP_CSUM, inet_csum_fold(inet_csum_add(0, ip, ihl)));
}

/* A segment built in out (cap bytes), padded to the Ethernet minimum where it has the room, to emit. */
static void emit_padded(uint8_t *out, size_t flen, size_t cap, void (*emit)(void *ctx, const uint8_t *f, size_t len),
			void *ctx)
{
	if (flen < ETH_MIN_FRAME && cap >= ETH_MIN_FRAME) {
		memset(out + flen, 0, ETH_MIN_FRAME - flen);
		flen = ETH_MIN_FRAME;
	}
	emit(ctx, out, flen);
}

/* The UDP datagrams of a super-frame, each a whole gso_size payload (the last may be shorter). */
static unsigned segment_udp(const uint8_t *frame, const struct net_offload *off, uint8_t *out, size_t cap,
			    void (*emit)(void *ctx, const uint8_t *f, size_t len), void *ctx)
{
	size_t hdr = off->hdr_len, payload = off->pkt_len - hdr, ihl, done = 0;
	bool v6 = get16(frame + 12) == ETHERTYPE_IPV6;
	uint16_t id = 0;
	unsigned n = 0;

	ihl = v6 ? IP6_HLEN : (size_t)(frame[NET_ETH_HLEN] & 0x0f) * 4;
	if (NET_ETH_HLEN + ihl + UDP_HLEN != hdr || off->gso_size > cap - hdr)
		return 0;
	if (!v6)
		id = get16(frame + NET_ETH_HLEN + IP_ID);
	do {
		size_t seg = payload - done < off->gso_size ? payload - done : off->gso_size, flen = hdr + seg;
		uint8_t *ip = out + NET_ETH_HLEN, *udp = ip + ihl;
		size_t l4 = UDP_HLEN + seg;
		uint64_t sum;
		uint16_t c;

		memcpy(out, frame, hdr);
		memcpy(out + hdr, frame + hdr + done, seg);
		if (v6) {
			put16(ip + IP6_PLEN, (uint16_t)l4);
			sum = inet_csum_add(0, ip + IP6_SRC, 32);
		} else {
			put16(ip + IP_TOT_LEN, (uint16_t)(flen - NET_ETH_HLEN));
			put16(ip + IP_ID, (uint16_t)(id + n));
			ip_csum(ip, ihl);
			sum = inet_csum_add(0, ip + IP_SRC, 8);
		}
		put16(udp + UDP_LEN, (uint16_t)l4);
		put16(udp + UDP_CSUM, 0);
		c = inet_csum_fold(sum + IP_PROTO_UDP + l4 + inet_csum_add(0, udp, l4));
		put16(udp + UDP_CSUM, c ? c : 0xffff);  /* 0 would say "no checksum" (and is not allowed over IPv6) */
		emit_padded(out, flen, cap, emit, ctx);
		n++;
		done += seg;
	} while (done < payload);
	return n;
}

unsigned net_offload_segment(const uint8_t *frame, size_t len, const struct net_offload *off, uint8_t *out,
			     size_t cap, void (*emit)(void *ctx, const uint8_t *f, size_t len), void *ctx)
{
	size_t hdr = off->hdr_len, pkt = off->pkt_len, ihl, payload, mss, done = 0;
	uint32_t seq;
	uint16_t id;
	uint8_t flags;
	unsigned n = 0;

	/* What parse guaranteed, checked again: this function must never read past frame or write past out. */
	if (off->gso_size == 0 || pkt > len || hdr > pkt || cap <= hdr)
		return 0;
	if (off->gso_udp)
		return hdr < NET_ETH_HLEN + IP_HLEN_MIN + UDP_HLEN ? 0 : segment_udp(frame, off, out, cap, emit, ctx);
	if (hdr < NET_ETH_HLEN + IP_HLEN_MIN + TCP_HLEN_MIN)
		return 0;
	ihl = (size_t)(frame[NET_ETH_HLEN] & 0x0f) * 4;
	if (NET_ETH_HLEN + ihl + TCP_HLEN_MIN > hdr)
		return 0;
	payload = pkt - hdr;
	mss = off->gso_size < cap - hdr ? off->gso_size : cap - hdr;
	seq = get32(frame + NET_ETH_HLEN + ihl + TCP_SEQ);
	id = get16(frame + NET_ETH_HLEN + IP_ID);
	flags = frame[NET_ETH_HLEN + ihl + TCP_FLAGS];
	do {
		size_t seg = payload - done < mss ? payload - done : mss, flen = hdr + seg;
		uint8_t *ip = out + NET_ETH_HLEN, *tcp = ip + ihl;
		bool last = done + seg == payload;
		size_t l4 = flen - NET_ETH_HLEN - ihl;

		memcpy(out, frame, hdr);
		memcpy(out + hdr, frame + hdr + done, seg);
		put16(ip + IP_TOT_LEN, (uint16_t)(flen - NET_ETH_HLEN));
		put16(ip + IP_ID, (uint16_t)(id + n));
		ip_csum(ip, ihl);
		put32(tcp + TCP_SEQ, seq + (uint32_t)done);
		tcp[TCP_FLAGS] = (uint8_t)(flags & ~((last ? 0 : TCP_FIN | TCP_PSH) | (n == 0 ? 0 : TCP_CWR)));
		put16(tcp + TCP_CSUM, 0);
		put16(tcp + TCP_CSUM, inet_csum_fold(inet_csum_add(0, ip + IP_SRC, 8) + IP_PROTO_TCP + l4 +
						     inet_csum_add(0, tcp, l4)));
		emit_padded(out, flen, cap, emit, ctx);
		n++;
		done += seg;
	} while (done < payload);
	return n;
}

unsigned net_offload_udp_each(const uint8_t *frame, size_t len, const struct net_offload *off,
			      void (*each)(void *ctx, const uint8_t *hdr, size_t hlen, const uint8_t *payload,
					   size_t plen),
			      void *ctx)
{
	uint8_t h[NET_ETH_HLEN + 60 + UDP_HLEN];
	size_t hdr = off->hdr_len, pkt = off->pkt_len, ihl, payload, done = 0;
	uint8_t *ip = h + NET_ETH_HLEN, *udp;
	uint16_t id;
	unsigned n = 0;

	/* What parse guaranteed, checked again: nothing is read past frame. */
	if (!off->gso_udp || off->gso_size == 0 || pkt > len || hdr > pkt || hdr > sizeof(h) ||
	    hdr < NET_ETH_HLEN + IP_HLEN_MIN + UDP_HLEN || get16(frame + 12) != ETHERTYPE_IPV4)
		return 0;
	ihl = (size_t)(frame[NET_ETH_HLEN] & 0x0f) * 4;
	if (NET_ETH_HLEN + ihl + UDP_HLEN != hdr)
		return 0;
	memcpy(h, frame, hdr);
	udp = ip + ihl;
	put16(udp + UDP_CSUM, 0);
	id = get16(ip + IP_ID);
	payload = pkt - hdr;
	if (payload == 0)
		return 0;
	do {
		size_t seg = payload - done < off->gso_size ? payload - done : off->gso_size;

		put16(ip + IP_TOT_LEN, (uint16_t)(ihl + UDP_HLEN + seg));
		put16(ip + IP_ID, (uint16_t)(id + n));
		ip_csum(ip, ihl);
		put16(udp + UDP_LEN, (uint16_t)(UDP_HLEN + seg));
		each(ctx, h, hdr, frame + hdr + done, seg);
		n++;
		done += seg;
	} while (done < payload);
	return n;
}
