/*
 * tap-floor-bench: what the kernel alone costs to carry roce-scale-bench's frames from one TAP
 * to another across the bridge, the floor under the servers' CPU per frame. Run inside the
 * namespace bench/roce_scale.sh makes (TAPs ernic0 and ernic1 on a bridge with jumbo frames).
 *
 * One process opens both TAPs as a server does (IFF_VNET_HDR, receive offloads with UDP
 * segmentation) and, for each RDMA WRITE of the benchmark at a 4096-byte path MTU, makes the
 * system calls two servers make:
 *  - a WRITE of several packets (64 KiB by default): ernic0 writes its first packet alone (its
 *    RETH makes it longer than the rest) and the others as one UDP super-frame, ernic1 reads what
 *    came, writes the ACK, and ernic0 reads it;
 *  - a WRITE of one packet (4096 bytes): the benchmark keeps four in flight per queue pair, and the
 *    servers merge them, so ernic0 writes four as one super-frame, ernic1 reads it and writes their
 *    four ACKs as one, and ernic0 reads that.
 * The frames are the right size but carry no RoCEv2 content: nothing is built, parsed or checked
 * in user space.
 *
 * Prints the CPU time (user and kernel, getrusage) per frame, a WRITE's packets and its ACK as the
 * scale benchmark counts them, and appends it to the CSV given, followed by the requester's share
 * (its writes of the WRITE's packets, its reads of the ACK) and the responder's (the reads and the
 * ACK's write): the CPU split by the time spent in each side's calls (the loop never sleeps when
 * no frame is lost, so time in a call is CPU in it).
 *
 * With a depth (fourth argument, 1 to 64), the floor is pipelined instead, on two threads (see
 * pipelined() below): the cost of each side on a core of its own, as one-way traffic between two
 * servers has it. TAP_FLOOR_VIA=packet or ring then sends the requester's frames through a packet
 * socket, or its transmit ring, on the veth "va" instead of ernic0; TAP_FLOOR_VIA=mq uses two
 * multiqueue TAPs "mq0" and "mq1" (made with `ip tuntap ... multi_queue`) with two queues each
 * instead of ernic0 and ernic1 (bench/tap_floor_via.sh).
 *
 * Usage: tap-floor-bench [seconds] [csv-file] [write-bytes: 4096 .. 65536, whole 4 KiB packets] [depth]
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define HDRS     42                      /* Ethernet, IPv4, UDP */
#define MIDDLE   (12 + 4096 + 4)         /* BTH, payload, ICRC */
#define FIRST    (12 + 16 + 4096 + 4)    /* with the RETH */
#define ACK      (12 + 4 + 4)            /* BTH, AETH, ICRC */
#define MERGED   15                      /* the most datagrams merged: a 64 KiB WRITE's after the first */
#define IN_FLIGHT 4                      /* one-packet WRITEs merged, as the benchmark keeps them in flight */

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0x01, 0x00 }, MAC_B[6] = { 0x02, 0, 0, 0, 0x01, 0x01 };
/* per thread: the two sides of the pipelined floor each build and read frames of their own */
static _Thread_local uint8_t buf[HDRS + MERGED * MIDDLE], in[70000];
static uint64_t waits; /* one thread: reads that found nothing yet (the bridge's softirq had not run) */

/*
 * TAP_FLOOR_VIA (pipelined floor only): how the requester's frames reach the bridge. "tap" (the
 * default): written to ernic0 as a server does. "packet": a packet socket on the veth "va", whose
 * other end is on the bridge, with the same virtio_net_hdr (PACKET_VNET_HDR), one sendmsg per
 * frame. "ring": the same socket with a transmit ring (PACKET_TX_RING): the frames are built in
 * the ring's slots and the kernel is told once per burst, so no system call copies them in. The
 * issue's item 3 names a packet-socket ring or a multiqueue TAP beside the TAP; this measures
 * which costs less. "mq": both TAPs multiqueue, opened twice each (two queues): the
 * requester writes its WRITEs to its two queues in turn and reads the ACKs from both, the
 * responder reads both of its own (the kernel picks the queue by the flow's hash) and sleeps in
 * poll() on the two.
 */
