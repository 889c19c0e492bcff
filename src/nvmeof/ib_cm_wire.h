/*
 * Wire formats of the IB communication manager as rdma_cm and NVMe/RDMA use
 * them: the 24-byte MAD common header (IBA vol. 1 ch. 13.4.2), the CM
 * messages of IBA vol. 1 ch. 12.6 (tables 106-120), the rdma_cm header that
 * opens a REQ's private data, and the NVMe/RDMA connect private data
 * (NVMe over Fabrics 1.1 RDMA transport binding; include/linux/nvme-rdma.h).
 * Field positions checked against Linux 7.2 include/rdma/ibta_vol1_c12.h.
 *
 * Every message struct is the whole 256-byte MAD, header included, so the
 * offset asserts read "IB_CM_MSG + n" where n is the byte offset the IBA
 * table gives (those offsets count from the end of the MAD header). IBA
 * numbers bits from the most significant one, so "byte 43 bits 0-4" is
 * (byte >> 3) & 0x1f here.
 *
 * Fields that are not whole bytes live inside the be32/u8 that holds them
 * and are read and written through the accessors below, never bitfields.
 */
#ifndef ERNIC_NVMEOF_IB_CM_WIRE_H
#define ERNIC_NVMEOF_IB_CM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

#define IB_MAD_SIZE 256
#define IB_CM_MSG   24 /* the CM message starts after the MAD header */

/* MAD common header values a CM MAD carries. */
#define IB_MAD_BASE_VERSION   1
#define IB_MAD_CLASS_CM       0x07
#define IB_CM_CLASS_VERSION   2
#define IB_MAD_METHOD_SEND    0x03

/* CM attribute IDs (IBA vol. 1 table 104). */
#define IB_CM_ATTR_REQ      0x0010
#define IB_CM_ATTR_MRA      0x0011
#define IB_CM_ATTR_REJ      0x0012
#define IB_CM_ATTR_REP      0x0013
#define IB_CM_ATTR_RTU      0x0014
#define IB_CM_ATTR_DREQ     0x0015
#define IB_CM_ATTR_DREP     0x0016
#define IB_CM_ATTR_SIDR_REQ 0x0017
#define IB_CM_ATTR_SIDR_REP 0x0018

/* REQ transport service type. */
#define IB_CM_TRANSPORT_RC 0
#define IB_CM_TRANSPORT_UC 1

/* REJ / MRA "message rejected" values. */
#define IB_CM_MSG_RESPONSE_REQ   0
#define IB_CM_MSG_RESPONSE_REP   1
#define IB_CM_MSG_RESPONSE_OTHER 2

/* REJ reasons (IBA vol. 1 table 109; include/rdma/ib_cm.h). */
#define IB_CM_REJ_TIMEOUT            4
#define IB_CM_REJ_INVALID_SERVICE_ID 8
#define IB_CM_REJ_STALE_CONN         10
#define IB_CM_REJ_CONSUMER_DEFINED   28

/* REP failover accepted. */
#define IB_CM_FAILOVER_ACCEPTED 0

/* SIDR_REP status: the service ID is not supported. */
#define IB_CM_SIDR_UNSUPPORTED 1

/* Private data each message carries in a 256-byte MAD. */
#define IB_CM_REQ_PRIVATE_DATA_SIZE  92
#define IB_CM_MRA_PRIVATE_DATA_SIZE  222
#define IB_CM_REJ_ARI_SIZE           72
#define IB_CM_REJ_PRIVATE_DATA_SIZE  148
#define IB_CM_REP_PRIVATE_DATA_SIZE  196
#define IB_CM_RTU_PRIVATE_DATA_SIZE  224
#define IB_CM_DREQ_PRIVATE_DATA_SIZE 220
#define IB_CM_DREP_PRIVATE_DATA_SIZE 224
#define IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE 216
#define IB_CM_SIDR_REP_INFO_SIZE     72
#define IB_CM_SIDR_REP_PRIVATE_DATA_SIZE 136

/* rdma_cm: the service ID space of RDMA_PS_TCP is 0x0106 << 16 | port. */
#define RDMA_CM_PS_TCP      0x0106u
#define RDMA_CM_CMA_VERSION 0x00

/* NVMe/RDMA connect private data. */
#define NVME_RDMA_CM_FMT_1_0        0x0
#define NVME_RDMA_CM_INVALID_LEN     0x01
#define NVME_RDMA_CM_INVALID_RECFMT  0x02
#define NVME_RDMA_CM_INVALID_QID     0x03
#define NVME_RDMA_CM_INVALID_HSQSIZE 0x04
#define NVME_RDMA_CM_INVALID_HRQSIZE 0x05
#define NVME_RDMA_CM_NO_RSC          0x06
#define NVME_RDMA_CM_INVALID_IRD     0x07
#define NVME_RDMA_CM_INVALID_ORD     0x08
#define NVME_RDMA_CM_INVALID_CNTLID  0x09

#pragma pack(push, 1)

