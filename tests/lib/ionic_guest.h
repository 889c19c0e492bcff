/*
 * A minimal guest-side ionic driver over the test vfio-user client: guest
 * memory in a memfd mapped into the device, dev_cmd, the LIF and the admin
 * queue with its interrupt on an eventfd. Enough to drive the device the way
 * the Linux driver does, from a test or a benchmark.
 *
 * Doorbells: when the server offers BAR2 for mapping, set-up maps it (as
 * QEMU does) and doorbells become 8-byte stores to the mapping; otherwise
 * they are posted REGION_WRITEs. A store first waits (up to 2 s) until the
 * device has taken the previous doorbell in the same word (it leaves the
 * word all ones), which no real driver does: the tests then see every
 * doorbell they ring even when several queues share a word (see
 * docs/ionic.md); a benchmark that gives every queue its own word turns the
 * wait off (db_wait).
 */
#ifndef ERNIC_TESTS_IONIC_GUEST_H
#define ERNIC_TESTS_IONIC_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "vfu_client.h"

#define GUEST_IOVA      0x100000ull
#define GUEST_SIZE      (4u << 20)
#define GUEST_LIF_INFO  (GUEST_IOVA + 0x0000)
#define GUEST_PORT_INFO (GUEST_IOVA + 0x1000)
#define GUEST_AQ_RING   (GUEST_IOVA + 0x2000)
#define GUEST_AQ_CQ     (GUEST_IOVA + 0x3000)
#define GUEST_AQ_DEPTH  16
#define GUEST_TX_RING   (GUEST_IOVA + 0x4000)
#define GUEST_TX_CQ     (GUEST_IOVA + 0x5000)
#define GUEST_TX_SG     (GUEST_IOVA + 0x6000)
#define GUEST_RX_RING   (GUEST_IOVA + 0x7000)
#define GUEST_RX_CQ     (GUEST_IOVA + 0x8000)
#define GUEST_RX_SG     (GUEST_IOVA + 0x9000)
#define GUEST_TX_BUF    (GUEST_IOVA + 0x10000)
#define GUEST_RX_BUF    (GUEST_IOVA + 0x30000)
#define GUEST_Q_DEPTH   16
#define GUEST_BUF_SIZE  2048

struct ionic_guest {
	struct vfc *c;
	int memfd;
	uint8_t *mem;        /* the guest's view of [GUEST_IOVA, +GUEST_SIZE) */
	int irq_fd;          /* eventfd of MSI-X vector 0 (the admin queue's) */
	uint32_t aq_head;    /* next descriptor to post */
	uint32_t cq_tail;
	uint8_t cq_color;
	int qirq_fd;         /* eventfd of MSI-X vector 1 (TX/RX queue pair) */
	uint32_t tx_head, rx_tail, rx_cq_tail;
	uint8_t rx_cq_color;
	uint8_t tx_slot, rx_slot; /* the doorbell words Q_INIT named (hw_type) */
	struct vfc_map bar2;      /* the mapped doorbell pages (base NULL: doorbells trap) */
	bool db_wait;             /* wait until the device took the word's last doorbell (default on) */
};

#define GUEST_DB_EMPTY UINT64_MAX /* what the device leaves in a mapped doorbell word it has taken */

/* Map memory (and the doorbell pages if offered), identify, LIF_INIT, admin queue init; 0 or a negative step number. */
int ionic_guest_setup(struct ionic_guest *g, struct vfc *c);

/* The device part of set-up again (after DEVICE_RESET): RESET, LIF_INIT, admin queue; 0 or a negative step. */
int ionic_guest_init_device(struct ionic_guest *g);

/* A doorbell: val into word `word` of BAR2 page `page`, through the mapping or a posted write. */
void ionic_guest_db(struct ionic_guest *g, uint32_t page, uint32_t word, uint64_t val);
/* Ring through posted writes from now on (the mapping stays until teardown). */
void ionic_guest_trap_doorbells(struct ionic_guest *g);
void ionic_guest_teardown(struct ionic_guest *g);
/* From now on every setup reuses one guest memory (zeroed at each setup) instead of a new memfd,
 * and teardown keeps it: for the in-process fuzz harness, where a fresh 4 MiB per input cost more
 * page faults than the input's own work. */
