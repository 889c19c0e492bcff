/*
 * A RoCEv2 node's probes of a READ's reader (roce_echo.h): ICMP echo requests
 * to the peer's address among its READ responses, sent with the QP's own
 * addresses and VLAN, and the answers, which the node's filter takes before
 * the guest's Ethernet queue sees them. Whether a READ response may leave is
 * decided here: by the peer's window when it answers, else by the QP's model
 * of the reader's pace (roce_reader.h).
 */
#include "fabric/roce_port_int.h"

#include <string.h>

#include "util/inet_csum.h"

/*
 * What marks a probe as ours: the identifier, and the first bytes of its
 * data, which the answer echoes (RFC 792). A ping of the guest's own carries
 * neither, so its answers still reach the guest.
 */
#define ECHO_ID 0x4552u
static const uint8_t echo_magic[8] = { 'r', 'o', 'c', 'e', 'p', 'a', 'c', 'e' };

#define ECHO_FRAME_LEN (sizeof(struct net_eth_hdr) + sizeof(struct net_ip_hdr) + sizeof(struct net_icmp_echo) + \
			sizeof(echo_magic))

/* The peer entry of qp's remote address (made when make), or NULL. */
static struct roce_echo *qp_echo(struct roce_port *port, struct port_qp *qp, bool make)
{
	int i;

	if (qp->peer < ROCE_PORT_PEERS_KEPT && port->peer_mem[qp->peer].ip == qp->remote_ip && qp->remote_ip != 0)
		return &port->peer_mem[qp->peer].echo;
	if ((i = rport_peer_find(port, qp->remote_ip, make)) < 0)
		return NULL;
	qp->peer = (unsigned)i;
	return &port->peer_mem[i].echo;
}

static const struct roce_echo *qp_echo_c(const struct roce_port *port, const struct port_qp *qp)
{
	if (qp->remote_ip == 0)
		return NULL;
	if (qp->peer < ROCE_PORT_PEERS_KEPT && port->peer_mem[qp->peer].ip == qp->remote_ip)
		return &port->peer_mem[qp->peer].echo;
	for (unsigned i = 0; i < ROCE_PORT_PEERS_KEPT; i++)
		if (port->peer_mem[i].ip == qp->remote_ip)
			return &port->peer_mem[i].echo;
	return NULL;
}

/* An echo request of ours, from qp's address to its peer's, sequence seq. */
static void probe_send(struct roce_port *port, struct port_qp *qp, uint16_t seq)
{
	uint8_t buf[ROCE_FRAME_HEADROOM + (NET_ETH_MIN_FRAME > ECHO_FRAME_LEN ? NET_ETH_MIN_FRAME : ECHO_FRAME_LEN)];
	uint8_t *f = buf + ROCE_FRAME_HEADROOM;
	size_t flen = sizeof(buf) - ROCE_FRAME_HEADROOM;
	struct net_eth_hdr *eh = (struct net_eth_hdr *)f;
	struct net_ip_hdr *ih = (struct net_ip_hdr *)(eh + 1);
	struct net_icmp_echo *ic = (struct net_icmp_echo *)(ih + 1);

	memset(f, 0, flen);
	eh->type = be16_set(NET_ETHERTYPE_IPV4); /* the MACs and any tag: rport_qp_send() */
	ih->ver_ihl = 0x45;
	ih->tot_len = be16_set(sizeof(*ih) + sizeof(*ic) + sizeof(echo_magic));
	ih->id = be16_set(seq);
	ih->frag = be16_set(NET_IP_FLAG_DF);
	ih->ttl = 64;
	ih->proto = NET_IP_PROTO_ICMP;
	ih->src = be32_set(qp->local_ip);
	ih->dst = be32_set(qp->remote_ip);
	ih->csum = be16_set(inet_csum_fold(inet_csum_add(0, ih, sizeof(*ih))));
	ic->type = NET_ICMP_ECHO_REQUEST;
	ic->id = be16_set(ECHO_ID);
	ic->seq = be16_set(seq);
	memcpy(ic + 1, echo_magic, sizeof(echo_magic));
	ic->csum = be16_set(inet_csum_fold(inet_csum_add(0, ic, sizeof(*ic) + sizeof(echo_magic))));
	port->stats.echo_probes++;
	rport_qp_send(qp, f, flen, false);
}

/* A probe when one is due. */
static void probe_if_due(struct roce_port *port, struct port_qp *qp, struct roce_echo *e, uint64_t now_us)
{
	uint64_t resent = e->resent;
	uint16_t seq;

	if (!roce_echo_due(e, now_us))
		return;
	seq = roce_echo_probe(e, now_us);
	port->stats.echo_resent += e->resent - resent;
	probe_send(port, qp, seq);
}

