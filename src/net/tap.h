/*
 * Joining the emulated segment to an existing host TAP device (--tap): frames
 * the host side writes into the TAP enter the switch, frames the switch sends
 * to this port go out of the TAP. The device must already exist (the server
 * never creates interfaces); one that cannot be opened is a start-up error,
 * one that disappears later is logged and the server goes on without it.
 *
 * Both ways carry offloads when the kernel allows a virtio_net_hdr on each
 * frame (IFF_VNET_HDR): outgoing TCP segments of one flow merge into one
 * segmentation-offload write (and pure ACKs of a flow within one batch of
 * events into the last, unless it is a duplicate), and the kernel is asked (TUNSETOFFLOAD) for
 * TUN_F_CSUM | TUN_F_TSO4, so a host peer's TCP arrives as super-frames of
 * up to 64 KiB, one read() each, with checksums left partial. Where the
 * kernel grants UDP segmentation too (TUN_F_USO4 | TUN_F_USO6, Linux 6.2),
 * RoCEv2 datagrams of one flow leave merged in one write and UDP
 * super-frames come in, cut into their datagrams at the switch. Headers are
 * checked by net_offload_parse(); a bad one drops its frame and is counted.
 * A wakeup reads at most TAP_BYTES_PER_WAKEUP, or TAP_READS_PER_WAKEUP
 * frames (a UDP super-frame counting its datagrams), before returning to the
 * loop.
 */
#ifndef ERNIC_NET_TAP_H
#define ERNIC_NET_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net_offload.h"

struct evloop;
struct net_switch;
struct tap;

#define TAP_READS_PER_WAKEUP 64
/* Wakeups in a row that end at their budget, after which the segment is behind (net_switch_behind()). */
#define TAP_BEHIND_WAKEUPS 4
#define TAP_BYTES_PER_WAKEUP (256u << 10)
/*
 * Frames the kernel's queue refused (a write that would block): held in order
 * and written when the TAP is writable again, up to this many; a frame past
 * them is dropped and counted (tx_held_full).
 */
#define TAP_TX_HOLD 512
/* The least length tap_open() gives the kernel's queue of frames toward us (see tap.c). */
#define TAP_QUEUE_LEN 8192

struct tap_stats {
	uint64_t rx_frames, tx_frames, tx_dropped;
	uint64_t tx_held;     /* frames the kernel's queue could not take at once: held, written when it could */
	uint64_t tx_held_full; /* of tx_dropped: frames that found TAP_TX_HOLD held already */
	uint64_t gso_frames;  /* writes that carried several merged TCP segments */
	uint64_t gso_udp_frames; /* writes that carried several merged RoCEv2 datagrams */
	uint64_t udp_merged;  /* the datagrams they carried */
	uint64_t udp_pieces;  /* RoCEv2 datagrams handed over in pieces (their payload in guest memory), merged from there */
	uint64_t gso_super_frames; /* super-frames written as an in-process host handed them over (its TCP's) */
	uint64_t acks_superseded;
	uint64_t behind_wakeups;  /* wakeups that read a queue which had outlasted TAP_BEHIND_WAKEUPS budgets */  /* pure ACKs never written: a later one of the batch said more */
	uint64_t rx_dropped;  /* frames refused: a bad offload header (counted by cause in offload), too long */
	struct net_offload_stats offload;   /* rx: super-frames, partial checksums, refusals */
};

/* Open ifname and attach it to sw. Returns NULL with a one-line reason in err. */
struct tap *tap_open(const char *ifname, struct evloop *loop, struct net_switch *sw, char *err, size_t errlen);

/*
 * For tests: attach through fd, an open non-blocking descriptor that behaves
 * as a TAP does (one frame per read() and per write(), e.g. a SOCK_SEQPACKET
 * socket), with a virtio_net_hdr before each frame when vnet. No ioctl is
 * made. Takes ownership of fd (closed by tap_close(), or here on failure).
 */
struct tap *tap_attach_fd(int fd, bool vnet, const char *name, struct evloop *loop, struct net_switch *sw,
			  char *err, size_t errlen);
void tap_close(struct tap *t);

const struct tap_stats *tap_stats(const struct tap *t);

#endif