/* MAD common header (IBA vol. 1 13.4.2). */
struct ib_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;         /* bit 7 is the response bit */
	be16 status;
	be16 class_specific;
	be64 tid;
	be16 attr_id;
	be16 rsvd18;
	be32 attr_mod;
};
_Static_assert(sizeof(struct ib_mad_hdr) == IB_CM_MSG, "MAD header size");
_Static_assert(offsetof(struct ib_mad_hdr, status) == 4, "status");
_Static_assert(offsetof(struct ib_mad_hdr, tid) == 8, "tid");
_Static_assert(offsetof(struct ib_mad_hdr, attr_id) == 16, "attr_id");
_Static_assert(offsetof(struct ib_mad_hdr, attr_mod) == 20, "attr_mod");

/*
 * REQ (table 106). The be32 words that pack a 24-bit value with a byte or
 * a few bits are named after everything they hold.
 */
struct ib_cm_req {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	uint8_t rsvd4;
	uint8_t vendor_id[3];
	be64 service_id;
	be64 local_ca_guid;
	be32 rsvd24;
	be32 local_qkey;
	be32 qpn_rres;            /* local QPN 24 | responder resources 8 */
	be32 eecn_idepth;         /* local EECN 24 | initiator depth 8 */
	be32 reecn_rcmt_tst_e2e;  /* remote EECN 24 | remote CM response timeout 5 |
	                           * transport service type 2 | end-to-end flow control 1 */
	be32 psn_lcmt_retry;      /* starting PSN 24 | local CM response timeout 5 |
	                           * retry count 3 */
	be16 pkey;
	uint8_t mtu_rdc_rnr;      /* path MTU 4 | RDC exists 1 | RNR retry count 3 */
	uint8_t cmretry_srq_ett;  /* max CM retries 4 | SRQ 1 | extended transport type 3 */
	be16 primary_local_lid;
	be16 primary_remote_lid;
	uint8_t primary_local_gid[16];
	uint8_t primary_remote_gid[16];
	be32 primary_flow_rate;   /* flow label 20 | reserved 6 | packet rate 6 */
	uint8_t primary_traffic_class;
	uint8_t primary_hop_limit;
	uint8_t primary_sl_subnet; /* SL 4 | subnet local 1 | reserved 3 */
	uint8_t primary_ack_timeout; /* local ACK timeout 5 | reserved 3 */
	be16 alternate_local_lid;
	be16 alternate_remote_lid;
	uint8_t alternate_local_gid[16];
	uint8_t alternate_remote_gid[16];
	be32 alternate_flow_rate;
	uint8_t alternate_traffic_class;
	uint8_t alternate_hop_limit;
	uint8_t alternate_sl_subnet;
	uint8_t alternate_ack_timeout_sap; /* local ACK timeout 5 | SAP supported 1 | reserved 2 */
	uint8_t private_data[IB_CM_REQ_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_req) == IB_MAD_SIZE, "REQ size");
_Static_assert(offsetof(struct ib_cm_req, local_comm_id) == IB_CM_MSG + 0, "REQ local comm ID");
_Static_assert(offsetof(struct ib_cm_req, vendor_id) == IB_CM_MSG + 5, "REQ vendor ID");
_Static_assert(offsetof(struct ib_cm_req, service_id) == IB_CM_MSG + 8, "REQ service ID");
_Static_assert(offsetof(struct ib_cm_req, local_ca_guid) == IB_CM_MSG + 16, "REQ local CA GUID");
_Static_assert(offsetof(struct ib_cm_req, local_qkey) == IB_CM_MSG + 28, "REQ local Q_Key");
_Static_assert(offsetof(struct ib_cm_req, qpn_rres) == IB_CM_MSG + 32, "REQ local QPN");
_Static_assert(offsetof(struct ib_cm_req, eecn_idepth) == IB_CM_MSG + 36, "REQ local EECN");
_Static_assert(offsetof(struct ib_cm_req, reecn_rcmt_tst_e2e) == IB_CM_MSG + 40, "REQ remote EECN");
_Static_assert(offsetof(struct ib_cm_req, psn_lcmt_retry) == IB_CM_MSG + 44, "REQ starting PSN");
_Static_assert(offsetof(struct ib_cm_req, pkey) == IB_CM_MSG + 48, "REQ P_Key");
_Static_assert(offsetof(struct ib_cm_req, mtu_rdc_rnr) == IB_CM_MSG + 50, "REQ path MTU");
_Static_assert(offsetof(struct ib_cm_req, cmretry_srq_ett) == IB_CM_MSG + 51, "REQ max CM retries");
_Static_assert(offsetof(struct ib_cm_req, primary_local_lid) == IB_CM_MSG + 52, "REQ primary LID");
_Static_assert(offsetof(struct ib_cm_req, primary_local_gid) == IB_CM_MSG + 56, "REQ primary local GID");
_Static_assert(offsetof(struct ib_cm_req, primary_remote_gid) == IB_CM_MSG + 72, "REQ primary remote GID");
_Static_assert(offsetof(struct ib_cm_req, primary_flow_rate) == IB_CM_MSG + 88, "REQ primary flow label");
_Static_assert(offsetof(struct ib_cm_req, primary_traffic_class) == IB_CM_MSG + 92, "REQ primary TC");
_Static_assert(offsetof(struct ib_cm_req, primary_sl_subnet) == IB_CM_MSG + 94, "REQ primary SL");
_Static_assert(offsetof(struct ib_cm_req, primary_ack_timeout) == IB_CM_MSG + 95, "REQ primary ACK timeout");
_Static_assert(offsetof(struct ib_cm_req, alternate_local_lid) == IB_CM_MSG + 96, "REQ alternate LID");
_Static_assert(offsetof(struct ib_cm_req, alternate_local_gid) == IB_CM_MSG + 100, "REQ alternate local GID");
_Static_assert(offsetof(struct ib_cm_req, alternate_remote_gid) == IB_CM_MSG + 116, "REQ alternate remote GID");
_Static_assert(offsetof(struct ib_cm_req, alternate_flow_rate) == IB_CM_MSG + 132, "REQ alternate flow label");
_Static_assert(offsetof(struct ib_cm_req, alternate_ack_timeout_sap) == IB_CM_MSG + 139, "REQ SAP");
_Static_assert(offsetof(struct ib_cm_req, private_data) == IB_CM_MSG + 140, "REQ private data");

