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
#define RESEND_S   0.2            /* serve mode: nothing acknowledged for this long, send again */

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
	unsigned peer_wscale;   /* the client's window scale, when both sides offered one */
	bool wscale;
	/* serve mode (http_floor_serve): each request answered by a head and a body, by reference */
	const volatile sig_atomic_t *quit;
	const uint8_t *body;
	size_t body_len;
	char head[96];
	size_t head_len;
	bool answering;
	uint32_t ans_start, snd_una, peer_wnd;
	double progress_s;      /* when snd_una last moved */
	uint64_t resent;
	uint8_t in[70000];
	uint8_t out[sizeof(struct virtio_net_hdr) + 54 + 8 + MAX_ANSWER];
	const char *err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

/*
 * One TCP segment of ours: headers built in f->out, the payload from the iovecs (len bytes in
 * all), one writev. A SYN carries the MSS, and a window scale when the client offered one.
 */
static int send_segv(struct floor *f, unsigned flags, const struct iovec *pl, int npl, size_t payload)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)f->out;
	uint8_t *e = f->out + sizeof(*vh), *ip = e + 14, *tcp = ip + 20;
	size_t thl = (flags & 0x02) ? (f->wscale ? 28 : 24) : 20, tot = 20 + thl + payload;
	struct iovec iov[4];
	uint32_t ps;

	if (npl > 3)
		return -1;
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
	if (thl >= 24) {
		tcp[20] = 2, tcp[21] = 4;
		put16(tcp + 22, MSS);
	}
	if (thl == 28) { /* NOP, window scale 0: we take little */
		tcp[24] = 1, tcp[25] = 3, tcp[26] = 3, tcp[27] = 0;
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
	iov[0].iov_base = f->out;
	iov[0].iov_len = sizeof(*vh) + 14 + 20 + thl;
	for (int i = 0; i < npl; i++)
		iov[1 + i] = pl[i];
	if (writev(f->fd, iov, 1 + npl) < 0) {
		f->err = "write to the TAP";
		return -1;
	}
	f->snd_nxt += (uint32_t)payload + ((flags & 0x03) ? 1 : 0); /* SYN and FIN count one */
	return 0;
}

/* One segment whose payload (bytes of 'a') is already in place after the headers. */
static int send_seg(struct floor *f, unsigned flags, size_t payload)
{
	struct iovec pl = { f->out + sizeof(struct virtio_net_hdr) + 54, payload };

	return send_segv(f, flags, &pl, payload ? 1 : 0, payload);
}

/*
 * Serve mode: send what the client's window takes of the answer in flight (the head, then the
 * body where it lies), in super-segments of up to 64 KiB.
 */
static void pump(struct floor *f)
{
	uint32_t end = f->ans_start + (uint32_t)(f->head_len + f->body_len);

	while (f->answering && (int32_t)(end - f->snd_nxt) > 0 && f->err == NULL) {
		uint32_t inflight = f->snd_nxt - f->snd_una, room, n;
		size_t off = f->snd_nxt - f->ans_start;
		struct iovec pl[2];
		int np = 0;

		if (inflight >= f->peer_wnd)
			return;
		room = f->peer_wnd - inflight;
		n = end - f->snd_nxt;
		if (n > room)
			n = room;
		if (n > MAX_ANSWER - 8)
			n = MAX_ANSWER - 8;
		if (n < MSS && n < end - f->snd_nxt && inflight > 0)
			return; /* wait for a segment's worth of window */
		if (off < f->head_len) {
			size_t h = f->head_len - off < n ? f->head_len - off : n;

			pl[np++] = (struct iovec){ f->head + off, h };
			if (n > h)
				pl[np++] = (struct iovec){ (void *)(f->body), n - h };
		} else {
			pl[np++] = (struct iovec){ (void *)(f->body + (off - f->head_len)), n };
		}
		send_segv(f, 0x18, pl, np, n);
	}
}

/* Serve mode: an acknowledgement and a window from the client. */
static void ack_in(struct floor *f, const uint8_t *tcp)
{
	uint32_t ack = get32(tcp + 4 + 4);

	if (!(tcp[13] & 0x10))
		return;
	if ((int32_t)(ack - f->snd_una) > 0 && (int32_t)(ack - f->snd_nxt) <= 0) {
		f->snd_una = ack;
		f->progress_s = now_s();
	}
	f->peer_wnd = (uint32_t)get16(tcp + 14) << f->peer_wscale;
	if (f->answering && f->snd_una == f->ans_start + (uint32_t)(f->head_len + f->body_len))
		f->answering = false;
}

