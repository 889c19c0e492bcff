/*
 * State shared by the files of the ionic device model (ionic_dev.c: registers
 * and interrupts; ionic_cmd.c: the command set; ionic_queue.c: the admin and
 * notify queues). Not for use outside src/ionic.
 */
#ifndef ERNIC_IONIC_IONIC_PRIV_H
#define ERNIC_IONIC_IONIC_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "ionic/ionic_dev.h"
#include "ionic/ionic_if.h"

#define IONIC_NRXQ 16
#define IONIC_NTXQ 16
#define IONIC_MAX_FILTERS 64
#define IONIC_MAX_MTU 9000
#define IONIC_MIN_MTU 68
#define IONIC_ADMINQ_INDEX 0

/*
 * Doorbell slots of the kernel's page: the 8-byte word a queue rings is the
 * hw_type Q_INIT answers, so each Ethernet queue gets a word of its own
 * (mapped pages keep only the last store to a word; two queues sharing one
 * could lose a doorbell). The RDMA qtypes 4..8 of the LIF identity lie in
 * between, unused by Ethernet queues.
 */
#define IONIC_DB_SLOT_ADMINQ  0
#define IONIC_DB_SLOT_NOTIFYQ 1
#define IONIC_DB_SLOT_RXQ0    16
#define IONIC_DB_SLOT_TXQ0    (IONIC_DB_SLOT_RXQ0 + IONIC_NRXQ)
#define IONIC_DB_SLOTS_KERNEL (IONIC_DB_SLOT_TXQ0 + IONIC_NTXQ)
_Static_assert(IONIC_DB_SLOT_RXQ0 > 8 && IONIC_DB_SLOTS_KERNEL <= 256, "Ethernet doorbell slots: above the RDMA qtypes, a u8 hw_type");

struct ionic_queue {
	bool inited;
	bool enabled;
	uint8_t type;
	uint8_t ver;
	uint32_t index;
	uint16_t intr_index;
	uint16_t flags;
	uint32_t num_descs;      /* power of two */
	uint64_t ring_base;
	uint64_t cq_ring_base;
	uint64_t sg_ring_base;
	uint64_t features;
	uint32_t head;           /* next descriptor the device takes */
	uint32_t p_index;        /* producer index from the last doorbell */
	uint32_t cq_tail;        /* next completion slot */
	uint8_t cq_color;        /* color of the current pass, starts at 1 */
	uint64_t next_eid;       /* notifyq only */
};

struct ionic_filter {
	bool used;
	uint16_t match;
	uint16_t vlan;
	uint8_t mac[6];
};

struct ionic_lif {
	bool inited;
	uint64_t info_pa;        /* lif_info in guest memory, 0 before LIF_INIT */
	uint8_t state;
	char name[17];
	uint32_t mtu;
	uint8_t mac[6];
	uint64_t features;
	uint16_t rx_mode;
	struct ionic_queue adminq;
	struct ionic_queue notifyq;
	struct ionic_queue rxq[IONIC_NRXQ];
	struct ionic_queue txq[IONIC_NTXQ];
	struct ionic_filter filters[IONIC_MAX_FILTERS];
};

struct ionic_intr_state {
	uint32_t coal_init;
	uint32_t mask;
	int32_t credits;          /* events not yet returned by the driver */
	uint32_t mask_on_assert;
	bool pending;             /* raised while masked */
};

/* A doorbell rung while bus mastering was off: the value last stored to (page, word) for its queue and ring. */
struct ionic_db_latch {
	uint32_t page, slot;
	uint64_t val;
};

struct ionic_dev {
	struct ionic_dev_config cfg;
	struct ionic_dev_env env;
	struct ionic_dev_stats stats;
	union {
		uint8_t bytes[IONIC_BAR0_DEV_CMD_OFFSET + sizeof(struct ionic_dev_cmd_regs)];
		struct {
			struct ionic_dev_info_regs info;
			struct ionic_dev_cmd_regs cmd;
		};
	} bar0;
	struct ionic_intr_state intr[IONIC_NINTRS];
	uint8_t frame[16384];      /* TX gather buffer: MTU 9000 frames and then some */
	uint64_t fw_down_until_ms;  /* firmware "not running" until then (a simulated reset) */
	uint8_t fw_generation;      /* 0..15, bumped by every simulated reset */
	uint64_t port_info_pa;
	uint8_t port_state;
	uint32_t port_mtu;
	struct ionic_lif lif;
	struct ionic_rdma *rdma;    /* the RDMA side of the LIF (ionic_rdma.c) */
	bool rdma_mapped_warned;    /* the RDMA-over-mapped-doorbells warning was logged */
	uint64_t db_pages_used;     /* doorbell pages a queue was created on since reset (bit 0: the kernel's) */
	bool bus_master;            /* the PCI command register's Bus Master Enable (ionic_dev_set_bus_master) */
	uint32_t nlatched;          /* doorbells waiting for bus mastering, in the order they first came */
	struct ionic_db_latch latched[IONIC_DB_LATCH_MAX];
};

