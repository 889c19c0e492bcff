/*
 * The in-band TCP/IP stack, sender's control: congestion control (RFC 5681:
 * slow start, congestion avoidance with byte counting; NewReno fast
 * retransmit and fast recovery, RFC 6582; with SACK, loss recovery after
 * RFC 6675: every gap below the highest SACKed byte is taken as lost and
 * sent once, paced by the pipe), the RTO from timestamp RTT samples
 * (RFC 6298) and the SACK scoreboard (RFC 2018). See inet.h, inet_priv.h.
 *
 * Byte counts, not segment counts, throughout; a window is capped far
 * below 2^31 so sequence arithmetic never wraps within it.
 */
#include "net/inet.h"

#include <string.h>

#include "net/inet_priv.h"

#define CWND_MAX (1u << 30)

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

uint32_t inet_cc_smss(const struct inet_pcb *pcb)
{
	return pcb->mss - (pcb->ts_ok ? INET_TCP_TS_SPACE : 0);
}

void inet_cc_init(struct inet_pcb *pcb)
{
	pcb->cc_off = !pcb->ws_ok && !pcb->sack_ok && !pcb->ts_ok;
	pcb->cwnd = pcb->cc_off ? CWND_MAX : INET_TCP_IW_SEGS * inet_cc_smss(pcb);
	pcb->ssthresh = CWND_MAX;               /* arbitrarily high until the first loss */
	pcb->rto_ms = INET_TCP_RTO_MS;
	pcb->recover = pcb->iss;
}

/* ---- the SACK scoreboard ------------------------------------------------------ */

static void sb_count(struct inet_pcb *pcb)
{
	pcb->sacked = 0;
	for (unsigned i = 0; i < pcb->sb_n; i++)
		pcb->sacked += pcb->sb[i].end - pcb->sb[i].start;
}

/* Adds [l, r) to the sorted, disjoint ranges; returns false when it fits nowhere. */
static bool sb_insert(struct inet_pcb *pcb, uint32_t l, uint32_t r)
{
	unsigned i = 0, j;

	while (i < pcb->sb_n && SEQ_LT(pcb->sb[i].end, l))
		i++;
	j = i;
	while (j < pcb->sb_n && SEQ_LEQ(pcb->sb[j].start, r))
		j++;
	if (i == j) {
		if (pcb->sb_n == INET_TCP_SB_RANGES)
			return false;
		memmove(pcb->sb + i + 1, pcb->sb + i, (pcb->sb_n - i) * sizeof(pcb->sb[0]));
		pcb->sb[i].start = l;
		pcb->sb[i].end = r;
		pcb->sb_n++;
		return true;
	}
	if (SEQ_LT(l, pcb->sb[i].start))
		pcb->sb[i].start = l;
	pcb->sb[i].end = SEQ_GT(r, pcb->sb[j - 1].end) ? r : pcb->sb[j - 1].end;
	memmove(pcb->sb + i + 1, pcb->sb + j, (pcb->sb_n - j) * sizeof(pcb->sb[0]));
	pcb->sb_n -= j - i - 1;
	return true;
}

void inet_sb_update(struct inet_host *t, struct inet_pcb *pcb, const struct inet_opts *o)
{
	if (!pcb->sack_ok)
		return;
	for (unsigned k = 0; k < o->nsack; k++) {
		uint32_t l = o->sack[k][0], r = o->sack[k][1];

		/* Only what we sent and is not yet acknowledged; D-SACK and stale blocks say nothing here. */
		if (!SEQ_LT(l, r) || !SEQ_GT(r, pcb->snd_una) || SEQ_GT(r, pcb->snd_max))
			continue;
		if (SEQ_LT(l, pcb->snd_una))
			l = pcb->snd_una;
		t->stats.sack_blocks_in++;
		sb_insert(pcb, l, r);
	}
	sb_count(pcb);
}

void inet_sb_trim(struct inet_pcb *pcb)
{
	unsigned k = 0;

	while (k < pcb->sb_n && SEQ_LEQ(pcb->sb[k].end, pcb->snd_una))
		k++;
	if (k > 0) {
		memmove(pcb->sb, pcb->sb + k, (pcb->sb_n - k) * sizeof(pcb->sb[0]));
		pcb->sb_n -= k;
	}
	if (pcb->sb_n > 0 && SEQ_LT(pcb->sb[0].start, pcb->snd_una))
		pcb->sb[0].start = pcb->snd_una;
	sb_count(pcb);
}

bool inet_sb_next(const struct inet_pcb *pcb, uint32_t seq, uint32_t *start, uint32_t *end)
{
	for (unsigned i = 0; i < pcb->sb_n; i++) {
		if (SEQ_GT(pcb->sb[i].end, seq)) {
			*start = pcb->sb[i].start;
			*end = pcb->sb[i].end;
			return true;
		}
	}
	return false;
}

