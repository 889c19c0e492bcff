/* TAP attachment; see tap.h. */
#include "net/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <sys/uio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_switch.h"
#include "util/evloop.h"
#include "util/log.h"

#define ETH_HLEN 14
#define TAP_RX_OFFLOADS (TUN_F_CSUM | TUN_F_TSO4)
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20         /* Linux 6.2's uapi; older headers lack them */
#define TUN_F_USO6 0x40
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif
#define UDP_HDRS (ETH_HLEN + 20 + 8)    /* Ethernet, IPv4 without options, UDP */
#define ROCE_UDP_PORT 4791      /* RoCEv2's destination port (IANA) */
#define TAP_UDP_FLOWS 8         /* flows of RoCEv2 datagrams merged at once */
#define UDP_MAX_SEGS 64         /* the kernel's UDP segmentation takes no more (UDP_MAX_SEGMENTS, 64 before 6.10) */
#define TCP_HDRS (ETH_HLEN + 20 + 20)  /* Ethernet, IPv4 without options, TCP without options */
#define GSO_MAX_FRAME (ETH_HLEN + 65535)  /* an IPv4 packet's total length is 16 bits */

/*
 * Outgoing TCP segments of one flow, merged into one frame that the kernel
 * takes as a segmentation-offload (GSO) packet: one write() instead of one
 * per 1460 bytes. Only plain in-order ACK segments of equal size merge, with
 * the same TCP options (timestamps of the same tick: the kernel copies the
 * header, options included, onto each segment it cuts); the wire the peer
 * sees is unchanged.
 *
 * RoCEv2 datagrams of one flow merge the same way where the kernel takes UDP
 * segmentation (USO, Linux 6.2): one write() for up to 64 KiB of packets
 * instead of one per packet. The kernel cuts the payload at gso_size and
 * gives each datagram the first's headers, its own length, an IPv4
 * identification one more than the last's, and a UDP checksum. So only
 * datagrams whose identifications already count up by one merge, of equal
 * size but the last, with the same addresses, ports, TOS, TTL and flags: each
 * packet's ICRC, which covers the IPv4 header but TOS, TTL and checksum,
 * holds for the datagram the kernel cuts. The only change on the wire is a
 * UDP checksum where we sent none (RoCEv2 receivers ignore it; the ICRC
 * masks it).
 */
struct coalesce {
	uint8_t frame[GSO_MAX_FRAME];
	size_t len;           /* 0: empty */
	size_t hdr;           /* Ethernet + IPv4 + TCP header with its options (UDP: its 8 bytes) */
	bool udp;             /* RoCEv2 datagrams, not TCP segments */
	unsigned segs;
	uint16_t gso_size;    /* payload of each segment but the last */
	uint32_t next_seq;    /* TCP: the next segment's sequence number; UDP: the next identification */
	bool last_short;      /* the last merged segment was shorter: nothing may follow */
};

/*
 * A pure ACK toward the host, held until the end of the batch of events: a
 * later one of the same flow that acknowledges more, or opens the window
 * further, replaces it. A batch of super-frames read is then answered with
 * one cumulative ACK, as a receiver with GRO or delayed ACKs answers, and the
 * host's TCP sends its next window as one super-frame. A duplicate ACK (the
 * same acknowledgment and window: the stack's report of a gap, which the
 * peer's fast retransmit counts) is never folded away.
 */
struct held_ack {
	uint8_t frame[TCP_HDRS + 12];   /* room for the timestamps option */
	size_t len;           /* 0: none */
};

struct tap {
	char name[IFNAMSIZ];
	int fd;
	bool vnet;            /* frames carry a virtio_net_hdr (GSO writes possible) */
	bool rx_offloads;     /* TUNSETOFFLOAD granted TAP_RX_OFFLOADS: super-frames and partial checksums come in */
	bool uso;             /* the kernel takes UDP segmentation both ways (TUN_F_USO4 granted): RoCEv2 merges */
	bool flush_pending;
	unsigned full_wakeups;  /* wakeups in a row whose reads ended at the budget, not at an empty queue */
	struct evloop *loop;
	struct ev_watch *watch;
	struct net_switch *sw;
	int port;
	struct tap_stats stats;
	struct coalesce co;
	struct coalesce uco[TAP_UDP_FLOWS];    /* RoCEv2 datagrams, a flow each */
	unsigned uco_next;    /* the merge taken over when a new flow finds none free */
	struct held_ack ack;
	/* frames the kernel's queue refused, oldest first: hold[hold_head], ... hold_n of them */
	struct held_frame {
		uint8_t *buf;     /* the virtio_net_hdr (when vnet) and the frame, as written */
		size_t len;
	} hold[TAP_TX_HOLD];
	unsigned hold_head, hold_n;
	/*
	 * One frame as read, and a byte more: a longer frame is cut, and shows as a
	 * read() that fills the buffer (or, from the tun driver, returns the whole length).
	 */
	uint8_t buf[sizeof(struct virtio_net_hdr) + NET_MAX_FRAME + 1];
};

