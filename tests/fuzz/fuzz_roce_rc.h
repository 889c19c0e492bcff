/*
 * What fuzz-roce-rc's input layout shares with gen_corpus.c, so that the
 * seeds and the target cannot drift apart: REQ's opcode selector is an
 * index into this table (fuzz_roce_rc.c describes the rest of the layout).
 */
#ifndef ERNIC_TESTS_FUZZ_ROCE_RC_H
#define ERNIC_TESTS_FUZZ_ROCE_RC_H

#include <stdint.h>

#include "fabric/roce_wire.h"

/* The 17 RC request opcodes, then three the responder must not take as requests. */
#define FUZZ_ROCE_RC_NOPS 20
static const uint8_t fuzz_roce_rc_opcodes[FUZZ_ROCE_RC_NOPS] = {
	ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST, ROCE_RC_SEND_LAST_WITH_IMMEDIATE,
	ROCE_RC_SEND_ONLY, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_FIRST, ROCE_RC_RDMA_WRITE_MIDDLE,
	ROCE_RC_RDMA_WRITE_LAST, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_ONLY,
	ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_READ_REQUEST, ROCE_RC_COMPARE_SWAP, ROCE_RC_FETCH_ADD,
	ROCE_RC_SEND_LAST_WITH_INVALIDATE, ROCE_RC_SEND_ONLY_WITH_INVALIDATE,
	ROCE_RC_ACKNOWLEDGE, ROCE_RC_RDMA_READ_RESPONSE_ONLY, ROCE_UD_SEND_ONLY,
};

#endif
