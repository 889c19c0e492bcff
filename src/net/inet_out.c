/*
 * The in-band TCP/IP stack, output side: checksums, IPv4 and TCP segment
 * building, output and segmentation, retransmission and RST; see inet.h
 * and inet_priv.h. Every frame is built in t->frame and handed to
 * ops->send_frame() at once.
 */
#include "net/inet.h"

#include <string.h>

#include "net/inet_priv.h"

/* ---- checksums (RFC 1071) ------------------------------------------------------ */

uint64_t inet_csum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	return (uint64_t)(src >> 16) + (src & 0xffffu) + (dst >> 16) + (dst & 0xffffu) + proto +
	       (uint64_t)len;
}

/* ---- IPv4 ----------------------------------------------------------------------- */

void inet_ip_output(struct inet_host *t, const uint8_t dmac[NET_ETH_ALEN], uint32_t dip,
		      uint8_t proto, size_t l4len, bool df)
{
	struct net_eth_hdr *eh = (struct net_eth_hdr *)t->frame;
	struct net_ip_hdr *ih = (struct net_ip_hdr *)(t->frame + sizeof(*eh));
	size_t flen = NET_ETH_IP_HLEN + l4len;

	memcpy(eh->dst, dmac, NET_ETH_ALEN);
	memcpy(eh->src, t->cfg.mac, NET_ETH_ALEN);
	eh->type = be16_set(NET_ETHERTYPE_IPV4);
	ih->ver_ihl = net_ip_ver_ihl(4, 5);
	ih->tos = 0;
	ih->tot_len = be16_set((uint16_t)(sizeof(*ih) + l4len));
	ih->id = be16_set(t->ip_id++);
	ih->frag = be16_set(df ? NET_IP_FLAG_DF : 0);
	ih->ttl = NET_IP_DEFAULT_TTL;
	ih->proto = proto;
	ih->csum = be16_set(0);
	ih->src = be32_set(t->cfg.ip);
	ih->dst = be32_set(dip);
	ih->csum = be16_set(inet_csum_fold(inet_csum_add(0, ih, sizeof(*ih))));
	if (flen < NET_ETH_MIN_FRAME) {
		memset(t->frame + flen, 0, NET_ETH_MIN_FRAME - flen);
		flen = NET_ETH_MIN_FRAME;
	}
	t->stats.frames_out++;
	t->ops.send_frame(t->ops.ctx, t->frame, flen);
}

/* ---- TCP segments ------------------------------------------------------------------ */

/* Options (optlen bytes) and payload (dlen) are already at their places in t->frame. */
static void tcp_emit(struct inet_host *t, const uint8_t *dmac, uint32_t dip, uint16_t lport,
		     uint16_t rport, uint32_t seq, uint32_t ack, unsigned flags, uint16_t wnd,
		     size_t optlen, size_t dlen)
{
	struct net_tcp_hdr *th = (struct net_tcp_hdr *)(t->frame + NET_ETH_IP_HLEN);
	size_t l4 = sizeof(*th) + optlen + dlen;

	th->sport = be16_set(lport);
	th->dport = be16_set(rport);
	th->seq = be32_set(seq);
	th->ack = be32_set(ack);
	th->off_flags = net_tcph_off_flags((unsigned)((sizeof(*th) + optlen) / 4), flags);
	th->wnd = be16_set(wnd);
	th->csum = be16_set(0);
	th->urp = be16_set(0);
	th->csum = be16_set(inet_csum_fold(inet_csum_pseudo(t->cfg.ip, dip, NET_IP_PROTO_TCP, l4) +
					     inet_csum_add(0, th, l4)));
	inet_ip_output(t, dmac, dip, NET_IP_PROTO_TCP, l4, true);
}

