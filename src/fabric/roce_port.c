/*
 * A RoCEv2 node on the emulated segment; see roce_port.h. RoCEv2 annex A17
 * (IPv4 encapsulation, UDP port 4791, the source port as flow entropy), ARP
 * as RFC 826 (net/net_arp.h), the QPs as roce_rc.h and roce_rc_req.h.
 */
#include "fabric/roce_port_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_arp.h"
#include "net/net_switch.h"
#include "util/inet_csum.h"

static const char *const drop_names[ROCE_PORT_DROP_NUM] = {
	[ROCE_PORT_DROP_RX_FULL] = "rx_full",
	[ROCE_PORT_DROP_RX_LONG] = "rx_long",
	[ROCE_PORT_DROP_ARP_BAD] = "arp_bad",
	[ROCE_PORT_DROP_PARSE] = "parse",
	[ROCE_PORT_DROP_UNKNOWN_QP] = "unknown_qp",
	[ROCE_PORT_DROP_IP_DST] = "ip_dst",
	[ROCE_PORT_DROP_IP_SRC] = "ip_src",
	[ROCE_PORT_DROP_UD] = "ud",
	[ROCE_PORT_DROP_UD_REFUSED] = "ud_refused",
	[ROCE_PORT_DROP_TX_UNRESOLVED] = "tx_unresolved",
	[ROCE_PORT_DROP_TX_HOOK] = "tx_hook",
	[ROCE_PORT_DROP_VLAN] = "vlan",
	[ROCE_PORT_DROP_ECHO_BAD] = "echo_bad",
};

const char *roce_port_drop_name(enum roce_port_drop d)
{
	return (unsigned)d < ROCE_PORT_DROP_NUM ? drop_names[d] : "?";
}

uint16_t roce_port_sport(uint32_t local_qpn, uint32_t remote_qpn)
{
	/* A multiplicative mix of both QPNs, folded to 14 bits and put in the dynamic range (RFC 6335). */
	uint32_t h = (local_qpn & ROCE_QPN_MASK) * 0x9e3779b1u ^ (remote_qpn & ROCE_QPN_MASK) * 0x85ebca77u;

	h ^= h >> 15;
	h *= 0xc2b2ae3du;
	h ^= h >> 13;
	return (uint16_t)(0xc000u | ((h ^ (h >> 14)) & 0x3fffu));
}

/* ---- neighbours ---------------------------------------------------------------- */

struct neigh *rport_neigh_find(const struct roce_port *port, uint32_t ip)
{
	for (unsigned i = 0; i < ROCE_PORT_NEIGH; i++)
		if (port->neigh[i].state != NEIGH_FREE && port->neigh[i].ip == ip)
			return (struct neigh *)&port->neigh[i];
	return NULL;
}

/* The entry for ip, made (reusing the oldest-filled slot when full) if there is none. */
struct neigh *rport_neigh_get(struct roce_port *port, uint32_t ip)
{
	struct neigh *n = rport_neigh_find(port, ip);

	if (n != NULL)
		return n;
	n = &port->neigh[port->neigh_next];
	port->neigh_next = (port->neigh_next + 1) % ROCE_PORT_NEIGH;
	memset(n, 0, sizeof(*n));
	n->state = NEIGH_INCOMPLETE;
	n->ip = ip;
	return n;
}

bool roce_port_neigh_lookup(const struct roce_port *port, uint32_t ip, uint8_t mac[NET_ETH_ALEN])
{
	const struct neigh *n = rport_neigh_find(port, ip);

	if (n == NULL || n->state != NEIGH_REACHABLE)
		return false;
	memcpy(mac, n->mac, NET_ETH_ALEN);
	return true;
}

/* ---- sending ------------------------------------------------------------------- */

void rport_out(struct roce_port *port, const uint8_t *frame, size_t len)
{
	if (port->tx_hook != NULL && port->tx_hook(port->tx_hook_ctx, frame, len)) {
		rport_drop(port, ROCE_PORT_DROP_TX_HOOK);
		return;
	}
	port->stats.frames_out++;
	port->stats.vlan_out += len >= 18 && frame[12] == 0x81 && frame[13] == 0x00;
	net_switch_input(port->sw, port->sw_port, frame, len);
}

void roce_port_arp_request(struct roce_port *port, uint32_t ip, uint64_t now_us)
{
	struct neigh *n = rport_neigh_get(port, ip);
	uint8_t f[NET_ETH_MIN_FRAME];
	size_t len = net_arp_build(f, sizeof(f), NET_ARP_OP_REQUEST, port->mac, port->ip, NULL, ip);

	n->asked = true;
	n->asked_us = now_us;
	port->stats.arp_requests++;
	rport_out(port, f, len);
}

/*
 * ECN, as a RoCE NIC with DCQCN uses it: a QP's frames go out ECN-capable
 * (ECT(0) in the IPv4 header) unless the guest's traffic class already set
 * the ECN bits, so that a congested switch marks them CE instead of dropping
 * them. CNPs are not marked (a switch must not mark the signal that relieves
 * it). The ICRC leaves TOS out, so only the IPv4 checksum changes.
 */
