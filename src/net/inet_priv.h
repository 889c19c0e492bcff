/*
 * Internals of the in-band TCP/IP stack (inet.h), shared by its four
 * files: inet.c (PCB table, API, timers, the receive buffer), inet_in.c
 * (frames in, ARP, ICMP, IPv6 neighbour discovery, options, the TCP state
 * machine), inet_cc.c
 * (congestion control, RTT, the SACK scoreboard) and inet_out.c (frames
 * out, checksums, options, segmentation, retransmission, RST). Nothing here
 * is for other modules.
 */
#ifndef ERNIC_NET_INET_PRIV_H
#define ERNIC_NET_INET_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/inet.h"
#include "net/inet_wire.h"
#include "util/inet_csum.h"

/* Sequence numbers live modulo 2^32: compare them only through these. */
#define SEQ_DIFF(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)))
#define SEQ_LT(a, b)   (SEQ_DIFF(a, b) < 0)
#define SEQ_LEQ(a, b)  (SEQ_DIFF(a, b) <= 0)
#define SEQ_GT(a, b)   (SEQ_DIFF(a, b) > 0)
#define SEQ_GEQ(a, b)  (SEQ_DIFF(a, b) >= 0)
/* Timestamps wrap the same way (RFC 7323 §5.2 compares them as sequence numbers). */
#define TS_LT(a, b)    SEQ_LT(a, b)

/* Slots: every live connection plus as many in TIME_WAIT (the oldest of those is recycled). */
#define INET_TCP_PCBS          (2 * INET_TCP_MAX_CONNS)
#define INET_TCP_ARP_ENTRIES   16
#define INET_TCP_MAX_BACKOFF   4        /* RTO doubles up to 200 ms << 4 = 3.2 s */
#define INET_TCP_RTO_MAX_MS    60000    /* a measured RTO is never longer */
#define INET_TCP_FIN_WAIT_2_MS 15000    /* a peer that never closes its half is reset */
/* Keepalive: a peer silent this long while we wait on nothing is probed, and reset if it never answers. */
#define INET_TCP_KEEPALIVE_IDLE_MS  60000
#define INET_TCP_KEEPALIVE_INTVL_MS 10000
#define INET_TCP_KEEPALIVE_PROBES   6
/* An empty receive buffer is given back after this long without input. */
#define INET_TCP_RXBUF_IDLE_MS 1000
#define INET_TCP_DUPTHRESH     3        /* duplicate ACKs that mean a loss (RFC 5681 §3.2) */
#define INET_TCP_PTO_MIN_MS    10       /* a tail loss probe waits at least this (RFC 8985 §7.2) */
#define INET_TCP_IW_SEGS       10       /* initial window in segments (RFC 6928) */
/* Ranges of out-of-order data held (receiver) and of the peer's SACKed data (sender): bounded. */
#define INET_TCP_OOO_RANGES    32
#define INET_TCP_SB_RANGES     32
/* Option bytes on our segments: NOP NOP TS, and SACK blocks on pure ACKs. */
#define INET_TCP_TS_SPACE      12

/*
 * Connection states (RFC 793 names). There is no LISTEN PCB: the one
 * listening port is implicit, a SYN to it creates a PCB in SYN_RCVD.
 */
enum inet_state {
	TCPS_CLOSED = 0,    /* slot free (zeroed) */
	TCPS_SYN_RCVD,      /* peer's SYN taken, our SYN-ACK sent, waiting for its ACK; no application yet */
	TCPS_ESTABLISHED,   /* application open, data both ways */
	TCPS_CLOSE_WAIT,    /* peer's FIN received and acknowledged; we may still send */
	TCPS_LAST_ACK,      /* after CLOSE_WAIT, our FIN sent; its ACK ends the connection */
	TCPS_FIN_WAIT_1,    /* our FIN sent and not acknowledged; peer may still send */
	TCPS_FIN_WAIT_2,    /* our FIN acknowledged; waiting (bounded) for the peer's FIN */
	TCPS_CLOSING,       /* both FINs crossed, ours not yet acknowledged */
	TCPS_TIME_WAIT,     /* both directions closed, application released; the 4-tuple is held */
	TCPS_NUM_STATES
};

/* A range of sequence numbers [start, end). */
struct inet_range {
	uint32_t start, end;
	uint32_t stamp;         /* receiver: when data last arrived into it (the freshest is reported first) */
};

struct inet_pcb {
	enum inet_state state;
	void *app;              /* from ops->open(); NULL before ESTABLISHED and in TIME_WAIT */

