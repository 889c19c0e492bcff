/* Test vfio-user client; see vfu_client.h. */
#include "vfu_client.h"

#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int vfc_connect(struct vfc *c, const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long deadline = now_ms() + timeout_ms;

	memset(c, 0, sizeof(*c));
	c->timeout_ms = 10000;
	c->next_id = 1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	for (;;) {
		c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0)
			return -errno;
		if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return 0;
		close(c->fd);
		c->fd = -1;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(20000);
	}
}

void vfc_close(struct vfc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int vfc_send_raw(struct vfc *c, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 64)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > 64)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *cm;

		msg.msg_control = ctl.b;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	if ((size_t)n < len) { /* the rest without descriptors */
		const uint8_t *p = (const uint8_t *)buf + n;
		size_t left = len - (size_t)n;

		while (left) {
			n = send(c->fd, p, left, MSG_NOSIGNAL);
			if (n < 0)
				return -errno;
			p += n;
			left -= (size_t)n;
		}
	}
	return 0;
}

int vfc_send(struct vfc *c, uint16_t cmd, uint32_t flags, const void *payload, size_t len,
	     const int *fds, unsigned nfds)
{
	struct vfu_hdr h = { .msg_id = c->next_id++, .command = cmd, .flags = flags,
			     .size = (uint32_t)(sizeof(h) + len) };
	uint8_t *buf = malloc(sizeof(h) + len);
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	rc = vfc_send_raw(c, buf, sizeof(h) + len, fds, nfds);
	free(buf);
	return rc ? rc : h.msg_id;
}

/* Read exactly len bytes; descriptors that come along go to rfds (up to maxfds), the rest are closed. */
static int read_full(struct vfc *c, void *buf, size_t len, int *rfds, unsigned maxfds, unsigned *nrfds)
{
	uint8_t *p = buf;
	long deadline = now_ms() + c->timeout_ms;

	while (len) {
		union {
			char b[CMSG_SPACE(sizeof(int) * 16)];
			struct cmsghdr align;
		} ctl;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		struct iovec iov = { .iov_base = p, .iov_len = len };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
				      .msg_controllen = sizeof(ctl.b) };
		long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			int *fds = (int *)CMSG_DATA(cm);
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < k; i++) {
				if (nrfds && *nrfds < maxfds)
					rfds[(*nrfds)++] = fds[i];
				else
					close(fds[i]);
			}
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int vfc_recv_fds(struct vfc *c, struct vfu_hdr *h, void *buf, size_t cap, size_t *len, int *rfds, unsigned maxfds,
		 unsigned *nrfds)
{
	size_t plen;
	uint8_t *tmp;
	int rc;

	if (nrfds)
		*nrfds = 0;
	rc = read_full(c, h, sizeof(*h), rfds, maxfds, nrfds);
	if (rc)
		return rc;
	if (h->size < sizeof(*h) || h->size > VFU_MAX_MSG_SIZE)
		return -EPROTO;
	plen = h->size - sizeof(*h);
	tmp = malloc(plen ? plen : 1);
	if (tmp == NULL)
		return -ENOMEM;
	rc = read_full(c, tmp, plen, rfds, maxfds, nrfds);
	if (rc == 0) {
		if (buf)
			memcpy(buf, tmp, plen < cap ? plen : cap);
		if (len)
			*len = plen;
	}
	free(tmp);
	return rc;
}

int vfc_recv(struct vfc *c, struct vfu_hdr *h, void *buf, size_t cap, size_t *len)
{
	return vfc_recv_fds(c, h, buf, cap, len, NULL, 0, NULL);
}

int vfc_call_fds(struct vfc *c, uint16_t cmd, const void *req, size_t len, const int *fds, unsigned nfds,
		 void *reply, size_t cap, size_t *rlen, uint32_t *err, int *rfds, unsigned maxfds, unsigned *nrfds)
{
	struct vfu_hdr h;
	int id = vfc_send(c, cmd, 0, req, len, fds, nfds);
	int rc;

	if (id < 0)
		return id;
	rc = vfc_recv_fds(c, &h, reply, cap, rlen, rfds, maxfds, nrfds);
	if (rc)
		return rc;
	if (h.msg_id != id || h.command != cmd || (h.flags & VFU_F_TYPE_MASK) != VFU_F_TYPE_REPLY)
		return -EPROTO;
	*err = (h.flags & VFU_F_ERROR) ? h.error_no : 0;
	return 0;
}

int vfc_call(struct vfc *c, uint16_t cmd, const void *req, size_t len, const int *fds, unsigned nfds,
	     void *reply, size_t cap, size_t *rlen, uint32_t *err)
{
	return vfc_call_fds(c, cmd, req, len, fds, nfds, reply, cap, rlen, err, NULL, 0, NULL);
}

