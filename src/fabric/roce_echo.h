/*
 * An acknowledgement clock for READ responses, from the reader's own host.
 *
 * A reader that sends no CNPs (rdma_rxe) shows nothing of its queue while a
 * large READ's responses stream toward it: no ACK answers a READ response,
 * and its next request comes only when the READ is nearly through. What
 * overflows is the queue in front of its host (a TAP holds 1000 frames
 * toward a virtual machine), and that queue is first in, first out for
 * everything sent to the host. So the responder asks the host itself: every
 * ROCE_ECHO_EVERY responses toward a peer it sends an ICMP echo request to
 * the peer's address (RFC 792), and the host's answer says that every frame
 * sent before the request has left that queue. Responses leave while fewer
 * than a window of them are not yet known to have left it, which
 * bounds the queue whatever the reader's pace or its stalls, where a model
 * of its pace (roce_reader.h) has to leave a margin for them.
 *
 *  - A peer's state starts UNKNOWN: probes go, the pace model governs. The
 *    first answer makes it LIVE, and the window governs.
 *  - The window follows the queue, as TCP Vegas does: the least round trip
 *    seen (taken afresh every ROCE_ECHO_BASE_AGE_US) is the way there and
 *    back; the least of the last ROCE_ECHO_RECENT is what it takes now (one
 *    slow answer is a busy host, not a queue), and the difference, as a part
 *    of now, is the part of the window waiting in a queue. Once per round
 *    trip in which the window was full, it grows by an eighth (ROCE_ECHO_EVERY
 *    at least) while fewer than ROCE_ECHO_QUEUE_LOW frames wait, and shrinks
 *    by an eighth while more than ROCE_ECHO_QUEUE_HIGH do, within
 *    [ROCE_ECHO_WINDOW_MIN, ROCE_ECHO_WINDOW_MAX]. A reader slower than us
 *    (rdma_rxe in a virtual machine) keeps a few hundred frames queued in
 *    front of it and never the 1000 its TAP holds; one whose answers take
 *    long for reasons other than a queue (a host that answers from a slow
 *    guest while a fast server drains the queue) sees no queue grow and gets
 *    a window as large as its round trip needs.
 *  - While the window is full, a probe unanswered for the wait
 *    (max(ROCE_ECHO_WAIT_MIN_US, 4 smoothed round trips)) is sent again for
 *    the same frames: a probe or its answer may be lost like any frame.
 *  - A READ asked for again means the reader's timer ran out while it waited:
 *    the window starts over from what was sent (answers may have been lost,
 *    and a requester must not time out for good behind a full window). When
 *    responses had gone and were lost, the peer's queue holds less than the
 *    window: it halves, for the peer's later READs too.
 *  - A peer that leaves probes unanswered for ROCE_ECHO_SILENT_US is not
 *    answering: LIVE goes back to UNKNOWN (the pace model takes over again),
 *    and UNKNOWN becomes MUTE, which sends no probes until
 *    ROCE_ECHO_RETRY_US have passed (a host that drops echo requests costs a
 *    second of probes a minute).
 *
 * A peer that sends a CNP is a NIC with congestion control of its own (a
 * rocm-ernic server sends them when its TAP's queue grows): its CNPs and
 * the pace model serve it, and it is not probed again (OFF). Its answers
 * would come from its guest, whose round trip under emulation says little
 * of the queue its server drains.
 *
 * Only the responses of READs are counted and held: WRITEs and SENDs are
 * bounded by the requester's window of unacknowledged packets, which the
 * reader's ACKs clock.
 *
 * Pure arithmetic on the times the caller passes in: no clock, no allocation.
 */
#ifndef ERNIC_FABRIC_ROCE_ECHO_H
#define ERNIC_FABRIC_ROCE_ECHO_H

#include <stdbool.h>
#include <stdint.h>