/* MRA (table 107). */
struct ib_cm_mra {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	be32 remote_comm_id;
	uint8_t msg_mraed;        /* message MRAed 2 | reserved 6 */
	uint8_t service_timeout;  /* service timeout 5 | reserved 3 */
	uint8_t private_data[IB_CM_MRA_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_mra) == IB_MAD_SIZE, "MRA size");
_Static_assert(offsetof(struct ib_cm_mra, remote_comm_id) == IB_CM_MSG + 4, "MRA remote comm ID");
_Static_assert(offsetof(struct ib_cm_mra, msg_mraed) == IB_CM_MSG + 8, "MRA message MRAed");
_Static_assert(offsetof(struct ib_cm_mra, service_timeout) == IB_CM_MSG + 9, "MRA service timeout");
_Static_assert(offsetof(struct ib_cm_mra, private_data) == IB_CM_MSG + 10, "MRA private data");

/* REJ (table 108). */
struct ib_cm_rej {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	be32 remote_comm_id;
	uint8_t msg_rejected;     /* message rejected 2 | reserved 6 */
	uint8_t ari_length;       /* rejection info length 7 | reserved 1 */
	be16 reason;
	uint8_t ari[IB_CM_REJ_ARI_SIZE];
	uint8_t private_data[IB_CM_REJ_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_rej) == IB_MAD_SIZE, "REJ size");
_Static_assert(offsetof(struct ib_cm_rej, remote_comm_id) == IB_CM_MSG + 4, "REJ remote comm ID");
_Static_assert(offsetof(struct ib_cm_rej, msg_rejected) == IB_CM_MSG + 8, "REJ message rejected");
_Static_assert(offsetof(struct ib_cm_rej, ari_length) == IB_CM_MSG + 9, "REJ ARI length");
_Static_assert(offsetof(struct ib_cm_rej, reason) == IB_CM_MSG + 10, "REJ reason");
_Static_assert(offsetof(struct ib_cm_rej, ari) == IB_CM_MSG + 12, "REJ ARI");
_Static_assert(offsetof(struct ib_cm_rej, private_data) == IB_CM_MSG + 84, "REJ private data");

/* REP (table 110). */
struct ib_cm_rep {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	be32 remote_comm_id;
	be32 local_qkey;
	be32 qpn_vendor_h;        /* local QPN 24 | vendor ID bits 23-16 */
	be32 eecn_vendor_m;       /* local EECN 24 | vendor ID bits 15-8 */
	be32 psn_vendor_l;        /* starting PSN 24 | vendor ID bits 7-0 */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t ackdelay_fo_e2e;  /* target ACK delay 5 | failover accepted 2 |
	                           * end-to-end flow control 1 */
	uint8_t rnr_srq;          /* RNR retry count 3 | SRQ 1 | reserved 4 */
	be64 local_ca_guid;
	uint8_t private_data[IB_CM_REP_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_rep) == IB_MAD_SIZE, "REP size");
_Static_assert(offsetof(struct ib_cm_rep, remote_comm_id) == IB_CM_MSG + 4, "REP remote comm ID");
_Static_assert(offsetof(struct ib_cm_rep, local_qkey) == IB_CM_MSG + 8, "REP local Q_Key");
_Static_assert(offsetof(struct ib_cm_rep, qpn_vendor_h) == IB_CM_MSG + 12, "REP local QPN");
_Static_assert(offsetof(struct ib_cm_rep, eecn_vendor_m) == IB_CM_MSG + 16, "REP local EECN");
_Static_assert(offsetof(struct ib_cm_rep, psn_vendor_l) == IB_CM_MSG + 20, "REP starting PSN");
_Static_assert(offsetof(struct ib_cm_rep, responder_resources) == IB_CM_MSG + 24, "REP responder resources");
_Static_assert(offsetof(struct ib_cm_rep, initiator_depth) == IB_CM_MSG + 25, "REP initiator depth");
_Static_assert(offsetof(struct ib_cm_rep, ackdelay_fo_e2e) == IB_CM_MSG + 26, "REP target ACK delay");
_Static_assert(offsetof(struct ib_cm_rep, rnr_srq) == IB_CM_MSG + 27, "REP RNR retry count");
_Static_assert(offsetof(struct ib_cm_rep, local_ca_guid) == IB_CM_MSG + 28, "REP local CA GUID");
_Static_assert(offsetof(struct ib_cm_rep, private_data) == IB_CM_MSG + 36, "REP private data");

