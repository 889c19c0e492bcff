/*
 * The ionic device in the fuzzer's own process, driven through the guest
 * helpers of tests/lib (ionic_guest.c, ionic_rdma_guest.c) unchanged: this
 * file implements the part of the test vfio-user client API (vfu_client.h)
 * those helpers call, by calling the device's region functions directly
 * instead of sending messages. DMA_MAP maps the memfd the helpers pass into
 * a dma_map the device reads and writes through, SET_IRQS keeps the
 * eventfds the device's interrupts are written to. Everything a region
 * access does happens before the call returns, so a doorbell has been
 * handled when the helper goes on, except what the device leaves for later
 * turns of the server's loop (a long RDMA transfer): each access is followed
 * by one slice of that (ionic_dev_work), as each message is in the server.
 *
 * One device at a time: fg_open() gives a device in power-on state (and its
 * client), fg_close() resets it and releases the client and every mapping.
 */
#ifndef ERNIC_TESTS_FUZZ_GUEST_H
#define ERNIC_TESTS_FUZZ_GUEST_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "ionic/ionic_dev.h"
#include "ionic_guest.h"
#include "ionic_rdma_guest.h"
#include "vfu_client.h"

struct vfc *fg_open(void);
void fg_close(void);
struct ionic_dev *fg_dev(void);

/* Operation "guest memory": off:u16 len:u8 bytes, written at GUEST_IOVA + 64 * off. */
void fg_mem_write(struct ionic_guest *g, struct fz *f);

/* The RDMA LIF as ionic_rdma's probe leaves it: EQ 0 (vector 2), admin CQ 0 (256 entries), AQ 0 (16 slots). */
struct fg_rdma {
	struct ionic_guest g;
	struct rg_eq eq;
	struct rg_cq acq;
	struct rg_aq aq;
};
/* 0, or a negative step number. */
int fg_rdma_up(struct fg_rdma *r, struct vfc *c);
void fg_rdma_down(struct fg_rdma *r);

/*
 * Operation "RDMA admin command": op:u8 len:u16 n:u8 payload[n]: a header
 * {op, len} and n payload bytes spilling into the following slots
 * (rg_aq_put), the doorbell, then every new completion of the admin CQ taken
 * and acknowledged.
 */
void fg_rdma_admin(struct fg_rdma *r, struct fz *f);

/* Operation "doorbell": page:u8 qtype:u8 qid:u32 ring:u8 index:u16 (rg_db_page). */
void fg_doorbell(struct ionic_guest *g, struct fz *f);

/* fuzz-rdma-wqe's world (see fuzz_rdma_wqe.c for the header that shapes it). */
#define W_CQ(i)   (RG_SCRATCH + 0x00000 + (uint64_t)(i) * 0x2000)   /* 4 x 256 x 32 B */
#define W_SQ(k)   (RG_SCRATCH + 0x10000 + (uint64_t)(k) * 0x20000)  /* up to 256 x 256 B each */
#define W_RQ(k)   (W_SQ(k) + 0x10000)
#define W_AHT     (RG_SCRATCH + 0x50000)
#define W_LIST    (RG_SCRATCH + 0x51000)
#define W_QBUF    (RG_SCRATCH + 0x52000)
#define W_BUF     (RG_SCRATCH + 0x60000)
#define W_BUF_LEN 0x40000u
#define W_NCQ     4

struct fg_wqe_world {
	struct fg_rdma r;
	struct rg_cq cq[W_NCQ];
	struct rg_qp qp[2];
};

/* Take the 8-byte header from f and build the world; 0 or a negative step number. */
int fg_wqe_world_up(struct fg_wqe_world *w, struct fz *f);

/* Frames the device transmitted since fg_open, and their bytes. */
uint64_t fg_tx_frames(void);

#endif
