/*
 * Internals of the in-band TCP/IP stack (inet.h), shared by its three
 * files: inet.c (PCB table, API, timers), inet_in.c (frames in, ARP,
 * ICMP, the TCP state machine) and inet_out.c (frames out, checksums,
 * segmentation, retransmission, RST). Nothing here is for other modules.
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

/* Slots: every live connection plus as many in TIME_WAIT (the oldest of those is recycled). */
#define INET_TCP_PCBS          (2 * INET_TCP_MAX_CONNS)
#define INET_TCP_ARP_ENTRIES   16
#define INET_TCP_MAX_BACKOFF   4        /* RTO doubles up to 200 ms << 4 = 3.2 s */
#define INET_TCP_FIN_WAIT_2_MS 15000    /* a peer that never closes its half is reset */
/* Keepalive: a peer silent this long while we wait on nothing is probed, and reset if it never answers. */
#define INET_TCP_KEEPALIVE_IDLE_MS  60000
#define INET_TCP_KEEPALIVE_INTVL_MS 10000
#define INET_TCP_KEEPALIVE_PROBES   6

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

struct inet_pcb {
	enum inet_state state;
	void *app;              /* from ops->open(); NULL before ESTABLISHED and in TIME_WAIT */

	/* The peer. */
	uint32_t rip;           /* host byte order */
	uint16_t rport;
	uint8_t rmac[NET_ETH_ALEN];

	/* Send side. Data offset for ops->peek() is snd_nxt - snd_una. */
	uint32_t iss;
	uint32_t snd_una;       /* oldest unacknowledged sequence number */
	uint32_t snd_nxt;       /* next to send; rewound to snd_una on a timeout (go-back-N) */
	uint32_t snd_max;       /* one past the highest ever sent */
	uint32_t snd_wnd;       /* the peer's advertised window */
	uint32_t snd_wl1;       /* seq of the segment that last updated snd_wnd */
	uint32_t snd_wl2;       /* ack of that segment */
	uint32_t cwnd;          /* INET_TCP_WINDOW, cut to one MSS by a timeout and reopened by ACKs */
	uint32_t fin_seq;       /* sequence number of our FIN, valid when fin_sent */
	uint16_t mss;           /* what we send per segment: min(1460, peer's), at least 536 */
	bool fin_sent;

	/* Receive side. */
	uint32_t irs;
	uint32_t rcv_nxt;       /* next expected */
	uint32_t rcv_adv;       /* right edge of the window last advertised (never moves left) */
	bool fin_rcvd;
	bool eof_delivered;
	bool ack_now;           /* an ACK is owed to the peer */
	uint8_t *rxbuf;         /* INET_TCP_WINDOW bytes once needed: what the application did not take */
	size_t rx_off, rx_len;

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
	struct inet_pcb pcbs[INET_TCP_PCBS];
	struct inet_arp_entry arp[INET_TCP_ARP_ENTRIES];
	unsigned arp_next;
	uint8_t frame[INET_TCP_MAX_FRAME];  /* every frame out is built here */
};

/* A validated TCP segment (inet_in.c). */
struct inet_seg {
	uint32_t rip;
	uint16_t rport, lport;
	const uint8_t *rmac;
	uint32_t seq, ack;
	unsigned flags;
	uint16_t wnd;
	int mss;                /* from the MSS option, -1 if absent */
	const uint8_t *data;
	size_t len;
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
/* Window we may advertise now: INET_TCP_WINDOW less what is buffered. */
uint32_t inet_rcv_wnd(const struct inet_pcb *pcb);
/* Offers buffered input to the application, then the EOF once it is all taken. */
void inet_rx_drain(struct inet_host *t, struct inet_pcb *pcb);
/* New in-order bytes (at rcv_nxt): returns how many were accepted (taken or buffered). */
size_t inet_rx_accept(struct inet_host *t, struct inet_pcb *pcb, const uint8_t *data, size_t len);
/* Drains, sends a window update if due, sends what may be sent, and any ACK still owed. */
void inet_pcb_service(struct inet_host *t, struct inet_pcb *pcb);
void inet_arp_learn(struct inet_host *t, uint32_t ip, const uint8_t mac[NET_ETH_ALEN]);

/* ---- inet_in.c ------------------------------------------------------------- */

/* Parses the options between cursor and end; returns false if they are malformed. */
bool inet_parse_options(const uint8_t *opt, size_t len, int *mss);

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
/* New data, and retransmissions after snd_nxt was rewound, then our FIN when due. */
void inet_output(struct inet_host *t, struct inet_pcb *pcb, bool probe);
/* The retransmission (or persist) timer fired. */
void inet_rto_expired(struct inet_host *t, struct inet_pcb *pcb);
/* Sends an RST and releases the connection (the application's close() is called). */
void inet_abort(struct inet_host *t, struct inet_pcb *pcb);

#endif
