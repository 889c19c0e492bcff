/*
 * The ionic device interface the stock Linux ionic driver (Linux 7.2,
 * drivers/net/ethernet/pensando/ionic/ionic_if.h and ionic_regs.h) expects:
 * BAR0 register blocks and the dev_cmd protocol. Our own definitions of the
 * layouts; field names follow the driver's so one grep finds both.
 */
#ifndef ERNIC_IONIC_IONIC_IF_H
#define ERNIC_IONIC_IONIC_IF_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

/* PCI identity (the PF id the stock driver binds). */
#define IONIC_PCI_VENDOR_ID       0x1dd8
#define IONIC_PCI_DEVICE_ID_PF    0x1002
#define IONIC_PCI_SUBSYS_ID       0x5400
#define IONIC_PCI_CLASS_ETHERNET  0x020000

/* BAR0: registers 0x0000-0x7fff; the driver refuses a BAR0 under 0x8000. */
#define IONIC_BAR0_SIZE               0x10000
#define IONIC_BAR0_DEV_INFO_OFFSET    0x0000
#define IONIC_BAR0_DEV_CMD_OFFSET     0x0800
#define IONIC_BAR0_INTR_STATUS_OFFSET 0x1000
#define IONIC_BAR0_INTR_CTRL_OFFSET   0x2000
#define IONIC_BAR0_REGS_END           0x8000
#define IONIC_BAR0_MSIX_TABLE_OFFSET  0x8000
#define IONIC_BAR0_MSIX_PBA_OFFSET    0x9000

#define IONIC_DEV_INFO_SIGNATURE  0x44455649 /* "IVED" read as little-endian bytes "DEVI" */
#define IONIC_DEV_INFO_VERSION    1
#define IONIC_FW_STS_F_RUNNING    0x01
#define IONIC_FW_STS_F_GENERATION 0xf0

#pragma pack(push, 1)

struct ionic_dev_info_regs {
	le32 signature;
	uint8_t version;
	uint8_t asic_type;
	uint8_t asic_rev;
	uint8_t fw_status;
	le32 fw_heartbeat;
	char fw_version[32];
	char serial_num[32];
	uint8_t rsvd76[0x400 - 76];
	le32 hwstamp_low;
	le32 hwstamp_high;
	uint8_t rsvd1032[0x800 - 0x408];
};
_Static_assert(sizeof(struct ionic_dev_info_regs) == 0x800, "dev_info regs");
_Static_assert(offsetof(struct ionic_dev_info_regs, fw_heartbeat) == 0x08, "fw_heartbeat");
_Static_assert(offsetof(struct ionic_dev_info_regs, fw_version) == 0x0c, "fw_version");
_Static_assert(offsetof(struct ionic_dev_info_regs, serial_num) == 0x2c, "serial_num");
_Static_assert(offsetof(struct ionic_dev_info_regs, hwstamp_low) == 0x400, "hwstamp_low");

#define IONIC_DEV_CMD_DATA_SIZE 1912

struct ionic_dev_cmd_regs {
	le32 doorbell;
	le32 done;
	uint8_t cmd[64];
	uint8_t comp[16];
	uint8_t rsvd88[48];
	uint8_t data[IONIC_DEV_CMD_DATA_SIZE];
};
_Static_assert(sizeof(struct ionic_dev_cmd_regs) == 0x800, "dev_cmd regs");
_Static_assert(offsetof(struct ionic_dev_cmd_regs, cmd) == 0x08, "cmd");
_Static_assert(offsetof(struct ionic_dev_cmd_regs, comp) == 0x48, "comp");
_Static_assert(offsetof(struct ionic_dev_cmd_regs, data) == 0x88, "data");
#define IONIC_DEV_CMD_DONE 0x1

/* Interrupt control, one block per interrupt index. */
struct ionic_intr_ctrl {
	le32 coal_init;
	le32 mask;
	le32 credits;
	le32 mask_on_assert;
	le32 coal;
	uint8_t rsvd20[12];
};
_Static_assert(sizeof(struct ionic_intr_ctrl) == 32, "intr ctrl");

