/*
 * Inside the RDMA LIF's work-queue engine, shared by its files:
 * ionic_rdma_qp.c (the send queues, RC/UC between local QPs, UD, the run
 * queue), ionic_rdma_xfer.c (SGLs from WQEs, moving bytes under the turn's
 * budget), ionic_rdma_wire.c (the transports fabric/ plugs in: the RoCEv2
 * wire and in-process peers) and ionic_rdma.c (completions). See
 * ionic_rdma_qp.c for the engine as a whole.
 */
#ifndef ERNIC_IONIC_RDMA_ENGINE_H
#define ERNIC_IONIC_RDMA_ENGINE_H

#include "ionic/ionic_rdma_priv.h"

#define WQE_MAX      (1u << IONIC_RDMA_MAX_STRIDE)
#define MAX_SGE      ((WQE_MAX - IONIC_V1_WQE_PLD_OFFSET) / sizeof(struct ionic_sge))
#define MSG_MAX      (1ull << 31)
#define CHUNK        (64u << 10)   /* the bounce buffer */
/*
 * The work of one slice: 2 MiB of copying, some 50-70 us at memcpy speed
 * (30-45 GB/s on the project's machine), far below the millisecond the loop
 * may spend before it serves its fds, and large enough that the turn of the
 * loop between two slices (a system call, about 1 us here) costs little.
 * Memory the server touches for the first time costs a page fault per 4 KiB
 * on top (up to 15 us each on a loaded virtual machine: 2 MiB can then take
 * 8 ms), so a slice also ends once it has copied for SLICE_NS. A
 * copy goes in pieces of at most PIECE_MAX (32 pages), so a slice ends at
 * most one piece past either limit. Every WQE costs WQE_COST besides its
 * bytes (a few hundred nanoseconds of parsing, key checks and completion), so
 * a ring of empty WQEs is bounded too.
 */
#define TURN_BUDGET  IONIC_RDMA_TURN_BUDGET
#define SLICE_NS     500000u
#define PIECE_MAX    (128u << 10)
#define CLOCK_BYTES  (64u << 10)
#define CLOCK_PIECES 16u
#define WQE_COST     4096u
#define GRH_BYTES    40
#define PEER_MSG_MAX 4096  /* an NVMe-oF capsule or a MAD; the peers take nothing larger */
#define ROCE_QKEY_GSI 0x80010000u

/* Where the bytes of a message are: a list of (key, va, len). */
struct sgl {
	struct { uint32_t key; uint64_t va; uint32_t len; } e[MAX_SGE];
	unsigned int n;
	uint64_t total;
};

struct recv_info {
	uint32_t src_qpn;
	uint8_t op;            /* IONIC_V1_CQE_RECV_OP_* */
	be32 imm_rkey;
	bool ipv4;
	bool solicited;
	uint8_t smac[6];
	bool vlan;             /* a UD datagram that came with an 802.1Q tag of tci */
	uint16_t tci;
};

struct cursor {
	const struct sgl *sgl;
	unsigned int i;
	uint64_t off;
};

/* One side of a transfer: a local SGL of a QP, or a remote (rkey, va) range in a QP's PD. */
struct endpoint {
	struct rdma_qp *qp;        /* whose PD and privilege apply */
	const struct sgl *sgl;     /* local SGL, or NULL for a remote (key, va) range */
	uint32_t rkey;
	uint64_t rva;
	uint16_t need;             /* access the MR must grant */
};

/*
 * A copy from src to dst that can stop after any piece and go on later:
 * the cursors say where each side stands, left how many bytes remain. The
 * endpoints' SGLs must outlive it (they live in the QP's job).
 */
struct xfer {
	struct endpoint src, dst;
	struct cursor cs, cd;
	uint64_t rs, rd;           /* offsets into a remote (key, va) range */
	uint64_t left;
};

enum { XFER_DONE, XFER_MORE, XFER_SRC_FAULT, XFER_DST_FAULT };

/* What running a WQE came to; WQE_GO_ON: a step of it succeeded and it goes on (never returned by the engine). */
enum { WQE_DONE, WQE_BLOCKED, WQE_MORE, WQE_GO_ON };

struct wqe_ctx {
	uint32_t qpid;
	struct rdma_qp *qp;
	uint8_t wqe[WQE_MAX];
	uint32_t stride;
	struct ionic_v1_base_hdr h;
	uint16_t flags;
	struct sgl sgl;
};

/* ionic_rdma.c: completions in the driver's formats */
void rdma_complete_msn(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint32_t status);
void rdma_complete_npg(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint64_t wqe_id, uint32_t status);
void rdma_complete_recv(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, le64 wqe_id,
			const struct recv_info *ri, uint32_t len, uint32_t status);

/* ionic_rdma_xfer.c */
bool rdma_parse_sgl(const uint8_t *wqe, uint32_t stride, unsigned int nsge, uint16_t flags, struct sgl *out);
int rdma_rq_peek(struct ionic_dev *dev, struct rdma_qp *qp, le64 *wqe_id, struct sgl *sgl);
int rdma_rq_take(struct ionic_dev *dev, struct rdma_qp *qp, le64 *wqe_id, struct sgl *sgl);
int rdma_ep_xfer(struct ionic_dev *dev, const struct endpoint *ep, struct cursor *c, uint64_t *roff, void *buf,
		 size_t len, enum rdma_xfer dir);
void rdma_xfer_init(struct xfer *x, const struct endpoint *src, const struct endpoint *dst, uint64_t len);
int rdma_xfer_step(struct ionic_dev *dev, struct xfer *x, bool bounded);
int rdma_move_bytes(struct ionic_dev *dev, const struct endpoint *src, const struct endpoint *dst, uint64_t len,
		    bool *src_failed);
int rdma_sgl_copy_at(struct ionic_dev *dev, struct rdma_qp *qp, const struct sgl *sgl, uint64_t offset, void *buf,
		     uint32_t len, enum rdma_xfer dir, uint16_t need);
/*
 * Where len bytes at offset of a local SGL lie, to be read where they are:
 * inside one SGE, one registered page and one mapping that cannot fault
 * (ionic_dma_peek). NULL otherwise (also when they do not resolve): the
 * caller copies with rdma_sgl_copy_at, which says why.
 */
const void *rdma_sgl_peek_at(struct ionic_dev *dev, struct rdma_qp *qp, const struct sgl *sgl, uint64_t offset,
			     uint32_t len);
/* The same for len bytes at va through key with the rights need (a peer's READ of our memory). */
const void *rdma_key_peek(struct ionic_dev *dev, struct rdma_qp *qp, uint32_t key, uint64_t va, uint32_t len,
			  uint16_t need);

/* ionic_rdma_qp.c */
void rdma_qp_error(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint8_t code);
bool rdma_sgl_ok(struct ionic_dev *dev, const struct rdma_qp *qp, const struct sgl *sgl, uint16_t need);
uint32_t rdma_gather(struct ionic_dev *dev, struct wqe_ctx *w, void *buf, size_t cap);
void rdma_runq_add(struct ionic_dev *dev, uint32_t qpid);

/* ionic_rdma_wire.c */
void rdma_wire_detach(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp);
bool rdma_wire_hold(struct rdma_qp *qp);
int rdma_exec_rc_wire(struct ionic_dev *dev, struct wqe_ctx *w);
bool rdma_wire_ud(struct ionic_dev *dev, struct wqe_ctx *w, const struct rdma_ah *ah, uint32_t dest_qpn,
		  uint32_t qkey);

#endif
