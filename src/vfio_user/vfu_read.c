/* Reading vfio-user messages off the client's socket; see vfu_read.h. */
#include "vfio_user/vfu_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"

int vfu_in_init(struct vfu_in *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->rx = malloc(VFU_RX_AHEAD);
	return c->rx ? 0 : -1;
}

void vfu_in_free(struct vfu_in *c)
{
	vfu_read_done(c);
	for (unsigned i = 0; i < c->npend; i++)
		close(c->pend[i]);
	c->npend = 0;
	free(c->rx);
	c->rx = NULL;
}

void vfu_read_done(struct vfu_in *c)
{
	for (unsigned i = 0; i < c->nfds; i++)
		if (c->fds[i] >= 0)
			close(c->fds[i]);
	c->nfds = 0;
	c->fds_overflow = false;
	if (c->buf != c->small)
		free(c->buf);
	c->buf = NULL;
	c->have = 0;
}

/*
 * One recvmsg of the current message. Returns 1 when it is complete, 0 if
 * more is needed, 2 when the header just completed and the body is still to
 * come, -1 to drop.
 */
static int read_chunk(struct vfu_in *c, const char **why)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VFU_MAX_MSG_FDS)];
		struct cmsghdr align;
	} ctl;
	size_t want = c->have < sizeof(c->hdr) ? sizeof(c->hdr) : c->hdr.size;
	uint8_t *dst = c->have < sizeof(c->hdr) ? (uint8_t *)&c->hdr + c->have : c->buf + c->have;
	struct iovec iov = { .iov_base = dst, .iov_len = want - c->have };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		*why = n == 0 ? (c->have ? "gone in the middle of a message" : "closed") : "read error";
		return -1;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *fds = (int *)CMSG_DATA(cm);

		for (size_t i = 0; i < k; i++) {
			if (c->nfds < VFU_MAX_MSG_FDS) {
				c->fds[c->nfds++] = fds[i];
			} else {
				close(fds[i]);
				c->fds_overflow = true;
			}
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		*why = "descriptors truncated";
		return -1;
	}
	c->have += (size_t)n;
	if (c->have == sizeof(c->hdr) && c->buf == NULL) {
		if (c->hdr.size < sizeof(c->hdr) || c->hdr.size > VFU_MAX_MSG_SIZE) {
			LOG_WARN("vfio-user: message %u announces %u bytes", c->hdr.msg_id, c->hdr.size);
			*why = "bad message size";
			return -1;
		}
		c->buf = c->hdr.size <= sizeof(c->small) ? c->small : malloc(c->hdr.size);
		if (c->buf == NULL) {
			*why = "out of memory";
			return -1;
		}
		memcpy(c->buf, &c->hdr, sizeof(c->hdr));
		if (c->hdr.size > sizeof(c->hdr))
			return 2;
	}
	return c->have >= sizeof(c->hdr) && c->have == c->hdr.size ? 1 : 0;
}

/* Where the message holding byte `at` of rx[0, len) begins (messages back to back from rx[0]). */
static size_t msg_start_of(const uint8_t *rx, size_t len, size_t at)
{
	size_t p = 0;

	while (p < len && len - p >= sizeof(struct vfu_hdr)) {
		struct vfu_hdr h;

		memcpy(&h, rx + p, sizeof(h));
		if (h.size < sizeof(h) || h.size > VFU_MAX_MSG_SIZE || at < p + h.size)
			break;
		p += h.size;
	}
	return p;
}

/*
 * One recvmsg into the read-ahead buffer (moved to its start first). While
 * descriptors wait for the message at rx[0], no more than the rest of that
 * message is read, so what comes with it is its own. 1 when bytes came, 0
 * when none are there, -1 to drop.
 */
