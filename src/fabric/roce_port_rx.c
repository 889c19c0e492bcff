/*
 * A RoCEv2 node's receiving half (roce_port.h): what the switch hands it
 * (ARP for the node, UDP to 4791 for its MACs and the answers to its probes,
 * roce_port_echo.c, 802.1Q-tagged or not), queued
 * and then, in the pump, matched to a QP by DestQP, address and VLAN, with
 * ECN's CE and a backlog answered by CNPs. The datagrams of a UDP super-frame
 * from another server are handled as they are cut, when the ring is empty.
 */
#include "fabric/roce_port_int.h"

#include <string.h>

#include "net/net_arp.h"
#include "net/net_switch.h"

/* The node's MAC, or (guest nodes) one a QP sends with. */
static bool port_is_local_mac(const struct roce_port *port, const uint8_t *mac)
{
	if (memcmp(mac, port->mac, NET_ETH_ALEN) == 0)
		return true;
	if (!port->guest)
		return false;
	return rport_lmac_find(port, mac, false) >= 0;
}

/*
 * The switch's filter: ARP requests for the node, and ARP or UDP to 4791 sent
 * to its MAC; a guest node only the UDP. Both: answers to their probes.
 */
bool rport_wants(void *ctx, const uint8_t *frame, size_t len)
{
	const struct roce_port *port = ctx;
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)(frame + sizeof(*eh));
	const struct net_udp_hdr *uh;
	size_t ihl;

	if (len < sizeof(*eh))
		return false;
	if (!port->guest && net_arp_is_request_for(frame, len, port->ip))
		return true;
	if (!port_is_local_mac(port, eh->dst))
		return false;
	if (be16_get(eh->type) == NET_ETHERTYPE_ARP)
		return !port->guest; /* a guest node leaves ARP to the guest */
	if (be16_get(eh->type) == NET_ETHERTYPE_VLAN) {
		/* RoCEv2 in an 802.1Q tag: the same test past the tag (tagged ARP stays the guest's) */
		if (len < sizeof(*eh) + 4 || be16_get(*(const be16 *)(frame + 16)) != NET_ETHERTYPE_IPV4)
			return false;
		frame += 4;
		len -= 4;
		ih = (const struct net_ip_hdr *)(frame + sizeof(*eh));
	} else if (be16_get(eh->type) != NET_ETHERTYPE_IPV4) {
		return false;
	}
	if (len < sizeof(*eh) + sizeof(*ih))
		return false;
	if (ih->proto == NET_IP_PROTO_ICMP)
		return rport_echo_is_answer((const uint8_t *)ih, len - sizeof(*eh)); /* a probe's answer */
	if (ih->proto != NET_IP_PROTO_UDP)
		return false;
	ihl = (size_t)net_ip_ihl(ih) * 4;
	if (ihl < sizeof(*ih) || len < sizeof(*eh) + ihl + sizeof(*uh))
		return false;
	uh = (const struct net_udp_hdr *)(frame + sizeof(*eh) + ihl);
	return be16_get(uh->dport) == ROCE_UDP_DPORT;
}

/* The ring's next slot for an untagged frame of len bytes, or NULL (the frame dropped and counted). */
static struct rx_slot *rx_slot(struct roce_port *port, size_t len)
{
	if (len > ROCE_PORT_FRAME_MAX) {
		rport_drop(port, ROCE_PORT_DROP_RX_LONG);
		return NULL;
	}
	if (port->rx_count == ROCE_PORT_RXQ) {
		rport_drop(port, ROCE_PORT_DROP_RX_FULL);
		return NULL;
	}
	return &port->rxq[(port->rx_head + port->rx_count) % ROCE_PORT_RXQ];
}

/* Slot s (from rx_slot()) now holds a frame of len bytes. */
static void rx_queued(struct roce_port *port, struct rx_slot *s, size_t len)
{
	s->len = len;
	s->backlog = port->rx_count >= ROCE_PORT_BACKLOG || net_switch_behind(port->sw);
	port->rx_count++;
	port->stats.frames_in++;
}

