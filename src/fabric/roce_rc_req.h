/*
 * The requester side of an InfiniBand RC queue pair over RoCEv2 (IBA Vol 1
 * release 1.4, ch. 9.7.1-9.7.6: PSN assignment, segmentation, ACK/NAK
 * processing, retries, RNR). Like the responder (roce_rc.h) it is transport
 * independent: it sends only frames built by roce_build(), sees responses
 * only as roce_parse() views, reaches local memory only through the
 * callbacks of struct roce_rc_req_ops, and learns the time only from the
 * now_us its owner passes in. It never allocates, logs or blocks, and keeps
 * no pointer into a packet after roce_rc_req_input() returns.
 *
 * The owner posts work requests (struct roce_rc_req_wr, not WQE bytes),
 * calls roce_rc_req_pump() to let packets out (a budget per call), hands
 * every response addressed to the QP to roce_rc_req_input(), and calls
 * roce_rc_req_tick() once roce_rc_req_next_deadline() has passed.
 *
 * Rules as implemented (docs/roce.md, "The RC requester"):
 *  - PSNs are given out at post time, one per packet; a READ takes as many
 *    as it will get responses (ceil(len / pmtu), at least 1), an atomic one.
 *    Everything between the oldest unacknowledged PSN and the next free one
 *    stays below 2^23 PSNs, so roce_psn_diff() orders them.
 *  - Messages are cut at the path MTU (FIRST/MIDDLE/LAST or ONLY). RETH on
 *    WRITE FIRST/ONLY, ImmDt/IETH on LAST/ONLY. AckReq on the last packet of
 *    every message and, when cfg.ackreq_every is N > 0, on every Nth packet
 *    of a SEND or WRITE (packet index k with (k + 1) % N == 0).
 *  - At most max_rd_atomic READs/atomics are on the wire (sent and not
 *    complete); the send stream waits behind the next one until one ends.
 *  - With cfg.max_unacked N > 0, no packet is sent (new or resent) whose PSN
 *    is N or more past the oldest unacknowledged one (a READ request counts
 *    by its first PSN): a responder slower than the link, such as a software
 *    RoCE stack, is never buried under a whole queue of messages that it
 *    would drop and that go-back-N would then send again in full.
 *  - An ACK with PSN p acknowledges every PSN up to p; READ responses and
 *    ATOMIC ACKNOWLEDGEs acknowledge every PSN before their own. WRs
 *    complete in posting order once all their PSNs are acknowledged (a
 *    READ once all its responses are placed).
 *  - Going back (go-back-N) restarts sending at the oldest unacknowledged
 *    PSN; a partly answered READ is requested again for its remainder.
 *    Causes: a sequence NAK, a response showing that an earlier READ or
 *    atomic lost its responses ("implied NAK"), a response ahead of the
 *    next expected READ response, and the local ACK timeout. Only one go-back per
 *    oldest unacknowledged PSN is made for NAKs and implied NAKs (the others
 *    are echoes of the same loss); the timeout always goes back.
 *  - retry_cnt is spent on each go-back, rnr_retry on each RNR NAK (7:
 *    forever); both are reset whenever the oldest unacknowledged PSN moves.
 *    Exhausted: the WR at the head fails with RETRY_EXC / RNR_RETRY_EXC.
 *  - Invalid request, remote access and remote operational NAKs fail the
 *    WR they name; any error moves the QP to error, and every WR left then
 *    completes with FLUSH_ERR (signaled or not).
 *  - Responses outside [oldest unacknowledged, highest sent] are stale:
 *    ignored and counted. The MSN is not used (PSNs say everything the
 *    requester needs) and AETH credits are ignored (RoCE responders send 31).
 *
 * With cfg.uc it is a UC requester: SEND and RDMA WRITE only (with
 * immediate), sent with the UC opcodes and never with AckReq. Nothing comes
 * back on UC, so a WR completes as soon as its last packet has gone out:
 * no timer, no retries, and any packet addressed to the QP is ignored.
 */
#ifndef ERNIC_FABRIC_ROCE_RC_REQ_H
#define ERNIC_FABRIC_ROCE_RC_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/roce_rc.h"
#include "fabric/roce_wire.h"

/* Work requests the queue holds at once (posted and not yet completed). */
#define ROCE_RC_REQ_MAX_WR 128