static void ect_mark(uint8_t *frame, size_t len)
{
	struct net_ip_hdr *ip = (struct net_ip_hdr *)(frame + sizeof(struct net_eth_hdr));
	const struct roce_bth *bth = (const struct roce_bth *)(frame + ROCE_L2L4_LEN);

	if (len < ROCE_L2L4_LEN + sizeof(*bth) || (ip->tos & ROCE_ECN_MASK) != 0 || bth->opcode == ROCE_CNP)
		return;
	ip->tos |= ROCE_ECN_ECT0;
	ip->csum = be16_set(0);
	ip->csum = be16_set(inet_csum_fold(inet_csum_add(0, ip, sizeof(*ip))));
}

/*
 * qp's frame (its headers at least) addressed: to the neighbour's MAC when it
 * is known, from the QP's own, and for a RoCEv2 packet (roce) ECN-capable.
 * When the neighbour is not known: ask (not more often than
 * ROCE_PORT_ARP_RETRY_US), count the frame dropped and return false; the
 * requester's retries send it again.
 */
static bool qp_address(struct port_qp *qp, uint8_t *frame, size_t len, bool roce)
{
	struct roce_port *port = qp->port;
	struct neigh *n = qp->remote_mac_known ? NULL : rport_neigh_find(port, qp->remote_ip);

	if (!qp->remote_mac_known && (n == NULL || n->state != NEIGH_REACHABLE)) {
		if (n == NULL || !n->asked || port->now_us - n->asked_us >= ROCE_PORT_ARP_RETRY_US)
			roce_port_arp_request(port, qp->remote_ip, port->now_us);
		rport_drop(port, ROCE_PORT_DROP_TX_UNRESOLVED);
		return false;
	}
	memcpy(((struct net_eth_hdr *)frame)->dst, n != NULL ? n->mac : qp->remote_mac, NET_ETH_ALEN);
	memcpy(((struct net_eth_hdr *)frame)->src, qp->local_mac, NET_ETH_ALEN);
	if (roce)
		ect_mark(frame, len);
	return true;
}

/*
 * A QP's frame, addressed (qp_address). roce: a RoCEv2 packet, counted
 * against the QP's rate; else a frame of the node's own to the same peer (a
 * probe). The frame is changed where it lies (MACs, ECN, and with
 * ROCE_FRAME_HEADROOM bytes before it, the QP's 802.1Q tag): no copy on the
 * way to the switch.
 */
void rport_qp_send(struct port_qp *qp, uint8_t *frame, size_t len, bool roce)
{
	struct roce_port *port = qp->port;

	if (len > ROCE_PORT_FRAME_MAX || len < sizeof(struct net_eth_hdr))
		return; /* never: the QPs build at most ROCE_PORT_FRAME_MAX bytes */
	if (!qp_address(qp, frame, len, roce))
		return;
	if (qp->vlan) {
		/* the tag goes between the source MAC and the EtherType: the MACs move into the headroom */
		memmove(frame - 4, frame, 12);
		frame -= 4;
		frame[12] = 0x81;
		frame[13] = 0x00;
		frame[14] = (uint8_t)(qp->tci >> 8);
		frame[15] = (uint8_t)qp->tci;
		len += 4;
	}
	if (roce)
		roce_rate_sent(&qp->rate, len, port->now_us);
	rport_out(port, frame, len);
}

/*
 * A QP's RoCEv2 packet in three pieces (roce_build_pieces): its headers, its
 * payload where it lies in guest memory, its pad and ICRC. Handed to the
 * switch as they are, so that the payload is copied once, into the TAP's
 * merged write; joined here first when the switch cannot take them so (a
 * frame it floods, a monitor, an endpoint that wants it), or when the frame
 * needs an 802.1Q tag or meets the test hook, and then sent as any frame.
 */
void rport_qp_send_pieces(struct port_qp *qp, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			  const uint8_t *trailer, size_t tlen)
{
	struct roce_port *port = qp->port;
	uint8_t buf[ROCE_FRAME_HEADROOM + ROCE_PORT_FRAME_MAX];
	uint8_t *f = buf + ROCE_FRAME_HEADROOM;
	size_t len = hlen + plen + tlen;
	struct iovec iov[3] = {
		{ .iov_base = hdr, .iov_len = hlen },
		{ .iov_base = (void *)payload, .iov_len = plen },
		{ .iov_base = (void *)trailer, .iov_len = tlen },
	};

	/* a tag or the hook: the frame as any other, from the start */
	bool as_pieces = !qp->vlan && port->tx_hook == NULL;

	if (len > ROCE_PORT_FRAME_MAX || hlen < ROCE_L2L4_LEN + sizeof(struct roce_bth))
		return; /* never: the QPs build at most ROCE_PORT_FRAME_MAX bytes, headers whole */
	if (as_pieces) {
		if (!qp_address(qp, hdr, hlen, true))
			return;
		roce_rate_sent(&qp->rate, len, port->now_us);
		port->stats.frames_out++;
		if (net_switch_input_pieces(port->sw, port->sw_port, iov, 3, NULL)) {
			port->stats.frames_in_pieces++;
			return;
		}
	}
	for (size_t i = 0, at = 0; i < 3; at += iov[i].iov_len, i++)
		memcpy(f + at, iov[i].iov_base, iov[i].iov_len);
	if (as_pieces)
		net_switch_input(port->sw, port->sw_port, f, len); /* addressed and counted above */
	else
		rport_qp_send(qp, f, len, true);
}

