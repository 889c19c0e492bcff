/*
 * The send rate of one RoCEv2 flow (a queue pair's frames toward its peer), set the way a RoCE
 * NIC's congestion control sets it: DCQCN's reaction point (Zhu et al., SIGCOMM 2015, as
 * ConnectX NICs implement it), simplified to what an emulated segment needs.
 *
 *  - Frames leave while the flow holds tokens. Tokens come at the current rate, up to
 *    ROCE_RATE_BURST bytes: however fast the flow may go, no more than a burst leaves at once.
 *  - A congestion signal cuts the rate, at most once per ROCE_RATE_CUT_GAP_US (a train of
 *    signals about one queue is one event), never below ROCE_RATE_MIN, by alpha / 2: alpha is
 *    DCQCN's estimate of how congested the path is, 1 at the start, moved toward 1 by every cut
 *    and toward 0 by every quiet step (by ROCE_RATE_G), so that a path congested now and then
 *    costs a little and one congested all the time halves the rate each time. The signals are
 *    a CNP from the peer (its receive queue is backing up: roce_port.c sends them) and a loss
 *    the transport saw (a sequence NAK, an ACK timeout, a READ asked for again).
 *  - A late signal is a loss only a timer found: the peer asked again for a READ whose
 *    responses had all gone (rdma_rxe sends no CNPs and notices a lost response only when its
 *    retry timer runs out, seconds later). By then the peer's queue has overflowed for as long
 *    as the timer ran, so the rate is cut to a quarter, at most once per ROCE_RATE_LATE_GAP_US,
 *    and the flow is late from then on: no fast recovery, and it rises by 1/2^ROCE_RATE_LATE_SHIFT
 *    once per ROCE_RATE_LATE_STEP_US of sending, slowly enough that the timer's next verdict
 *    comes before the rate has grown much past what the peer takes.
 *  - Every ROCE_RATE_STEP_US in which the flow sent at least half what its rate allowed (or a
 *    burst) and no signal came, the rate rises: for ROCE_RATE_FAST_STEPS steps halfway back to the rate before the last cut
 *    (DCQCN's fast recovery), then by ROCE_RATE_AI more each step (additive increase), up to
 *    ROCE_RATE_LINE. An idle flow keeps its rate: it learned nothing new.
 *
 * Pure arithmetic on the times the caller passes in: no clock, no allocation.
 */
#ifndef ERNIC_FABRIC_ROCE_RATE_H
#define ERNIC_FABRIC_ROCE_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROCE_RATE_LINE      12500000000ull /* bytes/s: the 100 Gb/s the port reports to the driver */
#define ROCE_RATE_START     1250000000ull  /* bytes/s a new flow starts at (10 Gb/s) */
#define ROCE_RATE_MIN       1000000ull     /* bytes/s: the floor (8 Mb/s) */
#define ROCE_RATE_AI        10000000ull    /* bytes/s added per step after fast recovery */
#define ROCE_RATE_BURST     (64u * 4096u)  /* bytes: the most that leaves back to back */
#define ROCE_RATE_CUT_GAP_US 100u          /* signals closer than this are one event */
#define ROCE_RATE_STEP_US   200u           /* a quiet step of sending earns an increase */
#define ROCE_RATE_FAST_STEPS 5
#define ROCE_RATE_ALPHA_ONE 1024u          /* alpha's fixed point: 1024 is 1 */
#define ROCE_RATE_G         16u            /* alpha moves by 1/16 of the way each time */
#define ROCE_RATE_LATE_GAP_US  500000u     /* late signals closer than this are one loss */
#define ROCE_RATE_LATE_STEP_US 100000u     /* a late flow rises once per 100 ms of sending */
#define ROCE_RATE_LATE_SHIFT   5u          /* by 1/32 */

struct roce_rate {
	uint64_t rate;          /* bytes/s now */
	uint64_t target;        /* bytes/s before the last cut: fast recovery heads back there */
	int64_t tokens;         /* bytes that may leave now (negative after a frame larger than what was left) */
	uint64_t refill_us;     /* tokens were brought up to date at this time */
	uint64_t cut_us;        /* the last cut (valid when cuts > 0) */
	uint64_t step_us;       /* the current step began */
	uint64_t step_bytes;    /* sent in the current step */
	unsigned fast;          /* fast-recovery steps taken since the last cut */
	unsigned alpha;         /* congestion estimate, 0 .. ROCE_RATE_ALPHA_ONE */
	bool late;              /* its peer signals only late: it rises slowly */
	uint64_t late_us;       /* the last late signal (valid when late) */
	uint64_t cuts, signals, raises, lates;
};

void roce_rate_init(struct roce_rate *r, uint64_t now_us);
/* Tokens up to date; true when a frame may leave now. */
bool roce_rate_ready(struct roce_rate *r, uint64_t now_us);
/* A frame of len bytes left (after roce_rate_ready() said it may). */
void roce_rate_sent(struct roce_rate *r, size_t len, uint64_t now_us);
/* A congestion signal (CNP or loss); true when it cut the rate. */
bool roce_rate_signal(struct roce_rate *r, uint64_t now_us);
/* A late signal (a READ asked for again); true when it cut the rate. */
bool roce_rate_late(struct roce_rate *r, uint64_t now_us);
/*
 * A new flow toward a peer whose earlier flow got late signals: it starts at
 * that flow's last rate (at least ROCE_RATE_MIN), late already.
 */
void roce_rate_init_late(struct roce_rate *r, uint64_t rate, uint64_t now_us);
/* When the flow may send again (now_us or later), if it has frames waiting. */
uint64_t roce_rate_next_us(const struct roce_rate *r, uint64_t now_us);

#endif