	/* The peer. */
	uint32_t rip;           /* host byte order */
	uint16_t rport;
	uint8_t rmac[NET_ETH_ALEN];

	/* Options, as agreed in the SYN exchange: each only when the peer's SYN offered it. */
	bool ws_ok;             /* window scaling: snd_shift, rcv_shift apply to every later window field */
	bool sack_ok;           /* SACK: we hold out-of-order data and report it; the peer reports its own */
	bool ts_ok;             /* timestamps on every segment: RTT and PAWS */
	uint8_t snd_shift;      /* the peer's window fields are shifted left by this */
	uint8_t rcv_shift;      /* ours are shifted right by this */
	uint32_t ts_offset;     /* our TSval is the clock in ms plus this (random per connection) */
	uint32_t ts_recent;     /* the peer's TSval to echo (RFC 7323 §4.3) */
	uint32_t last_ack_sent; /* rcv_nxt as of our last ACK */

	/* Send side. Data offset for ops->peek() is seq - snd_una. */
	uint32_t iss;
	uint32_t snd_una;       /* oldest unacknowledged sequence number */
	uint32_t snd_nxt;       /* next to send; rewound to snd_una on a timeout (SACKed ranges are then skipped) */
	uint32_t snd_max;       /* one past the highest ever sent */
	uint32_t snd_wnd;       /* the peer's advertised window, in bytes (scaled) */
	uint32_t snd_wl1;       /* seq of the segment that last updated snd_wnd */
	uint32_t snd_wl2;       /* ack of that segment */
	uint32_t fin_seq;       /* sequence number of our FIN, valid when fin_sent */
	uint16_t mss;           /* what we send per segment: min(1460, peer's), at least 536, options included */
	bool fin_sent;

	/*
	 * Congestion control (RFC 5681, NewReno RFC 6582, SACK loss recovery after
	 * RFC 6675), only for a peer whose SYN offered a TCP option besides MSS.
	 * For one that offered none, cc_off: the specification's stack, the whole
	 * window in flight (cwnd stays CWND_MAX), no fast retransmit, and a timeout
	 * sends everything again from snd_una.
	 */
	bool cc_off;
	uint32_t cwnd;
	uint32_t ssthresh;
	uint32_t bytes_acked;   /* congestion avoidance: bytes acknowledged since cwnd last grew */
	unsigned dupacks;
	bool in_recovery;       /* fast recovery, or the slow start after a timeout */
	bool cwnd_limited;      /* the last output stopped at cwnd: the ACKs until the next output earn growth */
	uint32_t recover;       /* snd_max when recovery began: an ACK past it ends recovery */
	uint32_t rtx_nxt;       /* first byte not yet retransmitted in this recovery */
	uint32_t rtx_end;       /* without SACK: the end of the one segment to retransmit */
	bool rtx_force;         /* retransmit once even if the pipe is full (entering recovery) */
	/*
	 * Tail loss probe (RFC 8985 §7, with SACK and timestamps): when ACKs stop
	 * before the RTO, one segment is sent to draw a SACK that shows the loss.
	 */
	bool tlp_on;
	uint64_t tlp_at;
	bool tlp_out;           /* a probe is out: SACK news then means loss at once */
	/* The peer's SACK blocks, merged, sorted, all within (snd_una, snd_max]. */
	struct inet_range sb[INET_TCP_SB_RANGES];
	unsigned sb_n;
	uint32_t sacked;        /* bytes they cover */

	/* RTT from timestamps (RFC 6298, in ms): without them the RTO is INET_TCP_RTO_MS. */
	bool rtt_valid;
	uint32_t srtt8;         /* smoothed RTT x 8 */
	uint32_t rttvar4;       /* RTT variation x 4 */
	uint32_t rto_ms;

	/* Receive side. */
	uint32_t irs;
	uint32_t rcv_nxt;       /* next expected */
	uint32_t rcv_adv;       /* right edge of the window last advertised (never moves left) */
	uint32_t rcv_cap;       /* the receive buffer's size, and the largest window: 64 KiB unless scaled */
	bool fin_rcvd;
	bool eof_delivered;
	bool ack_now;           /* an ACK is owed to the peer */
	bool ack_later;         /* one is owed for in-order data: it may wait for the end of the batch (ops.defer_acks) */
	bool out_later;         /* its output waits for the end of the batch (inet_flush_acks) */
	/*
	 * The receive buffer, rcv_cap bytes once needed: a ring indexed by stream
	 * offset. It holds the in-order bytes the application did not take
	 * (rx_len of them, ending at rcv_nxt, the oldest at stream offset rx_rd)
	 * and, with SACK, out-of-order data at its place after rcv_nxt.
	 */
	uint8_t *rxbuf;
	uint64_t rx_rd;
	size_t rx_len;
	struct inet_range ooo[INET_TCP_OOO_RANGES];  /* out-of-order data held, sorted, disjoint, above rcv_nxt */
	unsigned ooo_n;
	uint32_t ooo_stamp;
	bool ooo_fin;           /* a FIN came after a hole, at ooo_fin_seq */
	uint32_t ooo_fin_seq;