/* The most READs/atomics the config may allow on the wire (the responder's ROCE_RC_RD_RING). */
#define ROCE_RC_REQ_MAX_RD_ATOMIC ROCE_RC_RD_RING

/* Room for any frame the requester sends (WRITE ONLY with RETH, ImmDt and 4096 bytes; an atomic is smaller). */
#define ROCE_RC_REQ_FRAME_MAX (ROCE_L2L4_LEN + sizeof(struct roce_bth) + sizeof(struct roce_atomiceth) + \
			       sizeof(struct roce_immdt) + 4096 + 3 + ROCE_ICRC_LEN)

enum roce_rc_req_op {
	ROCE_RC_REQ_SEND = 0,
	ROCE_RC_REQ_SEND_IMM,
	ROCE_RC_REQ_SEND_INV,
	ROCE_RC_REQ_WRITE,
	ROCE_RC_REQ_WRITE_IMM,
	ROCE_RC_REQ_READ,
	ROCE_RC_REQ_CMP_SWAP,
	ROCE_RC_REQ_FETCH_ADD,
	ROCE_RC_REQ_OP_NUM,
};

/* Status of a send-queue completion (one table: roce_rc_req_wc_name()). */
enum roce_rc_req_wc {
	ROCE_RC_REQ_WC_SUCCESS = 0,
	ROCE_RC_REQ_WC_LOC_PROT_ERR,        /* local_read/local_write refused the WR's buffer */
	ROCE_RC_REQ_WC_REM_INV_REQ_ERR,     /* NAK invalid request */
	ROCE_RC_REQ_WC_REM_ACCESS_ERR,      /* NAK remote access error */
	ROCE_RC_REQ_WC_REM_OP_ERR,          /* NAK remote operational error */
	ROCE_RC_REQ_WC_REM_INV_RD_REQ_ERR,  /* NAK invalid RD request */
	ROCE_RC_REQ_WC_BAD_RESP_ERR,        /* a response of the wrong opcode or length, or a reserved NAK code */
	ROCE_RC_REQ_WC_RETRY_EXC_ERR,       /* retry_cnt spent (timeouts, sequence NAKs) */
	ROCE_RC_REQ_WC_RNR_RETRY_EXC_ERR,   /* rnr_retry spent */
	ROCE_RC_REQ_WC_FLUSH_ERR,           /* the QP went to error before this WR finished */
	ROCE_RC_REQ_WC_NUM,
};

struct roce_rc_req_wr {
	uint64_t wr_id;
	enum roce_rc_req_op op;
	bool signaled;          /* a successful completion is reported (errors always are) */
	bool solicited;         /* SE on the last packet of a SEND or WRITE with immediate */
	uint32_t len;           /* SEND/WRITE/READ bytes, at most ROCE_RC_MAX_MSG; atomics: ignored (8) */
	uint64_t va;            /* remote address (WRITE, READ, atomics) */
	uint32_t rkey;          /* remote key (WRITE, READ, atomics) */
	uint32_t imm;           /* SEND_IMM, WRITE_IMM */
	uint32_t inv_rkey;      /* SEND_INV */
	uint64_t swap_add;      /* CMP_SWAP: swap value; FETCH_ADD: the value to add */
	uint64_t compare;       /* CMP_SWAP */
};

/*
 * The owner's side; all members are required and get the ctx given at init.
 * Callbacks are made only from inside roce_rc_req_pump(), _input(), _tick()
 * and _set_error(); none may call back into the requester.
 */
