/*
 * The in-band TCP/IP stack of the in-process hosts on the emulated Ethernet
 * segment (the S3 endpoint, the NVMe-oF controller's address): one host with
 * one IPv4 address and MAC, listening on at most one TCP port (port 0: none,
 * every SYN is answered with RST, and the application callbacks may be NULL).
 * Frames in and frames out through callbacks; it knows nothing of vfio-user,
 * queues or TAP devices, and takes the time as an argument (tests drive it
 * with a fake clock).
 *
 * What it does: answers ARP requests for its address (and learns the
 * senders), ICMP echo, IPv6 neighbor solicitations for its link-local
 * address (fe80:: and the modified EUI-64 of its MAC, see net/net_nd.h) and
 * ICMPv6 echo to that address (other IPv6 is dropped: there is no IPv6
 * transport), and TCP as a server: three-way handshake, in-order
 * data with cumulative ACKs, segmentation at min(1460, peer MSS) (MSS option
 * honoured down to 536), a receive window advertised truthfully (a slow
 * application closes it; a window update follows when it reopens),
 * congestion control (slow start from ten segments, congestion avoidance,
 * fast retransmit and NewReno fast recovery after three duplicate ACKs),
 * one retransmission timer per connection (200 ms, doubling while nothing
 * progresses), orderly FIN in both directions, RST for segments of unknown
 * connections or to closed ports, TIME_WAIT that a new SYN from the same
 * peer may reuse at once, and at most INET_TCP_MAX_CONNS connections
 * (another SYN gets RST).
 *
 * TCP options are used only when the peer's SYN offers them, each on its
 * own (RFC 7323, RFC 2018):
 * - window scaling: the peer's windows are scaled, so as much is in flight
 *   as it and the congestion window allow; ours is cfg.window (the scale is
 *   the least that carries it). Without it the window is 64 KiB.
 * - timestamps on every segment: the RTO follows the measured RTT (never
 *   below 200 ms), and old duplicates are refused (PAWS).
 * - SACK: out-of-order data is held in the receive buffer and reported in
 *   SACK blocks on our ACKs; the peer's blocks keep a scoreboard, and loss
 *   recovery (and the go-back after a timeout) sends only what it lacks.
 * A peer that offers none gets exactly the stack without them: a 64 KiB
 * window, out-of-order segments dropped with an ACK of what is expected,
 * a fixed 200 ms RTO.
 *
 * Memory per connection is bounded: the PCB, and a receive buffer of the
 * connection's window (64 KiB, or cfg.window when scaled) allocated only
 * while the application leaves bytes in it or out-of-order data is held.
 * Output is never copied into the stack (see below).
 *
 * Everything on the wire is hostile: IPv4 and TCP checksums are verified,
 * fragments, IP options and malformed headers or options are dropped
 * (counted), and nothing is buffered beyond the receive window.
 *
 * A segment may carry more than the MSS we advertise: from the host TAP, the
 * kernel's segmentation offload hands over up to 64 KiB of a peer's in-order
 * segments as one (see net/net_offload.h), and the stack takes it whole, as
 * a GRO receiver would, with one ACK. What the peer sees is unchanged: MSS
 * 1460 in the SYN-ACK, and nothing past the window is taken.
 *
 * Going out, with ops->send_super, new data the windows allow goes as
 * super-segments of up to 64 KiB (segmentation offload): the headers are
 * built and the checksum's pseudo-header summed once per super-segment, the
 * payload is handed over where the application keeps it, and whoever takes
 * it (the switch, for a port without offloads; the host kernel behind a TAP)
 * cuts it into the very segments the stack would have sent one by one. Retransmissions and probes still go one segment at a time.
 *
 * The application (for the S3 endpoint, an S3 connection) is reached through
 * struct inet_ops.
 * Its output is never copied into the stack: the stack peeks at the
 * application's queued bytes by offset from the oldest unacknowledged byte,
 * and tells it how many were acknowledged.
 */
#ifndef ERNIC_NET_INET_H
#define ERNIC_NET_INET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define INET_TCP_MAX_CONNS   8
#define INET_TCP_MSS         1460
#define INET_TCP_MIN_MSS     536
#define INET_TCP_WINDOW      65535   /* the window without scaling */
#define INET_TCP_WINDOW_MAX  (64u << 20)   /* the largest cfg.window */
#define INET_TCP_WINDOW_DEFAULT (4u << 20)
#define INET_TCP_RTO_MS      200
#define INET_TCP_MAX_RETRIES 12      /* then the connection is reset */
#define INET_TCP_TIME_WAIT_MS 2000   /* short: the segment is one host away */
#define INET_TCP_MAX_FRAME   1514
#define INET_TCP_SUPER_PIECES 32   /* payload pieces of one super-segment, at most (send_super) */

struct inet_config {
	uint32_t ip;        /* host byte order */
	uint8_t mac[6];
	uint16_t port;
	/*
	 * The receive window offered to peers that scale: INET_TCP_WINDOW to
	 * INET_TCP_WINDOW_MAX bytes (0: INET_TCP_WINDOW_DEFAULT; values outside
	 * are clamped). It is also the most a connection buffers.
	 */
	uint32_t window;
};

