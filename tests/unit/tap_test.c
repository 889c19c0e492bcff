/*
 * tap-unit: the TAP attachment (net/tap.c) over a SOCK_SEQPACKET socket pair
 * standing in for the TAP device (one frame per read and write, a
 * virtio_net_hdr before each), with the real event loop and switch. The test
 * is the host kernel: it writes super-frames, hostile headers and frames too
 * long into its end, and reads what the server writes back. Checks the
 * receive path and its per-wakeup bound, that pure ACKs of one batch fold
 * into the last one except duplicates, that frames the kernel's queue
 * cannot take at once are held and written in order, not dropped, that
 * an in-process host's TCP super-segment goes whole in one write (and cut to
 * the guest), RoCEv2 datagrams of one flow leave as one UDP segmentation-offload write
 * that the kernel's cutting turns back into exactly the datagrams sent (a
 * UDP checksum aside), and only those that may merge, and that a UDP
 * super-frame read reaches the segment as its datagrams.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_offload.h"
#include "net/net_switch.h"
#include "net/tap.h"
#include "util/evloop.h"
#include "../lib/wire_bytes.h"

#define VH       10
#define MSS      1460
#define HOST_IP  0xc0a8c802u
#define EP_IP    0xc0a8c801u
#define GUEST_IP 0xc0a8c803u
#define F_PSH    0x08u
#define F_ACK    0x10u
#define ROCE_PORT 4791
#define MAX_DGRAMS 80
#define DGRAM_CAP  (14 + 20 + 8 + 4200)

static const uint8_t host_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t ep_mac[6] = { 0x02, 0x53, 0xc0, 0xa8, 0xc8, 0x01 };
static const uint8_t guest_mac[6] = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 };


/* An IPv4 TCP frame at f (complete checksums); returns its length (padded to 60). */
static size_t tcp_frame(uint8_t *f, const uint8_t *dmac, const uint8_t *smac, uint32_t sip, uint32_t dip,
			uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, unsigned flags, uint16_t wnd,
			size_t len)
{
	uint8_t *ip = f + 14, *tcp = ip + 20;
	size_t l4 = 20 + len, n = 14 + 20 + l4;

	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint32_t)(20 + l4));
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, sip);
	put32(ip + 16, dip);
	put16(ip + 10, fold(sum16(0, ip, 20)));
	memset(tcp, 0, 20);
	put16(tcp, sport);
	put16(tcp + 2, dport);
	put32(tcp + 4, seq);
	put32(tcp + 8, ack);
	tcp[12] = 5 << 4;
	tcp[13] = (uint8_t)flags;
	put16(tcp + 14, wnd);
	for (size_t i = 0; i < len; i++)
		tcp[20 + i] = (uint8_t)(i * 7 + seq);
	put16(tcp + 16, fold(pseudo(sip, dip, 6, l4) + sum16(0, tcp, l4)));
	if (n < 60) {
		memset(f + n, 0, 60 - n);
		n = 60;
	}
	return n;
}

/* ---- the world: loop, switch, the TAP on one end of a socket pair, a guest and an endpoint port ---- */

struct world {
	struct evloop *loop;
	struct net_switch *sw;
	struct tap *tap;
	int host;               /* the host kernel's end */
	int tapfd;              /* the TAP's end (the attachment owns it) */
	int always;             /* an eventfd that stays readable: every loop turn has a batch */
	struct ev_watch *always_w;
	int ep;                 /* a port the test sends from, as an endpoint would */
	unsigned guest_frames;
	unsigned guest_behind;  /* of them, delivered while the switch said the segment is behind */
	size_t guest_bytes;
	bool guest_bad;
	uint8_t guest_dgram[MAX_DGRAMS][DGRAM_CAP];     /* the UDP frames the guest port got, in order */
};

static void guest_deliver(void *ctx, const uint8_t *f, size_t len)
{
	struct world *w = ctx;
	const uint8_t *ip = f + 14;
	size_t tot = get16(ip + 2), l4h = ip[9] == 17 ? 8 : 20;

	w->guest_frames++;
	w->guest_behind += net_switch_behind(w->sw);
	/* Every frame a port without offloads gets is whole and checks out. */
	if (len < 14 + 20 + l4h || tot < 20 + l4h || 14 + tot > len || fold(sum16(0, ip, 20)) != 0 ||
	    fold(pseudo(get32(ip + 12), get32(ip + 16), ip[9], tot - 20) + sum16(0, ip + 20, tot - 20)) != 0 ||
	    (l4h == 20 && tot - 40 > MSS))
		w->guest_bad = true;
	if (l4h == 8 && w->guest_frames <= MAX_DGRAMS)
		memcpy(w->guest_dgram[w->guest_frames - 1], f, len < DGRAM_CAP ? len : DGRAM_CAP);
	w->guest_bytes += tot - 20 - l4h;
}

static void nothing(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx;
	(void)f;
	(void)len;
}

static void on_always(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
}

static void stop(void *arg)
{
	evloop_stop(arg);
}

/* One turn of the loop: one batch of events, then what was deferred. */
static void run_batch(struct world *w)
{
	assert_int_equal(evloop_defer(w->loop, stop, w->loop), 0);
	assert_int_equal(evloop_run(w->loop), 0);
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct net_port guest = { .name = "guest", .deliver = guest_deliver };
	struct net_port ep = { .name = "ep", .deliver = nothing };
	int sv[2], big = 1 << 20;
	char err[128];

	if (w == NULL || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	w->loop = evloop_new();
	w->sw = net_switch_new();
	w->always = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->loop == NULL || w->sw == NULL || w->always < 0)
		return -1;
	w->always_w = evloop_add_fd(w->loop, w->always, EPOLLIN, on_always, w);
	guest.ctx = ep.ctx = w;
	net_switch_attach(w->sw, &guest);
	w->ep = net_switch_attach(w->sw, &ep);
	w->tap = tap_attach_fd(sv[0], true, "tap-test", w->loop, w->sw, err, sizeof(err));
	w->host = sv[1];
	w->tapfd = sv[0];
	if (w->tap == NULL || w->always_w == NULL)
		return -1;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	tap_close(w->tap);
	evloop_del_fd(w->loop, w->always_w);
	close(w->always);
	if (w->host >= 0)
		close(w->host);
	net_switch_free(w->sw);
	evloop_free(w->loop);
	free(w);
	return 0;
}