/* dev_cmd opcodes. */
enum ionic_cmd_opcode {
	IONIC_CMD_NOP = 0,
	IONIC_CMD_IDENTIFY = 1,
	IONIC_CMD_INIT = 2,
	IONIC_CMD_RESET = 3,
	IONIC_CMD_GETATTR = 4,
	IONIC_CMD_SETATTR = 5,
	IONIC_CMD_PORT_IDENTIFY = 10,
	IONIC_CMD_PORT_INIT = 11,
	IONIC_CMD_PORT_RESET = 12,
	IONIC_CMD_PORT_GETATTR = 13,
	IONIC_CMD_PORT_SETATTR = 14,
	IONIC_CMD_LIF_IDENTIFY = 20,
	IONIC_CMD_LIF_INIT = 21,
	IONIC_CMD_LIF_RESET = 22,
	IONIC_CMD_LIF_GETATTR = 23,
	IONIC_CMD_LIF_SETATTR = 24,
	IONIC_CMD_Q_IDENTIFY = 39,
	IONIC_CMD_Q_INIT = 40,
	IONIC_CMD_Q_CONTROL = 41,
	IONIC_CMD_RX_MODE_SET = 30,
	IONIC_CMD_RX_FILTER_ADD = 31,
	IONIC_CMD_RX_FILTER_DEL = 32,
};

/* Status codes in byte 0 of a completion. */
enum ionic_status_code {
	IONIC_RC_SUCCESS = 0,
	IONIC_RC_EVERSION = 1,
	IONIC_RC_EOPCODE = 2,
	IONIC_RC_EIO = 3,
	IONIC_RC_EPERM = 4,
	IONIC_RC_EQID = 5,
	IONIC_RC_EQTYPE = 6,
	IONIC_RC_ENOENT = 7,
	IONIC_RC_EINTR = 8,
	IONIC_RC_EAGAIN = 9,
	IONIC_RC_ENOMEM = 10,
	IONIC_RC_EFAULT = 11,
	IONIC_RC_EBUSY = 12,
	IONIC_RC_EEXIST = 13,
	IONIC_RC_EINVAL = 14,
	IONIC_RC_ENOSPC = 15,
	IONIC_RC_ERANGE = 16,
	IONIC_RC_BAD_ADDR = 17,
	IONIC_RC_DEV_CMD = 18,
	IONIC_RC_ENOSUPP = 19,
	IONIC_RC_ERROR = 29,
};

/* Every command is 64 bytes, every completion 16. */
struct ionic_admin_cmd {
	uint8_t opcode;
	uint8_t rsvd1[63];
};
_Static_assert(sizeof(struct ionic_admin_cmd) == 64, "cmd");

struct ionic_admin_comp {
	uint8_t status;
	uint8_t rsvd1;
	le16 comp_index;
	uint8_t cmd_data[11];
	uint8_t color;
};
_Static_assert(sizeof(struct ionic_admin_comp) == 16, "comp");

struct ionic_dev_identify_cmd {
	uint8_t opcode;
	uint8_t ver;
	uint8_t rsvd2[62];
};
_Static_assert(sizeof(struct ionic_dev_identify_cmd) == 64, "identify cmd");

struct ionic_dev_identify_comp {
	uint8_t status;
	uint8_t ver;
	uint8_t rsvd2[14];
};
_Static_assert(sizeof(struct ionic_dev_identify_comp) == 16, "identify comp");

#define IONIC_IDENTITY_VERSION_1 1
#define IONIC_DEV_IDENTITY_VERSION_2 2

struct ionic_dev_identity {
	uint8_t version;
	uint8_t type;
	uint8_t rsvd2[2];
	uint8_t nports;
	uint8_t rsvd5[3];
	le32 nlifs;
	le32 nintrs;
	le32 ndbpgs_per_lif;
	le32 intr_coal_mult;
	le32 intr_coal_div;
	le32 eq_count;
	le64 hwstamp_mask;
	le32 hwstamp_mult;
	le32 hwstamp_shift;
	le64 capabilities;
};
_Static_assert(sizeof(struct ionic_dev_identity) == 56, "dev identity");
_Static_assert(offsetof(struct ionic_dev_identity, nintrs) == 12, "nintrs");
_Static_assert(offsetof(struct ionic_dev_identity, ndbpgs_per_lif) == 16, "ndbpgs_per_lif");
_Static_assert(offsetof(struct ionic_dev_identity, capabilities) == 48, "capabilities");


