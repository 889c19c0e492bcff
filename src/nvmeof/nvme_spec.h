/*
 * NVMe and NVMe over Fabrics wire structures the target reads and writes:
 * command and completion capsules, SGL descriptors, the Fabrics commands,
 * Identify data, log pages and the discovery log. Field names and offsets
 * follow the NVM Express Base Specification 2.0 and the NVMe over Fabrics
 * 1.1 specification (the same spelling as Linux include/linux/nvme.h, so a
 * grep finds a field on both sides). Everything is little-endian.
 */
#ifndef ERNIC_NVMEOF_NVME_SPEC_H
#define ERNIC_NVMEOF_NVME_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

#pragma pack(push, 1)

/* Submission queue entry (command capsule without in-capsule data), Base 2.0 4.2. */
struct nvme_sgl_desc {
	le64 addr;
	uint8_t length[3]; /* keyed: 24-bit length; unkeyed: low 3 bytes of a le32 */
	uint8_t key[4];    /* keyed: 32-bit key; unkeyed: length's top byte + reserved */
	uint8_t type;      /* descriptor type << 4 | subtype */
};
_Static_assert(sizeof(struct nvme_sgl_desc) == 16, "SGL descriptor");

struct nvme_cmd {
	uint8_t opcode;
	uint8_t flags;       /* FUSE bits 1:0, PSDT bits 7:6 */
	uint16_t cid;        /* opaque: echoed as it came */
	le32 nsid;
	le32 cdw2;
	le32 cdw3;
	le64 mptr;
	struct nvme_sgl_desc dptr;
	le32 cdw10;
	le32 cdw11;
	le32 cdw12;
	le32 cdw13;
	le32 cdw14;
	le32 cdw15;
};
_Static_assert(sizeof(struct nvme_cmd) == 64, "SQE");
_Static_assert(offsetof(struct nvme_cmd, dptr) == 24, "SQE dptr");
_Static_assert(offsetof(struct nvme_cmd, cdw10) == 40, "SQE cdw10");

/* Completion queue entry (response capsule), Base 2.0 4.6. */
struct nvme_cpl {
	le32 cdw0;
	le32 cdw1;
	le16 sqhd;
	le16 sqid;
	uint16_t cid;
	le16 status;  /* phase bit 0, status field bits 15:1 */
};
_Static_assert(sizeof(struct nvme_cpl) == 16, "CQE");

/* Fabrics commands (opcode 0x7f), NVMe-oF 1.1 3.3. */
struct nvmf_connect_cmd {
	uint8_t opcode;
	uint8_t rsvd1;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd5[19];
	struct nvme_sgl_desc dptr;
	le16 recfmt;
	le16 qid;
	le16 sqsize;  /* 0's based */
	uint8_t cattr;
	uint8_t rsvd47;
	le32 kato;    /* ms */
	uint8_t rsvd52[12];
};
_Static_assert(sizeof(struct nvmf_connect_cmd) == 64, "Connect");
_Static_assert(offsetof(struct nvmf_connect_cmd, recfmt) == 40, "Connect recfmt");
_Static_assert(offsetof(struct nvmf_connect_cmd, qid) == 42, "Connect qid");
_Static_assert(offsetof(struct nvmf_connect_cmd, sqsize) == 44, "Connect sqsize");
_Static_assert(offsetof(struct nvmf_connect_cmd, kato) == 48, "Connect kato");

struct nvmf_connect_data {
	uint8_t hostid[16];
	le16 cntlid;
	uint8_t rsvd18[238];
	char subnqn[256];
	char hostnqn[256];
	uint8_t rsvd768[256];
};
_Static_assert(sizeof(struct nvmf_connect_data) == 1024, "Connect data");
_Static_assert(offsetof(struct nvmf_connect_data, cntlid) == 16, "Connect data cntlid");
_Static_assert(offsetof(struct nvmf_connect_data, subnqn) == 256, "Connect data subnqn");
_Static_assert(offsetof(struct nvmf_connect_data, hostnqn) == 512, "Connect data hostnqn");

