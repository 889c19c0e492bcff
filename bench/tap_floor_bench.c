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
 * scale benchmark counts them, and appends it to the CSV given.
 *
 * Usage: tap-floor-bench [seconds] [csv-file] [write-bytes: 4096 .. 65536, whole 4 KiB packets]
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/uio.h>
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
static uint8_t buf[HDRS + MERGED * MIDDLE], in[70000];
static uint64_t waits; /* reads that found nothing yet (the bridge's softirq had not run) */

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static int tap_open(const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
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
	static unsigned id;
	struct virtio_net_hdr vh = { 0 };
	struct iovec iov[2] = { { &vh, sizeof(vh) }, { buf, HDRS + udp_payload * n } };
	uint8_t *ip = buf + 14;

	headers(buf, from, to, udp_payload, n, id);
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
		put16(buf + 34 + 6, sum);
	}
	if (n > 1) {
		vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		vh.hdr_len = HDRS;
		vh.gso_size = (uint16_t)udp_payload;
	}
	if (writev(fd, iov, 2) < 0) {
		perror("tap-floor-bench: write");
		exit(1);
	}
}

/* Read what fd has until want datagrams came (a super-frame counts as the datagrams it holds). */
static void take(int fd, unsigned want)
{
	unsigned got = 0;

	while (got < want) {
		ssize_t r = read(fd, in, sizeof(in));
		struct virtio_net_hdr vh;

		if (r < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 2000) != 1) {
				fprintf(stderr, "tap-floor-bench: frames lost on the bridge\n");
				exit(1);
			}
			waits++;
			continue;
		}
		if (r < (ssize_t)(sizeof(vh) + HDRS)) {
			perror("tap-floor-bench: read");
			exit(1);
		}
		memcpy(&vh, in, sizeof(vh));
		got += vh.gso_type == VIRTIO_NET_HDR_GSO_UDP_L4 && vh.gso_size
			       ? (unsigned)((r - (ssize_t)sizeof(vh) - HDRS + vh.gso_size - 1) / vh.gso_size)
			       : 1;
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0, t0;
	char *end = NULL;
	unsigned long len = argc > 3 ? strtoul(argv[3], &end, 0) : 65536;
	unsigned packets = (unsigned)(len / 4096), frames_per_write = packets + 1;
	int a, b;
	uint64_t writes = 0;
	struct rusage r0, r1;
	double cpu_us, per_frame;
	FILE *csv;

	if ((end != NULL && *end != '\0') || len < 4096 || len > 65536 || len % 4096) {
		fprintf(stderr, "tap-floor-bench: a WRITE is 4096 to 65536 bytes, in whole 4 KiB packets\n");
		return 2;
	}
	a = tap_open("ernic0");
	b = tap_open("ernic1");
	memset(buf + HDRS, 0x5a, sizeof(buf) - HDRS);
	/* the bridge learns both MACs first */
	send_frame(b, MAC_B, MAC_A, ACK, 1);
	send_frame(a, MAC_A, MAC_B, ACK, 1);
	usleep(100000);
	while (read(a, in, sizeof(in)) > 0 || read(b, in, sizeof(in)) > 0)
		;
	getrusage(RUSAGE_SELF, &r0);
	t0 = bench_now_s();
	do {
		for (int k = 0; k < 64; k++) {
			if (packets == 1) {
				send_frame(a, MAC_A, MAC_B, FIRST, IN_FLIGHT);
				take(b, IN_FLIGHT);
				send_frame(b, MAC_B, MAC_A, ACK, IN_FLIGHT);
				take(a, IN_FLIGHT);
				writes += IN_FLIGHT;
				continue;
			}
			send_frame(a, MAC_A, MAC_B, FIRST, 1);
			if (packets > 2)
				send_frame(a, MAC_A, MAC_B, MIDDLE, packets - 1);
			else
				send_frame(a, MAC_A, MAC_B, MIDDLE, 1);
			take(b, packets);
			send_frame(b, MAC_B, MAC_A, ACK, 1);
			take(a, 1);
			writes++;
		}
	} while (bench_now_s() - t0 < seconds);
	getrusage(RUSAGE_SELF, &r1);
	cpu_us = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 +
		 (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
	per_frame = cpu_us / ((double)writes * frames_per_write);
	printf("tap floor: %llu %lu-byte WRITEs' system calls (%u frames each) through two TAPs and the bridge, "
	       "%.3f us of CPU per frame (%.1f%% of it in the kernel; %llu waits)\n",
	       (unsigned long long)writes, len, frames_per_write, per_frame,
	       100.0 * (double)((r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000 + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) /
		       cpu_us, (unsigned long long)waits);
	if (argc > 2 && (csv = fopen(argv[2], "a")) != NULL) {
		fprintf(csv, "%.3f\n", per_frame);
		fclose(csv);
	}
	return 0;
}
