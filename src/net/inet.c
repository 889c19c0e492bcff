/* The in-band TCP/IP stack: PCB table, API, timers; see inet.h and inet_priv.h. */
#include "net/inet.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "net/inet_priv.h"

/* ---- PCB table --------------------------------------------------------------- */

struct inet_pcb *inet_pcb_find(struct inet_host *t, uint32_t rip, uint16_t rport)
{
	for (size_t i = 0; i < INET_TCP_PCBS; i++) {
		struct inet_pcb *pcb = &t->pcbs[i];

		if (pcb->state != TCPS_CLOSED && pcb->rip == rip && pcb->rport == rport)
			return pcb;
	}
	return NULL;
}

struct inet_pcb *inet_pcb_alloc(struct inet_host *t)
{
	struct inet_pcb *oldest_tw = NULL;

	for (size_t i = 0; i < INET_TCP_PCBS; i++) {
		struct inet_pcb *pcb = &t->pcbs[i];

		if (pcb->state == TCPS_CLOSED)
			return pcb;
		if (pcb->state == TCPS_TIME_WAIT && (oldest_tw == NULL || pcb->tw_at < oldest_tw->tw_at))
			oldest_tw = pcb;
	}
	if (oldest_tw != NULL)
		inet_pcb_release(t, oldest_tw);
	return oldest_tw;
}

void inet_pcb_release(struct inet_host *t, struct inet_pcb *pcb)
{
	void *app = pcb->app;

	/* The slot is consistent (free) before the application hears of it. */
	free(pcb->rxbuf);
	memset(pcb, 0, sizeof(*pcb));
	if (app != NULL)
		t->ops.close(app);
}

void inet_enter_time_wait(struct inet_host *t, struct inet_pcb *pcb)
{
	void *app = pcb->app;

	pcb->app = NULL;
	free(pcb->rxbuf);
	pcb->rxbuf = NULL;
	pcb->rx_off = 0;
	pcb->rx_len = 0;
	pcb->state = TCPS_TIME_WAIT;
	inet_timer_stop(pcb);
	pcb->tw_at = t->now + INET_TCP_TIME_WAIT_MS;
	if (app != NULL)
		t->ops.close(app);
}

unsigned inet_count_live(const struct inet_host *t)
{
	unsigned n = 0;

	for (size_t i = 0; i < INET_TCP_PCBS; i++)
		if (t->pcbs[i].state != TCPS_CLOSED && t->pcbs[i].state != TCPS_TIME_WAIT)
			n++;
	return n;
}

uint32_t inet_new_iss(struct inet_host *t)
{
	uint32_t v;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	/* No entropy: a counter mixed with the time (murmur3 finaliser). */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t->iss_ctr += 0x9e3779b9u;
	v = t->iss_ctr ^ (uint32_t)ts.tv_nsec ^ ((uint32_t)ts.tv_sec * 2654435761u) ^
	    (uint32_t)(t->now * 250u);
	v ^= v >> 16;
	v *= 0x85ebca6bu;
	v ^= v >> 13;
	v *= 0xc2b2ae35u;
	v ^= v >> 16;
	return v;
}

/* ---- timers ----------------------------------------------------------------- */

void inet_timer_restart(struct inet_host *t, struct inet_pcb *pcb)
{
	unsigned shift = pcb->backoff < INET_TCP_MAX_BACKOFF ? pcb->backoff : INET_TCP_MAX_BACKOFF;

	pcb->rto_on = true;
	pcb->rto_at = t->now + ((uint64_t)INET_TCP_RTO_MS << shift);
}

void inet_timer_stop(struct inet_pcb *pcb)
{
	pcb->rto_on = false;
	pcb->rto_at = 0;
}

/* ---- receive buffer --------------------------------------------------------- */

uint32_t inet_rcv_wnd(const struct inet_pcb *pcb)
{
	return pcb->rx_len >= INET_TCP_WINDOW ? 0 : (uint32_t)(INET_TCP_WINDOW - pcb->rx_len);
}