struct nvmf_property_cmd {  /* Property Get and Property Set */
	uint8_t opcode;
	uint8_t rsvd1;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd5[35];
	uint8_t attrib;   /* bits 2:0: 0 = 4 bytes, 1 = 8 bytes */
	uint8_t rsvd41[3];
	le32 offset;
	le64 value;       /* Set only */
	uint8_t rsvd56[8];
};
_Static_assert(sizeof(struct nvmf_property_cmd) == 64, "Property Get/Set");
_Static_assert(offsetof(struct nvmf_property_cmd, attrib) == 40, "Property attrib");
_Static_assert(offsetof(struct nvmf_property_cmd, offset) == 44, "Property offset");
_Static_assert(offsetof(struct nvmf_property_cmd, value) == 48, "Property value");

/* Identify Controller, Base 2.0 5.17.2.1 (the fields this target fills). */
struct nvme_id_power_state {
	le16 max_power;
	uint8_t rsvd2;
	uint8_t flags;
	le32 entry_lat;
	le32 exit_lat;
	uint8_t read_tput, read_lat, write_tput, write_lat;
	le16 idle_power;
	uint8_t idle_scale;
	uint8_t rsvd19;
	le16 active_power;
	uint8_t active_work_scale;
	uint8_t rsvd23[9];
};
_Static_assert(sizeof(struct nvme_id_power_state) == 32, "power state");

struct nvme_id_ctrl {
	le16 vid;
	le16 ssvid;
	char sn[20];
	char mn[40];
	char fr[8];
	uint8_t rab;
	uint8_t ieee[3];
	uint8_t cmic;
	uint8_t mdts;
	le16 cntlid;
	le32 ver;
	le32 rtd3r;
	le32 rtd3e;
	le32 oaes;
	le32 ctratt;
	uint8_t rsvd100[11];
	uint8_t cntrltype;
	uint8_t fguid[16];
	le16 crdt1, crdt2, crdt3;
	uint8_t rsvd134[122];
	le16 oacs;
	uint8_t acl;
	uint8_t aerl;
	uint8_t frmw;
	uint8_t lpa;
	uint8_t elpe;
	uint8_t npss;
	uint8_t avscc;
	uint8_t apsta;
	le16 wctemp;
	le16 cctemp;
	uint8_t rsvd270[50];
	le16 kas;
	uint8_t rsvd322[190];
	uint8_t sqes;
	uint8_t cqes;
	le16 maxcmd;
	le32 nn;
	le16 oncs;
	le16 fuses;
	uint8_t fna;
	uint8_t vwc;
	le16 awun;
	le16 awupf;
	uint8_t nvscc;
	uint8_t nwpc;
	le16 acwu;
	uint8_t rsvd534[2];
	le32 sgls;
	le32 mnan;
	uint8_t rsvd544[224];
	char subnqn[256];
	uint8_t rsvd1024[768];
	le32 ioccsz;
	le32 iorcsz;
	le16 icdoff;
	uint8_t ctrattr;
	uint8_t msdbd;
	uint8_t rsvd1804[2];
	uint8_t dctype;
	uint8_t rsvd1807[241];
	struct nvme_id_power_state psd[32];
	uint8_t vs[1024];
};
_Static_assert(sizeof(struct nvme_id_ctrl) == 4096, "Identify Controller");
_Static_assert(offsetof(struct nvme_id_ctrl, mdts) == 77, "mdts");
_Static_assert(offsetof(struct nvme_id_ctrl, cntrltype) == 111, "cntrltype");
_Static_assert(offsetof(struct nvme_id_ctrl, oacs) == 256, "oacs");
_Static_assert(offsetof(struct nvme_id_ctrl, kas) == 320, "kas");
_Static_assert(offsetof(struct nvme_id_ctrl, sqes) == 512, "sqes");
_Static_assert(offsetof(struct nvme_id_ctrl, vwc) == 525, "vwc");
_Static_assert(offsetof(struct nvme_id_ctrl, sgls) == 536, "sgls");
_Static_assert(offsetof(struct nvme_id_ctrl, subnqn) == 768, "subnqn");
_Static_assert(offsetof(struct nvme_id_ctrl, ioccsz) == 1792, "ioccsz");
_Static_assert(offsetof(struct nvme_id_ctrl, psd) == 2048, "psd");

