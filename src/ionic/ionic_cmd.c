/*
 * The ionic command set, shared by dev_cmd and the admin queue: identity
 * answers (device, port, LIF, queue types), port and LIF set-up, queue
 * init/control, LIF attributes and receive filters (Linux 7.2 ionic_if.h).
 * One handler per opcode in a table; anything else is EOPCODE.
 */
#include <stdio.h>
#include <string.h>

#include "ionic/ionic_priv.h"
#include "ionic/ionic_rdma_if.h"
#include "util/log.h"

/* What this LIF offers (see the LIF identity below). */
#define LIF_MAX_FRAME (IONIC_MAX_MTU + 18)
#define LIF_RSS_IND_TBL_SZ 128
#define LINK_SPEED_MBPS IONIC_SPEED_100G

typedef uint8_t (*cmd_fn)(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp);

static uint8_t *data_window(struct ionic_dev *dev)
{
	memset(dev->bar0.cmd.data, 0, sizeof(dev->bar0.cmd.data));
	return dev->bar0.cmd.data;
}

static uint8_t cmd_nop(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)dev; (void)cmd; (void)comp;
	return IONIC_RC_SUCCESS;
}

/* ---- device ---- */

static uint8_t cmd_identify(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_dev_identify_cmd *c = (const void *)cmd;
	struct ionic_dev_identify_comp *r = (void *)comp;
	struct ionic_dev_identity id = {
		.version = IONIC_DEV_IDENTITY_VERSION_2,
		.nports = 1,
		.nlifs = le32_set(1),
		.nintrs = le32_set(IONIC_NINTRS),
		.ndbpgs_per_lif = le32_set(IONIC_NDBPGS_PER_LIF),
		.intr_coal_mult = le32_set(1),
		.intr_coal_div = le32_set(1),
	};

	if (c->ver == 0)
		return IONIC_RC_EVERSION;
	if (id.version > c->ver)
		id.version = c->ver;
	/* The driver wrote its own identity into the window first; ours replaces it. */
	memcpy(data_window(dev), &id, sizeof(id));
	r->ver = id.version;
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_reset(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)cmd; (void)comp;
	memset(dev->intr, 0, sizeof(dev->intr));
	ionic_lif_reset(dev);
	dev->port_info_pa = 0;
	return IONIC_RC_SUCCESS;
}

/* ---- port ---- */

static uint8_t cmd_port_identify(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_port_identify_cmd *c = (const void *)cmd;
	struct ionic_port_identity *id;

	if (c->index != 0)
		return IONIC_RC_EINVAL;
	id = (struct ionic_port_identity *)data_window(dev);
	id->version = 1;
	id->type = 0;
	id->num_lanes = 4;
	id->min_frame_size = le32_set(64);
	id->max_frame_size = le32_set(LIF_MAX_FRAME);
	id->speeds[0] = le32_set(LINK_SPEED_MBPS);
	id->config.speed = le32_set(LINK_SPEED_MBPS);
	id->config.mtu = le32_set(dev->port_mtu);
	id->config.state = dev->port_state;
	comp[1] = 1;
	return IONIC_RC_SUCCESS;
}

static void port_write_info(struct ionic_dev *dev)
{
	struct ionic_port_info_head pi = { 0 };

	if (dev->port_info_pa == 0)
		return;
	pi.config.speed = le32_set(LINK_SPEED_MBPS);
	pi.config.mtu = le32_set(dev->port_mtu);
	pi.config.state = dev->port_state;
	pi.status.id = le32_set(0);
	pi.status.speed = le32_set(LINK_SPEED_MBPS);
	pi.status.status = IONIC_PORT_OPER_STATUS_UP;
	if (ionic_dma_write(dev, dev->port_info_pa, &pi, sizeof(pi)))
		ionic_guest_error(dev, "port_info at %#llx is not mapped", (unsigned long long)dev->port_info_pa);
}

