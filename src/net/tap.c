/* TAP attachment; see tap.h. */
#include "net/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <linux/if_tun.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "net/net_switch.h"
#include "util/evloop.h"
#include "util/log.h"

#define TAP_MAX_FRAME 65536
#define TAP_READS_PER_WAKEUP 64

struct tap {
	char name[IFNAMSIZ];
	int fd;
	struct evloop *loop;
	struct ev_watch *watch;
	struct net_switch *sw;
	int port;
	struct tap_stats stats;
	uint8_t buf[TAP_MAX_FRAME];
};

static void tap_gone(struct tap *t, int err)
{
	LOG_WARN("tap %s: %s; the segment goes on without it", t->name, strerror(err));
	evloop_del_fd(t->loop, t->watch);
	t->watch = NULL;
	net_switch_detach(t->sw, t->port);
	t->port = -1;
	close(t->fd);
	t->fd = -1;
}

static void on_readable(void *arg, uint32_t events)
{
	struct tap *t = arg;

	for (int i = 0; i < TAP_READS_PER_WAKEUP && t->fd >= 0; i++) {
		ssize_t n = read(t->fd, t->buf, sizeof(t->buf));

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			tap_gone(t, n < 0 ? errno : ENODEV);
			return;
		}
		t->stats.rx_frames++;
		net_switch_input(t->sw, t->port, t->buf, (size_t)n);
	}
	(void)events;
}

static void deliver(void *ctx, const uint8_t *frame, size_t len)
{
	struct tap *t = ctx;

	if (t->fd < 0)
		return;
	if (write(t->fd, frame, len) != (ssize_t)len) {
		/* A full queue (nobody reads the host side) drops, as a wire would; a vanished device detaches. */
		if (errno == EIO || errno == EBADFD || errno == ENODEV)
			tap_gone(t, errno);
		else
			t->stats.tx_dropped++;
		return;
	}
	t->stats.tx_frames++;
}

struct tap *tap_open(const char *ifname, struct evloop *loop, struct net_switch *sw, char *err, size_t errlen)
{
	struct tap *t;
	struct ifreq ifr = { 0 };
	struct net_port port = { .name = "tap", .deliver = deliver };

	if (strlen(ifname) >= IFNAMSIZ) {
		err_set(err, errlen, "tap %s: name too long", ifname);
		return NULL;
	}
	if (if_nametoindex(ifname) == 0) {
		err_set(err, errlen, "tap %s: no such interface (create it first, e.g. ip tuntap add %s mode tap)",
		     ifname, ifname);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%s", ifname);
	t->loop = loop;
	t->sw = sw;
	t->port = -1;
	t->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd < 0) {
		err_set(err, errlen, "tap %s: /dev/net/tun: %s", ifname, strerror(errno));
		goto out;
	}
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	if (ioctl(t->fd, TUNSETIFF, &ifr) < 0) {
		err_set(err, errlen, "tap %s: cannot attach: %s", ifname, strerror(errno));
		goto out;
	}
	port.ctx = t;
	t->port = net_switch_attach(sw, &port);
	if (t->port < 0) {
		err_set(err, errlen, "tap %s: the segment has no free port", ifname);
		goto out;
	}
	t->watch = evloop_add_fd(loop, t->fd, EPOLLIN, on_readable, t);
	if (t->watch == NULL) {
		err_set(err, errlen, "tap %s: cannot watch it", ifname);
		goto out;
	}
	LOG_INFO("tap %s: joined to the segment", ifname);
	return t;
out:
	tap_close(t);
	return NULL;
}

void tap_close(struct tap *t)
{
	if (t == NULL)
		return;
	if (t->watch)
		evloop_del_fd(t->loop, t->watch);
	if (t->port >= 0)
		net_switch_detach(t->sw, t->port);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

const struct tap_stats *tap_stats(const struct tap *t)
{
	return &t->stats;
}