/* SACKed bytes within [a, b). */
static uint32_t sacked_in(const struct inet_pcb *pcb, uint32_t a, uint32_t b)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < pcb->sb_n; i++) {
		uint32_t l = SEQ_GT(pcb->sb[i].start, a) ? pcb->sb[i].start : a;
		uint32_t r = SEQ_LT(pcb->sb[i].end, b) ? pcb->sb[i].end : b;

		if (SEQ_LT(l, r))
			n += r - l;
	}
	return n;
}

/* Below this, every byte not SACKed counts as lost in recovery. */
static uint32_t loss_edge(const struct inet_pcb *pcb)
{
	uint32_t edge = pcb->sb_n > 0 ? pcb->sb[pcb->sb_n - 1].end : pcb->snd_una;
	uint32_t first = pcb->snd_una + min32(inet_cc_smss(pcb), pcb->snd_max - pcb->snd_una);

	/* Duplicate ACKs without blocks still say the first segment is gone. */
	if (SEQ_LT(edge, first))
		edge = first;
	if (pcb->fin_sent && SEQ_GT(edge, pcb->fin_seq))
		edge = pcb->fin_seq;            /* the FIN has no bytes: the timer resends it */
	return edge;
}

uint32_t inet_cc_pipe(const struct inet_pcb *pcb)
{
	uint32_t flight = pcb->snd_max - pcb->snd_una, pipe = flight - min32(pcb->sacked, flight);

	if (pcb->in_recovery && pcb->sack_ok) {
		uint32_t from = SEQ_GT(pcb->rtx_nxt, pcb->snd_una) ? pcb->rtx_nxt : pcb->snd_una;
		uint32_t edge = loss_edge(pcb);

		if (SEQ_LT(from, edge)) {
			uint32_t lost = (edge - from) - sacked_in(pcb, from, edge);

			pipe = pipe > lost ? pipe - lost : 0;
		}
	}
	return pipe;
}

/* ---- RTT (RFC 6298, in ms) ------------------------------------------------------ */

void inet_cc_rtt(struct inet_host *t, struct inet_pcb *pcb, uint32_t tsecr)
{
	uint32_t r = inet_ts_now(t, pcb) - tsecr, srtt, rto;

	if ((int32_t)r < 0 || r > INET_TCP_RTO_MAX_MS)
		return;                         /* not an echo of ours */
	if (!pcb->rtt_valid) {
		pcb->srtt8 = r * 8;
		pcb->rttvar4 = r * 2;
		pcb->rtt_valid = true;
	} else {
		srtt = pcb->srtt8 / 8;
		pcb->rttvar4 = pcb->rttvar4 - pcb->rttvar4 / 4 + (srtt > r ? srtt - r : r - srtt);
		pcb->srtt8 = pcb->srtt8 - pcb->srtt8 / 8 + r;
	}
	rto = pcb->srtt8 / 8 + max32(1, pcb->rttvar4);
	pcb->rto_ms = min32(max32(rto, INET_TCP_RTO_MS), INET_TCP_RTO_MAX_MS);
}

/* ---- congestion control ---------------------------------------------------------- */

void inet_cc_ack(struct inet_host *t, struct inet_pcb *pcb, uint32_t acked)
{
	uint32_t smss = inet_cc_smss(pcb);
	bool grow = pcb->cwnd_limited;

	(void)t;
	pcb->dupacks = 0;
	if (pcb->cc_off)
		return;
	if (pcb->in_recovery) {
		if (SEQ_GEQ(pcb->snd_una, pcb->recover)) {
			/* Everything sent before the loss is in: recovery ends at the halved window. */
			uint32_t flight = pcb->snd_max - pcb->snd_una;

			pcb->in_recovery = false;
			pcb->rtx_force = false;
			pcb->cwnd = pcb->sack_ok ? pcb->ssthresh : min32(pcb->ssthresh, max32(flight, smss) + smss);
			pcb->bytes_acked = 0;
			return;
		}
		/* A partial ACK: the next gap is lost too. */
		if (SEQ_LT(pcb->rtx_nxt, pcb->snd_una))
			pcb->rtx_nxt = pcb->snd_una;
		if (!pcb->sack_ok) {
			/* NewReno (RFC 6582 §3.2 step 5): resend the first unacknowledged segment, deflate. */
			pcb->rtx_nxt = pcb->snd_una;
			pcb->rtx_end = pcb->snd_una + min32(smss, pcb->snd_max - pcb->snd_una);
			pcb->cwnd = (pcb->cwnd > acked ? pcb->cwnd - acked : 0) + (acked >= smss ? smss : 0);
			if (pcb->cwnd < smss)
				pcb->cwnd = smss;
		}
		return;
	}
	if (!grow)
		return;                         /* application- or receiver-limited: nothing was learned */
	if (pcb->cwnd < pcb->ssthresh) {
		/* Slow start: a window per round trip, never past ssthresh at once. */
		pcb->cwnd = min32(pcb->cwnd + acked, max32(pcb->ssthresh, pcb->cwnd));
	} else {
		/* Congestion avoidance: one segment per window acknowledged. */
		pcb->bytes_acked += acked;
		if (pcb->bytes_acked >= pcb->cwnd) {
			pcb->bytes_acked -= pcb->cwnd;
			pcb->cwnd += smss;
		}
	}
	if (pcb->cwnd > CWND_MAX)
		pcb->cwnd = CWND_MAX;
}

