/* The TAP relayed to the device's Ethernet queues as a guest's driver would (guest_relay.h). */
#include "guest_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TX_MASK (GUEST_RELAY_TX_DEPTH - 1)
#define RX_MASK (GUEST_RELAY_RX_DEPTH - 1)
#define QVEC 1 /* the queue pair's MSI-X vector (ionic_guest_queue_irq) */

/* A completion at ring address cq whose color bit says it is new. */
static volatile uint8_t *cq_new(struct ionic_guest *g, uint64_t cq, uint32_t tail, uint8_t color)
{
	volatile uint8_t *c = guest_ptr(g, cq + tail * 16ull);

	if (((c[15] & 0x80) != 0) != (color != 0))
		return NULL;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return c;
}

static void rx_post(struct ionic_guest *g, uint32_t idx)
{
	ionic_guest_rx_post(g, idx, GUEST_RELAY_RX_BUF + idx * (uint64_t)GUEST_BUF_SIZE);
}

/* Received frames to the TAP, their buffers posted again; the completions taken. */
static unsigned rx_pass(struct guest_relay *r)
{
	struct ionic_guest *g = r->g;
	unsigned n = 0;
	volatile uint8_t *c;

	while ((c = cq_new(g, GUEST_RX_CQ, r->rx_cq_tail, r->rx_cq_color)) != NULL) {
		uint16_t idx, len;

		memcpy(&idx, (const void *)(c + 2), 2);
		memcpy(&len, (const void *)(c + 12), 2);
		if (idx != r->rx_cq_tail || len > GUEST_BUF_SIZE || c[0] != 0)
			r->errors++;
		else if (write(r->tap, guest_ptr(g, GUEST_RELAY_RX_BUF + idx * (uint64_t)GUEST_BUF_SIZE), len) !=
			 (ssize_t)len)
			r->tap_drops++;
		else
			r->from_device++;
		if (++r->rx_cq_tail == GUEST_RELAY_RX_DEPTH) {
			r->rx_cq_tail = 0;
			r->rx_cq_color ^= 1;
		}
		rx_post(g, r->rx_tail);
		r->rx_tail = (r->rx_tail + 1) & RX_MASK;
		n++;
	}
	if (n)
		ionic_guest_db(g, 0, r->rx_slot, r->rx_tail);
	return n;
}

/* TX completions: each names the last descriptor of a burst the device has sent. */
static unsigned tx_reap(struct guest_relay *r)
{
	struct ionic_guest *g = r->g;
	unsigned n = 0;
	volatile uint8_t *c;

	while ((c = cq_new(g, GUEST_TX_CQ, r->tx_cq_tail, r->tx_cq_color)) != NULL) {
		uint16_t idx;
		uint32_t freed;

		memcpy(&idx, (const void *)(c + 2), 2);
		freed = ((uint32_t)idx + 1 - r->tx_cons) & TX_MASK;
		if (c[0] != 0 || idx >= GUEST_RELAY_TX_DEPTH || freed > r->tx_used) {
			r->errors++;
			freed = freed > r->tx_used ? r->tx_used : freed;
		}
		r->tx_used -= freed;
		r->tx_cons = (r->tx_cons + freed) & TX_MASK;
		if (++r->tx_cq_tail == GUEST_RELAY_TX_DEPTH) {
			r->tx_cq_tail = 0;
			r->tx_cq_color ^= 1;
		}
		n++;
	}
	return n;
}

/* Frames the kernel wrote to the TAP into the TX ring, while it has room; one doorbell for them. */
static unsigned tx_pass(struct guest_relay *r)
{
	struct ionic_guest *g = r->g;
	unsigned n = 0;

	while (r->tx_used < GUEST_RELAY_TX_DEPTH - 1) {
		uint32_t idx = r->tx_head;
		uint64_t addr = GUEST_RELAY_TX_BUF + idx * (uint64_t)GUEST_BUF_SIZE, cmd = addr << 12; /* CSUM_NONE */
		uint8_t *d = guest_ptr(g, GUEST_TX_RING + idx * 16ull);
		ssize_t len = read(r->tap, guest_ptr(g, addr), GUEST_BUF_SIZE);
		uint16_t l;

		if (len <= 0)
			break;
		if (len >= GUEST_BUF_SIZE) {
			r->errors++; /* longer than the namespace's MTU allows: cut by the read, not sent */
			continue;
		}
		l = (uint16_t)len;
		memset(d, 0, 16);
		memcpy(d, &cmd, 8);
		memcpy(d + 8, &l, 2);
		r->tx_head = (idx + 1) & TX_MASK;
		r->tx_used++;
		r->to_device++;
		n++;
	}
	if (n)
		ionic_guest_db(g, 0, r->tx_slot, r->tx_head);
	return n;
}