/*
 * The node is falling behind on what qp's peer sends (it arrived with a
 * backlog): a CNP to the peer's QP, at most one per ROCE_PORT_CNP_GAP_US, as
 * a RoCE NIC answers frames a congested switch marked.
 */
void rport_cnp_send(struct roce_port *port, struct port_qp *qp, uint64_t now_us)
{
	uint8_t buf[ROCE_FRAME_HEADROOM + ROCE_L2L4_LEN + sizeof(struct roce_bth) + ROCE_CNP_RSVD_LEN + ROCE_ICRC_LEN];
	uint8_t *f = buf + ROCE_FRAME_HEADROOM;
	struct roce_frame_desc d;
	size_t len;

	if ((qp->cnp_sent && now_us - qp->cnp_us < ROCE_PORT_CNP_GAP_US) || port->cnp_budget == 0)
		return;
	port->cnp_budget--;
	memset(&d, 0, sizeof(d));
	d.src_ip = qp->local_ip;
	d.dst_ip = qp->remote_ip;
	d.tos = qp->tos;
	d.ttl = 64;
	d.df = true;
	d.sport = qp->sport;
	d.opcode = ROCE_CNP;
	d.pkey = qp->pkey;
	d.becn = true;
	d.dqpn = qp->remote_qpn;
	if (roce_build(&d, f, sizeof(buf) - ROCE_FRAME_HEADROOM, &len) != ROCE_OK)
		return;
	qp->cnp_sent = true;
	qp->cnp_us = now_us;
	port->stats.cnp_sent++;
	rport_qp_send(qp, f, len, true);
}

/* A congestion signal for qp's sending (a CNP, or a loss its transport saw). */
void rport_rate_signal(struct roce_port *port, struct port_qp *qp, uint64_t now_us)
{
	if (roce_rate_signal(&qp->rate, now_us))
		port->stats.rate_cuts++;
}

/* The entry of ip in the peers remembered, or -1 (make: the oldest is taken for it, cleared). */
int rport_peer_find(struct roce_port *port, uint32_t ip, bool make)
{
	for (unsigned i = 0; i < ROCE_PORT_PEERS_KEPT; i++)
		if (port->peer_mem[i].ip == ip && ip != 0)
			return (int)i;
	if (!make || ip == 0)
		return -1;
	memset(&port->peer_mem[port->peer_next], 0, sizeof(port->peer_mem[0]));
	port->peer_mem[port->peer_next].ip = ip;
	port->peer_next = (port->peer_next + 1) % ROCE_PORT_PEERS_KEPT;
	return (int)((port->peer_next + ROCE_PORT_PEERS_KEPT - 1) % ROCE_PORT_PEERS_KEPT);
}

/* What a flow learned of its peer (a late flow's rate, the reader's measured rate), kept for the next QP toward it. */
static void peer_note(struct roce_port *port, const struct port_qp *qp)
{
	bool late = qp->rate.late, read = qp->resp.reads_new > 0;
	int i;

	if ((!late && !read) || (i = rport_peer_find(port, qp->remote_ip, true)) < 0)
		return;
	if (late)
		port->peer_mem[i].rate = qp->rate.rate;
	if (read)
		port->peer_mem[i].reader_rate = qp->reader.settled;
}

/* A new READ request the responder took: a verdict on the pace of the READ before (roce_reader.h). */
void rport_read_check(struct port_qp *qp, uint64_t now_us)
{
	if (qp->resp.reads_new == qp->seen_reads_new)
		return;
	qp->seen_reads_new = qp->resp.reads_new;
	roce_reader_request(&qp->reader, now_us);
}

/*
 * Losses the transport counted since the last look: each look that finds one
 * is a signal; a READ asked for again is a late one. A READ asked for again
 * whose responses were still held says the reader's timer ran out first.
 */
void rport_loss_check(struct roce_port *port, struct port_qp *qp, uint64_t now_us)
{
	if (qp->resp.read_again != qp->seen_read_again) {
		qp->seen_read_again = qp->resp.read_again;
		qp->seen_timeouts = qp->req.timeouts;
		if (roce_rate_late(&qp->rate, now_us)) {
			port->stats.rate_cuts++;
			port->stats.late_cuts++;
		}
		roce_reader_lost(&qp->reader, now_us);
		rport_read_lost(port, qp, true);
		peer_note(port, qp);
	} else if (qp->resp.read_waited != qp->seen_read_waited) {
		qp->seen_read_waited = qp->resp.read_waited;
		rport_read_lost(port, qp, false); /* its responses were held too long for the reader's timer */
	} else if (qp->req.timeouts != qp->seen_timeouts) {
		qp->seen_timeouts = qp->req.timeouts;
		rport_rate_signal(port, qp, now_us);
	}
}

