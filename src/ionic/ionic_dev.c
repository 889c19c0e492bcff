/*
 * ionic device model: BAR0 registers and the dev_cmd protocol (Linux 7.2
 * ionic_dev.c: copy the 64-byte command, clear done, ring the doorbell, poll
 * done, read the 16-byte completion and, for identify commands, the data
 * window). Guest mistakes are logged and counted, never fatal.
 */
#include "ionic/ionic_dev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ionic/ionic_if.h"
#include "util/log.h"

#define ASIC_TYPE 4 /* not 0 or 2: those turn on the driver's doorbell re-ring workaround */

struct ionic_dev {
	struct ionic_dev_config cfg;
	struct ionic_dev_env env;
	struct ionic_dev_stats stats;
	union {
		uint8_t bytes[IONIC_BAR0_REGS_END];
		struct {
			struct ionic_dev_info_regs info;
			struct ionic_dev_cmd_regs cmd;
		};
	} bar0;
	struct ionic_intr_ctrl intr[IONIC_NINTRS];
};
_Static_assert(offsetof(struct ionic_dev, bar0.cmd) - offsetof(struct ionic_dev, bar0) == IONIC_BAR0_DEV_CMD_OFFSET,
	       "dev_cmd block offset");
_Static_assert(IONIC_BAR0_INTR_CTRL_OFFSET + IONIC_NINTRS * sizeof(struct ionic_intr_ctrl) <= IONIC_BAR0_REGS_END,
	       "interrupt control fits in BAR0");

static void guest_error(struct ionic_dev *dev, const char *what, uint64_t off)
{
	dev->stats.guest_errors++;
	LOG_DEBUG("ionic: guest error: %s at BAR offset %#llx", what, (unsigned long long)off);
}

/* ---- dev_cmd ---- */

typedef uint8_t (*dev_cmd_fn)(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp);

static uint8_t cmd_nop(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)dev; (void)cmd; (void)comp;
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_identify(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_dev_identify_cmd *c = (const void *)cmd;
	struct ionic_dev_identify_comp *r = (void *)comp;
	struct ionic_dev_identity id = {
		.version = IONIC_DEV_IDENTITY_VERSION_2,
		.type = 0,
		.nports = 1,
		.nlifs = le32_set(1),
		.nintrs = le32_set(IONIC_NINTRS),
		.ndbpgs_per_lif = le32_set(IONIC_NDBPGS_PER_LIF),
		.intr_coal_mult = le32_set(1),
		.intr_coal_div = le32_set(1),
		.eq_count = le32_set(0),
		.capabilities = le64_set(0),
	};

	/* The driver asked for version c->ver; we answer with the newest we have, at most that. */
	if (c->ver == 0)
		return IONIC_RC_EVERSION;
	if (id.version > c->ver)
		id.version = c->ver;
	/* The driver wrote its own identity into the window first; replace it with ours. */
	memset(dev->bar0.cmd.data, 0, sizeof(dev->bar0.cmd.data));
	memcpy(dev->bar0.cmd.data, &id, sizeof(id));
	r->ver = id.version;
	LOG_DEBUG("ionic: IDENTIFY answered (identity version %u)", id.version);
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_reset(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)cmd; (void)comp;
	memset(dev->intr, 0, sizeof(dev->intr));
	LOG_DEBUG("ionic: RESET");
	return IONIC_RC_SUCCESS;
}

static const dev_cmd_fn dev_cmds[256] = {
	[IONIC_CMD_NOP] = cmd_nop,
	[IONIC_CMD_IDENTIFY] = cmd_identify,
	[IONIC_CMD_INIT] = cmd_nop,
	[IONIC_CMD_RESET] = cmd_reset,
};

static void dev_cmd_execute(struct ionic_dev *dev)
{
	uint8_t cmd[64], comp[16] = { 0 };
	dev_cmd_fn fn;

	memcpy(cmd, dev->bar0.cmd.cmd, sizeof(cmd));
	fn = dev_cmds[cmd[0]];
	dev->stats.dev_cmds++;
	if (fn == NULL) {
		LOG_DEBUG("ionic: dev_cmd opcode %u not supported", cmd[0]);
		comp[0] = IONIC_RC_EOPCODE;
	} else {
		comp[0] = fn(dev, cmd, comp);
	}
	if (comp[0] != IONIC_RC_SUCCESS)
		dev->stats.dev_cmd_errors++;
	memcpy(dev->bar0.cmd.comp, comp, sizeof(comp));
	dev->bar0.cmd.done = le32_set(IONIC_DEV_CMD_DONE);
}

