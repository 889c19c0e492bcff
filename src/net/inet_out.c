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

/* The Ethernet and IPv4 headers in front of l4len bytes; returns the frame's length (unpadded). */
static size_t ip_header(struct inet_host *t, const uint8_t dmac[NET_ETH_ALEN], uint32_t dip, uint8_t proto,
			size_t l4len, bool df)
{
	struct net_eth_hdr *eh = (struct net_eth_hdr *)t->frame;
	struct net_ip_hdr *ih = (struct net_ip_hdr *)(t->frame + sizeof(*eh));

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
	return NET_ETH_IP_HLEN + l4len;
}

void inet_ip_output(struct inet_host *t, const uint8_t dmac[NET_ETH_ALEN], uint32_t dip,
		      uint8_t proto, size_t l4len, bool df)
{
	size_t flen = ip_header(t, dmac, dip, proto, l4len, df);

	if (flen < NET_ETH_MIN_FRAME) {
		memset(t->frame + flen, 0, NET_ETH_MIN_FRAME - flen);
		flen = NET_ETH_MIN_FRAME;
	}
	t->stats.frames_out++;
	t->ops.send_frame(t->ops.ctx, t->frame, flen);
}

/* ---- TCP segments ------------------------------------------------------------------ */

/*
 * Options (optlen bytes) and payload (dlen) are already at their places in
 * t->frame. gso: 0 for one segment; else the payload is a super-segment of
 * segments of gso bytes (ops.send_super), its checksum left partial.
 */
static void tcp_emit_gso(struct inet_host *t, const uint8_t *dmac, uint32_t dip, uint16_t lport,
			 uint16_t rport, uint32_t seq, uint32_t ack, unsigned flags, uint16_t wnd,
			 size_t optlen, size_t dlen, uint16_t gso)
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
	if (gso != 0) {
		/* The pseudo-header sum alone, not inverted: the cut adds each segment's bytes to it. */
		unsigned segs = (unsigned)((dlen + gso - 1) / gso);
		size_t flen;

		th->csum = be16_set((uint16_t)~inet_csum_fold(inet_csum_pseudo(t->cfg.ip, dip, NET_IP_PROTO_TCP, l4)));
		flen = ip_header(t, dmac, dip, NET_IP_PROTO_TCP, l4, true);
		t->ip_id = (uint16_t)(t->ip_id + segs - 1); /* the cut numbers the rest */
		t->stats.frames_out++;
		t->stats.super_out++;
		t->stats.super_segs += segs;
		/* The headers from t->frame, the payload where pieces() found it. */
		t->super[0].iov_base = t->frame;
		t->super[0].iov_len = flen - dlen;
		t->ops.send_super(t->ops.ctx, t->super, t->super_n, gso);
		return;
	}
	th->csum = be16_set(inet_csum_fold(inet_csum_pseudo(t->cfg.ip, dip, NET_IP_PROTO_TCP, l4) +
					     inet_csum_add(0, th, l4)));
	inet_ip_output(t, dmac, dip, NET_IP_PROTO_TCP, l4, true);
}

static void tcp_emit(struct inet_host *t, const uint8_t *dmac, uint32_t dip, uint16_t lport,
		     uint16_t rport, uint32_t seq, uint32_t ack, unsigned flags, uint16_t wnd,
		     size_t optlen, size_t dlen)
{
	tcp_emit_gso(t, dmac, dip, lport, rport, seq, ack, flags, wnd, optlen, dlen, 0);
}

/* The option bytes on our data segments (and every other segment of the connection but the SYN-ACK). */
static size_t data_optlen(const struct inet_pcb *pcb)
{
	return pcb->ts_ok ? INET_TCP_TS_SPACE : 0;
}

static void put_ts(uint8_t *o, uint32_t tsval, uint32_t tsecr)
{
	struct net_tcp_opt_ts *ts = (struct net_tcp_opt_ts *)(o + 2);

	o[0] = NET_TCPOPT_NOP;
	o[1] = NET_TCPOPT_NOP;
	ts->kind = NET_TCPOPT_TS;
	ts->len = NET_TCPOPT_TS_LEN;
	ts->tsval = be32_set(tsval);
	ts->tsecr = be32_set(tsecr);
}

/*
 * SACK blocks for the out-of-order data held, the range that last grew first
 * (RFC 2018 §4), as many as fit after o_used option bytes. Returns their bytes.
 */