#define ROCE_ECHO_WINDOW        512u            /* frames: the window a peer starts with */
#define ROCE_ECHO_WINDOW_MIN    128u
#define ROCE_ECHO_WINDOW_MAX    4096u
#define ROCE_ECHO_QUEUE_LOW     128u            /* frames of ours estimated queued: below, the window may grow */
#define ROCE_ECHO_QUEUE_HIGH    384u            /* above, it shrinks */
#define ROCE_ECHO_BASE_AGE_US   10000000u       /* the least round trip is taken afresh this often */
#define ROCE_ECHO_EVERY         64u             /* frames: a probe after this many (or an eighth of the window) */
#define ROCE_ECHO_RECENT        4u              /* round trips: the least of the last this many stands for now */
#define ROCE_ECHO_PROBES        16u             /* probes outstanding at most (the oldest is forgotten) */
#define ROCE_ECHO_WAIT_MIN_US   5000u           /* a probe unanswered this long, window full: sent again */
#define ROCE_ECHO_WAIT_FIRST_US 20000u          /* the wait before any round trip was measured */
#define ROCE_ECHO_SILENT_US     1000000u        /* probes unanswered this long: the peer is not answering */
#define ROCE_ECHO_RETRY_US      60000000u       /* a mute peer is probed again after this long */

enum roce_echo_state {
	ROCE_ECHO_UNKNOWN = 0,
	ROCE_ECHO_LIVE,
	ROCE_ECHO_MUTE,
	ROCE_ECHO_OFF,          /* the peer sends CNPs: it tells of its queue itself, and is not probed */
};

struct roce_echo {
	enum roce_echo_state state;
	uint32_t window;        /* frames; 0 stands for ROCE_ECHO_WINDOW */
	bool limited;           /* the window was full since the last adjustment */
	uint64_t adjust_mark;   /* the next adjustment waits for an answer for this many frames */
	uint64_t base_us, base_at_us, base_next_us;     /* the least round trip, when it was taken, the least since */
	uint64_t recent[ROCE_ECHO_RECENT];              /* the last round trips (0: none) */
	unsigned recent_next;
	uint64_t sent;          /* READ response frames sent toward the peer */
	uint64_t acked;         /* of them, known to have left its queue */
	uint64_t probed;        /* sent, when the last probe went */
	struct {
		uint16_t seq;
		uint64_t mark;  /* sent, when it went */
		uint64_t us;
	} probe[ROCE_ECHO_PROBES];
	unsigned head, count;   /* outstanding probes, oldest at head */
	uint16_t next_seq;
	uint64_t quiet_us;      /* since when probes are unanswered (valid when count > 0) */
	uint64_t mute_us;       /* MUTE since */
	uint64_t srtt_us;       /* smoothed round trip of an answered probe; 0: none yet */
	uint64_t probes, answers, resent, strays, mutes, restarts, grown, shrunk;
};

void roce_echo_init(struct roce_echo *e);
/* frames READ responses left toward the peer. */
void roce_echo_sent(struct roce_echo *e, unsigned frames);
/* Silence and retry, at now_us: call before the others' decisions. */
void roce_echo_check(struct roce_echo *e, uint64_t now_us);
/* The peer sent a CNP: no more probes, the window no longer governs. */
void roce_echo_off(struct roce_echo *e);
/* True: the window governs (the peer answers). */
bool roce_echo_live(const struct roce_echo *e);
/* True when a READ response may leave (LIVE and the window has room; a full one is noted). */
bool roce_echo_open(struct roce_echo *e);
/* The window now, in frames. */
uint32_t roce_echo_window(const struct roce_echo *e);
/* True when a probe should go now. */
bool roce_echo_due(const struct roce_echo *e, uint64_t now_us);
/* A probe goes now: its sequence number (the oldest outstanding is forgotten when there are too many). */
uint16_t roce_echo_probe(struct roce_echo *e, uint64_t now_us);
/* An answer to probe seq came: true when it was one outstanding. */
bool roce_echo_answer(struct roce_echo *e, uint16_t seq, uint64_t now_us);
/*
 * A READ was asked for again: its reader timed out waiting, so whatever held the window is past
 * (answers lost, or a host that stalled); the count starts over from what was sent, still LIVE.
 * dropped: responses of it had gone and were lost, so the peer's queue is shorter than the
 * window: the window halves (to ROCE_ECHO_WINDOW_MIN at least).
 */
void roce_echo_lost(struct roce_echo *e, bool dropped);
/* When the caller must look again while READ responses wait for the window (UINT64_MAX: no need). */
uint64_t roce_echo_next_us(const struct roce_echo *e, uint64_t now_us);

#endif
