/*
 * The kernel's floor under an S3 request over a TAP (see http_floor.h).
 *
 * The responder is as little as a TCP server can be and still be one: it answers ARP for its
 * address, a SYN with a SYN-ACK (MSS only), each arrival of data with the answers it completes,
 * and a FIN with a FIN; it trusts the kernel's in-order delivery (a TAP loses nothing here) and
 * keeps no timers. It reads and writes the TAP the way the server does: woken by epoll, reads
 * until the queue is empty, one write per arrival (a TCPv4 super-frame with its checksum left to
 * the kernel when the answers pass one segment). Every cycle it spends is the kernel's path
 * (the TAP's read and write, and the client's TCP, which a TAP write runs in the writer's system
 * call) plus a few hundred instructions of its own.
 */
#include "http_floor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "util/backend_opts.h" /* s3_endpoint_mac(): the server's MAC, so the client's ARP entry stays right */

#define MSS        1460
#define ISS        0x10000000u
#define MAX_ANSWER (65535 - 40)  /* an IPv4 packet's payload after the IPv4 and TCP headers */

struct floor {
	int fd;
	uint32_t ip;
	uint16_t port;
	uint8_t mac[6];
	size_t request_len, answer_len;
	atomic_bool stop;
	atomic_int tid;
	/* the one connection */
	uint8_t peer_mac[6];
	uint32_t peer_ip;
	uint16_t peer_port;
	uint32_t snd_nxt, rcv_nxt;
	size_t partial;         /* bytes of a request that has not all come */
	uint64_t answered;
	uint8_t in[70000];
	uint8_t out[sizeof(struct virtio_net_hdr) + 54 + MAX_ANSWER];
	const char *err;
};

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }
static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }

static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += get16(p + i);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* One TCP segment of ours with payload bytes of 'a' (already in place after the headers). */
static int send_seg(struct floor *f, unsigned flags, size_t payload)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)f->out;
	uint8_t *e = f->out + sizeof(*vh), *ip = e + 14, *tcp = ip + 20;
	size_t thl = (flags & 0x02) ? 24 : 20, tot = 20 + thl + payload;
	uint32_t ps;

	memset(vh, 0, sizeof(*vh));
	memcpy(e, f->peer_mac, 6);
	memcpy(e + 6, f->mac, 6);
	put16(e + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (unsigned)tot);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, f->ip);
	put32(ip + 16, f->peer_ip);
	put16(ip + 10, (uint16_t)~fold(sum16(0, ip, 20)));
	put16(tcp, f->port);
	put16(tcp + 2, f->peer_port);
	put32(tcp + 4, f->snd_nxt);
	put32(tcp + 8, f->rcv_nxt);
	tcp[12] = (uint8_t)((thl / 4) << 4);
	tcp[13] = (uint8_t)flags;
	put16(tcp + 14, 65535);
	put16(tcp + 16, 0);
	put16(tcp + 18, 0);
	if (thl == 24) {
		tcp[20] = 2, tcp[21] = 4;
		put16(tcp + 22, MSS);
	}
	/* the checksum left to the kernel, as the server leaves it: the pseudo-header's sum in place */
	ps = sum16(0, ip + 12, 8) + 6 + (uint32_t)(thl + payload);
	put16(tcp + 16, fold(ps));
	vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh->csum_start = 34;
	vh->csum_offset = 16;
	if (payload > MSS) {
		vh->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
		vh->gso_size = MSS;
		vh->hdr_len = (uint16_t)(14 + 20 + thl);
	}
	if (write(f->fd, f->out, sizeof(*vh) + 14 + tot) < 0) {
		f->err = "write to the TAP";
		return -1;
	}
	f->snd_nxt += (uint32_t)payload + ((flags & 0x03) ? 1 : 0); /* SYN and FIN count one */
	return 0;
}

static void arp(struct floor *f, const uint8_t *e, size_t n)
{
	const uint8_t *a = e + 14;
	uint8_t *o = f->out + sizeof(struct virtio_net_hdr), *r = o + 14;

	if (n < 42 || get16(a + 6) != 1 || get32(a + 24) != f->ip)
		return;
	memset(f->out, 0, sizeof(struct virtio_net_hdr));
	memcpy(o, e + 6, 6);
	memcpy(o + 6, f->mac, 6);
	put16(o + 12, 0x0806);
	memcpy(r, a, 6);
	put16(r + 6, 2);
	memcpy(r + 8, f->mac, 6);
	put32(r + 14, f->ip);
	memcpy(r + 18, a + 8, 10); /* the asker's MAC and address */
	memset(r + 28, 0, 60 - 42);
	if (write(f->fd, f->out, sizeof(struct virtio_net_hdr) + 60) < 0)
		f->err = "write to the TAP";
}