static void tap_gone(struct tap *t, int err)
{
	LOG_WARN("tap %s: %s; the segment goes on without it", t->name, strerror(err));
	evloop_del_fd(t->loop, t->watch);
	t->watch = NULL;
	net_switch_detach(t->sw, t->port);
	t->port = -1;
	close(t->fd);
	t->fd = -1;
}

/*
 * Frames from the host. A super-frame is up to 64 KiB, so the batch is bounded
 * in bytes as well as in reads: a large upload leaves the loop free for the
 * guest's doorbells and the other connections between batches (the TAP stays
 * readable, and epoll reports it again at once).
 */
static void flush_held(struct tap *t);

static void on_readable(void *arg, uint32_t events)
{
	struct tap *t = arg;
	size_t hdr = t->vnet ? net_offload_hdr_size() : 0, taken = 0;
	unsigned frames = 0;

	if (events & EPOLLOUT)
		flush_held(t);
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return;

	/*
	 * Frames read after TAP_BEHIND_WAKEUPS wakeups in a row that ended at their budget come from
	 * a queue that keeps growing: the segment is told (net_switch_set_behind), until a read
	 * finds the queue empty.
	 */
	if (t->full_wakeups >= TAP_BEHIND_WAKEUPS)
		t->stats.behind_wakeups++;
	net_switch_set_behind(t->sw, t->full_wakeups >= TAP_BEHIND_WAKEUPS);
	/* A UDP super-frame counts as the datagrams it carries: each is a frame to its port's ring. */
	for (; frames < TAP_READS_PER_WAKEUP && taken < TAP_BYTES_PER_WAKEUP && t->fd >= 0; frames++) {
		ssize_t n = read(t->fd, t->buf, sizeof(t->buf));
		struct net_offload off;

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (errno == EAGAIN)
				t->full_wakeups = 0;    /* the queue is empty (an interrupted read says nothing) */
			net_switch_set_behind(t->sw, false);
			return;
		}
		if (n <= 0) {
			net_switch_set_behind(t->sw, false);    /* not left set for ever by a TAP that is gone */
			tap_gone(t, n < 0 ? errno : ENODEV);
			return;
		}
		taken += (size_t)n;
		if (!t->vnet) {
			if ((size_t)n > NET_MAX_FRAME) {
				t->stats.rx_dropped++;
				continue;
			}
			t->stats.rx_frames++;
			net_switch_input(t->sw, t->port, t->buf, (size_t)n);
			continue;
		}
		/* n may reach or exceed the buffer (a frame cut short): the parser refuses it by length alone. */
		if (net_offload_parse(t->buf, (size_t)n, &off, &t->stats.offload) != 0) {
			t->stats.rx_dropped++;
			continue;
		}
		t->stats.rx_frames++;
		if (off.gso_udp)
			frames += (off.pkt_len - off.hdr_len) / off.gso_size;
		net_switch_input_offload(t->sw, t->port, t->buf + hdr, (size_t)n - hdr, &off);
	}
	if (t->fd >= 0 && t->full_wakeups < UINT_MAX)
		t->full_wakeups++; /* the budget ran out before the queue did */
	net_switch_set_behind(t->sw, false);
}

/* Hold a frame the kernel could not take now (written again by on_event when the TAP is writable). */
static void hold_frame(struct tap *t, const struct iovec *iov, int n)
{
	struct held_frame *h;
	size_t len = 0;

	if (t->hold_n == TAP_TX_HOLD) {
		t->stats.tx_dropped++;
		t->stats.tx_held_full++;
		return;
	}
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	h = &t->hold[(t->hold_head + t->hold_n) % TAP_TX_HOLD];
	h->buf = malloc(len);
	if (h->buf == NULL) {
		t->stats.tx_dropped++;
		return;
	}
	h->len = 0;
	for (int i = 0; i < n; i++) {
		memcpy(h->buf + h->len, iov[i].iov_base, iov[i].iov_len);
		h->len += iov[i].iov_len;
	}
	if (t->hold_n++ == 0 && t->watch)
		evloop_mod_fd(t->loop, t->watch, EPOLLIN | EPOLLOUT);
	t->stats.tx_held++;
}

