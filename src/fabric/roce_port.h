/*
 * A RoCEv2 node on the emulated segment: one IPv4 address and MAC (its GID
 * is the IPv4-mapped ::ffff:a.b.c.d), attached to the segment's switch
 * (net/net_switch.h) as an endpoint, holding RC queue pairs made of the
 * responder of roce_rc.h and the requester of roce_rc_req.h.
 *
 * What it does (docs/roce.md, "Attachment to the segment"):
 *  - ARP: answers requests for its address; learns neighbours (IPv4 -> MAC)
 *    from requests and replies that name it as the target, and from replies
 *    to its own requests, in a table of ROCE_PORT_NEIGH entries (the
 *    oldest-filled entry is reused when it is full).
 *  - Receive: its switch filter takes ARP requests for its address and, sent
 *    to its MAC, ARP and IPv4/UDP to port 4791. deliver() only copies the
 *    frame into a ring of ROCE_PORT_RXQ slots; roce_port_pump() handles
 *    them. So nothing the node sends re-enters it, and two nodes answering
 *    each other never recurse through the switch.
 *  - Demultiplexing: by BTH DestQP; the frame is checked with roce_parse()
 *    at that QP's path MTU, must come from the QP's remote address and go to
 *    the node's, and is then given to the QP's requester (responses: ACK,
 *    READ RESPONSE, ATOMIC ACKNOWLEDGE) or responder (requests). Every frame
 *    not handed on is counted under one cause of enum roce_port_drop.
 *  - Send: the destination MAC is the neighbour's. An unresolved neighbour
 *    gets an ARP request (at most one per ROCE_PORT_ARP_RETRY_US) and the
 *    frame is dropped (ROCE_PORT_DROP_TX_UNRESOLVED): the requester's ACK
 *    timeout sends it again, and a responder's answer is asked for again by
 *    the requester's retry. Creating a QP starts resolving its neighbour.
 *  - UDP source port: a hash of (local QPN, remote QPN) folded into
 *    49152..65535, the same for both directions of the QP's traffic it sends.
 *
 * QPs: each is allocated when it is created and freed when it is
 * destroyed (its requester's WQE ring makes it large). A received frame
 * finds its QP by DestQP in an open-addressing hash of ROCE_PORT_QP_HASH
 * slots, never more than half full, so the lookup costs a probe or two
 * however many QPs there are; the pump, the timers and the deadline walk a
 * dense list of the QPs that exist.
 *
 * The owner calls in; there is no thread, socket, timer or event loop
 * inside, and nothing is allocated but QPs. The owner calls
 * roce_port_pump() while it returns nonzero (received frames, then packets
 * the requesters let out) and roce_port_tick() once roce_port_next_deadline()
 * has passed. Loopback (a QP whose remote address is the node's own) is not
 * supported: the switch never sends a frame back out of the port it came in.
 */
#ifndef ERNIC_FABRIC_ROCE_PORT_H
#define ERNIC_FABRIC_ROCE_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/roce_rc.h"
#include "fabric/roce_rate.h"
#include "fabric/roce_echo.h"
#include "fabric/roce_reader.h"
#include "fabric/roce_rc_req.h"
#include "fabric/roce_wire.h"

struct net_switch;

/*
 * RC QPs per node: as many as the ionic device model has QP ids
 * (IONIC_DEV_RDMA_NQP, what its LIF identity advertises; id 0 is never a
 * QP), so that a device never runs out of wire QPs before it runs out of
 * QPs. roce_glue.c checks the two agree.
 */
#define ROCE_PORT_MAX_QPS 1024
#define ROCE_PORT_QP_HASH (2 * ROCE_PORT_MAX_QPS) /* DestQP hash slots: a power of two, at least twice the QPs */
/* Distinct local MACs a guest node's QPs may send with besides its own (its receive filter checks each). */
#define ROCE_PORT_LOCAL_MACS 16
#define ROCE_PORT_NEIGH 16              /* neighbour table entries */
#define ROCE_PORT_PEERS_KEPT 16         /* peers remembered: the late rate and READ pace their flows learned */
#define ROCE_PORT_RXQ 256               /* received frames held until roce_port_pump(): two reads of a TAP's
					 * wakeup (64 frames, and a UDP super-frame of up to 64 more) */