/* RTU (table 111). */
struct ib_cm_rtu {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	be32 remote_comm_id;
	uint8_t private_data[IB_CM_RTU_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_rtu) == IB_MAD_SIZE, "RTU size");
_Static_assert(offsetof(struct ib_cm_rtu, remote_comm_id) == IB_CM_MSG + 4, "RTU remote comm ID");
_Static_assert(offsetof(struct ib_cm_rtu, private_data) == IB_CM_MSG + 8, "RTU private data");

/* DREQ (table 112). */
struct ib_cm_dreq {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	be32 remote_comm_id;
	be32 remote_qpn_rsvd;     /* remote QPN/EECN 24 | reserved 8 */
	uint8_t private_data[IB_CM_DREQ_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_dreq) == IB_MAD_SIZE, "DREQ size");
_Static_assert(offsetof(struct ib_cm_dreq, remote_comm_id) == IB_CM_MSG + 4, "DREQ remote comm ID");
_Static_assert(offsetof(struct ib_cm_dreq, remote_qpn_rsvd) == IB_CM_MSG + 8, "DREQ remote QPN");
_Static_assert(offsetof(struct ib_cm_dreq, private_data) == IB_CM_MSG + 12, "DREQ private data");

/* DREP (table 113). */
struct ib_cm_drep {
	struct ib_mad_hdr hdr;
	be32 local_comm_id;
	be32 remote_comm_id;
	uint8_t private_data[IB_CM_DREP_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_drep) == IB_MAD_SIZE, "DREP size");
_Static_assert(offsetof(struct ib_cm_drep, remote_comm_id) == IB_CM_MSG + 4, "DREP remote comm ID");
_Static_assert(offsetof(struct ib_cm_drep, private_data) == IB_CM_MSG + 8, "DREP private data");

/* SIDR_REQ (table 119). */
struct ib_cm_sidr_req {
	struct ib_mad_hdr hdr;
	be32 request_id;
	be16 pkey;
	be16 rsvd30;
	be64 service_id;
	uint8_t private_data[IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_sidr_req) == IB_MAD_SIZE, "SIDR_REQ size");
_Static_assert(offsetof(struct ib_cm_sidr_req, pkey) == IB_CM_MSG + 4, "SIDR_REQ P_Key");
_Static_assert(offsetof(struct ib_cm_sidr_req, service_id) == IB_CM_MSG + 8, "SIDR_REQ service ID");
_Static_assert(offsetof(struct ib_cm_sidr_req, private_data) == IB_CM_MSG + 16, "SIDR_REQ private data");

/* SIDR_REP (table 120). */
struct ib_cm_sidr_rep {
	struct ib_mad_hdr hdr;
	be32 request_id;
	uint8_t status;
	uint8_t info_length;
	be16 vendor_id_h;
	be32 qpn_vendor_l;        /* QPN 24 | vendor ID bits 7-0 */
	be64 service_id;
	be32 qkey;
	uint8_t info[IB_CM_SIDR_REP_INFO_SIZE];
	uint8_t private_data[IB_CM_SIDR_REP_PRIVATE_DATA_SIZE];
};
_Static_assert(sizeof(struct ib_cm_sidr_rep) == IB_MAD_SIZE, "SIDR_REP size");
_Static_assert(offsetof(struct ib_cm_sidr_rep, status) == IB_CM_MSG + 4, "SIDR_REP status");
_Static_assert(offsetof(struct ib_cm_sidr_rep, vendor_id_h) == IB_CM_MSG + 6, "SIDR_REP vendor ID");
_Static_assert(offsetof(struct ib_cm_sidr_rep, qpn_vendor_l) == IB_CM_MSG + 8, "SIDR_REP QPN");
_Static_assert(offsetof(struct ib_cm_sidr_rep, service_id) == IB_CM_MSG + 12, "SIDR_REP service ID");
_Static_assert(offsetof(struct ib_cm_sidr_rep, qkey) == IB_CM_MSG + 20, "SIDR_REP Q_Key");
_Static_assert(offsetof(struct ib_cm_sidr_rep, info) == IB_CM_MSG + 24, "SIDR_REP info");
_Static_assert(offsetof(struct ib_cm_sidr_rep, private_data) == IB_CM_MSG + 96, "SIDR_REP private data");

