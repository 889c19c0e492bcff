/* The acknowledgement clock of READ responses by ICMP echo; see roce_echo.h. */
#include "fabric/roce_echo.h"

#include <string.h>

void roce_echo_init(struct roce_echo *e)
{
	memset(e, 0, sizeof(*e));
}

void roce_echo_sent(struct roce_echo *e, unsigned frames)
{
	e->sent += frames;
}

static uint64_t window(const struct roce_echo *e)
{
	return e->window != 0 ? e->window : ROCE_ECHO_WINDOW;
}

uint32_t roce_echo_window(const struct roce_echo *e)
{
	return (uint32_t)window(e);
}

/* Frames between probes: an eighth of the window, ROCE_ECHO_EVERY at least. */
static uint64_t every(const struct roce_echo *e)
{
	return window(e) / 8 > ROCE_ECHO_EVERY ? window(e) / 8 : ROCE_ECHO_EVERY;
}

/* A round trip measured at now_us, acknowledging up to mark: the window follows the queue (roce_echo.h). */
static void adjust(struct roce_echo *e, uint64_t rtt, uint64_t mark, uint64_t now_us)
{
	uint64_t now_rtt = UINT64_MAX, queued, w = window(e), step = w / 8;

	if (rtt == 0)
		rtt = 1;
	if (e->base_us == 0 || rtt < e->base_us) {
		e->base_us = e->base_next_us = rtt;
		e->base_at_us = now_us;
	} else if (now_us - e->base_at_us >= ROCE_ECHO_BASE_AGE_US) {
		e->base_us = e->base_next_us < rtt ? e->base_next_us : rtt;
		e->base_next_us = rtt;
		e->base_at_us = now_us;
	} else if (rtt < e->base_next_us) {
		e->base_next_us = rtt;
	}
	e->recent[e->recent_next] = rtt;
	e->recent_next = (e->recent_next + 1) % ROCE_ECHO_RECENT;
	for (unsigned i = 0; i < ROCE_ECHO_RECENT; i++)
		if (e->recent[i] != 0 && e->recent[i] < now_rtt)
			now_rtt = e->recent[i];
	if (mark < e->adjust_mark || !e->limited)
		return; /* once per round trip, and only for a window that was used */
	/* (a recent round trip from before the least was taken afresh may be below it: no queue) */
	queued = now_rtt > e->base_us ? w * (now_rtt - e->base_us) / now_rtt : 0; /* w <= 2^12, rtt < 2^40 us */
	if (queued < ROCE_ECHO_QUEUE_LOW && w < ROCE_ECHO_WINDOW_MAX) {
		w += step > ROCE_ECHO_EVERY ? step : ROCE_ECHO_EVERY;
		e->grown++;
	} else if (queued > ROCE_ECHO_QUEUE_HIGH && w > ROCE_ECHO_WINDOW_MIN) {
		w -= step;
		e->shrunk++;
	} else {
		return;
	}
	e->window = (uint32_t)(w < ROCE_ECHO_WINDOW_MIN ? ROCE_ECHO_WINDOW_MIN : w > ROCE_ECHO_WINDOW_MAX ?
			       ROCE_ECHO_WINDOW_MAX : w);
	e->limited = false;
	e->adjust_mark = e->sent;
}

static void forget_probes(struct roce_echo *e)
{
	e->head = 0;
	e->count = 0;
}

void roce_echo_off(struct roce_echo *e)
{
	forget_probes(e);
	e->state = ROCE_ECHO_OFF;
}

void roce_echo_check(struct roce_echo *e, uint64_t now_us)
{
	if (e->state == ROCE_ECHO_OFF)
		return;
	if (e->state == ROCE_ECHO_MUTE) {
		if (now_us - e->mute_us >= ROCE_ECHO_RETRY_US) {
			e->state = ROCE_ECHO_UNKNOWN;
			e->probed = e->acked = e->sent;
		}
		return;
	}
	if (e->count == 0 || now_us < e->quiet_us || now_us - e->quiet_us < ROCE_ECHO_SILENT_US)
		return;
	/* Nothing answered for a second of probes. */
	forget_probes(e);
	e->probed = e->acked = e->sent; /* what went is the pace model's to count from here */
	if (e->state == ROCE_ECHO_LIVE) {
		e->state = ROCE_ECHO_UNKNOWN;
	} else {
		e->state = ROCE_ECHO_MUTE;
		e->mute_us = now_us;
		e->mutes++;
	}
}

