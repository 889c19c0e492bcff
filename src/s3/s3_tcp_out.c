/*
 * The in-band TCP/IP stack, output side: checksums, IPv4 and TCP segment
 * building, output and segmentation, retransmission and RST; see s3_tcp.h
 * and s3_tcp_priv.h. Every frame is built in t->frame and handed to
 * ops->send_frame() at once.
 */
#include "s3/s3_tcp.h"

#include <string.h>

#include "s3/s3_tcp_priv.h"

/* ---- checksums (RFC 1071) ------------------------------------------------------ */

uint64_t s3_tcp_csum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	return (uint64_t)(src >> 16) + (src & 0xffffu) + (dst >> 16) + (dst & 0xffffu) + proto +
	       (uint64_t)len;
}

/* ---- IPv4 ----------------------------------------------------------------------- */

void s3_tcp_ip_output(struct s3_tcp *t, const uint8_t dmac[S3_ETH_ALEN], uint32_t dip,
		      uint8_t proto, size_t l4len, bool df)
{
	struct s3_eth_hdr *eh = (struct s3_eth_hdr *)t->frame;
	struct s3_ip_hdr *ih = (struct s3_ip_hdr *)(t->frame + sizeof(*eh));
	size_t flen = S3_ETH_IP_HLEN + l4len;

	memcpy(eh->dst, dmac, S3_ETH_ALEN);
	memcpy(eh->src, t->cfg.mac, S3_ETH_ALEN);
	eh->type = be16_set(S3_ETHERTYPE_IPV4);
	ih->ver_ihl = s3_ip_ver_ihl(4, 5);
	ih->tos = 0;
	ih->tot_len = be16_set((uint16_t)(sizeof(*ih) + l4len));
	ih->id = be16_set(t->ip_id++);
	ih->frag = be16_set(df ? S3_IP_FLAG_DF : 0);
	ih->ttl = S3_IP_DEFAULT_TTL;
	ih->proto = proto;
	ih->csum = be16_set(0);
	ih->src = be32_set(t->cfg.ip);
	ih->dst = be32_set(dip);
	ih->csum = be16_set(inet_csum_fold(inet_csum_add(0, ih, sizeof(*ih))));
	if (flen < S3_ETH_MIN_FRAME) {
		memset(t->frame + flen, 0, S3_ETH_MIN_FRAME - flen);
		flen = S3_ETH_MIN_FRAME;
	}
	t->stats.frames_out++;
	t->ops.send_frame(t->ops.ctx, t->frame, flen);
}

/* ---- TCP segments ------------------------------------------------------------------ */

/* Options (optlen bytes) and payload (dlen) are already at their places in t->frame. */
static void tcp_emit(struct s3_tcp *t, const uint8_t *dmac, uint32_t dip, uint16_t lport,
		     uint16_t rport, uint32_t seq, uint32_t ack, unsigned flags, uint16_t wnd,
		     size_t optlen, size_t dlen)
{
	struct s3_tcp_hdr *th = (struct s3_tcp_hdr *)(t->frame + S3_ETH_IP_HLEN);
	size_t l4 = sizeof(*th) + optlen + dlen;

	th->sport = be16_set(lport);
	th->dport = be16_set(rport);
	th->seq = be32_set(seq);
	th->ack = be32_set(ack);
	th->off_flags = s3_tcph_off_flags((unsigned)((sizeof(*th) + optlen) / 4), flags);
	th->wnd = be16_set(wnd);
	th->csum = be16_set(0);
	th->urp = be16_set(0);
	th->csum = be16_set(inet_csum_fold(s3_tcp_csum_pseudo(t->cfg.ip, dip, S3_IP_PROTO_TCP, l4) +
					     inet_csum_add(0, th, l4)));
	s3_tcp_ip_output(t, dmac, dip, S3_IP_PROTO_TCP, l4, true);
}

/* A segment of a connection: acknowledges rcv_nxt and advertises the window, when ACK is set. */
static void pcb_emit(struct s3_tcp *t, struct s3_tcp_pcb *pcb, uint32_t seq, unsigned flags,
		     size_t optlen, size_t dlen)
{
	uint32_t wnd = 0, ack = 0;

	if (flags & S3_TCPF_ACK) {
		uint32_t edge;

		ack = pcb->rcv_nxt;
		wnd = s3_tcp_rcv_wnd(pcb);
		edge = pcb->rcv_nxt + wnd;
		if (SEQ_GT(edge, pcb->rcv_adv))
			pcb->rcv_adv = edge;
		else
			wnd = pcb->rcv_adv - pcb->rcv_nxt;  /* the right edge never moves left */
		pcb->ack_now = false;
	}
	tcp_emit(t, pcb->rmac, pcb->rip, t->cfg.port, pcb->rport, seq, ack, flags,
		 (uint16_t)(wnd > S3_TCP_WINDOW ? S3_TCP_WINDOW : wnd), optlen, dlen);
}

void s3_tcp_send_rst_reply(struct s3_tcp *t, const struct s3_tcp_seg *s)
{
	if (s->flags & S3_TCPF_RST)
		return;
	if (s->flags & S3_TCPF_ACK) {
		tcp_emit(t, s->rmac, s->rip, s->lport, s->rport, s->ack, 0, S3_TCPF_RST, 0, 0, 0);
	} else {
		uint32_t ack = s->seq + (uint32_t)s->len + ((s->flags & S3_TCPF_SYN) ? 1 : 0) +
			       ((s->flags & S3_TCPF_FIN) ? 1 : 0);

		tcp_emit(t, s->rmac, s->rip, s->lport, s->rport, 0, ack, S3_TCPF_RST | S3_TCPF_ACK, 0, 0, 0);
	}
	t->stats.resets_sent++;
}

