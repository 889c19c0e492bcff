/* The send rate of a RoCEv2 flow; see roce_rate.h. */
#include "fabric/roce_rate.h"

#include <string.h>

void roce_rate_init(struct roce_rate *r, uint64_t now_us)
{
	memset(r, 0, sizeof(*r));
	r->rate = r->target = ROCE_RATE_START;
	r->tokens = ROCE_RATE_BURST;
	r->refill_us = r->step_us = now_us;
	r->fast = ROCE_RATE_FAST_STEPS; /* no cut to recover from */
	r->alpha = ROCE_RATE_ALPHA_ONE;
}

/* One quiet step of sending: up again (fast recovery first, then additively; a late flow by a little). */
static void raise(struct roce_rate *r)
{
	if (r->late) {
		r->rate += r->rate >> ROCE_RATE_LATE_SHIFT;
		if (r->rate > ROCE_RATE_LINE)
			r->rate = ROCE_RATE_LINE;
		r->target = r->rate;
		r->raises++;
		return;
	}
	if (r->fast < ROCE_RATE_FAST_STEPS) {
		r->fast++;
	} else {
		r->target += ROCE_RATE_AI;
		if (r->target > ROCE_RATE_LINE)
			r->target = ROCE_RATE_LINE;
	}
	r->rate = (r->rate + r->target) / 2;
	r->raises++;
}

static void refill(struct roce_rate *r, uint64_t now_us)
{
	if (now_us > r->refill_us) {
		uint64_t dt = now_us - r->refill_us, credit;

		/* A second or more of quiet fills the bucket at any rate; below that rate * dt fits 64 bits. */
		credit = dt >= 1000000u ? 2 * (uint64_t)ROCE_RATE_BURST : r->rate * dt / 1000000u;
		if (r->tokens + (int64_t)credit >= (int64_t)ROCE_RATE_BURST) {
			r->tokens = ROCE_RATE_BURST;
			r->refill_us = now_us;
		} else {
			/*
			 * Only whole bytes are credited: the clock moves on by what they are worth,
			 * rounded up (what is left over is less than a byte; rounded down, the same
			 * microseconds would be credited again).
			 */
			r->tokens += (int64_t)credit;
			r->refill_us += (credit * 1000000u + r->rate - 1) / r->rate;
		}
	}
	if (now_us - r->step_us >= (r->late ? ROCE_RATE_LATE_STEP_US : ROCE_RATE_STEP_US)) {
		uint64_t span = now_us - r->step_us < 1000000u ? now_us - r->step_us : 1000000u;

		/* A step counts when the flow used half of what its rate allowed in it: it was sending. */
		if (r->step_bytes * 2000000u >= r->rate * span || r->step_bytes >= ROCE_RATE_BURST) {
			raise(r);
			r->alpha -= r->alpha / ROCE_RATE_G; /* a quiet step: the path is less congested */
		}
		r->step_us = now_us;
		r->step_bytes = 0;
	}
}

bool roce_rate_ready(struct roce_rate *r, uint64_t now_us)
{
	refill(r, now_us);
	return r->tokens > 0;
}

void roce_rate_sent(struct roce_rate *r, size_t len, uint64_t now_us)
{
	(void)now_us;
	r->tokens -= (int64_t)len;
	r->step_bytes += len;
}

/* The rate is now `rate` (at least the floor), cut at now_us: a new step, and what was saved up at the old rate goes. */
static void cut_to(struct roce_rate *r, uint64_t rate, uint64_t now_us)
{
	r->rate = rate < ROCE_RATE_MIN ? ROCE_RATE_MIN : rate;
	r->cut_us = now_us;
	r->cuts++;
	r->step_us = now_us;
	r->step_bytes = 0;
	/* the queue that signalled needs time to drain */
	if (r->tokens > 0)
		r->tokens = 0;
	r->refill_us = now_us;
}

bool roce_rate_signal(struct roce_rate *r, uint64_t now_us)
{
	r->signals++;
	if (r->cuts > 0 && now_us - r->cut_us < ROCE_RATE_CUT_GAP_US)
		return false;
	r->target = r->rate;
	cut_to(r, r->rate - r->rate * r->alpha / (2 * ROCE_RATE_ALPHA_ONE), now_us);
	r->alpha += (ROCE_RATE_ALPHA_ONE - r->alpha) / ROCE_RATE_G;
	r->fast = 0;
	return true;
}

bool roce_rate_late(struct roce_rate *r, uint64_t now_us)
{
	r->signals++;
	r->lates++;
	if (r->late && now_us - r->late_us < ROCE_RATE_LATE_GAP_US)
		return false;
	cut_to(r, r->rate / 4, now_us);
	r->target = r->rate;
	r->late = true;
	r->late_us = now_us;
	r->fast = ROCE_RATE_FAST_STEPS;
	return true;
}

void roce_rate_init_late(struct roce_rate *r, uint64_t rate, uint64_t now_us)
{
	roce_rate_init(r, now_us);
	r->rate = r->target = rate < ROCE_RATE_MIN ? ROCE_RATE_MIN : rate > ROCE_RATE_LINE ? ROCE_RATE_LINE : rate;
	r->late = true;
	r->late_us = now_us - ROCE_RATE_LATE_GAP_US; /* a late signal now would count */
}

uint64_t roce_rate_next_us(const struct roce_rate *r, uint64_t now_us)
{
	uint64_t need, us;

	if (r->tokens > 0)
		return now_us;
	need = (uint64_t)(1 - r->tokens);
	us = (need * 1000000u + r->rate - 1) / r->rate;
	return r->refill_us + us > now_us ? r->refill_us + us : now_us;
}