/* The host writes one frame behind a header. */
static void host_write(struct world *w, const uint8_t *vh, const uint8_t *f, size_t len)
{
	uint8_t *msg = malloc(VH + len);

	memcpy(msg, vh, VH);
	memcpy(msg + VH, f, len);
	assert_int_equal(send(w->host, msg, VH + len, 0), (ssize_t)(VH + len));
	free(msg);
}

/* A super-frame's header as the kernel writes it: NEEDS_CSUM, the type, from the IPv4 header on (34). */
static void gso_hdr(uint8_t vh[VH], uint8_t type, uint16_t hdr_len, uint16_t gso_size, uint16_t csum_offset)
{
	uint16_t start = 34;

	vh[0] = 1;
	vh[1] = type;
	memcpy(vh + 2, &hdr_len, 2);
	memcpy(vh + 4, &gso_size, 2);
	memcpy(vh + 6, &start, 2);
	memcpy(vh + 8, &csum_offset, 2);
}

/* A TCPv4 super-frame of len bytes for the guest, its TCP checksum partial as the kernel leaves it. */
static void host_write_gso(struct world *w, size_t len, uint16_t gso_size)
{
	uint8_t *f = malloc(NET_MAX_FRAME), vh[VH] = { 0 };
	size_t n = tcp_frame(f, guest_mac, host_mac, HOST_IP, GUEST_IP, 40000, 22, 1, 1, F_ACK, 65535, len);
	uint32_t p = pseudo(HOST_IP, GUEST_IP, 6, 20 + len);

	while (p >> 16)
		p = (p & 0xffff) + (p >> 16);
	put16(f + 14 + 20 + 16, p);
	gso_hdr(vh, 1 /* GSO_TCPV4 */, 54, gso_size, 16);
	host_write(w, vh, f, n);
	free(f);
}

/* The next message the TAP wrote, frame only (the header must be an empty one); 0 when none. */
static size_t host_read(struct world *w, uint8_t *f, size_t cap)
{
	uint8_t *msg = malloc(VH + cap);
	ssize_t n = recv(w->host, msg, VH + cap, MSG_DONTWAIT);
	size_t len = 0;

	if (n < 0) {
		assert_int_equal(errno, EAGAIN);
	} else {
		assert_true(n >= VH + 14);
		for (int i = 0; i < VH; i++)
			assert_int_equal(msg[i], 0);    /* plain frames: no offload in the header */
		len = (size_t)n - VH;
		memcpy(f, msg + VH, len);
	}
	free(msg);
	return len;
}

/* The next message the TAP wrote, header and frame; 0 when none. */
static size_t host_read_raw(struct world *w, uint8_t *msg, size_t cap)
{
	ssize_t n = recv(w->host, msg, cap, MSG_DONTWAIT);

	if (n < 0) {
		assert_int_equal(errno, EAGAIN);
		return 0;
	}
	return (size_t)n;
}

/* The host says hello, so the switch learns where its MAC lives. */
static void host_hello(struct world *w)
{
	uint8_t f[64], vh[VH] = { 0 };
	size_t n = tcp_frame(f, ep_mac, host_mac, HOST_IP, EP_IP, 40000, 9000, 1, 1, F_ACK, 65535, 0);

	host_write(w, vh, f, n);
	run_batch(w);
}

/* An ACK from the endpoint to the host, through the switch and the TAP's output. */
static void ep_ack(struct world *w, uint16_t sport, uint32_t ack, uint16_t wnd)
{
	uint8_t f[64];
	size_t n = tcp_frame(f, host_mac, ep_mac, EP_IP, HOST_IP, 9000, sport, 5000, ack, F_ACK, wnd, 0);

	net_switch_input(w->sw, w->ep, f, n);
}

static void expect_ack(struct world *w, uint16_t dport, uint32_t ack, uint16_t wnd)
{
	uint8_t f[128];
	size_t n = host_read(w, f, sizeof(f));

	assert_int_equal(n, 60);
	assert_int_equal(get16(f + 34 + 2), dport);
	assert_int_equal(get32(f + 34 + 8), ack);
	assert_int_equal(get16(f + 34 + 14), wnd);
	assert_int_equal(f[34 + 13], F_ACK);
}

static void expect_none(struct world *w)
{
	uint8_t f[128];

	assert_int_equal(host_read(w, f, sizeof(f)), 0);
}

/* ---- tests ---- */

/* A super-frame read from the TAP reaches the guest as MSS-sized frames with valid checksums. */
static void test_rx_super_frame(void **state)
{
	struct world *w = *state;

	host_write_gso(w, 10 * MSS + 3, MSS);
	run_batch(w);
	assert_int_equal(w->guest_frames, 11);
	assert_int_equal(w->guest_bytes, 10 * MSS + 3);
	assert_false(w->guest_bad);
	assert_int_equal(tap_stats(w->tap)->rx_frames, 1);
	assert_int_equal(tap_stats(w->tap)->offload.gso_frames, 1);
	assert_int_equal(tap_stats(w->tap)->rx_dropped, 0);
}

