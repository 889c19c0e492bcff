/*
 * The responder side of an InfiniBand RC queue pair over RoCEv2 (IBA Vol 1
 * release 1.4, ch. 9.7: responder packet checks, execution, ACK/NAK
 * generation, duplicates, RNR). It is transport independent: it sees
 * packets only as roce_parse() views, sends only frames built by
 * roce_build(), and reaches memory and the receive queue only through the
 * callbacks of struct roce_rc_ops that its owner supplies. It never
 * allocates, logs or blocks, and keeps no pointer into a packet after
 * roce_rc_resp_input() returns.
 *
 * The owner demultiplexes by DestQP and hands every RC packet addressed to
 * the QP to roce_rc_resp_input(). Responses (ACK, READ RESPONSE, ATOMIC
 * ACKNOWLEDGE) are not the responder's: the call returns ROCE_RC_IN_NOT_REQUEST
 * for them so that the owner can give them to its requester.
 *
 * Rules as implemented (docs/roce.md, "The RC responder"):
 *  - PSNs are 24 bits and compared wrap-safe: a PSN up to 2^23 behind the
 *    expected PSN (ePSN) is a duplicate, one up to 2^23 - 1 ahead is out of
 *    order.
 *  - ePSN: executed. ACK when AckReq is set and at the end of every SEND or
 *    WRITE message; READ responses and ATOMIC ACKNOWLEDGE carry their own AETH.
 *  - Duplicate: never executed again. SEND/WRITE: ACK with PSN ePSN - 1 and
 *    the current MSN. READ: answered again from memory. Atomic: its saved
 *    original value is sent again.
 *  - Ahead: one NAK (PSN sequence error, carrying ePSN) and then silence
 *    until ePSN arrives.
 *  - No receive posted: RNR NAK with min_rnr_timer; nothing executed.
 *  - Invalid request and remote access error NAKs put the QP in the error
 *    state, in which every packet is dropped.
 *
 * With cfg.uc the same engine is a UC responder (IBA 9.7.5.1 for UC): UC
 * opcodes only, handled as their RC twins, and nothing is ever sent back.
 * There are no duplicates, NAKs or RNR: a packet whose PSN is not ePSN ends
 * the message in progress, and the responder then drops packets until a
 * FIRST or ONLY, whose PSN becomes ePSN. A message without a receive
 * posted, or one that fails (a SEND longer than its receive, a WRITE
 * refused by its R_Key, an opcode out of sequence), is dropped the same way
 * and the QP stays usable: UC completes no receive in error. A receive a
 * dropped SEND had begun to fill is kept for the next message.
 */
#ifndef ERNIC_FABRIC_ROCE_RC_H
#define ERNIC_FABRIC_ROCE_RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/roce_wire.h"

/* PSN arithmetic (IBA 9.7: 24-bit sequence numbers, half the space is the duplicate window). */
#define ROCE_RC_PSN_WINDOW (1u << 23)

/* a - b as a signed distance in [-2^23, 2^23 - 1]: > 0 when a is after b. */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & ROCE_PSN_MASK;

	return d >= ROCE_RC_PSN_WINDOW ? (int32_t)d - (int32_t)(ROCE_PSN_MASK + 1) : (int32_t)d;
}

static inline uint32_t roce_psn_add(uint32_t psn, uint32_t n) { return (psn + n) & ROCE_PSN_MASK; }

/* IBA's largest message (2^31 bytes); a longer RETH DMA length is an invalid request. */
#define ROCE_RC_MAX_MSG (1u << 31)

/* Past READ and atomic requests remembered for duplicates (the QP's max_dest_rd_atomic). */
#define ROCE_RC_RD_RING 16

/* The largest frame the responder sends: READ RESPONSE at a 4096-byte path MTU (or an ATOMIC ACK). */
#define ROCE_RC_FRAME_MAX (ROCE_L2L4_LEN + sizeof(struct roce_bth) + sizeof(struct roce_aeth) + \
			   sizeof(struct roce_atomicacketh) + 4096 + 3 + ROCE_ICRC_LEN)