/* Only a copy: the frame is handled in roce_port_pump(), outside the sender's call. */
void rport_deliver(void *ctx, const uint8_t *frame, size_t len)
{
	struct roce_port *port = ctx;
	struct rx_slot *s;

	bool tagged = len >= sizeof(struct net_eth_hdr) + 4 &&
		      be16_get(((const struct net_eth_hdr *)frame)->type) == NET_ETHERTYPE_VLAN;

	if ((s = rx_slot(port, len - (tagged ? 4 : 0))) == NULL)
		return;
	s->tagged = tagged;
	s->tci = tagged ? (uint16_t)(frame[14] << 8 | frame[15]) : 0;
	port->stats.vlan_in += tagged;
	if (tagged) {
		/* kept untagged, as the parser reads it; the tag is matched to the QP's at input */
		memcpy(s->frame, frame, 12);
		memcpy(s->frame + 12, frame + 16, len - 16);
		len -= 4;
	} else {
		memcpy(s->frame, frame, len);
	}
	rx_queued(port, s, len);
}

static void arp_input(struct roce_port *port, const uint8_t *frame, size_t len)
{
	struct net_arp_info a;
	struct neigh *n;
	uint8_t f[NET_ETH_MIN_FRAME];

	if (net_arp_parse(frame + sizeof(struct net_eth_hdr), len - sizeof(struct net_eth_hdr), &a) != 0) {
		rport_drop(port, ROCE_PORT_DROP_ARP_BAD);
		return;
	}
	if (a.spa == 0 || a.spa == port->ip)
		return; /* a probe, or someone claiming our address: nothing to learn or answer */
	/* RFC 826: update a known sender; add it when we are the target. */
	n = rport_neigh_find(port, a.spa);
	if (n == NULL && a.tpa == port->ip)
		n = rport_neigh_get(port, a.spa);
	if (n != NULL && (n->state != NEIGH_REACHABLE || memcmp(n->mac, a.sha, NET_ETH_ALEN) != 0)) {
		n->state = NEIGH_REACHABLE;
		memcpy(n->mac, a.sha, NET_ETH_ALEN);
		port->stats.neigh_learned++;
	}
	if (a.oper != NET_ARP_OP_REQUEST || a.tpa != port->ip)
		return;
	port->stats.arp_replies++;
	rport_out(port, f, net_arp_build(f, sizeof(f), NET_ARP_OP_REPLY, port->mac, port->ip, a.sha, a.spa));
}

/*
 * A packet the parser accepted (for qp, when its DestQP named one), with
 * the tag it came with; backlog: it came in while the node was behind (a CNP
 * is owed): to its QP by address and VLAN, or to the UD owner.
 */