/* A wakeup reads at most TAP_BYTES_PER_WAKEUP (or TAP_READS_PER_WAKEUP frames), then the loop moves on. */
static void test_rx_batch_bounded(void **state)
{
	struct world *w = *state;
	const size_t len = 65535 - 40;          /* the largest super-frame */
	uint8_t f[64], vh[VH] = { 0 };
	unsigned per = 0;

	for (int i = 0; i < 5; i++)
		host_write_gso(w, len, MSS);
	while ((size_t)per * (VH + 14 + 65535) < TAP_BYTES_PER_WAKEUP)
		per++;
	run_batch(w);
	assert_int_equal(tap_stats(w->tap)->rx_frames, per);
	run_batch(w);
	assert_int_equal(tap_stats(w->tap)->rx_frames, 5);
	assert_int_equal(w->guest_bytes, 5 * len);
	assert_false(w->guest_bad);
	/* Small frames: at most TAP_READS_PER_WAKEUP of them. */
	for (int i = 0; i < TAP_READS_PER_WAKEUP + 6; i++) {
		size_t n = tcp_frame(f, guest_mac, host_mac, HOST_IP, GUEST_IP, 40000, 22, 1, 1, F_ACK, 65535, 0);

		host_write(w, vh, f, n);
	}
	run_batch(w);
	assert_int_equal(tap_stats(w->tap)->rx_frames, 5 + TAP_READS_PER_WAKEUP);
	run_batch(w);
	assert_int_equal(tap_stats(w->tap)->rx_frames, 5 + TAP_READS_PER_WAKEUP + 6);
}

/* Bad headers, frames over 64 KiB and runts: dropped and counted, nothing delivered, the TAP goes on. */
static void test_rx_refused(void **state)
{
	struct world *w = *state;
	uint8_t *f = calloc(1, NET_MAX_FRAME + 100), vh[VH] = { 0 };
	uint16_t zero = 0;

	host_write_gso(w, 4 * MSS, 0);                          /* gso_size 0 */
	vh[1] = 4;                                              /* GSO_TCPV6: never granted */
	host_write(w, vh, f, 200);
	vh[1] = 0;
	memcpy(vh + 2, &(uint16_t){ 300 }, 2);                  /* hdr_len past a 200-byte frame */
	host_write(w, vh, f, 200);
	memcpy(vh + 2, &zero, 2);
	memset(f, 0xee, NET_MAX_FRAME + 100);
	host_write(w, vh, f, NET_MAX_FRAME + 100);              /* over 64 KiB: cut by the read */
	host_write(w, vh, f, 3);                                /* no room for an Ethernet header */
	run_batch(w);
	assert_int_equal(tap_stats(w->tap)->rx_frames, 0);
	assert_int_equal(tap_stats(w->tap)->rx_dropped, 5);
	assert_int_equal(tap_stats(w->tap)->offload.drop_gso_size, 1);
	assert_int_equal(tap_stats(w->tap)->offload.drop_gso_type, 1);
	assert_int_equal(tap_stats(w->tap)->offload.drop_hdr_len, 1);
	assert_int_equal(tap_stats(w->tap)->offload.drop_too_long, 1);
	assert_int_equal(tap_stats(w->tap)->offload.drop_short, 1);
	assert_int_equal(w->guest_frames, 0);
	/* And a good one after them. */
	host_write_gso(w, 2 * MSS, MSS);
	run_batch(w);
	assert_int_equal(w->guest_frames, 2);
	assert_false(w->guest_bad);
	free(f);
}

/*
 * Pure ACKs toward the host within one batch: each that acknowledges more,
 * or opens the window further, replaces the one held; duplicates, older
 * ones and other flows' are written; data is never overtaken.
 */
static void test_acks_folded(void **state)
{
	struct world *w = *state;
	uint8_t f[2048];
	size_t n;

	host_hello(w);
	expect_none(w);
	/* More each time: one ACK, the last. */
	ep_ack(w, 40000, 100, 65535);
	ep_ack(w, 40000, 200, 65535);
	ep_ack(w, 40000, 300, 65535);
	run_batch(w);
	expect_ack(w, 40000, 300, 65535);
	expect_none(w);
	assert_int_equal(tap_stats(w->tap)->acks_superseded, 2);
	/* Duplicates are the peer's signal of a gap: every one goes out. */
	ep_ack(w, 40000, 300, 65535);
	ep_ack(w, 40000, 300, 65535);
	ep_ack(w, 40000, 300, 65535);
	run_batch(w);
	expect_ack(w, 40000, 300, 65535);
	expect_ack(w, 40000, 300, 65535);
	expect_ack(w, 40000, 300, 65535);
	expect_none(w);
	/* A window update replaces the ACK it widens; a narrower window does not. */
	ep_ack(w, 40000, 300, 1000);
	ep_ack(w, 40000, 300, 60000);
	ep_ack(w, 40000, 300, 50000);
	run_batch(w);
	expect_ack(w, 40000, 300, 60000);
	expect_ack(w, 40000, 300, 50000);
	expect_none(w);
	/* An older acknowledgment after a newer one, and another flow's: written as they come. */
	ep_ack(w, 40000, 500, 65535);
	ep_ack(w, 40000, 400, 65535);
	ep_ack(w, 40001, 900, 65535);
	ep_ack(w, 40000, 600, 65535);
	run_batch(w);
	expect_ack(w, 40000, 500, 65535);
	expect_ack(w, 40000, 400, 65535);
	expect_ack(w, 40001, 900, 65535);
	expect_ack(w, 40000, 600, 65535);
	expect_none(w);
	/* An ACK, then data of the flow: the ACK goes first. */
	ep_ack(w, 40000, 700, 65535);
	n = tcp_frame(f, host_mac, ep_mac, EP_IP, HOST_IP, 9000, 40000, 5000, 700, F_ACK | F_PSH, 65535, 100);
	net_switch_input(w->sw, w->ep, f, n);
	run_batch(w);
	expect_ack(w, 40000, 700, 65535);
	n = host_read(w, f, sizeof(f));
	assert_int_equal(n, 14 + 40 + 100);
	assert_int_equal(get32(f + 34 + 4), 5000);
	expect_none(w);
	assert_int_equal(tap_stats(w->tap)->acks_superseded, 3);
}

