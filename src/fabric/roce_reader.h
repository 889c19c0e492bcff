/*
 * How fast a READ's responses may leave for the host that reads them, when
 * that host gives no signal of its own: rdma_rxe sends no CNPs, no ACK
 * answers a READ response, and a reader whose queue overflowed asks for the
 * READ again only when its retry timer runs out, seconds later (a TAP holds
 * 1000 frames toward its reader; a 1 MiB READ at a 1024-byte MTU is 1024).
 * The responder paces READ responses on its own account, per QP, from the
 * one thing the reader does show: when it asks for its next READ.
 *
 *  - Responses leave while a model of the reader's queue (what left, less
 *    what the reader consumed at the pace) holds less than a window
 *    (ROCE_READER_WINDOW_PKTS packets). A new flow starts at
 *    ROCE_READER_START, or at the pace earlier flows to the same peer
 *    settled at (the node remembers it: the pace averaged over the verdicts,
 *    a quarter of the way toward each new one, since a verdict moves it
 *    by steps).
 *  - Each new READ request is a verdict on the READ sent last. A requester
 *    asks for its next READ as its current one nears completion (rdma_rxe
 *    when no more than 128 of its packets are unanswered; perftest keeps
 *    READs posted). So a request that comes while the last READ is still
 *    leaving says the reader waits for us: the pace rises by
 *    1/2^ROCE_READER_WAIT_SHIFT. One that comes a gap after the last READ's
 *    last response: part of the gap is the way there and back (the least
 *    gap seen), the rest is how long the reader still worked after we were
 *    done. Little rest (under 1/16 of the time the READ took to send): the
 *    reader keeps up, and the pace rises by 1/2^ROCE_READER_RISE_SHIFT.
 *    More: the reader took that READ at its size over (send time + rest),
 *    and the pace moves halfway there. A gap of more than a second is a
 *    pause, and says nothing; neither does a READ of no bytes.
 *  - A READ larger than ROCE_READER_LARGE windows gets no verdict until the
 *    reader is through it, and its responses overflow the reader's queue if
 *    the pace is only a little above the reader's (and a reader in a busy
 *    virtual machine varies by more than a little): it leaves at 3/4 of the
 *    pace, and its verdict may lower the pace but never raise it (the pace
 *    a peer's smaller READs found is what a new flow starts with).
 *  - A READ asked for again after its responses went means the reader lost
 *    some: the pace falls by a quarter and the model's queue starts empty.
 *
 * Pure arithmetic on the times the caller passes in: no clock, no allocation.
 */
#ifndef ERNIC_FABRIC_ROCE_READER_H
#define ERNIC_FABRIC_ROCE_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/roce_rate.h"

#define ROCE_READER_START       (32ull << 20)   /* bytes/s a new flow starts at */
#define ROCE_READER_MIN         (1ull << 20)    /* bytes/s: the floor */
#define ROCE_READER_MAX         ROCE_RATE_LINE  /* bytes/s: the line */
#define ROCE_READER_WINDOW_PKTS 128u            /* the window, in path-MTU responses */
#define ROCE_READER_WAIT_SHIFT  3u              /* the reader waits for us: a rise of 1/8 */
#define ROCE_READER_RISE_SHIFT  5u              /* it keeps up: a rise of 1/32 */
#define ROCE_READER_LARGE       8u              /* windows: a READ larger than this leaves at 3/4 of the pace */
#define ROCE_READER_STALE_US    1000000u        /* a gap longer than this is idleness, not work */

struct roce_reader {
	uint64_t window;        /* bytes */
	uint64_t rate;          /* bytes/s: the pace */
	uint64_t settled;       /* bytes/s: the pace averaged over the verdicts (what the node remembers) */
	uint64_t queue;         /* bytes modelled in the reader's queue at queue_us */
	uint64_t queue_us;
	bool sending;           /* the responses of a READ of cur_len bytes are leaving, since start_us */
	uint64_t start_us, cur_len;
	bool have_done;         /* a READ was sent in full since the last verdict: */
	uint64_t done_us, done_len, done_span;  /* its last response at done_us, done_len bytes in done_span us */
	uint64_t gap_min;       /* least gap seen from a READ's last response to the next request */
	uint64_t rises, falls, restarts;
};

void roce_reader_init(struct roce_reader *r, uint32_t pmtu, uint64_t rate, uint64_t now_us);
/* A READ response of bytes payload left, of a READ of len bytes; last: the READ's last. */
void roce_reader_sent(struct roce_reader *r, uint32_t bytes, uint32_t len, bool last, uint64_t now_us);
/* A new READ request was accepted. */
void roce_reader_request(struct roce_reader *r, uint64_t now_us);
/* A READ asked for again after its responses went: the reader lost some and waited; start over. */
void roce_reader_lost(struct roce_reader *r, uint64_t now_us);
/* True when a response may leave now. */
bool roce_reader_open(struct roce_reader *r, uint64_t now_us);
/* When a response may leave (now_us or later). */
uint64_t roce_reader_next_us(const struct roce_reader *r, uint64_t now_us);

#endif
