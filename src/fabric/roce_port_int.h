/*
 * Inside a RoCEv2 node (roce_port.h), shared by its two halves: roce_port.c
 * (neighbours, sending, pacing, the QP table, the pump) and roce_port_rx.c
 * (the switch's filter and delivery, ARP and RoCEv2 input). Nothing outside
 * src/fabric/roce_port*.c includes it.
 */
#ifndef ERNIC_FABRIC_ROCE_PORT_INT_H
#define ERNIC_FABRIC_ROCE_PORT_INT_H

#include "fabric/roce_port.h"
#include "net/net_offload.h"

enum neigh_state {
	NEIGH_FREE = 0,
	NEIGH_INCOMPLETE,       /* an ARP request went out, no answer yet */
	NEIGH_REACHABLE,        /* mac is valid */
};

struct neigh {
	enum neigh_state state;
	uint32_t ip;
	uint8_t mac[NET_ETH_ALEN];
	bool asked;             /* an ARP request went out at asked_us */
	uint64_t asked_us;
};

struct port_qp {
	struct roce_port *port;
	uint32_t qpn;
	unsigned slot;          /* its slot in port->qp_hash */
	unsigned idx;           /* its place in port->qp_list */
	uint32_t remote_ip, pmtu;
	uint32_t local_ip;
	uint8_t local_mac[NET_ETH_ALEN];
	bool remote_mac_known;
	uint8_t remote_mac[NET_ETH_ALEN];
	uint16_t sport;
	uint8_t tos;
	uint16_t pkey;
	uint32_t remote_qpn;
	bool vlan;              /* frames go out with an 802.1Q tag of tci, and only such come in */
	uint16_t tci;
	/*
	 * Its send rate (roce_rate.h): what the pump lets out of it, cut by the
	 * peer's CNPs and by losses the transport saw (the counters of those
	 * last looked at), raised while quiet. paced: it had frames to send and
	 * no tokens at the last look (the node's deadline then includes it).
	 */
	struct roce_rate rate;
	bool paced;
	/*
	 * The reader of its READ responses: they leave only while the peer's
	 * queue has room, by the probes' window when the peer answers them
	 * (roce_echo.h, in peer_mem[peer] when its ip is remote_ip), else by
	 * the model of its pace (roce_reader.h). reader_wait: they are held for
	 * it (the node's deadline then includes it). The responder's counters
	 * as last looked at.
	 */
	struct roce_reader reader;
	bool reader_wait;
	unsigned peer;
	uint64_t seen_reads_new;
	uint64_t seen_timeouts, seen_read_again, seen_read_waited;
	uint64_t cnp_us;        /* the last CNP sent for it (valid when cnp_sent) */
	bool cnp_sent;
	void (*resp_fatal)(void *ctx);
	const struct roce_rc_ops *resp_ops;     /* the owner's */
	void *resp_ctx;
	const struct roce_rc_req_ops *req_ops;  /* the owner's */
	void *req_ctx;
	struct roce_rc_resp resp;
	struct roce_rc_req req;
};

struct rx_slot {
	size_t len;
	bool backlog;           /* it arrived with ROCE_PORT_BACKLOG or more waiting: the node is falling behind */
	bool tagged;            /* it came with an 802.1Q tag (taken out: frame[] is untagged) of tci */
	uint16_t tci;
	uint8_t frame[ROCE_PORT_FRAME_MAX];
};