void ionic_guest_keep_memory(void);

/*
 * From now on, guest memory is sealed against growing and shrinking, as QEMU's
 * memory-backend-memfd seals guest RAM by default (the server then copies
 * without its SIGBUS guard). Off by default: some tests shrink the file.
 */
void ionic_guest_seal_memory(bool on);

/* dev_cmd: write cmd, ring (posted), poll done; the 16-byte completion into comp. 0 or -1. */
int ionic_guest_dev_cmd(struct ionic_guest *g, const void *cmd64, uint8_t comp[16]);

/* Put a command on the admin queue and ring its doorbell (posted write); returns its index. */
uint32_t ionic_guest_aq_post(struct ionic_guest *g, const void *cmd64);

/* Wait up to timeout_ms for the admin queue's interrupt. */
bool ionic_guest_wait_irq(struct ionic_guest *g, int timeout_ms);

/* Take the next completion if its color says it is new. */
bool ionic_guest_aq_comp(struct ionic_guest *g, uint8_t comp[16]);

/*
 * Admin-queue command and wait for its completion (status returned, -1 on timeout);
 * comp receives the completion.
 */
int ionic_guest_aq_cmd(struct ionic_guest *g, const void *cmd64, uint8_t comp[16]);

/* Q_INIT TX 0 and RX 0 (interrupt 1), receive everything, enable both, post all RX buffers. 0 or -1. */
int ionic_guest_queues_up(struct ionic_guest *g);

/* Its steps, for a driver with other ring depths or buffers: */
/* An eventfd on MSI-X vector 1 (the queue pair's) into g->qirq_fd. 0 or -1. */
int ionic_guest_queue_irq(struct ionic_guest *g);
/*
 * Q_INIT of queue type/ver on interrupt 1, 2^depth_log2 descriptors, not enabled; its doorbell word
 * into *slot. The status.
 */
int ionic_guest_q_init(struct ionic_guest *g, uint8_t type, uint8_t ver, uint8_t depth_log2, uint64_t ring,
		       uint64_t cq, uint64_t sg, uint8_t *slot);
/* Q_CONTROL enable of queue 0 of type. The status. */
int ionic_guest_q_enable(struct ionic_guest *g, uint8_t type);
/* RX_MODE_SET: unicast, multicast, broadcast, promiscuous, all multicast. The status. */
int ionic_guest_rx_mode_all(struct ionic_guest *g);
/* RX descriptor idx (in the ring at GUEST_RX_RING) for a GUEST_BUF_SIZE buffer at bus address buf. */
void ionic_guest_rx_post(struct ionic_guest *g, uint32_t idx, uint64_t buf);

/* Transmit one frame from TX buffer memory (posted doorbell). */
void ionic_guest_tx(struct ionic_guest *g, const void *frame, size_t len);

/* Wait up to timeout_ms for a received frame; copies it out, re-posts the buffer. Length or -1. */
int ionic_guest_rx(struct ionic_guest *g, void *buf, size_t cap, int timeout_ms);

/* Return interrupt credits and unmask, as the driver's NAPI poll does (vector 0, posted). */
void ionic_guest_irq_rearm(struct ionic_guest *g, uint32_t credits);

/* Interrupt control in BAR0: 32 bytes per vector; the words' offsets in it. */
#define GUEST_INTR_MASK           4
#define GUEST_INTR_CREDITS        8   /* write: credits returned (low 16 bits), GUEST_INTR_CRED_UNMASK */
#define GUEST_INTR_MASK_ON_ASSERT 12
#define GUEST_INTR_CRED_UNMASK    0x10000u
/* v into word off of vector's interrupt control, posted or waiting for the reply. */
void ionic_guest_intr_write(struct ionic_guest *g, uint32_t vector, uint32_t off, uint32_t v, bool posted);
/* Word off of vector's interrupt control, read. */
uint32_t ionic_guest_intr_read(struct ionic_guest *g, uint32_t vector, uint32_t off);

static inline void *guest_ptr(struct ionic_guest *g, uint64_t iova)
{
	return g->mem + (iova - GUEST_IOVA);
}

#endif