/* Identify Namespace (NVM command set), NVM Command Set 2.0 4.1.5.1. */
struct nvme_lbaf {
	le16 ms;
	uint8_t ds;  /* log2 of the LBA data size */
	uint8_t rp;
};

struct nvme_id_ns {
	le64 nsze;
	le64 ncap;
	le64 nuse;
	uint8_t nsfeat;
	uint8_t nlbaf;
	uint8_t flbas;
	uint8_t mc;
	uint8_t dpc;
	uint8_t dps;
	uint8_t nmic;
	uint8_t rescap;
	uint8_t fpi;
	uint8_t dlfeat;
	le16 nawun, nawupf, nacwu, nabsn, nabo, nabspf, noiob;
	uint8_t nvmcap[16];
	le16 npwg, npwa, npdg, npda, nows;
	uint8_t rsvd74[18];
	le32 anagrpid;
	uint8_t rsvd96[3];
	uint8_t nsattr;
	le16 nvmsetid;
	le16 endgid;
	uint8_t nguid[16];
	uint8_t eui64[8];
	struct nvme_lbaf lbaf[64];
	uint8_t vs[3712];
};
_Static_assert(sizeof(struct nvme_id_ns) == 4096, "Identify Namespace");
_Static_assert(offsetof(struct nvme_id_ns, dlfeat) == 33, "dlfeat");
_Static_assert(offsetof(struct nvme_id_ns, nvmcap) == 48, "nvmcap");
_Static_assert(offsetof(struct nvme_id_ns, nguid) == 104, "nguid");
_Static_assert(offsetof(struct nvme_id_ns, lbaf) == 128, "lbaf");

/* Namespace Identification Descriptor header (CNS 0x03), Base 2.0 5.17.2.3. */
struct nvme_ns_id_desc {
	uint8_t nidt;
	uint8_t nidl;
	uint8_t rsvd2[2];
};
_Static_assert(sizeof(struct nvme_ns_id_desc) == 4, "NS id descriptor");

/* Error Information log entry (LID 0x01), Base 2.0 5.16.1.2. */
struct nvme_error_slot {
	le64 error_count;
	le16 sqid;
	le16 cmdid;
	le16 status_field;  /* status << 1 | phase, as in the CQE */
	le16 param_error_location;
	le64 lba;
	le32 nsid;
	uint8_t vs;
	uint8_t trtype;
	uint8_t rsvd30[2];
	le64 cs;
	le16 trtype_spec;
	uint8_t rsvd42[22];
};
_Static_assert(sizeof(struct nvme_error_slot) == 64, "error log entry");

/* SMART / Health Information (LID 0x02), Base 2.0 5.16.1.3. */
struct nvme_smart_log {
	uint8_t critical_warning;
	le16 temperature;   /* kelvin */
	uint8_t avail_spare;
	uint8_t spare_thresh;
	uint8_t percent_used;
	uint8_t endu_grp_crit_warn_sumry;
	uint8_t rsvd7[25];
	uint8_t data_units_read[16];    /* 128-bit little-endian counters */
	uint8_t data_units_written[16];
	uint8_t host_reads[16];
	uint8_t host_writes[16];
	uint8_t ctrl_busy_time[16];
	uint8_t power_cycles[16];
	uint8_t power_on_hours[16];
	uint8_t unsafe_shutdowns[16];
	uint8_t media_errors[16];
	uint8_t num_err_log_entries[16];
	le32 warning_temp_time;
	le32 critical_comp_time;
	le16 temp_sensor[8];
	uint8_t rsvd216[296];
};
_Static_assert(sizeof(struct nvme_smart_log) == 512, "SMART log");
_Static_assert(offsetof(struct nvme_smart_log, data_units_read) == 32, "data units read");
_Static_assert(offsetof(struct nvme_smart_log, num_err_log_entries) == 176, "error entries");

/* Firmware Slot Information (LID 0x03), Base 2.0 5.16.1.4. */
struct nvme_fw_slot_log {
	uint8_t afi;
	uint8_t rsvd1[7];
	char frs[7][8];
	uint8_t rsvd64[448];
};
_Static_assert(sizeof(struct nvme_fw_slot_log) == 512, "firmware slot log");

