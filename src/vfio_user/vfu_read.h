/*
 * Reading vfio-user messages off the client's socket (vfu_server.c's input
 * side): each message whole, with the descriptors that came with it, before
 * a handler sees it. Up to VFU_RX_AHEAD bytes are read at once and every
 * whole message in them is taken before the socket is read again, so a
 * burst of posted doorbells costs one recvmsg rather than two per message;
 * a message larger than that is read into a buffer of its own.
 *
 * Descriptors: a read of a stream socket ends right after the segment that
 * carried descriptors, and a client's sendmsg of a message begins a segment,
 * so the descriptors of one read belong to the message holding its last
 * byte; while they wait for it, no byte past that message is read.
 *
 * A read that came back short with no descriptors found the socket empty,
 * so once its messages are taken the next call reports "more must come"
 * without the recvmsg that would only say EAGAIN: the loop's level-triggered
 * epoll wakes the caller for whatever arrived since.
 */
#ifndef ERNIC_VFIO_USER_VFU_READ_H
#define ERNIC_VFIO_USER_VFU_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfio_user/vfu_proto.h"

#define VFU_RX_AHEAD 65536u

struct vfu_in {
	int fd;
	/* the current message, once vfu_read_next() said it is whole */
	struct vfu_hdr hdr;
	uint8_t *buf;      /* header included: small[] or allocated */
	_Alignas(16) uint8_t small[512]; /* every doorbell, register access and most others: no allocation each */
	size_t have;       /* bytes of it read so far */
	int fds[VFU_MAX_MSG_FDS];
	unsigned nfds;
	bool fds_overflow;
	/* read ahead: rx[rx_off, rx_len) received and not taken, from a message boundary */
	uint8_t *rx;
	size_t rx_off, rx_len;
	bool drained;      /* the last recvmsg came back short, with no descriptors */
	/* descriptors waiting for the message starting at rx[pend_at] */
	int pend[VFU_MAX_MSG_FDS];
	unsigned npend;
	bool pend_overflow;
	size_t pend_at;
};

/* Ready to read from fd: 0, or -1 when out of memory. */
int vfu_in_init(struct vfu_in *in, int fd);
/* The current message and everything read ahead given back (descriptors closed, memory freed). */
void vfu_in_free(struct vfu_in *in);
/* The next message into hdr, buf, fds: 1 when it is whole, 0 when more must come, -1 to drop (why set). */
int vfu_read_next(struct vfu_in *in, const char **why);
/* The loop says the socket is readable: the next call that needs bytes reads it, however the last read ended. */
static inline void vfu_read_woken(struct vfu_in *in)
{
	in->drained = false;
}
/* A whole message is already read ahead (nothing on the socket would wake the caller for it). */
bool vfu_read_pending(const struct vfu_in *in);
/* Done with the current message: its descriptors closed, its buffer freed. */
void vfu_read_done(struct vfu_in *in);

#endif