/* A segment of a connection: acknowledges rcv_nxt and advertises the window, when ACK is set. */
static void pcb_emit(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, unsigned flags,
		     size_t optlen, size_t dlen)
{
	uint32_t wnd = 0, ack = 0;

	if (flags & NET_TCPF_ACK) {
		uint32_t edge;

		ack = pcb->rcv_nxt;
		wnd = inet_rcv_wnd(pcb);
		edge = pcb->rcv_nxt + wnd;
		if (SEQ_GT(edge, pcb->rcv_adv))
			pcb->rcv_adv = edge;
		else
			wnd = pcb->rcv_adv - pcb->rcv_nxt;  /* the right edge never moves left */
		pcb->ack_now = false;
	}
	tcp_emit(t, pcb->rmac, pcb->rip, t->cfg.port, pcb->rport, seq, ack, flags,
		 (uint16_t)(wnd > INET_TCP_WINDOW ? INET_TCP_WINDOW : wnd), optlen, dlen);
}

void inet_send_rst_reply(struct inet_host *t, const struct inet_seg *s)
{
	if (s->flags & NET_TCPF_RST)
		return;
	if (s->flags & NET_TCPF_ACK) {
		tcp_emit(t, s->rmac, s->rip, s->lport, s->rport, s->ack, 0, NET_TCPF_RST, 0, 0, 0);
	} else {
		uint32_t ack = s->seq + (uint32_t)s->len + ((s->flags & NET_TCPF_SYN) ? 1 : 0) +
			       ((s->flags & NET_TCPF_FIN) ? 1 : 0);

		tcp_emit(t, s->rmac, s->rip, s->lport, s->rport, 0, ack, NET_TCPF_RST | NET_TCPF_ACK, 0, 0, 0);
	}
	t->stats.resets_sent++;
}

void inet_send_rst(struct inet_host *t, struct inet_pcb *pcb)
{
	pcb_emit(t, pcb, pcb->snd_max, NET_TCPF_RST | NET_TCPF_ACK, 0, 0);
	t->stats.resets_sent++;
}

void inet_send_ack(struct inet_host *t, struct inet_pcb *pcb)
{
	/* snd_max, not a rewound snd_nxt: the peer has seen up to there and must accept this. */
	pcb_emit(t, pcb, pcb->snd_max, NET_TCPF_ACK, 0, 0);
}

void inet_send_keepalive(struct inet_host *t, struct inet_pcb *pcb)
{
	pcb_emit(t, pcb, pcb->snd_una - 1, NET_TCPF_ACK, 0, 0);
}

void inet_send_synack(struct inet_host *t, struct inet_pcb *pcb)
{
	struct net_tcp_opt_mss *opt = (struct net_tcp_opt_mss *)(t->frame + NET_ETH_IP_TCP_HLEN);

	opt->kind = NET_TCPOPT_MSS;
	opt->len = NET_TCPOPT_MSS_LEN;
	opt->mss = be16_set(INET_TCP_MSS);
	pcb_emit(t, pcb, pcb->iss, NET_TCPF_SYN | NET_TCPF_ACK, sizeof(*opt), 0);
	pcb->snd_nxt = pcb->iss + 1;
	if (SEQ_GT(pcb->snd_nxt, pcb->snd_max))
		pcb->snd_max = pcb->snd_nxt;
}

/* The payload (len bytes) is in place: sends it at snd_nxt. */
static void send_data(struct inet_host *t, struct inet_pcb *pcb, size_t len, unsigned flags)
{
	uint32_t seq = pcb->snd_nxt;

	pcb_emit(t, pcb, seq, flags, 0, len);
	if (SEQ_LT(seq, pcb->snd_max))
		t->stats.retransmits++;
	pcb->snd_nxt += (uint32_t)len;
	if (SEQ_GT(pcb->snd_nxt, pcb->snd_max)) {
		t->stats.bytes_out += pcb->snd_nxt - pcb->snd_max;
		pcb->snd_max = pcb->snd_nxt;
	}
	if (!pcb->rto_on)
		inet_timer_restart(t, pcb);
}

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

