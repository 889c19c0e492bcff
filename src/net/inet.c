/* The in-band TCP/IP stack: PCB table, API, timers; see inet.h and inet_priv.h. */
#include "net/inet.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "net/inet_priv.h"
#include "net/net_arp.h"
#include "net/net_nd.h"

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
	pcb->rx_len = 0;
	pcb->ooo_n = 0;
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
	uint64_t d = (uint64_t)(pcb->rto_ms ? pcb->rto_ms : INET_TCP_RTO_MS) << shift;

	pcb->rto_on = true;
	pcb->rto_at = t->now + (d < INET_TCP_RTO_MAX_MS ? d : INET_TCP_RTO_MAX_MS);
}

void inet_timer_stop(struct inet_pcb *pcb)
{
	pcb->rto_on = false;
	pcb->rto_at = 0;
}

uint32_t inet_ts_now(const struct inet_host *t, const struct inet_pcb *pcb)
{
	return (uint32_t)t->now + pcb->ts_offset;
}

/* ---- receive buffer --------------------------------------------------------- */

/*
 * The ring holds stream offsets [rx_rd, rx_rd + rcv_cap): the oldest byte not
 * taken is at sequence number rcv_nxt - rx_len, and every byte the stack
 * keeps lies within rcv_cap of it (the window never reaches further).
 */
static size_t ring_idx(const struct inet_pcb *pcb, uint32_t seq)
{
	uint32_t rd_seq = pcb->rcv_nxt - (uint32_t)pcb->rx_len;

	return (size_t)((pcb->rx_rd + (uint32_t)(seq - rd_seq)) % pcb->rcv_cap);
}

static void ring_write(struct inet_pcb *pcb, uint32_t seq, const uint8_t *data, size_t len)
{
	size_t idx = ring_idx(pcb, seq), first = pcb->rcv_cap - idx;

	if (first > len)
		first = len;
	memcpy(pcb->rxbuf + idx, data, first);
	memcpy(pcb->rxbuf, data + first, len - first);
}

static bool ring_alloc(struct inet_pcb *pcb)
{
	if (pcb->rxbuf == NULL)
		pcb->rxbuf = malloc(pcb->rcv_cap);
	return pcb->rxbuf != NULL;
}

/* The sequence number one past the last byte the buffer can hold. */
static uint32_t ring_edge(const struct inet_pcb *pcb)
{
	return pcb->rcv_nxt - (uint32_t)pcb->rx_len + pcb->rcv_cap;
}

uint32_t inet_rcv_wnd(const struct inet_pcb *pcb)
{
	return pcb->rx_len >= pcb->rcv_cap ? 0 : (uint32_t)(pcb->rcv_cap - pcb->rx_len);
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
		size_t idx = (size_t)(pcb->rx_rd % pcb->rcv_cap), n = pcb->rcv_cap - idx, k;

		if (n > pcb->rx_len)
			n = pcb->rx_len;
		k = app_input(t, pcb, pcb->rxbuf + idx, n);
		pcb->rx_rd += k;
		pcb->rx_len -= k;
		if (k < n)
			break;
	}
	if (pcb->rx_len == 0 && pcb->fin_rcvd && !pcb->eof_delivered && pcb->app != NULL) {
		pcb->eof_delivered = true;
		t->ops.input_eof(pcb->app);
	}
}