/*
 * Wakeups whose reads end at their budget (TAP_READS_PER_WAKEUP frames) with more queued: after
 * TAP_BEHIND_WAKEUPS of them in a row, the frames of the next ones reach the ports while
 * net_switch_behind() says so, until a wakeup empties the queue; a wakeup that empties it, or a
 * few at the budget, are not behind.
 */
static void test_behind(void **state)
{
	struct world *w = *state;
	uint8_t f[64], vh[VH] = { 0 };
	size_t n = tcp_frame(f, guest_mac, host_mac, HOST_IP, GUEST_IP, 40000, 22, 1, 1, F_ACK, 65535, 0);
	unsigned q = TAP_READS_PER_WAKEUP * (TAP_BEHIND_WAKEUPS + 1) + 10;

	for (unsigned i = 0; i < q; i++)
		host_write(w, vh, f, n);
	for (unsigned i = 0; i < TAP_BEHIND_WAKEUPS; i++) {
		run_batch(w);
		assert_int_equal(w->guest_frames, (i + 1) * TAP_READS_PER_WAKEUP);
		assert_int_equal(w->guest_behind, 0);
	}
	assert_false(net_switch_behind(w->sw));
	run_batch(w);   /* the queue outlasted TAP_BEHIND_WAKEUPS budgets: behind */
	assert_int_equal(w->guest_behind, TAP_READS_PER_WAKEUP);
	run_batch(w);   /* the last ten, then the queue is empty */
	assert_int_equal(w->guest_frames, q);
	assert_int_equal(w->guest_behind, TAP_READS_PER_WAKEUP + 10);
	assert_false(net_switch_behind(w->sw));
	assert_int_equal(tap_stats(w->tap)->behind_wakeups, 2);
	/* Emptied: the next frame is not behind, nor are three budgets' worth after it. */
	for (unsigned i = 0; i < 3 * TAP_READS_PER_WAKEUP + 1; i++)
		host_write(w, vh, f, n);
	for (unsigned i = 0; i < 4; i++)
		run_batch(w);
	assert_int_equal(w->guest_frames, q + 3 * TAP_READS_PER_WAKEUP + 1);
	assert_int_equal(w->guest_behind, TAP_READS_PER_WAKEUP + 10);
}

/*
 * A TAP that goes away while the segment is behind (its last wakeup read ten frames behind, then
 * found the device gone) leaves the segment not behind: frames from the other ports earn no CNP
 * for a queue that no longer exists.
 */
static void test_behind_gone(void **state)
{
	struct world *w = *state;
	uint8_t f[64], vh[VH] = { 0 };
	size_t n = tcp_frame(f, guest_mac, host_mac, HOST_IP, GUEST_IP, 40000, 22, 1, 1, F_ACK, 65535, 0);
	unsigned q = TAP_READS_PER_WAKEUP * TAP_BEHIND_WAKEUPS + 10;

	for (unsigned i = 0; i < q; i++)
		host_write(w, vh, f, n);
	close(w->host);         /* the device goes: what is queued is read, then nothing more */
	w->host = -1;
	for (unsigned i = 0; i <= TAP_BEHIND_WAKEUPS; i++)
		run_batch(w);
	assert_int_equal(w->guest_frames, q);
	assert_int_equal(w->guest_behind, 10);
	assert_false(net_switch_behind(w->sw));
}

/*
 * An in-process host's TCP super-segment (its stack's segmentation offload): to the host behind
 * the TAP it goes whole in one write, behind a header saying what the kernel is to do (NEEDS_CSUM
 * at the TCP checksum, GSO_TCPV4 at its gso_size, the headers' length), after the ACK held
 * before it and the segments merged before it; to the guest's port, which takes no offloads, the
 * switch cuts it into MSS-sized frames with valid checksums.
 */