/* One MAD, seen as whichever message its attribute ID names. */
union ib_cm_mad {
	uint8_t raw[IB_MAD_SIZE];
	struct ib_mad_hdr hdr;
	struct ib_cm_req req;
	struct ib_cm_mra mra;
	struct ib_cm_rej rej;
	struct ib_cm_rep rep;
	struct ib_cm_rtu rtu;
	struct ib_cm_dreq dreq;
	struct ib_cm_drep drep;
	struct ib_cm_sidr_req sidr_req;
	struct ib_cm_sidr_rep sidr_rep;
};
_Static_assert(sizeof(union ib_cm_mad) == IB_MAD_SIZE, "MAD size");

/*
 * rdma_cm's header at the start of a REQ's private data (Linux 7.2
 * drivers/infiniband/core/cma.c): 36 bytes, which is why rdma_cm leaves a
 * connecting consumer 92 - 36 = 56 bytes. port is the active side's source
 * port; an IPv4 address sits in the last 4 bytes of its 16.
 */
union cma_ip_addr {
	uint8_t ip6[16];
	struct {
		uint8_t pad[12];
		be32 addr;
	} ip4;
};
_Static_assert(sizeof(union cma_ip_addr) == 16, "cma_ip_addr size");

struct cma_hdr {
	uint8_t cma_version;
	uint8_t ip_version;       /* IP version 4 (high nibble) | reserved 4 */
	be16 port;
	union cma_ip_addr src_addr;
	union cma_ip_addr dst_addr;
};
_Static_assert(sizeof(struct cma_hdr) == 36, "cma_hdr size");
_Static_assert(offsetof(struct cma_hdr, port) == 2, "cma_hdr port");
_Static_assert(offsetof(struct cma_hdr, src_addr) == 4, "cma_hdr src");
_Static_assert(offsetof(struct cma_hdr, dst_addr) == 20, "cma_hdr dst");
_Static_assert(offsetof(struct cma_hdr, dst_addr.ip4.addr) == 32, "cma_hdr dst IPv4");

/* NVMe/RDMA connect request, reply and reject private data. */
struct nvme_rdma_cm_req {
	le16 recfmt;
	le16 qid;
	le16 hrqsize;
	le16 hsqsize;             /* 0's based */
	le16 cntlid;
	uint8_t rsvd10[22];
};
_Static_assert(sizeof(struct nvme_rdma_cm_req) == 32, "nvme_rdma_cm_req size");
_Static_assert(offsetof(struct nvme_rdma_cm_req, qid) == 2, "qid");
_Static_assert(offsetof(struct nvme_rdma_cm_req, hrqsize) == 4, "hrqsize");
_Static_assert(offsetof(struct nvme_rdma_cm_req, hsqsize) == 6, "hsqsize");
_Static_assert(offsetof(struct nvme_rdma_cm_req, cntlid) == 8, "cntlid");
_Static_assert(sizeof(struct cma_hdr) + sizeof(struct nvme_rdma_cm_req) <= IB_CM_REQ_PRIVATE_DATA_SIZE,
	       "REQ private data holds cma_hdr + nvme_rdma_cm_req");

struct nvme_rdma_cm_rep {
	le16 recfmt;
	le16 crqsize;
	uint8_t rsvd4[28];
};
_Static_assert(sizeof(struct nvme_rdma_cm_rep) == 32, "nvme_rdma_cm_rep size");
_Static_assert(offsetof(struct nvme_rdma_cm_rep, crqsize) == 2, "crqsize");

struct nvme_rdma_cm_rej {
	le16 recfmt;
	le16 sts;
};
_Static_assert(sizeof(struct nvme_rdma_cm_rej) == 4, "nvme_rdma_cm_rej size");

#pragma pack(pop)

/* ---- sub-byte fields ---- */

/* A 24-bit value in the high three bytes of a be32 (QPNs, EECNs, PSNs). */
#define IB_CM_HI24_SHIFT 8
#define IB_CM_HI24_MASK  0x00ffffffu
/* The byte that shares that be32. */
#define IB_CM_LO8_SHIFT  0
#define IB_CM_LO8_MASK   0xffu