/* Out-of-order ranges that rcv_nxt reached become in-order bytes. */
static void ooo_merge(struct inet_host *t, struct inet_pcb *pcb)
{
	unsigned k = 0;

	while (k < pcb->ooo_n && SEQ_LEQ(pcb->ooo[k].start, pcb->rcv_nxt)) {
		if (SEQ_GT(pcb->ooo[k].end, pcb->rcv_nxt)) {
			uint32_t n = pcb->ooo[k].end - pcb->rcv_nxt;

			pcb->rx_len += n;
			pcb->rcv_nxt += n;
			t->stats.bytes_in += n;
		}
		k++;
	}
	if (k > 0) {
		memmove(pcb->ooo, pcb->ooo + k, (pcb->ooo_n - k) * sizeof(pcb->ooo[0]));
		pcb->ooo_n -= k;
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
	if (pcb->rx_len == 0) {
		taken = app_input(t, pcb, data, len);
		pcb->rx_rd += taken;            /* the ring's front moves with the bytes taken */
		pcb->rcv_nxt += (uint32_t)taken;
	}
	rest = len - taken;
	if (rest > 0) {
		if (!ring_alloc(pcb)) {
			/* Nowhere to keep it: accept only what was taken, the peer retransmits the rest. */
			len = taken;
		} else {
			ring_write(pcb, pcb->rcv_nxt, data + taken, rest);
			pcb->rx_len += rest;
			pcb->rcv_nxt += (uint32_t)rest;
		}
	}
	t->stats.bytes_in += len;
	if (pcb->ooo_n > 0) {
		ooo_merge(t, pcb);
		inet_rx_drain(t, pcb);
	}
	return len;
}

bool inet_rx_hold(struct inet_host *t, struct inet_pcb *pcb, uint32_t seq, const uint8_t *data, size_t len)
{
	uint32_t end, edge = ring_edge(pcb);
	unsigned i = 0, j;

	if (!SEQ_GT(seq, pcb->rcv_nxt) || !SEQ_LT(seq, edge))
		return false;
	if (len > edge - seq)
		len = edge - seq;               /* never past what the buffer holds */
	if (len == 0 || !ring_alloc(pcb))
		return false;
	end = seq + (uint32_t)len;
	/* Ranges i..j-1 touch [seq, end): they merge with it; none touch: it goes in at i. */
	while (i < pcb->ooo_n && SEQ_LT(pcb->ooo[i].end, seq))
		i++;
	j = i;
	while (j < pcb->ooo_n && SEQ_LEQ(pcb->ooo[j].start, end))
		j++;
	if (i == j) {
		if (pcb->ooo_n == INET_TCP_OOO_RANGES)
			return false;
		memmove(pcb->ooo + i + 1, pcb->ooo + i, (pcb->ooo_n - i) * sizeof(pcb->ooo[0]));
		pcb->ooo[i].start = seq;
		pcb->ooo[i].end = end;
		pcb->ooo_n++;
	} else {
		if (SEQ_LT(seq, pcb->ooo[i].start))
			pcb->ooo[i].start = seq;
		pcb->ooo[i].end = SEQ_GT(end, pcb->ooo[j - 1].end) ? end : pcb->ooo[j - 1].end;
		memmove(pcb->ooo + i + 1, pcb->ooo + j, (pcb->ooo_n - j) * sizeof(pcb->ooo[0]));
		pcb->ooo_n -= j - i - 1;
	}
	pcb->ooo[i].stamp = ++pcb->ooo_stamp;
	ring_write(pcb, seq, data, len);
	t->stats.ooo_held++;
	return true;
}

/* ---- servicing a connection --------------------------------------------------- */

static bool receiving(const struct inet_pcb *pcb)
{
	return pcb->state == TCPS_ESTABLISHED || pcb->state == TCPS_FIN_WAIT_1 ||
	       pcb->state == TCPS_FIN_WAIT_2;
}

/*
 * Whether an in-order segment's ACK may wait for inet_flush_acks(): the owner
 * has promised that call before it next sleeps (ops.defer_acks). A response
 * the application queues meanwhile carries the ACK, and the pure ACK never
 * goes: one frame per request and answer instead of two, as a delayed-ACK
 * receiver does (RFC 1122 4.2.3.2), though the wait is only as long as the
 * current batch of events.
 */
static bool defer_acks(struct inet_host *t)
{
	if (t->acks_deferred)
		return true;
	if (t->ops.defer_acks == NULL || !t->ops.defer_acks(t->ops.ctx))
		return false;
	t->acks_deferred = true;
	return true;
}

void inet_pcb_service(struct inet_host *t, struct inet_pcb *pcb)
{
	if (pcb->state == TCPS_CLOSED)
		return;
	if (pcb->app != NULL) {
		inet_rx_drain(t, pcb);
		if (receiving(pcb) && !pcb->fin_rcvd) {
			/*
			 * Window update: the window the peer knows is small (under half
			 * of 64 KiB, whatever the scale: every ACK carries the window, so
			 * this is for a flow a full buffer stopped), and opened by an MSS
			 * or fully.
			 */
			uint32_t adv = SEQ_GT(pcb->rcv_adv, pcb->rcv_nxt) ? pcb->rcv_adv - pcb->rcv_nxt : 0;
			uint32_t now = inet_rcv_wnd(pcb);

			if (adv < INET_TCP_WINDOW / 2 && now > adv &&
			    (now - adv >= pcb->mss || now == pcb->rcv_cap))
				pcb->ack_now = true;
		}
		/*
		 * Output waits for the end of the batch as the ACK does: a flow's ACKs
		 * read one after another open the window once, and what they let go
		 * leaves in one run of super-segments instead of a few per ACK.
		 */
		if (defer_acks(t)) {
			pcb->out_later = true;
		} else {
			inet_output(t, pcb, false);
			inet_cc_tlp_arm(t, pcb);
		}
	}
	if (pcb->state == TCPS_CLOSED || pcb->state == TCPS_SYN_RCVD)
		return;
	if (pcb->ack_now || (pcb->ack_later && !defer_acks(t)))
		inet_send_ack(t, pcb);
}

void inet_flush_acks(struct inet_host *t)
{
	if (t == NULL || !t->acks_deferred)
		return;
	t->acks_deferred = false;
	for (size_t i = 0; i < INET_TCP_PCBS; i++) {
		struct inet_pcb *pcb = &t->pcbs[i];

		/* What the batch let go, then the ACK if nothing of that carried it. */
		if (pcb->out_later) {
			pcb->out_later = false;
			if (pcb->state != TCPS_CLOSED && pcb->app != NULL) {
				inet_output(t, pcb, false);
				inet_cc_tlp_arm(t, pcb);
			}
		}
		/* Still owed: nothing the application sent since carried it. */
		if (pcb->ack_later && pcb->state != TCPS_CLOSED && pcb->state != TCPS_SYN_RCVD) {
			inet_send_ack(t, pcb);
			t->stats.acks_deferred_alone++;
		}
	}
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
	if (t->cfg.window == 0)
		t->cfg.window = INET_TCP_WINDOW_DEFAULT;
	if (t->cfg.window < INET_TCP_WINDOW)
		t->cfg.window = INET_TCP_WINDOW;
	if (t->cfg.window > INET_TCP_WINDOW_MAX)
		t->cfg.window = INET_TCP_WINDOW_MAX;
	while ((t->cfg.window >> t->rcv_shift) > INET_TCP_WINDOW)
		t->rcv_shift++;
	t->ip_id = (uint16_t)inet_new_iss(t);
	net_nd_ll_from_mac(t->cfg.mac, t->ll6);
	net_nd_solicited_mac(t->ll6, t->nd_mac);
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
		} else if (pcb->tlp_on && now_ms >= pcb->tlp_at) {
			inet_tlp_expired(t, pcb);
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
		/* An idle connection gives its empty receive buffer back. */
		if (pcb->state != TCPS_CLOSED && pcb->rxbuf != NULL && pcb->rx_len == 0 && pcb->ooo_n == 0 &&
		    now_ms >= pcb->last_rx + INET_TCP_RXBUF_IDLE_MS) {
			free(pcb->rxbuf);
			pcb->rxbuf = NULL;
		}
	}
}

bool inet_wants_frame(const struct inet_host *t, const uint8_t *frame, size_t len)
{
	const struct net_eth_hdr *eh = (const struct net_eth_hdr *)frame;

	if (t == NULL || frame == NULL || len < sizeof(*eh))
		return false;
	return memcmp(eh->dst, t->cfg.mac, NET_ETH_ALEN) == 0 || net_arp_is_request_for(frame, len, t->cfg.ip) ||
	       net_nd_is_ns_for(frame, len, t->ll6);
}

unsigned inet_active_conns(const struct inet_host *t)
{
	return t == NULL ? 0 : inet_count_live(t);
}

const struct inet_stats *inet_stats(const struct inet_host *t)
{
	return &t->stats;
}
