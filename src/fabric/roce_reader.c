/* The pace of a READ's responses; see roce_reader.h. */
#include "fabric/roce_reader.h"

#include <string.h>

static uint64_t clamp_rate(uint64_t rate)
{
	return rate < ROCE_READER_MIN ? ROCE_READER_MIN : rate > ROCE_READER_MAX ? ROCE_READER_MAX : rate;
}

void roce_reader_init(struct roce_reader *r, uint32_t pmtu, uint64_t rate, uint64_t now_us)
{
	memset(r, 0, sizeof(*r));
	r->window = (uint64_t)ROCE_READER_WINDOW_PKTS * pmtu;
	r->rate = clamp_rate(rate != 0 ? rate : ROCE_READER_START);
	r->settled = r->rate;
	r->queue_us = now_us;
	r->gap_min = UINT64_MAX;
}

/* What the reader consumed since queue_us, at the pace, taken off the queue. */
static void drain(struct roce_reader *r, uint64_t now_us)
{
	uint64_t dt, d;

	if (now_us <= r->queue_us)
		return;
	dt = now_us - r->queue_us;
	if (dt >= 1000000u) {
		r->queue = 0; /* a second drains any queue the window allows */
		r->queue_us = now_us;
		return;
	}
	d = r->rate * dt / 1000000u; /* rate <= 1.25e10, dt < 1e6: fits */
	if (d == 0)
		return; /* less than a byte: the time stays to be counted with the next */
	r->queue = r->queue > d ? r->queue - d : 0;
	r->queue_us = now_us;
}

void roce_reader_sent(struct roce_reader *r, uint32_t bytes, uint32_t len, bool last, uint64_t now_us)
{
	drain(r, now_us);
	/* Counted 4/3 of its size: it leaves at 3/4 of the pace. */
	r->queue += len > ROCE_READER_LARGE * r->window ? bytes + bytes / 3 : bytes;
	if (!r->sending) {
		r->sending = true;
		r->start_us = now_us;
	}
	r->cur_len = len;
	if (last) {
		r->sending = false;
		r->have_done = true;
		r->done_us = now_us;
		r->done_len = len;
		r->done_span = now_us - r->start_us;
	}
}

/* After a verdict: the settled pace moves a quarter of the way toward the new pace. */
static void settle(struct roce_reader *r)
{
	r->settled = r->settled - r->settled / 4 + r->rate / 4;
}

static void rise(struct roce_reader *r, unsigned shift)
{
	r->rate = clamp_rate(r->rate + (r->rate >> shift));
	r->rises++;
	settle(r);
}

void roce_reader_request(struct roce_reader *r, uint64_t now_us)
{
	uint64_t gap, rest, took, est, len = r->done_len, span = r->done_span;
	bool large = len > ROCE_READER_LARGE * r->window;

	if (r->sending) {
		r->have_done = false;
		if (r->cur_len <= ROCE_READER_LARGE * r->window)
			rise(r, ROCE_READER_WAIT_SHIFT); /* asked for the next while the last was still leaving: it waits for us */
		return;
	}
	if (!r->have_done || now_us < r->done_us)
		return; /* nothing sent in full since the last verdict: one of the first requests */
	r->have_done = false;
	if (len == 0)
		return; /* a READ of nothing took the reader no time: it says nothing of its rate */
	gap = now_us - r->done_us;
	if (gap > ROCE_READER_STALE_US)
		return; /* the requester paused: what was sent before says nothing now */
	if (gap < r->gap_min)
		r->gap_min = gap;
	rest = gap - r->gap_min;
	if (rest * 16 <= span) {
		/* Through with it about when we were: it keeps up (a large READ says too little to go faster). */
		if (!large)
			rise(r, ROCE_READER_RISE_SHIFT);
		return;
	}
	/* It took len in (our sending time + the rest); the pace goes halfway there. */
	took = span + rest;
	est = len * 1000000u / took; /* len <= 2^31, took > 0 */
	if (est < r->rate) {
		r->rate = clamp_rate((r->rate + est) / 2);
		r->falls++;
	}
	settle(r);
}

void roce_reader_lost(struct roce_reader *r, uint64_t now_us)
{
	r->restarts++;
	r->rate = clamp_rate(r->rate - r->rate / 4);
	r->settled = r->settled < r->rate ? r->settled : r->rate;
	r->queue = 0;
	r->queue_us = now_us;
	r->have_done = false;
	r->sending = false;
}

bool roce_reader_open(struct roce_reader *r, uint64_t now_us)
{
	drain(r, now_us);
	return r->queue < r->window;
}

uint64_t roce_reader_next_us(const struct roce_reader *r, uint64_t now_us)
{
	uint64_t need, at;

	if (r->queue < r->window)
		return now_us;
	need = r->queue - r->window + 1;
	at = r->queue_us + (need * 1000000u + r->rate - 1) / r->rate;
	return at > now_us ? at : now_us;
}