/* Commands Supported and Effects (LID 0x05), Base 2.0 5.16.1.6. */
struct nvme_effects_log {
	le32 acs[256];
	le32 iocs[256];
	uint8_t rsvd2048[2048];
};
_Static_assert(sizeof(struct nvme_effects_log) == 4096, "effects log");

/* Discovery log page (LID 0x70), NVMe-oF 1.1 5.3. */
struct nvmf_disc_entry {
	uint8_t trtype;
	uint8_t adrfam;
	uint8_t subtype;
	uint8_t treq;
	le16 portid;
	le16 cntlid;
	le16 asqsz;
	le16 eflags;
	uint8_t rsvd12[20];
	char trsvcid[32];
	uint8_t rsvd64[192];
	char subnqn[256];
	char traddr[256];
	uint8_t tsas_qptype;  /* RDMA transport specific address subtype */
	uint8_t tsas_prtype;
	uint8_t tsas_cms;
	uint8_t tsas_rsvd3[5];
	le16 tsas_pkey;
	uint8_t tsas_rsvd10[246];
};
_Static_assert(sizeof(struct nvmf_disc_entry) == 1024, "discovery entry");
_Static_assert(offsetof(struct nvmf_disc_entry, trsvcid) == 32, "trsvcid");
_Static_assert(offsetof(struct nvmf_disc_entry, subnqn) == 256, "subnqn");
_Static_assert(offsetof(struct nvmf_disc_entry, traddr) == 512, "traddr");
_Static_assert(offsetof(struct nvmf_disc_entry, tsas_qptype) == 768, "tsas");

struct nvmf_disc_hdr {
	le64 genctr;
	le64 numrec;
	le16 recfmt;
	uint8_t rsvd18[1006];
};
_Static_assert(sizeof(struct nvmf_disc_hdr) == 1024, "discovery header");

/* Dataset Management range, NVM Command Set 2.0 3.2.3. */
struct nvme_dsm_range {
	le32 cattr;
	le32 nlb;
	le64 slba;
};
_Static_assert(sizeof(struct nvme_dsm_range) == 16, "DSM range");

#pragma pack(pop)

/* Opcodes. */
enum {
	NVME_ADM_GET_LOG_PAGE = 0x02,
	NVME_ADM_IDENTIFY = 0x06,
	NVME_ADM_ABORT = 0x08,
	NVME_ADM_SET_FEATURES = 0x09,
	NVME_ADM_GET_FEATURES = 0x0a,
	NVME_ADM_ASYNC_EVENT = 0x0c,
	NVME_ADM_KEEP_ALIVE = 0x18,
	NVME_FABRICS = 0x7f,

	NVME_IO_FLUSH = 0x00,
	NVME_IO_WRITE = 0x01,
	NVME_IO_READ = 0x02,
	NVME_IO_WRITE_ZEROES = 0x08,
	NVME_IO_DSM = 0x09,

	NVMF_FCTYPE_PROPERTY_SET = 0x00,
	NVMF_FCTYPE_CONNECT = 0x01,
	NVMF_FCTYPE_PROPERTY_GET = 0x04,
};

/* Status: SCT << 8 | SC, plus More and Do Not Retry (the CQE holds it shifted left by one). */
enum {
	NVME_SC_SUCCESS = 0x000,
	NVME_SC_INVALID_OPCODE = 0x001,
	NVME_SC_INVALID_FIELD = 0x002,
	NVME_SC_DATA_XFER_ERROR = 0x004,
	NVME_SC_INTERNAL = 0x006,
	NVME_SC_ABORT_REQ = 0x007,
	NVME_SC_INVALID_NS = 0x00b,
	NVME_SC_CMD_SEQ_ERROR = 0x00c,
	NVME_SC_SGL_INVALID_DATA = 0x00f,   /* Data SGL Length Invalid */
	NVME_SC_SGL_INVALID_TYPE = 0x011,   /* SGL Descriptor Type Invalid */
	NVME_SC_SGL_INVALID_OFFSET = 0x016,
	NVME_SC_KA_TIMEOUT_EXPIRED = 0x019,
	NVME_SC_LBA_RANGE = 0x080,
	NVME_SC_ASYNC_LIMIT = 0x105,
	NVME_SC_INVALID_LOG_PAGE = 0x109,
	NVME_SC_FEATURE_NOT_SAVEABLE = 0x10d,
	NVME_SC_CONNECT_FORMAT = 0x180,
	NVME_SC_CONNECT_CTRL_BUSY = 0x181,
	NVME_SC_CONNECT_INVALID_PARAM = 0x182,
	NVME_SC_CONNECT_INVALID_HOST = 0x184,
	NVME_SC_WRITE_FAULT = 0x280,
	NVME_SC_READ_ERROR = 0x281,
	NVME_STATUS_MORE = 0x2000,
	NVME_STATUS_DNR = 0x4000,
};