void inet_cc_dupack(struct inet_host *t, struct inet_pcb *pcb)
{
	uint32_t smss = inet_cc_smss(pcb), flight = pcb->snd_max - pcb->snd_una;

	pcb->dupacks++;
	if (pcb->cc_off)
		return;                         /* the timer alone resends */
	if (pcb->in_recovery) {
		if (!pcb->sack_ok)
			pcb->cwnd = min32(pcb->cwnd + smss, CWND_MAX);  /* a segment left: inflate */
		return;
	}
	/* After a timeout, duplicates of what went before it start nothing (RFC 6582 §4.1). */
	if (SEQ_LT(pcb->snd_una, pcb->recover) || SEQ_LT(pcb->snd_nxt, pcb->snd_max))
		return;
	/* Three duplicates, three segments' worth SACKed (RFC 6675 §4), or the SACK a tail probe drew. */
	if (pcb->dupacks < INET_TCP_DUPTHRESH &&
	    !(pcb->sack_ok && (pcb->sacked >= INET_TCP_DUPTHRESH * smss || pcb->tlp_out)))
		return;
	t->stats.fast_retransmits++;
	pcb->ssthresh = max32(flight / 2, 2 * smss);
	pcb->recover = pcb->snd_max;
	pcb->in_recovery = true;
	pcb->rtx_nxt = pcb->snd_una;
	pcb->rtx_end = pcb->snd_una + min32(smss, flight);
	pcb->rtx_force = true;
	pcb->bytes_acked = 0;
	pcb->cwnd = pcb->sack_ok ? pcb->ssthresh : pcb->ssthresh + INET_TCP_DUPTHRESH * smss;
	pcb->tlp_on = false;
	pcb->tlp_out = false;
}

void inet_cc_tlp_arm(struct inet_host *t, struct inet_pcb *pcb)
{
	uint32_t pto;

	if (pcb->tlp_on || pcb->tlp_out || !pcb->sack_ok || !pcb->ts_ok || !pcb->rtt_valid ||
	    pcb->snd_una == pcb->snd_max || pcb->fin_sent || pcb->retries > 0 ||
	    SEQ_LT(pcb->snd_nxt, pcb->snd_max))
		return;
	pto = max32(pcb->srtt8 / 4, INET_TCP_PTO_MIN_MS);       /* two smoothed RTTs */
	if (pcb->rto_on && t->now + pto >= pcb->rto_at)
		return;                         /* the RTO comes first anyway */
	pcb->tlp_on = true;
	pcb->tlp_at = t->now + pto;
}

void inet_cc_timeout(struct inet_pcb *pcb)
{
	uint32_t smss = inet_cc_smss(pcb), flight = pcb->snd_max - pcb->snd_una;

	pcb->dupacks = 0;
	if (pcb->cc_off)
		return;                         /* go back to snd_una with the whole window */
	/* The first timeout of a loss halves; repeated ones hold ssthresh (RFC 5681 §3.1). */
	if (pcb->retries <= 1)
		pcb->ssthresh = max32(flight / 2, 2 * smss);
	pcb->cwnd = smss;
	pcb->bytes_acked = 0;
	pcb->dupacks = 0;
	pcb->in_recovery = false;
	pcb->rtx_force = false;
	pcb->tlp_on = false;
	pcb->tlp_out = false;
	pcb->recover = pcb->snd_max;
	/* Twice without progress: the peer may have dropped what it SACKed (RFC 2018 §8); forget it. */
	if (pcb->retries >= 2) {
		pcb->sb_n = 0;
		pcb->sacked = 0;
	}
}

bool inet_cc_next_rtx(const struct inet_pcb *pcb, uint32_t max, uint32_t *seq, uint32_t *len)
{
	uint32_t from, edge, s, e;

	if (!pcb->in_recovery || max == 0)
		return false;
	from = SEQ_GT(pcb->rtx_nxt, pcb->snd_una) ? pcb->rtx_nxt : pcb->snd_una;
	if (!pcb->sack_ok) {
		edge = pcb->rtx_end;
		if (pcb->fin_sent && SEQ_GT(edge, pcb->fin_seq))
			edge = pcb->fin_seq;
		if (!SEQ_LT(from, edge))
			return false;
		*seq = from;
		*len = min32(max, edge - from);
		return true;
	}
	edge = loss_edge(pcb);
	while (SEQ_LT(from, edge)) {
		if (inet_sb_next(pcb, from, &s, &e) && SEQ_LEQ(s, from)) {
			from = e;                   /* SACKed: the peer has it */
			continue;
		}
		if (!inet_sb_next(pcb, from, &s, &e) || !SEQ_LT(s, edge))
			s = edge;               /* the gap runs to the next SACKed range, or to the edge */
		*seq = from;
		*len = min32(max, s - from);
		return true;
	}
	return false;
}