/* REQ byte 43 (low byte of reecn_rcmt_tst_e2e). */
#define IB_CM_REQ_RCMT_SHIFT 3
#define IB_CM_REQ_RCMT_MASK  0x1fu
#define IB_CM_REQ_TST_SHIFT  1
#define IB_CM_REQ_TST_MASK   0x3u
#define IB_CM_REQ_E2E_SHIFT  0
#define IB_CM_REQ_E2E_MASK   0x1u
/* REQ byte 47 (low byte of psn_lcmt_retry). */
#define IB_CM_REQ_LCMT_SHIFT  3
#define IB_CM_REQ_LCMT_MASK   0x1fu
#define IB_CM_REQ_RETRY_SHIFT 0
#define IB_CM_REQ_RETRY_MASK  0x7u
/* REQ byte 50. */
#define IB_CM_REQ_MTU_SHIFT 4
#define IB_CM_REQ_MTU_MASK  0xfu
#define IB_CM_REQ_RDC_SHIFT 3
#define IB_CM_REQ_RDC_MASK  0x1u
#define IB_CM_REQ_RNR_SHIFT 0
#define IB_CM_REQ_RNR_MASK  0x7u
/* REQ byte 51. */
#define IB_CM_REQ_MAX_CM_RETRIES_SHIFT 4
#define IB_CM_REQ_MAX_CM_RETRIES_MASK  0xfu
#define IB_CM_REQ_SRQ_SHIFT 3
#define IB_CM_REQ_SRQ_MASK  0x1u
#define IB_CM_REQ_ETT_SHIFT 0
#define IB_CM_REQ_ETT_MASK  0x7u
/* REQ byte 95. */
#define IB_CM_REQ_ACK_TIMEOUT_SHIFT 3
#define IB_CM_REQ_ACK_TIMEOUT_MASK  0x1fu
/* REJ byte 8 / MRA byte 8. */
#define IB_CM_MSG_RESPONSE_SHIFT 6
#define IB_CM_MSG_RESPONSE_MASK  0x3u
/* REJ byte 9. */
#define IB_CM_REJ_ARI_LENGTH_SHIFT 1
#define IB_CM_REJ_ARI_LENGTH_MASK  0x7fu
/* MRA byte 9. */
#define IB_CM_MRA_SERVICE_TIMEOUT_SHIFT 3
#define IB_CM_MRA_SERVICE_TIMEOUT_MASK  0x1fu
/* REP byte 26. */
#define IB_CM_REP_ACK_DELAY_SHIFT 3
#define IB_CM_REP_ACK_DELAY_MASK  0x1fu
#define IB_CM_REP_FAILOVER_SHIFT  1
#define IB_CM_REP_FAILOVER_MASK   0x3u
#define IB_CM_REP_E2E_SHIFT       0
#define IB_CM_REP_E2E_MASK        0x1u
/* REP byte 27. */
#define IB_CM_REP_RNR_SHIFT 5
#define IB_CM_REP_RNR_MASK  0x7u
#define IB_CM_REP_SRQ_SHIFT 4
#define IB_CM_REP_SRQ_MASK  0x1u
/* cma_hdr ip_version. */
#define CMA_IP_VERSION_SHIFT 4
#define CMA_IP_VERSION_MASK  0xfu

static inline uint32_t ib_cm_field32(be32 w, unsigned shift, uint32_t mask)
{
	return (be32_get(w) >> shift) & mask;
}

static inline be32 ib_cm_field32_set(be32 w, unsigned shift, uint32_t mask, uint32_t v)
{
	uint32_t x = be32_get(w);

	x = (x & ~(mask << shift)) | ((v & mask) << shift);
	return be32_set(x);
}

static inline uint8_t ib_cm_field8(uint8_t b, unsigned shift, uint8_t mask)
{
	return (uint8_t)((b >> shift) & mask);
}

static inline uint8_t ib_cm_field8_set(uint8_t b, unsigned shift, uint8_t mask, uint8_t v)
{
	return (uint8_t)((b & ~(mask << shift)) | ((v & mask) << shift));
}