static void *relay_main(void *arg)
{
	struct guest_relay *r = arg;
	struct ionic_guest *g = r->g;
	uint32_t credits = 0;

	for (;;) {
		unsigned rx = rx_pass(r), comps = tx_reap(r), tx = tx_pass(r);
		struct pollfd p[3] = { { .fd = r->tap, .events = POLLIN },
				       { .fd = g->qirq_fd, .events = POLLIN },
				       { .fd = r->stop, .events = POLLIN } };
		uint64_t v;

		credits += rx + comps;
		if (rx || comps || tx)
			continue;
		/* Nothing more: the credits back and the vector unmasked (NAPI's completion), then sleep. */
		ionic_guest_intr_write(g, QVEC, GUEST_INTR_CREDITS, credits | GUEST_INTR_CRED_UNMASK, true);
		credits = 0;
		if (r->tx_used == GUEST_RELAY_TX_DEPTH - 1)
			p[0].events = 0; /* the ring is full: wait for its completion, not for the TAP */
		if (poll(p, 3, 1000) < 0 && errno != EINTR)
			break;
		if (p[2].revents)
			break;
		if (p[1].revents && read(g->qirq_fd, &v, sizeof(v)) == sizeof(v))
			r->wakeups++;
	}
	return NULL;
}

/* The queue pair as the driver opens it: vector, TX, RX, receive mode, RX filled and rung, enabled. */
static int queues_up(struct guest_relay *r)
{
	struct ionic_guest *g = r->g;
	const uint8_t tx_log2 = (uint8_t)__builtin_ctz(GUEST_RELAY_TX_DEPTH);
	const uint8_t rx_log2 = (uint8_t)__builtin_ctz(GUEST_RELAY_RX_DEPTH);

	if (ionic_guest_queue_irq(g) ||
	    ionic_guest_q_init(g, 3, 1, tx_log2, GUEST_TX_RING, GUEST_TX_CQ, GUEST_TX_SG, &r->tx_slot) ||
	    ionic_guest_q_init(g, 2, 0, rx_log2, GUEST_RX_RING, GUEST_RX_CQ, GUEST_RX_SG, &r->rx_slot) ||
	    ionic_guest_rx_mode_all(g))
		return -1;
	for (uint32_t i = 0; i < GUEST_RELAY_RX_DEPTH - 1; i++)
		rx_post(g, i);
	r->rx_tail = GUEST_RELAY_RX_DEPTH - 1;
	ionic_guest_db(g, 0, r->rx_slot, r->rx_tail);
	/* As the driver sets its queue vectors: masked when they fire, until NAPI unmasks them. */
	ionic_guest_intr_write(g, QVEC, GUEST_INTR_MASK_ON_ASSERT, 1, false);
	return ionic_guest_q_enable(g, 2) || ionic_guest_q_enable(g, 3) ? -1 : 0;
}

int guest_relay_start(struct guest_relay *r, struct ionic_guest *g, const char *tap)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };

	memset(r, 0, sizeof(*r));
	r->g = g;
	r->tx_cq_color = r->rx_cq_color = 1;
	r->tap = r->stop = -1;
	if (queues_up(r))
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap);
	r->tap = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	/* No vnet header, so no offload either: the kernel hands over whole frames of the MTU. */
	if (r->tap < 0 || ioctl(r->tap, TUNSETIFF, &ifr) < 0 || ioctl(r->tap, TUNSETOFFLOAD, 0UL) < 0) {
		fprintf(stderr, "guest relay: %s: %s\n", tap, strerror(errno));
		goto fail;
	}
	if ((r->stop = eventfd(0, EFD_CLOEXEC)) < 0 || pthread_create(&r->th, NULL, relay_main, r) != 0)
		goto fail;
	return 0;
fail:
	if (r->tap >= 0)
		close(r->tap);
	if (r->stop >= 0)
		close(r->stop);
	r->tap = r->stop = -1;
	return -1;
}

void guest_relay_stop(struct guest_relay *r)
{
	uint64_t one = 1;

	if (r->stop < 0)
		return;
	if (write(r->stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(r->th, NULL);
	close(r->stop);
	close(r->tap);
	r->stop = r->tap = -1;
}