static void tcp_in(struct floor *f, const uint8_t *e, size_t n)
{
	const uint8_t *ip = e + 14, *tcp;
	size_t ihl, tot, thl, dlen;
	unsigned flags;

	if (n < 54 || ip[9] != 6 || get32(ip + 16) != f->ip)
		return;
	ihl = (size_t)(ip[0] & 15) * 4;
	tot = get16(ip + 2);
	tcp = ip + ihl;
	if (ihl < 20 || tot > n - 14 || ihl + 20 > tot || get16(tcp + 2) != f->port)
		return;
	thl = (size_t)(tcp[12] >> 4) * 4;
	if (thl < 20 || ihl + thl > tot)
		return;
	dlen = tot - ihl - thl;
	flags = tcp[13];
	if (flags & 0x02) { /* SYN: a new connection, the only one */
		memcpy(f->peer_mac, e + 6, 6);
		f->peer_ip = get32(ip + 12);
		f->peer_port = (uint16_t)get16(tcp);
		f->rcv_nxt = get32(tcp + 4) + 1;
		f->snd_nxt = ISS;
		f->partial = 0;
		send_seg(f, 0x12, 0);
		return;
	}
	if (get16(tcp) != f->peer_port || get32(ip + 12) != f->peer_ip)
		return;
	if (dlen > 0) {
		size_t whole = (f->partial + dlen) / f->request_len, bytes;

		f->partial = (f->partial + dlen) % f->request_len;
		f->rcv_nxt += (uint32_t)dlen;
		while (whole > 0) {
			size_t k = whole * f->answer_len <= MAX_ANSWER ? whole : MAX_ANSWER / f->answer_len;

			bytes = k * f->answer_len;
			memset(f->out + sizeof(struct virtio_net_hdr) + 54, 'a', bytes);
			if (send_seg(f, 0x18, bytes) < 0)
				return;
			f->answered += k;
			whole -= k;
		}
	}
	if (flags & 0x01) {
		f->rcv_nxt++;
		send_seg(f, 0x11, 0);
	}
}

static void *responder(void *arg)
{
	struct floor *f = arg;
	struct epoll_event ev = { .events = EPOLLIN }, got;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	atomic_store(&f->tid, (int)syscall(SYS_gettid));
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, f->fd, &ev) < 0) {
		f->err = "epoll";
		return NULL;
	}
	while (!atomic_load(&f->stop) && f->err == NULL) {
		if (epoll_wait(ep, &got, 1, 50) <= 0)
			continue;
		for (;;) {
			ssize_t r = read(f->fd, f->in, sizeof(f->in));
			const uint8_t *e = f->in + sizeof(struct virtio_net_hdr);
			size_t n;

			if (r < 0 && errno == EINTR)
				continue;
			if (r < (ssize_t)(sizeof(struct virtio_net_hdr) + 14))
				break;
			n = (size_t)r - sizeof(struct virtio_net_hdr);
			if (get16(e + 12) == 0x0806)
				arp(f, e, n);
			else if (get16(e + 12) == 0x0800)
				tcp_in(f, e, n);
		}
	}
	close(ep);
	return NULL;
}

/* A thread's CPU time so far, in ns: all of it, and the user-space part. */
static void thread_cpu(int tid, uint64_t *all, uint64_t *user)
{
	char dir[48];

	snprintf(dir, sizeof(dir), "/proc/self/task/%d", tid);
	*all = bench_schedstat_ns(dir);
	*user = bench_utime_ns(dir);
}

static int client(struct floor *f, unsigned qd, double seconds, struct http_floor_result *out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(f->port), .sin_addr.s_addr = htonl(f->ip) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	char *req = malloc(f->request_len), *ans = malloc(f->answer_len);
	uint64_t n = 0, sent = 0, all0, user0, all1, user1;
	double t0, t;
	bool more = true;
	int rc = -1;

	if (fd < 0 || req == NULL || ans == NULL)
		goto out;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("http floor: connect");
		goto out;
	}
	memset(req, 'q', f->request_len);
	thread_cpu(atomic_load(&f->tid), &all0, &user0);
	t0 = bench_now_s();
	for (; sent < qd; sent++)
		if (send(fd, req, f->request_len, MSG_NOSIGNAL) != (ssize_t)f->request_len)
			goto out;
	while (n < sent) {
		if (recv(fd, ans, f->answer_len, MSG_WAITALL) != (ssize_t)f->answer_len) {
			perror("http floor: recv");
			goto out;
		}
		n++;
		if ((n & 15) == 0)
			more = bench_now_s() - t0 < seconds;
		if (more) {
			if (send(fd, req, f->request_len, MSG_NOSIGNAL) != (ssize_t)f->request_len)
				goto out;
			sent++;
		}
	}
	t = bench_now_s();
	thread_cpu(atomic_load(&f->tid), &all1, &user1);
	out->ops_per_s = (double)n / (t - t0);
	out->us_per_op = (double)(all1 - all0) / 1e3 / (double)n;
	out->user_us_per_op = (double)(user1 - user0) / 1e3 / (double)n;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(req);
	free(ans);
	return rc;
}

int http_floor_run(const char *tap, uint32_t ip, uint16_t port, size_t request_len, size_t answer_len,
		   unsigned qd, double seconds, struct http_floor_result *out)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	struct floor *f = calloc(1, sizeof(*f));
	pthread_t th;
	int rc = -1;

	if (f == NULL)
		return -1;
	f->fd = -1;
	if (request_len == 0 || answer_len == 0 || answer_len > MAX_ANSWER)
		goto out;
	f->ip = ip;
	f->port = port;
	f->request_len = request_len;
	f->answer_len = answer_len;
	s3_endpoint_mac(ip, f->mac);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap);
	f->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (f->fd < 0 || ioctl(f->fd, TUNSETIFF, &ifr) < 0 ||
	    ioctl(f->fd, TUNSETOFFLOAD, (unsigned long)(TUN_F_CSUM | TUN_F_TSO4)) < 0) {
		fprintf(stderr, "http floor: %s: %s\n", tap, strerror(errno));
		goto out;
	}
	if (pthread_create(&th, NULL, responder, f) != 0)
		goto out;
	while (atomic_load(&f->tid) == 0)
		usleep(1000);
	rc = client(f, qd, seconds, out);
	usleep(20000); /* the FIN answered */
	atomic_store(&f->stop, true);
	pthread_join(th, NULL);
	if (f->err) {
		fprintf(stderr, "http floor: %s: %s\n", f->err, strerror(errno));
		rc = -1;
	}
out:
	if (f->fd >= 0)
		close(f->fd);
	free(f);
	return rc;
}
