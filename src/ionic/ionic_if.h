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

#pragma pack(pop)

#endif