struct roce_port {
	char name[32];
	uint32_t ip;
	uint8_t mac[NET_ETH_ALEN];
	bool guest;
	struct net_switch *sw;
	int sw_port;
	uint64_t now_us;        /* the latest time the owner passed in (or its clock gave) */
	uint64_t (*clock_us)(void); /* roce_port_cfg.clock_us */
	/*
	 * The QPs, each allocated on its own: qp_hash finds one by QPN (linear
	 * probing, at most half full, no tombstones: a removal shifts its
	 * cluster back), qp_list[0..nqp) holds them densely for the loops that
	 * visit every QP (a removal moves the last one into the hole).
	 */
	struct port_qp *qp_hash[ROCE_PORT_QP_HASH];
	struct port_qp *qp_list[ROCE_PORT_MAX_QPS];
	unsigned nqp;
	unsigned pump_next;     /* the place in qp_list the requester pump starts with */
	unsigned busy;          /* inside pump or tick (depth): the owner's callbacks may run, QPs must stay */
	/* guest nodes: the local MACs QPs send with other than the node's, with how many QPs use each */
	struct {
		uint8_t mac[NET_ETH_ALEN];
		unsigned refs;
	} lmac[ROCE_PORT_LOCAL_MACS];
	struct neigh neigh[ROCE_PORT_NEIGH];
	unsigned neigh_next;
	/*
	 * What earlier flows learned of a peer, for a new QP toward it
	 * (perftest makes a new QP for every run): the rate of the last flow
	 * that got late signals (roce_rate.h; 0: none did), where a new QP
	 * starts instead of at ROCE_RATE_START, since that peer will again
	 * tell of an overflow only seconds after it began; and the rate it
	 * was measured to consume READ responses at (roce_reader.h; 0: never
	 * measured).
	 */
	struct {
		uint32_t ip;            /* 0: unused */
		uint64_t rate;
		uint64_t reader_rate;
		struct roce_echo echo;  /* the clock of READ responses toward it (roce_echo.h) */
	} peer_mem[ROCE_PORT_PEERS_KEPT];
	unsigned peer_next;
	/* received frames: rxq[rx_head], ... rx_count of them */
	struct rx_slot rxq[ROCE_PORT_RXQ];
	unsigned rx_head, rx_count;
	bool rx_inline;                 /* a super-frame's datagram is being handled where it lies */
	bool in_super;                  /* a super-frame is being cut, its datagrams handled in place at super_us */
	uint64_t super_us;
	/* a UD datagram is built here (a QP's frames are finished in their senders' buffers) */
	uint8_t tx[ROCE_PORT_FRAME_MAX + 4]; /* room for an 802.1Q tag */
	bool (*tx_hook)(void *ctx, const uint8_t *frame, size_t len);
	void *tx_hook_ctx;
	bool (*ud_recv)(void *ctx, const struct roce_pkt *pkt);
	void *ud_ctx;
	uint32_t ud_psn;        /* UD packets carry a PSN the receiver ignores: a counter */
	unsigned cnp_budget;    /* CNPs this pump call may still send (behind, the node must not add a storm) */
	struct roce_port_stats stats;
};

static inline void rport_drop(struct roce_port *port, enum roce_port_drop d)
{
	port->stats.drops[d]++;
}

/* roce_port.c */
struct neigh *rport_neigh_find(const struct roce_port *port, uint32_t ip);
struct neigh *rport_neigh_get(struct roce_port *port, uint32_t ip);
void rport_out(struct roce_port *port, const uint8_t *frame, size_t len);
void rport_cnp_send(struct roce_port *port, struct port_qp *qp, uint64_t now_us);
void rport_rate_signal(struct roce_port *port, struct port_qp *qp, uint64_t now_us);
void rport_loss_check(struct roce_port *port, struct port_qp *qp, uint64_t now_us);
void rport_read_check(struct port_qp *qp, uint64_t now_us);
struct port_qp *rport_qp_find(const struct roce_port *port, uint32_t qpn);
int rport_lmac_find(const struct roce_port *port, const uint8_t *mac, bool get);

/* frame: ROCE_FRAME_HEADROOM writable bytes before it (roce_port.c) */
void rport_qp_send(struct port_qp *qp, uint8_t *frame, size_t len, bool roce);
void rport_qp_send_pieces(struct port_qp *qp, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			  const uint8_t *trailer, size_t tlen);
int rport_peer_find(struct roce_port *port, uint32_t ip, bool make);

/* roce_port_echo.c: the probes of a READ's reader (roce_echo.h) */
bool rport_read_open(struct roce_port *port, struct port_qp *qp, uint64_t now_us);
void rport_read_sent(struct roce_port *port, struct port_qp *qp, uint64_t now_us);
void rport_read_lost(struct roce_port *port, struct port_qp *qp, bool dropped);
void rport_echo_cnp(struct roce_port *port, struct port_qp *qp);
uint64_t rport_read_next_us(const struct roce_port *port, const struct port_qp *qp, uint64_t now_us);
bool rport_echo_is_answer(const uint8_t *ip, size_t len);
void rport_echo_input(struct roce_port *port, const uint8_t *frame, size_t len, uint64_t now_us);

/* roce_port_rx.c */
bool rport_wants(void *ctx, const uint8_t *frame, size_t len);
void rport_deliver(void *ctx, const uint8_t *frame, size_t len);
bool rport_deliver_udp_super(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off);
unsigned rport_rx_drain(struct roce_port *port, unsigned budget, uint64_t now_us);

#endif