/* Status of a receive completion the responder reports (one table: roce_rc_wc_name()). */
enum roce_rc_wc {
	ROCE_RC_WC_SUCCESS = 0,
	ROCE_RC_WC_LOC_LEN_ERR,         /* the SEND is longer than the receive buffers */
	ROCE_RC_WC_LOC_QP_OP_ERR,       /* opcode sequence error or failed invalidation mid-message */
	ROCE_RC_WC_LOC_ACCESS_ERR,      /* RDMA WRITE with immediate whose memory access failed */
	ROCE_RC_WC_FLUSH_ERR,           /* the owner moved the QP to error (roce_rc_resp_set_error) */
	ROCE_RC_WC_NUM,
};

struct roce_rc_recv_cqe {
	enum roce_rc_wc status;
	uint32_t byte_len;      /* SEND: bytes placed; WRITE with immediate: the RETH DMA length */
	bool has_imm;
	uint32_t imm;           /* as carried on the wire (ImmDt, host order of the be32) */
	bool has_inv;
	uint32_t inv_rkey;
	bool write_imm;         /* an RDMA WRITE with immediate (else a SEND) */
	bool solicited;         /* the last packet had SE set */
};

/*
 * The owner's side; all members are required. Every callback gets the ctx
 * given at init. Data lengths are at most the path MTU. Callbacks are made
 * only from inside roce_rc_resp_input(), and recv_complete also from
 * roce_rc_resp_set_error(); none may call back into the responder.
 */
struct roce_rc_ops {
	/* Take the next posted receive WQE into *handle; false when none is posted (RNR). */
	bool (*recv_take)(void *ctx, uint64_t *handle);
	/* Copy data to byte offset of the receive's buffers; nonzero when it does not fit. */
	int (*recv_write)(void *ctx, uint64_t handle, uint32_t offset, const void *data, uint32_t len);
	/* The receive is done (cqe->status says how); the handle is not used again. */
	void (*recv_complete)(void *ctx, uint64_t handle, const struct roce_rc_recv_cqe *cqe);
	/* Remote memory through an R_Key; nonzero: the key, range or access right is wrong. */
	int (*mem_write)(void *ctx, uint32_t rkey, uint64_t va, const void *data, uint32_t len);
	int (*mem_read)(void *ctx, uint32_t rkey, uint64_t va, void *buf, uint32_t len);
	/*
	 * Optional, both or neither. mem_peek: where len bytes of a READ's range can be read in place
	 * for the rest of the call (NULL: mem_read copies them, and says what is wrong).
	 * send_pieces: a response of such a payload in three pieces, as roce_build_pieces() makes
	 * it (hdr the callee's to change, ROCE_FRAME_HEADROOM bytes before it too).
	 */
	const void *(*mem_peek)(void *ctx, uint32_t rkey, uint64_t va, uint32_t len);
	void (*send_pieces)(void *ctx, uint8_t *hdr, size_t hlen, const void *payload, size_t plen,
			    const uint8_t *trailer, size_t tlen);
	/* An 8-byte atomic at an 8-byte aligned va (checked before the call); *orig the old value. */
	int (*atomic)(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t swap_add, uint64_t compare,
		      uint64_t *orig);
	/* SEND_*_WITH_INVALIDATE: invalidate rkey; nonzero when it cannot be. */
	int (*invalidate)(void *ctx, uint32_t rkey);
	/* One whole Ethernet frame (no FCS) to the requester; the module does not retry it. The
	 * frame is the callee's to change for the call, ROCE_FRAME_HEADROOM bytes before it too. */
	void (*send_frame)(void *ctx, uint8_t *frame, size_t len);
};