/* ---- the owner's callbacks, with the QP in between ---------------------------- */

static bool t_recv_take(void *ctx, uint64_t *handle)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->recv_take(qp->resp_ctx, handle);
}

static int t_recv_write(void *ctx, uint64_t handle, uint32_t offset, const void *data, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->recv_write(qp->resp_ctx, handle, offset, data, len);
}

static void t_recv_complete(void *ctx, uint64_t handle, const struct roce_rc_recv_cqe *cqe)
{
	struct port_qp *qp = ctx;

	qp->resp_ops->recv_complete(qp->resp_ctx, handle, cqe);
}

static int t_mem_write(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->mem_write(qp->resp_ctx, rkey, va, data, len);
}

static const void *t_mem_peek(void *ctx, uint32_t rkey, uint64_t va, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->mem_peek != NULL ? qp->resp_ops->mem_peek(qp->resp_ctx, rkey, va, len) : NULL;
}

static void t_send_pieces(void *ctx, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			  const uint8_t *trailer, size_t tlen);

static int t_mem_read(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->mem_read(qp->resp_ctx, rkey, va, buf, len);
}

static int t_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		    uint64_t *orig)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->atomic(qp->resp_ctx, rkey, va, cmp_swap, swap_add, compare, orig);
}

static int t_invalidate(void *ctx, uint32_t rkey)
{
	struct port_qp *qp = ctx;

	return qp->resp_ops->invalidate(qp->resp_ctx, rkey);
}

static int t_local_read(void *ctx, uint64_t wr_id, uint32_t offset, void *buf, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->req_ops->local_read(qp->req_ctx, wr_id, offset, buf, len);
}

static int t_local_write(void *ctx, uint64_t wr_id, uint32_t offset, const void *data, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->req_ops->local_write(qp->req_ctx, wr_id, offset, data, len);
}

static void t_complete(void *ctx, uint64_t wr_id, enum roce_rc_req_wc status, uint32_t byte_len,
		       uint64_t atomic_orig)
{
	struct port_qp *qp = ctx;

	qp->req_ops->complete(qp->req_ctx, wr_id, status, byte_len, atomic_orig);
}

static void t_send_frame(void *ctx, uint8_t *frame, size_t len)
{
	rport_qp_send(ctx, frame, len, true);
}

static const void *t_local_peek(void *ctx, uint64_t wr_id, uint32_t offset, uint32_t len)
{
	struct port_qp *qp = ctx;

	return qp->req_ops->local_peek != NULL ? qp->req_ops->local_peek(qp->req_ctx, wr_id, offset, len) : NULL;
}

static void t_send_pieces(void *ctx, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			  const uint8_t *trailer, size_t tlen)
{
	rport_qp_send_pieces(ctx, hdr, hlen, payload, plen, trailer, tlen);
}

static const struct roce_rc_ops resp_tramp = {
	.recv_take = t_recv_take, .recv_write = t_recv_write, .recv_complete = t_recv_complete,
	.mem_write = t_mem_write, .mem_read = t_mem_read, .atomic = t_atomic, .invalidate = t_invalidate,
	.send_frame = t_send_frame, .mem_peek = t_mem_peek, .send_pieces = t_send_pieces,
};

static const struct roce_rc_req_ops req_tramp = {
	.local_read = t_local_read, .local_write = t_local_write, .complete = t_complete,
	.send_frame = t_send_frame, .local_peek = t_local_peek, .send_pieces = t_send_pieces,
};

/* ---- QPs ----------------------------------------------------------------------- */

#define QP_HASH_BITS 11
#define QP_HASH_MASK (ROCE_PORT_QP_HASH - 1u)
_Static_assert((1u << QP_HASH_BITS) == ROCE_PORT_QP_HASH && ROCE_PORT_QP_HASH >= 2 * ROCE_PORT_MAX_QPS,
	       "the DestQP hash has 2^QP_HASH_BITS slots and stays at most half full");

/*
 * A QPN's home slot: Fibonacci hashing (the top bits of a multiplication by
 * 2^32 / phi), which spreads the consecutive QPNs a driver hands out evenly
 * over the table. Whatever the QPN (24 bits from the wire), the mask keeps
 * it in the table.
 */
static unsigned qp_home(uint32_t qpn)
{
	return (unsigned)(((qpn & ROCE_QPN_MASK) * 0x9e3779b1u) >> (32 - QP_HASH_BITS)) & QP_HASH_MASK;
}

/* Cyclic distance from slot a forward to slot b. */
static unsigned qp_dist(unsigned a, unsigned b)
{
	return (b - a) & QP_HASH_MASK;
}

/*
 * The QP qpn, from its home slot to the first empty one. The table is never
 * more than half full, so an empty slot always ends the walk (the bound only
 * makes that plain).
 */
struct port_qp *rport_qp_find(const struct roce_port *port, uint32_t qpn)
{
	unsigned i = qp_home(qpn);