static int fill_rx(struct vfu_in *c, const char **why)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VFU_MAX_MSG_FDS)];
		struct cmsghdr align;
	} ctl;
	size_t room;
	struct iovec iov;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	if (c->rx_off > 0) {
		memmove(c->rx, c->rx + c->rx_off, c->rx_len - c->rx_off);
		c->rx_len -= c->rx_off;
		if (c->npend && c->pend_at >= c->rx_off) {
			c->pend_at -= c->rx_off;
		} else {
			/* descriptors for a message already taken without them (never from a sound client) */
			for (unsigned i = 0; i < c->npend; i++)
				close(c->pend[i]);
			c->npend = 0;
			c->pend_overflow = false;
		}
		c->rx_off = 0;
	}
	room = VFU_RX_AHEAD - c->rx_len;
	if (c->npend) {
		struct vfu_hdr h;
		size_t end = sizeof(h);

		if (c->rx_len >= sizeof(h)) {
			memcpy(&h, c->rx, sizeof(h));
			end = h.size; /* checked by the caller: more than rx_len, at most VFU_RX_AHEAD */
		}
		if (end - c->rx_len < room)
			room = end - c->rx_len;
	}
	iov.iov_base = c->rx + c->rx_len;
	iov.iov_len = room;
	n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		*why = n == 0 ? (c->rx_len ? "gone in the middle of a message" : "closed") : "read error";
		return -1;
	}
	c->rx_len += (size_t)n;
	c->drained = (size_t)n < room && msg.msg_controllen == 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t owner, k;
		int *fds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(cm);
		owner = msg_start_of(c->rx, c->rx_len, c->rx_len - 1);
		if (c->npend && owner != c->pend_at) {
			/* never from a client that sends each message whole: the waiting ones go */
			for (unsigned i = 0; i < c->npend; i++)
				close(c->pend[i]);
			c->npend = 0;
			c->pend_overflow = false;
		}
		c->pend_at = owner;
		for (size_t i = 0; i < k; i++) {
			if (c->npend < VFU_MAX_MSG_FDS) {
				c->pend[c->npend++] = fds[i];
			} else {
				close(fds[i]);
				c->pend_overflow = true;
			}
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		*why = "descriptors truncated";
		return -1;
	}
	return 1;
}

/* The descriptors waiting for the message at rx[at], if any, become the current message's. */
static void take_pending(struct vfu_in *c, size_t at)
{
	if (!c->npend || c->pend_at != at)
		return;
	memcpy(c->fds, c->pend, c->npend * sizeof(int));
	c->nfds = c->npend;
	c->fds_overflow = c->pend_overflow;
	c->npend = 0;
	c->pend_overflow = false;
}

/* A whole message waits in the read-ahead buffer. */
bool vfu_read_pending(const struct vfu_in *c)
{
	struct vfu_hdr h;

	if (c->rx_len - c->rx_off < sizeof(h))
		return false;
	memcpy(&h, c->rx + c->rx_off, sizeof(h));
	return h.size <= c->rx_len - c->rx_off;
}

/*
 * The next message into c->hdr and c->buf (with its descriptors): 1 when it
 * is complete, 0 when more must come, -1 to drop. Messages come out of the
 * read-ahead buffer, copied to the connection's own (aligned) buffer; one
 * larger than the read-ahead buffer is read directly into one of its size.
 */
int vfu_read_next(struct vfu_in *c, const char **why)
{
	int rc;

	for (;;) {
		size_t avail = c->rx_len - c->rx_off;

		if (c->buf != NULL) {
			/* a large message, its first part taken from rx: the rest straight from the socket */
			while ((rc = read_chunk(c, why)) == 2)
				;
			return rc;
		}
		if (avail >= sizeof(c->hdr)) {
			memcpy(&c->hdr, c->rx + c->rx_off, sizeof(c->hdr));
			if (c->hdr.size < sizeof(c->hdr) || c->hdr.size > VFU_MAX_MSG_SIZE) {
				LOG_WARN("vfio-user: message %u announces %u bytes", c->hdr.msg_id, c->hdr.size);
				*why = "bad message size";
				return -1;
			}
			if (c->hdr.size <= avail || c->hdr.size > VFU_RX_AHEAD) {
				size_t take = c->hdr.size <= avail ? c->hdr.size : avail;

				c->buf = c->hdr.size <= sizeof(c->small) ? c->small : malloc(c->hdr.size);
				if (c->buf == NULL) {
					*why = "out of memory";
					return -1;
				}
				memcpy(c->buf, c->rx + c->rx_off, take);
				take_pending(c, c->rx_off);
				c->rx_off += take;
				c->have = take;
				if (take == c->hdr.size)
					return 1;
				continue; /* the direct read above */
			}
		}
		if (c->drained) {
			/* the last read emptied the socket: epoll says when more is there */
			c->drained = false;
			return 0;
		}
		rc = fill_rx(c, why);
		if (rc <= 0)
			return rc;
	}
}
