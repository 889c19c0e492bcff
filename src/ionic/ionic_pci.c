/* ionic PCI glue; see ionic_pci.h. */
#include "ionic/ionic_pci.h"

#include <stdlib.h>

#include "ionic/ionic_if.h"
#include "net/net_switch.h"
#include "util/log.h"
#include "vfio_user/vfu_server.h"

struct ionic_pci {
	struct pci_dev *pd;
	struct ionic_dev *dev;
	struct vfu_server *srv;
	struct net_switch *sw;
	int port;
};

static void tx_frame(void *ctx, const uint8_t *frame, size_t len)
{
	struct ionic_pci *ip = ctx;

	if (ip->sw)
		net_switch_input(ip->sw, ip->port, frame, len);
}

static void rx_deliver(void *ctx, const uint8_t *frame, size_t len)
{
	struct ionic_pci *ip = ctx;

	ionic_dev_rx_frame(ip->dev, frame, len);
}

int ionic_pci_attach_segment(struct ionic_pci *ip, struct net_switch *sw)
{
	struct net_port p = { .name = "guest", .ctx = ip, .deliver = rx_deliver };

	ip->port = net_switch_attach(sw, &p);
	if (ip->port < 0)
		return -1;
	ip->sw = sw;
	return 0;
}

static void raise_irq(void *ctx, uint32_t vector)
{
	struct ionic_pci *ip = ctx;

	pci_msix_notify(ip->pd, vector);
}

static struct dma_map *guest_dma(void *ctx)
{
	struct ionic_pci *ip = ctx;

	return ip->srv ? vfu_server_dma(ip->srv) : NULL;
}

static void reset(void *opaque)
{
	ionic_dev_reset(opaque);
}

struct ionic_pci *ionic_pci_new(const struct ionic_dev_config *cfg)
{
	struct ionic_pci *ip = calloc(1, sizeof(*ip));
	struct ionic_dev_env env = { .raise_irq = raise_irq, .dma = guest_dma, .tx_frame = tx_frame };
	struct pci_function fn = {
		.vendor_id = IONIC_PCI_VENDOR_ID,
		.device_id = IONIC_PCI_DEVICE_ID_PF,
		.subsys_vendor_id = IONIC_PCI_VENDOR_ID,
		.subsys_id = IONIC_PCI_SUBSYS_ID,
		.class_code = IONIC_PCI_CLASS_ETHERNET,
		.msix_vectors = IONIC_NINTRS,
		.msix_bar = 0,
		.msix_table_offset = IONIC_BAR0_MSIX_TABLE_OFFSET,
		.msix_pba_offset = IONIC_BAR0_MSIX_PBA_OFFSET,
		.reset = reset,
	};

	if (ip == NULL)
		return NULL;
	ip->port = -1;
	env.ctx = ip;
	ip->dev = ionic_dev_new(cfg, &env);
	if (ip->dev == NULL)
		goto fail;
	fn.opaque = ip->dev;
	fn.bars[0] = (struct pci_bar){ .size = IONIC_BAR0_SIZE, .access = ionic_dev_bar0_access };
	fn.bars[2] = (struct pci_bar){ .size = IONIC_BAR2_SIZE, .access = ionic_dev_bar2_access };
	ip->pd = pci_dev_new(&fn);
	if (ip->pd == NULL)
		goto fail;
	return ip;
fail:
	ionic_pci_free(ip);
	return NULL;
}

void ionic_pci_free(struct ionic_pci *ip)
{
	if (ip == NULL)
		return;
	if (ip->sw)
		net_switch_detach(ip->sw, ip->port);
	if (ip->dev) {
		const struct ionic_dev_stats *st = ionic_dev_stats(ip->dev);

		LOG_INFO("ionic: %llu dev_cmds (%llu failed), %llu doorbells, tx %llu frames (%llu bad), "
			 "rx %llu frames (%llu without a buffer), %llu guest errors",
			 (unsigned long long)st->dev_cmds, (unsigned long long)st->dev_cmd_errors,
			 (unsigned long long)st->doorbells, (unsigned long long)st->tx_frames,
			 (unsigned long long)st->tx_errors, (unsigned long long)st->rx_frames,
			 (unsigned long long)st->rx_no_buffer, (unsigned long long)st->guest_errors);
	}
	pci_dev_free(ip->pd);
	ionic_dev_free(ip->dev);
	free(ip);
}

const struct vfu_device *ionic_pci_vfu(struct ionic_pci *ip)
{
	return pci_dev_vfu(ip->pd);
}

void ionic_pci_set_server(struct ionic_pci *ip, struct vfu_server *srv)
{
	ip->srv = srv;
	pci_dev_set_server(ip->pd, srv);
}

struct ionic_dev *ionic_pci_dev(struct ionic_pci *ip)
{
	return ip->dev;
}

void ionic_pci_fw_reset(struct ionic_pci *ip)
{
	/* Longer than the driver's 5-second watchdog, so it sees the firmware stop. */
	ionic_dev_fw_reset(ip->dev, 6000);
}