static size_t put_sack(struct inet_host *t, struct inet_pcb *pcb, uint8_t *o, size_t o_used)
{
	struct net_tcp_sack_block *b = (struct net_tcp_sack_block *)(o + 4);
	size_t room = (NET_TCPOPT_SPACE - o_used - 4) / NET_TCPOPT_SACK_BLOCK_LEN;
	bool used[INET_TCP_OOO_RANGES] = { false };
	unsigned k = 0;

	while (k < room && k < pcb->ooo_n) {
		unsigned best = INET_TCP_OOO_RANGES;

		for (unsigned i = 0; i < pcb->ooo_n; i++)
			if (!used[i] && (best == INET_TCP_OOO_RANGES || pcb->ooo[i].stamp > pcb->ooo[best].stamp))
				best = i;
		used[best] = true;
		b[k].left = be32_set(pcb->ooo[best].start);
		b[k].right = be32_set(pcb->ooo[best].end);
		k++;
	}
	o[0] = NET_TCPOPT_NOP;
	o[1] = NET_TCPOPT_NOP;
	o[2] = NET_TCPOPT_SACK;
	o[3] = (uint8_t)(2 + k * NET_TCPOPT_SACK_BLOCK_LEN);
	t->stats.sack_blocks_out += k;
	return 4 + k * NET_TCPOPT_SACK_BLOCK_LEN;
}

/*
 * The window field for an ACK now. The right edge never moves left: when the
 * buffer's room, rounded down to the scale, falls short of the edge already
 * announced, that edge is announced again, rounded up. The rounding is not
 * recorded: rcv_adv never passes the buffer's end (or a window of a few bytes
 * would be announced again and again, never closing), and what a peer sends
 * into those last bytes is trimmed.
 */
static uint16_t adv_window(struct inet_pcb *pcb, bool syn)
{
	unsigned shift = syn ? 0 : pcb->rcv_shift;
	uint32_t wnd = inet_rcv_wnd(pcb), field = wnd >> shift;

	if (field > INET_TCP_WINDOW)
		field = INET_TCP_WINDOW;
	if (SEQ_GEQ(pcb->rcv_nxt + (field << shift), pcb->rcv_adv)) {
		pcb->rcv_adv = pcb->rcv_nxt + (field << shift);
	} else {
		wnd = pcb->rcv_adv - pcb->rcv_nxt;
		field = (wnd + (1u << shift) - 1) >> shift;
		if (field > INET_TCP_WINDOW)
			field = INET_TCP_WINDOW;
	}
	return (uint16_t)field;
}

/*
 * A segment of a connection: acknowledges rcv_nxt and advertises the window
 * when ACK is set. optlen bytes of options are in place, or, when optlen is
 * SIZE_MAX, the connection's own are written here (timestamps, and SACK
 * blocks on a segment without payload when sack is set); the payload of dlen
 * bytes is already after them.
 */
static void pcb_emit_gso(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, unsigned flags,
			 size_t optlen, size_t dlen, bool sack, uint16_t gso)
{
	uint8_t *o = t->frame + NET_ETH_IP_TCP_HLEN;
	uint16_t wnd = 0;
	uint32_t ack = 0;

	if (flags & NET_TCPF_ACK) {
		ack = pcb->rcv_nxt;
		wnd = adv_window(pcb, (flags & NET_TCPF_SYN) != 0);
		pcb->last_ack_sent = pcb->rcv_nxt;
		pcb->ack_now = false;
		pcb->ack_later = false;
	}
	if (optlen == SIZE_MAX) {
		optlen = 0;
		if (pcb->ts_ok && !(flags & NET_TCPF_RST)) {
			put_ts(o, inet_ts_now(t, pcb), pcb->ts_recent);
			optlen = INET_TCP_TS_SPACE;
		}
		if (sack && dlen == 0 && pcb->sack_ok && pcb->ooo_n > 0 && !(flags & NET_TCPF_RST))
			optlen += put_sack(t, pcb, o + optlen, optlen);
	}
	tcp_emit_gso(t, pcb->rmac, pcb->rip, t->cfg.port, pcb->rport, seq, ack, flags, wnd, optlen, dlen, gso);
}

static void pcb_emit(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, unsigned flags,
		     size_t optlen, size_t dlen, bool sack)
{
	pcb_emit_gso(t, pcb, seq, flags, optlen, dlen, sack, 0);
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
	pcb_emit(t, pcb, pcb->snd_max, NET_TCPF_RST | NET_TCPF_ACK, SIZE_MAX, 0, false);
	t->stats.resets_sent++;
}

void inet_send_ack(struct inet_host *t, struct inet_pcb *pcb)
{
	/* snd_max, not a rewound snd_nxt: the peer has seen up to there and must accept this. */
	pcb_emit(t, pcb, pcb->snd_max, NET_TCPF_ACK, SIZE_MAX, 0, true);
}