static enum { VIA_TAP, VIA_PACKET, VIA_RING, VIA_MQ } via;
static struct {
	int fd;               /* the packet socket that owns the ring (-1: none) */
	uint8_t *ring;
	unsigned frame_size, frames, next;
} tx = { .fd = -1 };

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static int tap_open(const char *name, bool mq)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (mq ? IFF_MULTI_QUEUE : 0) };
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0 ||
	    ioctl(fd, TUNSETOFFLOAD, (unsigned long)(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_USO4 | TUN_F_USO6)) < 0) {
		fprintf(stderr, "tap-floor-bench: %s: %s (needs Linux 6.2's UDP segmentation on a TAP)\n", name,
			strerror(errno));
		exit(1);
	}
	return fd;
}

/* Headers for a datagram (or super-frame) of udp_payload bytes per datagram, n of them, from -> to. */
static void headers(uint8_t *f, const uint8_t *from, const uint8_t *to, size_t udp_payload, unsigned n, unsigned id)
{
	uint8_t *ip = f + 14, *udp = ip + 20;
	uint32_t sum = 0;

	memcpy(f, to, 6);
	memcpy(f + 6, from, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 28);
	ip[0] = 0x45;
	put16(ip + 2, (unsigned)(28 + udp_payload * n));
	put16(ip + 4, id);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	ip[15] = 20, ip[12] = 192, ip[13] = 168, ip[14] = 200;
	ip[19] = 21, ip[16] = 192, ip[17] = 168, ip[18] = 200;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	put16(ip + 10, ~sum & 0xffff);
	put16(udp, 49152);
	put16(udp + 2, 4791);
	put16(udp + 4, (unsigned)(8 + udp_payload * n));
}

/* One frame (n > 1: a UDP super-frame of n datagrams of udp_payload bytes) out of fd. */
static void send_frame(int fd, const uint8_t *from, const uint8_t *to, size_t udp_payload, unsigned n)
{
	static _Thread_local unsigned id;
	struct virtio_net_hdr vh = { 0 };
	uint8_t *f = buf, *slot = NULL;
	struct iovec iov[2] = { { &vh, sizeof(vh) }, { buf, HDRS + udp_payload * n } };
	uint8_t *ip;

	if (fd == tx.fd) {
		/* a slot of the transmit ring: the payload already lies there (filled once); the headers go in place */
		struct tpacket2_hdr *h = (struct tpacket2_hdr *)(tx.ring + (size_t)tx.next * tx.frame_size);

		while (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (send(fd, NULL, 0, MSG_DONTWAIT) < 0 && errno != EAGAIN) {
				perror("tap-floor-bench: send");
				exit(1);
			}
			poll(&p, 1, 10);
		}
		slot = (uint8_t *)h;
		f = slot + TPACKET_ALIGN(sizeof(*h)) + sizeof(vh);
	}
	ip = f + 14;
	headers(f, from, to, udp_payload, n, id);
	id += n;
	/* the UDP checksum partial, as a server leaves it: the pseudo-header's sum */
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.csum_start = 34;
	vh.csum_offset = 6;
	{
		uint32_t sum = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 | ip[15]) +
			       (uint32_t)(ip[16] << 8 | ip[17]) + (uint32_t)(ip[18] << 8 | ip[19]) + 17 +
			       (uint32_t)(8 + udp_payload * n);

		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		put16(f + 34 + 6, sum);
	}
	if (n > 1) {
		vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		vh.hdr_len = HDRS;
		vh.gso_size = (uint16_t)udp_payload;
	}
	if (slot != NULL) {
		struct tpacket2_hdr *h = (struct tpacket2_hdr *)slot;

		memcpy(f - sizeof(vh), &vh, sizeof(vh));
		h->tp_len = (uint32_t)(sizeof(vh) + HDRS + udp_payload * n);
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		tx.next = (tx.next + 1) % tx.frames;
		return;
	}
	if (writev(fd, iov, 2) < 0) {
		perror("tap-floor-bench: write");
		exit(1);
	}
}