/* ---- registers ---- */

static uint32_t heartbeat(void)
{
	struct timespec ts;

	/* Changes between any two of the driver's checks (they are seconds apart) and is never 0. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)(ts.tv_sec * 1000 + ts.tv_nsec / 1000000) | 1u;
}

static void fill_dev_info(struct ionic_dev *dev)
{
	struct ionic_dev_info_regs *info = &dev->bar0.info;
	const uint8_t *m = dev->cfg.mac;

	memset(info, 0, sizeof(*info));
	info->signature = le32_set(IONIC_DEV_INFO_SIGNATURE);
	info->version = IONIC_DEV_INFO_VERSION;
	info->asic_type = ASIC_TYPE;
	info->asic_rev = 0;
	info->fw_status = IONIC_FW_STS_F_RUNNING; /* generation 0, forever */
	snprintf(info->fw_version, sizeof(info->fw_version), "%s", IONIC_FW_VERSION);
	snprintf(info->serial_num, sizeof(info->serial_num), "ERNIC%02X%02X%02X%02X%02X%02X",
		 m[0], m[1], m[2], m[3], m[4], m[5]);
}

void ionic_dev_reset(struct ionic_dev *dev)
{
	memset(&dev->bar0, 0, sizeof(dev->bar0));
	memset(dev->intr, 0, sizeof(dev->intr));
	fill_dev_info(dev);
}

int ionic_dev_bar0_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct ionic_dev *dev = opaque;
	const uint64_t intr_end = IONIC_BAR0_INTR_CTRL_OFFSET + sizeof(dev->intr);
	uint64_t end = off + len;

	if (off >= IONIC_BAR0_REGS_END || len > IONIC_BAR0_REGS_END - off) {
		/* Above the registers: nothing there (the MSI-X structures are served by the PCI layer). */
		if (!is_write)
			memset(buf, 0, len);
		else
			guest_error(dev, "write to unused BAR0 space", off);
		return 0;
	}
	if (!is_write) {
		dev->bar0.info.fw_heartbeat = le32_set(heartbeat());
		if (off >= IONIC_BAR0_INTR_CTRL_OFFSET && end <= intr_end)
			memcpy(buf, (uint8_t *)dev->intr + (off - IONIC_BAR0_INTR_CTRL_OFFSET), len);
		else if (end <= sizeof(dev->bar0.info) + sizeof(dev->bar0.cmd))
			memcpy(buf, dev->bar0.bytes + off, len);
		else
			memset(buf, 0, len);
		return 0;
	}
	if (off >= IONIC_BAR0_DEV_CMD_OFFSET && end <= IONIC_BAR0_DEV_CMD_OFFSET + sizeof(dev->bar0.cmd)) {
		memcpy(dev->bar0.bytes + off, buf, len);
		/* A write that covers the doorbell word with bit 0 set runs the command. */
		if (off < IONIC_BAR0_DEV_CMD_OFFSET + 4 && (le32_get(dev->bar0.cmd.doorbell) & 1))
			dev_cmd_execute(dev);
		return 0;
	}
	if (off >= IONIC_BAR0_INTR_CTRL_OFFSET && end <= intr_end) {
		memcpy((uint8_t *)dev->intr + (off - IONIC_BAR0_INTR_CTRL_OFFSET), buf, len);
		return 0;
	}
	guest_error(dev, "write to a read-only register", off);
	return 0;
}

int ionic_dev_bar2_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct ionic_dev *dev = opaque;

	if (!is_write) {
		memset(buf, 0, len); /* doorbells are write-only */
		return 0;
	}
	dev->stats.doorbells++;
	LOG_DEBUG("ionic: doorbell page %llu offset %#llx (%zu bytes)",
		  (unsigned long long)(off / IONIC_DB_PAGE_SIZE),
		  (unsigned long long)(off % IONIC_DB_PAGE_SIZE), len);
	return 0;
}

struct ionic_dev *ionic_dev_new(const struct ionic_dev_config *cfg, const struct ionic_dev_env *env)
{
	struct ionic_dev *dev = calloc(1, sizeof(*dev));

	if (dev == NULL)
		return NULL;
	dev->cfg = *cfg;
	dev->env = *env;
	ionic_dev_reset(dev);
	return dev;
}

void ionic_dev_free(struct ionic_dev *dev)
{
	free(dev);
}

const struct ionic_dev_stats *ionic_dev_stats(const struct ionic_dev *dev)
{
	return &dev->stats;
}