static void test_tx_super_segment(void **state)
{
	struct world *w = *state;
	const size_t len = 20 * MSS + 77;
	uint8_t *f = malloc(NET_MAX_FRAME), *msg = malloc(VH + NET_MAX_FRAME), *want = malloc(NET_MAX_FRAME), m[2048];
	struct net_offload off = { .csum_partial = true, .tcp_csum_partial = true, .csum_start = 34,
				   .csum_offset = 16, .gso_size = MSS, .hdr_len = 54 };
	uint16_t v;
	size_t n, k;
	unsigned guest0;

	assert_non_null(f);
	assert_non_null(msg);
	assert_non_null(want);
	host_hello(w);
	guest0 = w->guest_frames;       /* the hello, flooded */
	w->guest_bytes = 0;
	/* An ACK held, and a plain data segment of another flow merging: both go out first. */
	ep_ack(w, 40000, 700, 65535);
	k = tcp_frame(m, host_mac, ep_mac, EP_IP, HOST_IP, 9000, 40001, 1, 1, F_ACK, 65535, MSS);
	net_switch_input(w->sw, w->ep, m, k);
	n = tcp_frame(f, host_mac, ep_mac, EP_IP, HOST_IP, 9000, 40000, 5000, 700, F_ACK | F_PSH, 65535, len);
	put16(f + 34 + 16, (uint16_t)~fold(pseudo(EP_IP, HOST_IP, 6, 20 + len)));
	memcpy(want, f, n);
	off.pkt_len = (uint32_t)n;
	net_switch_input_offload(w->sw, w->ep, f, n, &off);
	memset(f, 0xee, n);     /* whatever the TAP wrote, it wrote before the call returned */
	run_batch(w);
	expect_ack(w, 40000, 700, 65535);
	assert_int_equal(host_read(w, m, sizeof(m)), k);
	assert_int_equal(get16(m + 34 + 2), 40001);
	n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
	assert_int_equal(n, VH + 14 + 40 + len);
	assert_int_equal(msg[0], 1);            /* NEEDS_CSUM */
	assert_int_equal(msg[1], 1);            /* GSO_TCPV4 */
	memcpy(&v, msg + 2, 2);
	assert_int_equal(v, 54);                /* hdr_len */
	memcpy(&v, msg + 4, 2);
	assert_int_equal(v, MSS);               /* gso_size */
	memcpy(&v, msg + 6, 2);
	assert_int_equal(v, 34);                /* csum_start */
	memcpy(&v, msg + 8, 2);
	assert_int_equal(v, 16);                /* csum_offset */
	assert_memory_equal(msg + VH, want, n - VH);
	expect_none(w);
	assert_int_equal(tap_stats(w->tap)->gso_super_frames, 1);
	assert_int_equal(w->guest_frames, guest0);

	/*
	 * The same to the guest's MAC, which the switch has not learnt: flooded, cut for the guest's
	 * port (every piece checked by guest_deliver), whole for the TAP.
	 */
	n = tcp_frame(f, guest_mac, ep_mac, EP_IP, GUEST_IP, 9000, 40000, 5000, 700, F_ACK | F_PSH, 65535, len);
	put16(f + 34 + 16, (uint16_t)~fold(pseudo(EP_IP, GUEST_IP, 6, 20 + len)));
	off.pkt_len = (uint32_t)n;
	net_switch_input_offload(w->sw, w->ep, f, n, &off);
	run_batch(w);
	assert_int_equal(w->guest_frames, guest0 + 21);
	assert_int_equal(w->guest_bytes, len);
	assert_false(w->guest_bad);
	assert_int_equal(host_read_raw(w, msg, VH + NET_MAX_FRAME), VH + 14 + 40 + len);
	assert_int_equal(msg[1], 1);
	expect_none(w);
	assert_int_equal(tap_stats(w->tap)->gso_super_frames, 2);

	/*
	 * In pieces, to the host whose MAC the switch knows: one write of the header and the pieces,
	 * the same bytes, nothing for the guest. To the guest's unknown MAC: refused (the sender joins
	 * the pieces), nothing written.
	 */
	{
		uint8_t *g = malloc(NET_MAX_FRAME);
		struct iovec pc[4];
		size_t cut1 = 1000, cut2 = 7 * MSS + 5;

		assert_non_null(g);
		n = tcp_frame(g, host_mac, ep_mac, EP_IP, HOST_IP, 9000, 40000, 9000, 700, F_ACK, 65535, len);
		put16(g + 34 + 16, (uint16_t)~fold(pseudo(EP_IP, HOST_IP, 6, 20 + len)));
		pc[0] = (struct iovec){ .iov_base = g, .iov_len = 54 };
		pc[1] = (struct iovec){ .iov_base = g + 54, .iov_len = cut1 };
		pc[2] = (struct iovec){ .iov_base = g + 54 + cut1, .iov_len = cut2 };
		pc[3] = (struct iovec){ .iov_base = g + 54 + cut1 + cut2, .iov_len = len - cut1 - cut2 };
		off.pkt_len = (uint32_t)n;
		assert_true(net_switch_input_pieces(w->sw, w->ep, pc, 4, &off));
		run_batch(w);
		assert_int_equal(host_read_raw(w, msg, VH + NET_MAX_FRAME), VH + n);
		assert_int_equal(msg[0], 1);
		assert_int_equal(msg[1], 1);
		memcpy(&v, msg + 4, 2);
		assert_int_equal(v, MSS);
		assert_memory_equal(msg + VH, g, n);
		assert_int_equal(tap_stats(w->tap)->gso_super_frames, 3);
		assert_int_equal(net_switch_stats(w->sw)->pieces_passed, 1);
		memcpy(g, guest_mac, 6);
		assert_false(net_switch_input_pieces(w->sw, w->ep, pc, 4, &off));
		run_batch(w);
		expect_none(w);
		assert_int_equal(w->guest_frames, guest0 + 21);
		assert_int_equal(net_switch_stats(w->sw)->pieces_passed, 1);
		free(g);
	}
	free(f);
	free(msg);
	free(want);
}

/*
 * Frames the kernel's queue cannot take at once (a write that would block) are held, not dropped,
 * and written in order as the queue drains: here the socket pair's queue takes a few datagrams, the
 * endpoint sends 200 data frames while the host reads nothing, then the host reads and the loop
 * turns until all 200 have come, in order (a gap between each two, so that none merge). Past TAP_TX_HOLD frames held, the next is dropped and
 * counted as such.
 */
static void test_tx_held(void **state)
{
	struct world *w = *state;
	uint8_t f[2048];
	unsigned got = 0, turns = 0;
	const struct tap_stats *st = tap_stats(w->tap);
	size_t n;

	host_hello(w);
	/* A small queue: what its sender may have unread in the pair, as a TAP's queue of frames. */
	assert_int_equal(setsockopt(w->tapfd, SOL_SOCKET, SO_SNDBUF, &(int){ 16384 }, sizeof(int)), 0);
	for (unsigned i = 0; i < 200; i++) {
		n = tcp_frame(f, host_mac, ep_mac, EP_IP, HOST_IP, 9000, 40000, 5000 + 1000 * i, 1, F_ACK | F_PSH,
			      65535, 100);
		net_switch_input(w->sw, w->ep, f, n);
	}
	run_batch(w);
	assert_true(st->tx_held >= 150);
	assert_int_equal(st->tx_dropped, 0);
	while (got < 200) {
		while ((n = host_read(w, f, sizeof(f))) > 0) {
			assert_int_equal(n, 14 + 40 + 100);
			assert_int_equal(get32(f + 34 + 4), 5000 + 1000 * got); /* in the order sent */
			got++;
		}
		run_batch(w);
		assert_true(++turns < 1000);
	}
	assert_int_equal(st->tx_frames, 200);
	assert_int_equal(st->tx_dropped, 0);
	expect_none(w);
	/* Nobody reads: what the queue takes, TAP_TX_HOLD held, and the rest dropped as "held full". */
	uint64_t frames0 = st->tx_frames, held0 = st->tx_held;

	for (unsigned i = 0; i < TAP_TX_HOLD + 100; i++) {
		n = tcp_frame(f, host_mac, ep_mac, EP_IP, HOST_IP, 9000, 40000, 100000 + 1000 * i, 1, F_ACK | F_PSH,
			      65535, 100);
		net_switch_input(w->sw, w->ep, f, n);
	}
	run_batch(w); /* the last one leaves the batch's merge buffer */
	assert_int_equal(st->tx_held - held0, TAP_TX_HOLD);
	assert_true(st->tx_held_full > 0);
	assert_int_equal(st->tx_dropped, st->tx_held_full);
	assert_int_equal(st->tx_frames - frames0 + TAP_TX_HOLD + st->tx_held_full, TAP_TX_HOLD + 100);
}