/* Gives data to the application; returns how much it took (never more than len). */
static size_t app_input(struct inet_host *t, struct inet_pcb *pcb, const uint8_t *data, size_t len)
{
	size_t n;

	if (len == 0 || pcb->app == NULL)
		return 0;
	n = t->ops.input(pcb->app, data, len);
	return n > len ? len : n;
}

void inet_rx_drain(struct inet_host *t, struct inet_pcb *pcb)
{
	if (pcb->app == NULL)
		return;
	while (pcb->rx_len > 0) {
		size_t n = app_input(t, pcb, pcb->rxbuf + pcb->rx_off, pcb->rx_len);

		if (n == 0)
			break;
		pcb->rx_off += n;
		pcb->rx_len -= n;
	}
	if (pcb->rx_len == 0)
		pcb->rx_off = 0;
	if (pcb->rx_len == 0 && pcb->fin_rcvd && !pcb->eof_delivered && pcb->app != NULL) {
		pcb->eof_delivered = true;
		t->ops.input_eof(pcb->app);
	}
}

size_t inet_rx_accept(struct inet_host *t, struct inet_pcb *pcb, const uint8_t *data, size_t len)
{
	size_t taken = 0, rest;
	uint32_t room;

	/* Older bytes first. */
	inet_rx_drain(t, pcb);
	room = inet_rcv_wnd(pcb);
	if (len > room)
		len = room;
	if (len == 0)
		return 0;
	if (pcb->rx_len == 0)
		taken = app_input(t, pcb, data, len);
	rest = len - taken;
	if (rest > 0) {
		if (pcb->rxbuf == NULL)
			pcb->rxbuf = malloc(INET_TCP_WINDOW);
		if (pcb->rxbuf == NULL) {
			/* Nowhere to keep it: accept only what was taken, the peer retransmits the rest. */
			len = taken;
			rest = 0;
		} else {
			if (pcb->rx_off + pcb->rx_len + rest > INET_TCP_WINDOW) {
				memmove(pcb->rxbuf, pcb->rxbuf + pcb->rx_off, pcb->rx_len);
				pcb->rx_off = 0;
			}
			memcpy(pcb->rxbuf + pcb->rx_off + pcb->rx_len, data + taken, rest);
			pcb->rx_len += rest;
		}
	}
	pcb->rcv_nxt += (uint32_t)len;
	t->stats.bytes_in += len;
	return len;
}

/* ---- servicing a connection --------------------------------------------------- */

static bool receiving(const struct inet_pcb *pcb)
{
	return pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_FIN_WAIT_1 ||
	       pcb->state == TCPS_FIN_WAIT_2;
}

void inet_pcb_service(struct inet_host *t, struct inet_pcb *pcb)
{
	if (pcb->state == TCPS_CLOSED)
		return;
	if (pcb->app != NULL) {
		inet_rx_drain(t, pcb);
		if (receiving(pcb) && !pcb->fin_rcvd) {
			/* Window update: the window the peer knows is small, and opened by an MSS or fully. */
			uint32_t adv = SEQ_GT(pcb->rcv_adv, pcb->rcv_nxt) ? pcb->rcv_adv - pcb->rcv_nxt : 0;
			uint32_t now = inet_rcv_wnd(pcb);

			if (adv < INET_TCP_WINDOW / 2 && now > adv &&
			    (now - adv >= pcb->mss || now == INET_TCP_WINDOW))
				pcb->ack_now = true;
		}
		inet_output(t, pcb, false);
	}
	if (pcb->ack_now && pcb->state != TCPS_CLOSED && pcb->state != TCPS_SYN_RCVD)
		inet_send_ack(t, pcb);
}

/* ---- ARP table ---------------------------------------------------------------- */