struct roce_rc_resp_cfg {
	const struct roce_rc_ops *ops;
	void *ctx;
	uint32_t rqpn;          /* the requester's QPN: DestQP of every response */
	uint32_t epsn;          /* first expected PSN (modify-QP rq_psn) */
	uint16_t pkey;
	uint32_t pmtu;          /* 256, 512, 1024, 2048 or 4096 */
	uint8_t min_rnr_timer;  /* IBA timer code 0..31 */
	uint16_t sport;         /* UDP source port of every response (the flow's entropy) */
	uint8_t tos, ttl;       /* of every response; ttl 0 means 64 */
	bool uc;                /* a UC responder (above) */
};

/* What one packet did (one table: roce_rc_in_name()); counted in stats[]. */
enum roce_rc_in {
	ROCE_RC_IN_EXECUTED = 0,    /* ePSN packet executed */
	ROCE_RC_IN_DUPLICATE,       /* answered from the past, not executed */
	ROCE_RC_IN_RNR,             /* RNR NAK sent; not executed, ePSN unchanged */
	ROCE_RC_IN_SEQ_NAK,         /* ahead of ePSN: the one sequence NAK sent */
	ROCE_RC_IN_SEQ_DROP,        /* ahead of ePSN, NAK already sent: dropped */
	ROCE_RC_IN_FATAL_NAK,       /* invalid request / remote access NAK sent; QP now in error */
	ROCE_RC_IN_ERR_DROP,        /* the QP is in error: dropped */
	ROCE_RC_IN_PKEY_DROP,       /* P_Key does not match (IBA 10.9): dropped silently */
	ROCE_RC_IN_NOT_REQUEST,     /* a response, or another transport's opcode: not the responder's */
	ROCE_RC_IN_UC_DROP,         /* UC: out of sequence, no receive, or failed: the message dropped */
	ROCE_RC_IN_NUM,
};

enum roce_rc_cur {
	ROCE_RC_CUR_NONE = 0,
	ROCE_RC_CUR_SEND,
	ROCE_RC_CUR_WRITE,
};

struct roce_rc_rd_entry {
	bool valid;
	bool atomic;
	uint32_t first_psn, last_psn;
	uint64_t va;            /* READ: the request as executed */
	uint32_t rkey, len;
	uint64_t orig;          /* atomic: the value returned */
};

/*
 * A response the responder still owes, queued in PSN order behind the READ
 * responses ahead of it (the outbox: "Sending" in roce_rc.c).
 */
enum roce_rc_out_kind {
	ROCE_RC_OUT_READ,       /* READ responses first_psn + next .. last, of len bytes at rkey/va */
	ROCE_RC_OUT_ATOMIC,     /* an ATOMIC ACKNOWLEDGE with va as the original value */
	ROCE_RC_OUT_ACK,        /* an ACK or NAK with syndrome */
};

struct roce_rc_out {
	uint8_t kind;           /* enum roce_rc_out_kind */
	uint8_t syndrome;
	uint32_t psn;           /* READ: the first response's; else the packet's */
	uint32_t msn;           /* the AETH's MSN as it stood when the request was answered */
	uint32_t next, n;       /* READ: responses sent, and how many in all */
	uint32_t rkey, len;
	uint64_t va;            /* READ: the first response's address; ATOMIC: the original value */
};

/* Outbox entries: every READ and atomic a requester may have outstanding, an ACK after each, and a NAK. */
#define ROCE_RC_OUTBOX (2 * ROCE_RC_RD_RING + 2)