/* Controller properties (Base 2.0 3.1.4) and their fields. */
enum {
	NVME_REG_CAP = 0x00,
	NVME_REG_VS = 0x08,
	NVME_REG_CC = 0x14,
	NVME_REG_CSTS = 0x1c,
};
#define NVME_CC_EN            (1u << 0)
#define NVME_CC_CSS(cc)       (((cc) >> 4) & 0x7u)
#define NVME_CC_MPS(cc)       (((cc) >> 7) & 0xfu)
#define NVME_CC_AMS(cc)       (((cc) >> 11) & 0x7u)
#define NVME_CC_SHN(cc)       (((cc) >> 14) & 0x3u)
#define NVME_CC_IOSQES(cc)    (((cc) >> 16) & 0xfu)
#define NVME_CC_IOCQES(cc)    (((cc) >> 20) & 0xfu)
#define NVME_CSTS_RDY         (1u << 0)
#define NVME_CSTS_CFS         (1u << 1)
#define NVME_CSTS_SHST_MASK   (3u << 2)
#define NVME_CSTS_SHST_OCCUR  (1u << 2)
#define NVME_CSTS_SHST_CMPLT  (2u << 2)

/* SGL descriptor types (upper nibble of byte 15) and subtypes (lower nibble). */
enum {
	NVME_SGL_TYPE_DATA_BLOCK = 0x0,
	NVME_SGL_TYPE_KEYED_DATA_BLOCK = 0x4,
	NVME_SGL_SUBTYPE_ADDRESS = 0x0,
	NVME_SGL_SUBTYPE_OFFSET = 0x1,
	NVME_SGL_SUBTYPE_INVALIDATE = 0xf,
};
#define NVME_CMD_PSDT(flags)  (((flags) >> 6) & 0x3u)  /* 0 PRP, 1/2 SGL */
#define NVME_CMD_FUSE(flags)  ((flags) & 0x3u)

/* Feature identifiers this target knows. */
enum {
	NVME_FEAT_ARBITRATION = 0x01,
	NVME_FEAT_POWER_MGMT = 0x02,
	NVME_FEAT_TEMP_THRESH = 0x04,
	NVME_FEAT_ERR_RECOVERY = 0x05,
	NVME_FEAT_VOLATILE_WC = 0x06,
	NVME_FEAT_NUM_QUEUES = 0x07,
	NVME_FEAT_WRITE_ATOMIC = 0x0a,
	NVME_FEAT_ASYNC_EVENT = 0x0b,
	NVME_FEAT_KATO = 0x0f,
};

/* Log page identifiers. */
enum {
	NVME_LOG_ERROR = 0x01,
	NVME_LOG_SMART = 0x02,
	NVME_LOG_FW_SLOT = 0x03,
	NVME_LOG_CHANGED_NS = 0x04,
	NVME_LOG_CMD_EFFECTS = 0x05,
	NVME_LOG_DISC = 0x70,
};

/* Identify CNS values. */
enum {
	NVME_ID_CNS_NS = 0x00,
	NVME_ID_CNS_CTRL = 0x01,
	NVME_ID_CNS_NS_ACTIVE_LIST = 0x02,
	NVME_ID_CNS_NS_DESC_LIST = 0x03,
	NVME_ID_CNS_CS_NS = 0x05,
	NVME_ID_CNS_CS_CTRL = 0x06,
};

#define NVME_DISC_SUBSYS_NQN "nqn.2014-08.org.nvmexpress.discovery"
#define NVME_NQN_FIELD 256
#define NVME_CNTLID_DYNAMIC 0xffffu

#endif
