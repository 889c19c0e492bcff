/*
 * The in-band TCP/IP stack, input side: frame validation, demultiplexing,
 * ARP, ICMP echo, IPv6 neighbour discovery for the link-local address and
 * the TCP state machine; see inet.h and inet_priv.h.
 * Every field read from a frame is checked against the frame's length first.
 */
#include "net/inet.h"

#include <string.h>

#include "net/inet_priv.h"
#include "net/net_arp.h"
#include "net/net_nd.h"

static const uint8_t bcast_mac[NET_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* ---- ARP ---------------------------------------------------------------------- */

static void arp_input(struct inet_host *t, const uint8_t *p, size_t len)
{
	struct net_arp_info a;

	if (net_arp_parse(p, len, &a) != 0) {
		t->stats.drop_bad_eth++;
		return;
	}
	/* Learn the sender (not from probes with sender 0.0.0.0, nor someone claiming our address). */
	if (a.spa != 0 && a.spa != t->cfg.ip)
		inet_arp_learn(t, a.spa, a.sha);
	if (a.oper != NET_ARP_OP_REQUEST || a.tpa != t->cfg.ip || a.spa == t->cfg.ip)
		return;
	t->stats.arp_replies++;
	t->stats.frames_out++;
	t->ops.send_frame(t->ops.ctx, t->frame,
			  net_arp_build(t->frame, INET_TCP_MAX_FRAME, NET_ARP_OP_REPLY, t->cfg.mac, t->cfg.ip, a.sha,
					a.spa));
}

/* ---- ICMP --------------------------------------------------------------------- */

static void icmp_input(struct inet_host *t, const uint8_t *smac, uint32_t sip, const uint8_t *p, size_t len)
{
	const struct net_icmp_echo *eq = (const struct net_icmp_echo *)p;
	struct net_icmp_echo *er = (struct net_icmp_echo *)(t->frame + NET_ETH_IP_HLEN);
	const size_t cap = INET_TCP_MAX_FRAME - NET_ETH_IP_HLEN - sizeof(*er);
	size_t dlen;

	if (len < sizeof(*eq)) {
		t->stats.drop_bad_ip++;
		return;
	}
	if (inet_csum_fold(inet_csum_add(0, p, len)) != 0) {
		t->stats.drop_bad_csum++;
		return;
	}
	if (eq->type != NET_ICMP_ECHO_REQUEST || eq->code != 0) {
		t->stats.drop_not_mine++;   /* nothing else is for us */
		return;
	}
	dlen = len - sizeof(*eq);
	if (dlen > cap)
		dlen = cap;
	er->type = NET_ICMP_ECHO_REPLY;
	er->code = 0;
	er->csum = be16_set(0);
	er->id = eq->id;
	er->seq = eq->seq;
	memcpy(t->frame + NET_ETH_IP_HLEN + sizeof(*er), p + sizeof(*eq), dlen);
	er->csum = be16_set(inet_csum_fold(inet_csum_add(0, er, sizeof(*er) + dlen)));
	t->stats.icmp_echo_replies++;
	inet_ip_output(t, smac, sip, NET_IP_PROTO_ICMP, sizeof(*er) + dlen, false);
}

/* ---- TCP options ---------------------------------------------------------------- */

bool inet_parse_options(const uint8_t *opt, size_t len, struct inet_opts *o)
{
	size_t i = 0;

	memset(o, 0, sizeof(*o));
	o->mss = -1;
	o->ws = -1;
	while (i < len) {
		uint8_t kind = opt[i], olen;
		const uint8_t *v;

		if (kind == NET_TCPOPT_EOL)
			break;
		if (kind == NET_TCPOPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2)
			return false;           /* no room for the length byte */
		olen = opt[i + 1];
		if (olen < 2 || olen > len - i)
			return false;           /* runs past the header, or cannot advance */
		v = opt + i;
		switch (kind) {
		case NET_TCPOPT_MSS:
			if (olen != NET_TCPOPT_MSS_LEN)
				return false;
			o->mss = be16_get(((const struct net_tcp_opt_mss *)v)->mss);
			break;
		case NET_TCPOPT_WS:
			if (olen != NET_TCPOPT_WS_LEN)
				return false;
			o->ws = v[2] > NET_TCPOPT_WS_MAX ? NET_TCPOPT_WS_MAX : v[2];
			break;
		case NET_TCPOPT_SACK_PERM:
			if (olen != NET_TCPOPT_SACK_PERM_LEN)
				return false;
			o->sack_perm = true;
			break;
		case NET_TCPOPT_SACK: {
			const struct net_tcp_sack_block *blk = (const struct net_tcp_sack_block *)(v + 2);

			if (olen < 2 + NET_TCPOPT_SACK_BLOCK_LEN || (olen - 2) % NET_TCPOPT_SACK_BLOCK_LEN != 0)
				return false;
			/* 40 option bytes hold at most four blocks, so every one fits. */
			o->nsack = (unsigned)(olen - 2) / NET_TCPOPT_SACK_BLOCK_LEN;
			for (unsigned k = 0; k < o->nsack; k++) {
				o->sack[k][0] = be32_get(blk[k].left);
				o->sack[k][1] = be32_get(blk[k].right);
			}
			break;
		}
		case NET_TCPOPT_TS: {
			const struct net_tcp_opt_ts *ts = (const struct net_tcp_opt_ts *)v;

			if (olen != NET_TCPOPT_TS_LEN)
				return false;
			o->ts = true;
			o->tsval = be32_get(ts->tsval);
			o->tsecr = be32_get(ts->tsecr);
			break;
		}
		default:
			break;                  /* unknown kinds are skipped by their length */
		}
		i += olen;
	}
	return true;
}

/* ---- TCP state machine ---------------------------------------------------------- */

/* A SYN to our port with no connection: SYN_RCVD, SYN-ACK. */
static void listen_input(struct inet_host *t, const struct inet_seg *s)
{
	struct inet_pcb *pcb;
	int mss = s->opt.mss;

	if (s->flags & NET_TCPF_RST)
		return;
	if (s->flags & NET_TCPF_ACK) {
		inet_send_rst_reply(t, s);
		return;
	}
	if (!(s->flags & NET_TCPF_SYN)) {
		t->stats.drop_bad_tcp++;        /* RFC 793: no SYN, no ACK in LISTEN: drop */
		return;
	}
	if (inet_count_live(t) >= INET_TCP_MAX_CONNS || (pcb = inet_pcb_alloc(t)) == NULL) {
		t->stats.conns_refused++;
		inet_send_rst_reply(t, s);
		return;
	}
	if (mss < 0)
		mss = INET_TCP_MIN_MSS;
	if (mss < INET_TCP_MIN_MSS)
		mss = INET_TCP_MIN_MSS;
	if (mss > INET_TCP_MSS)
		mss = INET_TCP_MSS;

	memset(pcb, 0, sizeof(*pcb));
	pcb->state = TCPS_SYN_RCVD;
	pcb->rip = s->rip;
	pcb->rport = s->rport;
	memcpy(pcb->rmac, s->rmac, NET_ETH_ALEN);
	pcb->mss = (uint16_t)mss;
	/* Each option only if the SYN offered it (RFC 7323 §1.3, RFC 2018 §2). */
	pcb->ws_ok = s->opt.ws >= 0;
	pcb->snd_shift = pcb->ws_ok ? (uint8_t)s->opt.ws : 0;
	pcb->rcv_shift = pcb->ws_ok ? t->rcv_shift : 0;
	pcb->rcv_cap = pcb->ws_ok ? t->cfg.window : INET_TCP_WINDOW;
	pcb->sack_ok = s->opt.sack_perm;
	pcb->ts_ok = s->opt.ts;
	if (pcb->ts_ok) {
		pcb->ts_recent = s->opt.tsval;
		pcb->ts_offset = inet_new_iss(t);   /* a clock of its own per connection (RFC 7323 §5.4) */
	}
	pcb->irs = s->seq;
	pcb->rcv_nxt = s->seq + 1;       /* data on the SYN is not taken: the peer sends it again */
	pcb->rcv_adv = pcb->rcv_nxt;
	pcb->iss = inet_new_iss(t);
	pcb->snd_una = pcb->iss;
	pcb->snd_nxt = pcb->iss;
	pcb->snd_max = pcb->iss;
	pcb->snd_wnd = s->wnd;                  /* never scaled in a SYN */
	pcb->snd_wl1 = s->seq;
	pcb->snd_wl2 = pcb->iss;
	inet_cc_init(pcb);
	pcb->last_rx = t->now;
	inet_send_synack(t, pcb);
	inet_timer_restart(t, pcb);
}

/* Returns false if the segment was consumed (or the PCB is gone). */
static bool syn_rcvd_input(struct inet_host *t, struct inet_pcb *pcb, const struct inet_seg *s)
{
	void *app;

	if (s->flags & NET_TCPF_RST) {
		if (SEQ_GEQ(s->seq, pcb->rcv_nxt) && SEQ_LT(s->seq, pcb->rcv_nxt + INET_TCP_WINDOW))
			inet_pcb_release(t, pcb);
		return false;
	}
	if (s->flags & NET_TCPF_SYN) {
		if (!(s->flags & NET_TCPF_ACK) && s->seq == pcb->irs) {
			/* Our SYN-ACK was lost: the peer's SYN again. */
			t->stats.retransmits++;
			inet_send_synack(t, pcb);
		} else if (s->flags & NET_TCPF_ACK) {
			inet_send_rst_reply(t, s);
		} else {
			t->stats.drop_bad_tcp++;
		}
		return false;
	}
	if (!(s->flags & NET_TCPF_ACK)) {
		t->stats.drop_bad_tcp++;
		return false;
	}
	if (s->ack != pcb->iss + 1) {
		inet_send_rst_reply(t, s);
		return false;
	}
	/* The handshake is complete. */
	pcb->snd_una = s->ack;
	if (SEQ_LT(pcb->snd_nxt, pcb->snd_una))
		pcb->snd_nxt = pcb->snd_una;
	pcb->snd_wnd = (uint32_t)s->wnd << pcb->snd_shift;
	pcb->snd_wl1 = s->seq;
	pcb->snd_wl2 = s->ack;
	pcb->retries = 0;
	pcb->backoff = 0;
	inet_timer_stop(pcb);
	pcb->state = TCPS_ESTABLISHED;
	app = t->ops.open(t->ops.ctx);
	if (app == NULL) {
		t->stats.conns_refused++;
		inet_abort(t, pcb);
		return false;
	}
	pcb->app = app;
	t->stats.conns_accepted++;
	t->stats.opts_ws += pcb->ws_ok;
	t->stats.opts_sack += pcb->sack_ok;
	t->stats.opts_ts += pcb->ts_ok;
	return true;
}

/* Our FIN was acknowledged. Returns false if the PCB is gone or holds nothing more to do. */
static bool fin_acked(struct inet_host *t, struct inet_pcb *pcb)
{
	switch (pcb->state) {
	case TCPS_FIN_WAIT_1:
		pcb->state = TCPS_FIN_WAIT_2;
		pcb->tw_at = t->now + INET_TCP_FIN_WAIT_2_MS;
		return true;
	case TCPS_CLOSING:
		inet_enter_time_wait(t, pcb);
		return false;
	case TCPS_LAST_ACK:
		inet_pcb_release(t, pcb);
		return false;
	default:
		return true;
	}
}

/* Out-of-order bytes at seq (SACK connections): held, with a FIN behind them remembered. */
static void hold_ooo(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, const uint8_t *data, size_t dlen,
		     bool fin)
{
	uint32_t adv = SEQ_GT(pcb->rcv_adv, seq) ? pcb->rcv_adv - seq : 0;
	size_t len = dlen < adv ? dlen : adv;

	if (len > 0 && !inet_rx_hold(t, pcb, seq, data, len)) {
		t->stats.drop_out_of_order++;           /* no room for another range: the peer sends it again */
		return;
	}
	if (fin && len == dlen && !pcb->fin_rcvd) {
		pcb->ooo_fin = true;
		pcb->ooo_fin_seq = seq + (uint32_t)len;
	}
}

/* The ACK field of an acceptable segment: returns false if the PCB is gone or the segment is done with. */
static bool ack_input(struct inet_host *t, struct inet_pcb *pcb, const struct inet_seg *s, uint32_t seq,
		      size_t dlen, bool fin)
{
	uint32_t wnd = (uint32_t)s->wnd << pcb->snd_shift;

	if (SEQ_GT(s->ack, pcb->snd_max)) {
		inet_send_ack(t, pcb);            /* acknowledges what we never sent */
		return false;
	}
	if (SEQ_GT(s->ack, pcb->snd_una)) {
		uint32_t n = s->ack - pcb->snd_una;
		bool our_fin = pcb->fin_sent && SEQ_GT(s->ack, pcb->fin_seq);

		if (our_fin)
			n--;
		pcb->snd_una = s->ack;
		if (SEQ_LT(pcb->snd_nxt, pcb->snd_una))
			pcb->snd_nxt = pcb->snd_una;
		pcb->retries = 0;
		pcb->backoff = 0;
		pcb->tlp_on = false;                /* progress: a probe is due only after the next silence */
		pcb->tlp_out = false;
		if (pcb->ts_ok && s->opt.ts)
			inet_cc_rtt(t, pcb, s->opt.tsecr);
		inet_sb_trim(pcb);
		inet_sb_update(t, pcb, &s->opt);
		inet_cc_ack(t, pcb, n);
		if (pcb->snd_una == pcb->snd_max)
			inet_timer_stop(pcb);
		else
			inet_timer_restart(t, pcb);
		if (n > 0 && pcb->app != NULL)
			t->ops.acked(pcb->app, n);
		if (our_fin && !fin_acked(t, pcb))
			return false;
	} else if (s->ack == pcb->snd_una) {
		uint32_t sacked = pcb->sacked;
		bool dup;

		inet_sb_update(t, pcb, &s->opt);
		/*
		 * A duplicate (RFC 5681 §2): data outstanding into an open window, an
		 * ACK alone with the window unchanged; with SACK, one that SACKs more.
		 */
		dup = pcb->snd_una != pcb->snd_max && pcb->snd_wnd != 0 && dlen == 0 && !fin &&
		      (pcb->sack_ok ? pcb->sacked > sacked : wnd == pcb->snd_wnd);
		if (dup)
			inet_cc_dupack(t, pcb);
	}
	if (SEQ_LT(pcb->snd_wl1, seq) || (pcb->snd_wl1 == seq && SEQ_LEQ(pcb->snd_wl2, s->ack))) {
		/* A closed window opened: a probe byte sent into it was likely dropped, start over there. */
		if (pcb->snd_wnd == 0 && wnd > 0)
			pcb->snd_nxt = pcb->snd_una;
		pcb->snd_wnd = wnd;
		pcb->snd_wl1 = seq;
		pcb->snd_wl2 = s->ack;
	}
	if (wnd == 0 && s->ack == pcb->snd_una)
		pcb->retries = 0;                   /* a closed window answered: the peer is alive */
	return true;
}

/* A segment for a synchronized connection (ESTABLISHED and later). */
static void sync_input(struct inet_host *t, struct inet_pcb *pcb, const struct inet_seg *s)
{
	uint32_t seq = s->seq;
	const uint8_t *data = s->data;
	size_t dlen = s->len;
	bool fin = (s->flags & NET_TCPF_FIN) != 0, ooo = false, gap;
	uint32_t adv = SEQ_GT(pcb->rcv_adv, pcb->rcv_nxt) ? pcb->rcv_adv - pcb->rcv_nxt : 0;
	uint32_t seglen = (uint32_t)dlen + (fin ? 1 : 0);

	if (s->flags & NET_TCPF_RST) {
		/* In the window: the connection is gone. Otherwise ignored. */
		if (SEQ_GEQ(seq, pcb->rcv_nxt) && SEQ_LT(seq, pcb->rcv_nxt + (adv > 0 ? adv : 1)))
			inet_pcb_release(t, pcb);
		return;
	}
	pcb->last_rx = t->now;                      /* the peer is alive */
	pcb->ka_probes = 0;
	if (pcb->state == TCPS_FIN_WAIT_2)
		pcb->tw_at = t->now + INET_TCP_FIN_WAIT_2_MS;
	if (pcb->state == TCPS_TIME_WAIT) {
		/* Only a retransmitted FIN is expected: acknowledge it again and hold on. */
		if (fin) {
			pcb->tw_at = t->now + INET_TCP_TIME_WAIT_MS;
			inet_send_ack(t, pcb);
		}
		return;
	}
	if (s->flags & NET_TCPF_SYN) {
		/* RFC 5961 challenge ACK: a peer that restarted answers it with an RST. */
		inet_send_ack(t, pcb);
		return;
	}
	if (!(s->flags & NET_TCPF_ACK)) {
		t->stats.drop_bad_tcp++;
		return;
	}
	/* PAWS (RFC 7323 §5.3): a timestamp older than the last one taken is an old duplicate. */
	if (pcb->ts_ok && s->opt.ts && TS_LT(s->opt.tsval, pcb->ts_recent)) {
		t->stats.drop_paws++;
		inet_send_ack(t, pcb);
		return;
	}

	/* Sequence: what starts at rcv_nxt is taken, old bytes at the front are trimmed; with SACK, later bytes are held. */
	if (seglen == 0) {
		if (!(SEQ_GEQ(seq, pcb->rcv_nxt) && SEQ_LEQ(seq, pcb->rcv_nxt + adv))) {
			inet_send_ack(t, pcb);
			return;
		}
	} else if (SEQ_LT(seq, pcb->rcv_nxt)) {
		uint32_t old = pcb->rcv_nxt - seq;

		if (old >= seglen) {
			t->stats.drop_out_of_order++;   /* a duplicate */
			inet_send_ack(t, pcb);
			return;
		}
		data += old;                        /* old < seglen, so old <= dlen */
		dlen -= old;
		seq = pcb->rcv_nxt;
	} else if (seq != pcb->rcv_nxt) {
		if (!pcb->sack_ok || !SEQ_LT(seq, pcb->rcv_nxt + adv)) {
			t->stats.drop_out_of_order++;
			inet_send_ack(t, pcb);
			return;
		}
		ooo = true;
	}
	/* The timestamp to echo: from a segment that reaches no further than we acknowledged (RFC 7323 §4.3). */
	if (pcb->ts_ok && s->opt.ts && SEQ_LEQ(s->seq, pcb->last_ack_sent))
		pcb->ts_recent = s->opt.tsval;

	if (!ack_input(t, pcb, s, seq, dlen, fin))
		return;
	gap = pcb->ooo_n > 0;

	/* Data. */
	if (dlen > 0 || (ooo && fin)) {
		if (pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_FIN_WAIT_1 ||
		    pcb->state == TCPS_FIN_WAIT_2) {
			if (ooo) {
				hold_ooo(t, pcb, seq, data, dlen, fin);
				fin = false;
			} else {
				size_t room = SEQ_GT(pcb->rcv_adv, pcb->rcv_nxt) ? pcb->rcv_adv - pcb->rcv_nxt : 0;
				size_t want = dlen < room ? dlen : room;

				if (inet_rx_accept(t, pcb, data, want) < dlen)
					fin = false;        /* trimmed at the window: the FIN comes again */
			}
		} else {
			fin = false;                        /* bytes after the peer's FIN */
		}
		/*
		 * A gap opened or being filled is reported at once (RFC 5681 4.2);
		 * an in-order segment's ACK may wait for the end of the batch, and
		 * ride on the answer if the application gives one by then.
		 */
		if (ooo || gap)
			pcb->ack_now = true;
		else
			pcb->ack_later = true;
	}
	/* A FIN that came after a hole, now reached. */
	if (pcb->ooo_fin && pcb->rcv_nxt == pcb->ooo_fin_seq) {
		pcb->ooo_fin = false;
		fin = true;
	}

	/* The peer's FIN. */
	if (fin && !pcb->fin_rcvd) {
		pcb->fin_rcvd = true;
		pcb->ooo_fin = false;
		pcb->rcv_nxt++;
		pcb->ack_now = true;
		inet_rx_drain(t, pcb);                    /* the EOF once buffered bytes are taken */
		switch (pcb->state) {
		case TCPS_ESTABLISHED:
			pcb->state = TCPS_CLOSE_WAIT;
			break;
		case TCPS_FIN_WAIT_1:
			pcb->state = TCPS_CLOSING;
			break;
		case TCPS_FIN_WAIT_2:
			inet_send_ack(t, pcb);
			inet_enter_time_wait(t, pcb);
			return;
		default:
			break;
		}
	}
	inet_pcb_service(t, pcb);
}

static void tcp_input(struct inet_host *t, const uint8_t *smac, uint32_t sip, const uint8_t *p, size_t len,
		      unsigned rx_flags)
{
	const struct net_tcp_hdr *th = (const struct net_tcp_hdr *)p;
	struct inet_seg s;
	struct inet_pcb *pcb;
	size_t hlen;

	if (len < sizeof(*th)) {
		t->stats.drop_bad_tcp++;
		return;
	}
	if (rx_flags & INET_TCP_RX_CSUM_OK) {
		t->stats.csum_trusted++;
	} else if (inet_csum_fold(inet_csum_pseudo(sip, t->cfg.ip, NET_IP_PROTO_TCP, len) +
				  inet_csum_add(0, p, len)) != 0) {
		t->stats.drop_bad_csum++;
		return;
	}
	hlen = (size_t)net_tcph_doff(th) * 4;
	memset(&s, 0, sizeof(s));
	s.flags = net_tcph_flags(th);
	s.rport = be16_get(th->sport);
	s.lport = be16_get(th->dport);
	if (hlen < sizeof(*th) || hlen > len || s.rport == 0 || s.lport == 0 ||
	    !inet_parse_options(p + sizeof(*th), hlen - sizeof(*th), &s.opt) ||
	    ((s.flags & NET_TCPF_SYN) && (s.flags & (NET_TCPF_RST | NET_TCPF_FIN)))) {
		t->stats.drop_bad_tcp++;
		return;
	}
	s.rip = sip;
	s.rmac = smac;
	s.seq = be32_get(th->seq);
	s.ack = be32_get(th->ack);
	s.wnd = be16_get(th->wnd);
	s.data = p + hlen;
	s.len = len - hlen;
	if (s.len > INET_TCP_MSS)
		t->stats.segs_over_mss++;

	if (t->cfg.port == 0 || s.lport != t->cfg.port) {
		inet_send_rst_reply(t, &s);           /* closed port (never to an RST) */
		return;
	}
	pcb = inet_pcb_find(t, sip, s.rport);
	if (pcb != NULL && pcb->state == TCPS_TIME_WAIT && (s.flags & NET_TCPF_SYN) &&
	    !(s.flags & NET_TCPF_ACK)) {
		inet_pcb_release(t, pcb);             /* a new incarnation reuses the 4-tuple at once */
		pcb = NULL;
	}
	if (pcb == NULL) {
		listen_input(t, &s);
		return;
	}
	if (pcb->state == TCPS_SYN_RCVD && !syn_rcvd_input(t, pcb, &s))
		return;
	sync_input(t, pcb, &s);
}

/* ---- IPv4 --------------------------------------------------------------------- */

static bool bad_source(const struct inet_host *t, uint32_t ip)
{
	return ip == 0 || ip == 0xffffffffu || (ip >> 28) == 0xe || (ip >> 24) == 127 || ip == t->cfg.ip;
}

static void ip_input(struct inet_host *t, const uint8_t *smac, const uint8_t *p, size_t len, unsigned rx_flags)
{
	const struct net_ip_hdr *ih = (const struct net_ip_hdr *)p;
	size_t tot;
	unsigned frag;
	uint32_t src;

	if (len < sizeof(*ih) || net_ip_ver(ih) != 4 || net_ip_ihl(ih) < 5) {
		t->stats.drop_bad_ip++;
		return;
	}
	if (net_ip_ihl(ih) > 5) {
		t->stats.drop_ip_options++;
		return;
	}
	tot = be16_get(ih->tot_len);
	if (tot < sizeof(*ih) || tot > len) {
		t->stats.drop_bad_ip++;
		return;
	}
	if (inet_csum_fold(inet_csum_add(0, ih, sizeof(*ih))) != 0) {
		t->stats.drop_bad_csum++;
		return;
	}
	frag = be16_get(ih->frag);
	if ((frag & NET_IP_FLAG_MF) || (frag & NET_IP_FRAG_OFF_MASK)) {
		t->stats.drop_fragment++;
		return;
	}
	if (be32_get(ih->dst) != t->cfg.ip) {
		t->stats.drop_not_mine++;
		return;
	}
	src = be32_get(ih->src);
	if (bad_source(t, src)) {
		t->stats.drop_bad_ip++;
		return;
	}
	switch (ih->proto) {
	case NET_IP_PROTO_ICMP:
		icmp_input(t, smac, src, p + sizeof(*ih), tot - sizeof(*ih));
		break;
	case NET_IP_PROTO_TCP:
		tcp_input(t, smac, src, p + sizeof(*ih), tot - sizeof(*ih), rx_flags);
		break;
	default:
		t->stats.drop_not_mine++;           /* no other protocol is served here */
		break;
	}
}

/* ---- IPv6: the link-local address ----------------------------------------------- */

/*
 * Only the link-local address derived from our MAC is served (net_nd.h): a
 * neighbor solicitation for it is answered, so that a peer can resolve it
 * (a guest's RDMA client connecting to the matching GID does), and an echo
 * request to it, sent to our own MAC, gets its reply. Any other IPv6 frame
 * is dropped as it always was: there is no IPv6 transport here.
 */
static void ip6_input(struct inet_host *t, const uint8_t *frame, size_t len, bool to_us)
{
	struct net_nd_ns ns;
	size_t n;

	if (net_nd_parse_ns(frame, len, t->ll6, &ns) == 0) {
		n = net_nd_build_na(t->frame, INET_TCP_MAX_FRAME, &ns, t->cfg.mac, t->ll6);
		t->stats.nd_answered++;
		t->stats.frames_out++;
		t->ops.send_frame(t->ops.ctx, t->frame, n);
		return;
	}
	if (to_us && (n = net_nd_echo_reply(t->frame, INET_TCP_MAX_FRAME, frame, len, t->cfg.mac, t->ll6)) != 0) {
		t->stats.icmp6_echo_replies++;
		t->stats.frames_out++;
		t->ops.send_frame(t->ops.ctx, t->frame, n);
		return;
	}
	t->stats.drop_bad_eth++;
}

/* ---- Ethernet ----------------------------------------------------------------- */

void inet_input(struct inet_host *t, const uint8_t *frame, size_t len, uint64_t now_ms)
{
	inet_input_flags(t, frame, len, 0, now_ms);
}

void inet_input_flags(struct inet_host *t, const uint8_t *frame, size_t len, unsigned flags, uint64_t now_ms)
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;
	bool bcast, to_us, nd_group;
	uint16_t type;

	t->now = now_ms;
	t->stats.frames_in++;
	if (frame == NULL || len < sizeof(*eh)) {
		t->stats.drop_bad_eth++;
		return;
	}
	type = be16_get(eh->type);
	bcast = memcmp(eh->dst, bcast_mac, NET_ETH_ALEN) == 0;
	to_us = memcmp(eh->dst, t->cfg.mac, NET_ETH_ALEN) == 0;
	/* Our link-local address's solicited-node group: only IPv6 is taken from it (and only solicitations answered). */
	nd_group = type == NET_ETHERTYPE_IPV6 && memcmp(eh->dst, t->nd_mac, NET_ETH_ALEN) == 0;
	if (!bcast && !to_us && !nd_group) {
		t->stats.drop_not_mine++;
		return;
	}
	if (eh->src[0] & 1) {                       /* a group address cannot send */
		t->stats.drop_bad_eth++;
		return;
	}
	switch (type) {
	case NET_ETHERTYPE_ARP:
		arp_input(t, frame + sizeof(*eh), len - sizeof(*eh));
		break;
	case NET_ETHERTYPE_IPV4:
		if (bcast) {
			t->stats.drop_not_mine++;
			return;
		}
		ip_input(t, eh->src, frame + sizeof(*eh), len - sizeof(*eh), flags);
		break;
	case NET_ETHERTYPE_IPV6:
		ip6_input(t, frame, len, to_us);
		break;
	default:                                    /* 802.1Q, 802.3 lengths, ... */
		t->stats.drop_bad_eth++;
		break;
	}
}