static void roce_accept(struct roce_port *port, struct port_qp *qp, struct roce_pkt *pkt, bool backlog, bool tagged,
			uint16_t tci, uint64_t now_us)
{
	pkt->vlan = tagged;
	pkt->vlan_tci = tci;
	if (be32_get(pkt->ip->dst) != (qp != NULL ? qp->local_ip : port->ip) && !(qp == NULL && port->guest)) {
		rport_drop(port, ROCE_PORT_DROP_IP_DST);
		return;
	}
	/* Connected transports (RC, UC) go to their QP, which takes only its own kind; UD to the owner. */
	if ((pkt->bth->opcode & ROCE_TRANSPORT_MASK) == ROCE_TRANSPORT_UD) {
		if (port->ud_recv == NULL) {
			rport_drop(port, ROCE_PORT_DROP_UD);
			return;
		}
		port->stats.ud_in++;
		if (!port->ud_recv(port->ud_ctx, pkt))
			rport_drop(port, ROCE_PORT_DROP_UD_REFUSED);
		return;
	}
	if (qp == NULL) {
		rport_drop(port, ROCE_PORT_DROP_UNKNOWN_QP);
		return;
	}
	if (be32_get(pkt->ip->src) != qp->remote_ip) {
		rport_drop(port, ROCE_PORT_DROP_IP_SRC);
		return;
	}
	if (tagged != qp->vlan || (qp->vlan && (tci & 0x0fff) != (qp->tci & 0x0fff))) {
		rport_drop(port, ROCE_PORT_DROP_VLAN);
		return;
	}
	if (pkt->bth->opcode == ROCE_CNP) {
		/* The peer is falling behind what this QP sends. */
		port->stats.cnp_received++;
		rport_rate_signal(port, qp, now_us);
		rport_echo_cnp(port, qp); /* a peer that sends CNPs is not probed */
		return;
	}
	if ((pkt->ip->tos & ROCE_ECN_MASK) == ROCE_ECN_CE) {
		/* A switch on the way marked it: the peer is to slow down, as for a backlog here. */
		port->stats.ce_received++;
		rport_cnp_send(port, qp, now_us);
	} else if (backlog) {
		rport_cnp_send(port, qp, now_us);
	}
	if (pkt->op->request) {
		port->stats.to_responder++;
		if (roce_rc_resp_input(&qp->resp, pkt) == ROCE_RC_IN_FATAL_NAK && qp->resp_fatal != NULL)
			qp->resp_fatal(qp->resp_ctx);
		rport_read_check(qp, now_us); /* a new READ: a verdict on the pace of the last */
		rport_loss_check(port, qp, now_us); /* a READ asked for again */
	} else {
		enum roce_rc_req_in v;

		port->stats.to_requester++;
		v = roce_rc_req_input(&qp->req, pkt, now_us);
		if (v == ROCE_RC_REQ_IN_SEQ_NAK || v == ROCE_RC_REQ_IN_IMPLIED_NAK)
			rport_rate_signal(port, qp, now_us); /* the peer missed packets of ours */
	}
}

/* A parse error: counted by kind, the frame dropped. */
static void parse_failed(struct roce_port *port, enum roce_err err)
{
	port->stats.parse_err[err < ROCE_ERR_NUM ? err : 0]++;
	rport_drop(port, ROCE_PORT_DROP_PARSE);
}

/*
 * A packet to 4791 in two pieces, hdr (ROCE_L2L4_LEN bytes: Ethernet, IPv4,
 * UDP) and l4 (the UDP payload, l4len bytes): DestQP, then
 * roce_parse_split() at that QP's path MTU (without a QP at the largest: a
 * malformed packet is counted as such, not as a stray), then roce_accept().
 */
static void roce_in(struct roce_port *port, const uint8_t *hdr, const uint8_t *l4, size_t l4len, bool backlog,
		    bool tagged, uint16_t tci, uint64_t now_us)
{
	struct port_qp *qp = NULL;
	struct roce_pkt pkt;
	enum roce_err err;

	if (l4len >= sizeof(struct roce_bth) + ROCE_ICRC_LEN)
		qp = rport_qp_find(port, roce_bth_dqpn((const struct roce_bth *)l4));
	err = roce_parse_split(hdr, l4, l4len, qp != NULL ? qp->pmtu : 4096, &pkt);
	if (err != ROCE_OK) {
		parse_failed(port, err);
		return;
	}
	roce_accept(port, qp, &pkt, backlog, tagged, tci, now_us);
}

/* A frame to 4791 from the ring (one too short for its headers fails roce_parse() as such). */
static void roce_input(struct roce_port *port, const struct rx_slot *sl, uint64_t now_us)
{
	struct roce_pkt pkt;

	if (sl->len < ROCE_L2L4_LEN) {
		parse_failed(port, roce_parse(sl->frame, sl->len, 4096, &pkt));
		return;
	}
	roce_in(port, sl->frame, sl->frame + ROCE_L2L4_LEN, sl->len - ROCE_L2L4_LEN, sl->backlog, sl->tagged, sl->tci,
		now_us);
}