/* Queue types (Ethernet LIF). */
enum ionic_qtype {
	IONIC_QTYPE_ADMINQ = 0,
	IONIC_QTYPE_NOTIFYQ = 1,
	IONIC_QTYPE_RXQ = 2,
	IONIC_QTYPE_TXQ = 3,
	IONIC_QTYPE_EQ = 4,
	IONIC_QTYPE_MAX = 16,
};

#define IONIC_LIF_CAP_ETH  0x1ull
#define IONIC_LIF_CAP_RDMA 0x2ull
#define IONIC_LIF_TYPE_CLASSIC 0

/* The data window of LIF_IDENTIFY. */
struct ionic_lif_config {
	uint8_t state;
	uint8_t rsvd1[3];
	char name[16];
	le32 mtu;
	uint8_t mac[6];
	le16 vlan;
	le64 features;
	le32 queue_count[IONIC_QTYPE_MAX];
	uint8_t rsvd104[152];
};
_Static_assert(sizeof(struct ionic_lif_config) == 256, "lif config");

struct ionic_lif_logical_qtype {
	uint8_t qtype;
	uint8_t rsvd[3];
	le32 qid_count;
	le32 qid_base;
};
_Static_assert(sizeof(struct ionic_lif_logical_qtype) == 12, "logical qtype");

struct ionic_lif_identity {
	le64 capabilities;
	struct {
		uint8_t version;
		uint8_t rsvd[3];
		le32 max_ucast_filters;
		le32 max_mcast_filters;
		le16 rss_ind_tbl_sz;
		le32 min_frame_size;
		le32 max_frame_size;
		uint8_t rsvd2[2];
		le64 hwstamp_tx_modes;
		le64 hwstamp_rx_filters;
		uint8_t rsvd3[88];
		struct ionic_lif_config config;
	} eth;
	struct {
		uint8_t version;
		uint8_t qp_opcodes;
		uint8_t admin_opcodes;
		uint8_t minor_version;
		le32 npts_per_lif;
		le32 nmrs_per_lif;
		le32 nahs_per_lif;
		uint8_t max_stride;
		uint8_t cl_stride;
		uint8_t pte_stride;
		uint8_t rrq_stride;
		uint8_t rsq_stride;
		uint8_t dcqcn_profiles;
		uint8_t udma_shift;
		uint8_t rsvd_dimensions;
		le64 page_size_cap;
		struct ionic_lif_logical_qtype aq_qtype, sq_qtype, rq_qtype, cq_qtype, eq_qtype;
		le16 stats_type;
		uint8_t rsvd1[162];
	} rdma;
};
_Static_assert(offsetof(struct ionic_lif_identity, eth.rss_ind_tbl_sz) == 20, "rss_ind_tbl_sz");
_Static_assert(offsetof(struct ionic_lif_identity, eth.max_frame_size) == 26, "max_frame_size");
_Static_assert(offsetof(struct ionic_lif_identity, eth.config.features) == 168, "config.features");
_Static_assert(offsetof(struct ionic_lif_identity, eth.config.queue_count) == 176, "queue_count");
_Static_assert(offsetof(struct ionic_lif_identity, rdma) == 392, "rdma");
_Static_assert(offsetof(struct ionic_lif_identity, rdma.max_stride) == 408, "max_stride");
_Static_assert(offsetof(struct ionic_lif_identity, rdma.aq_qtype) == 424, "aq_qtype");
_Static_assert(offsetof(struct ionic_lif_identity, rdma.stats_type) == 484, "stats_type");
_Static_assert(sizeof(struct ionic_lif_identity) <= IONIC_DEV_CMD_DATA_SIZE, "lif identity");

/* LIF info, owned by the driver, written by the device (LIF_INIT info_pa). */
struct ionic_lif_status {
	le64 eid;
	uint8_t port_num;
	uint8_t rsvd;
	le16 link_status;
	le32 link_speed; /* Mbps */
	le16 link_down_count;
	uint8_t rsvd2[46];
};
_Static_assert(sizeof(struct ionic_lif_status) == 64, "lif status");
#define IONIC_LINK_STATUS_UP 1

