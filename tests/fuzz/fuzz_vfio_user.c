/*
 * fuzz-vfio-user: a client's message stream into the real server
 * (vfu_server.c) with the real PCI function and ionic device behind it, over
 * a real UNIX socket, in the fuzzer's process.
 *
 * The server, device and event loop are made once; each input is one client
 * connection: connect, send the input as the stream of messages it holds,
 * close. The server drops the client at the end (DMA mappings released,
 * interrupt eventfds closed, device reset), as it does when QEMU goes away,
 * so every input starts from the same state.
 *
 * The input is cut where its own headers say: a 16-byte vfio-user header,
 * then the rest of the `size` it announces (less when the input ends
 * first). Each piece is one sendmsg; DMA_MAP pieces carry a 1 MiB memfd and
 * SET_IRQS pieces with DATA_EVENTFD carry `count` eventfds (at most 8) as
 * SCM_RIGHTS, as QEMU sends them. A header whose size is under 16 is sent
 * as the 16 bytes alone: the server must drop the client. After each piece
 * the event loop runs one batch and the replies are read and discarded.
 * A REGION_READ for more than 64 KiB is sent asking for 64 KiB: the server
 * sends a reply whole, and with the fuzzer as its only thread nobody reads
 * while it writes, so a reply over the socket's buffer would time out (and
 * drop the client) instead of exercising anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "ionic/ionic_pci.h"
#include "util/evloop.h"
#include "util/log.h"
#include "vfio_user/vfu_proto.h"
#include "vfio_user/vfu_server.h"

#define MEMFD_SIZE (1u << 20)
#define NEVENTFD 8
#define MAX_READ (64u << 10)

static struct {
	struct evloop *loop;
	struct ionic_pci *nic;
	struct vfu_server *srv;
	char path[108];
	int always;          /* an eventfd that is always readable: epoll_wait never blocks */
	struct ev_watch *always_w;
	int memfd;
	int evfd[NEVENTFD];
} S;

static void on_always(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
}

static void stop(void *arg)
{
	evloop_stop(arg);
}

/* One batch of the server's events, then what it deferred. */
static void pump(void)
{
	if (evloop_defer(S.loop, stop, S.loop) || evloop_run(S.loop))
		abort();
}

static void cleanup(void)
{
	vfu_server_stop(S.srv);
	ionic_pci_free(S.nic);
	evloop_del_fd(S.loop, S.always_w);
	evloop_free(S.loop);
	unlink(S.path);
}

static void init_once(void)
{
	struct ionic_dev_config cfg = { .mac = { 0x02, 0x45, 0x52, 0x4e, 0x49, 0x43 } };
	char err[256];
	uint64_t one = 1;

	log_set_level(LOG_LEVEL_ERROR);
	S.loop = evloop_new();
	snprintf(S.path, sizeof(S.path), "/tmp/ernic-fuzz-vfu-%d.sock", (int)getpid());
	S.nic = ionic_pci_new(&cfg, true); /* BAR2 offered for mapping: GET_REGION_INFO's capability path */
	if (S.loop == NULL || S.nic == NULL)
		abort();
	S.srv = vfu_server_start(S.loop, S.path, ionic_pci_vfu(S.nic), err, sizeof(err));
	if (S.srv == NULL) {
		fprintf(stderr, "fuzz-vfio-user: %s\n", err);
		abort();
	}
	ionic_pci_set_server(S.nic, S.srv);
	ionic_pci_set_loop(S.nic, S.loop);
	/* As the server does: a slice of the device's long work on every turn. */
	if (evloop_add_poller(S.loop, ionic_pci_work, S.nic) == NULL)
		abort();
	S.always = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (S.always < 0 || write(S.always, &one, sizeof(one)) != sizeof(one))
		abort();
	S.always_w = evloop_add_fd(S.loop, S.always, EPOLLIN, on_always, NULL);
	S.memfd = memfd_create("fuzz-guest", MFD_CLOEXEC);
	if (S.always_w == NULL || S.memfd < 0 || ftruncate(S.memfd, MEMFD_SIZE))
		abort();
	for (int i = 0; i < NEVENTFD; i++) {
		S.evfd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (S.evfd[i] < 0)
			abort();
	}
	atexit(cleanup);
}

/* Read and drop whatever the server sent; false once it closed the connection. */
static bool drain(int fd)
{
	uint8_t buf[65536];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		return false;
	}
}

/* Send one piece (with its descriptors on the first byte), pumping the server while the socket is full. */
static bool send_piece(int fd, const uint8_t *p, size_t len, const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * NEVENTFD)];
		struct cmsghdr align;
	} ctl;
	size_t off = 0;

	while (off < len) {
		struct iovec iov = { .iov_base = (void *)(p + off), .iov_len = len - off };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (off == 0 && nfds) {
			struct cmsghdr *cm;

			memset(&ctl, 0, sizeof(ctl));
			msg.msg_control = ctl.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
		}
		n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		pump();
		if (!drain(fd))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t pos = 0;
	int fd;

	if (S.loop == NULL)
		init_once();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, S.path, strlen(S.path) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		abort();
	pump(); /* accept */
	while (pos < size) {
		struct vfu_hdr h;
		size_t n = size - pos;
		const int *fds = NULL;
		unsigned nfds = 0;

		memset(&h, 0, sizeof(h));
		memcpy(&h, data + pos, n < sizeof(h) ? n : sizeof(h));
		if (h.size >= sizeof(h) && h.size < n)
			n = h.size;
		else if (h.size < sizeof(h) && n > sizeof(h))
			n = sizeof(h);
		if (h.command == VFU_CMD_DMA_MAP) {
			fds = &S.memfd;
			nfds = 1;
		} else if (h.command == VFU_CMD_DEVICE_SET_IRQS && n >= sizeof(h) + sizeof(struct vfu_irq_set)) {
			struct vfu_irq_set s;

			memcpy(&s, data + pos + sizeof(h), sizeof(s));
			if (s.flags & VFU_IRQ_SET_DATA_EVENTFD) {
				fds = S.evfd;
				nfds = s.count < NEVENTFD ? s.count : NEVENTFD;
			}
		}
		if (h.command == VFU_CMD_REGION_READ && n >= sizeof(h) + sizeof(struct vfu_region_rw)) {
			static uint8_t piece[sizeof(struct vfu_hdr) + sizeof(struct vfu_region_rw)];
			struct vfu_region_rw rw;

			memcpy(&rw, data + pos + sizeof(h), sizeof(rw));
			if (rw.count > MAX_READ && n == sizeof(piece)) {
				rw.count = MAX_READ;
				memcpy(piece, data + pos, sizeof(h));
				memcpy(piece + sizeof(h), &rw, sizeof(rw));
				if (!send_piece(fd, piece, n, NULL, 0))
					break;
				pos += n;
				pump();
				if (!drain(fd))
					break;
				continue;
			}
		}
		if (!send_piece(fd, data + pos, n, fds, nfds))
			break;
		pos += n;
		pump();
		if (!drain(fd))
			break;
	}
	close(fd);
	pump(); /* the server sees the hang-up and drops the client */
	return 0;
}