void inet_output(struct inet_host *t, struct inet_pcb *pcb, bool probe)
{
	bool data_state = pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_CLOSE_WAIT;
	const uint8_t *p;

	if (pcb->app == NULL)
		return;
	while (data_state && !pcb->fin_sent) {
		uint32_t off = pcb->snd_nxt - pcb->snd_una;
		uint32_t wnd = pcb->snd_wnd < pcb->cwnd ? pcb->snd_wnd : pcb->cwnd;
		uint32_t edge = pcb->snd_una + wnd;
		uint32_t usable = SEQ_GT(edge, pcb->snd_nxt) ? edge - pcb->snd_nxt : 0;
		size_t limit, len = 0;
		bool more;

		if (usable == 0 && probe && pcb->snd_nxt == pcb->snd_una)
			usable = 1;                 /* a zero-window probe */
		probe = false;
		if (usable == 0)
			break;
		/* Fill the segment from as many pieces as the application has, each copied at once. */
		limit = min_sz(pcb->mss, usable);
		while (len < limit) {
			size_t n;

			p = NULL;
			n = t->ops.peek(pcb->app, (uint64_t)off + len, &p);
			if (n == 0 || p == NULL)
				break;
			n = min_sz(n, limit - len);
			memcpy(t->frame + NET_ETH_IP_TCP_HLEN + len, p, n);
			len += n;
		}
		if (len == 0)
			break;
		/* PSH on the last segment of this burst: out of data, or out of window. */
		more = len == limit && usable > len && t->ops.peek(pcb->app, (uint64_t)off + len, &p) > 0;
		send_data(t, pcb, len, NET_TCPF_ACK | (more ? 0 : NET_TCPF_PSH));
	}

	/* Our FIN once the application is done and everything it sent is acknowledged. */
	if (data_state && !pcb->fin_sent && pcb->snd_una == pcb->snd_max &&
	    t->ops.wants_close(pcb->app) && t->ops.peek(pcb->app, 0, &p) == 0) {
		pcb->fin_sent = true;
		pcb->fin_seq = pcb->snd_nxt;
		pcb->state = pcb->state == TCPS_ESTABLISHED ? TCPS_FIN_WAIT_1 : TCPS_LAST_ACK;
	}
	if (pcb->fin_sent && pcb->snd_nxt == pcb->fin_seq) {
		pcb_emit(t, pcb, pcb->fin_seq, NET_TCPF_FIN | NET_TCPF_ACK, 0, 0);
		pcb->snd_nxt = pcb->fin_seq + 1;
		if (SEQ_GT(pcb->snd_nxt, pcb->snd_max))
			pcb->snd_max = pcb->snd_nxt;
		else
			t->stats.retransmits++;
		if (!pcb->rto_on)
			inet_timer_restart(t, pcb);
	}

	/* Nothing in flight, bytes waiting: the window is closed, the timer will probe it. */
	if (data_state && !pcb->fin_sent && !pcb->rto_on && pcb->snd_una == pcb->snd_max &&
	    t->ops.peek(pcb->app, 0, &p) > 0)
		inet_timer_restart(t, pcb);
}

void inet_rto_expired(struct inet_host *t, struct inet_pcb *pcb)
{
	bool data_state = pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_CLOSE_WAIT;

	if (pcb->snd_una != pcb->snd_max) {
		/* SYN, data or FIN unacknowledged: go back to the oldest. */
		if (pcb->retries >= INET_TCP_MAX_RETRIES) {
			inet_abort(t, pcb);
			return;
		}
		pcb->retries++;
		if (pcb->backoff < INET_TCP_MAX_BACKOFF)
			pcb->backoff++;
		inet_timer_restart(t, pcb);
		if (pcb->state == TCPS_SYN_RCVD) {
			t->stats.retransmits++;
			inet_send_synack(t, pcb);
			return;
		}
		pcb->snd_nxt = pcb->snd_una;
		pcb->cwnd = pcb->mss;
		inet_output(t, pcb, true);
		return;
	}
	inet_timer_stop(pcb);
	if (data_state && !pcb->fin_sent && pcb->snd_wnd == 0) {
		/* Persist: one byte into the closed window; its ACK tells whether it opened. */
		if (pcb->backoff < INET_TCP_MAX_BACKOFF)
			pcb->backoff++;
		inet_output(t, pcb, true);
	}
}

void inet_abort(struct inet_host *t, struct inet_pcb *pcb)
{
	inet_send_rst(t, pcb);
	inet_pcb_release(t, pcb);
}
