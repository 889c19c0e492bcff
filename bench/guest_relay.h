/*
 * A guest's network path for the native benchmarks: a thread that moves frames between a TAP and
 * the device's first Ethernet queue pair the way the ionic driver moves its kernel's frames. What
 * the host kernel writes to the TAP goes into the TX ring (one doorbell per burst, as with
 * xmit_more); what the device puts in the RX ring is written to the TAP and its buffer posted
 * again (one doorbell per burst); the queue pair's MSI-X vector is masked on assert and unmasked
 * with the credits returned when a pass finds nothing more, as NAPI does; between bursts the
 * thread sleeps in poll() on the TAP and the vector's eventfd.
 *
 * A kernel TCP client in the TAP's namespace then reaches the device's segment as a client in a
 * guest does, through the device's Ethernet queues and not through a TAP the server owns, and the
 * server's CPU per request is what a host would spend on a guest's request. The TAP carries
 * frames of at most 1514 bytes: no vnet header, every offload off.
 *
 * The thread uses the vfio-user connection for its doorbells and interrupt control: nothing else
 * may use that connection while the relay runs.
 */
#ifndef ERNIC_BENCH_GUEST_RELAY_H
#define ERNIC_BENCH_GUEST_RELAY_H

#include <pthread.h>
#include <stdint.h>

#include "ionic_guest.h"

/*
 * Rings deeper than ionic_guest_queues_up's 16 (the driver's are deeper still): a burst of answers
 * to pipelined requests must find buffers. Their buffers lie in guest memory between what
 * ionic_guest.h and ionic_rdma_guest.h lay out, the rings where ionic_guest.h puts its own.
 */
#define GUEST_RELAY_TX_DEPTH 64
#define GUEST_RELAY_RX_DEPTH 256
#define GUEST_RELAY_TX_BUF   (GUEST_IOVA + 0x10000)  /* 64 x 2 KiB */
#define GUEST_RELAY_RX_BUF   (GUEST_IOVA + 0x40000)  /* 256 x 2 KiB, up to GUEST_IOVA + 0xc0000 */

struct guest_relay {
	struct ionic_guest *g;
	int tap;                 /* the TAP, non-blocking */
	int stop;                /* an eventfd that ends the thread */
	pthread_t th;
	uint32_t tx_head;        /* the next TX descriptor to fill */
	uint32_t tx_cons;        /* the oldest TX descriptor the device has not completed */
	uint32_t tx_used;        /* descriptors posted and not completed (at most the depth - 1) */
	uint32_t tx_cq_tail, rx_tail, rx_cq_tail;
	uint8_t tx_cq_color, rx_cq_color;
	uint8_t tx_slot, rx_slot; /* the doorbell words Q_INIT named */
	/*
	 * What the thread counted, read after guest_relay_stop(). errors: completions with a bad
	 * index, length or status, and frames from the TAP too long for a buffer (not sent).
	 */
	uint64_t to_device, from_device, wakeups, tap_drops, errors;
};

/* Bring up the queue pair (as ionic_guest_queues_up, deeper), open the TAP and start the thread. 0 or -1. */
int guest_relay_start(struct guest_relay *r, struct ionic_guest *g, const char *tap);

/* End the thread and close the TAP; the queues stay as they are. */
void guest_relay_stop(struct guest_relay *r);

#endif