struct roce_rc_req_ops {
	/* Payload of a SEND/WRITE: len bytes at offset of the WR's local buffer; nonzero refuses. */
	int (*local_read)(void *ctx, uint64_t wr_id, uint32_t offset, void *buf, uint32_t len);
	/* READ response data to offset of the WR's local buffer (every byte once per response, maybe
	 * again after a re-request); nonzero refuses. */
	int (*local_write)(void *ctx, uint64_t wr_id, uint32_t offset, const void *data, uint32_t len);
	/* A WR is done, in posting order: byte_len is the WR's length (8 for atomics) on success,
	 * atomic_orig the remote value before an atomic. */
	void (*complete)(void *ctx, uint64_t wr_id, enum roce_rc_req_wc status, uint32_t byte_len,
			 uint64_t atomic_orig);
	/* One whole Ethernet frame (no FCS) to the responder; loss is recovered by the retries. The
	 * frame is the callee's to change for the call, ROCE_FRAME_HEADROOM bytes before it too. */
	void (*send_frame)(void *ctx, uint8_t *frame, size_t len);
	/*
	 * Optional, both or neither. local_peek: where len bytes at offset of the WR's local buffer
	 * can be read in place for the rest of the call (NULL: local_read copies them, and says
	 * what is wrong). send_pieces: the frame of such a payload in three pieces, as
	 * roce_build_pieces() makes it: hdr (the callee's to change, ROCE_FRAME_HEADROOM bytes
	 * before it too), the payload where it lies, the trailer (pad and ICRC).
	 */
	const void *(*local_peek)(void *ctx, uint64_t wr_id, uint32_t offset, uint32_t len);
	void (*send_pieces)(void *ctx, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			    const uint8_t *trailer, size_t tlen);
};

struct roce_rc_req_cfg {
	const struct roce_rc_req_ops *ops;
	void *ctx;
	/* addressing of every frame (IPv4 addresses in host order) */
	uint8_t src_mac[NET_ETH_ALEN], dst_mac[NET_ETH_ALEN];
	uint32_t src_ip, dst_ip;
	uint16_t sport;         /* UDP source port (the flow's entropy) */
	uint8_t tos, ttl;       /* ttl 0 means 64 */
	uint32_t dqpn;          /* the responder's QPN */
	uint16_t pkey;
	uint32_t pmtu;          /* 256, 512, 1024, 2048 or 4096 */
	uint32_t sq_psn;        /* first PSN (modify-QP sq_psn) */
	uint8_t max_rd_atomic;  /* 1 .. ROCE_RC_REQ_MAX_RD_ATOMIC */
	uint8_t timeout;        /* local ACK timeout code: 4.096 us * 2^timeout, 0 = none; <= 31 */
	uint8_t retry_cnt;      /* 0..7 */
	uint8_t rnr_retry;      /* 0..7, 7 = retry forever */
	uint32_t ackreq_every;  /* AckReq also on every Nth packet of a SEND/WRITE; 0 = message ends only */
	uint32_t max_unacked;   /* at most this many PSNs past the oldest unacknowledged are sent; 0 = no limit */
	bool uc;                /* a UC requester (above) */
};

/* What one response did (one table: roce_rc_req_in_name()); counted in stats[]. */
enum roce_rc_req_in {
	ROCE_RC_REQ_IN_ACK = 0,         /* an ACK that acknowledged something */
	ROCE_RC_REQ_IN_READ_RESP,       /* READ response data placed */
	ROCE_RC_REQ_IN_ATOMIC_ACK,      /* an atomic completed */
	ROCE_RC_REQ_IN_SEQ_NAK,         /* sequence NAK: went back */
	ROCE_RC_REQ_IN_IMPLIED_NAK,     /* a READ/atomic lost responses, or a response is ahead: went back */
	ROCE_RC_REQ_IN_ECHO,            /* another sign of a loss already being recovered: ignored */
	ROCE_RC_REQ_IN_RNR_NAK,         /* RNR NAK: waiting, then going back */
	ROCE_RC_REQ_IN_FATAL,           /* error NAK or bad response: QP now in error */
	ROCE_RC_REQ_IN_STALE,           /* PSN outside the outstanding range: ignored */
	ROCE_RC_REQ_IN_ERR_DROP,        /* the QP is in error: ignored */
	ROCE_RC_REQ_IN_PKEY_DROP,       /* P_Key does not match (IBA 10.9): ignored */
	ROCE_RC_REQ_IN_NOT_RESPONSE,    /* a request or UD opcode: not the requester's */
	ROCE_RC_REQ_IN_NUM,
};

struct roce_rc_req_wqe {
	struct roce_rc_req_wr wr;
	uint32_t first_psn, last_psn;
	uint32_t npsn;                  /* last_psn - first_psn + 1 */
	bool sent;                      /* at least one packet went out (READ/atomic: counted in rd_out) */
	enum roce_rc_req_wc status;     /* the error it completes with when the QP goes to error */
	uint64_t orig;                  /* atomic: the value returned */
};