/* A RoCEv2 datagram (IPv4 identification id, len bytes of UDP payload, UDP checksum 0) from the endpoint. */
static size_t roce_frame(uint8_t *f, const uint8_t *dmac, const uint8_t *smac, uint32_t sip, uint32_t dip,
			 uint16_t id, uint8_t tos, uint16_t dport, size_t len)
{
	uint8_t *ip = f + 14, *udp = ip + 20;

	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[1] = tos;
	put16(ip + 2, (uint32_t)(28 + len));
	put16(ip + 4, id);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, sip);
	put32(ip + 16, dip);
	put16(ip + 10, fold(sum16(0, ip, 20)));
	put16(udp, 49152);
	put16(udp + 2, dport);
	put16(udp + 4, (uint32_t)(8 + len));
	put16(udp + 6, 0);
	for (size_t i = 0; i < len; i++)
		udp[8 + i] = (uint8_t)(i * 13 + id);
	return 42 + len;
}

/*
 * What the kernel's UDP segmentation makes of a write (the virtio specification's UDP_L4 and
 * Linux's __udp_gso_segment, written here on their own terms): checks the header, then compares
 * each datagram cut from it, at gso_size bytes of payload, with the headers copied, the IPv4
 * length, identification (+1 each) and checksum and the UDP length set, to sent[i] byte for byte,
 * the UDP checksum aside (the kernel computes one where we sent 0). Returns the datagrams cut.
 */
static unsigned kernel_cuts(const uint8_t *msg, size_t n, uint8_t (*sent)[DGRAM_CAP], const size_t *sent_len)
{
	const uint8_t *f = msg + VH, *ip = f + 14, *udp = ip + 20;
	uint16_t hdr_len, gso, cstart, coff;
	size_t payload = n - VH - 42, done = 0;
	unsigned k = 0;

	memcpy(&hdr_len, msg + 2, 2);
	memcpy(&gso, msg + 4, 2);
	memcpy(&cstart, msg + 6, 2);
	memcpy(&coff, msg + 8, 2);
	assert_int_equal(msg[0], 1);            /* NEEDS_CSUM */
	assert_int_equal(msg[1], 5);            /* GSO_UDP_L4 */
	assert_int_equal(hdr_len, 42);
	assert_int_equal(cstart, 34);
	assert_int_equal(coff, 6);
	assert_int_equal(get16(ip + 2), n - VH - 14);
	assert_int_equal(fold(sum16(0, ip, 20)), 0);
	assert_int_equal(get16(udp + 4), n - VH - 34);
	/* The partial checksum: the pseudo-header's sum over the whole datagram, folded, not complemented. */
	assert_int_equal(get16(udp + 6), (uint16_t)~fold(pseudo(get32(ip + 12), get32(ip + 16), 17, n - VH - 34)));
	while (done < payload) {
		size_t seg = payload - done < gso ? payload - done : gso;
		uint8_t cut[DGRAM_CAP];

		assert_true(42 + seg <= DGRAM_CAP);
		memcpy(cut, f, 42);
		memcpy(cut + 42, f + 42 + done, seg);
		put16(cut + 14 + 2, (uint32_t)(28 + seg));
		put16(cut + 14 + 4, (uint32_t)(get16(ip + 4) + k));
		put16(cut + 14 + 10, 0);
		put16(cut + 14 + 10, fold(sum16(0, cut + 14, 20)));
		put16(cut + 34 + 4, (uint32_t)(8 + seg));
		put16(cut + 34 + 6, 0);
		assert_int_equal(sent_len[k], 42 + seg);
		assert_memory_equal(cut, sent[k], 42 + seg);
		done += seg;
		k++;
	}
	return k;
}

/* A WRITE's 15 datagrams of one flow toward the host: the first larger (its RETH), 13 alike, a shorter last. */
static unsigned write_datagrams(uint8_t (*sent)[DGRAM_CAP], size_t *sent_len)
{
	unsigned k = 0;

	sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, 100, 0, ROCE_PORT, 1040);
	k++;
	for (; k < 14; k++)
		sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, (uint16_t)(100 + k), 0, ROCE_PORT, 1028);
	sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, (uint16_t)(100 + k), 0, ROCE_PORT, 500);
	return k + 1;
}

/* What the host reads of them: the first alone, as it was sent, behind an empty header; the other 14 in one write. */
static void expect_write_datagrams(struct world *w, uint8_t *msg, uint8_t (*sent)[DGRAM_CAP], const size_t *sent_len)
{
	const struct tap_stats *st = tap_stats(w->tap);
	size_t n = host_read_raw(w, msg, VH + NET_MAX_FRAME);

	assert_int_equal(n, VH + sent_len[0]);
	for (int i = 0; i < VH; i++)
		assert_int_equal(msg[i], 0);
	assert_memory_equal(msg + VH, sent[0], sent_len[0]);
	n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
	assert_int_equal(n, VH + 42 + 13 * 1028 + 500);
	assert_int_equal(kernel_cuts(msg, n, sent + 1, sent_len + 1), 14);
	assert_int_equal(host_read_raw(w, msg, VH + NET_MAX_FRAME), 0);
	assert_int_equal(st->gso_udp_frames, 1);
	assert_int_equal(st->udp_merged, 14);
	assert_int_equal(st->tx_frames, 2);
}