/* GET_REGION_INFO with argsz; the reply into rep (cap bytes), its fd (or -1) into *fd. 0 or -errno/positive errno. */
static int region_info(struct vfc *c, uint32_t index, uint32_t argsz, uint8_t *rep, size_t cap, size_t *rlen, int *fd)
{
	struct vfu_region_info in = { .argsz = argsz, .index = index };
	unsigned n = 0;
	uint32_t err;
	int rc;

	*fd = -1;
	rc = vfc_call_fds(c, VFU_CMD_DEVICE_GET_REGION_INFO, &in, sizeof(in), NULL, 0, rep, cap, rlen, &err, fd, 1, &n);
	if (rc == 0 && err)
		rc = (int)err;
	if (rc && n)
		close(*fd);
	if (rc || *rlen < sizeof(struct vfu_region_info))
		return rc ? rc : -EPROTO;
	return 0;
}

int vfc_map_region(struct vfc *c, uint32_t index, struct vfc_map *m)
{
	uint8_t rep[1024];
	struct vfu_region_info info;
	struct vfu_region_info_cap_sparse_mmap cap;
	size_t rlen;
	int fd, rc, prot;
	void *res;

	memset(m, 0, sizeof(*m));
	rc = region_info(c, index, sizeof(info), rep, sizeof(rep), &rlen, &fd);
	if (rc)
		return rc;
	memcpy(&info, rep, sizeof(info));
	if (info.argsz > sizeof(info)) {
		/* The capabilities did not fit: ask again with room for them (QEMU drops the first fd). */
		if (fd >= 0)
			close(fd);
		if (info.argsz > sizeof(rep))
			return -EPROTO;
		rc = region_info(c, index, info.argsz, rep, sizeof(rep), &rlen, &fd);
		if (rc)
			return rc;
		memcpy(&info, rep, sizeof(info));
	}
	if (!(info.flags & VFU_REGION_FLAG_MMAP) || !(info.flags & VFU_REGION_FLAG_CAPS) || fd < 0 ||
	    info.cap_offset < sizeof(info) || info.cap_offset > rlen || rlen - info.cap_offset < sizeof(cap)) {
		if (fd >= 0)
			close(fd);
		return -ENODEV;
	}
	memcpy(&cap, rep + info.cap_offset, sizeof(cap));
	if (cap.header.id != VFU_REGION_INFO_CAP_SPARSE_MMAP || cap.nr_areas == 0 || cap.nr_areas > 8 ||
	    rlen - info.cap_offset - sizeof(cap) < cap.nr_areas * sizeof(m->areas[0])) {
		close(fd);
		return -EPROTO;
	}
	memcpy(m->areas, rep + info.cap_offset + sizeof(cap), cap.nr_areas * sizeof(m->areas[0]));
	prot = (info.flags & VFU_REGION_FLAG_READ ? PROT_READ : 0) | (info.flags & VFU_REGION_FLAG_WRITE ? PROT_WRITE : 0);
	res = mmap(NULL, info.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	for (uint32_t i = 0; i < cap.nr_areas; i++) {
		const struct vfu_region_sparse_mmap_area *a = &m->areas[i];

		if (a->offset > info.size || a->size > info.size - a->offset ||
		    mmap((uint8_t *)res + a->offset, a->size, prot, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)(info.offset + a->offset)) == MAP_FAILED) {
			rc = a->offset > info.size ? -EPROTO : -errno;
			munmap(res, info.size);
			close(fd);
			return rc;
		}
	}
	close(fd); /* the mappings keep the file */
	m->base = res;
	m->size = info.size;
	m->flags = info.flags;
	m->nr_areas = cap.nr_areas;
	return 0;
}

void vfc_unmap_region(struct vfc_map *m)
{
	if (m->base)
		munmap(m->base, m->size);
	m->base = NULL;
}

int vfc_negotiate(struct vfc *c)
{
	static const char caps[] =
		"{\"capabilities\":{\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,\"pgsizes\":4096,"
		"\"max_dma_maps\":65535,\"write_multiple\":true,"
		"\"migration\":{\"pgsize\":4096,\"max_bitmap_size\":268435456}}}";
	uint8_t req[sizeof(struct vfu_version) + sizeof(caps)];
	uint8_t rep[512];
	struct vfu_version v = { 0, 0 };
	size_t rlen;
	uint32_t err;
	int rc;

	memcpy(req, &v, sizeof(v));
	memcpy(req + sizeof(v), caps, sizeof(caps));
	rc = vfc_call(c, VFU_CMD_VERSION, req, sizeof(req), NULL, 0, rep, sizeof(rep), &rlen, &err);
	return rc ? rc : (int)err;
}

int vfc_open(struct vfc *c, const char *path, int timeout_ms)
{
	if (vfc_connect(c, path, timeout_ms))
		return -1;
	if (vfc_negotiate(c) == 0)
		return 0;
	vfc_close(c);
	return -1;
}

int vfc_read(struct vfc *c, uint32_t region, uint64_t off, void *buf, uint32_t len)
{
	struct vfu_region_rw req = { .offset = off, .region = region, .count = len };
	uint8_t *rep = malloc(sizeof(req) + len);
	size_t rlen = 0;
	uint32_t err;
	int rc;

	if (rep == NULL)
		return -ENOMEM;
	rc = vfc_call(c, VFU_CMD_REGION_READ, &req, sizeof(req), NULL, 0, rep, sizeof(req) + len, &rlen, &err);
	if (rc == 0 && err == 0) {
		if (rlen != sizeof(req) + len)
			rc = -EPROTO;
		else
			memcpy(buf, rep + sizeof(req), len);
	}
	free(rep);
	return rc ? rc : (int)err;
}

