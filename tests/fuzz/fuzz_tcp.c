/*
 * fuzz-tcp: Ethernet frames into the S3 endpoint's in-band IPv4/TCP stack
 * through the segment switch, as the server wires them: frames the guest
 * transmits (net_switch_input from the guest's port), and frames read from
 * the host TAP behind a virtio_net_hdr (net_offload_parse, then
 * net_switch_input_offload: TCPv4 super-frames and partial checksums reach
 * the endpoint whole, other ports get them cut and completed; a UDP
 * super-frame's datagrams are also taken as a RoCEv2 node takes them,
 * net_offload_udp_each(), and checked to lie inside it). Behind the
 * stack: ARP, ICMP, IPv6 neighbour discovery and echo for the endpoint's
 * link-local address (net_nd.c), the HTTP connections and the store
 * (s3_endpoint.c).
 *
 * input: records kind:u8 len:u16 bytes[len]; kind even: from the guest,
 * odd: from the TAP (the 10-byte legacy virtio_net_hdr first). A fresh
 * switch and endpoint per input. What the stack and the switch send back
 * is checked for size (a frame the switch passes on fits a super-frame's
 * bound; a super-segment handed whole to the TAP, which takes offloads,
 * cuts into wire-sized segments). Each record ends a batch of events (the deferred calls run: the
 * stack sends what the frame let go, and its ACKs), but the loop itself is never run while frames
 * are fed (the endpoint's retransmission timer stays out: s3-tcp-unit drives it with a clock).
 */
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fuzz.h"
#include "net/net_offload.h"
#include "net/net_switch.h"
#include "s3/s3_endpoint.h"
#include "util/backend_opts.h"
#include "util/evloop.h"
#include "util/log.h"

static void to_guest(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx;
	(void)f;
	if (len < 14 || len > NET_MAX_FRAME)
		abort();
}

static void to_tap(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx;
	(void)f;
	if (len < 14 || len > NET_MAX_FRAME)
		abort();
}

static void count_piece(void *ctx, const uint8_t *f, size_t len)
{
	(void)f;
	if (len < 60 || len > 14 + 20 + 60 + 1460)
		abort();
	(*(unsigned *)ctx)++;
}

/*
 * The TAP takes offloads: what reaches it so is the stack's super-segment
 * (or the kernel's, passed on), a whole packet that cuts into more than one
 * segment no larger than a wire's frame.
 */
static void to_tap_offload(void *ctx, const uint8_t *f, size_t len, const struct net_offload *off)
{
	static uint8_t out[2048];
	unsigned n = 0;

	to_tap(ctx, f, len);
	if (off->gso_size == 0)
		return;
	if (off->gso_udp || off->pkt_len > len || off->hdr_len >= off->pkt_len || off->gso_size > 1460 ||
	    !off->tcp_csum_partial)
		abort();
	if (net_offload_segment(f, len, off, out, sizeof(out), count_piece, &n) < 2 || n < 2)
		abort();
}

/* A UDP super-frame's datagrams as a RoCEv2 node takes them: each inside the frame, its headers saying its length. */
struct udp_frame {
	const uint8_t *f;
	size_t len, at;
};

static void check_datagram(void *ctx, const uint8_t *hdr, size_t hlen, const uint8_t *payload, size_t plen)
{
	struct udp_frame *u = ctx;

	if (payload != u->f + u->at || plen == 0 || plen > u->len - u->at || hlen < 42 || hlen > 14 + 60 + 8 ||
	    (size_t)(hdr[16] << 8 | hdr[17]) != hlen - 14 + plen || (size_t)(hdr[hlen - 4] << 8 | hdr[hlen - 3]) != 8 + plen)
		abort();
	u->at += plen;
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

/*
 * One batch of the loop, for the watchers the endpoint's timer left behind
 * (they are released after a batch). An eventfd that is always readable keeps
 * epoll_wait from blocking.
 */
static void pump(struct evloop *loop)
{
	static int always = -1;
	static struct ev_watch *w; /* kept for the process's life */
	uint64_t one = 1;

	if (always < 0) {
		always = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (always < 0 || write(always, &one, sizeof(one)) != sizeof(one))
			abort();
		w = evloop_add_fd(loop, always, EPOLLIN, on_always, NULL);
		if (w == NULL)
			abort();
	}
	if (evloop_defer(loop, stop, loop) || evloop_run(loop))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct evloop *loop;
	static struct backend_config cfg;
	struct fz f = { data, size, 0 };
	struct net_port guest = { .name = "guest", .deliver = to_guest };
	struct net_port tap = { .name = "tap", .deliver = to_tap, .deliver_offload = to_tap_offload };
	struct net_offload_stats ost = { 0 };
	struct net_switch *sw;
	struct s3_endpoint *ep;
	int gport, tport;
	char err[128];

	if (loop == NULL) {
		log_set_level(LOG_LEVEL_ERROR);
		loop = evloop_new();
		if (loop == NULL || backend_config_parse("s3:size=4M,objects=64,maxpart=1M", &cfg, err, sizeof(err)))
			abort();
	}
	sw = net_switch_new();
	gport = net_switch_attach(sw, &guest);
	tport = net_switch_attach(sw, &tap);
	ep = s3_endpoint_new(&cfg.s3, loop, sw, err, sizeof(err));
	if (ep == NULL || gport < 0 || tport < 0)
		abort();
	while (fz_more(&f)) {
		uint8_t kind = fz_u8(&f);
		size_t n = fz_u16(&f), got;
		const uint8_t *p = fz_ptr(&f, n, &got);
		struct net_offload off;

		if (!(kind & 1)) {
			net_switch_input(sw, gport, p, got);
		} else if (net_offload_parse(p, got, &off, &ost) == 0) {
			size_t hdr = net_offload_hdr_size();

			if (off.gso_udp) {
				struct udp_frame u = { .f = p + hdr, .len = got - hdr, .at = off.hdr_len };

				(void)net_offload_udp_each(p + hdr, got - hdr, &off, check_datagram, &u);
			}
			net_switch_input_offload(sw, tport, p + hdr, got - hdr, &off);
		}
		/* The end of a batch: the output and ACKs the frame let go leave (no timer runs). */
		evloop_run_deferred(loop);
	}
	s3_endpoint_free(ep);
	net_switch_free(sw);
	pump(loop);
	return 0;
}