	/* Timers. */
	bool rto_on;
	uint64_t rto_at;        /* retransmission / persist deadline */
	unsigned retries;       /* consecutive timeouts without progress */
	unsigned backoff;       /* RTO shift */
	uint64_t tw_at;         /* end of TIME_WAIT, or of the FIN_WAIT_2 wait */
	uint64_t last_rx;       /* when the peer was last heard from */
	unsigned ka_probes;     /* keepalive probes sent since */
};

struct inet_arp_entry {
	bool valid;
	uint32_t ip;
	uint8_t mac[NET_ETH_ALEN];
};

struct inet_host {
	struct inet_config cfg;
	struct inet_ops ops;
	struct inet_stats stats;
	uint64_t now;           /* the clock as of the current input() or poll() */
	uint16_t ip_id;
	uint32_t iss_ctr;
	uint8_t rcv_shift;      /* the window scale we offer: the least that carries cfg.window */
	struct inet_pcb pcbs[INET_TCP_PCBS];
	struct inet_arp_entry arp[INET_TCP_ARP_ENTRIES];
	unsigned arp_next;
	uint8_t ll6[NET_IP6_ALEN];          /* the IPv6 link-local address, from cfg.mac (net_nd.h) */
	uint8_t nd_mac[NET_ETH_ALEN];       /* its solicited-node Ethernet group */
	uint8_t frame[INET_TCP_MAX_FRAME];  /* every frame out is built here (a super-segment's headers too) */
	/* A super-segment's pieces: [0] the headers in frame, then the payload by reference; super_n of them. */
	struct iovec super[1 + INET_TCP_SUPER_PIECES];
	unsigned super_n;
	bool acks_deferred;     /* ops.defer_acks() granted: inet_flush_acks() will be called */
};

/* A validated TCP segment (inet_in.c). */
struct inet_seg {
	uint32_t rip;
	uint16_t rport, lport;
	const uint8_t *rmac;
	uint32_t seq, ack;
	unsigned flags;
	uint16_t wnd;           /* as on the wire: unscaled */
	const uint8_t *data;
	size_t len;
	struct inet_opts {
		int mss;        /* MSS option, -1 if absent */
		int ws;         /* window scale shift, -1 if absent */
		bool sack_perm;
		bool ts;
		uint32_t tsval, tsecr;
		unsigned nsack; /* SACK blocks, at most 4 (what 40 option bytes hold) */
		uint32_t sack[4][2];
	} opt;
};

/* ---- inet.c ---------------------------------------------------------------- */

struct inet_pcb *inet_pcb_find(struct inet_host *t, uint32_t rip, uint16_t rport);
/* A free slot, or the oldest TIME_WAIT one; NULL if every slot is live. */
struct inet_pcb *inet_pcb_alloc(struct inet_host *t);
/* Frees the slot, then calls ops->close() if the application was open. */
void inet_pcb_release(struct inet_host *t, struct inet_pcb *pcb);
/* Both directions closed: releases the application, holds the 4-tuple for TIME_WAIT. */
void inet_enter_time_wait(struct inet_host *t, struct inet_pcb *pcb);
unsigned inet_count_live(const struct inet_host *t);
uint32_t inet_new_iss(struct inet_host *t);
void inet_timer_restart(struct inet_host *t, struct inet_pcb *pcb);
void inet_timer_stop(struct inet_pcb *pcb);
/* Window we may advertise now: rcv_cap less what is buffered in order. */
uint32_t inet_rcv_wnd(const struct inet_pcb *pcb);
/* Offers buffered input to the application, then the EOF once it is all taken. */
void inet_rx_drain(struct inet_host *t, struct inet_pcb *pcb);
/* New in-order bytes (at rcv_nxt): returns how many were accepted (taken or buffered). */
size_t inet_rx_accept(struct inet_host *t, struct inet_pcb *pcb, const uint8_t *data, size_t len);
/*
 * Out-of-order bytes at seq (after rcv_nxt, within the window): kept in the
 * receive buffer and recorded as a range. Returns false when they could not
 * be kept (no memory, or every range in use).
 */
