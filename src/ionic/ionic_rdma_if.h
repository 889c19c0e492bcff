/*
 * The RDMA half of the ionic device interface, as the stock ionic_rdma
 * driver (Linux 7.2, drivers/infiniband/hw/ionic/ionic_fw.h) and rdma-core's
 * libionic speak it, version 1: the queue-level commands sent on the
 * Ethernet admin queue, RDMA admin queue entries and their payloads,
 * completion and event entries, and send/receive work queue entries. Our own
 * definitions; field names follow the driver's. Byte order is mixed, as on
 * the real device: admin payloads are mostly little-endian, WQEs, CQEs and
 * EQEs big-endian.
 */
#ifndef ERNIC_IONIC_IONIC_RDMA_IF_H
#define ERNIC_IONIC_IONIC_RDMA_IF_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

/* Ethernet admin queue opcodes that manage the RDMA LIF (ionic_if.h). */
enum {
	IONIC_CMD_RDMA_RESET_LIF = 50,
	IONIC_CMD_RDMA_CREATE_EQ = 51,
	IONIC_CMD_RDMA_CREATE_CQ = 52,
	IONIC_CMD_RDMA_CREATE_ADMINQ = 53,
};

/* Logical queue types of the RDMA LIF, as advertised in the LIF identity (doorbell qtypes). */
enum {
	IONIC_RDMA_QTYPE_AQ = 4,
	IONIC_RDMA_QTYPE_SQ = 5,
	IONIC_RDMA_QTYPE_RQ = 6,
	IONIC_RDMA_QTYPE_CQ = 7,
	IONIC_RDMA_QTYPE_EQ = 8,
};

#pragma pack(push, 1)

/* Commands 51-53: the same layout creates an EQ, a CQ or an RDMA admin queue. */
struct ionic_rdma_queue_cmd {
	uint8_t opcode;
	uint8_t rsvd1;
	le16 lif_index;
	le32 qid_ver;       /* queue id, version in bits 31:24 */
	le32 cid;           /* EQ: interrupt index; CQ: EQ id; AQ: CQ id */
	le16 dbid;
	uint8_t depth_log2;
	uint8_t stride_log2;
	le64 dma_addr;      /* physically contiguous ring */
	uint8_t rsvd24[40];
};
_Static_assert(sizeof(struct ionic_rdma_queue_cmd) == 64, "rdma queue cmd");
_Static_assert(offsetof(struct ionic_rdma_queue_cmd, dma_addr) == 16, "rdma queue dma_addr");

/* RDMA admin queue: 64-byte slots, a 4-byte header, the payload spilling into following slots. */
#define IONIC_AQ_STRIDE 64
#define IONIC_AQ_HDR_LEN 4

struct ionic_aq_hdr {
	uint8_t op;
	uint8_t rsvd;
	le16 len;           /* payload bytes */
};

enum {
	IONIC_V1_ADMIN_NOOP = 0,
	IONIC_V1_ADMIN_CREATE_CQ = 1,
	IONIC_V1_ADMIN_CREATE_QP = 2,
	IONIC_V1_ADMIN_CREATE_MR = 3,
	IONIC_V1_ADMIN_STATS_HDRS = 4,
	IONIC_V1_ADMIN_STATS_VALS = 5,
	IONIC_V1_ADMIN_DESTROY_MR = 6,
	IONIC_V1_ADMIN_RESIZE_CQ = 7,
	IONIC_V1_ADMIN_DESTROY_CQ = 8,
	IONIC_V1_ADMIN_MODIFY_QP = 9,
	IONIC_V1_ADMIN_QUERY_QP = 10,
	IONIC_V1_ADMIN_DESTROY_QP = 11,
	IONIC_V1_ADMIN_DEBUG = 12,
	IONIC_V1_ADMIN_CREATE_AH = 13,
	IONIC_V1_ADMIN_QUERY_AH = 14,
	IONIC_V1_ADMIN_MODIFY_DCQCN = 15,
	IONIC_V1_ADMIN_DESTROY_AH = 16,
	IONIC_V1_ADMIN_OPCODES = 17, /* what we advertise: no QP statistics */
};