bool rport_read_open(struct roce_port *port, struct port_qp *qp, uint64_t now_us)
{
	struct roce_echo *e = qp_echo(port, qp, false);
	bool open;

	if (e != NULL) {
		uint64_t mutes = e->mutes;

		roce_echo_check(e, now_us);
		port->stats.echo_mutes += e->mutes - mutes;
	}
	if (e == NULL || !roce_echo_live(e))
		open = roce_reader_open(&qp->reader, now_us);
	else if (!(open = roce_echo_open(e)))
		probe_if_due(port, qp, e, now_us); /* full: the frames not yet probed, or a probe gone unanswered */
	if (!open && !qp->reader_wait) {
		if (e != NULL && roce_echo_live(e))
			port->stats.echo_held++;
		else
			port->stats.reader_held++;
	}
	return open;
}

void rport_read_sent(struct roce_port *port, struct port_qp *qp, uint64_t now_us)
{
	struct roce_echo *e = qp_echo(port, qp, true);

	if (e == NULL)
		return;
	roce_echo_sent(e, 1);
	probe_if_due(port, qp, e, now_us);
}

/* qp's peer sent a CNP: it tells of its queue itself (roce_echo_off()). */
void rport_echo_cnp(struct roce_port *port, struct port_qp *qp)
{
	struct roce_echo *e = qp_echo(port, qp, true);

	if (e != NULL && e->state != ROCE_ECHO_OFF) {
		roce_echo_off(e);
		port->stats.echo_off++;
	}
}

/* qp's READ was asked for again (roce_echo_lost()). */
void rport_read_lost(struct roce_port *port, struct port_qp *qp, bool dropped)
{
	struct roce_echo *e = qp_echo(port, qp, false);

	if (e != NULL && roce_echo_live(e)) {
		roce_echo_lost(e, dropped);
		port->stats.echo_restarts++;
	}
}

uint64_t rport_read_next_us(const struct roce_port *port, const struct port_qp *qp, uint64_t now_us)
{
	const struct roce_echo *e = qp_echo_c(port, qp);

	if (e != NULL && roce_echo_live(e))
		return roce_echo_next_us(e, now_us);
	return roce_reader_next_us(&qp->reader, now_us);
}

/*
 * The filter's test, on an IPv4 packet of len bytes (the frame past its
 * Ethernet header and any tag): an echo answer with our identifier and mark.
 */
bool rport_echo_is_answer(const uint8_t *ip, size_t len)
{
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)ip;
	const struct net_icmp_echo *ic;
	size_t ihl;

	if (len < sizeof(*ih) || ih->proto != NET_IP_PROTO_ICMP)
		return false;
	ihl = (size_t)net_ip_ihl(ih) * 4;
	if (ihl < sizeof(*ih) || len < ihl + sizeof(*ic) + sizeof(echo_magic))
		return false;
	ic = (const struct net_icmp_echo *)(ip + ihl);
	return ic->type == NET_ICMP_ECHO_REPLY && ic->code == 0 && be16_get(ic->id) == ECHO_ID &&
	       memcmp(ic + 1, echo_magic, sizeof(echo_magic)) == 0;
}

/* An answer the filter took (frame untagged): checked whole, then given to its peer's clock. */
void rport_echo_input(struct roce_port *port, const uint8_t *frame, size_t len, uint64_t now_us)
{
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)(frame + sizeof(struct net_eth_hdr));
	const struct net_icmp_echo *ic;
	size_t ihl, tot;
	int i;

	if (len < sizeof(struct net_eth_hdr) + sizeof(*ih))
		return; /* never: the ring's dispatcher checked it */
	len -= sizeof(struct net_eth_hdr);
	ihl = (size_t)net_ip_ihl(ih) * 4;
	tot = be16_get(ih->tot_len);
	if (!rport_echo_is_answer((const uint8_t *)ih, len) || tot > len || tot < ihl + sizeof(*ic) ||
	    (be16_get(ih->frag) & (NET_IP_FLAG_MF | NET_IP_FRAG_OFF_MASK)) != 0 ||
	    inet_csum_fold(inet_csum_add(0, ih, ihl)) != 0 ||
	    inet_csum_fold(inet_csum_add(0, (const uint8_t *)ih + ihl, tot - ihl)) != 0) {
		rport_drop(port, ROCE_PORT_DROP_ECHO_BAD);
		return;
	}
	ic = (const struct net_icmp_echo *)((const uint8_t *)ih + ihl);
	if ((i = rport_peer_find(port, be32_get(ih->src), false)) < 0 ||
	    !roce_echo_answer(&port->peer_mem[i].echo, be16_get(ic->seq), now_us)) {
		port->stats.echo_strays++;
		return;
	}
	port->stats.echo_answers++;
}
