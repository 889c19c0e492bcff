/*
 * The ionic device model: BAR0 registers (device info, dev_cmd, interrupt
 * control) and the BAR2 doorbell pages, as the stock Linux ionic driver
 * drives them. Knows nothing of vfio-user or PCI configuration: it is handed
 * an environment to raise interrupts and reach guest memory.
 */
#ifndef ERNIC_IONIC_IONIC_DEV_H
#define ERNIC_IONIC_IONIC_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dma_map;

#define IONIC_FW_VERSION   "1.0.0-ernic"
#define IONIC_NINTRS       32   /* MSI-X vectors, and interrupt control blocks */
#define IONIC_NDBPGS_PER_LIF 64 /* doorbell pages: page 0 the kernel's, 1.. user contexts */
#define IONIC_DB_PAGE_SIZE 4096 /* the guest's page size */
#define IONIC_BAR2_SIZE    (IONIC_NDBPGS_PER_LIF * IONIC_DB_PAGE_SIZE)

struct ionic_dev_env {
	void *ctx;
	void (*raise_irq)(void *ctx, uint32_t vector);
	struct dma_map *(*dma)(void *ctx);  /* the guest's memory; may be empty */
	/* A frame the guest transmitted (NULL: frames are dropped). */
	void (*tx_frame)(void *ctx, const uint8_t *frame, size_t len);
};

struct ionic_dev_config {
	uint8_t mac[6];
};

struct ionic_dev;

struct ionic_dev *ionic_dev_new(const struct ionic_dev_config *cfg, const struct ionic_dev_env *env);
void ionic_dev_free(struct ionic_dev *dev);

/* Power-on state: what a PCI reset or a new client sees. */
void ionic_dev_reset(struct ionic_dev *dev);

/* Register accesses inside BAR0 (below the MSI-X table) and BAR2. Always 0: MMIO never fails. */
int ionic_dev_bar0_access(void *dev, uint64_t offset, void *buf, size_t len, bool is_write);
int ionic_dev_bar2_access(void *dev, uint64_t offset, void *buf, size_t len, bool is_write);

/*
 * A frame from the segment for the guest: placed in the next posted RX buffer
 * of queue 0 when the LIF's receive mode and filters accept it; dropped and
 * counted otherwise (no buffer, queue not enabled, too long).
 */
void ionic_dev_rx_frame(struct ionic_dev *dev, const uint8_t *frame, size_t len);

/*
 * Simulate a firmware reset: the device forgets its LIF, queues and interrupt
 * state, reports its firmware not running for down_ms, then running again
 * with a new generation number. The stock driver's watchdog notices and runs
 * its firmware-down/firmware-up recovery (re-identify, re-init every queue).
 */
void ionic_dev_fw_reset(struct ionic_dev *dev, unsigned down_ms);

/* Counters for tests and logs. */
struct ionic_dev_stats {
	uint64_t dev_cmds;
	uint64_t dev_cmd_errors;
	uint64_t doorbells;
	uint64_t guest_errors;
	uint64_t tx_frames, tx_bytes, tx_errors;
	uint64_t rx_frames, rx_bytes, rx_no_buffer, rx_filtered, rx_too_long;
};
const struct ionic_dev_stats *ionic_dev_stats(const struct ionic_dev *dev);

#endif
