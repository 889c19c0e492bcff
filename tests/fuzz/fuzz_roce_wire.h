/*
 * What fuzz-roce-wire's input layout shares with gen_corpus.c, so that the
 * seeds and the target cannot drift apart (fuzz_roce_wire.c describes the
 * layout).
 */
#ifndef ERNIC_TESTS_FUZZ_ROCE_WIRE_H
#define ERNIC_TESTS_FUZZ_ROCE_WIRE_H

#include <stdint.h>

#include "fabric/roce_wire.h"

/* Operations (the first byte of each, % FW_NOPS). */
enum { FW_RAW = 0, FW_FRAME, FW_SEND, FW_RECV, FW_CLOCK, FW_ERROR, FW_SUPER, FW_NOPS };

/* FW_FRAME's opcode selector: every RC and UD opcode of the parser's table. */
#define FW_NOPCODES 25
static const uint8_t fw_opcodes[FW_NOPCODES] = {
	ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST, ROCE_RC_SEND_LAST_WITH_IMMEDIATE,
	ROCE_RC_SEND_ONLY, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_FIRST, ROCE_RC_RDMA_WRITE_MIDDLE,
	ROCE_RC_RDMA_WRITE_LAST, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_ONLY,
	ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_READ_REQUEST, ROCE_RC_RDMA_READ_RESPONSE_FIRST,
	ROCE_RC_RDMA_READ_RESPONSE_MIDDLE, ROCE_RC_RDMA_READ_RESPONSE_LAST, ROCE_RC_RDMA_READ_RESPONSE_ONLY,
	ROCE_RC_ACKNOWLEDGE, ROCE_RC_ATOMIC_ACKNOWLEDGE, ROCE_RC_COMPARE_SWAP, ROCE_RC_FETCH_ADD,
	ROCE_RC_SEND_LAST_WITH_INVALIDATE, ROCE_RC_SEND_ONLY_WITH_INVALIDATE, ROCE_UD_SEND_ONLY,
	ROCE_UD_SEND_ONLY_WITH_IMMEDIATE,
};

/* The QPs (FW_FRAME's and the guest operations' qp selector, % FW_NQP). */
#define FW_NQP 5        /* RC 20, 21, 22 on the wire; UD 23; QP1 (GSI) */
#define FW_NRC 3

#endif