struct roce_rc_req {
	const struct roce_rc_req_ops *ops;
	void *ctx;
	struct roce_rc_req_cfg cfg;     /* ops/ctx copied above; the rest as given */
	uint64_t timeout_us;            /* 0: no local ACK timer */
	/* the WR ring: wqe[head], wqe[head + 1], ... count of them, oldest first */
	struct roce_rc_req_wqe wqe[ROCE_RC_REQ_MAX_WR];
	unsigned head, count;
	/* PSNs: una <= send_psn <= sent_max <= next_psn, all in one 2^23 window */
	uint32_t una;                   /* oldest unacknowledged */
	uint32_t send_psn;              /* the next packet pump sends (behind sent_max after a go-back) */
	uint32_t sent_max;              /* one past the highest PSN ever sent */
	uint32_t next_psn;              /* the first PSN of the next posted WR */
	unsigned rd_out;                /* READs/atomics sent and not complete */
	/* recovery */
	uint8_t retry_left, rnr_left;
	bool went_back;                 /* a go-back for una is under way (echoes ignored) */
	bool timer_armed;
	uint64_t ack_deadline;
	bool rnr_wait;
	uint64_t rnr_until;
	bool error;
	uint16_t ip_id;
	/* counters */
	uint64_t stats[ROCE_RC_REQ_IN_NUM];
	uint64_t frames_sent, retransmits, timeouts, rd_blocked, window_blocked, build_errors;
	uint64_t frames_in_place;       /* of frames_sent: their payload sent from where it lies (send_pieces) */
	/* since una last moved (for a failure's post-mortem: a silent responder, or one answering stale PSNs) */
	uint64_t una_moved_us;          /* when it last moved (0: never) */
	uint64_t last_response_us;      /* when the last response of any kind came (0: none yet) */
	uint32_t responses_since;       /* responses since then, stale ones included */
	uint32_t stale_since;           /* of which stale */
};

/* 0, or -EINVAL for a NULL ops member or a config field out of range. */
int roce_rc_req_init(struct roce_rc_req *q, const struct roce_rc_req_cfg *cfg);

/*
 * Queue one WR (copied). 0; -EINVAL for an unknown op (on UC: anything but
 * SEND, SEND_IMM, WRITE and WRITE_IMM) or a length over ROCE_RC_MAX_MSG; -ENOSPC when ROCE_RC_REQ_MAX_WR are queued or its PSNs
 * would stretch the outstanding range to 2^23; -EPIPE in the error state.
 */
int roce_rc_req_post(struct roce_rc_req *q, const struct roce_rc_req_wr *wr);

/* Send up to budget packets (new or resent); returns how many went out. */
unsigned roce_rc_req_pump(struct roce_rc_req *q, unsigned budget, uint64_t now_us);

/* One response roce_parse() accepted (at q's path MTU), addressed to this QP. */
enum roce_rc_req_in roce_rc_req_input(struct roce_rc_req *q, const struct roce_pkt *pkt, uint64_t now_us);

/* Run the timers: the local ACK timeout (go back or fail) and the end of an RNR wait. */
void roce_rc_req_tick(struct roce_rc_req *q, uint64_t now_us);

/* When tick next has something to do; UINT64_MAX when no timer runs. */
uint64_t roce_rc_req_next_deadline(const struct roce_rc_req *q);

/* The owner moves the QP to error: every queued WR completes with ROCE_RC_REQ_WC_FLUSH_ERR. */
void roce_rc_req_set_error(struct roce_rc_req *q);

static inline bool roce_rc_req_in_error(const struct roce_rc_req *q) { return q->error; }
/* Whether roce_rc_req_pump() may have a packet to send now (it may still find its window or depth full). */
static inline bool roce_rc_req_may_send(const struct roce_rc_req *q, uint64_t now_us)
{
	return !q->error && q->send_psn != q->next_psn && !(q->rnr_wait && now_us < q->rnr_until);
}
static inline unsigned roce_rc_req_queued(const struct roce_rc_req *q) { return q->count; }

/* The RNR NAK timer codes of IBA Table 45 in microseconds (code 0 is 655.36 ms). */
uint32_t roce_rnr_timer_us(uint8_t code);

const char *roce_rc_req_in_name(enum roce_rc_req_in v);
const char *roce_rc_req_wc_name(enum roce_rc_req_wc v);
const char *roce_rc_req_op_name(enum roce_rc_req_op v);

#endif