/* TAP_FLOOR_VIA=packet or ring: a packet socket on the veth "va" (see tx above). */
static int packet_open(const char *name, bool ring)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), one = 1, v2 = TPACKET_V2;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)if_nametoindex(name) };

	if (fd < 0 || sll.sll_ifindex == 0 || setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		fprintf(stderr, "tap-floor-bench: a packet socket on %s: %s\n", name, strerror(errno));
		exit(1);
	}
	if (ring) {
		/* 64 slots of 128 KiB: a super-frame of 15 packets and its headers fit one */
		struct tpacket_req req = { .tp_block_size = 1u << 17, .tp_block_nr = 64, .tp_frame_size = 1u << 17,
					   .tp_frame_nr = 64 };

		if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v2, sizeof(v2)) < 0 ||
		    setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0 ||
		    (tx.ring = mmap(NULL, (size_t)req.tp_block_size * req.tp_block_nr, PROT_READ | PROT_WRITE, MAP_SHARED,
				    fd, 0)) == MAP_FAILED) {
			fprintf(stderr, "tap-floor-bench: a transmit ring: %s\n", strerror(errno));
			exit(1);
		}
		tx.fd = fd;
		tx.frame_size = req.tp_frame_size;
		tx.frames = req.tp_frame_nr;
		/* every slot's payload once: what send_frame() writes in a slot is its headers */
		for (unsigned i = 0; i < tx.frames; i++) {
			size_t at = TPACKET_ALIGN(sizeof(struct tpacket2_hdr)) + sizeof(struct virtio_net_hdr) + HDRS;

			memset(tx.ring + (size_t)i * tx.frame_size + at, 0x5a, tx.frame_size - at);
		}
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		fprintf(stderr, "tap-floor-bench: bind to %s: %s\n", name, strerror(errno));
		exit(1);
	}
	return fd;
}

/* The ring's frames built since the last call go: one system call for the burst. */
static void ring_flush(void)
{
	if (tx.fd >= 0 && send(tx.fd, NULL, 0, MSG_DONTWAIT) < 0 && errno != EAGAIN) {
		perror("tap-floor-bench: send");
		exit(1);
	}
}

/* The datagrams in what read() returned: a super-frame counts as the datagrams it holds. */
static unsigned datagrams(ssize_t r)
{
	struct virtio_net_hdr vh;

	if (r < (ssize_t)(sizeof(vh) + HDRS)) {
		fprintf(stderr, "tap-floor-bench: a short read (%zd)\n", r);
		exit(1);
	}
	memcpy(&vh, in, sizeof(vh));
	return vh.gso_type == VIRTIO_NET_HDR_GSO_UDP_L4 && vh.gso_size
		       ? (unsigned)((r - (ssize_t)sizeof(vh) - HDRS + vh.gso_size - 1) / vh.gso_size)
		       : 1;
}

/* Read what fd has until want datagrams came (a super-frame counts as the datagrams it holds). */
static void take(int fd, unsigned want)
{
	unsigned got = 0;

	while (got < want) {
		ssize_t r = read(fd, in, sizeof(in));

		if (r < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 2000) != 1) {
				fprintf(stderr, "tap-floor-bench: frames lost on the bridge\n");
				exit(1);
			}
			waits++;
			continue;
		}
		got += datagrams(r);
	}
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The pipelined floor (depth > 0): two threads, as two servers on two cores. The requester keeps
 * `depth` WRITEs in flight on ernic0 (each its first packet alone, the rest as one super-frame;
 * one-packet WRITEs merged up to MERGED at a time) and sleeps in poll() for the ACKs; the
 * responder sleeps in poll() on ernic1, reads what came, and when the TAP has nothing more writes
 * the ACKs of the WRITEs completed since, merged. Each thread's own CPU time is its side's cost.
 */
struct pipe {
	int a, b, a2, b2; /* a2, b2: the second queues (TAP_FLOOR_VIA=mq), else -1 */
	unsigned packets, depth;
	double seconds, cpu_s[2];
	uint64_t writes;
	atomic_bool stop;
};

static bool wait_in(int fd, int fd2, int ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = fd2, .events = POLLIN } };

	return poll(p, fd2 >= 0 ? 2 : 1, ms) > 0;
}

/* A read of fd, else of fd2 (a second queue, or -1) when fd had nothing. */
static ssize_t read_either(int fd, int fd2)
{
	ssize_t r = read(fd, in, sizeof(in));

	if (r < 0 && errno == EAGAIN && fd2 >= 0)
		r = read(fd2, in, sizeof(in));
	return r;
}