/*
 * One datagram of a super-frame. Handled where it lies, its headers and its
 * payload in their two pieces, when nothing waits in the ring before it (and
 * not inside the handling of another: a frame that arrives then, say from a
 * host on the segment answering at once, queues); else joined in a slot, one
 * copy, behind the rest.
 */
static void udp_datagram(void *ctx, const uint8_t *hdr, size_t hlen, const uint8_t *payload, size_t plen)
{
	struct roce_port *port = ctx;
	struct rx_slot *s;

	if (port->in_super && port->rx_count == 0 && !port->rx_inline && hlen == ROCE_L2L4_LEN &&
	    plen <= ROCE_PORT_FRAME_MAX - ROCE_L2L4_LEN) {
		port->stats.frames_in++;
		port->stats.rx_in_place++;
		port->now_us = port->super_us;
		port->rx_inline = true;
		port->busy++; /* as in the pump: a QP the owner lets go of in a callback stays until after */
		roce_in(port, hdr, payload, plen, net_switch_behind(port->sw), false, 0, port->now_us);
		port->busy--;
		port->rx_inline = false;
		return;
	}
	if ((s = rx_slot(port, hlen + plen)) == NULL)
		return;
	s->tagged = false;
	s->tci = 0;
	memcpy(s->frame, hdr, hlen);
	memcpy(s->frame + hlen, payload, plen);
	rx_queued(port, s, hlen + plen);
}

/*
 * A UDP super-frame from another server (its RoCEv2 packets merged by its
 * TAP): cut here, each datagram given no UDP checksum (the ICRC covers what
 * matters; the switch's cut would have summed every payload and copied it
 * once more). With the owner's clock, what waits in the ring is handled
 * first (the same wakeup of the TAP often brought a WRITE's first packet
 * alone, ahead of the rest merged), so that the datagrams find it empty and
 * are handled where they lie; else each is copied into the ring.
 */
bool rport_deliver_udp_super(void *ctx, const uint8_t *frame, size_t len, const struct net_offload *off)
{
	struct roce_port *port = ctx;
	/* Only with the owner's clock, and not inside a handling already under way (in place or in the ring). */
	bool in_place = port->clock_us != NULL && !port->rx_inline && !port->in_super;
	unsigned n;

	if (in_place) {
		/* One reading of the clock for the whole super-frame: its datagrams came together. */
		port->super_us = port->clock_us();
		port->in_super = true;
		if (port->rx_count > 0) {
			port->now_us = port->super_us;
			port->rx_inline = true;
			port->busy++;
			rport_rx_drain(port, ROCE_PORT_RXQ, port->now_us);
			port->busy--;
			port->rx_inline = false;
		}
	}
	n = net_offload_udp_each(frame, len, off, udp_datagram, port);
	if (in_place)
		port->in_super = false;

	port->stats.super_in += n > 0;
	return n > 0;
}

unsigned rport_rx_drain(struct roce_port *port, unsigned budget, uint64_t now_us)
{
	unsigned done = 0;

	while (done < budget && port->rx_count > 0) {
		struct rx_slot *s = &port->rxq[port->rx_head];
		const struct net_eth_hdr *eh = (const struct net_eth_hdr *)s->frame;

		/*
		 * The slot stays counted until the frame is handled, so a frame that arrives meanwhile
		 * (an in-band host answers an ARP request at once) lands behind it.
		 */
		if (be16_get(eh->type) == NET_ETHERTYPE_ARP)
			arp_input(port, s->frame, s->len);
		else if (s->len >= sizeof(*eh) + sizeof(struct net_ip_hdr) &&
			 ((const struct net_ip_hdr *)(eh + 1))->proto == NET_IP_PROTO_ICMP)
			rport_echo_input(port, s->frame, s->len, now_us);
		else
			roce_input(port, s, now_us);
		port->rx_head = (port->rx_head + 1) % ROCE_PORT_RXQ;
		port->rx_count--;
		done++;
	}
	return done;
}