int vfc_write(struct vfc *c, uint32_t region, uint64_t off, const void *buf, uint32_t len, bool posted)
{
	struct vfu_region_rw req = { .offset = off, .region = region, .count = len };
	uint8_t *msg = malloc(sizeof(req) + len);
	uint8_t rep[sizeof(req)];
	size_t rlen;
	uint32_t err = 0;
	int rc;

	if (msg == NULL)
		return -ENOMEM;
	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), buf, len);
	if (posted) {
		rc = vfc_send(c, VFU_CMD_REGION_WRITE, VFU_F_NO_REPLY, msg, sizeof(req) + len, NULL, 0);
		rc = rc < 0 ? rc : 0;
	} else {
		rc = vfc_call(c, VFU_CMD_REGION_WRITE, msg, sizeof(req) + len, NULL, 0, rep, sizeof(rep), &rlen, &err);
	}
	free(msg);
	return rc ? rc : (int)err;
}

uint32_t vfc_read32(struct vfc *c, uint32_t region, uint64_t off)
{
	uint32_t v = 0xdeadbeef;

	if (vfc_read(c, region, off, &v, sizeof(v)) != 0)
		return 0xdeadbeef;
	return v;
}

void vfc_write32(struct vfc *c, uint32_t region, uint64_t off, uint32_t v, bool posted)
{
	vfc_write(c, region, off, &v, sizeof(v), posted);
}

bool vfc_closed_by_server(struct vfc *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	char b;
	ssize_t n;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return false;
	/* A close with unread data in the server's queue arrives as a reset. */
	n = recv(c->fd, &b, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

pid_t vfc_spawn_server(const char *binary, const char *dir, char *sock, size_t socklen,
		       const char *const extra_args[])
{
	const char *argv[32];
	int n = 0;
	pid_t pid;

	snprintf(sock, socklen, "%s/vfio-user.sock", dir);
	argv[n++] = binary;
	argv[n++] = "--socket";
	argv[n++] = sock;
	for (int i = 0; extra_args && extra_args[i] && n < 30; i++)
		argv[n++] = extra_args[i];
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		execv(binary, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* ---- the server as a test program runs it ---- */

int vfc_server_mkdir(struct vfc_server *s, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(s->dir, sizeof(s->dir), "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);

	s->sock[0] = '\0';
	s->pid = -1;
	if (n < 0 || (size_t)n >= sizeof(s->dir) || !mkdtemp(s->dir)) {
		s->dir[0] = '\0';
		return -1;
	}
	return 0;
}

int vfc_server_spawn(struct vfc_server *s, const char *binary, const char *const args[])
{
	s->pid = vfc_spawn_server(binary, s->dir, s->sock, sizeof(s->sock), args);
	if (s->pid > 0)
		return 0;
	s->pid = -1;
	return -1;
}

int vfc_server_start(struct vfc_server *s, const char *name, const char *binary, const char *const args[])
{
	if (vfc_server_mkdir(s, name))
		return -1;
	return vfc_server_spawn(s, binary, args);
}

int vfc_server_kill(struct vfc_server *s, int sig)
{
	int status = 0;
	bool running;

	if (s->pid <= 0)
		return -1;
	running = waitpid(s->pid, &status, WNOHANG) == 0;
	if (running) {
		kill(s->pid, sig);
		if (waitpid(s->pid, &status, 0) != s->pid)
			running = false;
	}
	s->pid = -1;
	return running ? status : -1;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

int vfc_server_remove(struct vfc_server *s)
{
	int rc;

	if (s->pid > 0)
		vfc_server_kill(s, SIGKILL);
	if (!s->dir[0])
		return 0;
	rc = nftw(s->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	s->dir[0] = '\0';
	return rc == 0 ? 0 : -1;
}

int vfc_server_stop(struct vfc_server *s)
{
	int status = vfc_server_kill(s, SIGTERM);

	if (vfc_server_remove(s))
		return -1;
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

uint32_t vfc_server_id(const struct vfc_server *s)
{
	struct vfc c;
	uint32_t id = 0;

	if (vfc_open(&c, s->sock, 5000) == 0) {
		id = vfc_read32(&c, VFU_PCI_CONFIG_REGION, 0);
		vfc_close(&c);
	}
	return id;
}

/* ---- fixtures ---- */

static struct vfc *fixture_client;
static const struct vfc_server *fixture_server;

void vfc_fixture_use(struct vfc *c, const struct vfc_server *s)
{
	fixture_client = c;
	fixture_server = s;
}

int vfc_fixture_open(void **state)
{
	(void)state;
	return vfc_open(fixture_client, fixture_server->sock, 20000);
}

int vfc_fixture_close(void **state)
{
	(void)state;
	vfc_close(fixture_client);
	return 0;
}

const char *vfc_test_binary(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s path/to/rocm-ernic\n", argv[0]);
		return NULL;
	}
	signal(SIGPIPE, SIG_IGN);
	return argv[1];
}