struct roce_rc_resp {
	const struct roce_rc_ops *ops;
	void *ctx;
	/* configuration */
	uint32_t rqpn, pmtu;
	uint16_t pkey, sport;
	uint8_t min_rnr_timer, tos, ttl;
	/* sequence state */
	uint32_t epsn, msn;
	bool nak_sent;          /* a sequence NAK went out; silent until ePSN arrives */
	bool ack_behind;        /* SEND/WRITE packets executed since the last positive ACK */
	bool error;
	bool uc;
	bool uc_dropping;       /* UC: dropping until a FIRST or ONLY */
	bool recv_held;         /* UC: recv was taken by a SEND that was dropped; the next message gets it */
	/* the message in progress */
	enum roce_rc_cur cur;
	uint64_t recv;          /* SEND, or WRITE with immediate at its LAST: the receive taken */
	uint32_t recv_off;      /* SEND: bytes placed so far */
	uint32_t wr_rkey, wr_left, wr_len;
	uint64_t wr_va;         /* WRITE: where the next payload goes */
	/* READ / atomic history, written round-robin */
	struct roce_rc_rd_entry rd[ROCE_RC_RD_RING];
	unsigned rd_next;
	/* whom to answer: the latest request's addresses, swapped */
	uint8_t peer_mac[NET_ETH_ALEN], local_mac[NET_ETH_ALEN];
	uint32_t peer_ip, local_ip;
	uint16_t ip_id;
	/* responses owed: out[out_head], ... out_count of them (roce_rc_resp_pump) */
	struct roce_rc_out out[ROCE_RC_OUTBOX];
	unsigned out_head, out_count;
	/* counters */
	uint64_t stats[ROCE_RC_IN_NUM];
	uint64_t frames_sent, build_errors;
	uint64_t frames_in_place;       /* of frames_sent: READ responses sent from where their payload lies (send_pieces) */
	uint64_t out_full;      /* a response the outbox had no room for (not sent: the requester retries) */
	uint64_t read_again;    /* READs asked for again after their responses had gone out (lost on the way) */
	uint64_t read_waited;   /* READs asked for again before their responses went (the requester's timer ran out) */
	uint64_t out_dropped;   /* answers to later PSNs dropped for a READ asked again (the requester asks anew) */
	uint64_t reads_new;     /* READ requests accepted (not repeated ones) */
	uint64_t read_bytes_sent; /* payload of READ responses sent (again ones too) */
	uint64_t reads_sent;    /* READs whose last response went */
};

/* 0, or -EINVAL for a NULL ops member, a bad path MTU or a field wider than the wire's. */
int roce_rc_resp_init(struct roce_rc_resp *q, const struct roce_rc_resp_cfg *cfg);

/* One packet roce_parse() accepted (at q's path MTU), addressed to this QP. */
enum roce_rc_in roce_rc_resp_input(struct roce_rc_resp *q, const struct roce_pkt *pkt);

/*
 * Send up to budget of the responses owed (READ responses, and what queued
 * behind them); how many went. A READ's responses are not sent from
 * roce_rc_resp_input(): they wait in the outbox until the owner lets them
 * out at the pace it chooses, and every ACK, NAK or ATOMIC ACKNOWLEDGE for
 * a later request waits behind them (responses leave in PSN order). A
 * memory fault while reading one sends its remote access NAK instead and
 * puts the QP in error (roce_rc_resp_in_error() turns true inside this call).
 */
unsigned roce_rc_resp_pump(struct roce_rc_resp *q, unsigned budget);
/* The next response owed is a READ response (not an ACK, NAK or ATOMIC ACKNOWLEDGE). */
bool roce_rc_resp_next_is_read(const struct roce_rc_resp *q);
/* The length of the READ whose responses are next (0: the next response owed is not a READ's). */
uint32_t roce_rc_resp_head_read_len(const struct roce_rc_resp *q);
/* Responses owed (roce_rc_resp_pump has work). */
static inline bool roce_rc_resp_pending(const struct roce_rc_resp *q) { return q->out_count > 0; }

/* The owner moves the QP to error: a receive in progress completes with ROCE_RC_WC_FLUSH_ERR. */
void roce_rc_resp_set_error(struct roce_rc_resp *q);

static inline bool roce_rc_resp_in_error(const struct roce_rc_resp *q) { return q->error; }

const char *roce_rc_in_name(enum roce_rc_in v);
const char *roce_rc_wc_name(enum roce_rc_wc v);

#endif