/* The window scale a SYN offers, or -1. */
static int syn_wscale(const uint8_t *tcp, size_t thl)
{
	for (size_t i = 20; i < thl;) {
		if (tcp[i] == 0)
			break;
		if (tcp[i] == 1) {
			i++;
			continue;
		}
		if (i + 1 >= thl || tcp[i + 1] < 2 || i + tcp[i + 1] > thl)
			break;
		if (tcp[i] == 3 && tcp[i + 1] == 3)
			return tcp[i + 2] > 14 ? 14 : tcp[i + 2];
		i += tcp[i + 1];
	}
	return -1;
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
		f->snd_una = ISS + 1;
		f->partial = 0;
		f->answering = false;
		int ws = syn_wscale(tcp, thl);

		f->wscale = ws >= 0;
		f->peer_wscale = ws >= 0 ? (unsigned)ws : 0;
		f->peer_wnd = get16(tcp + 14);
		send_seg(f, 0x12, 0);
		return;
	}
	if (get16(tcp) != f->peer_port || get32(ip + 12) != f->peer_ip)
		return;
	if (f->body != NULL) { /* serve mode: a request is one arrival ending its head */
		ack_in(f, tcp);
		if (dlen > 0 && get32(tcp + 4) == f->rcv_nxt) {
			f->rcv_nxt += (uint32_t)dlen;
			if (dlen >= 4 && memcmp(tcp + thl + dlen - 4, "\r\n\r\n", 4) == 0 && !f->answering) {
				f->answering = true;
				f->ans_start = f->snd_nxt;
				f->progress_s = now_s();
			}
			if (!f->answering)
				send_seg(f, 0x10, 0);
		} else if (dlen > 0) {
			send_seg(f, 0x10, 0); /* a segment again or out of order: say where we are */
		}
		if (flags & 0x01) {
			f->rcv_nxt++;
			send_seg(f, 0x11, 0);
		}
		return;
	}
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

/* Serve mode, after each wake-up: more of the answer, or all of it again from the first byte
 * not acknowledged when nothing has been for RESEND_S (a TAP loses nothing unless a queue is full). */
static void serve_tick(struct floor *f)
{
	if (f->answering && f->snd_nxt != f->snd_una && now_s() - f->progress_s > RESEND_S) {
		f->snd_nxt = f->snd_una;
		f->progress_s = now_s();
		f->resent++;
	}
	pump(f);
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
	while (!atomic_load(&f->stop) && !(f->quit && *f->quit) && f->err == NULL) {
		if (epoll_wait(ep, &got, 1, 50) <= 0) {
			if (f->body != NULL)
				serve_tick(f);
			continue;
		}
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
		if (f->body != NULL)
			serve_tick(f);
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

/* The TAP opened as the server opens it. */
static int open_tap(struct floor *f, const char *tap)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap);
	f->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (f->fd < 0 || ioctl(f->fd, TUNSETIFF, &ifr) < 0 ||
	    ioctl(f->fd, TUNSETOFFLOAD, (unsigned long)(TUN_F_CSUM | TUN_F_TSO4)) < 0) {
		fprintf(stderr, "http floor: %s: %s\n", tap, strerror(errno));
		return -1;
	}
	return 0;
}

int http_floor_run(const char *tap, uint32_t ip, uint16_t port, size_t request_len, size_t answer_len,
		   unsigned qd, double seconds, struct http_floor_result *out)
{
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
	if (open_tap(f, tap) < 0)
		goto out;
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

int http_floor_serve(const char *tap, uint32_t ip, uint16_t port, size_t body_len, const volatile sig_atomic_t *quit)
{
	struct floor *f = calloc(1, sizeof(*f));
	uint8_t *body = NULL;
	int rc = -1;

	if (f == NULL)
		return -1;
	f->fd = -1;
	body = malloc(body_len ? body_len : 1);
	if (body == NULL)
		goto out;
	/* bytes that differ from page to page, in memory of our own, as the store keeps an object */
	for (size_t i = 0, x = 88172645463325252ull; i < body_len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		body[i] = (uint8_t)x;
	}
	f->ip = ip;
	f->port = port;
	f->body = body;
	f->body_len = body_len;
	f->quit = quit;
	f->head_len = (size_t)snprintf(f->head, sizeof(f->head),
				       "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", body_len);
	s3_endpoint_mac(ip, f->mac);
	if (open_tap(f, tap) < 0)
		goto out;
	responder(f);
	if (f->err) {
		fprintf(stderr, "http floor: %s: %s\n", f->err, strerror(errno));
		goto out;
	}
	if (f->resent)
		fprintf(stderr, "http floor: sent again from the first unacknowledged byte %llu times\n",
			(unsigned long long)f->resent);
	rc = 0;
out:
	if (f->fd >= 0)
		close(f->fd);
	free(body);
	free(f);
	return rc;
}