struct inet_ops {
	void *ctx;
	/* A frame to put on the segment (Ethernet header included, no FCS). */
	void (*send_frame)(void *ctx, const uint8_t *frame, size_t len);
	/*
	 * Optional: a super-segment, several full-sized segments of new data
	 * sent as one frame, as a host with TCP segmentation offload hands them
	 * to its NIC: IPv4 and TCP headers for the whole packet (IPv4 header
	 * checksum valid; total length up to 65535), the TCP checksum field
	 * holding only the pseudo-header sum over the whole TCP length (to be
	 * completed over [ETH + IPv4 header, end)), and the payload to be cut
	 * every gso_size bytes (the last piece may be shorter) into segments
	 * numbered as the kernel's segmentation numbers them: IPv4
	 * identifications one apart (the stack skips those it leaves to the
	 * cut), sequence numbers following on, PSH on the last segment only.
	 * The frame comes in n pieces: piece[0] the headers (Ethernet through
	 * the TCP options), the others the payload, by reference to the
	 * application's bytes (peek): valid only during the call, never copied
	 * by the stack. NULL: every segment goes through send_frame, at most
	 * INET_TCP_MAX_FRAME.
	 */
	void (*send_super)(void *ctx, const struct iovec *piece, unsigned n, uint16_t gso_size);

	/* A connection was established: return its application state, or NULL to refuse (RST). */
	void *(*open)(void *ctx);
	/* In-order received bytes; returns how many the application took (the rest stays in the window). */
	size_t (*input)(void *app, const uint8_t *data, size_t len);
	/* The peer sent FIN. */
	void (*input_eof)(void *app);
	/* Bytes to send, starting off bytes after the oldest unacknowledged one; 0 when none. */
	size_t (*peek)(void *app, uint64_t off, const uint8_t **data);
	/* n bytes from the front were acknowledged and may be released. */
	void (*acked)(void *app, size_t n);
	/* The application is done once its output is acknowledged: the stack then sends FIN. */
	bool (*wants_close)(void *app);
	/* The connection is gone (closed, reset or timed out): free the application state. */
	void (*close)(void *app);
	/*
	 * Optional: the ACK of in-order data, and the output a segment lets go,
	 * may wait. Return true to promise a call of inet_flush_acks() once the
	 * current batch of events is handled (before the owner sleeps): a
	 * response made before then carries the ACK and no pure ACK goes, and
	 * the window that the batch's ACKs opened is sent in one run. False, or
	 * NULL: every ACK and segment goes at once.
	 */
	bool (*defer_acks)(void *ctx);
};

struct inet_stats {
	uint64_t frames_in, frames_out;
	uint64_t arp_replies, icmp_echo_replies;
	uint64_t nd_answered;           /* IPv6 neighbor solicitations for the link-local address answered */
	uint64_t icmp6_echo_replies;    /* ICMPv6 echo requests to it answered */
	uint64_t conns_accepted, conns_refused, resets_sent;
	uint64_t retransmits;
	uint64_t bytes_in, bytes_out;
	uint64_t drop_bad_eth, drop_bad_ip, drop_bad_csum, drop_fragment, drop_ip_options;
	uint64_t drop_not_mine, drop_bad_tcp, drop_out_of_order;
	uint64_t segs_over_mss;     /* segments in with more payload than INET_TCP_MSS (offloaded super-frames) */
	uint64_t csum_trusted;      /* TCP checksums not verified because the sender vouched (INET_TCP_RX_CSUM_OK) */
	uint64_t drop_paws;         /* segments refused for an old timestamp (RFC 7323 §5) */
	uint64_t ooo_held;          /* out-of-order segments kept (SACK connections) */
	uint64_t fast_retransmits;  /* recoveries entered on duplicate ACKs or SACK blocks */
	uint64_t timeouts;          /* retransmission timer expiries with data outstanding */
	uint64_t tlp_probes;        /* tail loss probes sent */
	uint64_t sack_blocks_in;    /* valid SACK blocks received */
	uint64_t sack_blocks_out;   /* SACK blocks sent */
	uint64_t opts_ws, opts_sack, opts_ts;  /* connections that agreed on each option */
	uint64_t super_out, super_segs;        /* super-segments through send_super, and the segments they hold */
	uint64_t acks_deferred_alone;          /* deferred ACKs that went alone: no answer came in the batch to carry them */
};

struct inet_host;

struct inet_host *inet_new(const struct inet_config *cfg, const struct inet_ops *ops);
/* Closes every connection (the application's close() is called), sends nothing. */
void inet_free(struct inet_host *t);

/*
 * A frame from the segment (the caller has already decided it may be for us;
 * anything else is dropped and counted). now_ms: a monotonic clock.
 */
void inet_input(struct inet_host *t, const uint8_t *frame, size_t len, uint64_t now_ms);

/*
 * The TCP checksum of this frame is not to be verified: the host kernel,
 * which handed it over through a TAP, verified it (DATA_VALID) or left it
 * partial because the bytes never left its memory (NEEDS_CSUM at the TCP
 * checksum). Nothing else is trusted: the IPv4 header is still checked.
 */
#define INET_TCP_RX_CSUM_OK 0x1u

/* inet_input() with INET_TCP_RX_* flags. */
void inet_input_flags(struct inet_host *t, const uint8_t *frame, size_t len, unsigned flags, uint64_t now_ms);

/*
 * Timers (retransmission, TIME_WAIT) and any output that became possible:
 * call every few tens of milliseconds, and after the application may have
 * new output or freed input space outside of inet_input().
 */
void inet_poll(struct inet_host *t, uint64_t now_ms);
/* The output deferred by ops.defer_acks goes now, then the ACKs that no segment has carried since. */
void inet_flush_acks(struct inet_host *t);

/*
 * Whether a frame is addressed to this host: unicast to its MAC, an ARP
 * request for its address, or a neighbor solicitation for its link-local
 * address sent to that address's solicited-node group.
 */
bool inet_wants_frame(const struct inet_host *t, const uint8_t *frame, size_t len);

/* Connections not yet fully closed (TIME_WAIT excluded). */
unsigned inet_active_conns(const struct inet_host *t);

const struct inet_stats *inet_stats(const struct inet_host *t);

#endif