#define ROCE_PORT_BACKLOG 128             /* a frame that finds this many waiting: the node is behind
					 * (more than a TAP's wakeup brings; see net_switch_behind()) */
#define ROCE_PORT_CNP_GAP_US 50         /* at most one CNP per QP this often */
#define ROCE_PORT_CNP_PER_PUMP 4        /* and at most this many per roce_port_pump() call */
#define ROCE_PORT_ARP_RETRY_US 1000     /* at most one ARP request per unresolved neighbour this often */

/* The largest frame a node sends or takes: the requester's largest is also above the responder's. */
#define ROCE_PORT_FRAME_MAX (ROCE_RC_REQ_FRAME_MAX > ROCE_RC_FRAME_MAX ? ROCE_RC_REQ_FRAME_MAX : ROCE_RC_FRAME_MAX)

/* Why a frame was not handed on (one table: roce_port_drop_name()); counted in stats.drops[]. */
enum roce_port_drop {
	ROCE_PORT_DROP_RX_FULL = 0,     /* the receive ring was full */
	ROCE_PORT_DROP_RX_LONG,         /* longer than ROCE_PORT_FRAME_MAX */
	ROCE_PORT_DROP_ARP_BAD,         /* ARP that net_arp_parse() refused */
	ROCE_PORT_DROP_PARSE,           /* roce_parse() refused it (cause in stats.parse_err[]) */
	ROCE_PORT_DROP_UNKNOWN_QP,      /* a valid packet for a DestQP the node does not have */
	ROCE_PORT_DROP_IP_DST,          /* IPv4 destination is not the node's address */
	ROCE_PORT_DROP_IP_SRC,          /* IPv4 source is not the QP's remote address */
	ROCE_PORT_DROP_UD,              /* a UD opcode, and no UD handler is set */
	ROCE_PORT_DROP_UD_REFUSED,      /* a UD datagram the handler refused (no such QP, Q_Key, no receive) */
	ROCE_PORT_DROP_TX_UNRESOLVED,   /* sending: the neighbour's MAC is not known yet (ARP sent) */
	ROCE_PORT_DROP_TX_HOOK,         /* sending: the test hook dropped it */
	ROCE_PORT_DROP_VLAN,            /* its 802.1Q tag (or the lack of one) is not its QP's VLAN */
	ROCE_PORT_DROP_ECHO_BAD,        /* an answer to a probe of ours, malformed (length, fragment, checksum) */
	ROCE_PORT_DROP_NUM,
};

struct roce_port_stats {
	uint64_t frames_in;             /* taken from the switch */
	uint64_t super_in;              /* UDP super-frames taken whole and cut here (their datagrams are in frames_in) */
	uint64_t rx_in_place;           /* of their datagrams, handled where they lay (cfg.clock_us), not queued */
	uint64_t frames_out;            /* given to the switch (ARP included) */
	uint64_t frames_in_pieces;      /* of them: taken in pieces, their payload where it lay in guest memory */
	uint64_t vlan_in, vlan_out;     /* of them, with an 802.1Q tag */
	uint64_t to_requester, to_responder;
	uint64_t arp_requests, arp_replies;     /* sent */
	uint64_t ud_in, ud_out;                 /* UD datagrams handed to the handler (refused ones too), sent */
	uint64_t neigh_learned;         /* entries made or changed */
	/* congestion control (roce_rate.h) */
	uint64_t cnp_sent, cnp_received;        /* CNPs: the node behind on a peer's frames (or them marked CE) / a peer behind on ours */
	uint64_t ce_received;           /* frames that came with ECN's Congestion Experienced (a switch on the way was congested) */
	uint64_t rate_cuts;             /* a QP's rate halved (CNP, sequence or implied NAK, timeout), or quartered (late) */
	uint64_t late_cuts;             /* of which late: a READ asked for again after its responses went */
	uint64_t late_starts;           /* QPs that started at the rate an earlier flow to their peer learned late */
	uint64_t paced;                 /* a QP with frames to send found its rate out of tokens */
	uint64_t reader_held;           /* a QP's READ responses waited for room in the model of the reader's queue (roce_reader.h) */
	uint64_t reader_starts;         /* QPs whose reader model started at the rate an earlier flow to their peer measured */
	/* the probes of a reader's queue (roce_echo.h) */
	uint64_t echo_probes;           /* ICMP echo requests sent (echo_resent of them again for the same frames) */
	uint64_t echo_resent;
	uint64_t echo_answers;          /* answers to an outstanding probe */
	uint64_t echo_strays;           /* answers of ours that matched no outstanding probe (late, or from no peer kept) */
	uint64_t echo_held;             /* a QP's READ responses waited for room in a peer's window */
	uint64_t echo_mutes;            /* peers found not answering (the pace model served them) */
	uint64_t echo_off;              /* peers that sent a CNP, not probed from then on */
	uint64_t echo_restarts;         /* a READ asked for again toward a peer that answers: its window started over */
	uint64_t drops[ROCE_PORT_DROP_NUM];
	uint64_t parse_err[ROCE_ERR_NUM];
};

struct roce_port_cfg {
	const char *name;               /* for the switch port */
	uint32_t ip;                    /* host order; may be 0 for a guest node */
	uint8_t mac[NET_ETH_ALEN];      /* unicast */
	/*
	 * A guest node: the node stands for the guest's own RoCE function and
	 * speaks with the guest's MAC and IPv4 address. It answers no ARP and
	 * sends none (the guest's kernel owns the address, and each QP names its
	 * remote MAC, as the driver's header template gives it), its filter
	 * takes only IPv4/UDP to 4791 sent to its MAC or a QP's local MAC (so
	 * such frames never reach the guest's Ethernet queue, as on a RoCE NIC),
	 * and the frames it sends do not move the guest's MAC in the switch's
	 * table (net_port.no_learn). Each QP names its local address
	 * (roce_port_qp_cfg.local_ip); ip may be 0.
	 */
	bool guest;
	/*
	 * The owner's clock (us, as the times it passes in), or NULL. With a
	 * clock the node handles the datagrams of a UDP super-frame as the
	 * switch hands them over, where they lie, instead of copying them into
	 * its ring for the next pump: they arrive between pumps, and their
	 * timers need the time then.
	 */
	uint64_t (*clock_us)(void);
};

/*
 * One RC QP. The owner's callbacks are passed through to the responder and
 * the requester with the owner's ctx; their send_frame members are ignored
 * (may be NULL): the node sends.
 */
struct roce_port_qp_cfg {
	uint32_t remote_ip;             /* host order: the remote node's address */
	uint32_t remote_qpn;
	uint32_t sq_psn;                /* first PSN the requester sends */
	uint32_t rq_psn;                /* first PSN the responder expects */
	uint16_t pkey;
	uint32_t pmtu;                  /* 256, 512, 1024, 2048 or 4096 */
	uint8_t timeout;                /* local ACK timeout code (0: none) */
	uint8_t retry_cnt, rnr_retry;   /* 0..7 (rnr_retry 7: forever) */
	uint8_t max_rd_atomic;          /* 1 .. ROCE_RC_REQ_MAX_RD_ATOMIC */
	uint8_t min_rnr_timer;          /* the responder's RNR NAK timer code */
	uint8_t tos, ttl;               /* ttl 0 means 64 */
	uint32_t ackreq_every;          /* see roce_rc_req_cfg */
	uint32_t max_unacked;           /* see roce_rc_req_cfg */
	bool uc;                        /* an unreliable connected QP: UC requester and responder (roce_rc*.h) */
	/* guest nodes (optional otherwise): the QP's own addresses, 0/zero for the node's */
	uint32_t local_ip;
	uint8_t local_mac[NET_ETH_ALEN];
	/* the remote MAC when the owner knows it (no ARP); zero: resolve by ARP (not on guest nodes) */
	uint8_t remote_mac[NET_ETH_ALEN];
	uint16_t sport;                 /* UDP source port; 0: roce_port_sport() */
	/* an 802.1Q tag on every frame of the QP (TCI: priority, DEI, VLAN ID), and only tagged frames of that VLAN in */
	bool vlan;
	uint16_t tci;
	/*
	 * Optional: the responder moved the QP to error (it sent an invalid
	 * request or remote access NAK). Called with resp_ctx from inside
	 * roce_port_pump() (or a super-frame's handling: roce_port_busy()),
	 * after the responder returned; it must not destroy the QP from inside
	 * the call (roce_port_qp_destroy() refuses with -EBUSY there).
	 */
	void (*resp_fatal)(void *ctx);
	const struct roce_rc_ops *resp_ops;
	void *resp_ctx;
	const struct roce_rc_req_ops *req_ops;
	void *req_ctx;
};

struct roce_port;

/*
 * A node attached to sw as an endpoint; NULL when cfg is invalid (NULL, a
 * group or zero MAC, address 0), memory is short, or the switch is full.
 * The switch must outlive the node.
 */
struct roce_port *roce_port_new(const struct roce_port_cfg *cfg, struct net_switch *sw);
/* Detach and free; every QP is moved to error first (its WRs and receive complete with FLUSH_ERR). */
void roce_port_free(struct roce_port *port);

/*
 * Create RC QP qpn (1 .. 2^24 - 1) and start resolving its neighbour (now_us
 * is the time of that ARP request). 0, -EINVAL for a bad field (as
 * roce_rc_resp_init/roce_rc_req_init judge them), -EEXIST for a QPN in use,
 * -ENOSPC when ROCE_PORT_MAX_QPS exist (or, on a guest node, its QPs already
 * use ROCE_PORT_LOCAL_MACS other local MACs), -ENOMEM.
 */
int roce_port_qp_create(struct roce_port *port, uint32_t qpn, const struct roce_port_qp_cfg *cfg, uint64_t now_us);
/*
 * Move QP qpn to error (flushing its WRs and receive) and free it; -ENOENT if
 * there is none, -EBUSY from inside roce_port_pump() or roce_port_tick()
 * (a callback of the node: the owner defers, as roce_glue.c does).
 */
int roce_port_qp_destroy(struct roce_port *port, uint32_t qpn);

/*
 * The requester's part of modify-QP to RTS: a QP created at RTR (with
 * placeholder send parameters) gets its first PSN, timer and retry counts
 * here. Re-initialises the requester; -EBUSY when it holds WRs or is in
 * error, -ENOENT for no such QP, -EINVAL as roce_rc_req_init.
 */
int roce_port_qp_set_requester(struct roce_port *port, uint32_t qpn, uint32_t sq_psn, uint8_t timeout,
			       uint8_t retry_cnt, uint8_t rnr_retry, uint8_t max_rd_atomic);

/* Post a send-queue WR on QP qpn: roce_rc_req_post()'s result, or -ENOENT. */
int roce_port_qp_post(struct roce_port *port, uint32_t qpn, const struct roce_rc_req_wr *wr);

/* The QP's halves for their state and counters (NULL: no such QP). */
const struct roce_rc_req *roce_port_qp_requester(const struct roce_port *port, uint32_t qpn);
const struct roce_rc_resp *roce_port_qp_responder(const struct roce_port *port, uint32_t qpn);
/* The UDP source port QP qpn's frames carry (0: no such QP). */
uint16_t roce_port_qp_sport(const struct roce_port *port, uint32_t qpn);

/*
 * Handle every received frame waiting, then let up to budget packets out of
 * the responders and requesters (QPs taken in turn). Returns the frames and
 * packets handled; 0 when there was nothing to do.
 */
unsigned roce_port_pump(struct roce_port *port, unsigned budget, uint64_t now_us);
/* Run every requester's timers. */
void roce_port_tick(struct roce_port *port, uint64_t now_us);
/* When roce_port_tick() next has something to do; UINT64_MAX when nothing waits. */
uint64_t roce_port_next_deadline(const struct roce_port *port);

/* Send an ARP request for ip now (the owner may resolve ahead of creating QPs). */
void roce_port_arp_request(struct roce_port *port, uint32_t ip, uint64_t now_us);
/* The neighbour table: true and *mac when ip is resolved. */
bool roce_port_neigh_lookup(const struct roce_port *port, uint32_t ip, uint8_t mac[NET_ETH_ALEN]);

/*
 * UD datagrams (guest nodes, and any node that sets a handler). Without a
 * handler a UD packet is dropped (ROCE_PORT_DROP_UD); with one, every UD
 * packet that parses and is addressed to the node's MAC is handed to it as
 * it is (the handler judges the destination QP, its Q_Key and address).
 * The handler returns false for a datagram it refused, which is counted as
 * dropped (ROCE_PORT_DROP_UD_REFUSED). Called from inside roce_port_pump(),
 * or with a clock (roce_port_cfg.clock_us) from inside the switch's delivery
 * of a UDP super-frame.
 */
void roce_port_set_ud_handler(struct roce_port *port, bool (*recv)(void *ctx, const struct roce_pkt *pkt), void *ctx);

/*
 * Whether the node is inside roce_port_pump(), roce_port_tick() or the
 * handling of a super-frame's datagrams: the owner's callbacks may be running
 * and roce_port_qp_destroy() refuses (-EBUSY); an owner letting a QP go from
 * a callback destroys it once this is false (after its next pump).
 */
bool roce_port_busy(const struct roce_port *port);

/* One UD SEND ONLY (with immediate when has_imm) datagram. */
struct roce_port_ud {
	uint8_t src_mac[NET_ETH_ALEN], dst_mac[NET_ETH_ALEN];
	uint32_t src_ip, dst_ip;        /* host order */
	uint8_t tos, ttl;               /* ttl 0 means 64 */
	uint16_t sport;                 /* 0: roce_port_sport(src_qpn, dst_qpn) */
	uint32_t src_qpn, dst_qpn, qkey;
	bool has_imm, solicited;
	uint32_t imm;
	bool vlan;                      /* an 802.1Q tag of tci (the address handle's template had one) */
	uint16_t tci;
};
/*
 * Send it at once (no ARP: the destination MAC is given; UD is unreliable,
 * nothing is kept). 0, -EINVAL for a zero or group source or destination MAC,
 * a QPN over 24 bits or a payload over 4096 bytes.
 */
int roce_port_ud_send(struct roce_port *port, const struct roce_port_ud *d, const void *payload, uint32_t len);

/*
 * Test hook: every frame the node is about to give to the switch is first
 * shown to drop(ctx, frame, len); true drops it (ROCE_PORT_DROP_TX_HOOK).
 * NULL removes the hook.
 */
void roce_port_set_tx_hook(struct roce_port *port, bool (*drop)(void *ctx, const uint8_t *frame, size_t len),
			   void *ctx);

const struct roce_port_stats *roce_port_stats(const struct roce_port *port);
/* QP qpn's send rate (roce_rate.h; NULL: no such QP). */
const struct roce_rate *roce_port_qp_rate(const struct roce_port *port, uint32_t qpn);
/* The pace of QP qpn's READ responses (roce_reader.h; NULL: no such QP). */
const struct roce_reader *roce_port_qp_reader(const struct roce_port *port, uint32_t qpn);
const char *roce_port_drop_name(enum roce_port_drop d);

/* The UDP source port for a QP pair: flow entropy in 49152..65535. */
uint16_t roce_port_sport(uint32_t local_qpn, uint32_t remote_qpn);

#endif