static uint8_t cmd_port_init(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_port_init_cmd *c = (const void *)cmd;

	(void)comp;
	if (c->index != 0)
		return IONIC_RC_EINVAL;
	dev->port_info_pa = le64_get(c->info_pa);
	port_write_info(dev);
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_port_reset(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)cmd; (void)comp;
	dev->port_info_pa = 0;
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_port_setattr(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_port_setattr_cmd *c = (const void *)cmd;

	(void)comp;
	switch (c->attr) {
	case IONIC_PORT_ATTR_STATE:
		dev->port_state = c->state;
		break;
	case IONIC_PORT_ATTR_MTU:
		dev->port_mtu = le32_get(c->mtu);
		break;
	default:
		break; /* speed, autoneg, FEC, pause: one fixed emulated link */
	}
	port_write_info(dev);
	return IONIC_RC_SUCCESS;
}

/* ---- LIF ---- */

static uint8_t cmd_lif_identify(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_lif_identify_cmd *c = (const void *)cmd;
	struct ionic_lif_identity *id = (struct ionic_lif_identity *)data_window(dev);

	if (c->type != IONIC_LIF_TYPE_CLASSIC)
		return IONIC_RC_EINVAL;
	id->capabilities = le64_set(IONIC_LIF_CAP_ETH);
	id->eth.version = 1;
	id->eth.max_ucast_filters = le32_set(32);
	id->eth.max_mcast_filters = le32_set(32);
	id->eth.rss_ind_tbl_sz = le16_set(LIF_RSS_IND_TBL_SZ);
	id->eth.min_frame_size = le32_set(64);
	id->eth.max_frame_size = le32_set(LIF_MAX_FRAME);
	id->eth.config.mtu = le32_set(1500);
	memcpy(id->eth.config.mac, dev->cfg.mac, 6);
	id->eth.config.queue_count[IONIC_QTYPE_ADMINQ] = le32_set(1);
	id->eth.config.queue_count[IONIC_QTYPE_NOTIFYQ] = le32_set(1);
	id->eth.config.queue_count[IONIC_QTYPE_RXQ] = le32_set(IONIC_NRXQ);
	id->eth.config.queue_count[IONIC_QTYPE_TXQ] = le32_set(IONIC_NTXQ);
	ionic_rdma_identity(id);
	comp[1] = 1; /* identity version */
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_lif_init(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_lif_init_cmd *c = (const void *)cmd;
	struct ionic_lif_init_comp *r = (void *)comp;

	if (le16_get(c->index) != 0 || c->type != IONIC_LIF_TYPE_CLASSIC)
		return IONIC_RC_EINVAL;
	ionic_lif_reset(dev);
	dev->lif.info_pa = le64_get(c->info_pa);
	dev->lif.inited = true;
	ionic_lif_write_status(dev);
	r->hw_index = le16_set(0);
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_lif_reset(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)cmd; (void)comp;
	ionic_lif_reset(dev);
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_lif_setattr(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_lif_setattr_cmd *c = (const void *)cmd;
	struct ionic_lif_setattr_comp *r = (void *)comp;
	struct ionic_lif *lif = &dev->lif;

	switch (c->attr) {
	case IONIC_LIF_ATTR_STATE:
		lif->state = c->state;
		break;
	case IONIC_LIF_ATTR_NAME:
		memcpy(lif->name, c->name, sizeof(c->name));
		lif->name[16] = '\0';
		break;
	case IONIC_LIF_ATTR_MTU: {
		uint32_t mtu = le32_get(c->mtu);

		if (mtu < IONIC_MIN_MTU || mtu > IONIC_MAX_MTU)
			return IONIC_RC_EINVAL;
		lif->mtu = mtu;
		break;
	}
	case IONIC_LIF_ATTR_MAC:
		if (c->mac[0] & 1)
			return IONIC_RC_EINVAL; /* a station address is unicast */
		memcpy(lif->mac, c->mac, 6);
		break;
	case IONIC_LIF_ATTR_FEATURES:
		/* No offloads yet: every request is granted nothing, which the driver accepts. */
		lif->features = 0;
		r->features = le64_set(lif->features);
		break;
	case IONIC_LIF_ATTR_RSS:
	case IONIC_LIF_ATTR_STATS_CTRL:
		break;
	default:
		return IONIC_RC_EINVAL;
	}
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_lif_getattr(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_lif_getattr_cmd *c = (const void *)cmd;
	struct ionic_lif_getattr_comp *r = (void *)comp;
	struct ionic_lif *lif = &dev->lif;

	switch (c->attr) {
	case IONIC_LIF_ATTR_STATE:
		r->state = lif->state;
		break;
	case IONIC_LIF_ATTR_MTU:
		r->mtu = le32_set(lif->mtu);
		break;
	case IONIC_LIF_ATTR_MAC:
		memcpy(r->mac, lif->mac, 6);
		break;
	case IONIC_LIF_ATTR_FEATURES:
		r->features = le64_set(lif->features);
		break;
	default:
		return IONIC_RC_EINVAL;
	}
	return IONIC_RC_SUCCESS;
}

/* ---- queues ---- */

static uint8_t cmd_q_identify(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_q_identify_cmd *c = (const void *)cmd;
	struct ionic_q_identity *id;
	uint8_t ver;

	if (le16_get(c->lif_type) != IONIC_LIF_TYPE_CLASSIC)
		return IONIC_RC_EINVAL;
	id = (struct ionic_q_identity *)data_window(dev);
	switch (c->type) {
	case IONIC_QTYPE_ADMINQ:
		ver = 0;
		id->desc_sz = le16_set(64);
		id->comp_sz = le16_set(16);
		break;
	case IONIC_QTYPE_NOTIFYQ:
		ver = 0;
		id->desc_sz = le16_set(4);
		id->comp_sz = le16_set(64);
		break;
	case IONIC_QTYPE_RXQ:
		ver = 0;
		id->desc_sz = le16_set(16);
		id->comp_sz = le16_set(16);
		id->sg_desc_sz = le16_set(128);
		id->max_sg_elems = le16_set(8);
		id->sg_desc_stride = le16_set(8);
		break;
	case IONIC_QTYPE_TXQ:
		/* Version 1 with 256-byte SG rows: the driver always allows 15 fragments. */
		ver = 1;
		id->desc_sz = le16_set(16);
		id->comp_sz = le16_set(16);
		id->sg_desc_sz = le16_set(256);
		id->max_sg_elems = le16_set(15);
		id->sg_desc_stride = le16_set(16);
		break;
	default:
		return IONIC_RC_EINVAL; /* the driver skips a type it cannot identify */
	}
	if (ver > c->ver)
		ver = c->ver;
	id->version = ver;
	id->supported = (uint8_t)((1u << (ver + 1)) - 1);
	comp[4] = ver; /* ionic_q_identify_comp.ver */
	return IONIC_RC_SUCCESS;
}

static struct ionic_queue *find_queue(struct ionic_dev *dev, uint8_t type, uint32_t index)
{
	struct ionic_lif *lif = &dev->lif;

	switch (type) {
	case IONIC_QTYPE_ADMINQ: return index == 0 ? &lif->adminq : NULL;
	case IONIC_QTYPE_NOTIFYQ: return index == 0 ? &lif->notifyq : NULL;
	case IONIC_QTYPE_RXQ: return index < IONIC_NRXQ ? &lif->rxq[index] : NULL;
	case IONIC_QTYPE_TXQ: return index < IONIC_NTXQ ? &lif->txq[index] : NULL;
	default: return NULL;
	}
}

static uint8_t cmd_q_init(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_q_init_cmd *c = (const void *)cmd;
	struct ionic_q_init_comp *r = (void *)comp;
	struct ionic_queue *q;
	uint8_t rc;

	if (le16_get(c->lif_index) != 0 || !dev->lif.inited)
		return IONIC_RC_EINVAL;
	q = find_queue(dev, c->type, le32_get(c->index));
	if (q == NULL)
		return c->type < IONIC_QTYPE_MAX ? IONIC_RC_EQID : IONIC_RC_EQTYPE;
	rc = ionic_queue_init(dev, q, c);
	if (rc)
		return rc;
	if (q->type == IONIC_QTYPE_NOTIFYQ)
		ionic_notify_link(dev); /* the first event: the link is up */
	r->hw_index = le32_set(q->index);
	r->hw_type = ionic_queue_db_slot(q); /* the doorbell word: one per queue */
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_q_control(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_q_control_cmd *c = (const void *)cmd;
	struct ionic_queue *q = find_queue(dev, c->type, le32_get(c->index));

	(void)comp;
	if (q == NULL)
		return IONIC_RC_EQID;
	if (!q->inited)
		return IONIC_RC_EINVAL;
	if (c->oper == IONIC_Q_ENABLE)
		q->enabled = true; /* doorbells rung before this are honoured from now on */
	else if (c->oper == IONIC_Q_DISABLE)
		q->enabled = false;
	else
		return IONIC_RC_EINVAL;
	return IONIC_RC_SUCCESS;
}

/* ---- receive filters ---- */

static uint8_t cmd_rx_mode_set(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_rx_mode_set_cmd *c = (const void *)cmd;

	(void)comp;
	dev->lif.rx_mode = le16_get(c->rx_mode);
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_rx_filter_add(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_rx_filter_add_cmd *c = (const void *)cmd;
	struct ionic_rx_filter_add_comp *r = (void *)comp;
	struct ionic_filter want = { .used = true, .match = le16_get(c->match) };
	int free_slot = -1;

	switch (want.match) {
	case IONIC_RX_FILTER_MATCH_VLAN:
		want.vlan = le16_get(c->vlan);
		break;
	case IONIC_RX_FILTER_MATCH_MAC:
		memcpy(want.mac, c->mac, 6);
		break;
	case IONIC_RX_FILTER_MATCH_MAC_VLAN:
		want.vlan = le16_get(c->mac_vlan.vlan);
		memcpy(want.mac, c->mac_vlan.addr, 6);
		break;
	default:
		return IONIC_RC_EINVAL;
	}
	for (int i = 0; i < IONIC_MAX_FILTERS; i++) {
		struct ionic_filter *f = &dev->lif.filters[i];

		if (f->used && f->match == want.match && f->vlan == want.vlan && !memcmp(f->mac, want.mac, 6)) {
			r->filter_id = le32_set((uint32_t)i);
			return IONIC_RC_EEXIST;
		}
		if (!f->used && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return IONIC_RC_ENOSPC;
	dev->lif.filters[free_slot] = want;
	r->filter_id = le32_set((uint32_t)free_slot);
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_rx_filter_del(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	const struct ionic_rx_filter_del_cmd *c = (const void *)cmd;
	uint32_t id = le32_get(c->filter_id);

	(void)comp;
	if (id >= IONIC_MAX_FILTERS || !dev->lif.filters[id].used)
		return IONIC_RC_ENOENT;
	dev->lif.filters[id].used = false;
	return IONIC_RC_SUCCESS;
}

static uint8_t cmd_rdma(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp)
{
	(void)comp;
	return ionic_rdma_queue_cmd(dev, cmd);
}

struct cmd_desc {
	cmd_fn fn;
	const char *name;
	bool dev_cmd_only; /* not accepted on the admin queue */
};

static const struct cmd_desc cmds[256] = {
	[IONIC_CMD_NOP] = { cmd_nop, "NOP", false },
	[IONIC_CMD_IDENTIFY] = { cmd_identify, "IDENTIFY", true },
	[IONIC_CMD_INIT] = { cmd_nop, "INIT", true },
	[IONIC_CMD_RESET] = { cmd_reset, "RESET", true },
	[IONIC_CMD_PORT_IDENTIFY] = { cmd_port_identify, "PORT_IDENTIFY", true },
	[IONIC_CMD_PORT_INIT] = { cmd_port_init, "PORT_INIT", true },
	[IONIC_CMD_PORT_RESET] = { cmd_port_reset, "PORT_RESET", true },
	[IONIC_CMD_PORT_SETATTR] = { cmd_port_setattr, "PORT_SETATTR", false },
	[IONIC_CMD_LIF_IDENTIFY] = { cmd_lif_identify, "LIF_IDENTIFY", true },
	[IONIC_CMD_LIF_INIT] = { cmd_lif_init, "LIF_INIT", true },
	[IONIC_CMD_LIF_RESET] = { cmd_lif_reset, "LIF_RESET", false },
	[IONIC_CMD_LIF_GETATTR] = { cmd_lif_getattr, "LIF_GETATTR", false },
	[IONIC_CMD_LIF_SETATTR] = { cmd_lif_setattr, "LIF_SETATTR", false },
	[IONIC_CMD_RX_MODE_SET] = { cmd_rx_mode_set, "RX_MODE_SET", false },
	[IONIC_CMD_RX_FILTER_ADD] = { cmd_rx_filter_add, "RX_FILTER_ADD", false },
	[IONIC_CMD_RX_FILTER_DEL] = { cmd_rx_filter_del, "RX_FILTER_DEL", false },
	[IONIC_CMD_Q_IDENTIFY] = { cmd_q_identify, "Q_IDENTIFY", true },
	[IONIC_CMD_Q_INIT] = { cmd_q_init, "Q_INIT", false },
	[IONIC_CMD_Q_CONTROL] = { cmd_q_control, "Q_CONTROL", false },
	[IONIC_CMD_RDMA_RESET_LIF] = { cmd_rdma, "RDMA_RESET_LIF", false },
	[IONIC_CMD_RDMA_CREATE_EQ] = { cmd_rdma, "RDMA_CREATE_EQ", false },
	[IONIC_CMD_RDMA_CREATE_CQ] = { cmd_rdma, "RDMA_CREATE_CQ", false },
	[IONIC_CMD_RDMA_CREATE_ADMINQ] = { cmd_rdma, "RDMA_CREATE_ADMINQ", false },
};

uint8_t ionic_cmd_exec(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp, bool adminq)
{
	const struct cmd_desc *d = &cmds[cmd[0]];
	uint8_t rc;

	memset(comp, 0, 16);
	if (d->fn == NULL || (adminq && d->dev_cmd_only)) {
		LOG_DEBUG("ionic: %s opcode %u not supported", adminq ? "adminq" : "dev_cmd", cmd[0]);
		rc = IONIC_RC_EOPCODE;
	} else {
		rc = d->fn(dev, cmd, comp);
		LOG_DEBUG("ionic: %s %s -> %u", adminq ? "adminq" : "dev_cmd", d->name, rc);
	}
	comp[0] = rc;
	return rc;
}