enum {
	IONIC_V1_ASTS_OK = 0,
	IONIC_V1_ASTS_BAD_CMD = 1,
	IONIC_V1_ASTS_BAD_INDEX = 2,
	IONIC_V1_ASTS_BAD_STATE = 3,
	IONIC_V1_ASTS_BAD_TYPE = 4,
	IONIC_V1_ASTS_BAD_ATTR = 5,
	IONIC_V1_ASTS_MSG_TOO_BIG = 6,
};

struct ionic_admin_create_ah {
	le64 dma_addr;      /* header template */
	le32 length;
	le32 pd_id;
	le32 id_ver;
	le16 dbid_flags;
	uint8_t csum_profile;
	uint8_t crypto;
};
_Static_assert(sizeof(struct ionic_admin_create_ah) == 24, "create_ah");

struct ionic_admin_create_mr {
	le64 va;
	le64 length;
	le32 pd_id;
	le32 id_ver;        /* index << 8 | key */
	le32 tbl_index;
	le32 map_count;
	le64 dma_addr;
	le16 dbid_flags;    /* MR flags */
	uint8_t pt_type;
	uint8_t dir_size_log2;
	uint8_t page_size_log2;
};
_Static_assert(sizeof(struct ionic_admin_create_mr) == 45, "create_mr");

struct ionic_admin_create_cq {
	le32 eq_id;
	uint8_t depth_log2;
	uint8_t stride_log2;
	uint8_t dir_size_log2_rsvd;
	uint8_t page_size_log2;
	le32 cq_flags;
	le32 id_ver;
	le32 tbl_index;
	le32 map_count;
	le64 dma_addr;
	le16 dbid_flags;
};
_Static_assert(sizeof(struct ionic_admin_create_cq) == 34, "create_cq");

struct ionic_admin_create_qp {
	le32 pd_id;
	be32 priv_flags;
	le32 sq_cq_id;
	uint8_t sq_depth_log2;
	uint8_t sq_stride_log2;
	uint8_t sq_dir_size_log2_rsvd;
	uint8_t sq_page_size_log2;
	le32 sq_tbl_index_xrcd_id;
	le32 sq_map_count;
	le64 sq_dma_addr;
	le32 rq_cq_id;
	uint8_t rq_depth_log2;
	uint8_t rq_stride_log2;
	uint8_t rq_dir_size_log2_rsvd;
	uint8_t rq_page_size_log2;
	le32 rq_tbl_index_srq_id;
	le32 rq_map_count;
	le64 rq_dma_addr;
	le32 id_ver;
	le16 dbid_flags;
	uint8_t type_state;
	uint8_t rsvd63;
};
_Static_assert(sizeof(struct ionic_admin_create_qp) == 64, "create_qp");
_Static_assert(offsetof(struct ionic_admin_create_qp, rq_cq_id) == 32, "create_qp rq");
_Static_assert(offsetof(struct ionic_admin_create_qp, id_ver) == 56, "create_qp id");

struct ionic_admin_mod_qp {
	be32 attr_mask;
	uint8_t dcqcn_profile;
	uint8_t tfp_csum_profile;
	be16 access_flags;
	le32 rq_psn;
	le32 sq_psn;
	le32 qkey_dest_qpn;
	le32 rate_limit_kbps;
	uint8_t pmtu;
	uint8_t retry;
	uint8_t rnr_timer;
	uint8_t retry_timeout;
	uint8_t rsq_depth;
	uint8_t rrq_depth;
	le16 pkey_id;
	le32 ah_id_len;
	uint8_t en_pcp;
	uint8_t ip_dscp;
	uint8_t rsvd38;
	uint8_t type_state;  /* new state | current state << 4 */
	le32 rrq_index;
	le32 rsq_index;
	le64 dma_addr;       /* header template */
	le32 id_ver;
};
_Static_assert(sizeof(struct ionic_admin_mod_qp) == 60, "modify_qp");
_Static_assert(offsetof(struct ionic_admin_mod_qp, type_state) == 39, "modify_qp state");