/* A write failed: the device is gone (detach), or its queue is full (the caller holds the frame). */
static bool write_failed(struct tap *t)
{
	if (errno == EIO || errno == EBADFD || errno == ENODEV) {
		tap_gone(t, errno);
		return false;
	}
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR;
}

/* Write what is held, oldest first, until the kernel refuses one again. */
static void flush_held(struct tap *t)
{
	while (t->hold_n > 0 && t->fd >= 0) {
		struct held_frame *h = &t->hold[t->hold_head];

		if (write(t->fd, h->buf, h->len) != (ssize_t)h->len) {
			if (write_failed(t))
				return;
			t->stats.tx_dropped++; /* refused for good: never again */
		} else {
			t->stats.tx_frames++;
		}
		free(h->buf);
		h->buf = NULL;
		t->hold_head = (t->hold_head + 1) % TAP_TX_HOLD;
		t->hold_n--;
	}
	if (t->hold_n == 0 && t->watch)
		evloop_mod_fd(t->loop, t->watch, EPOLLIN);
}

/* One frame in n pieces, iov[0] its virtio_net_hdr (left out without IFF_VNET_HDR). */
static void write_iov(struct tap *t, struct iovec *iov, int n)
{
	ssize_t want = 0;

	if (!t->vnet) {
		iov++;
		n--;
	}
	for (int i = 0; i < n; i++)
		want += (ssize_t)iov[i].iov_len;
	if (t->fd < 0)
		return;
	/* Behind frames already held, in order; a full queue holds the frame rather than drop it. */
	if (t->hold_n > 0) {
		hold_frame(t, iov, n);
		return;
	}
	if (writev(t->fd, iov, n) != want) {
		if (write_failed(t))
			hold_frame(t, iov, n);
		else if (t->fd >= 0)
			t->stats.tx_dropped++;
		return;
	}
	t->stats.tx_frames++;
}