	for (unsigned n = 0; n < ROCE_PORT_QP_HASH; n++, i = (i + 1) & QP_HASH_MASK) {
		struct port_qp *qp = port->qp_hash[i];

		if (qp == NULL)
			return NULL;
		if (qp->qpn == qpn)
			return qp;
	}
	return NULL;
}

/* Into the hash (qpn is not in it) and onto the end of the list; the caller checked nqp. */
static void qp_link(struct roce_port *port, struct port_qp *qp)
{
	unsigned i = qp_home(qp->qpn);

	for (unsigned n = 0; n < ROCE_PORT_QP_HASH && port->qp_hash[i] != NULL; n++)
		i = (i + 1) & QP_HASH_MASK;
	port->qp_hash[i] = qp;
	qp->slot = i;
	qp->idx = port->nqp;
	port->qp_list[port->nqp++] = qp;
}

/*
 * Out of the hash and the list. The hash's hole is filled by shifting back
 * each later entry of its cluster whose home lies at or before the hole (so
 * every entry stays reachable from its home without tombstones); the list's
 * by its last entry.
 */
static void qp_unlink(struct roce_port *port, struct port_qp *qp)
{
	unsigned hole = qp->slot, j = hole;
	struct port_qp *last;

	port->qp_hash[hole] = NULL;
	for (unsigned n = 0; n < ROCE_PORT_QP_HASH; n++) {
		struct port_qp *e;

		j = (j + 1) & QP_HASH_MASK;
		e = port->qp_hash[j];
		if (e == NULL)
			break;
		if (qp_dist(qp_home(e->qpn), j) >= qp_dist(hole, j)) {
			port->qp_hash[hole] = e;
			e->slot = hole;
			port->qp_hash[j] = NULL;
			hole = j;
		}
	}
	last = port->qp_list[--port->nqp];
	port->qp_list[qp->idx] = last;
	last->idx = qp->idx;
	port->qp_list[port->nqp] = NULL;
	if (port->pump_next >= port->nqp)
		port->pump_next = 0;
}

/* A guest node's other local MAC: the entry that holds mac, else a free one when get (-1: none). */
int rport_lmac_find(const struct roce_port *port, const uint8_t *mac, bool get)
{
	int free_i = -1;

	for (int i = 0; i < ROCE_PORT_LOCAL_MACS; i++) {
		if (port->lmac[i].refs > 0 && memcmp(port->lmac[i].mac, mac, NET_ETH_ALEN) == 0)
			return i;
		if (port->lmac[i].refs == 0 && free_i < 0)
			free_i = i;
	}
	return get ? free_i : -1;
}