struct ionic_admin_query_qp {
	le64 hdr_dma_addr;
	le64 sq_dma_addr;
	le64 rq_dma_addr;
	le32 ah_id;
	le32 id_ver;
	le16 dbid_flags;
};
_Static_assert(sizeof(struct ionic_admin_query_qp) == 34, "query_qp");

struct ionic_admin_id { /* DESTROY_MR/CQ/QP/AH */
	le32 id;
};

struct ionic_v1_admin_query_qp_sq {
	uint8_t rnr_timer;
	uint8_t retry_timeout;
	be16 access_perms_flags;
	be16 rsvd4;
	be16 pkey_id;
	be32 qkey_dest_qpn;
	be32 rate_limit_kbps;
	be32 rq_psn;
};
_Static_assert(sizeof(struct ionic_v1_admin_query_qp_sq) == 20, "query sq");

struct ionic_v1_admin_query_qp_rq {
	uint8_t state_pmtu;
	uint8_t retry_rnrtry;
	uint8_t rrq_depth;
	uint8_t rsq_depth;
	be32 sq_psn;
	be16 access_perms_flags;
	be16 rsvd10;
};
_Static_assert(sizeof(struct ionic_v1_admin_query_qp_rq) == 12, "query rq");

/* Completion queue entry, 32 bytes. */
struct ionic_v1_cqe {
	union {
		struct {
			be16 cmd_idx;
			uint8_t cmd_op;
			uint8_t rsvd3[17];
			le16 old_sq_cindex;
			le16 old_rq_cq_cindex;
		} admin;
		struct {
			le64 wqe_id;
			be32 src_qpn_op;
			uint8_t src_mac[6];
			be16 vlan_tag;
			be32 imm_data_rkey;
		} recv;
		struct {
			uint8_t rsvd0[4];
			be32 msg_msn;
			uint8_t rsvd8[8];
			le64 npg_wqe_id;
		} send;
	};
	be32 status_length;
	be32 qid_type_flags;
};
_Static_assert(sizeof(struct ionic_v1_cqe) == 32, "cqe");
_Static_assert(offsetof(struct ionic_v1_cqe, status_length) == 24, "cqe status");

#define IONIC_V1_CQE_COLOR       (1u << 0)
#define IONIC_V1_CQE_ERROR       (1u << 1)
#define IONIC_V1_CQE_TYPE_SHIFT  5
#define IONIC_V1_CQE_QID_SHIFT   8
enum {
	IONIC_V1_CQE_TYPE_ADMIN = 0,
	IONIC_V1_CQE_TYPE_RECV = 1,
	IONIC_V1_CQE_TYPE_SEND_MSN = 2,
	IONIC_V1_CQE_TYPE_SEND_NPG = 3,
};
#define IONIC_V1_CQE_RECV_OP_SHIFT 24
#define IONIC_V1_CQE_RECV_IS_IPV4  (1u << 31)
#define IONIC_V1_CQE_RECV_IS_VLAN  (1u << 30) /* vlan_tag holds the datagram's 802.1Q TCI */
enum {
	IONIC_V1_CQE_RECV_OP_SEND = 0,
	IONIC_V1_CQE_RECV_OP_SEND_INV = 1,
	IONIC_V1_CQE_RECV_OP_SEND_IMM = 2,
	IONIC_V1_CQE_RECV_OP_RDMA_IMM = 3,
};
/* CQE error statuses (status_length when the error bit is set). */
enum {
	IONIC_STS_LOCAL_LEN_ERR = 1,
	IONIC_STS_LOCAL_QP_OPER_ERR = 2,
	IONIC_STS_LOCAL_PROT_ERR = 3,
	IONIC_STS_WQE_FLUSHED_ERR = 4,
	IONIC_STS_MEM_MGMT_OPER_ERR = 5,
	IONIC_STS_BAD_RESP_ERR = 6,
	IONIC_STS_LOCAL_ACC_ERR = 7,
	IONIC_STS_REMOTE_INV_REQ_ERR = 8,
	IONIC_STS_REMOTE_ACC_ERR = 9,
	IONIC_STS_REMOTE_OPER_ERR = 10,
	IONIC_STS_RETRY_EXCEEDED = 11,
	IONIC_STS_RNR_RETRY_EXCEEDED = 12,
};