static void write_frame(struct tap *t, const struct virtio_net_hdr *vh, const uint8_t *frame, size_t len)
{
	struct virtio_net_hdr none = { 0 };
	struct iovec iov[2] = {
		{ .iov_base = (void *)(vh ? vh : &none), .iov_len = sizeof(none) },
		{ .iov_base = (void *)frame, .iov_len = len },
	};

	write_iov(t, iov, 2);
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* TCP header length (options included) of an IPv4 TCP frame without IP options or fragments, or 0. */
static size_t tcp_hlen(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + ETH_HLEN, *tcp = ip + 20;
	size_t th;

	if (len < TCP_HDRS || get16(f + 12) != 0x0800 || ip[0] != 0x45 || ip[9] != 6 ||
	    (get16(ip + 6) & 0x3fff) != 0)
		return 0;
	th = (size_t)(tcp[12] >> 4) * 4;
	if (th < 20 || get16(ip + 2) < 20 + th || get16(ip + 2) > len - ETH_HLEN)
		return 0;
	return th;
}

/* Payload length of a frame that may merge (IPv4 TCP with ACK and at most PSH, carrying data), or -1. */
static long mergeable(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + ETH_HLEN, *tcp = ip + 20;
	size_t th = tcp_hlen(f, len), tot;

	if (th == 0 || (tcp[13] & ~0x08) != 0x10) /* ACK, optionally PSH; nothing else */
		return -1;
	tot = get16(ip + 2);
	if (tot == 20 + th)
		return -1;
	return (long)(tot - 20 - th);
}

/* Payload length of a RoCEv2 datagram that may merge (IPv4 without options, unfragmented, nothing after it), or -1. */
static long udp_mergeable(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + ETH_HLEN, *udp = ip + 20;
	size_t tot;

	if (len <= UDP_HDRS || get16(f + 12) != 0x0800 || ip[0] != 0x45 || ip[9] != 17 ||
	    (get16(ip + 6) & 0xbfff) != 0 || get16(udp + 2) != ROCE_UDP_PORT)
		return -1;
	tot = get16(ip + 2);
	if (tot != len - ETH_HLEN || get16(udp + 4) != tot - 20)
		return -1;
	return (long)(tot - 28);
}

/* Send what is merged: one plain frame, or one GSO frame for several segments. */
static void flush_co(struct tap *t, struct coalesce *c)
{
	uint8_t *ip = c->frame + ETH_HLEN, *tcp = ip + 20;
	struct virtio_net_hdr vh = { 0 };
	size_t tcplen;
	uint32_t sum;

	if (c->len == 0)
		return;
	if (c->segs == 1) {
		write_frame(t, NULL, c->frame, c->len);
		c->len = 0;
		return;
	}
	/* IPv4 length and checksum of the merged packet; TCP (UDP) checksum left to the kernel (partial). */
	put16(ip + 2, (uint16_t)(c->len - ETH_HLEN));
	put16(ip + 10, 0);
	sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += get16(ip + i);
	put16(ip + 10, (uint16_t)~fold(sum));
	if (c->udp) {
		uint8_t *udp = ip + 20;
		size_t udplen = c->len - ETH_HLEN - 20;

		put16(udp + 4, (uint16_t)udplen);
		sum = get16(ip + 12) + get16(ip + 14) + get16(ip + 16) + get16(ip + 18) + 17 + (uint32_t)udplen;
		put16(udp + 6, fold(sum));
		vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		vh.hdr_len = UDP_HDRS;
		vh.gso_size = c->gso_size;
		vh.csum_start = ETH_HLEN + 20;
		vh.csum_offset = 6;
		write_frame(t, &vh, c->frame, c->len);
		t->stats.gso_udp_frames++;
		t->stats.udp_merged += c->segs;
		c->len = 0;
		return;
	}
	tcplen = c->len - ETH_HLEN - 20;
	sum = get16(ip + 12) + get16(ip + 14) + get16(ip + 16) + get16(ip + 18) + 6 + (uint32_t)tcplen;
	put16(tcp + 16, fold(sum));
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	vh.hdr_len = (uint16_t)c->hdr;
	vh.gso_size = c->gso_size;
	vh.csum_start = ETH_HLEN + 20;
	vh.csum_offset = 16;
	write_frame(t, &vh, c->frame, c->len);
	t->stats.gso_frames++;
	c->len = 0;
}

/* The TCP segments merged. */
static void flush(struct tap *t)
{
	flush_co(t, &t->co);
}

/* Every flow of RoCEv2 datagrams merged. */
static void flush_udp(struct tap *t)
{
	for (unsigned i = 0; i < TAP_UDP_FLOWS; i++)
		flush_co(t, &t->uco[i]);
}

/*
 * A plain ACK of ours: IPv4 without options, TCP without data, ACK alone, no
 * options but the timestamps (NOP NOP TS). One with SACK blocks reports a gap
 * and is never held.
 */
static bool pure_ack(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + ETH_HLEN, *tcp = ip + 20;
	size_t th = tcp_hlen(f, len);

	return th != 0 && len <= sizeof(((struct held_ack *)0)->frame) && get16(ip + 2) == 20 + th &&
	       tcp[13] == 0x10 && (th == 20 || (th == 32 && tcp[20] == 1 && tcp[21] == 1 && tcp[22] == 8));
}

/* Whether ACK f says everything the held one says, and more (a later timestamp is no loss). */
static bool supersedes(const struct held_ack *h, const uint8_t *f)
{
	const uint8_t *a = h->frame, *aip = a + ETH_HLEN, *atcp = aip + 20, *ip = f + ETH_HLEN, *tcp = ip + 20;
	int32_t more = (int32_t)(get32(tcp + 8) - get32(atcp + 8));

	return memcmp(a, f, 12) == 0 && memcmp(aip + 12, ip + 12, 8) == 0 && memcmp(atcp, tcp, 8) == 0 &&
	       atcp[12] == tcp[12] && (more > 0 || (more == 0 && get16(tcp + 14) > get16(atcp + 14)));
}

static void flush_ack(struct tap *t)
{
	if (t->ack.len == 0)
		return;
	write_frame(t, NULL, t->ack.frame, t->ack.len);
	t->ack.len = 0;
}

static void deferred_flush(void *arg)
{
	struct tap *t = arg;

	t->flush_pending = false;
	flush(t);
	flush_udp(t);
	flush_ack(t);
}

static void schedule_flush(struct tap *t)
{
	if (!t->flush_pending && evloop_defer(t->loop, deferred_flush, t) == 0)
		t->flush_pending = true;
	else if (!t->flush_pending)
		deferred_flush(t);
}

/* Whether frame f (payload n) continues the merged flow. */
static bool continues(const struct coalesce *c, const uint8_t *f, long n)
{
	const uint8_t *a = c->frame, *ip = f + ETH_HLEN, *tcp = ip + 20;
	const uint8_t *aip = a + ETH_HLEN, *atcp = aip + 20;
	size_t opt = c->hdr - TCP_HDRS;

	return c->len && !c->udp && !c->last_short && !(atcp[13] & 0x08) /* nothing after a PSH */ &&
	       memcmp(a, f, 12) == 0 && memcmp(aip + 12, ip + 12, 8) == 0 && memcmp(atcp, tcp, 4) == 0 &&
	       get32(tcp + 4) == c->next_seq && get32(tcp + 8) == get32(atcp + 8) &&
	       get16(tcp + 14) == get16(atcp + 14) && atcp[12] == tcp[12] &&
	       memcmp(atcp + 20, tcp + 20, opt) == 0 && n <= c->gso_size &&
	       c->len + (size_t)n <= sizeof(c->frame);
}

/* Whether datagram f (payload n) continues the merged ones. */
static bool udp_continues(const struct coalesce *c, const uint8_t *f, long n)
{
	const uint8_t *a = c->frame, *ip = f + ETH_HLEN, *aip = a + ETH_HLEN;

	return c->len && c->udp && !c->last_short && c->segs < UDP_MAX_SEGS && memcmp(a, f, ETH_HLEN) == 0 &&
	       aip[1] == ip[1] && get16(aip + 6) == get16(ip + 6) && aip[8] == ip[8] &&
	       memcmp(aip + 12, ip + 12, 12) == 0 /* addresses and ports */ && get16(ip + 4) == c->next_seq &&
	       n <= c->gso_size && c->len + (size_t)n <= sizeof(c->frame);
}

/* The bytes of the pieces from byte skip on, into dst. */
static void gather(uint8_t *dst, const struct iovec *piece, unsigned np, size_t skip)
{
	for (unsigned i = 0; i < np; i++) {
		size_t l = piece[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		memcpy(dst, (const uint8_t *)piece[i].iov_base + skip, l - skip);
		dst += l - skip;
		skip = 0;
	}
}

/*
 * A RoCEv2 datagram of len bytes in np pieces (frame: the first, which holds
 * its Ethernet, IPv4 and UDP headers): merged with those before it, or the
 * first of a new merge. Its bytes are copied once, into the merge.
 */
static void deliver_udp(struct tap *t, const uint8_t *frame, const struct iovec *piece, unsigned np, size_t len,
			long n)
{
	struct coalesce *c = NULL;
	const uint8_t *ip = frame + ETH_HLEN;

	/*
	 * The flow's merge: one with the same MACs, addresses and ports, else a free one, else the
	 * oldest taken over (written first). Flows are QPs' streams, merged side by side as the pump
	 * sends a packet of each QP in turn; within a flow nothing overtakes anything.
	 */
	for (unsigned i = 0; i < TAP_UDP_FLOWS && c == NULL; i++) {
		const uint8_t *a = t->uco[i].frame;

		if (t->uco[i].len && memcmp(a, frame, 12) == 0 && memcmp(a + ETH_HLEN + 12, ip + 12, 12) == 0)
			c = &t->uco[i];
	}
	for (unsigned i = 0; i < TAP_UDP_FLOWS && c == NULL; i++)
		if (t->uco[i].len == 0)
			c = &t->uco[i];
	if (c == NULL) {
		c = &t->uco[t->uco_next];
		t->uco_next = (t->uco_next + 1) % TAP_UDP_FLOWS;
	}
	/*
	 * A shorter second datagram would end the merge at two: the first of a WRITE carries a RETH
	 * the rest lack. It goes alone, and the rest merge after it.
	 */
	if (udp_continues(c, frame, n) && !(c->segs == 1 && n < c->gso_size)) {
		gather(c->frame + c->len, piece, np, UDP_HDRS);
		c->len += (size_t)n;
		c->segs++;
		c->next_seq = (uint16_t)(c->next_seq + 1);
		c->last_short = n < c->gso_size;
	} else {
		flush_co(t, c);
		gather(c->frame, piece, np, 0);
		c->len = len;
		c->hdr = UDP_HDRS;
		c->udp = true;
		c->segs = 1;
		c->gso_size = (uint16_t)n;
		c->next_seq = (uint16_t)(get16(frame + ETH_HLEN + 4) + 1);
		c->last_short = false;
	}
	schedule_flush(t);
}

static void deliver(void *ctx, const uint8_t *frame, size_t len)
{
	struct tap *t = ctx;
	struct coalesce *c = &t->co;
	long n;

	if (t->uso && (n = udp_mergeable(frame, len)) > 0 && len <= GSO_MAX_FRAME) {
		struct iovec whole = { .iov_base = (void *)frame, .iov_len = len };

		deliver_udp(t, frame, &whole, 1, len, n);
		return;
	}
	if (pure_ack(frame, len)) {
		flush(t);               /* data first: nothing overtakes what was queued before it */
		if (t->ack.len && supersedes(&t->ack, frame))
			t->stats.acks_superseded++;
		else
			flush_ack(t);
		memcpy(t->ack.frame, frame, len);
		t->ack.len = len;
		schedule_flush(t);
		return;
	}
	flush_ack(t);
	n = t->vnet ? mergeable(frame, len) : -1;
	if (n <= 0) {
		flush(t);
		write_frame(t, NULL, frame, len);
		return;
	}
	if (continues(c, frame, n)) {
		memcpy(c->frame + c->len, frame + c->hdr, (size_t)n);
		c->len += (size_t)n;
		c->segs++;
		c->next_seq += (uint32_t)n;
		c->last_short = n < c->gso_size;
		c->frame[ETH_HLEN + 20 + 13] |= frame[ETH_HLEN + 20 + 13] & 0x08; /* PSH of the last */
	} else {
		flush(t);
		c->hdr = ETH_HLEN + 20 + tcp_hlen(frame, len);
		memcpy(c->frame, frame, c->hdr + (size_t)n);
		c->len = c->hdr + (size_t)n;
		c->udp = false;
		c->segs = 1;
		c->gso_size = (uint16_t)n;
		c->next_seq = get32(frame + ETH_HLEN + 20 + 4) + (uint32_t)n;
		c->last_short = false;
	}
	schedule_flush(t);
}

/*
 * A frame with its offloads (an in-process host's TCP super-segment, its
 * checksum partial): written as it is behind the virtio_net_hdr that says
 * so, and the kernel cuts it, as it cuts the segments merged here. Behind
 * whatever was queued before it.
 */
static void offload_hdr(struct tap *t, const struct net_offload *off, struct virtio_net_hdr *vh)
{
	memset(vh, 0, sizeof(*vh));
	flush_ack(t);
	flush(t);
	flush_udp(t);
	if (off->csum_partial) {
		vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		vh->csum_start = off->csum_start;
		vh->csum_offset = off->csum_offset;
	}
	if (off->gso_size) {
		vh->gso_type = off->gso_udp ? VIRTIO_NET_HDR_GSO_UDP_L4 : VIRTIO_NET_HDR_GSO_TCPV4;
		vh->gso_size = off->gso_size;
		vh->hdr_len = off->hdr_len;
		t->stats.gso_super_frames++;
	}
}

static void deliver_offload(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off)
{
	struct tap *t = ctx;
	struct virtio_net_hdr vh;

	offload_hdr(t, off, &vh);
	write_frame(t, &vh, frame, off->gso_size ? off->pkt_len : len);
}

/*
 * The same in pieces: one writev() of the header and the pieces, the payload
 * copied by the kernel alone. A frame without offloads (off NULL: a RoCEv2
 * packet around a payload that lies in guest memory) that may merge is
 * merged as deliver() would, its pieces copied into the merge, the one copy
 * of them in this process.
 */
static void deliver_pieces(void *ctx, const struct iovec *piece, unsigned n, const struct net_offload *off)
{
	struct tap *t = ctx;
	struct virtio_net_hdr vh;
	struct iovec iov[1 + NET_SWITCH_MAX_PIECES];
	static const struct net_offload none;

	if (n == 0 || n > NET_SWITCH_MAX_PIECES) {
		t->stats.tx_dropped++;  /* the switch never passes more */
		return;
	}
	if (off == NULL) {
		size_t len = 0;
		long m;

		for (unsigned i = 0; i < n; i++)
			len += piece[i].iov_len;
		if (t->uso && piece[0].iov_len >= UDP_HDRS && len <= GSO_MAX_FRAME &&
		    (m = udp_mergeable(piece[0].iov_base, len)) > 0) {
			t->stats.udp_pieces++;
			deliver_udp(t, piece[0].iov_base, piece, n, len, m);
			return;
		}
		off = &none;
	}
	offload_hdr(t, off, &vh);
	iov[0].iov_base = &vh;
	iov[0].iov_len = sizeof(vh);
	memcpy(iov + 1, piece, n * sizeof(*piece));
	write_iov(t, iov, (int)n + 1);
}

/* Everything after the descriptor is a TAP: the switch port and the watch. */
static struct tap *attach(struct tap *t, struct net_switch *sw, char *err, size_t errlen)
{
	/* Only a TAP with the virtio_net_hdr can hand offloads to the kernel; else the switch does the work. */
	struct net_port port = { .name = "tap", .deliver = deliver, .ctx = t,
				 .deliver_offload = t->vnet ? deliver_offload : NULL,
				 .deliver_pieces = t->vnet ? deliver_pieces : NULL };

	t->port = net_switch_attach(sw, &port);
	if (t->port < 0) {
		err_set(err, errlen, "tap %s: the segment has no free port", t->name);
		goto out;
	}
	t->watch = evloop_add_fd(t->loop, t->fd, EPOLLIN, on_readable, t);
	if (t->watch == NULL) {
		err_set(err, errlen, "tap %s: cannot watch it", t->name);
		goto out;
	}
	LOG_INFO("tap %s: joined to the segment", t->name);
	if (t->rx_offloads)
		LOG_INFO("tap %s: receive offloads on (checksum, TCPv4%s segmentation up to 64 KiB per read)", t->name,
			 t->uso ? " and UDP" : "");
	return t;
out:
	tap_close(t);
	return NULL;
}

static struct tap *tap_new(const char *name, struct evloop *loop, struct net_switch *sw, char *err, size_t errlen)
{
	struct tap *t = calloc(1, sizeof(*t));

	if (t == NULL) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->loop = loop;
	t->sw = sw;
	t->port = -1;
	t->fd = -1;
	return t;
}

/*
 * The kernel's queue of frames toward us (the TAP's txqueuelen: 500 or 1000 by default) is our
 * link's receive buffer: on a loaded host this server may not run for tens of milliseconds, and
 * a peer sending meanwhile at the rate it last learned would overflow a short queue. Make it at
 * least TAP_QUEUE_LEN frames (CAP_NET_ADMIN; without it, or with a longer queue, left as it is).
 */
static void queue_len(struct tap *t)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return;
	memcpy(ifr.ifr_name, t->name, strlen(t->name));
	if (ioctl(s, SIOCGIFTXQLEN, &ifr) == 0 && ifr.ifr_qlen < TAP_QUEUE_LEN) {
		int was = ifr.ifr_qlen;

		ifr.ifr_qlen = TAP_QUEUE_LEN;
		if (ioctl(s, SIOCSIFTXQLEN, &ifr) == 0)
			LOG_INFO("tap %s: its queue toward us made %d frames long (was %d)", t->name, TAP_QUEUE_LEN, was);
		else
			LOG_INFO("tap %s: its queue toward us stays %d frames long (%s)", t->name, was, strerror(errno));
	}
	close(s);
}

struct tap *tap_open(const char *ifname, struct evloop *loop, struct net_switch *sw, char *err, size_t errlen)
{
	struct tap *t;
	struct ifreq ifr = { 0 };

	if (strlen(ifname) >= IFNAMSIZ) {
		err_set(err, errlen, "tap %s: name too long", ifname);
		return NULL;
	}
	if (if_nametoindex(ifname) == 0) {
		err_set(err, errlen, "tap %s: no such interface (create it first, e.g. ip tuntap add %s mode tap)",
		     ifname, ifname);
		return NULL;
	}
	t = tap_new(ifname, loop, sw, err, errlen);
	if (t == NULL)
		return NULL;
	/*
	 * Before attaching: the ring toward our descriptor is made at attach time with the length
	 * the device has then (resizing it under an attached descriptor lost the first frames on
	 * this kernel, 6.18, and stalled a queue pair for its whole retry budget).
	 */
	queue_len(t);
	t->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd < 0) {
		err_set(err, errlen, "tap %s: /dev/net/tun: %s", ifname, strerror(errno));
		goto out;
	}
	/* With a virtio_net_hdr on each frame, merged TCP segments can go out as one GSO write. */
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	t->vnet = true;
	if (ioctl(t->fd, TUNSETIFF, &ifr) < 0) {
		ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
		t->vnet = false;
		if (ioctl(t->fd, TUNSETIFF, &ifr) < 0) {
			err_set(err, errlen, "tap %s: cannot attach: %s", ifname, strerror(errno));
			goto out;
		}
	}
	/*
	 * Receive offloads: TCPv4 super-frames and partial checksums (TUN_F_TSO4 needs TUN_F_CSUM), and
	 * UDP ones where the kernel has them (Linux 6.2, which grants USO for IPv4 and IPv6 together
	 * only; an older one refuses the whole set). A kernel that grants USO takes UDP segmentation in
	 * what we write too: RoCEv2 datagrams merge.
	 */
	if (t->vnet) {
		if (ioctl(t->fd, TUNSETOFFLOAD, (unsigned long)(TAP_RX_OFFLOADS | TUN_F_USO4 | TUN_F_USO6)) == 0)
			t->rx_offloads = t->uso = true;
		else if (ioctl(t->fd, TUNSETOFFLOAD, (unsigned long)TAP_RX_OFFLOADS) == 0)
			t->rx_offloads = true;
		else
			LOG_WARN("tap %s: no receive offloads (%s); frames come one per read", ifname, strerror(errno));
	}
	return attach(t, sw, err, errlen);
out:
	tap_close(t);
	return NULL;
}

