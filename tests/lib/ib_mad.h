/*
 * Connection manager MADs for tests, at the byte offsets of the IBA tables
 * (vol. 1 ch. 12; MAD offset = 24 + the table's offset) and rdma_cm's private
 * data, written out here and not taken from the server's ib_cm_wire.h, so
 * that a misplaced field in the server's wire header shows up as a failed
 * check. Multi-byte MAD fields are big-endian; the NVMe/RDMA private data is
 * little-endian. Header-only.
 */
#ifndef ERNIC_TESTS_IB_MAD_H
#define ERNIC_TESTS_IB_MAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAD_SIZE 256

/* MAD header */
#define H_BASE     0
#define H_CLASS    1
#define H_CLASSVER 2
#define H_METHOD   3
#define H_STATUS   4
#define H_TID      8
#define H_ATTR     16
#define H_ATTRMOD  20

#define ATTR_REQ      0x0010
#define ATTR_MRA      0x0011
#define ATTR_REJ      0x0012
#define ATTR_REP      0x0013
#define ATTR_RTU      0x0014
#define ATTR_DREQ     0x0015
#define ATTR_DREP     0x0016
#define ATTR_SIDR_REQ 0x0017
#define ATTR_SIDR_REP 0x0018

/* REQ (table 106) */
#define REQ_LCID      24
#define REQ_SID       32
#define REQ_CAGUID    40
#define REQ_QPN       56  /* 3 bytes, responder resources at 59 */
#define REQ_RRES      59
#define REQ_IDEPTH    63
#define REQ_B43       67  /* remote CM response timeout 7:3, transport 2:1, e2e 0 */
#define REQ_PSN       68  /* 3 bytes */
#define REQ_B47       71  /* local CM response timeout 7:3, retry count 2:0 */
#define REQ_PKEY      72
#define REQ_B50       74  /* MTU 7:4, RDC 3, RNR retry 2:0 */
#define REQ_B51       75  /* max CM retries 7:4 */
#define REQ_LGID      80
#define REQ_RGID      96
#define REQ_PRIV      164
/* rdma_cm's cma_hdr at the start of the private data: version, IP version 7:4, port, addresses (16 bytes each) */
#define CMA_VER       (REQ_PRIV + 0)
#define CMA_IPVER     (REQ_PRIV + 1)
#define CMA_PORT      (REQ_PRIV + 2)
#define CMA_SRC       (REQ_PRIV + 4)
#define CMA_DST       (REQ_PRIV + 20)
/* nvme_rdma_cm_req after it (the cma_hdr is 36 bytes): recfmt, qid, hrqsize, hsqsize, cntlid (le16 each) */
#define NVME_REQ      (REQ_PRIV + 36)

/* REP (table 110) */
#define REP_LCID   24
#define REP_RCID   28
#define REP_QKEY   32
#define REP_QPN    36 /* 3 bytes */
#define REP_EECN   40
#define REP_PSN    44 /* 3 bytes */
#define REP_RRES   48
#define REP_IDEPTH 49
#define REP_B26    50 /* target ACK delay 7:3, failover 2:1, e2e 0 */
#define REP_B27    51 /* RNR retry 7:5, SRQ 4 */
#define REP_CAGUID 52
#define REP_PRIV   60

/* REJ (table 108) */
#define REJ_LCID   24
#define REJ_RCID   28
#define REJ_MSG    32 /* 7:6 */
#define REJ_ARILEN 33
#define REJ_REASON 34
#define REJ_ARI    36
#define REJ_PRIV   108

/* RTU, DREQ, DREP, MRA (tables 111, 112, 113, 107) */
#define X_LCID     24
#define X_RCID     28
#define DREQ_RQPN  32 /* 3 bytes */
#define MRA_MSG    32

/* SIDR (tables 119, 120) */
#define SIDR_REQID      24
#define SIDR_REQ_SID    32
#define SIDR_REP_STATUS 28
#define SIDR_REP_SID    36

/* ---- byte access at an offset ---- */

static inline void mad_put16(uint8_t *m, size_t off, uint16_t v)
{
	m[off] = (uint8_t)(v >> 8);
	m[off + 1] = (uint8_t)v;
}

static inline void mad_put24(uint8_t *m, size_t off, uint32_t v)
{
	m[off] = (uint8_t)(v >> 16);
	mad_put16(m, off + 1, (uint16_t)v);
}

static inline void mad_put32(uint8_t *m, size_t off, uint32_t v)
{
	mad_put16(m, off, (uint16_t)(v >> 16));
	mad_put16(m, off + 2, (uint16_t)v);
}

static inline void mad_put64(uint8_t *m, size_t off, uint64_t v)
{
	mad_put32(m, off, (uint32_t)(v >> 32));
	mad_put32(m, off + 4, (uint32_t)v);
}

static inline void mad_put_le16(uint8_t *m, size_t off, uint16_t v)
{
	m[off] = (uint8_t)v;
	m[off + 1] = (uint8_t)(v >> 8);
}

static inline uint16_t mad_get16(const uint8_t *m, size_t off)
{
	return (uint16_t)(m[off] << 8 | m[off + 1]);
}

static inline uint32_t mad_get24(const uint8_t *m, size_t off)
{
	return (uint32_t)m[off] << 16 | mad_get16(m, off + 1);
}

static inline uint32_t mad_get32(const uint8_t *m, size_t off)
{
	return (uint32_t)mad_get16(m, off) << 16 | mad_get16(m, off + 2);
}

static inline uint64_t mad_get64(const uint8_t *m, size_t off)
{
	return (uint64_t)mad_get32(m, off) << 32 | mad_get32(m, off + 4);
}

static inline uint16_t mad_get_le16(const uint8_t *m, size_t off)
{
	return (uint16_t)(m[off] | m[off + 1] << 8);
}

/* A zeroed MAD with the header of a CM Send: base version 1, class 0x07, class version 2, method 0x03. */
static inline void mad_hdr(uint8_t *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, MAD_SIZE);
	m[H_BASE] = 1;
	m[H_CLASS] = 0x07;
	m[H_CLASSVER] = 2;
	m[H_METHOD] = 0x03;
	mad_put64(m, H_TID, tid);
	mad_put16(m, H_ATTR, attr);
}

#endif
