/* ionic PCI glue; see ionic_pci.h. */
#include "ionic/ionic_pci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
	bool mmap_doorbells;
	int db_fd;             /* the current client's doorbell pages, -1 while BAR2 traps */
	uint64_t *db_pages;    /* db_fd, mapped */
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

static uint64_t *db_pages(void *ctx)
{
	struct ionic_pci *ip = ctx;

	return ip->db_pages;
}

static void db_pages_release(struct ionic_pci *ip)
{
	if (ip->db_pages)
		munmap(ip->db_pages, IONIC_BAR2_SIZE);
	if (ip->db_fd >= 0)
		close(ip->db_fd);
	ip->db_pages = NULL;
	ip->db_fd = -1;
}

/*
 * Fresh doorbell pages for the next client: a new sealed memfd, all words
 * empty, offered as one area covering BAR2; the previous pages (which their
 * client may still have mapped) are dropped. 0 or -errno; on failure BAR2
 * traps from now on.
 */
static int db_pages_new(struct ionic_pci *ip)
{
	struct vfu_region_mmap mm = { .nr_areas = 1, .areas = { { 0, IONIC_BAR2_SIZE } } };
	void *p = MAP_FAILED;
	int fd, rc;

	fd = memfd_create("ionic-doorbells", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (ftruncate(fd, IONIC_BAR2_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (p = mmap(NULL, IONIC_BAR2_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	ionic_db_pages_clear(p);
	mm.fd = fd;
	rc = pci_dev_set_bar_mmap(ip->pd, 2, &mm);
	if (rc)
		goto fail;
	db_pages_release(ip);
	ip->db_fd = fd;
	ip->db_pages = p;
	return 0;
fail:
	if (p != MAP_FAILED)
		munmap(p, IONIC_BAR2_SIZE);
	if (fd >= 0)
		close(fd);
	pci_dev_set_bar_mmap(ip->pd, 2, NULL);
	db_pages_release(ip);
	LOG_ERR("ionic: cannot make doorbell pages (%s); doorbells trap from now on", strerror(-rc));
	return rc;
}

enum ev_poll_result ionic_pci_poll(void *arg)
{
	struct ionic_pci *ip = arg;

	/* No client, no stores: the loop need not wake for the pages until one connects. */
	if (ip->db_pages == NULL || ip->srv == NULL || !vfu_server_connected(ip->srv))
		return EV_POLL_ASLEEP;
	return ionic_dev_doorbell_poll(ip->dev) ? EV_POLL_WORK : EV_POLL_EMPTY;
}

enum ev_poll_result ionic_pci_work(void *arg)
{
	struct ionic_pci *ip = arg;

	/*
	 * Called with nothing waiting too: the call renews the budget of the
	 * doorbells to come. Once the queue is empty only an fd (a doorbell) can
	 * fill it again, so the poller is asleep even after a last slice (the
	 * turns with EV_POLL_MORE counted as activity): saying EV_POLL_WORK would
	 * wake the loop 50 us later for nothing, once per burst (measured: a 1 MiB
	 * WRITE batch cost the server 4% more without a busy window).
	 */
	return ionic_dev_work(ip->dev) ? EV_POLL_MORE : EV_POLL_ASLEEP;
}

static int bar0_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct ionic_pci *ip = opaque;

	return ionic_dev_bar0_access(ip->dev, off, buf, len, is_write);
}

static int bar2_access(void *opaque, uint64_t off, void *buf, size_t len, bool is_write)
{
	struct ionic_pci *ip = opaque;

	return ionic_dev_bar2_access(ip->dev, off, buf, len, is_write);
}

static void reset(void *opaque)
{
	struct ionic_pci *ip = opaque;

	ionic_dev_reset(ip->dev);
}

static void bus_master(void *opaque, bool enabled)
{
	struct ionic_pci *ip = opaque;

	ionic_dev_set_bus_master(ip->dev, enabled);
}

static void sync_mapped(void *opaque)
{
	struct ionic_pci *ip = opaque;

	ionic_dev_doorbell_poll(ip->dev);
}

static void disconnected(void *opaque)
{
	struct ionic_pci *ip = opaque;

	if (ip->mmap_doorbells)
		db_pages_new(ip);
}

struct ionic_pci *ionic_pci_new(const struct ionic_dev_config *cfg, bool mmap_doorbells)
{
	struct ionic_pci *ip = calloc(1, sizeof(*ip));
	struct ionic_dev_env env = { .raise_irq = raise_irq, .dma = guest_dma, .tx_frame = tx_frame,
				     .db_pages = db_pages };
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
		.sync = sync_mapped,
		.disconnected = disconnected,
		.bus_master = bus_master,
	};

	if (ip == NULL)
		return NULL;
	ip->port = -1;
	ip->db_fd = -1;
	ip->mmap_doorbells = mmap_doorbells;
	env.ctx = ip;
	ip->dev = ionic_dev_new(cfg, &env);
	if (ip->dev == NULL)
		goto fail;
	fn.opaque = ip;
	fn.bars[0] = (struct pci_bar){ .size = IONIC_BAR0_SIZE, .access = bar0_access };
	fn.bars[2] = (struct pci_bar){ .size = IONIC_BAR2_SIZE, .access = bar2_access };
	ip->pd = pci_dev_new(&fn);
	if (ip->pd == NULL || (mmap_doorbells && db_pages_new(ip)))
		goto fail;
	return ip;
fail:
	ionic_pci_free(ip);
	return NULL;
}

void ionic_pci_log_stats(const struct ionic_pci *ip)
{
	const struct ionic_dev_stats *st = ionic_dev_stats(ip->dev);

	LOG_INFO("ionic: %llu dev_cmds (%llu failed), %llu doorbells (%llu mapped), %llu held for bus mastering, "
		 "tx %llu frames (%llu bad), rx %llu frames (%llu without a buffer), %llu interrupts, %llu guest errors",
		 (unsigned long long)st->dev_cmds, (unsigned long long)st->dev_cmd_errors,
		 (unsigned long long)st->doorbells, (unsigned long long)st->db_mapped,
		 (unsigned long long)st->db_latched, (unsigned long long)st->tx_frames, (unsigned long long)st->tx_errors,
		 (unsigned long long)st->rx_frames, (unsigned long long)st->rx_no_buffer,
		 (unsigned long long)st->interrupts, (unsigned long long)st->guest_errors);
	if (st->rdma_admin_cmds == 0)
		return;
	LOG_INFO("ionic rdma: %llu admin commands (%llu failed); doorbells: %llu admin, %llu send, %llu receive, "
		 "%llu CQ consumer, %llu CQ arm; %llu work requests, %llu completions, %llu events",
		 (unsigned long long)st->rdma_admin_cmds, (unsigned long long)st->rdma_admin_errors,
		 (unsigned long long)st->rdma_db_aq, (unsigned long long)st->rdma_db_sq,
		 (unsigned long long)st->rdma_db_rq, (unsigned long long)st->rdma_db_cq,
		 (unsigned long long)st->rdma_db_arm, (unsigned long long)st->rdma_wqes,
		 (unsigned long long)st->rdma_cqes, (unsigned long long)st->rdma_eqes);
}

void ionic_pci_free(struct ionic_pci *ip)
{
	if (ip == NULL)
		return;
	if (ip->sw)
		net_switch_detach(ip->sw, ip->port);
	if (ip->dev)
		ionic_pci_log_stats(ip);
	pci_dev_free(ip->pd);
	ionic_dev_free(ip->dev);
	db_pages_release(ip);
	free(ip);
}

const struct vfu_device *ionic_pci_vfu(struct ionic_pci *ip)
{
	return pci_dev_vfu(ip->pd);
}

void ionic_pci_set_loop(struct ionic_pci *ip, struct evloop *loop)
{
	pci_dev_set_loop(ip->pd, loop);
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