struct tap *tap_attach_fd(int fd, bool vnet, const char *name, struct evloop *loop, struct net_switch *sw,
			  char *err, size_t errlen)
{
	struct tap *t = tap_new(name, loop, sw, err, errlen);

	if (t == NULL) {
		close(fd);
		return NULL;
	}
	t->fd = fd;
	t->vnet = vnet;
	t->uso = vnet; /* a descriptor of tests, which stands for a kernel with every offload */
	return attach(t, sw, err, errlen);
}

void tap_close(struct tap *t)
{
	if (t == NULL)
		return;
	t->flush_pending = false;
	LOG_INFO("tap %s: %llu frames in (%llu of them segmentation-offload super-frames, %llu of those UDP, "
		 "%llu refused), %llu out (%llu of them merged segmentation-offload writes, %llu of RoCEv2 datagrams "
		 "carrying %llu, %llu RoCEv2 datagrams taken in pieces, %llu ACKs folded into later ones, %llu super-segments of the in-process hosts), "
		 "%llu dropped (%llu with %u held already), %llu held until the kernel could take them; "
		 "%llu wakeups read a queue that kept growing",
		 t->name, (unsigned long long)t->stats.rx_frames, (unsigned long long)t->stats.offload.gso_frames,
		 (unsigned long long)t->stats.offload.gso_udp_frames,
		 (unsigned long long)t->stats.rx_dropped, (unsigned long long)t->stats.tx_frames,
		 (unsigned long long)(t->stats.gso_frames + t->stats.gso_udp_frames),
		 (unsigned long long)t->stats.gso_udp_frames, (unsigned long long)t->stats.udp_merged,
		 (unsigned long long)t->stats.udp_pieces, (unsigned long long)t->stats.acks_superseded, (unsigned long long)t->stats.gso_super_frames,
		 (unsigned long long)t->stats.tx_dropped, (unsigned long long)t->stats.tx_held_full, TAP_TX_HOLD,
		 (unsigned long long)t->stats.tx_held, (unsigned long long)t->stats.behind_wakeups);
	/* A persistent device keeps its features: the next reader may not want super-frames. */
	if (t->rx_offloads && t->fd >= 0)
		ioctl(t->fd, TUNSETOFFLOAD, 0ul);
	if (t->watch)
		evloop_del_fd(t->loop, t->watch);
	for (; t->hold_n > 0; t->hold_n--, t->hold_head = (t->hold_head + 1) % TAP_TX_HOLD)
		free(t->hold[t->hold_head].buf);
	if (t->port >= 0)
		net_switch_detach(t->sw, t->port);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

const struct tap_stats *tap_stats(const struct tap *t)
{
	return &t->stats;
}