/*
 * A guest mistake: counted, never fatal. The first IONIC_GUEST_ERRORS_LOGGED
 * of a device's life are logged at warn level, the rest at debug (-v).
 */
#define IONIC_GUEST_ERRORS_LOGGED 10
void ionic_guest_error(struct ionic_dev *dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Raise interrupt index idx through its interrupt control block: one event (credit), or `events`. */
void ionic_intr_raise(struct ionic_dev *dev, uint32_t idx);
void ionic_intr_raise_n(struct ionic_dev *dev, uint32_t idx, uint32_t events);

/* Guest memory; -EFAULT when the range is not mapped for the device, or bus mastering is off. */
int ionic_dma_read(struct ionic_dev *dev, uint64_t addr, void *buf, size_t len);
int ionic_dma_write(struct ionic_dev *dev, uint64_t addr, const void *buf, size_t len);
/* Guest to guest, both ranges inside one mapping each (else -EFAULT, nothing moved). */
int ionic_dma_copy(struct ionic_dev *dev, uint64_t dst, uint64_t src, size_t len);
/*
 * Where len readable bytes at addr lie in this process, when they lie inside
 * one mapping whose memory cannot fault (a sealed file, DMA_MAP_NOFAULT);
 * else NULL, and the caller copies. Valid until the loop turns (a mapping
 * goes away only in a message handled by this thread).
 */
const void *ionic_dma_peek(struct ionic_dev *dev, uint64_t addr, size_t len);

/*
 * Execute one 64-byte command (from dev_cmd or the admin queue) into a 16-byte
 * completion; returns the status (IONIC_RC_*), also stored in comp[0].
 */
uint8_t ionic_cmd_exec(struct ionic_dev *dev, const uint8_t *cmd, uint8_t *comp, bool adminq);

/* Reset the LIF and its queues. */
void ionic_lif_reset(struct ionic_dev *dev);

/* Write the LIF's status (link up, speed, eid) into the driver's lif_info. */
void ionic_lif_write_status(struct ionic_dev *dev);

/* Queue set-up shared by Q_INIT: 0 or an IONIC_RC_* status. */
uint8_t ionic_queue_init(struct ionic_dev *dev, struct ionic_queue *q, const struct ionic_q_init_cmd *c);

/* A doorbell in word `slot` of the kernel's page for qid with producer index p_index. */
void ionic_queue_doorbell(struct ionic_dev *dev, uint32_t slot, uint32_t qid, uint32_t ring, uint32_t p_index);

/* The doorbell slot (Q_INIT's hw_type) of an Ethernet queue. */
uint8_t ionic_queue_db_slot(const struct ionic_queue *q);

/* The mapped doorbell pages, or NULL when BAR2 traps. */
uint64_t *ionic_db_pages(struct ionic_dev *dev);

/*
 * A queue that rings on doorbell page `page` was created: from now on the
 * device looks at that page (until reset). The first time, what was stored
 * there before is dropped: no queue could be rung by it then.
 */
void ionic_db_page_used(struct ionic_dev *dev, uint32_t page);
/* Empty every word and forget the pages used; drop the doorbells latched while bus mastering was off (resets). */
void ionic_db_pages_reset(struct ionic_dev *dev);

/* Write a 16-byte completion into q's completion ring (body first, color last). 0 or -errno. */
int ionic_cq_post(struct ionic_dev *dev, struct ionic_queue *q, uint8_t comp[16]);

/* Post a link-change event on the notify queue, if it is up. */
void ionic_notify_link(struct ionic_dev *dev);

/* ionic_rdma.c: the RDMA side of the LIF. */
struct ionic_rdma;
int ionic_rdma_new(struct ionic_dev *dev);
void ionic_rdma_free(struct ionic_dev *dev);
void ionic_rdma_reset(struct ionic_dev *dev);
void ionic_rdma_identity(struct ionic_lif_identity *id);
/* RDMA_RESET_LIF and RDMA_CREATE_EQ/CQ/ADMINQ: an IONIC_RC_* status. */
uint8_t ionic_rdma_queue_cmd(struct ionic_dev *dev, const uint8_t *cmd);
/* A doorbell for an RDMA queue type: handled (true), or not an RDMA qtype (false). */
bool ionic_rdma_doorbell(struct ionic_dev *dev, uint32_t page, uint32_t qtype, uint32_t qid, uint32_t ring,
			 uint32_t index);
/* Bus mastering is back: tell the RDMA peers that receives may be there for what they hold. */
void ionic_rdma_bus_master_on(struct ionic_dev *dev);

#endif