bool roce_echo_live(const struct roce_echo *e)
{
	return e->state == ROCE_ECHO_LIVE;
}

bool roce_echo_open(struct roce_echo *e)
{
	if (e->state != ROCE_ECHO_LIVE)
		return false;
	if (e->sent - e->acked < window(e))
		return true;
	e->limited = true;
	return false;
}

static uint64_t wait_us(const struct roce_echo *e)
{
	uint64_t w = e->srtt_us * 4;

	if (e->srtt_us == 0)
		return ROCE_ECHO_WAIT_FIRST_US;
	return w < ROCE_ECHO_WAIT_MIN_US ? ROCE_ECHO_WAIT_MIN_US : w;
}

/* The newest outstanding probe (count > 0). */
static unsigned newest(const struct roce_echo *e)
{
	return (e->head + e->count - 1) % ROCE_ECHO_PROBES;
}

bool roce_echo_due(const struct roce_echo *e, uint64_t now_us)
{
	bool full = e->sent - e->acked >= window(e);

	if (e->state == ROCE_ECHO_MUTE || e->state == ROCE_ECHO_OFF || e->sent == e->acked)
		return false;
	if (e->sent - e->probed >= every(e))
		return true;
	if (!full || e->state != ROCE_ECHO_LIVE)
		return false;
	/* Full: the frames since the last probe need one of their own, or the last went unanswered too long. */
	if (e->probed != e->sent || e->count == 0)
		return true;
	return now_us - e->probe[newest(e)].us >= wait_us(e);
}

uint16_t roce_echo_probe(struct roce_echo *e, uint64_t now_us)
{
	unsigned slot;
	bool again = e->count > 0 && e->probe[newest(e)].mark == e->sent;

	if (e->count == ROCE_ECHO_PROBES) {
		e->head = (e->head + 1) % ROCE_ECHO_PROBES; /* the oldest is taken as lost: a newer covers its frames */
		e->count--;
	}
	if (e->count == 0)
		e->quiet_us = now_us;
	slot = (e->head + e->count) % ROCE_ECHO_PROBES;
	e->probe[slot].seq = e->next_seq++;
	e->probe[slot].mark = e->sent;
	e->probe[slot].us = now_us;
	e->count++;
	e->probed = e->sent;
	e->probes++;
	e->resent += again;
	return e->probe[slot].seq;
}

bool roce_echo_answer(struct roce_echo *e, uint16_t seq, uint64_t now_us)
{
	for (unsigned k = 0; k < e->count; k++) {
		unsigned i = (e->head + k) % ROCE_ECHO_PROBES;
		uint64_t rtt, mark;

		if (e->probe[i].seq != seq)
			continue;
		mark = e->probe[i].mark;
		if (mark > e->acked)
			e->acked = mark;
		rtt = now_us > e->probe[i].us ? now_us - e->probe[i].us : 0;
		e->srtt_us = e->srtt_us == 0 ? rtt : e->srtt_us - e->srtt_us / 8 + rtt / 8;
		/* Every probe sent before it is answered by it too: FIFO. */
		e->head = (i + 1) % ROCE_ECHO_PROBES;
		e->count -= k + 1;
		e->quiet_us = now_us;
		e->state = ROCE_ECHO_LIVE; /* (MUTE and OFF forgot their probes: no answer finds one) */
		e->answers++;
		adjust(e, rtt, mark, now_us);
		return true;
	}
	e->strays++;
	return false;
}

void roce_echo_lost(struct roce_echo *e, bool dropped)
{
	if (e->state != ROCE_ECHO_LIVE)
		return;
	if (dropped)
		e->window = (uint32_t)(window(e) / 2 >= ROCE_ECHO_WINDOW_MIN ? window(e) / 2 : ROCE_ECHO_WINDOW_MIN);
	forget_probes(e);
	e->probed = e->acked = e->sent;
	e->restarts++;
}

uint64_t roce_echo_next_us(const struct roce_echo *e, uint64_t now_us)
{
	uint64_t at;

	if (e->state != ROCE_ECHO_LIVE || e->sent - e->acked < window(e))
		return UINT64_MAX;
	if (e->count == 0 || e->probed != e->sent)
		return now_us; /* a probe is due at once */
	at = e->probe[newest(e)].us + wait_us(e);
	if (e->quiet_us + ROCE_ECHO_SILENT_US < at)
		at = e->quiet_us + ROCE_ECHO_SILENT_US; /* the verdict of silence comes first */
	return at > now_us ? at : now_us;
}