struct ionic_lif_info_head {
	struct ionic_lif_config config;
	struct ionic_lif_status status;
};
_Static_assert(offsetof(struct ionic_lif_info_head, status.link_status) == 266, "link_status");

/* Port identity (PORT_IDENTIFY data window) and port info (PORT_INIT info_pa). */
struct ionic_port_config {
	le32 speed;
	le32 mtu;
	uint8_t state;
	uint8_t an_enable;
	uint8_t fec_type;
	uint8_t pause_type;
	uint8_t loopback_mode;
	uint8_t rsvd13[243];
};
_Static_assert(sizeof(struct ionic_port_config) == 256, "port config");

struct ionic_port_identity {
	uint8_t version;
	uint8_t type;
	uint8_t num_lanes;
	uint8_t autoneg;
	le32 min_frame_size;
	le32 max_frame_size;
	uint8_t fec_type[4];
	uint8_t pause_type[2];
	uint8_t loopback_mode[2];
	le32 speeds[16];
	uint8_t rsvd2[44];
	struct ionic_port_config config;
};
_Static_assert(offsetof(struct ionic_port_identity, config) == 128, "port identity config");

struct ionic_port_status {
	le32 id;
	le32 speed;
	uint8_t status;
	le16 link_down_count;
	uint8_t fec_type;
	uint8_t rsvd[48];
};
struct ionic_port_info_head {
	struct ionic_port_config config;
	struct ionic_port_status status;
};
_Static_assert(offsetof(struct ionic_port_info_head, status.status) == 264, "port status");
#define IONIC_PORT_OPER_STATUS_UP 1
#define IONIC_PORT_ADMIN_STATE_UP 2
#define IONIC_SPEED_100G 100000

/* Queue identity (Q_IDENTIFY data window). */
struct ionic_q_identity {
	uint8_t version;
	uint8_t supported;
	uint8_t rsvd[6];
	le64 features;
	le16 desc_sz;
	le16 comp_sz;
	le16 sg_desc_sz;
	le16 max_sg_elems;
	le16 sg_desc_stride;
};

struct ionic_q_identify_cmd {
	uint8_t opcode;
	uint8_t rsvd;
	le16 lif_type;
	uint8_t type;
	uint8_t ver;
	uint8_t rsvd2[58];
};
struct ionic_q_identify_comp {
	uint8_t status;
	uint8_t rsvd;
	le16 comp_index;
	uint8_t ver;
	uint8_t rsvd2[10];
	uint8_t color;
};

struct ionic_lif_identify_cmd {
	uint8_t opcode;
	uint8_t type;
	uint8_t ver;
	uint8_t rsvd[61];
};
struct ionic_lif_identify_comp {
	uint8_t status;
	uint8_t ver;
	uint8_t rsvd2[14];
};

struct ionic_port_identify_cmd {
	uint8_t opcode;
	uint8_t index;
	uint8_t ver;
	uint8_t rsvd[61];
};
struct ionic_port_identify_comp {
	uint8_t status;
	uint8_t ver;
	uint8_t rsvd[14];
};

struct ionic_port_init_cmd {
	uint8_t opcode;
	uint8_t index;
	uint8_t rsvd[6];
	le64 info_pa;
	uint8_t rsvd2[48];
};

struct ionic_port_setattr_cmd {
	uint8_t opcode;
	uint8_t index;
	uint8_t attr;
	uint8_t rsvd;
	union {
		uint8_t state;
		le32 speed;
		le32 mtu;
		uint8_t rsvd2[60];
	};
};
#define IONIC_PORT_ATTR_STATE 0
#define IONIC_PORT_ATTR_SPEED 1
#define IONIC_PORT_ATTR_MTU   2

struct ionic_lif_init_cmd {
	uint8_t opcode;
	uint8_t type;
	le16 index;
	le32 rsvd;
	le64 info_pa;
	uint8_t rsvd2[48];
};
struct ionic_lif_init_comp {
	uint8_t status;
	uint8_t rsvd;
	le16 hw_index;
	uint8_t rsvd2[12];
};