int roce_port_qp_create(struct roce_port *port, uint32_t qpn, const struct roce_port_qp_cfg *cfg, uint64_t now_us)
{
	const struct roce_rc_ops *ro = cfg->resp_ops;
	const struct roce_rc_req_ops *qo = cfg->req_ops;
	struct port_qp *qp;
	struct roce_rc_resp_cfg rc;
	struct roce_rc_req_cfg qc;
	static const uint8_t zero[NET_ETH_ALEN];
	uint8_t mac[NET_ETH_ALEN];
	uint32_t local_ip = cfg->local_ip != 0 ? cfg->local_ip : port->ip;
	bool mac_known = memcmp(cfg->remote_mac, zero, NET_ETH_ALEN) != 0;
	int err, lm = -1;

	if (qpn == 0 || qpn > ROCE_QPN_MASK || cfg->remote_ip == 0 || cfg->remote_ip == local_ip || local_ip == 0)
		return -EINVAL;
	/* A guest node sends no ARP: it must be told the remote MAC. Group MACs are never a destination. */
	if ((port->guest && !mac_known) || (cfg->remote_mac[0] & 1) != 0 || (cfg->local_mac[0] & 1) != 0)
		return -EINVAL;
	if (ro == NULL || ro->recv_take == NULL || ro->recv_write == NULL || ro->recv_complete == NULL ||
	    ro->mem_write == NULL || ro->mem_read == NULL || ro->atomic == NULL || ro->invalidate == NULL ||
	    qo == NULL || qo->local_read == NULL || qo->local_write == NULL || qo->complete == NULL)
		return -EINVAL;
	if (rport_qp_find(port, qpn) != NULL)
		return -EEXIST;
	if (port->nqp >= ROCE_PORT_MAX_QPS)
		return -ENOSPC;
	/* A guest node's filter looks each of its QPs' other MACs up per frame: a few, not one per QP. */
	if (port->guest && memcmp(cfg->local_mac, zero, NET_ETH_ALEN) != 0 &&
	    memcmp(cfg->local_mac, port->mac, NET_ETH_ALEN) != 0) {
		lm = rport_lmac_find(port, cfg->local_mac, true);
		if (lm < 0)
			return -ENOSPC;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	qp->port = port;
	qp->qpn = qpn;
	qp->remote_ip = cfg->remote_ip;
	qp->pmtu = cfg->pmtu;
	qp->local_ip = local_ip;
	memcpy(qp->local_mac, memcmp(cfg->local_mac, zero, NET_ETH_ALEN) != 0 ? cfg->local_mac : port->mac,
	       NET_ETH_ALEN);
	qp->remote_mac_known = mac_known;
	memcpy(qp->remote_mac, cfg->remote_mac, NET_ETH_ALEN);
	qp->resp_fatal = cfg->resp_fatal;
	qp->sport = cfg->sport != 0 ? cfg->sport : roce_port_sport(qpn, cfg->remote_qpn);
	qp->tos = cfg->tos;
	qp->pkey = cfg->pkey;
	qp->remote_qpn = cfg->remote_qpn;
	qp->vlan = cfg->vlan;
	qp->tci = cfg->tci;
	{
		int lp = rport_peer_find(port, qp->remote_ip, false);

		if (lp >= 0 && port->peer_mem[lp].rate != 0) {
			roce_rate_init_late(&qp->rate, port->peer_mem[lp].rate, now_us);
			port->stats.late_starts++;
		} else {
			roce_rate_init(&qp->rate, now_us);
		}
		roce_reader_init(&qp->reader, qp->pmtu, lp >= 0 ? port->peer_mem[lp].reader_rate : 0, now_us);
		port->stats.reader_starts += lp >= 0 && port->peer_mem[lp].reader_rate != 0;
	}
	qp->resp_ops = ro;
	qp->resp_ctx = cfg->resp_ctx;
	qp->req_ops = qo;
	qp->req_ctx = cfg->req_ctx;
	rc = (struct roce_rc_resp_cfg){
		.ops = &resp_tramp, .ctx = qp, .rqpn = cfg->remote_qpn, .epsn = cfg->rq_psn, .pkey = cfg->pkey,
		.pmtu = cfg->pmtu, .min_rnr_timer = cfg->min_rnr_timer, .sport = qp->sport,
		.tos = cfg->tos, .ttl = cfg->ttl, .uc = cfg->uc,
	};
	qc = (struct roce_rc_req_cfg){
		.ops = &req_tramp, .ctx = qp, .src_ip = local_ip, .dst_ip = cfg->remote_ip, .sport = qp->sport,
		.tos = cfg->tos, .ttl = cfg->ttl, .dqpn = cfg->remote_qpn, .pkey = cfg->pkey, .pmtu = cfg->pmtu,
		.sq_psn = cfg->sq_psn, .max_rd_atomic = cfg->max_rd_atomic, .timeout = cfg->timeout,
		.retry_cnt = cfg->retry_cnt, .rnr_retry = cfg->rnr_retry, .ackreq_every = cfg->ackreq_every,
		.max_unacked = cfg->max_unacked, .uc = cfg->uc,
	};
	/* The destination MAC is the neighbour's, written by rport_qp_send() into every frame. */
	memcpy(qc.src_mac, qp->local_mac, NET_ETH_ALEN);
	if (mac_known)
		memcpy(qc.dst_mac, cfg->remote_mac, NET_ETH_ALEN);
	err = roce_rc_resp_init(&qp->resp, &rc);
	if (err == 0)
		err = roce_rc_req_init(&qp->req, &qc);
	if (err != 0) {
		free(qp);
		return err;
	}
	qp_link(port, qp);
	if (lm >= 0) {
		memcpy(port->lmac[lm].mac, cfg->local_mac, NET_ETH_ALEN);
		port->lmac[lm].refs++;
	}
	port->now_us = now_us;
	if (!mac_known && !roce_port_neigh_lookup(port, cfg->remote_ip, mac))
		roce_port_arp_request(port, cfg->remote_ip, now_us);
	return 0;
}

int roce_port_qp_set_requester(struct roce_port *port, uint32_t qpn, uint32_t sq_psn, uint8_t timeout,
			       uint8_t retry_cnt, uint8_t rnr_retry, uint8_t max_rd_atomic)
{
	struct port_qp *qp = rport_qp_find(port, qpn);
	struct roce_rc_req_cfg qc;

	if (qp == NULL)
		return -ENOENT;
	if (roce_rc_req_queued(&qp->req) != 0 || roce_rc_req_in_error(&qp->req))
		return -EBUSY;
	qc = qp->req.cfg;
	qc.ops = &req_tramp;
	qc.ctx = qp;
	qc.sq_psn = sq_psn;
	qc.timeout = timeout;
	qc.retry_cnt = retry_cnt;
	qc.rnr_retry = rnr_retry;
	qc.max_rd_atomic = max_rd_atomic;
	return roce_rc_req_init(&qp->req, &qc);
}

int roce_port_qp_destroy(struct roce_port *port, uint32_t qpn)
{
	struct port_qp *qp = rport_qp_find(port, qpn);
	int lm;

	if (qp == NULL)
		return -ENOENT;
	/* The pump or a timer may be inside this very QP, and the loops hold places in the list. */
	if (port->busy)
		return -EBUSY;
	peer_note(port, qp);
	/* Unlinked first: nothing the flush below calls out to finds the QP any more. */
	qp_unlink(port, qp);
	lm = port->guest ? rport_lmac_find(port, qp->local_mac, false) : -1;
	if (lm >= 0)
		port->lmac[lm].refs--;
	roce_rc_req_set_error(&qp->req);
	roce_rc_resp_set_error(&qp->resp);
	free(qp);
	return 0;
}

int roce_port_qp_post(struct roce_port *port, uint32_t qpn, const struct roce_rc_req_wr *wr)
{
	struct port_qp *qp = rport_qp_find(port, qpn);

	return qp == NULL ? -ENOENT : roce_rc_req_post(&qp->req, wr);
}

const struct roce_rc_req *roce_port_qp_requester(const struct roce_port *port, uint32_t qpn)
{
	const struct port_qp *qp = rport_qp_find(port, qpn);

	return qp == NULL ? NULL : &qp->req;
}

const struct roce_rate *roce_port_qp_rate(const struct roce_port *port, uint32_t qpn)
{
	const struct port_qp *qp = rport_qp_find(port, qpn);

	return qp == NULL ? NULL : &qp->rate;
}

const struct roce_reader *roce_port_qp_reader(const struct roce_port *port, uint32_t qpn)
{
	const struct port_qp *qp = rport_qp_find(port, qpn);

	return qp == NULL ? NULL : &qp->reader;
}

const struct roce_rc_resp *roce_port_qp_responder(const struct roce_port *port, uint32_t qpn)
{
	const struct port_qp *qp = rport_qp_find(port, qpn);

	return qp == NULL ? NULL : &qp->resp;
}

uint16_t roce_port_qp_sport(const struct roce_port *port, uint32_t qpn)
{
	const struct port_qp *qp = rport_qp_find(port, qpn);

	return qp == NULL ? 0 : qp->sport;
}

unsigned roce_port_pump(struct roce_port *port, unsigned budget, uint64_t now_us)
{
	unsigned done = 0, rx;

	port->now_us = now_us;
	port->busy++;
	port->cnp_budget = ROCE_PORT_CNP_PER_PUMP;
	/*
	 * Every frame received is handled, whatever the budget: they are copies already, and the
	 * ring must have room for the next read of the TAP (a UDP super-frame brings up to 64).
	 */
	rx = rport_rx_drain(port, ROCE_PORT_RXQ, now_us);
	/*
	 * The QPs in turn, one packet each per round, so that no QP starves the
	 * others; each round starts one place further on. Only the QPs that
	 * exist are visited. A QP's responses owed (READ responses, and what
	 * waits behind them) go before its own requests; either only while its
	 * rate has tokens for them (a QP without is "paced": the node's deadline
	 * wakes the owner when it has).
	 */
	for (bool any = true; any && done < budget && port->nqp > 0;) {
		unsigned nqp = port->nqp;

		any = false;
		for (unsigned k = 0; k < nqp && done < budget; k++) {
			struct port_qp *qp = port->qp_list[(port->pump_next + k) % nqp];
			bool resp = roce_rc_resp_pending(&qp->resp);
			unsigned n;

			/* READ responses wait while the reader's queue is full (roce_echo.h, roce_reader.h); requests may go. */
			if (resp && roce_rc_resp_next_is_read(&qp->resp) && !rport_read_open(port, qp, now_us)) {
				qp->reader_wait = true;
				resp = false;
			} else {
				qp->reader_wait = false;
			}

			if (!resp && !roce_rc_req_may_send(&qp->req, now_us)) {
				qp->paced = false;
				continue;
			}
			if (!roce_rate_ready(&qp->rate, now_us)) {
				if (!qp->paced)
					port->stats.paced++;
				qp->paced = true;
				continue;
			}
			qp->paced = false;
			if (resp) {
				bool was = roce_rc_resp_in_error(&qp->resp);
				uint64_t sent = qp->resp.read_bytes_sent, reads = qp->resp.reads_sent;
				uint32_t len = roce_rc_resp_head_read_len(&qp->resp);

				n = roce_rc_resp_pump(&qp->resp, 1);
				if (qp->resp.read_bytes_sent != sent || qp->resp.reads_sent != reads) {
					roce_reader_sent(&qp->reader, (uint32_t)(qp->resp.read_bytes_sent - sent), len,
							 qp->resp.reads_sent != reads, now_us);
					rport_read_sent(port, qp, now_us);
				}
				if (!was && roce_rc_resp_in_error(&qp->resp) && qp->resp_fatal != NULL)
					qp->resp_fatal(qp->resp_ctx); /* the memory went while a READ was answered */
			} else {
				n = roce_rc_req_pump(&qp->req, 1, now_us);
			}
			if (n == 1) {
				done++;
				any = true;
			}
		}
		port->pump_next = (port->pump_next + 1) % nqp;
	}
	port->busy--;
	return rx + done;
}

void roce_port_tick(struct roce_port *port, uint64_t now_us)
{
	port->now_us = now_us;
	port->busy++;
	for (unsigned i = 0; i < port->nqp; i++) {
		roce_rc_req_tick(&port->qp_list[i]->req, now_us);
		rport_loss_check(port, port->qp_list[i], now_us); /* an ACK timeout */
	}
	port->busy--;
}

uint64_t roce_port_next_deadline(const struct roce_port *port)
{
	uint64_t d = UINT64_MAX, q;

	for (unsigned i = 0; i < port->nqp; i++) {
		const struct port_qp *qp = port->qp_list[i];

		q = roce_rc_req_next_deadline(&qp->req);
		if (q < d)
			d = q;
		if (qp->paced && (q = roce_rate_next_us(&qp->rate, port->now_us)) < d)
			d = q;
		if (qp->reader_wait && (q = rport_read_next_us(port, qp, port->now_us)) < d)
			d = q;
	}
	return d;
}

/* ---- the node -------------------------------------------------------------------- */

struct roce_port *roce_port_new(const struct roce_port_cfg *cfg, struct net_switch *sw)
{
	static const uint8_t zero[NET_ETH_ALEN];
	struct roce_port *port;
	struct net_port np = { .wants = rport_wants, .deliver = rport_deliver,
				.deliver_udp_super = rport_deliver_udp_super };

	if (cfg == NULL || sw == NULL || (cfg->ip == 0 && !cfg->guest) || (cfg->mac[0] & 1) != 0 ||
	    memcmp(cfg->mac, zero, NET_ETH_ALEN) == 0)
		return NULL;
	port = calloc(1, sizeof(*port));
	if (port == NULL)
		return NULL;
	snprintf(port->name, sizeof(port->name), "%s", cfg->name != NULL ? cfg->name : "roce");
	port->ip = cfg->ip;
	memcpy(port->mac, cfg->mac, NET_ETH_ALEN);
	port->guest = cfg->guest;
	port->clock_us = cfg->clock_us;
	port->sw = sw;
	np.name = port->name;
	np.no_learn = cfg->guest;
	np.ctx = port;
	port->sw_port = net_switch_attach(sw, &np);
	if (port->sw_port < 0) {
		free(port);
		return NULL;
	}
	return port;
}

void roce_port_free(struct roce_port *port)
{
	if (port == NULL)
		return;
	/* Each destroy takes one QP off the list. */
	for (unsigned n = port->nqp; n > 0 && port->nqp > 0; n--)
		roce_port_qp_destroy(port, port->qp_list[port->nqp - 1]->qpn);
	net_switch_detach(port->sw, port->sw_port);
	free(port);
}

void roce_port_set_ud_handler(struct roce_port *port, bool (*recv)(void *ctx, const struct roce_pkt *pkt), void *ctx)
{
	port->ud_recv = recv;
	port->ud_ctx = ctx;
}

int roce_port_ud_send(struct roce_port *port, const struct roce_port_ud *d, const void *payload, uint32_t len)
{
	static const uint8_t zero[NET_ETH_ALEN];
	struct roce_frame_desc fd = {
		.src_ip = d->src_ip, .dst_ip = d->dst_ip, .tos = d->tos, .ttl = d->ttl, .df = true,
		.sport = d->sport != 0 ? d->sport : roce_port_sport(d->src_qpn, d->dst_qpn),
		.opcode = d->has_imm ? ROCE_UD_SEND_ONLY_WITH_IMMEDIATE : ROCE_UD_SEND_ONLY, .se = d->solicited,
		.pad = (uint8_t)((4 - (len & 3)) & 3), .pkey = 0xffff, .dqpn = d->dst_qpn,
		.psn = port->ud_psn & ROCE_PSN_MASK, .deth = { .qkey = d->qkey, .sqp = d->src_qpn }, .imm = d->imm,
		.payload = payload, .payload_len = len,
	};
	size_t flen = 0;

	if (len > 4096 || d->src_qpn > ROCE_QPN_MASK || d->dst_qpn > ROCE_QPN_MASK ||
	    memcmp(d->src_mac, zero, NET_ETH_ALEN) == 0 || memcmp(d->dst_mac, zero, NET_ETH_ALEN) == 0 ||
	    (d->src_mac[0] & 1) != 0 || (d->dst_mac[0] & 1) != 0)
		return -EINVAL;
	memcpy(fd.src_mac, d->src_mac, NET_ETH_ALEN);
	memcpy(fd.dst_mac, d->dst_mac, NET_ETH_ALEN);
	if (roce_build(&fd, port->tx, ROCE_PORT_FRAME_MAX, &flen) != ROCE_OK)
		return -EINVAL;
	if (d->vlan) {
		memmove(port->tx + 16, port->tx + 12, flen - 12);
		port->tx[12] = 0x81;
		port->tx[13] = 0x00;
		port->tx[14] = (uint8_t)(d->tci >> 8);
		port->tx[15] = (uint8_t)d->tci;
		flen += 4;
	}
	port->ud_psn++;
	port->stats.ud_out++;
	rport_out(port, port->tx, flen);
	return 0;
}

void roce_port_set_tx_hook(struct roce_port *port, bool (*drop_fn)(void *ctx, const uint8_t *frame, size_t len),
			   void *ctx)
{
	port->tx_hook = drop_fn;
	port->tx_hook_ctx = ctx;
}

bool roce_port_busy(const struct roce_port *port)
{
	return port->busy > 0;
}

const struct roce_port_stats *roce_port_stats(const struct roce_port *port)
{
	return &port->stats;
}