void inet_send_keepalive(struct inet_host *t, struct inet_pcb *pcb)
{
	pcb_emit(t, pcb, pcb->snd_una - 1, NET_TCPF_ACK, SIZE_MAX, 0, false);
}

/*
 * The SYN-ACK: MSS, then what the peer's SYN offered and we agreed to, laid
 * out as Linux does (SACK-permitted beside the timestamps, NOPs to align).
 */
void inet_send_synack(struct inet_host *t, struct inet_pcb *pcb)
{
	uint8_t *o = t->frame + NET_ETH_IP_TCP_HLEN;
	struct net_tcp_opt_mss *mss = (struct net_tcp_opt_mss *)o;
	size_t n = sizeof(*mss);

	mss->kind = NET_TCPOPT_MSS;
	mss->len = NET_TCPOPT_MSS_LEN;
	mss->mss = be16_set(INET_TCP_MSS);
	if (pcb->ts_ok) {
		put_ts(o + n, inet_ts_now(t, pcb), pcb->ts_recent);
		if (pcb->sack_ok) {
			o[n] = NET_TCPOPT_SACK_PERM;
			o[n + 1] = NET_TCPOPT_SACK_PERM_LEN;
		}
		n += INET_TCP_TS_SPACE;
	} else if (pcb->sack_ok) {
		o[n] = NET_TCPOPT_NOP;
		o[n + 1] = NET_TCPOPT_NOP;
		o[n + 2] = NET_TCPOPT_SACK_PERM;
		o[n + 3] = NET_TCPOPT_SACK_PERM_LEN;
		n += 4;
	}
	if (pcb->ws_ok) {
		struct net_tcp_opt_ws *ws = (struct net_tcp_opt_ws *)(o + n + 1);

		o[n] = NET_TCPOPT_NOP;
		ws->kind = NET_TCPOPT_WS;
		ws->len = NET_TCPOPT_WS_LEN;
		ws->shift = pcb->rcv_shift;
		n += 4;
	}
	pcb_emit(t, pcb, pcb->iss, NET_TCPF_SYN | NET_TCPF_ACK, n, 0, false);
	pcb->snd_nxt = pcb->iss + 1;
	if (SEQ_GT(pcb->snd_nxt, pcb->snd_max))
		pcb->snd_max = pcb->snd_nxt;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The application's next piece of output at off, at most room bytes of it (*p: where); 0 when none. */
static size_t peek_at(struct inet_host *t, struct inet_pcb *pcb, uint64_t off, size_t room, const uint8_t **p)
{
	size_t n;

	*p = NULL;
	n = t->ops.peek(pcb->app, off, p);
	if (n == 0 || *p == NULL)
		return 0;
	return n < room ? n : room;
}

/* Copies up to max bytes of the application's output from seq into the frame; returns how many. */
static size_t fill(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, size_t max)
{
	uint8_t *dst = t->frame + NET_ETH_IP_TCP_HLEN + data_optlen(pcb);
	uint64_t off = seq - pcb->snd_una;
	const uint8_t *p;
	size_t len = 0, n;

	/* Fill the segment from as many pieces as the application has, each copied at once. */
	while (len < max && (n = peek_at(t, pcb, off + len, max - len, &p)) > 0) {
		memcpy(dst + len, p, n);
		len += n;
	}
	return len;
}

/*
 * Up to max bytes of the application's output from seq, by reference, into
 * t->super[1..] (t->super_n counts them and the headers' piece); returns how
 * many. Out of pieces before max, the bytes end at a whole segment.
 */
static size_t pieces(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, size_t max, uint32_t smss)
{
	uint64_t off = seq - pcb->snd_una;
	const uint8_t *p;
	size_t len = 0, cut, n;
	unsigned k = 1;

	while (len < max && k <= INET_TCP_SUPER_PIECES && (n = peek_at(t, pcb, off + len, max - len, &p)) > 0) {
		t->super[k].iov_base = (void *)p;
		t->super[k].iov_len = n;
		k++;
		len += n;
	}
	if (len < max && k > INET_TCP_SUPER_PIECES) {
		/* More to send than pieces to hold it: a short segment here would be one the loop never sends. */
		for (cut = len % smss; cut > 0; k--) {
			n = t->super[k - 1].iov_len;
			if (n > cut) {
				t->super[k - 1].iov_len = n - cut;
				break;
			}
			cut -= n;
		}
		len -= len % smss;
	}
	t->super_n = k;
	return len;
}

/* The payload (len bytes) is in place: sends it at seq (gso: as a super-segment of gso-byte segments). */
static void send_seg_gso(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, size_t len, unsigned flags,
			 uint16_t gso)
{
	pcb_emit_gso(t, pcb, seq, flags, SIZE_MAX, len, false, gso);
	if (SEQ_LT(seq, pcb->snd_max))
		t->stats.retransmits++;
	if (SEQ_GT(seq + (uint32_t)len, pcb->snd_max)) {
		t->stats.bytes_out += seq + (uint32_t)len - pcb->snd_max;
		pcb->snd_max = seq + (uint32_t)len;
	}
	if (!pcb->rto_on)
		inet_timer_restart(t, pcb);
}

static void send_seg(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, size_t len, unsigned flags)
{
	send_seg_gso(t, pcb, seq, len, flags, 0);
}

/*
 * The payload one super-segment may carry: whole segments of smss bytes, in
 * an IPv4 packet of at most 65535 bytes. 0 when there is no send_super, or
 * for data that is not new (a go-back resends segment by segment).
 */
static size_t super_room(const struct inet_host *t, const struct inet_pcb *pcb, uint32_t smss)
{
	size_t room = 65535 - sizeof(struct net_ip_hdr) - sizeof(struct net_tcp_hdr) - data_optlen(pcb);

	if (t->ops.send_super == NULL || pcb->snd_nxt != pcb->snd_max || pcb->in_recovery || smss == 0)
		return 0;
	return room / smss * smss;
}

/* Recovery: the gaps the peer reported (or the first unacknowledged segment), each sent once. */
static void output_rtx(struct inet_host *t, struct inet_pcb *pcb)
{
	uint32_t smss = inet_cc_smss(pcb), seq, len;

	while (pcb->in_recovery) {
		size_t n;

		if (!pcb->rtx_force && pcb->sack_ok && inet_cc_pipe(pcb) + smss > pcb->cwnd)
			break;                          /* RFC 6675: only while a segment fits beside the pipe */
		if (!inet_cc_next_rtx(pcb, smss, &seq, &len))
			break;
		n = fill(t, pcb, seq, len);
		if (n == 0)
			break;
		send_seg(t, pcb, seq, n, NET_TCPF_ACK);
		pcb->rtx_nxt = seq + (uint32_t)n;
		pcb->rtx_force = false;
	}
}

void inet_output(struct inet_host *t, struct inet_pcb *pcb, bool probe)
{
	bool data_state = pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_CLOSE_WAIT;
	uint32_t smss = inet_cc_smss(pcb);
	const uint8_t *p;

	if (pcb->app == NULL)
		return;
	if (data_state && !pcb->fin_sent) {
		output_rtx(t, pcb);
		/*
		 * Whether the window binds is decided anew by this output; until the next, every ACK
		 * of data sent while it bound grows the window, however many arrive in one batch.
		 */
		pcb->cwnd_limited = false;
	}
	while (data_state && !pcb->fin_sent) {
		uint32_t off, usable, rwnd_room, ss, se;
		size_t super;
		uint32_t rwnd_edge = pcb->snd_una + pcb->snd_wnd;
		bool cwnd_binds;
		size_t limit, len;
		bool more;

		/* Going back after a timeout: what the peer SACKed is not sent again. */
		if (SEQ_LT(pcb->snd_nxt, pcb->snd_max) && inet_sb_next(pcb, pcb->snd_nxt, &ss, &se) &&
		    SEQ_LEQ(ss, pcb->snd_nxt)) {
			pcb->snd_nxt = se;
			continue;
		}
		off = pcb->snd_nxt - pcb->snd_una;
		rwnd_room = SEQ_GT(rwnd_edge, pcb->snd_nxt) ? rwnd_edge - pcb->snd_nxt : 0;
		if (pcb->in_recovery && pcb->sack_ok) {
			uint32_t pipe = inet_cc_pipe(pcb);

			usable = pipe < pcb->cwnd ? pcb->cwnd - pipe : 0;
		} else {
			uint32_t edge = pcb->snd_una + pcb->cwnd;

			usable = SEQ_GT(edge, pcb->snd_nxt) ? edge - pcb->snd_nxt : 0;
		}
		cwnd_binds = usable < rwnd_room;
		usable = min32(usable, rwnd_room);
		if (usable == 0 && probe && pcb->snd_nxt == pcb->snd_una)
			usable = 1;                 /* a zero-window probe */
		probe = false;
		/*
		 * The congestion window alone never cuts a segment short while
		 * something is in flight: its ACK opens room for a whole one.
		 */
		if (cwnd_binds && usable < smss && pcb->snd_nxt != pcb->snd_una)
			usable = 0;
		if (usable == 0) {
			if (cwnd_binds && t->ops.peek(pcb->app, off, &p) > 0)
				pcb->cwnd_limited = true;
			break;
		}
		limit = min32(smss, usable);
		super = super_room(t, pcb, smss);
		if (super > limit && usable > smss) {
			/*
			 * Several segments at once: as many whole ones as the windows
			 * allow, and after them the short one the receive window (not
			 * the congestion window) may leave, as the loop would send them.
			 */
			limit = usable < super ? usable : (uint32_t)super;
			if (cwnd_binds && limit < super)
				limit -= limit % smss;
		}
		if (SEQ_LT(pcb->snd_nxt, pcb->snd_max) && inet_sb_next(pcb, pcb->snd_nxt, &ss, &se) &&
		    ss - pcb->snd_nxt < limit)
			limit = ss - pcb->snd_nxt;  /* up to the next range the peer holds */
		len = limit > smss ? pieces(t, pcb, pcb->snd_nxt, limit, smss) : 0;
		if (len <= smss) {
			/* One segment: copied into the frame (a super-segment's pieces are not). */
			limit = min32(limit, smss);
			len = fill(t, pcb, pcb->snd_nxt, limit);
		}
		if (len == 0)
			break;
		/* PSH on the last segment of this burst: out of data, or out of window. */
		more = usable > len && t->ops.peek(pcb->app, (uint64_t)off + len, &p) > 0;
		send_seg_gso(t, pcb, pcb->snd_nxt, len, NET_TCPF_ACK | (more ? 0 : NET_TCPF_PSH),
			     len > smss ? (uint16_t)smss : 0);
		pcb->snd_nxt += (uint32_t)len;
	}

	/* Our FIN once the application is done and everything it sent is acknowledged. */
	if (data_state && !pcb->fin_sent && pcb->snd_una == pcb->snd_max &&
	    t->ops.wants_close(pcb->app) && t->ops.peek(pcb->app, 0, &p) == 0) {
		pcb->fin_sent = true;
		pcb->fin_seq = pcb->snd_nxt;
		pcb->state = pcb->state == TCPS_ESTABLISHED ? TCPS_FIN_WAIT_1 : TCPS_LAST_ACK;
	}
	if (pcb->fin_sent && pcb->snd_nxt == pcb->fin_seq) {
		pcb_emit(t, pcb, pcb->fin_seq, NET_TCPF_FIN | NET_TCPF_ACK, SIZE_MAX, 0, false);
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

void inet_tlp_expired(struct inet_host *t, struct inet_pcb *pcb)
{
	uint32_t smss = inet_cc_smss(pcb), rwnd_edge = pcb->snd_una + pcb->snd_wnd, seq, len;
	bool data_state = pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_CLOSE_WAIT;
	size_t n;

	pcb->tlp_on = false;
	if (!data_state || pcb->app == NULL || pcb->fin_sent || pcb->snd_una == pcb->snd_max ||
	    SEQ_LT(pcb->snd_nxt, pcb->snd_max))
		return;
	if (pcb->in_recovery) {
		/*
		 * Silence in recovery: a retransmission was lost too (only a timeout
		 * would tell otherwise). The gaps still not SACKed go again, paced by
		 * the pipe, without the timeout's collapse of the window.
		 */
		t->stats.tlp_probes++;
		pcb->rtx_nxt = pcb->snd_una;
		pcb->rtx_force = true;
		inet_output(t, pcb, false);
		return;
	}
	/* New data if the peer's window has room (RFC 8985 §7.3), else the last segment again. */
	seq = pcb->snd_max;
	len = SEQ_GT(rwnd_edge, seq) ? min32(smss, rwnd_edge - seq) : 0;
	n = len > 0 ? fill(t, pcb, seq, len) : 0;
	if (n == 0) {
		len = min32(smss, pcb->snd_max - pcb->snd_una);
		seq = pcb->snd_max - len;
		n = fill(t, pcb, seq, len);
		if (n == 0)
			return;
	}
	t->stats.tlp_probes++;
	pcb->tlp_out = true;
	send_seg(t, pcb, seq, n, NET_TCPF_ACK | NET_TCPF_PSH);
	if (SEQ_GT(pcb->snd_max, pcb->snd_nxt))
		pcb->snd_nxt = pcb->snd_max;
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
		t->stats.timeouts++;
		inet_cc_timeout(pcb);
		pcb->snd_nxt = pcb->snd_una;
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