static void *responder(void *arg)
{
	struct pipe *pp = arg;
	unsigned pkts = 0, acks = 0;
	double c0 = thread_cpu_s();

	while (!atomic_load(&pp->stop)) {
		ssize_t r = read_either(pp->b, pp->b2);

		if (r < 0 && errno == EAGAIN) {
			while (acks > 0) {
				unsigned m = acks < MERGED ? acks : MERGED;

				send_frame(pp->b, MAC_B, MAC_A, ACK, m);
				acks -= m;
			}
			wait_in(pp->b, pp->b2, 100);
			continue;
		}
		pkts += datagrams(r);
		acks += pkts / pp->packets;
		pkts %= pp->packets;
	}
	pp->cpu_s[1] = thread_cpu_s() - c0;
	return NULL;
}

static void pipelined(struct pipe *pp)
{
	unsigned inflight = 0, turn = 0;
	bool sending = true;
	double c0 = thread_cpu_s(), t0 = bench_now_s();

	while (sending || inflight > 0) {
		ssize_t r;

		while (sending && inflight < pp->depth) {
			int fd = pp->a2 >= 0 && turn++ % 2 ? pp->a2 : pp->a; /* mq: the queues in turn */

			if (pp->packets == 1) {
				unsigned m = pp->depth - inflight < MERGED ? pp->depth - inflight : MERGED;

				send_frame(fd, MAC_A, MAC_B, FIRST, m);
				inflight += m;
				continue;
			}
			send_frame(fd, MAC_A, MAC_B, FIRST, 1);
			send_frame(fd, MAC_A, MAC_B, MIDDLE, pp->packets - 1);
			inflight++;
		}
		ring_flush();
		r = read_either(pp->a, pp->a2);
		if (r < 0 && errno == EAGAIN) {
			if (!wait_in(pp->a, pp->a2, 2000)) {
				fprintf(stderr, "tap-floor-bench: frames lost on the bridge\n");
				exit(1);
			}
			continue;
		}
		{
			unsigned n = datagrams(r);

			inflight -= n < inflight ? n : inflight;
			pp->writes += n;
		}
		if (sending && bench_now_s() - t0 >= pp->seconds)
			sending = false;
	}
	pp->cpu_s[0] = thread_cpu_s() - c0;
	atomic_store(&pp->stop, true);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0, t0;
	char *end = NULL;
	unsigned long len = argc > 3 ? strtoul(argv[3], &end, 0) : 65536;
	unsigned packets = (unsigned)(len / 4096), frames_per_write = packets + 1;
	char *dend = NULL;
	unsigned long depth = argc > 4 ? strtoul(argv[4], &dend, 0) : 0;
	int a, b, a2 = -1, b2 = -1;
	uint64_t writes = 0;
	struct rusage r0, r1;
	double cpu_us, per_frame, side_s[2] = { 0, 0 }, req;
	FILE *csv;

	if ((end != NULL && *end != '\0') || (dend != NULL && *dend != '\0') || len < 4096 || len > 65536 ||
	    len % 4096 || depth > 64) {
		fprintf(stderr, "tap-floor-bench: a WRITE is 4096 to 65536 bytes, in whole 4 KiB packets; depth 0 to 64\n");
		return 2;
	}
	if (getenv("TAP_FLOOR_VIA") != NULL) {
		const char *v = getenv("TAP_FLOOR_VIA");

		via = strcmp(v, "packet") == 0 ? VIA_PACKET : strcmp(v, "ring") == 0 ? VIA_RING :
		      strcmp(v, "mq") == 0 ? VIA_MQ : VIA_TAP;
		if ((via == VIA_TAP && strcmp(v, "tap") != 0) || (via != VIA_TAP && depth == 0)) {
			fprintf(stderr, "tap-floor-bench: TAP_FLOOR_VIA is tap, packet, ring or mq (the last three with a depth)\n");
			return 2;
		}
	}
	if (via == VIA_MQ) {
		a = tap_open("mq0", true);
		a2 = tap_open("mq0", true);
		b = tap_open("mq1", true);
		b2 = tap_open("mq1", true);
	} else {
		a = via == VIA_TAP ? tap_open("ernic0", false) : packet_open("va", via == VIA_RING);
		b = tap_open("ernic1", false);
	}
	memset(buf + HDRS, 0x5a, sizeof(buf) - HDRS);
	/* the bridge learns both MACs first */
	send_frame(b, MAC_B, MAC_A, ACK, 1);
	send_frame(a, MAC_A, MAC_B, ACK, 1);
	ring_flush();
	usleep(100000);
	while (read_either(a, a2) > 0 || read_either(b, b2) > 0)
		;
	if (depth > 0) {
		struct pipe pp = { .a = a, .b = b, .a2 = a2, .b2 = b2, .packets = packets, .depth = (unsigned)depth, .seconds = seconds };
		pthread_t t;
		double frames, req_us, resp_us;

		if (pthread_create(&t, NULL, responder, &pp) != 0) {
			fprintf(stderr, "tap-floor-bench: no thread\n");
			return 1;
		}
		pipelined(&pp);
		pthread_join(t, NULL);
		frames = (double)pp.writes * frames_per_write;
		req_us = pp.cpu_s[0] * 1e6 / frames;
		resp_us = pp.cpu_s[1] * 1e6 / frames;
		printf("tap floor, two threads, %lu WRITEs in flight, the requester %s: %llu %lu-byte WRITEs (%u frames "
		       "each), the requester's calls %.3f us per frame, the responder's %.3f\n", depth,
		       via == VIA_TAP ? "on its TAP" : via == VIA_PACKET ? "on a packet socket" :
		       via == VIA_RING ? "on a transmit ring" : "on two queues of a multiqueue TAP",
		       (unsigned long long)pp.writes, len, frames_per_write, req_us, resp_us);
		if (argc > 2 && (csv = fopen(argv[2], "a")) != NULL) {
			fprintf(csv, "%.3f,%.3f,%.3f\n", req_us + resp_us, req_us, resp_us);
			fclose(csv);
		}
		return 0;
	}
	getrusage(RUSAGE_SELF, &r0);
	t0 = bench_now_s();
	do {
		for (int k = 0; k < 64; k++) {
			double m0 = bench_now_s(), m1, m2;

			if (packets == 1) {
				send_frame(a, MAC_A, MAC_B, FIRST, IN_FLIGHT);
				m1 = bench_now_s();
				take(b, IN_FLIGHT);
				send_frame(b, MAC_B, MAC_A, ACK, IN_FLIGHT);
				m2 = bench_now_s();
				take(a, IN_FLIGHT);
				writes += IN_FLIGHT;
			} else {
				send_frame(a, MAC_A, MAC_B, FIRST, 1);
				if (packets > 2)
					send_frame(a, MAC_A, MAC_B, MIDDLE, packets - 1);
				else
					send_frame(a, MAC_A, MAC_B, MIDDLE, 1);
				m1 = bench_now_s();
				take(b, packets);
				send_frame(b, MAC_B, MAC_A, ACK, 1);
				m2 = bench_now_s();
				take(a, 1);
				writes++;
			}
			side_s[0] += m1 - m0 + bench_now_s() - m2;
			side_s[1] += m2 - m1;
		}
	} while (bench_now_s() - t0 < seconds);
	getrusage(RUSAGE_SELF, &r1);
	cpu_us = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 +
		 (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
	per_frame = cpu_us / ((double)writes * frames_per_write);
	req = side_s[0] + side_s[1] > 0 ? per_frame * side_s[0] / (side_s[0] + side_s[1]) : 0;
	printf("tap floor: %llu %lu-byte WRITEs' system calls (%u frames each) through two TAPs and the bridge, "
	       "%.3f us of CPU per frame (%.1f%% of it in the kernel; %llu waits)\n",
	       (unsigned long long)writes, len, frames_per_write, per_frame,
	       100.0 * (double)((r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000 + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) /
		       cpu_us, (unsigned long long)waits);
	printf("tap floor: the requester's calls %.3f us per frame, the responder's %.3f\n", req, per_frame - req);
	if (argc > 2 && (csv = fopen(argv[2], "a")) != NULL) {
		fprintf(csv, "%.3f,%.3f,%.3f\n", per_frame, req, per_frame - req);
		fclose(csv);
	}
	return 0;
}