/* Event queue entry: one big-endian word. */
#define IONIC_V1_EQE_COLOR       (1u << 0)
#define IONIC_V1_EQE_TYPE_SHIFT  1
#define IONIC_V1_EQE_CODE_SHIFT  4
#define IONIC_V1_EQE_QID_SHIFT   8
enum {
	IONIC_V1_EQE_TYPE_CQ = 0,
	IONIC_V1_EQE_TYPE_QP = 1,
	IONIC_V1_EQE_CQ_NOTIFY = 0,
	IONIC_V1_EQE_CQ_ERR = 8,
	IONIC_V1_EQE_QP_COMM_EST = 2,
	IONIC_V1_EQE_QP_ERR = 8,
	IONIC_V1_EQE_QP_ERR_REQUEST = 9,
	IONIC_V1_EQE_QP_ERR_ACCESS = 10,
};

/* Work queue entries. */
struct ionic_sge {
	be64 va;
	be32 len;
	be32 lkey;
};
_Static_assert(sizeof(struct ionic_sge) == 16, "sge");

struct ionic_v1_base_hdr {
	le64 wqe_id;          /* opaque to the device: echoed */
	uint8_t op;
	uint8_t num_sge_key;
	be16 flags;
	be32 imm_data_key;
};
_Static_assert(sizeof(struct ionic_v1_base_hdr) == 16, "wqe hdr");

#define IONIC_V1_FLAG_FENCE    (1u << 0)
#define IONIC_V1_FLAG_SOL      (1u << 1)
#define IONIC_V1_FLAG_INL      (1u << 2)
#define IONIC_V1_FLAG_SIG      (1u << 3)
#define IONIC_V1_FLAG_COLOR    (1u << 4)
#define IONIC_V1_FLAG_SPEC32   (1u << 12)
#define IONIC_V1_FLAG_SPEC16   (1u << 13)

/* Offsets inside a send/RDMA WQE (after the header). */
struct ionic_v1_common_bdy {
	be32 ah_id_or_va_high;  /* UD: ah_id; RDMA: remote va high */
	be32 dest_qpn_or_va_low;
	be32 dest_qkey_or_rkey;
	be32 length;
};
_Static_assert(sizeof(struct ionic_v1_common_bdy) == 16, "common body");

struct ionic_v1_atomic_bdy {
	be32 remote_va_high;
	be32 remote_va_low;
	be32 remote_rkey;
	be32 swap_add_high;
	be32 swap_add_low;
	be32 compare_high;
	be32 compare_low;
	uint8_t rsvd28[4];
	struct ionic_sge sge;
};
_Static_assert(sizeof(struct ionic_v1_atomic_bdy) == 48, "atomic body");

struct ionic_v1_reg_mr_bdy {
	be64 va;
	be64 length;
	be64 offset;
	be64 dma_addr;
	be32 map_count;
	be16 flags;
	uint8_t dir_size_log2;
	uint8_t page_size_log2;
	uint8_t rsvd40[8];
};
_Static_assert(sizeof(struct ionic_v1_reg_mr_bdy) == 48, "reg_mr body");

/* BIND_MW (libionic): num_sge_key = the window's new key byte, imm_data_key = its current rkey. */
struct ionic_v1_bind_mw_bdy {
	be64 va;
	be64 length;
	be32 lkey;              /* the memory region bound to */
	be16 flags;             /* IONIC_MRF_* access bits, and IS_MW (| INV_EN for type 2) */
	uint8_t rsvd[26];
};
_Static_assert(sizeof(struct ionic_v1_bind_mw_bdy) == 48, "bind_mw body");