/* REQ */
static inline uint32_t ib_cm_req_local_qpn(const struct ib_cm_req *m)
{
	return ib_cm_field32(m->qpn_rres, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK);
}
static inline void ib_cm_req_set_local_qpn(struct ib_cm_req *m, uint32_t v)
{
	m->qpn_rres = ib_cm_field32_set(m->qpn_rres, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK, v);
}
static inline uint8_t ib_cm_req_responder_resources(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->qpn_rres, IB_CM_LO8_SHIFT, IB_CM_LO8_MASK);
}
static inline void ib_cm_req_set_responder_resources(struct ib_cm_req *m, uint8_t v)
{
	m->qpn_rres = ib_cm_field32_set(m->qpn_rres, IB_CM_LO8_SHIFT, IB_CM_LO8_MASK, v);
}
static inline uint8_t ib_cm_req_initiator_depth(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->eecn_idepth, IB_CM_LO8_SHIFT, IB_CM_LO8_MASK);
}
static inline void ib_cm_req_set_initiator_depth(struct ib_cm_req *m, uint8_t v)
{
	m->eecn_idepth = ib_cm_field32_set(m->eecn_idepth, IB_CM_LO8_SHIFT, IB_CM_LO8_MASK, v);
}
static inline uint8_t ib_cm_req_transport_type(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->reecn_rcmt_tst_e2e, IB_CM_REQ_TST_SHIFT, IB_CM_REQ_TST_MASK);
}
static inline void ib_cm_req_set_transport_type(struct ib_cm_req *m, uint8_t v)
{
	m->reecn_rcmt_tst_e2e = ib_cm_field32_set(m->reecn_rcmt_tst_e2e, IB_CM_REQ_TST_SHIFT,
						  IB_CM_REQ_TST_MASK, v);
}
static inline uint8_t ib_cm_req_remote_cm_response_timeout(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->reecn_rcmt_tst_e2e, IB_CM_REQ_RCMT_SHIFT, IB_CM_REQ_RCMT_MASK);
}
static inline void ib_cm_req_set_remote_cm_response_timeout(struct ib_cm_req *m, uint8_t v)
{
	m->reecn_rcmt_tst_e2e = ib_cm_field32_set(m->reecn_rcmt_tst_e2e, IB_CM_REQ_RCMT_SHIFT,
						  IB_CM_REQ_RCMT_MASK, v);
}
static inline uint8_t ib_cm_req_e2e_flow_control(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->reecn_rcmt_tst_e2e, IB_CM_REQ_E2E_SHIFT, IB_CM_REQ_E2E_MASK);
}
static inline void ib_cm_req_set_e2e_flow_control(struct ib_cm_req *m, uint8_t v)
{
	m->reecn_rcmt_tst_e2e = ib_cm_field32_set(m->reecn_rcmt_tst_e2e, IB_CM_REQ_E2E_SHIFT,
						  IB_CM_REQ_E2E_MASK, v);
}
static inline uint32_t ib_cm_req_starting_psn(const struct ib_cm_req *m)
{
	return ib_cm_field32(m->psn_lcmt_retry, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK);
}
static inline void ib_cm_req_set_starting_psn(struct ib_cm_req *m, uint32_t v)
{
	m->psn_lcmt_retry = ib_cm_field32_set(m->psn_lcmt_retry, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK, v);
}
static inline uint8_t ib_cm_req_local_cm_response_timeout(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->psn_lcmt_retry, IB_CM_REQ_LCMT_SHIFT, IB_CM_REQ_LCMT_MASK);
}
static inline void ib_cm_req_set_local_cm_response_timeout(struct ib_cm_req *m, uint8_t v)
{
	m->psn_lcmt_retry = ib_cm_field32_set(m->psn_lcmt_retry, IB_CM_REQ_LCMT_SHIFT,
					      IB_CM_REQ_LCMT_MASK, v);
}
static inline uint8_t ib_cm_req_retry_count(const struct ib_cm_req *m)
{
	return (uint8_t)ib_cm_field32(m->psn_lcmt_retry, IB_CM_REQ_RETRY_SHIFT, IB_CM_REQ_RETRY_MASK);
}
static inline void ib_cm_req_set_retry_count(struct ib_cm_req *m, uint8_t v)
{
	m->psn_lcmt_retry = ib_cm_field32_set(m->psn_lcmt_retry, IB_CM_REQ_RETRY_SHIFT,
					      IB_CM_REQ_RETRY_MASK, v);
}
static inline uint8_t ib_cm_req_path_mtu(const struct ib_cm_req *m)
{
	return ib_cm_field8(m->mtu_rdc_rnr, IB_CM_REQ_MTU_SHIFT, IB_CM_REQ_MTU_MASK);
}
static inline void ib_cm_req_set_path_mtu(struct ib_cm_req *m, uint8_t v)
{
	m->mtu_rdc_rnr = ib_cm_field8_set(m->mtu_rdc_rnr, IB_CM_REQ_MTU_SHIFT, IB_CM_REQ_MTU_MASK, v);
}
static inline uint8_t ib_cm_req_rnr_retry_count(const struct ib_cm_req *m)
{
	return ib_cm_field8(m->mtu_rdc_rnr, IB_CM_REQ_RNR_SHIFT, IB_CM_REQ_RNR_MASK);
}
static inline void ib_cm_req_set_rnr_retry_count(struct ib_cm_req *m, uint8_t v)
{
	m->mtu_rdc_rnr = ib_cm_field8_set(m->mtu_rdc_rnr, IB_CM_REQ_RNR_SHIFT, IB_CM_REQ_RNR_MASK, v);
}
static inline uint8_t ib_cm_req_max_cm_retries(const struct ib_cm_req *m)
{
	return ib_cm_field8(m->cmretry_srq_ett, IB_CM_REQ_MAX_CM_RETRIES_SHIFT,
			    IB_CM_REQ_MAX_CM_RETRIES_MASK);
}
static inline void ib_cm_req_set_max_cm_retries(struct ib_cm_req *m, uint8_t v)
{
	m->cmretry_srq_ett = ib_cm_field8_set(m->cmretry_srq_ett, IB_CM_REQ_MAX_CM_RETRIES_SHIFT,
					      IB_CM_REQ_MAX_CM_RETRIES_MASK, v);
}

/* REJ */
static inline uint8_t ib_cm_rej_msg_rejected(const struct ib_cm_rej *m)
{
	return ib_cm_field8(m->msg_rejected, IB_CM_MSG_RESPONSE_SHIFT, IB_CM_MSG_RESPONSE_MASK);
}
static inline void ib_cm_rej_set_msg_rejected(struct ib_cm_rej *m, uint8_t v)
{
	m->msg_rejected = ib_cm_field8_set(m->msg_rejected, IB_CM_MSG_RESPONSE_SHIFT,
					   IB_CM_MSG_RESPONSE_MASK, v);
}
static inline uint8_t ib_cm_rej_ari_length(const struct ib_cm_rej *m)
{
	return ib_cm_field8(m->ari_length, IB_CM_REJ_ARI_LENGTH_SHIFT, IB_CM_REJ_ARI_LENGTH_MASK);
}