bool inet_rx_hold(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, const uint8_t *data, size_t len);
/* Drains, sends a window update if due, sends what may be sent, and any ACK still owed. */
void inet_pcb_service(struct inet_host *t, struct inet_pcb *pcb);
void inet_arp_learn(struct inet_host *t, uint32_t ip, const uint8_t mac[NET_ETH_ALEN]);
/* Our TSval now. */
uint32_t inet_ts_now(const struct inet_host *t, const struct inet_pcb *pcb);

/* ---- inet_in.c ------------------------------------------------------------- */

/* Parses the options of len bytes; returns false if they are malformed. */
bool inet_parse_options(const uint8_t *opt, size_t len, struct inet_opts *o);

/* ---- inet_cc.c: congestion control, RTT and the SACK scoreboard ---------------- */

/* A new connection's send state: initial window, ssthresh, RTO. */
void inet_cc_init(struct inet_pcb *pcb);
/* Payload bytes per segment: the MSS less our option bytes. */
uint32_t inet_cc_smss(const struct inet_pcb *pcb);
/* Bytes sent and neither acknowledged nor SACKed, the lost ones not yet sent again excluded. */
uint32_t inet_cc_pipe(const struct inet_pcb *pcb);
/* The peer's SACK blocks of one ACK (before snd_una moves). */
void inet_sb_update(struct inet_host *t, struct inet_pcb *pcb, const struct inet_opts *o);
/* Drops scoreboard ranges below snd_una. */
void inet_sb_trim(struct inet_pcb *pcb);
/* The SACKed range holding seq or, if none does, the first one after it: its start and end, or false. */
bool inet_sb_next(const struct inet_pcb *pcb, uint32_t seq, uint32_t *start, uint32_t *end);
/* An RTT sample from the echoed timestamp of an ACK that acknowledged new data. */
void inet_cc_rtt(struct inet_host *t, struct inet_pcb *pcb, uint32_t tsecr);
/* acked new bytes were acknowledged (snd_una already moved). */
void inet_cc_ack(struct inet_host *t, struct inet_pcb *pcb, uint32_t acked);
/* A duplicate ACK (RFC 5681 §2), or an ACK that brought new SACK information. */
void inet_cc_dupack(struct inet_host *t, struct inet_pcb *pcb);
/* The retransmission timer fired with data outstanding. */
void inet_cc_timeout(struct inet_pcb *pcb);
/* Arms the tail loss probe if it applies (data out, no recovery, RTT known) and is not armed. */
void inet_cc_tlp_arm(struct inet_host *t, struct inet_pcb *pcb);
/* In recovery: the next range to retransmit (at most max bytes); false when none is due. */
bool inet_cc_next_rtx(const struct inet_pcb *pcb, uint32_t max, uint32_t *seq, uint32_t *len);

/* ---- inet_out.c ------------------------------------------------------------ */

/* The TCP pseudo-header's contribution to a checksum (util/inet_csum.h does the rest). */
uint64_t inet_csum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len);

/*
 * The transport payload of l4len bytes is at t->frame + NET_ETH_IP_HLEN: adds the
 * IPv4 and Ethernet headers, pads to the Ethernet minimum and sends.
 */
void inet_ip_output(struct inet_host *t, const uint8_t dmac[NET_ETH_ALEN], uint32_t dip,
		      uint8_t proto, size_t l4len, bool df);
/* A reply to a segment that belongs to no connection (RFC 793 §3.4); never to an RST. */
void inet_send_rst_reply(struct inet_host *t, const struct inet_seg *s);
/* An RST for a connection of ours, at snd_max. */
void inet_send_rst(struct inet_host *t, struct inet_pcb *pcb);
void inet_send_ack(struct inet_host *t, struct inet_pcb *pcb);
void inet_send_synack(struct inet_host *t, struct inet_pcb *pcb);
/* An ACK one byte behind snd_una: the peer must answer it (or reset). */
void inet_send_keepalive(struct inet_host *t, struct inet_pcb *pcb);
/* Retransmissions due in recovery, new data, retransmissions after a timeout, then our FIN when due. */
void inet_output(struct inet_host *t, struct inet_pcb *pcb, bool probe);
/* The tail loss probe's time came: one segment, new or the last one again. */
void inet_tlp_expired(struct inet_host *t, struct inet_pcb *pcb);
/* The retransmission (or persist) timer fired. */
void inet_rto_expired(struct inet_host *t, struct inet_pcb *pcb);
/* Sends an RST and releases the connection (the application's close() is called). */
void inet_abort(struct inet_host *t, struct inet_pcb *pcb);

#endif