struct ionic_q_init_cmd {
	uint8_t opcode;
	uint8_t rsvd;
	le16 lif_index;
	uint8_t type;
	uint8_t ver;
	uint8_t rsvd1[2];
	le32 index;
	le16 pid;
	le16 intr_index;
	le16 flags;
	uint8_t cos;
	uint8_t ring_size; /* log2 of the number of descriptors */
	le64 ring_base;
	le64 cq_ring_base;
	le64 sg_ring_base;
	uint8_t rsvd2[12];
	le64 features;
};
_Static_assert(sizeof(struct ionic_q_init_cmd) == 64, "q_init");
_Static_assert(offsetof(struct ionic_q_init_cmd, ring_base) == 20, "ring_base");
#define IONIC_QINIT_F_IRQ 0x01
#define IONIC_QINIT_F_ENA 0x02
#define IONIC_QINIT_F_SG  0x04

struct ionic_q_init_comp {
	uint8_t status;
	uint8_t rsvd;
	le16 comp_index;
	le32 hw_index;
	uint8_t hw_type;
	uint8_t rsvd2[6];
	uint8_t color;
};

struct ionic_q_control_cmd {
	uint8_t opcode;
	uint8_t type;
	le16 lif_index;
	le32 index;
	uint8_t oper;
	uint8_t rsvd[55];
};
#define IONIC_Q_DISABLE 0
#define IONIC_Q_ENABLE  1

struct ionic_lif_setattr_cmd {
	uint8_t opcode;
	uint8_t attr;
	le16 index;
	union {
		uint8_t state;
		char name[16];
		le32 mtu;
		uint8_t mac[6];
		le64 features;
		struct {
			le16 types;
			uint8_t key[40];
			uint8_t rsvd[6];
			le64 addr;
		} rss;
		uint8_t rsvd[60];
	};
};
_Static_assert(sizeof(struct ionic_lif_setattr_cmd) == 64, "lif_setattr");
struct ionic_lif_setattr_comp {
	uint8_t status;
	uint8_t rsvd;
	le16 comp_index;
	union {
		le64 features;
		uint8_t rsvd2[11];
	};
	uint8_t color;
};
_Static_assert(sizeof(struct ionic_lif_setattr_comp) == 16, "lif_setattr comp");

struct ionic_lif_getattr_cmd {
	uint8_t opcode;
	uint8_t attr;
	le16 index;
	uint8_t rsvd[60];
};
struct ionic_lif_getattr_comp {
	uint8_t status;
	uint8_t rsvd;
	le16 comp_index;
	union {
		uint8_t state;
		le32 mtu;
		uint8_t mac[6];
		le64 features;
		uint8_t rsvd2[11];
	};
	uint8_t color;
};
_Static_assert(sizeof(struct ionic_lif_getattr_comp) == 16, "lif_getattr comp");

enum ionic_lif_attr {
	IONIC_LIF_ATTR_STATE = 0,
	IONIC_LIF_ATTR_NAME = 1,
	IONIC_LIF_ATTR_MTU = 2,
	IONIC_LIF_ATTR_MAC = 3,
	IONIC_LIF_ATTR_FEATURES = 4,
	IONIC_LIF_ATTR_RSS = 5,
	IONIC_LIF_ATTR_STATS_CTRL = 6,
	IONIC_LIF_ATTR_TXSTAMP = 7,
};

struct ionic_rx_mode_set_cmd {
	uint8_t opcode;
	uint8_t rsvd;
	le16 lif_index;
	le16 rx_mode;
	uint8_t rsvd2[58];
};

struct ionic_rx_filter_add_cmd {
	uint8_t opcode;
	uint8_t qtype;
	le16 lif_index;
	le32 qid;
	le16 match;
	union {
		le16 vlan;
		uint8_t mac[6];
		struct {
			le16 vlan;
			uint8_t addr[6];
		} mac_vlan;
		uint8_t rsvd[54];
	};
};
_Static_assert(sizeof(struct ionic_rx_filter_add_cmd) == 64, "rx_filter_add");
struct ionic_rx_filter_add_comp {
	uint8_t status;
	uint8_t rsvd;
	le16 comp_index;
	le32 filter_id;
	uint8_t rsvd2[7];
	uint8_t color;
};
#define IONIC_RX_FILTER_MATCH_VLAN     0
#define IONIC_RX_FILTER_MATCH_MAC      1
#define IONIC_RX_FILTER_MATCH_MAC_VLAN 2