void inet_arp_learn(struct inet_host *t, uint32_t ip, const uint8_t mac[NET_ETH_ALEN])
{
	struct inet_arp_entry *e = NULL;

	for (size_t i = 0; i < INET_TCP_ARP_ENTRIES; i++) {
		if (t->arp[i].valid && t->arp[i].ip == ip) {
			e = &t->arp[i];
			break;
		}
	}
	if (e == NULL) {
		e = &t->arp[t->arp_next];
		t->arp_next = (t->arp_next + 1) % INET_TCP_ARP_ENTRIES;
	}
	e->valid = true;
	e->ip = ip;
	memcpy(e->mac, mac, NET_ETH_ALEN);
	/* A host that moved (gratuitous ARP): its connections follow it. */
	for (size_t i = 0; i < INET_TCP_PCBS; i++)
		if (t->pcbs[i].state != TCPS_CLOSED && t->pcbs[i].rip == ip)
			memcpy(t->pcbs[i].rmac, mac, NET_ETH_ALEN);
}

/* ---- API ------------------------------------------------------------------------ */

struct inet_host *inet_new(const struct inet_config *cfg, const struct inet_ops *ops)
{
	struct inet_host *t;

	if (cfg == NULL || ops == NULL || ops->send_frame == NULL)
		return NULL;
	/* A listener needs every application callback; a host without one (port 0) needs none. */
	if (cfg->port != 0 && (ops->open == NULL || ops->input == NULL || ops->input_eof == NULL ||
			       ops->peek == NULL || ops->acked == NULL || ops->wants_close == NULL ||
			       ops->close == NULL))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->cfg = *cfg;
	t->ops = *ops;
	t->ip_id = (uint16_t)inet_new_iss(t);
	return t;
}

void inet_free(struct inet_host *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < INET_TCP_PCBS; i++)
		if (t->pcbs[i].state != TCPS_CLOSED)
			inet_pcb_release(t, &t->pcbs[i]);
	free(t);
}

void inet_poll(struct inet_host *t, uint64_t now_ms)
{
	t->now = now_ms;
	for (size_t i = 0; i < INET_TCP_PCBS; i++) {
		struct inet_pcb *pcb = &t->pcbs[i];

		switch (pcb->state) {
		case TCPS_CLOSED:
			continue;
		case TCPS_TIME_WAIT:
			if (now_ms >= pcb->tw_at)
				inet_pcb_release(t, pcb);
			continue;
		case TCPS_FIN_WAIT_2:
			if (now_ms >= pcb->tw_at) {
				inet_abort(t, pcb);
				continue;
			}
			break;
		default:
			break;
		}
		if (pcb->rto_on && now_ms >= pcb->rto_at) {
			inet_rto_expired(t, pcb);
			if (pcb->state == TCPS_CLOSED)
				continue;
		}
		if ((pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_CLOSE_WAIT) && !pcb->rto_on &&
		    now_ms >= pcb->last_rx + INET_TCP_KEEPALIVE_IDLE_MS +
				      (uint64_t)pcb->ka_probes * INET_TCP_KEEPALIVE_INTVL_MS) {
			/* Nothing outstanding, the peer silent: is it still there? */
			if (pcb->ka_probes >= INET_TCP_KEEPALIVE_PROBES) {
				inet_abort(t, pcb);
				continue;
			}
			pcb->ka_probes++;
			inet_send_keepalive(t, pcb);
		}
		inet_pcb_service(t, pcb);
	}
}

bool inet_wants_frame(const struct inet_host *t, const uint8_t *frame, size_t len)
{
	static const uint8_t bcast[NET_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;
	const struct net_arp_pkt *ap;

	if (t == NULL || frame == NULL || len < sizeof(*eh))
		return false;
	if (memcmp(eh->dst, t->cfg.mac, NET_ETH_ALEN) == 0)
		return true;
	if (memcmp(eh->dst, bcast, NET_ETH_ALEN) != 0 || be16_get(eh->type) != NET_ETHERTYPE_ARP ||
	    len < sizeof(*eh) + sizeof(*ap))
		return false;
	ap = (const struct net_arp_pkt *)(frame + sizeof(*eh));
	return be16_get(ap->oper) == NET_ARP_OP_REQUEST && be32_get(ap->tpa) == t->cfg.ip;
}

unsigned inet_active_conns(const struct inet_host *t)
{
	return t == NULL ? 0 : inet_count_live(t);
}

const struct inet_stats *inet_stats(const struct inet_host *t)
{
	return &t->stats;
}