#pragma pack(pop)

#define IONIC_V1_WQE_PLD_OFFSET  32  /* SGEs or inline data, without spec */
#define IONIC_V1_WQE_SPEC_SGE_OFFSET 64 /* SGEs when SPEC16/SPEC32 is set */

enum {
	IONIC_V1_OP_SEND = 0,
	IONIC_V1_OP_SEND_INV = 1,
	IONIC_V1_OP_SEND_IMM = 2,
	IONIC_V1_OP_RDMA_READ = 3,
	IONIC_V1_OP_RDMA_WRITE = 4,
	IONIC_V1_OP_RDMA_WRITE_IMM = 5,
	IONIC_V1_OP_ATOMIC_CS = 6,
	IONIC_V1_OP_ATOMIC_FA = 7,
	IONIC_V1_OP_REG_MR = 8,
	IONIC_V1_OP_LOCAL_INV = 9,
	IONIC_V1_OP_BIND_MW = 10,
	IONIC_V1_OP_COUNT = 11,
};

/* QP types, states and flags. */
enum {
	IONIC_QPT_RC = 0,
	IONIC_QPT_UC = 1,
	IONIC_QPT_RD = 2,
	IONIC_QPT_UD = 3,
	IONIC_QPT_SRQ = 4,
	IONIC_QPT_XRC_INI = 5,
	IONIC_QPT_XRC_TGT = 6,
	IONIC_QPT_XRC_SRQ = 7,
};
enum {
	IONIC_QPS_RESET = 0,
	IONIC_QPS_INIT = 1,
	IONIC_QPS_RTR = 2,
	IONIC_QPS_RTS = 3,
	IONIC_QPS_SQD = 4,
	IONIC_QPS_SQE = 5,
	IONIC_QPS_ERR = 6,
};
#define IONIC_QPF_REMOTE_WRITE   0x1u
#define IONIC_QPF_REMOTE_READ    0x2u
#define IONIC_QPF_REMOTE_ATOMIC  0x4u
#define IONIC_QPF_PRIVILEGED     0x8000u

#define IONIC_MRF_LOCAL_WRITE    0x1u
#define IONIC_MRF_REMOTE_WRITE   0x2u
#define IONIC_MRF_REMOTE_READ    0x4u
#define IONIC_MRF_REMOTE_ATOMIC  0x8u
#define IONIC_MRF_MW_BIND        0x10u
#define IONIC_MRF_ZERO_BASED     0x20u
#define IONIC_MRF_ACCESS_MASK    0xfffu /* the access bits; the rest says what kind of key it is */
#define IONIC_MRF_UKEY_EN        0x2000u
#define IONIC_MRF_IS_MW          0x4000u
#define IONIC_MRF_INV_EN         0x8000u

/* IB verbs attribute mask bits used by MODIFY_QP. */
#define IB_QP_STATE          (1u << 0)
#define IB_QP_CUR_STATE      (1u << 1)
#define IB_QP_ACCESS_FLAGS   (1u << 3)
#define IB_QP_PKEY_INDEX     (1u << 4)
#define IB_QP_QKEY           (1u << 6)
#define IB_QP_AV             (1u << 7)
#define IB_QP_PATH_MTU       (1u << 8)
#define IB_QP_TIMEOUT        (1u << 9)
#define IB_QP_RETRY_CNT      (1u << 10)
#define IB_QP_RNR_RETRY      (1u << 11)
#define IB_QP_RQ_PSN         (1u << 12)
#define IB_QP_MAX_QP_RD_ATOMIC (1u << 13)
#define IB_QP_MIN_RNR_TIMER  (1u << 15)
#define IB_QP_SQ_PSN         (1u << 16)
#define IB_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define IB_QP_DEST_QPN       (1u << 20)
#define IB_QP_RATE_LIMIT     (1u << 25)

#endif