/*
 * RoCEv2 datagrams of one flow toward the host: the first (larger, as a WRITE's first with its
 * RETH) alone, the rest, of equal size and a shorter last, in one UDP segmentation-offload write
 * whose datagrams, cut as the kernel cuts them, are those sent. A gap in the identifications, a
 * change of TOS, a larger datagram and the 64-datagram limit end a merge; flows interleaved merge
 * side by side, more flows than merges lose nothing, and a datagram to another port goes alone.
 */
static void test_udp_merged(void **state)
{
	struct world *w = *state;
	static uint8_t sent[MAX_DGRAMS][DGRAM_CAP];
	size_t sent_len[MAX_DGRAMS];
	uint8_t *msg = malloc(VH + NET_MAX_FRAME);
	const struct tap_stats *st = tap_stats(w->tap);
	unsigned k = 0;
	size_t n;

	host_hello(w);
	k = write_datagrams(sent, sent_len);
	for (unsigned i = 0; i < k; i++)
		net_switch_input(w->sw, w->ep, sent[i], sent_len[i]);
	run_batch(w);
	expect_write_datagrams(w, msg, sent, sent_len);

	/* What ends a merge in one flow: each of these goes in a write of its own, in order. */
	k = 0;
	sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, 200, 0, ROCE_PORT, 1028), k++;
	sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, 202, 0, ROCE_PORT, 1028), k++; /* a gap */
	sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, 203, 2, ROCE_PORT, 1028), k++; /* ECN */
	sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, 204, 2, ROCE_PORT, 1029), k++; /* larger */
	for (unsigned i = 0; i < k; i++)
		net_switch_input(w->sw, w->ep, sent[i], sent_len[i]);
	run_batch(w);
	for (unsigned i = 0; i < k; i++) {
		n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
		assert_int_equal(n, VH + sent_len[i]);
		assert_int_equal(msg[1], 0);
		assert_memory_equal(msg + VH, sent[i], sent_len[i]);
	}
	assert_int_equal(host_read_raw(w, msg, VH + NET_MAX_FRAME), 0);
	assert_int_equal(st->gso_udp_frames, 1);

	/*
	 * Two flows interleaved (two QPs' packets in turn, as the pump sends them) merge side by side;
	 * a datagram to another port is no RoCEv2 and goes at once, alone.
	 */
	{
		static uint8_t g[4][DGRAM_CAP], other[DGRAM_CAP];
		size_t glen[4], olen;
		unsigned hosts = 0, guests = 0;

		k = 0;
		for (unsigned i = 0; i < 4; i++) {
			sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, (uint16_t)(300 + i), 0, ROCE_PORT, 600);
			net_switch_input(w->sw, w->ep, sent[k], sent_len[k]);
			k++;
			glen[i] = roce_frame(g[i], host_mac, ep_mac, EP_IP, GUEST_IP, (uint16_t)(900 + i), 0, ROCE_PORT, 800);
			net_switch_input(w->sw, w->ep, g[i], glen[i]);
		}
		olen = roce_frame(other, host_mac, ep_mac, EP_IP, HOST_IP, 304, 0, 4792, 600);
		net_switch_input(w->sw, w->ep, other, olen);
		run_batch(w);
		n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
		assert_int_equal(n, VH + olen);
		assert_memory_equal(msg + VH, other, olen);
		for (int m = 0; m < 2; m++) {
			n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
			if (get32(msg + VH + 14 + 16) == HOST_IP)
				hosts += kernel_cuts(msg, n, sent, sent_len);
			else
				guests += kernel_cuts(msg, n, g, glen);
		}
		assert_int_equal(hosts, 4);
		assert_int_equal(guests, 4);
		assert_int_equal(host_read_raw(w, msg, VH + NET_MAX_FRAME), 0);
		assert_int_equal(st->gso_udp_frames, 3);
	}
	/* More flows than merges at once: the oldest is written to make room; every datagram leaves once. */
	{
		unsigned got = 0;

		for (unsigned r = 0; r < 3; r++)
			for (unsigned f = 0; f < 12; f++) {
				uint8_t d[DGRAM_CAP];
				size_t dl = roce_frame(d, host_mac, ep_mac, EP_IP, HOST_IP + 16 + f, (uint16_t)(1000 * f + r), 0,
						       ROCE_PORT, 300);

				net_switch_input(w->sw, w->ep, d, dl);
			}
		run_batch(w);
		while ((n = host_read_raw(w, msg, VH + NET_MAX_FRAME)) > 0) {
			size_t payload = n - VH - 42;

			assert_true(msg[1] == 0 || msg[1] == 5);
			got += msg[1] == 0 ? 1 : (unsigned)(payload / 300);
		}
		assert_int_equal(got, 36);
	}

	/* 70 of equal size: 64 in one write (the kernel cuts no more), 6 in the next. */
	for (k = 0; k < 70; k++) {
		sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, (uint16_t)(65530 + k), 0, ROCE_PORT, 256);
		net_switch_input(w->sw, w->ep, sent[k], sent_len[k]);
	}
	run_batch(w);
	n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
	assert_int_equal(kernel_cuts(msg, n, sent, sent_len), 64);      /* identifications wrap past 65535 */
	n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
	assert_int_equal(kernel_cuts(msg, n, sent + 64, sent_len + 64), 6);
	assert_int_equal(st->udp_merged >= 14 + 8 + 70, 1);
	/* 4 KiB packets: no more than an IPv4 packet holds (15 of 4140 bytes), then the rest. */
	for (k = 0; k < 20; k++) {
		sent_len[k] = roce_frame(sent[k], host_mac, ep_mac, EP_IP, HOST_IP, (uint16_t)(300 + k), 0, ROCE_PORT, 4112);
		net_switch_input(w->sw, w->ep, sent[k], sent_len[k]);
	}
	run_batch(w);
	n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
	assert_true(n - VH - 14 <= 65535);
	assert_int_equal(kernel_cuts(msg, n, sent, sent_len), 15);
	n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
	assert_int_equal(kernel_cuts(msg, n, sent + 15, sent_len + 15), 5);
	assert_int_equal(st->tx_dropped, 0);
	free(msg);
}