void s3_tcp_send_rst(struct s3_tcp *t, struct s3_tcp_pcb *pcb)
{
	pcb_emit(t, pcb, pcb->snd_max, S3_TCPF_RST | S3_TCPF_ACK, 0, 0);
	t->stats.resets_sent++;
}

void s3_tcp_send_ack(struct s3_tcp *t, struct s3_tcp_pcb *pcb)
{
	/* snd_max, not a rewound snd_nxt: the peer has seen up to there and must accept this. */
	pcb_emit(t, pcb, pcb->snd_max, S3_TCPF_ACK, 0, 0);
}

void s3_tcp_send_keepalive(struct s3_tcp *t, struct s3_tcp_pcb *pcb)
{
	pcb_emit(t, pcb, pcb->snd_una - 1, S3_TCPF_ACK, 0, 0);
}

void s3_tcp_send_synack(struct s3_tcp *t, struct s3_tcp_pcb *pcb)
{
	struct s3_tcp_opt_mss *opt = (struct s3_tcp_opt_mss *)(t->frame + S3_ETH_IP_TCP_HLEN);

	opt->kind = S3_TCPOPT_MSS;
	opt->len = S3_TCPOPT_MSS_LEN;
	opt->mss = be16_set(S3_TCP_MSS);
	pcb_emit(t, pcb, pcb->iss, S3_TCPF_SYN | S3_TCPF_ACK, sizeof(*opt), 0);
	pcb->snd_nxt = pcb->iss + 1;
	if (SEQ_GT(pcb->snd_nxt, pcb->snd_max))
		pcb->snd_max = pcb->snd_nxt;
}

/* The payload (len bytes) is in place: sends it at snd_nxt. */
static void send_data(struct s3_tcp *t, struct s3_tcp_pcb *pcb, size_t len, unsigned flags)
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
		s3_tcp_timer_restart(t, pcb);
}

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

void s3_tcp_output(struct s3_tcp *t, struct s3_tcp_pcb *pcb, bool probe)
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
			memcpy(t->frame + S3_ETH_IP_TCP_HLEN + len, p, n);
			len += n;
		}
		if (len == 0)
			break;
		/* PSH on the last segment of this burst: out of data, or out of window. */
		more = len == limit && usable > len && t->ops.peek(pcb->app, (uint64_t)off + len, &p) > 0;
		send_data(t, pcb, len, S3_TCPF_ACK | (more ? 0 : S3_TCPF_PSH));
	}

	/* Our FIN once the application is done and everything it sent is acknowledged. */
	if (data_state && !pcb->fin_sent && pcb->snd_una == pcb->snd_max &&
	    t->ops.wants_close(pcb->app) && t->ops.peek(pcb->app, 0, &p) == 0) {
		pcb->fin_sent = true;
		pcb->fin_seq = pcb->snd_nxt;
		pcb->state = pcb->state == TCPS_ESTABLISHED ? TCPS_FIN_WAIT_1 : TCPS_LAST_ACK;
	}
	if (pcb->fin_sent && pcb->snd_nxt == pcb->fin_seq) {
		pcb_emit(t, pcb, pcb->fin_seq, S3_TCPF_FIN | S3_TCPF_ACK, 0, 0);
		pcb->snd_nxt = pcb->fin_seq + 1;
		if (SEQ_GT(pcb->snd_nxt, pcb->snd_max))
			pcb->snd_max = pcb->snd_nxt;
		else
			t->stats.retransmits++;
		if (!pcb->rto_on)
			s3_tcp_timer_restart(t, pcb);
	}

	/* Nothing in flight, bytes waiting: the window is closed, the timer will probe it. */
	if (data_state && !pcb->fin_sent && !pcb->rto_on && pcb->snd_una == pcb->snd_max &&
	    t->ops.peek(pcb->app, 0, &p) > 0)
		s3_tcp_timer_restart(t, pcb);
}

void s3_tcp_rto_expired(struct s3_tcp *t, struct s3_tcp_pcb *pcb)
{
	bool data_state = pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_CLOSE_WAIT;

	if (pcb->snd_una != pcb->snd_max) {
		/* SYN, data or FIN unacknowledged: go back to the oldest. */
		if (pcb->retries >= S3_TCP_MAX_RETRIES) {
			s3_tcp_abort(t, pcb);
			return;
		}
		pcb->retries++;
		if (pcb->backoff < S3_TCP_MAX_BACKOFF)
			pcb->backoff++;
		s3_tcp_timer_restart(t, pcb);
		if (pcb->state == TCPS_SYN_RCVD) {
			t->stats.retransmits++;
			s3_tcp_send_synack(t, pcb);
			return;
		}
		pcb->snd_nxt = pcb->snd_una;
		pcb->cwnd = pcb->mss;
		s3_tcp_output(t, pcb, true);
		return;
	}
	s3_tcp_timer_stop(pcb);
	if (data_state && !pcb->fin_sent && pcb->snd_wnd == 0) {
		/* Persist: one byte into the closed window; its ACK tells whether it opened. */
		if (pcb->backoff < S3_TCP_MAX_BACKOFF)
			pcb->backoff++;
		s3_tcp_output(t, pcb, true);
	}
}

void s3_tcp_abort(struct s3_tcp *t, struct s3_tcp_pcb *pcb)
{
	s3_tcp_send_rst(t, pcb);
	s3_tcp_pcb_release(t, pcb);
}