/* MRA */
static inline uint8_t ib_cm_mra_msg_mraed(const struct ib_cm_mra *m)
{
	return ib_cm_field8(m->msg_mraed, IB_CM_MSG_RESPONSE_SHIFT, IB_CM_MSG_RESPONSE_MASK);
}
static inline void ib_cm_mra_set_msg_mraed(struct ib_cm_mra *m, uint8_t v)
{
	m->msg_mraed = ib_cm_field8_set(m->msg_mraed, IB_CM_MSG_RESPONSE_SHIFT, IB_CM_MSG_RESPONSE_MASK, v);
}

/* REP */
static inline uint32_t ib_cm_rep_local_qpn(const struct ib_cm_rep *m)
{
	return ib_cm_field32(m->qpn_vendor_h, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK);
}
static inline void ib_cm_rep_set_local_qpn(struct ib_cm_rep *m, uint32_t v)
{
	m->qpn_vendor_h = ib_cm_field32_set(m->qpn_vendor_h, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK, v);
}
static inline uint32_t ib_cm_rep_starting_psn(const struct ib_cm_rep *m)
{
	return ib_cm_field32(m->psn_vendor_l, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK);
}
static inline void ib_cm_rep_set_starting_psn(struct ib_cm_rep *m, uint32_t v)
{
	m->psn_vendor_l = ib_cm_field32_set(m->psn_vendor_l, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK, v);
}
static inline uint8_t ib_cm_rep_target_ack_delay(const struct ib_cm_rep *m)
{
	return ib_cm_field8(m->ackdelay_fo_e2e, IB_CM_REP_ACK_DELAY_SHIFT, IB_CM_REP_ACK_DELAY_MASK);
}
static inline void ib_cm_rep_set_target_ack_delay(struct ib_cm_rep *m, uint8_t v)
{
	m->ackdelay_fo_e2e = ib_cm_field8_set(m->ackdelay_fo_e2e, IB_CM_REP_ACK_DELAY_SHIFT,
					      IB_CM_REP_ACK_DELAY_MASK, v);
}
static inline uint8_t ib_cm_rep_failover_accepted(const struct ib_cm_rep *m)
{
	return ib_cm_field8(m->ackdelay_fo_e2e, IB_CM_REP_FAILOVER_SHIFT, IB_CM_REP_FAILOVER_MASK);
}
static inline void ib_cm_rep_set_failover_accepted(struct ib_cm_rep *m, uint8_t v)
{
	m->ackdelay_fo_e2e = ib_cm_field8_set(m->ackdelay_fo_e2e, IB_CM_REP_FAILOVER_SHIFT,
					      IB_CM_REP_FAILOVER_MASK, v);
}
static inline uint8_t ib_cm_rep_e2e_flow_control(const struct ib_cm_rep *m)
{
	return ib_cm_field8(m->ackdelay_fo_e2e, IB_CM_REP_E2E_SHIFT, IB_CM_REP_E2E_MASK);
}
static inline void ib_cm_rep_set_e2e_flow_control(struct ib_cm_rep *m, uint8_t v)
{
	m->ackdelay_fo_e2e = ib_cm_field8_set(m->ackdelay_fo_e2e, IB_CM_REP_E2E_SHIFT,
					      IB_CM_REP_E2E_MASK, v);
}
static inline uint8_t ib_cm_rep_rnr_retry_count(const struct ib_cm_rep *m)
{
	return ib_cm_field8(m->rnr_srq, IB_CM_REP_RNR_SHIFT, IB_CM_REP_RNR_MASK);
}
static inline void ib_cm_rep_set_rnr_retry_count(struct ib_cm_rep *m, uint8_t v)
{
	m->rnr_srq = ib_cm_field8_set(m->rnr_srq, IB_CM_REP_RNR_SHIFT, IB_CM_REP_RNR_MASK, v);
}
static inline uint8_t ib_cm_rep_srq(const struct ib_cm_rep *m)
{
	return ib_cm_field8(m->rnr_srq, IB_CM_REP_SRQ_SHIFT, IB_CM_REP_SRQ_MASK);
}

/* DREQ */
static inline uint32_t ib_cm_dreq_remote_qpn(const struct ib_cm_dreq *m)
{
	return ib_cm_field32(m->remote_qpn_rsvd, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK);
}
static inline void ib_cm_dreq_set_remote_qpn(struct ib_cm_dreq *m, uint32_t v)
{
	m->remote_qpn_rsvd = ib_cm_field32_set(m->remote_qpn_rsvd, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK, v);
}

/* SIDR_REP */
static inline uint32_t ib_cm_sidr_rep_qpn(const struct ib_cm_sidr_rep *m)
{
	return ib_cm_field32(m->qpn_vendor_l, IB_CM_HI24_SHIFT, IB_CM_HI24_MASK);
}

/* cma_hdr */
static inline uint8_t cma_hdr_ip_version(const struct cma_hdr *h)
{
	return ib_cm_field8(h->ip_version, CMA_IP_VERSION_SHIFT, CMA_IP_VERSION_MASK);
}
static inline void cma_hdr_set_ip_version(struct cma_hdr *h, uint8_t v)
{
	h->ip_version = ib_cm_field8_set(h->ip_version, CMA_IP_VERSION_SHIFT, CMA_IP_VERSION_MASK, v);
}

#endif