/* Frame f of len bytes handed to the switch in three pieces cut at a and b (0 < a <= b < len). */
static bool send_in_pieces(struct world *w, const uint8_t *f, size_t len, size_t a, size_t b)
{
	struct iovec iov[3] = {
		{ .iov_base = (void *)f, .iov_len = a },
		{ .iov_base = (void *)(f + a), .iov_len = b - a },
		{ .iov_base = (void *)(f + b), .iov_len = len - b },
	};

	return net_switch_input_pieces(w->sw, w->ep, iov, 3, NULL);
}

/*
 * RoCEv2 datagrams handed over in pieces without offloads (headers, the payload where it lies
 * in guest memory, pad and ICRC), as a RoCEv2 node sends a WRITE: on the wire exactly what the
 * same frames whole make. The first alone, the rest merged into one write the kernel cuts into
 * the datagrams sent; a datagram to another port goes alone, whole, behind an empty header; a
 * first piece too short for the headers is written as it is, in order.
 */
static void test_udp_pieces(void **state)
{
	struct world *w = *state;
	static uint8_t sent[MAX_DGRAMS][DGRAM_CAP];
	size_t sent_len[MAX_DGRAMS];
	uint8_t *msg = malloc(VH + NET_MAX_FRAME);
	const struct tap_stats *st = tap_stats(w->tap);
	unsigned k = 0;
	size_t n;

	host_hello(w);
	k = write_datagrams(sent, sent_len);
	/* cut after the base header and before the ICRC, as a node does; one cut right after the UDP header */
	for (unsigned i = 0; i < k; i++)
		assert_true(send_in_pieces(w, sent[i], sent_len[i], i == 3 ? 42 : 54, sent_len[i] - 4));
	run_batch(w);
	expect_write_datagrams(w, msg, sent, sent_len);
	assert_int_equal(st->udp_pieces, 15);

	/* Not RoCEv2 (another port): one write of the pieces, an empty header before them. */
	sent_len[0] = roce_frame(sent[0], host_mac, ep_mac, EP_IP, HOST_IP, 400, 0, 4792, 700);
	/* A first piece shorter than the headers: not merged, written as it is, behind the merged one before it. */
	sent_len[1] = roce_frame(sent[1], host_mac, ep_mac, EP_IP, HOST_IP, 500, 0, ROCE_PORT, 600);
	sent_len[2] = roce_frame(sent[2], host_mac, ep_mac, EP_IP, HOST_IP, 501, 0, ROCE_PORT, 600);
	assert_true(send_in_pieces(w, sent[1], sent_len[1], 54, 300));
	assert_true(send_in_pieces(w, sent[2], sent_len[2], 30, 300));
	assert_true(send_in_pieces(w, sent[0], sent_len[0], 20, 100));
	run_batch(w);
	for (unsigned i = 1; i <= 3; i++) {
		unsigned j = i % 3;

		n = host_read_raw(w, msg, VH + NET_MAX_FRAME);
		assert_int_equal(n, VH + sent_len[j]);
		assert_int_equal(msg[1], 0);
		assert_memory_equal(msg + VH, sent[j], sent_len[j]);
	}
	assert_int_equal(host_read_raw(w, msg, VH + NET_MAX_FRAME), 0);
	assert_int_equal(st->udp_pieces, 16);
	assert_int_equal(st->tx_dropped, 0);
	free(msg);
}

/* A UDP super-frame from the host reaches the segment as its datagrams, each whole and checked. */
static void test_rx_udp_super_frame(void **state)
{
	struct world *w = *state;
	uint8_t *f = malloc(NET_MAX_FRAME), vh[VH] = { 0 }, one[DGRAM_CAP];
	size_t n = roce_frame(f, guest_mac, host_mac, HOST_IP, GUEST_IP, 7, 0, ROCE_PORT, 10 * 1028 + 100);
	uint32_t p = pseudo(HOST_IP, GUEST_IP, 17, 8 + 10 * 1028 + 100);
	uint16_t v;

	while (p >> 16)
		p = (p & 0xffff) + (p >> 16);
	put16(f + 34 + 6, p);
	gso_hdr(vh, 5 /* GSO_UDP_L4 */, 42, 1028, 6);
	host_write(w, vh, f, n);
	run_batch(w);
	assert_int_equal(w->guest_frames, 11);
	assert_int_equal(w->guest_bytes, 10 * 1028 + 100);
	assert_false(w->guest_bad);
	for (unsigned i = 0; i < 11; i++) {
		size_t seg = i < 10 ? 1028 : 100;

		roce_frame(one, guest_mac, host_mac, HOST_IP, GUEST_IP, (uint16_t)(7 + i), 0, ROCE_PORT, seg);
		assert_int_equal(get16(w->guest_dgram[i] + 14 + 2), 28 + seg);
		assert_int_equal(get16(w->guest_dgram[i] + 14 + 4), 7 + i);
		assert_memory_equal(w->guest_dgram[i], one, 40);        /* through the UDP length */
		assert_memory_equal(w->guest_dgram[i] + 42, f + 42 + i * 1028, seg);
	}
	assert_int_equal(tap_stats(w->tap)->offload.gso_udp_frames, 1);
	/* Not partial, or partial elsewhere than the UDP checksum: refused. */
	vh[0] = 0;
	host_write(w, vh, f, n);
	vh[0] = 1;
	v = 16;
	memcpy(vh + 8, &v, 2);
	host_write(w, vh, f, n);
	run_batch(w);
	assert_int_equal(w->guest_frames, 11);
	assert_int_equal(tap_stats(w->tap)->offload.drop_gso_frame, 2);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rx_super_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_batch_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acks_folded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_behind_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_super_segment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_merged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_udp_super_frame, setup, teardown),
	};

	return cmocka_run_group_tests_name("tap-unit", tests, NULL, NULL);
}