struct ionic_rx_filter_del_cmd {
	uint8_t opcode;
	uint8_t rsvd;
	le16 lif_index;
	le32 filter_id;
	uint8_t rsvd2[56];
};

/* Notify queue events: 64 bytes, new when eid grows. */
struct ionic_notifyq_event {
	le64 eid;
	le16 ecode;
	le16 link_status;
	le32 link_speed;
	uint8_t rsvd[48];
};
_Static_assert(sizeof(struct ionic_notifyq_event) == 64, "notifyq event");
#define IONIC_EVENT_LINK_CHANGE 1

/* TX: 16-byte descriptors; cmd packs flags, opcode, SG count and the first buffer's address. */
struct ionic_txq_desc {
	le64 cmd;
	le16 len;
	le16 vlan_tci;
	le16 csum_start;
	le16 csum_offset;
};
_Static_assert(sizeof(struct ionic_txq_desc) == 16, "txq desc");
#define IONIC_TXQ_DESC_OPCODE_SHIFT 4
#define IONIC_TXQ_DESC_OPCODE_MASK  0xfu
#define IONIC_TXQ_DESC_NSGE_SHIFT   8
#define IONIC_TXQ_DESC_NSGE_MASK    0xfu
#define IONIC_TXQ_DESC_ADDR_SHIFT   12
#define IONIC_TXQ_DESC_ADDR_MASK    ((1ull << 52) - 1)
#define IONIC_TXQ_DESC_OPCODE_CSUM_NONE    0
#define IONIC_TXQ_DESC_OPCODE_CSUM_PARTIAL 1
#define IONIC_TXQ_DESC_OPCODE_CSUM_HW      2
#define IONIC_TXQ_DESC_OPCODE_TSO          3

struct ionic_sg_elem {
	le64 addr;
	le16 len;
	le16 rsvd[3];
};
_Static_assert(sizeof(struct ionic_sg_elem) == 16, "sg elem");
#define IONIC_TX_SG_ROW_V0 128
#define IONIC_TX_SG_ROW_V1 256
#define IONIC_RX_SG_ROW    128

struct ionic_rxq_desc {
	uint8_t opcode;
	uint8_t rsvd[5];
	le16 len;
	le64 addr;
};
_Static_assert(sizeof(struct ionic_rxq_desc) == 16, "rxq desc");
#define IONIC_RXQ_DESC_OPCODE_SIMPLE 0
#define IONIC_RXQ_DESC_OPCODE_SG     1

struct ionic_rxq_comp {
	uint8_t status;
	uint8_t num_sg_elems;
	le16 comp_index;
	le32 rss_hash;
	le16 csum;
	le16 vlan_tci;
	le16 len;
	uint8_t csum_flags;
	uint8_t pkt_type_color;
};
_Static_assert(sizeof(struct ionic_rxq_comp) == 16, "rxq comp");

/* RX_MODE_SET bits. */
#define IONIC_RX_MODE_F_UNICAST   0x01
#define IONIC_RX_MODE_F_MULTICAST 0x02
#define IONIC_RX_MODE_F_BROADCAST 0x04
#define IONIC_RX_MODE_F_PROMISC   0x08
#define IONIC_RX_MODE_F_ALLMULTI  0x10

/* Interrupt control: credits register bits. */
#define IONIC_INTR_CRED_COUNT_SIGNED 0xffffu
#define IONIC_INTR_CRED_UNMASK       0x10000u

/* Doorbell value: producer index, ring, queue id. */
#define IONIC_DBELL_QID_SHIFT  24
#define IONIC_DBELL_QID_MASK   0xffffffu
#define IONIC_DBELL_RING_SHIFT 16
#define IONIC_DBELL_RING_MASK  0x7u
#define IONIC_DBELL_INDEX_MASK 0xffffu

/* Color: bit 7 of the last byte of a completion. */
#define IONIC_COMP_COLOR_MASK 0x80

#pragma pack(pop)

#endif
