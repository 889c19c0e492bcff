/*
 * The work-queue engine of the RDMA LIF (interface version 1): send queue
 * WQEs executed against the memory-region table, receive WQEs consumed by
 * incoming messages, completions in the driver's formats (SEND_MSN for
 * remote operations, SEND_NPG for everything else, RECV in order) and the
 * "virtual wire" between queue pairs of the same guest (the loopback
 * fabric). Tracks ionic_rdma of Linux 7.2 (ionic_datapath.c, ionic_fw.h)
 * and rdma-core's libionic.
 *
 * Every key, length and index a WQE carries is checked before use; a bad
 * one completes that WQE with an error status and moves its QP to the error
 * state, as a real RNIC would, and the server goes on.
 *
 * Bounded work. One event-loop thread runs everything, and a WQE may move up
 * to 2 GiB: the engine therefore spends at most a budget (TURN_BUDGET bytes
 * copied, WQE_COST per WQE) before it yields. A QP whose work the budget did
 * not cover goes on the run queue, and rdma_work() gives the queue one fresh
 * budget per turn of the loop, a slice per QP in turn, so the socket, the
 * other QPs and everything else are served between two slices. A WQE stopped
 * half-way keeps its state in the QP's job: later WQEs of that QP wait behind
 * it and its completion is written after its last byte. See docs/ionic.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ionic/ionic_rdma_priv.h"
#include "util/inet_csum.h"
#include "util/log.h"

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

/* ---- WQE parsing ---------------------------------------------------------------------------- */

/* The SGE list of a send or receive WQE of stride bytes; false if it cannot be one. */
static bool parse_sgl(const uint8_t *wqe, uint32_t stride, unsigned int nsge, uint16_t flags, struct sgl *out)
{
	uint32_t off = (flags & (IONIC_V1_FLAG_SPEC16 | IONIC_V1_FLAG_SPEC32)) ? IONIC_V1_WQE_SPEC_SGE_OFFSET
									       : IONIC_V1_WQE_PLD_OFFSET;

	if (off > stride || nsge > (stride - off) / sizeof(struct ionic_sge))
		return false;
	out->n = nsge;
	out->total = 0;
	for (unsigned int i = 0; i < nsge; i++) {
		struct ionic_sge s;

		memcpy(&s, wqe + off + i * sizeof(s), sizeof(s));
		out->e[i].va = be64_get(s.va);
		out->e[i].len = be32_get(s.len);
		out->e[i].key = be32_get(s.lkey);
		out->total += out->e[i].len;
	}
	return out->total <= MSG_MAX;
}

/* ---- completions -------------------------------------------------------------------------------- */

static void cqe_post(struct ionic_dev *dev, uint32_t cq_id, struct ionic_v1_cqe *cqe, bool solicited)
{
	if (rdma_cq_post(dev, cq_id, cqe, solicited))
		ionic_guest_error(dev, "completion for CQ %u lost (no such CQ or ring unusable)", cq_id);
}

/* A remote operation on RC/UC: the cumulative message sequence number. */
static void complete_msn(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint32_t status)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.send.msg_msn = be32_set(++qp->msn);
	cqe.status_length = be32_set(status);
	cqe.qid_type_flags = be32_set(qpid << IONIC_V1_CQE_QID_SHIFT |
				      IONIC_V1_CQE_TYPE_SEND_MSN << IONIC_V1_CQE_TYPE_SHIFT |
				      (status ? IONIC_V1_CQE_ERROR : 0));
	cqe_post(dev, qp->sq.cq_id, &cqe, status != 0);
}

/* Anything else (UD sends, REG_MR, LOCAL_INV): its own completion naming its SQ slot. */
static void complete_npg(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint64_t wqe_id,
			 uint32_t status)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.send.npg_wqe_id = le64_set(wqe_id);
	cqe.status_length = be32_set(status);
	cqe.qid_type_flags = be32_set(qpid << IONIC_V1_CQE_QID_SHIFT |
				      IONIC_V1_CQE_TYPE_SEND_NPG << IONIC_V1_CQE_TYPE_SHIFT |
				      (status ? IONIC_V1_CQE_ERROR : 0));
	cqe_post(dev, qp->sq.cq_id, &cqe, status != 0);
}

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

static void complete_recv(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, le64 wqe_id,
			  const struct recv_info *ri, uint32_t len, uint32_t status)
{
	struct ionic_v1_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.recv.wqe_id = wqe_id;
	cqe.recv.src_qpn_op = be32_set((ri->src_qpn & 0xffffffu) | (uint32_t)ri->op << IONIC_V1_CQE_RECV_OP_SHIFT |
				       (ri->ipv4 ? IONIC_V1_CQE_RECV_IS_IPV4 : 0) |
				       (ri->vlan ? IONIC_V1_CQE_RECV_IS_VLAN : 0));
	memcpy(cqe.recv.src_mac, ri->smac, 6);
	cqe.recv.vlan_tag = be16_set(ri->vlan ? ri->tci : 0);
	cqe.recv.imm_data_rkey = ri->imm_rkey;
	cqe.status_length = be32_set(status ? status : len);
	cqe.qid_type_flags = be32_set(qpid << IONIC_V1_CQE_QID_SHIFT |
				      IONIC_V1_CQE_TYPE_RECV << IONIC_V1_CQE_TYPE_SHIFT |
				      (status ? IONIC_V1_CQE_ERROR : 0));
	/* A receive is solicited when the sender asked (SOL flag), and an error always is. */
	cqe_post(dev, qp->rq.cq_id, &cqe, ri->solicited || status != 0);
}

/*
 * A QP entered the error state: one "flushed" completion per queue tells the
 * driver to complete what is still posted there with flush errors itself.
 * The kernel driver flushes its own queues on the modify, but libionic only
 * learns of it from these completions (and the CQ event they raise).
 */
void rdma_qp_flush(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp)
{
	struct recv_info ri = { .src_qpn = 0 };

	if (qp->rq.present)
		complete_recv(dev, qpid, qp, le64_set(0), &ri, 0, IONIC_STS_WQE_FLUSHED_ERR);
	if (qp->sq.present)
		complete_npg(dev, qpid, qp, 0, IONIC_STS_WQE_FLUSHED_ERR);
}

static void wire_detach(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp);

static void qp_error(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp, uint8_t code)
{
	if (qp->state == IONIC_QPS_ERR)
		return;
	LOG_DEBUG("ionic rdma: QP %u to error (event %u)", qpid, code);
	qp->state = IONIC_QPS_ERR;
	rdma_qp_halt(dev, qpid);
	if (qp->sq.present && dev->rdma->cq[qp->sq.cq_id].valid)
		rdma_eq_post(dev, dev->rdma->cq[qp->sq.cq_id].eq_id, IONIC_V1_EQE_TYPE_QP, code, qpid);
	rdma_qp_flush(dev, qpid, qp);
}

/* ---- moving message bytes ------------------------------------------------------------------------ */

static uint8_t chunk_buf[CHUNK];

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

static int ep_xfer(struct ionic_dev *dev, const struct endpoint *ep, struct cursor *c, uint64_t *roff, void *buf,
		   size_t len, enum rdma_xfer dir)
{
	uint8_t *p = buf;

	if (!ep->sgl) {
		int rc = rdma_mr_xfer(dev, ep->qp, ep->rkey, ep->rva + *roff, buf, len, dir, ep->need);

		*roff += len;
		return rc;
	}
	while (len > 0) {
		uint64_t left;
		size_t n;
		int rc;

		if (c->i >= ep->sgl->n)
			return -EFAULT;
		left = ep->sgl->e[c->i].len - c->off;
		if (left == 0) {
			c->i++;
			c->off = 0;
			continue;
		}
		n = left < len ? (size_t)left : len;
		rc = rdma_mr_xfer(dev, ep->qp, ep->sgl->e[c->i].key, ep->sgl->e[c->i].va + c->off, p, n, dir, ep->need);
		if (rc)
			return rc;
		p += n;
		c->off += n;
		len -= n;
	}
	return 0;
}

/*
 * The guest bus address of the next contiguous piece of ep at its cursor (at
 * most len bytes, within one SGE and one registered page): true and *bus, *n;
 * false when the access does not resolve (the caller's slow path then reports
 * which side failed).
 */
static bool ep_span(struct ionic_dev *dev, const struct endpoint *ep, struct cursor *c, uint64_t roff,
		    uint64_t len, uint64_t *bus, size_t *n)
{
	const struct rdma_mr *mr;
	uint64_t va, want, off;
	uint32_t key;

	if (!ep->sgl) {
		key = ep->rkey;
		va = ep->rva + roff;
		want = len;
	} else {
		while (c->i < ep->sgl->n && c->off == ep->sgl->e[c->i].len) {
			c->i++;
			c->off = 0;
		}
		if (c->i >= ep->sgl->n)
			return false;
		key = ep->sgl->e[c->i].key;
		va = ep->sgl->e[c->i].va + c->off;
		want = ep->sgl->e[c->i].len - c->off;
		if (want > len)
			want = len;
	}
	if (rdma_mr_resolve(dev, ep->qp, key, va, want, ep->need, &mr, &off))
		return false;
	if (!mr) {
		*bus = va;
	} else if (mr->npages == 0) {
		*bus = mr->base + off;
	} else {
		uint64_t o = off + mr->first_page_off, pg = o >> mr->page_shift, in = o & ((1ull << mr->page_shift) - 1);

		if (pg >= mr->npages)
			return false;
		if (want > (1ull << mr->page_shift) - in)
			want = (1ull << mr->page_shift) - in;
		*bus = mr->pages[pg] + in;
	}
	*n = (size_t)want;
	return true;
}

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

static void xfer_init(struct xfer *x, const struct endpoint *src, const struct endpoint *dst, uint64_t len)
{
	/* Field by field: a memset of the whole struct showed in profiles of small WQEs. */
	x->src = *src;
	x->dst = *dst;
	x->cs = (struct cursor){ .sgl = src->sgl };
	x->cd = (struct cursor){ .sgl = dst->sgl };
	x->rs = x->rd = 0;
	x->left = len;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The slice is over: its budget is spent, or (bounded work only) it has been
 * copying for SLICE_NS; then the rest of the budget goes too.
 */
static bool slice_over(struct ionic_rdma *r, bool bounded)
{
	uint64_t now;

	if (!bounded)
		return false;
	if (r->budget == 0)
		return true;
	/*
	 * Reading the clock costs about as much as a small WQE's other work
	 * (a tenth of a 4 KiB WRITE): it is read at the slice's first piece,
	 * then once CLOCK_BYTES have been charged or CLOCK_PIECES pieces gone
	 * since it was last read.
	 */
	if (r->slice_t0 != 0 && ++r->slice_unclocked < CLOCK_PIECES &&
	    r->slice_clocked_budget - r->budget < CLOCK_BYTES)
		return false;
	r->slice_unclocked = 0;
	r->slice_clocked_budget = r->budget;
	now = mono_ns();
	if (r->slice_t0 == 0)
		r->slice_t0 = now;
	else if (now - r->slice_t0 >= SLICE_NS)
		r->budget = 0;
	return r->budget == 0;
}

/*
 * Move x's bytes until they are all moved (XFER_DONE), the slice is over
 * (XFER_MORE; only when bounded: then the engine's budget is charged what
 * moved, and the last piece may overshoot it by up to PIECE_MAX) or a side
 * fails (XFER_SRC_FAULT, XFER_DST_FAULT; bytes before the failing piece have
 * moved, as on a wire).
 * Guest to guest in one copy while both sides resolve to mapped guest
 * memory; a piece that does not (a fault, or a piece spanning two mappings)
 * goes through the bounce buffer, which tells which side failed. Every piece
 * resolves its keys and guest addresses afresh, so a registration or a
 * mapping that goes away between two slices stops the copy there, and
 * nothing is ever written through a stale translation.
 */
static int xfer_step(struct ionic_dev *dev, struct xfer *x, bool bounded)
{
	struct ionic_rdma *r = dev->rdma;

	while (x->left > 0) {
		uint64_t want = x->left < PIECE_MAX ? x->left : PIECE_MAX, sbus, dbus;
		struct cursor ts = x->cs, td = x->cd;
		size_t ns, nd, n;
		bool fast;

		if (slice_over(r, bounded))
			return XFER_MORE;
		fast = ep_span(dev, &x->src, &ts, x->rs, want, &sbus, &ns) &&
		       ep_span(dev, &x->dst, &td, x->rd, want, &dbus, &nd);
		if (fast) {
			n = ns < nd ? ns : nd;
			fast = ionic_dma_copy(dev, dbus, sbus, n) == 0;
		}
		if (fast) {
			x->cs = ts;
			x->cd = td;
			if (x->src.sgl)
				x->cs.off += n;
			else
				x->rs += n;
			if (x->dst.sgl)
				x->cd.off += n;
			else
				x->rd += n;
		} else {
			n = want < CHUNK ? (size_t)want : CHUNK;
			if (ep_xfer(dev, &x->src, &x->cs, &x->rs, chunk_buf, n, RDMA_FROM_GUEST))
				return XFER_SRC_FAULT;
			if (ep_xfer(dev, &x->dst, &x->cd, &x->rd, chunk_buf, n, RDMA_TO_GUEST))
				return XFER_DST_FAULT;
		}
		x->left -= n;
		rdma_charge(r, n);
	}
	return XFER_DONE;
}

/*
 * Move len bytes from src to dst at once (a UD message: at most 4 KiB), the
 * budget charged afterwards. 0, or -1 with which side failed in *src_failed.
 */
static int move_bytes(struct ionic_dev *dev, const struct endpoint *src, const struct endpoint *dst, uint64_t len,
		      bool *src_failed)
{
	struct xfer x;
	int rc;

	xfer_init(&x, src, dst, len);
	rc = xfer_step(dev, &x, false);
	if (rc == XFER_DONE)
		return 0;
	*src_failed = rc == XFER_SRC_FAULT;
	return -1;
}

/* ---- the receive side ------------------------------------------------------------------------------ */

/*
 * Read the next posted receive WQE of qp without taking it: its id and SGL.
 * -EAGAIN if none is posted, -EFAULT if its slot cannot be read, -EINVAL if
 * it is malformed (*wqe_id is then set).
 */
static int rq_peek(struct ionic_dev *dev, struct rdma_qp *qp, le64 *wqe_id, struct sgl *sgl)
{
	uint8_t wqe[WQE_MAX];
	uint32_t stride = 1u << qp->rq.ring.stride_log2, mask = (1u << qp->rq.ring.depth_log2) - 1;
	struct ionic_v1_base_hdr h;
	uint64_t addr;

	if (!qp->rq.present || (qp->rq.head & mask) == qp->rq.prod)
		return -EAGAIN;
	if (stride > WQE_MAX || rdma_ring_addr(&qp->rq.ring, qp->rq.head, &addr) ||
	    ionic_dma_read(dev, addr, wqe, stride))
		return -EFAULT;
	memcpy(&h, wqe, sizeof(h));
	*wqe_id = h.wqe_id;
	if (!parse_sgl(wqe, stride, h.num_sge_key, be16_get(h.flags), sgl))
		return -EINVAL;
	return 0;
}

/* Take the next posted receive WQE of qp, as rq_peek; a malformed one is taken too. */
static int rq_take(struct ionic_dev *dev, struct rdma_qp *qp, le64 *wqe_id, struct sgl *sgl)
{
	int rc = rq_peek(dev, qp, wqe_id, sgl);

	if (rc == 0 || rc == -EINVAL)
		qp->rq.head++;
	return rc;
}

/* ---- the send side ------------------------------------------------------------------------------------ */

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

#define RECV_OP_NONE 0xff /* an RDMA READ or WRITE: no receive at the peer */

/* The phases of an RC/UC WQE that moves bytes (SEND, SEND_IMM, SEND_INV, RDMA WRITE, WRITE_IMM, READ). */
enum job_phase {
	JOB_COPY,        /* the payload moves, slice by slice */
	JOB_IMM,         /* WRITE_IMM: the payload is in place; its immediate needs the peer's next receive */
	JOB_NUM_PHASES,
};

/*
 * A send WQE in progress, kept in its QP between slices: the WQE as read,
 * the peer (its id, and its epoch when the WQE started: a different one
 * means the peer left service meanwhile), the peer's receive the message
 * fills (held from the first byte to the completion, so the peer's receives
 * complete in order and nobody else takes this one), and the copy.
 */
struct rdma_job {
	struct wqe_ctx w;
	bool active;             /* a WQE is in progress; everything below is its state */
	uint8_t phase;           /* enum job_phase */
	uint8_t recv_op;         /* IONIC_V1_CQE_RECV_OP_* the peer's receive completes with, or RECV_OP_NONE */
	bool read;               /* RDMA READ: the remote range is the source */
	uint32_t peer_id, peer_epoch;
	bool claimed;            /* the peer's next receive (rid, rsgl) is this message's */
	le64 rid;
	struct sgl rsgl;
	struct recv_info ri;
	struct xfer x;
};

/* The connected peer of an RC/UC QP on the loopback fabric. */
static struct rdma_qp *peer_of(struct ionic_dev *dev, const struct rdma_qp *qp, uint32_t *peer_id)
{
	struct rdma_qp *p;

	if (qp->dest_qpn == 0 || qp->dest_qpn >= IONIC_RDMA_NQP)
		return NULL;
	p = &dev->rdma->qp[qp->dest_qpn];
	if (!p->valid || p->type != qp->type || (p->state != IONIC_QPS_RTR && p->state != IONIC_QPS_RTS))
		return NULL;
	*peer_id = qp->dest_qpn;
	return p;
}

/* Every SGE of a local SGL resolves for the access (keys, PD, rights, ranges). */
static bool sgl_ok(struct ionic_dev *dev, const struct rdma_qp *qp, const struct sgl *sgl, uint16_t need)
{
	for (unsigned int i = 0; i < sgl->n; i++) {
		const struct rdma_mr *mr;
		uint64_t off;

		if (rdma_mr_resolve(dev, qp, sgl->e[i].key, sgl->e[i].va, sgl->e[i].len, need, &mr, &off))
			return false;
	}
	return true;
}

/* ---- the run queue and the QPs' work state ---------------------------------------------------------------- */

static void runq_add(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];

	if (qp->on_runq)
		return;
	qp->on_runq = true;
	qp->run_next = 0;
	qp->run_prev = r->run_tail;
	if (r->run_tail)
		r->qp[r->run_tail].run_next = qpid;
	else
		r->run_head = qpid;
	r->run_tail = qpid;
}

static void runq_remove(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];

	if (!qp->on_runq)
		return;
	if (qp->run_prev)
		r->qp[qp->run_prev].run_next = qp->run_next;
	else
		r->run_head = qp->run_next;
	if (qp->run_next)
		r->qp[qp->run_next].run_prev = qp->run_prev;
	else
		r->run_tail = qp->run_prev;
	qp->on_runq = false;
	qp->run_next = qp->run_prev = 0;
}

/* j's peer if it is still the QP j started with and can take part (RTR or RTS); NULL if it left. */
static struct rdma_qp *job_peer(struct ionic_dev *dev, const struct rdma_job *j)
{
	struct rdma_qp *p = &dev->rdma->qp[j->peer_id];

	if (!p->valid || p->epoch != j->peer_epoch || (p->state != IONIC_QPS_RTR && p->state != IONIC_QPS_RTS))
		return NULL;
	return p;
}

/*
 * A receive of qpid's became free (a message that held it completed or went
 * away): if a sender found it held meanwhile, senders waiting for a receive
 * try again on a later slice, and an in-process peer's waiting messages go
 * now. (Nobody else is woken: a waiting sender retries when receives are
 * posted, as it always did.)
 */
static void rq_released(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;

	if (!r->qp[qpid].rq_claim_waited)
		return;
	r->qp[qpid].rq_claim_waited = false;
	if (r->rnr_waiters)
		for (uint32_t i = 1; i < IONIC_RDMA_NQP; i++)
			if (r->qp[i].valid && r->qp[i].rnr_wait)
				runq_add(dev, i);
	if (r->peer.rq_posted)
		r->peer.rq_posted(r->peer.ctx, qpid);
}

/*
 * Hold the peer's next receive for j's message. 0; -EBUSY while another
 * QP's message holds it; otherwise as rq_peek (a malformed receive is
 * taken, as before).
 */
static int rq_claim(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	int rc;

	if (peer->rq_claim) {
		peer->rq_claim_waited = true;
		return -EBUSY;
	}
	rc = rq_peek(dev, peer, &j->rid, &j->rsgl);
	if (rc == 0) {
		peer->rq_claim = j->w.qpid;
		j->claimed = true;
	} else if (rc == -EINVAL) {
		peer->rq.head++;
	}
	return rc;
}

/* Let go of the peer's receive j holds (if the peer is still the one j started with). */
static void rq_unclaim(struct ionic_dev *dev, struct rdma_job *j)
{
	struct rdma_qp *p = &dev->rdma->qp[j->peer_id];

	if (!j->claimed)
		return;
	j->claimed = false;
	if (p->valid && p->epoch == j->peer_epoch && p->rq_claim == j->w.qpid) {
		p->rq_claim = 0;
		rq_released(dev, j->peer_id);
	}
}

/* j's message is done with the receive it holds: taken from the peer's queue, and let go. */
static void rq_commit(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	if (!j->claimed)
		return;
	peer->rq.head++;
	rq_unclaim(dev, j);
}

static void job_end(struct ionic_dev *dev, struct rdma_job *j)
{
	if (!j->active)
		return;
	rq_unclaim(dev, j);
	j->active = false;
}

/* The WQE in j starts work that may take several slices, against peer. */
static void job_begin(struct rdma_job *j, struct rdma_qp *peer, uint32_t peer_id, uint8_t recv_op)
{
	j->active = true;
	j->peer_id = peer_id;
	j->peer_epoch = peer->epoch;
	j->recv_op = recv_op;
	j->claimed = false;
	j->read = false;
	j->phase = JOB_COPY;
	j->ri = (struct recv_info){ .src_qpn = j->w.qpid, .op = recv_op, .imm_rkey = { j->w.h.imm_data_key.v },
				    .solicited = (j->w.flags & IONIC_V1_FLAG_SOL) != 0 };
}

void rdma_qp_halt(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];

	qp->epoch = ++r->epochs;
	wire_detach(dev, qpid, qp);
	qp->rq_claim = 0; /* void: the holder sees the new epoch */
	qp->rq_claim_waited = false;
	if (qp->job)
		job_end(dev, qp->job);
	runq_remove(dev, qpid);
	/*
	 * A peer's WQE moving bytes to or from it is on the run queue and learns
	 * of it at its next slice; one waiting for a receive here, when it is
	 * woken (as before, when such a WQE was retried from its start).
	 */
}

void rdma_qp_release(struct ionic_dev *dev, uint32_t qpid)
{
	struct rdma_qp *qp = &dev->rdma->qp[qpid];

	rdma_qp_halt(dev, qpid);
	free(qp->job);
	qp->job = NULL;
}

/* ---- RC and UC ------------------------------------------------------------------------------------------------ */

/* A local fault of an RDMA READ/WRITE is the requester's; a remote one an access violation at the responder. */
static int fail_rdma(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer, bool local_fault)
{
	struct wqe_ctx *w = &j->w;

	complete_msn(dev, w->qpid, w->qp, local_fault ? IONIC_STS_LOCAL_PROT_ERR : IONIC_STS_REMOTE_ACC_ERR);
	qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	if (!local_fault)
		qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR_ACCESS);
	return WQE_DONE;
}

/* The copy of a message or an RDMA READ/WRITE failed on one side. */
static int job_fault(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer, bool src_failed)
{
	struct wqe_ctx *w = &j->w;

	if (j->recv_op == RECV_OP_NONE || j->recv_op == IONIC_V1_CQE_RECV_OP_RDMA_IMM)
		return fail_rdma(dev, j, peer, src_failed == !j->read);
	/* A message: the receive it was filling completes in error; both QPs go to the error state. */
	rq_commit(dev, j, peer);
	complete_recv(dev, j->peer_id, peer, j->rid, &j->ri, 0,
		      src_failed ? IONIC_STS_REMOTE_OPER_ERR : IONIC_STS_LOCAL_PROT_ERR);
	complete_msn(dev, w->qpid, w->qp, src_failed ? IONIC_STS_LOCAL_PROT_ERR : IONIC_STS_REMOTE_OPER_ERR);
	qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR);
	qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	return WQE_DONE;
}

/* The peer's next receive for a message without one held yet: WQE_GO_ON when held, WQE_DONE or WQE_BLOCKED. */
static int job_claim(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	struct wqe_ctx *w = &j->w;
	int rc = rq_claim(dev, j, peer);

	if (rc == -EAGAIN && w->qp->type == IONIC_QPT_UC) {
		complete_msn(dev, w->qpid, w->qp, 0); /* UC has no RNR: the message is silently lost */
		return WQE_DONE;
	}
	/* Receiver not ready, or its next receive is another message's: wait for a receive (RNR, retried forever). */
	if (rc == -EAGAIN || rc == -EBUSY)
		return WQE_BLOCKED;
	if (rc) {
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_REMOTE_OPER_ERR);
		qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	return WQE_GO_ON;
}

/* Everything moved: the peer's receive (if any) and the requester complete. */
static int job_finish(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer)
{
	struct wqe_ctx *w = &j->w;

	rq_commit(dev, j, peer);
	if (j->recv_op == IONIC_V1_CQE_RECV_OP_SEND_INV &&
	    rdma_key_invalidate(dev, peer, be32_get(w->h.imm_data_key), true) != 0) {
		/* A key the receiver cannot invalidate: an invalid request, as on the wire (a NAK). */
		complete_recv(dev, j->peer_id, peer, j->rid, &j->ri, 0, IONIC_STS_LOCAL_QP_OPER_ERR);
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_REMOTE_INV_REQ_ERR);
		qp_error(dev, j->peer_id, peer, IONIC_V1_EQE_QP_ERR_REQUEST);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (j->recv_op != RECV_OP_NONE)
		complete_recv(dev, j->peer_id, peer, j->rid, &j->ri, (uint32_t)w->sgl.total, 0);
	complete_msn(dev, w->qpid, w->qp, 0);
	return WQE_DONE;
}

/*
 * One slice of a WQE in progress (from its start, or resumed): WQE_MORE when
 * the budget ran out first, WQE_BLOCKED when it waits for a receive,
 * WQE_DONE when it completed (successfully or not).
 */
static int job_run(struct ionic_dev *dev, struct rdma_job *j)
{
	struct wqe_ctx *w = &j->w;
	struct rdma_qp *peer = job_peer(dev, j);
	int rc;

	if (!peer) {
		/*
		 * The responder left (destroyed, reset, error) with the message half
		 * done: the requester gives up as after its retries. Its receive, if
		 * this message held one, went with it.
		 */
		j->claimed = false;
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_RETRY_EXCEEDED);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (j->phase == JOB_COPY) {
		/* The responder's access flags are checked on every slice, as on every packet. */
		if (j->recv_op == RECV_OP_NONE || j->recv_op == IONIC_V1_CQE_RECV_OP_RDMA_IMM) {
			if (!(peer->access & (j->read ? IONIC_QPF_REMOTE_READ : IONIC_QPF_REMOTE_WRITE)))
				return fail_rdma(dev, j, peer, false);
		}
		rc = xfer_step(dev, &j->x, true);
		if (rc == XFER_MORE)
			return WQE_MORE;
		if (rc != XFER_DONE)
			return job_fault(dev, j, peer, rc == XFER_SRC_FAULT);
		if (j->recv_op != IONIC_V1_CQE_RECV_OP_RDMA_IMM)
			return job_finish(dev, j, peer);
		j->phase = JOB_IMM;
	}
	/* WRITE_IMM's message part: checked as a SEND's (an empty SGE with a bad key fails here). */
	if (!sgl_ok(dev, w->qp, &w->sgl, 0)) {
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_PROT_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	rc = job_claim(dev, j, peer);
	return rc == WQE_GO_ON ? job_finish(dev, j, peer) : rc;
}

/* SEND, SEND_IMM and SEND_INV on RC/UC: a message into the peer's next receive. */
static int exec_rc_message(struct ionic_dev *dev, struct rdma_job *j, struct rdma_qp *peer, uint32_t peer_id,
			   uint8_t recv_op)
{
	struct wqe_ctx *w = &j->w;
	struct endpoint src = { .qp = w->qp, .sgl = &w->sgl };
	struct endpoint dst = { .qp = peer, .sgl = &j->rsgl, .need = IONIC_MRF_LOCAL_WRITE };
	uint64_t len = w->sgl.total;
	int rc;

	/* A requester's own fault fails before anything is sent: the responder keeps its receive. */
	if (!sgl_ok(dev, w->qp, &w->sgl, 0)) {
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_PROT_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	job_begin(j, peer, peer_id, recv_op);
	rc = job_claim(dev, j, peer);
	if (rc != WQE_GO_ON) {
		job_end(dev, j); /* nothing was done: a blocked WQE starts afresh when it is run again */
		return rc;
	}
	if (len > j->rsgl.total) {
		/* The responder saw an invalid request; the requester gets the NAK's status. */
		rq_commit(dev, j, peer);
		complete_recv(dev, peer_id, peer, j->rid, &j->ri, 0, IONIC_STS_LOCAL_LEN_ERR);
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_REMOTE_INV_REQ_ERR);
		qp_error(dev, peer_id, peer, IONIC_V1_EQE_QP_ERR_REQUEST);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	xfer_init(&j->x, &src, &dst, len);
	return job_run(dev, j);
}

/* ---- the wire (ionic_rdma_wire_ops) --------------------------------------------------------------------- */

/*
 * An RC or UC QP the wire transport carries. Its send WQEs are read, checked and
 * handed over as they come; the transport completes them later, in order,
 * and may read or write their local SGL any number of times before (a
 * retransmission, a READ re-requested), so each one's SGL is kept here until
 * it completes: a ring of WIRE_MAX_WR, wr_id being a sequence number. One
 * receive at a time is held for a message arriving in several packets.
 */
#define WIRE_MAX_WR 128u

struct wire_wr {
	uint64_t seq;
	uint8_t op;              /* IONIC_V1_OP_* */
	struct sgl sgl;          /* atomics: the one local SGE of their body */
};

struct rdma_wire {
	uint64_t next_seq;       /* wr_id of the next WQE handed over */
	uint64_t done_seq;       /* the oldest one not complete */
	bool waiting;            /* the SQ waits for a completion (ring full, or a local error to report in order) */
	uint8_t smac[6], dmac[6];
	bool recv_held;
	uint64_t recv_seq;       /* handle of the held receive */
	le64 rid;
	struct sgl rsgl;
	struct wire_wr wr[WIRE_MAX_WR];
};

/* Bytes at offset of a local SGL, copied to or from buf. 0 or -errno. */
static int sgl_copy_at(struct ionic_dev *dev, struct rdma_qp *qp, const struct sgl *sgl, uint64_t offset,
		       void *buf, uint32_t len, enum rdma_xfer dir, uint16_t need)
{
	struct endpoint ep = { .qp = qp, .sgl = sgl, .need = need };
	struct cursor c = { sgl, 0, 0 };
	uint64_t unused = 0;

	if (offset > sgl->total || len > sgl->total - offset)
		return -EFAULT;
	if (len == 0)
		return 0;
	while (c.i < sgl->n && offset >= sgl->e[c.i].len) {
		offset -= sgl->e[c.i].len;
		c.i++;
	}
	c.off = offset;
	rdma_charge(dev->rdma, len);
	return ep_xfer(dev, &ep, &c, &unused, buf, len, dir);
}

/* The QP qpn if it is on the wire. */
static struct rdma_qp *wire_qp(struct ionic_dev *dev, uint32_t qpn)
{
	struct rdma_qp *qp;

	if (qpn == 0 || qpn >= IONIC_RDMA_NQP)
		return NULL;
	qp = &dev->rdma->qp[qpn];
	return qp->valid && qp->wire ? qp : NULL;
}

static struct wire_wr *wire_wr_find(struct rdma_wire *wi, uint64_t wr_id)
{
	struct wire_wr *e;

	if (wr_id < wi->done_seq || wr_id >= wi->next_seq)
		return NULL;
	e = &wi->wr[wr_id % WIRE_MAX_WR];
	return e->seq == wr_id ? e : NULL;
}

static void wire_detach(struct ionic_dev *dev, uint32_t qpid, struct rdma_qp *qp)
{
	struct rdma_wire *wi = qp->wire;

	if (!wi)
		return;
	qp->wire = NULL; /* first: what the transport flushes on its way out finds the QP gone */
	if (dev->rdma->wire.qp_detach)
		dev->rdma->wire.qp_detach(dev->rdma->wire.ctx, qpid);
	free(wi);
}

static uint32_t wire_sts(enum ionic_rdma_wire_status st)
{
	static const uint32_t map[] = {
		[IONIC_WIRE_OK] = 0,
		[IONIC_WIRE_LOC_LEN_ERR] = IONIC_STS_LOCAL_LEN_ERR,
		[IONIC_WIRE_LOC_QP_OP_ERR] = IONIC_STS_LOCAL_QP_OPER_ERR,
		[IONIC_WIRE_LOC_PROT_ERR] = IONIC_STS_LOCAL_PROT_ERR,
		[IONIC_WIRE_LOC_ACCESS_ERR] = IONIC_STS_LOCAL_ACC_ERR,
		[IONIC_WIRE_REM_INV_REQ_ERR] = IONIC_STS_REMOTE_INV_REQ_ERR,
		[IONIC_WIRE_REM_ACCESS_ERR] = IONIC_STS_REMOTE_ACC_ERR,
		[IONIC_WIRE_REM_OP_ERR] = IONIC_STS_REMOTE_OPER_ERR,
		[IONIC_WIRE_BAD_RESP_ERR] = IONIC_STS_BAD_RESP_ERR,
		[IONIC_WIRE_RETRY_EXC_ERR] = IONIC_STS_RETRY_EXCEEDED,
		[IONIC_WIRE_RNR_RETRY_EXC_ERR] = IONIC_STS_RNR_RETRY_EXCEEDED,
		[IONIC_WIRE_FLUSH_ERR] = IONIC_STS_WQE_FLUSHED_ERR,
	};

	return (unsigned)st < sizeof(map) / sizeof(map[0]) ? map[st] : IONIC_STS_LOCAL_QP_OPER_ERR;
}

/*
 * A send WQE of a QP on the wire: checked here (the requester's own faults
 * fail before anything is sent), then handed to the transport. Its
 * completion comes from ionic_rdma_wire_send_done, in order; a local error
 * found here waits until every WQE before it has completed, so that the
 * completions stay in order too.
 */
static int exec_rc_wire(struct ionic_dev *dev, struct wqe_ctx *w)
{
	struct rdma_qp *qp = w->qp;
	struct rdma_wire *wi = qp->wire;
	struct ionic_rdma_wire_wr wr = { .wr_id = wi->next_seq };
	struct ionic_v1_common_bdy b;
	struct ionic_v1_atomic_bdy a;
	struct wire_wr *e;
	uint16_t need = 0;
	uint32_t st = 0;
	int rc;

	if (wi->next_seq - wi->done_seq >= WIRE_MAX_WR) {
		wi->waiting = true;
		return WQE_BLOCKED;
	}
	memcpy(&b, w->wqe + sizeof(w->h), sizeof(b));
	memcpy(&a, w->wqe + sizeof(w->h), sizeof(a));
	wr.solicited = (w->flags & IONIC_V1_FLAG_SOL) != 0;
	wr.rkey = be32_get(b.dest_qkey_or_rkey);
	wr.va = (uint64_t)be32_get(b.ah_id_or_va_high) << 32 | be32_get(b.dest_qpn_or_va_low);
	wr.imm = be32_get(w->h.imm_data_key);
	switch (w->h.op) {
	case IONIC_V1_OP_SEND: wr.op = IONIC_WIRE_SEND; break;
	case IONIC_V1_OP_SEND_IMM: wr.op = IONIC_WIRE_SEND_IMM; break;
	case IONIC_V1_OP_SEND_INV: wr.op = IONIC_WIRE_SEND_INV; wr.inv_rkey = wr.imm; break;
	case IONIC_V1_OP_RDMA_WRITE: wr.op = IONIC_WIRE_WRITE; break;
	case IONIC_V1_OP_RDMA_WRITE_IMM: wr.op = IONIC_WIRE_WRITE_IMM; break;
	case IONIC_V1_OP_RDMA_READ: wr.op = IONIC_WIRE_READ; need = IONIC_MRF_LOCAL_WRITE; break;
	case IONIC_V1_OP_ATOMIC_CS:
	case IONIC_V1_OP_ATOMIC_FA:
		wr.op = w->h.op == IONIC_V1_OP_ATOMIC_CS ? IONIC_WIRE_CMP_SWAP : IONIC_WIRE_FETCH_ADD;
		wr.va = (uint64_t)be32_get(a.remote_va_high) << 32 | be32_get(a.remote_va_low);
		wr.rkey = be32_get(a.remote_rkey);
		wr.swap_add = (uint64_t)be32_get(a.swap_add_high) << 32 | be32_get(a.swap_add_low);
		wr.compare = (uint64_t)be32_get(a.compare_high) << 32 | be32_get(a.compare_low);
		w->sgl.n = 1;
		w->sgl.e[0].key = be32_get(a.sge.lkey);
		w->sgl.e[0].va = be64_get(a.sge.va);
		w->sgl.e[0].len = 8;
		w->sgl.total = 8;
		need = IONIC_MRF_LOCAL_WRITE;
		break;
	default:
		st = IONIC_STS_LOCAL_QP_OPER_ERR;
		break;
	}
	if (st == 0 && (w->flags & IONIC_V1_FLAG_INL))
		st = IONIC_STS_LOCAL_QP_OPER_ERR; /* inline data: not offered */
	if (st == 0 && !sgl_ok(dev, qp, &w->sgl, need))
		st = IONIC_STS_LOCAL_PROT_ERR;
	wr.len = (uint32_t)w->sgl.total;
	if (st == 0) {
		e = &wi->wr[wi->next_seq % WIRE_MAX_WR];
		e->seq = wi->next_seq;
		e->op = w->h.op;
		e->sgl = w->sgl;
		rc = dev->rdma->wire.post(dev->rdma->wire.ctx, w->qpid, &wr);
		if (rc == 0) {
			wi->next_seq++;
			return WQE_DONE;
		}
		if (rc == -ENOSPC && wi->next_seq != wi->done_seq) {
			wi->waiting = true;
			return WQE_BLOCKED;
		}
		st = IONIC_STS_LOCAL_QP_OPER_ERR;
	}
	if (wi->next_seq != wi->done_seq) {
		wi->waiting = true; /* reported after the WQEs before it */
		return WQE_BLOCKED;
	}
	complete_msn(dev, w->qpid, qp, st);
	qp_error(dev, w->qpid, qp, IONIC_V1_EQE_QP_ERR);
	return WQE_DONE;
}

/*
 * The addresses of a header template (QP or AH) into *p: false unless it is
 * Ethernet (a VLAN tag allowed), IPv4 without options and UDP, the only kind
 * that can name a RoCEv2 host.
 */
static bool template_path(const uint8_t *t, uint8_t len, struct ionic_rdma_wire_path *p)
{
	const uint8_t *ip;
	uint32_t l2 = 14;
	uint16_t et = len >= 14 ? (uint16_t)(t[12] << 8 | t[13]) : 0;

	if (et == 0x8100 && len >= 18) {
		l2 = 18;
		et = (uint16_t)(t[16] << 8 | t[17]);
	}
	if (et != 0x0800 || len < l2 + 20 || (t[l2] >> 4) != 4 || t[l2 + 9] != 17)
		return false;
	p->vlan = l2 == 18;
	p->tci = p->vlan ? (uint16_t)(t[14] << 8 | t[15]) : 0;
	ip = t + l2;
	memcpy(p->dmac, t, 6);
	memcpy(p->smac, t + 6, 6);
	p->tos = ip[1];
	p->ttl = ip[8];
	p->sip = (uint32_t)ip[12] << 24 | (uint32_t)ip[13] << 16 | (uint32_t)ip[14] << 8 | ip[15];
	p->dip = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
	if (len >= l2 + 28 && (ip[0] & 0xf) == 5)
		p->sport = (uint16_t)(ip[20] << 8 | ip[21]);
	return true;
}

void rdma_wire_modify(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];
	struct ionic_rdma_wire_path p = { 0 };
	int rc;

	if (!r->wire.qp_attach)
		return;
	if (!template_path(qp->hdr, qp->hdr_len, &p)) {
		wire_detach(dev, qpid, qp); /* loopback (a QP whose address vector changed leaves the wire) */
		return;
	}
	p.dest_qpn = qp->dest_qpn;
	p.sq_psn = qp->sq_psn;
	p.rq_psn = qp->rq_psn;
	/* The driver sends log2 of the path MTU (IB enum + 7); anything else: the IB default of 1024. */
	p.pmtu = qp->pmtu >= 8 && qp->pmtu <= 12 ? 1u << qp->pmtu : 1024;
	p.timeout = qp->timeout & 31;
	p.retry_cnt = qp->retry & 7;
	p.rnr_retry = (qp->retry >> 4) & 7;
	/*
	 * The driver sends rrq_depth = order_base_2(max_rd_atomic + 2) - 1 and reads back
	 * max_rd_atomic as 2^rrq_depth - 1 (ionic_controlpath.c: a ring with a hole): that many READs
	 * and atomics may be outstanding, so a peer that granted one never sees two. At least 1
	 * (no depth given), at most 16.
	 */
	{
		unsigned d = qp->rrq_depth > 5 ? 5 : qp->rrq_depth, n = d ? (1u << d) - 1 : 1;

		p.max_rd_atomic = (uint8_t)(n > 16 ? 16 : n);
	}
	p.min_rnr_timer = qp->rnr_timer & 31;
	p.rts = qp->state == IONIC_QPS_RTS;
	p.uc = qp->type == IONIC_QPT_UC;
	rc = r->wire.qp_attach(r->wire.ctx, qpid, &p);
	if (rc == 1 && !qp->wire) {
		qp->wire = calloc(1, sizeof(*qp->wire));
		if (!qp->wire) {
			LOG_WARN("ionic rdma: no memory for QP %u's wire state", qpid);
			r->wire.qp_detach(r->wire.ctx, qpid);
			rc = -ENOMEM;
		}
	}
	if (rc == 1) {
		memcpy(qp->wire->smac, p.smac, 6);
		memcpy(qp->wire->dmac, p.dmac, 6);
		return;
	}
	if (rc < 0) {
		LOG_WARN("ionic rdma: QP %u cannot go on the wire (%d)", qpid, rc);
		qp_error(dev, qpid, qp, IONIC_V1_EQE_QP_ERR);
	} else {
		wire_detach(dev, qpid, qp); /* its destination is the device itself now: loopback */
	}
}

/* Gather a WQE's local SGL into buf (at most cap bytes). 0, or an IONIC_STS_* for the sender. */
static uint32_t gather(struct ionic_dev *dev, struct wqe_ctx *w, void *buf, size_t cap)
{
	struct endpoint src = { .qp = w->qp, .sgl = &w->sgl };
	struct cursor c = { &w->sgl, 0, 0 };
	uint64_t unused = 0;

	if (w->sgl.total > cap)
		return IONIC_STS_REMOTE_INV_REQ_ERR;
	rdma_charge(dev->rdma, w->sgl.total);
	return ep_xfer(dev, &src, &c, &unused, buf, (size_t)w->sgl.total, RDMA_FROM_GUEST) ? IONIC_STS_LOCAL_PROT_ERR
											 : 0;
}

/*
 * An RC QP connected to an in-process peer: SENDs go to it; it never serves
 * RDMA READ/WRITE. The peer moves its data (an NVMe-oF command's, at most
 * MDTS: 1 MiB) before it returns, with ionic_rdma_peer_xfer(), which charges
 * the budget: the next capsule waits for the next slice.
 */
static int exec_rc_to_peer(struct ionic_dev *dev, struct wqe_ctx *w)
{
	static uint8_t msg[PEER_MSG_MAX];
	uint32_t st;

	if (w->h.op != IONIC_V1_OP_SEND && w->h.op != IONIC_V1_OP_SEND_IMM && w->h.op != IONIC_V1_OP_SEND_INV)
		st = IONIC_STS_REMOTE_ACC_ERR;
	else if (w->flags & IONIC_V1_FLAG_INL)
		st = IONIC_STS_LOCAL_QP_OPER_ERR;
	else
		st = gather(dev, w, msg, sizeof(msg));
	if (st == 0)
		st = dev->rdma->peer.rc_send(dev->rdma->peer.ctx, w->qpid, w->qp->dest_qpn, msg, (size_t)w->sgl.total);
	complete_msn(dev, w->qpid, w->qp, st);
	if (st)
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	return WQE_DONE;
}

static int exec_rc(struct ionic_dev *dev, struct rdma_job *j)
{
	struct wqe_ctx *w = &j->w;
	struct ionic_v1_common_bdy b;
	struct rdma_qp *peer;
	uint32_t peer_id;

	if (w->qp->wire)
		return exec_rc_wire(dev, w);
	memcpy(&b, w->wqe + sizeof(w->h), sizeof(b));
	peer = peer_of(dev, w->qp, &peer_id);
	if (!peer && dev->rdma->peer.rc_owns && dev->rdma->peer.rc_owns(dev->rdma->peer.ctx, w->qp->dest_qpn))
		return exec_rc_to_peer(dev, w);
	if (!peer) {
		/* Nobody at the other end: the transport gives up, as after its retries. */
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_RETRY_EXCEEDED);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (w->flags & IONIC_V1_FLAG_INL) {
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_QP_OPER_ERR); /* inline data: not offered */
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	switch (w->h.op) {
	case IONIC_V1_OP_SEND:
		return exec_rc_message(dev, j, peer, peer_id, IONIC_V1_CQE_RECV_OP_SEND);
	case IONIC_V1_OP_SEND_IMM:
		return exec_rc_message(dev, j, peer, peer_id, IONIC_V1_CQE_RECV_OP_SEND_IMM);
	case IONIC_V1_OP_SEND_INV:
		return exec_rc_message(dev, j, peer, peer_id, IONIC_V1_CQE_RECV_OP_SEND_INV);
	case IONIC_V1_OP_RDMA_WRITE:
	case IONIC_V1_OP_RDMA_WRITE_IMM:
	case IONIC_V1_OP_RDMA_READ: {
		bool read = w->h.op == IONIC_V1_OP_RDMA_READ;
		uint16_t qpf = read ? IONIC_QPF_REMOTE_READ : IONIC_QPF_REMOTE_WRITE;
		struct endpoint remote = {
			.qp = peer, .rkey = be32_get(b.dest_qkey_or_rkey),
			.rva = (uint64_t)be32_get(b.ah_id_or_va_high) << 32 | be32_get(b.dest_qpn_or_va_low),
			.need = read ? IONIC_MRF_REMOTE_READ : IONIC_MRF_REMOTE_WRITE,
		};
		struct endpoint local = { .qp = w->qp, .sgl = &w->sgl, .need = read ? IONIC_MRF_LOCAL_WRITE : 0 };

		/* (A READ on UC counts as the requester's own fault, a missing right as the responder's.) */
		if (!(peer->access & qpf) || (w->qp->type == IONIC_QPT_UC && read)) {
			j->peer_id = peer_id;
			return fail_rdma(dev, j, peer, (peer->access & qpf) != 0);
		}
		job_begin(j, peer, peer_id,
			  w->h.op == IONIC_V1_OP_RDMA_WRITE_IMM ? IONIC_V1_CQE_RECV_OP_RDMA_IMM : RECV_OP_NONE);
		j->read = read;
		xfer_init(&j->x, read ? &remote : &local, read ? &local : &remote, w->sgl.total);
		return job_run(dev, j);
	}
	case IONIC_V1_OP_ATOMIC_CS:
	case IONIC_V1_OP_ATOMIC_FA: {
		struct ionic_v1_atomic_bdy a;
		uint64_t old, val, cmp, addr;
		uint32_t rkey;
		int rc;

		memcpy(&a, w->wqe + sizeof(w->h), sizeof(a));
		addr = (uint64_t)be32_get(a.remote_va_high) << 32 | be32_get(a.remote_va_low);
		rkey = be32_get(a.remote_rkey);
		val = (uint64_t)be32_get(a.swap_add_high) << 32 | be32_get(a.swap_add_low);
		cmp = (uint64_t)be32_get(a.compare_high) << 32 | be32_get(a.compare_low);
		rc = (addr & 7) || !(peer->access & IONIC_QPF_REMOTE_ATOMIC) || w->qp->type != IONIC_QPT_RC ? -EACCES
			: rdma_mr_xfer(dev, peer, rkey, addr, &old, 8, RDMA_FROM_GUEST, IONIC_MRF_REMOTE_ATOMIC);
		if (rc == 0) {
			uint64_t host_old = le64toh(old), nv = w->h.op == IONIC_V1_OP_ATOMIC_FA ? host_old + val
								   : (host_old == cmp ? val : host_old);
			uint64_t le_new = htole64(nv);

			if (nv != host_old)
				rc = rdma_mr_xfer(dev, peer, rkey, addr, &le_new, 8, RDMA_TO_GUEST, IONIC_MRF_REMOTE_ATOMIC);
		}
		if (rc == 0)
			rc = rdma_mr_xfer(dev, w->qp, be32_get(a.sge.lkey), be64_get(a.sge.va), &old, 8, RDMA_TO_GUEST,
					  IONIC_MRF_LOCAL_WRITE) ? 1 : 0;
		if (rc) {
			complete_msn(dev, w->qpid, w->qp, rc == 1 ? IONIC_STS_LOCAL_PROT_ERR : IONIC_STS_REMOTE_ACC_ERR);
			qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
			if (rc != 1) /* as for RDMA READ/WRITE: the responder saw an access violation */
				qp_error(dev, peer_id, peer, IONIC_V1_EQE_QP_ERR_ACCESS);
			return WQE_DONE;
		}
		complete_msn(dev, w->qpid, w->qp, 0);
		return WQE_DONE;
	}
	default:
		complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_QP_OPER_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
}

/* ---- UD and GSI ----------------------------------------------------------------------------------------- */

/*
 * The 40-byte GRH area of a UD receive, built from the sender's header
 * template: for RoCEv2 over IPv4 the IPv4 header sits in bytes 20-39 (the IB
 * core reads the addresses from there and checks its checksum); for IPv6 the
 * whole area is the IPv6 header.
 */
static bool grh_from_template(const uint8_t *t, uint8_t len, uint32_t payload, uint8_t grh[GRH_BYTES],
			      uint8_t smac[6], bool *ipv4)
{
	uint32_t l2 = 14;
	uint16_t et;

	if (len < 14)
		return false;
	memcpy(smac, t + 6, 6);
	et = (uint16_t)(t[12] << 8 | t[13]);
	if (et == 0x8100 && len >= 18) {
		l2 = 18;
		et = (uint16_t)(t[16] << 8 | t[17]);
	}
	memset(grh, 0, GRH_BYTES);
	if (et == 0x0800 && len >= l2 + 20) {
		uint8_t *ip = grh + 20;
		uint16_t tot = (uint16_t)(20 + 8 + 12 + 8 + payload + 4), sum;

		memcpy(ip, t + l2, 20);
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[10] = ip[11] = 0;
		sum = inet_csum_fold(inet_csum_add(0, ip, 20));
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
		*ipv4 = true;
		return true;
	}
	if (et == 0x86dd && len >= l2 + 40) {
		memcpy(grh, t + l2, 40);
		grh[4] = (uint8_t)((payload + 8 + 12 + 8 + 4) >> 8);
		grh[5] = (uint8_t)(payload + 8 + 12 + 8 + 4);
		*ipv4 = false;
		return true;
	}
	return false;
}

/*
 * A UD send whose address handle names another host (an IPv4 template whose
 * destination differs from its source): gathered and handed to the wire
 * transport; true when it was (the WQE is then complete).
 */
static bool wire_ud(struct ionic_dev *dev, struct wqe_ctx *w, const struct rdma_ah *ah, uint32_t dest_qpn,
		    uint32_t qkey)
{
	static uint8_t msg[4096];
	struct ionic_rdma_wire_path p = { 0 };
	struct ionic_rdma_wire_ud ud = {
		.src_qpn = w->qpid, .dest_qpn = dest_qpn, .qkey = qkey, .has_imm = w->h.op == IONIC_V1_OP_SEND_IMM,
		.solicited = (w->flags & IONIC_V1_FLAG_SOL) != 0, .imm = be32_get(w->h.imm_data_key),
	};
	uint32_t st;

	if (!template_path(ah->hdr, ah->hdr_len, &p) || p.dip == p.sip)
		return false;
	st = gather(dev, w, msg, sizeof(msg));
	if (st == 0)
		dev->rdma->wire.ud_send(dev->rdma->wire.ctx, &p, &ud, msg, (uint32_t)w->sgl.total);
	complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), st);
	if (st)
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
	return true;
}

static int exec_ud(struct ionic_dev *dev, struct wqe_ctx *w)
{
	struct ionic_v1_common_bdy b;
	uint32_t ah_id, dest_qpn, qkey;
	const struct rdma_ah *ah;
	struct recv_info ri = { .src_qpn = w->qpid };
	uint8_t grh[GRH_BYTES];
	struct rdma_qp *dst;
	struct sgl rsgl;
	le64 rid;
	bool src_failed;
	int rc;

	memcpy(&b, w->wqe + sizeof(w->h), sizeof(b));
	ah_id = be32_get(b.ah_id_or_va_high);
	dest_qpn = be32_get(b.dest_qpn_or_va_low) & 0xffffffu;
	qkey = be32_get(b.dest_qkey_or_rkey);
	/* A Q_Key with its top bit set means "the sending QP's own Q_Key" (IBA 10.2.5). */
	if (qkey & 0x80000000u)
		qkey = w->qp->qkey;
	if ((w->h.op != IONIC_V1_OP_SEND && w->h.op != IONIC_V1_OP_SEND_IMM) || (w->flags & IONIC_V1_FLAG_INL)) {
		/* Only SEND and SEND_IMM exist on UD, and this device offers no inline data. */
		complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_QP_OPER_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	ah = ah_id < IONIC_RDMA_NAH ? &dev->rdma->ah[ah_id] : NULL;
	if (!ah || !ah->valid || ah->pd != w->qp->pd || w->sgl.total > 4096 ||
	    !grh_from_template(ah->hdr, ah->hdr_len, (uint32_t)w->sgl.total, grh, ri.smac, &ri.ipv4)) {
		complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_PROT_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	ri.op = w->h.op == IONIC_V1_OP_SEND_IMM ? IONIC_V1_CQE_RECV_OP_SEND_IMM : IONIC_V1_CQE_RECV_OP_SEND;
	ri.solicited = (w->flags & IONIC_V1_FLAG_SOL) != 0;
	if (dev->rdma->wire.ud_send && ri.ipv4 && wire_ud(dev, w, ah, dest_qpn, qkey))
		return WQE_DONE;
	if (dev->rdma->peer.ud_send) {
		static uint8_t msg[PEER_MSG_MAX];
		uint32_t st = gather(dev, w, msg, sizeof(msg));
		/* The destination address is in the IPv4 header just built into the GRH area. */
		uint32_t dst_ip = ri.ipv4 ? (uint32_t)grh[36] << 24 | (uint32_t)grh[37] << 16 | (uint32_t)grh[38] << 8 | grh[39]
					  : 0;

		if (st == 0 && dev->rdma->peer.ud_send(dev->rdma->peer.ctx, w->qpid, dst_ip, dest_qpn, msg,
						       (size_t)w->sgl.total)) {
			complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), 0);
			return WQE_DONE;
		}
	}
	ri.imm_rkey = w->h.imm_data_key;
	/* The loopback fabric: the destination is a UD QP of this guest; anything else is lost, as UD may be. */
	/* The sender's own fault fails before anything is sent. */
	if (!sgl_ok(dev, w->qp, &w->sgl, 0)) {
		complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_PROT_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	dst = dest_qpn < IONIC_RDMA_NQP ? &dev->rdma->qp[dest_qpn] : NULL;
	if (dst && dst->valid && dst->type == IONIC_QPT_UD &&
	    (dst->state == IONIC_QPS_RTR || dst->state == IONIC_QPS_RTS) &&
	    (dest_qpn == 1 ? qkey == ROCE_QKEY_GSI : qkey == dst->qkey)) {
		rc = rq_take(dev, dst, &rid, &rsgl);
		LOG_DEBUG("ionic rdma: UD %u -> %u: %llu bytes, receive %s (%llu bytes)", w->qpid, dest_qpn,
			  (unsigned long long)w->sgl.total, rc ? "missing" : "taken", (unsigned long long)rsgl.total);
		if (rc == 0) {
			struct endpoint src = { .qp = w->qp, .sgl = &w->sgl };
			struct endpoint d = { .qp = dst, .sgl = &rsgl, .need = IONIC_MRF_LOCAL_WRITE };
			struct cursor c = { &rsgl, 0, 0 };
			uint64_t unused = 0;

			/*
			 * A receive error is the start of a flush to the driver (it returns
			 * every posted receive): the QP goes to the error state with it.
			 */
			if (rsgl.total < GRH_BYTES + w->sgl.total) {
				complete_recv(dev, dest_qpn, dst, rid, &ri, 0, IONIC_STS_LOCAL_LEN_ERR);
				qp_error(dev, dest_qpn, dst, IONIC_V1_EQE_QP_ERR);
			} else if (ep_xfer(dev, &d, &c, &unused, grh, GRH_BYTES, RDMA_TO_GUEST)) {
				complete_recv(dev, dest_qpn, dst, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
				qp_error(dev, dest_qpn, dst, IONIC_V1_EQE_QP_ERR);
			} else {
				/* The payload follows the GRH area in the same receive SGL. */
				struct sgl rest = rsgl;
				struct cursor rc2 = c;
				unsigned int k = 0;

				for (unsigned int i = rc2.i; i < rsgl.n; i++, k++) {
					rest.e[k] = rsgl.e[i];
					if (i == rc2.i) {
						rest.e[k].va += rc2.off;
						rest.e[k].len -= (uint32_t)rc2.off;
					}
				}
				rest.n = k;
				d.sgl = &rest;
				src_failed = false;
				if (move_bytes(dev, &src, &d, w->sgl.total, &src_failed)) {
					complete_recv(dev, dest_qpn, dst, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
					qp_error(dev, dest_qpn, dst, IONIC_V1_EQE_QP_ERR);
					if (src_failed) {
						complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_PROT_ERR);
						qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
						return WQE_DONE;
					}
				} else {
					complete_recv(dev, dest_qpn, dst, rid, &ri, GRH_BYTES + (uint32_t)w->sgl.total, 0);
				}
			}
		}
	} else {
		LOG_DEBUG("ionic rdma: UD %u -> %u qkey %#x: no such receiver, dropped", w->qpid, dest_qpn, qkey);
	}
	complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), 0);
	return WQE_DONE;
}

/* ---- the queues ------------------------------------------------------------------------------------------ */

static int exec_wqe(struct ionic_dev *dev, struct rdma_job *j)
{
	struct wqe_ctx *w = &j->w;
	uint32_t st;

	w->flags = be16_get(w->h.flags);
	if (w->h.op == IONIC_V1_OP_REG_MR || w->h.op == IONIC_V1_OP_LOCAL_INV || w->h.op == IONIC_V1_OP_BIND_MW) {
		/* On the wire, a local operation waits for the WQEs before it (which may still read their memory). */
		if (w->qp->wire && w->qp->wire->next_seq != w->qp->wire->done_seq) {
			w->qp->wire->waiting = true;
			return WQE_BLOCKED;
		}
		if (w->h.op == IONIC_V1_OP_REG_MR)
			st = rdma_reg_mr(dev, w->qp, &w->h, w->wqe + sizeof(w->h));
		else if (w->h.op == IONIC_V1_OP_LOCAL_INV)
			st = rdma_key_invalidate(dev, w->qp, be32_get(w->h.imm_data_key), false)
				     ? IONIC_STS_MEM_MGMT_OPER_ERR : 0;
		else if (w->qp->type == IONIC_QPT_UD)
			st = IONIC_STS_LOCAL_QP_OPER_ERR; /* windows bind on connected QPs only */
		else
			st = rdma_bind_mw(dev, w->qpid, w->qp, &w->h, w->wqe + sizeof(w->h));
		complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), st);
		if (st)
			qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	/* Atomics carry their one local SGE in the body; everything else an SGL (or inline data). */
	if (w->h.op != IONIC_V1_OP_ATOMIC_CS && w->h.op != IONIC_V1_OP_ATOMIC_FA && !(w->flags & IONIC_V1_FLAG_INL) &&
	    !parse_sgl(w->wqe, w->stride, w->h.num_sge_key, w->flags, &w->sgl)) {
		if (w->qp->wire && w->qp->wire->next_seq != w->qp->wire->done_seq) {
			w->qp->wire->waiting = true; /* its error after the completions before it */
			return WQE_BLOCKED;
		}
		if (w->qp->type == IONIC_QPT_UD)
			complete_npg(dev, w->qpid, w->qp, le64_get(w->h.wqe_id), IONIC_STS_LOCAL_LEN_ERR);
		else
			complete_msn(dev, w->qpid, w->qp, IONIC_STS_LOCAL_LEN_ERR);
		qp_error(dev, w->qpid, w->qp, IONIC_V1_EQE_QP_ERR);
		return WQE_DONE;
	}
	if (w->flags & IONIC_V1_FLAG_INL)
		w->sgl.n = 0, w->sgl.total = 0;
	return w->qp->type == IONIC_QPT_UD ? exec_ud(dev, w) : exec_rc(dev, j);
}

/* The QP's work state, made at its first send WQE; NULL when there is no memory for it. */
static struct rdma_job *qp_job(struct rdma_qp *qp)
{
	if (!qp->job)
		qp->job = calloc(1, sizeof(*qp->job));
	return qp->job;
}

void rdma_sq_run(struct ionic_dev *dev, uint32_t qpid)
{
	struct ionic_rdma *r = dev->rdma;
	struct rdma_qp *qp = &r->qp[qpid];
	uint32_t mask;

	if (!qp->valid || !qp->sq.present || qp->state != IONIC_QPS_RTS)
		return;
	mask = (1u << qp->sq.ring.depth_log2) - 1;
	if (qp->rnr_wait)
		r->rnr_waiters--;
	qp->rnr_wait = false;
	while ((qp->sq.head & mask) != qp->sq.prod && qp->state == IONIC_QPS_RTS) {
		struct rdma_job *j;
		int rc;

		if (r->budget == 0) {
			runq_add(dev, qpid); /* the rest waits for the next slice */
			return;
		}
		j = qp_job(qp);
		if (!j) {
			LOG_WARN("ionic rdma: no memory for QP %u's work state", qpid);
			qp_error(dev, qpid, qp, IONIC_V1_EQE_QP_ERR);
			return;
		}
		if (j->active) {
			rc = job_run(dev, j); /* the WQE at the head, under way */
		} else {
			struct wqe_ctx *w = &j->w;
			uint64_t addr;

			/*
			 * No memset of the whole context: its WQE buffer and SGL are
			 * over a kilobyte, and zeroing them cost more than running a
			 * 4 KiB WRITE. The WQE is read whole (stride >= 64 covers every
			 * fixed field), and the SGL is empty until parse_sgl fills it.
			 */
			memset(&w->h, 0, sizeof(w->h));
			w->flags = 0;
			w->sgl.n = 0;
			w->sgl.total = 0;
			w->qpid = qpid;
			w->qp = qp;
			w->stride = 1u << qp->sq.ring.stride_log2;
			if (w->stride > WQE_MAX || rdma_ring_addr(&qp->sq.ring, qp->sq.head, &addr) ||
			    ionic_dma_read(dev, addr, w->wqe, w->stride)) {
				ionic_guest_error(dev, "QP %u send queue slot %u is not mapped", qpid, qp->sq.head & mask);
				qp_error(dev, qpid, qp, IONIC_V1_EQE_QP_ERR);
				return;
			}
			memcpy(&w->h, w->wqe, sizeof(w->h));
			LOG_DEBUG("ionic rdma: QP %u SQ slot %u: op %u, %u SGEs, flags %#x", qpid, qp->sq.head & mask,
				  w->h.op, w->h.num_sge_key, be16_get(w->h.flags));
			rdma_charge(r, WQE_COST);
			rc = exec_wqe(dev, j);
		}
		if (rc == WQE_MORE) {
			runq_add(dev, qpid);
			return;
		}
		if (rc == WQE_BLOCKED) {
			if (!qp->rnr_wait)
				r->rnr_waiters++;
			qp->rnr_wait = true;
			return;
		}
		dev->stats.rdma_wqes++;
		job_end(dev, j);
		qp->sq.head++;
	}
}

/* New receives on qpid: sends that waited for one may go now. */
void rdma_rq_posted(struct ionic_dev *dev, uint32_t qpid)
{
	if (dev->rdma->peer.rq_posted)
		dev->rdma->peer.rq_posted(dev->rdma->peer.ctx, qpid);
	if (dev->rdma->rnr_waiters == 0)
		return; /* the common case: nobody waits for a receive */
	for (uint32_t i = 1; i < dev->rdma->qp_hw; i++)
		if (dev->rdma->qp[i].valid && dev->rdma->qp[i].rnr_wait)
			rdma_sq_run(dev, i);
}

bool rdma_work(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	r->budget = TURN_BUDGET;
	r->slice_t0 = 0;
	/*
	 * A QP goes back on the queue only with the budget spent (or with no
	 * budget left to begin), so this ends; each QP gets a slice in turn.
	 */
	while (r->run_head && r->budget) {
		uint32_t qpid = r->run_head;

		runq_remove(dev, qpid);
		rdma_sq_run(dev, qpid);
	}
	r->budget = TURN_BUDGET; /* for what the fds bring before the next slice */
	r->slice_t0 = 0;
	return r->run_head != 0;
}

/* ---- in-process peers ----------------------------------------------------------------------------------- */

void rdma_peer_qp_gone(struct ionic_dev *dev, uint32_t qpid)
{
	if (dev->rdma->peer.qp_gone)
		dev->rdma->peer.qp_gone(dev->rdma->peer.ctx, qpid);
}

void ionic_rdma_bus_master_on(struct ionic_dev *dev)
{
	struct ionic_rdma *r = dev->rdma;

	if (!r->peer.rq_posted)
		return;
	/* A peer held what it could not deliver meanwhile; it looks again as after a receive doorbell. */
	for (uint32_t i = 1; i < r->qp_hw && dev->bus_master; i++)
		if (r->qp[i].valid && r->qp[i].rq.present &&
		    (r->qp[i].state == IONIC_QPS_RTR || r->qp[i].state == IONIC_QPS_RTS))
			r->peer.rq_posted(r->peer.ctx, i);
}

void ionic_dev_set_rdma_peer(struct ionic_dev *dev, const struct ionic_rdma_peer_ops *ops)
{
	if (ops)
		dev->rdma->peer = *ops;
	else
		memset(&dev->rdma->peer, 0, sizeof(dev->rdma->peer));
}

static struct rdma_qp *peer_target(struct ionic_dev *dev, uint32_t guest_qpn)
{
	struct rdma_qp *qp;

	if (guest_qpn == 0 || guest_qpn >= IONIC_RDMA_NQP)
		return NULL;
	qp = &dev->rdma->qp[guest_qpn];
	if (!qp->valid || (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS))
		return NULL;
	return qp;
}

int ionic_rdma_peer_deliver(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t src_qpn, const void *payload,
			    size_t len, uint32_t inv_rkey, const uint8_t *grh, const uint8_t smac[6])
{
	struct rdma_qp *qp = peer_target(dev, guest_qpn);
	struct recv_info ri = { .src_qpn = src_qpn, .op = inv_rkey ? IONIC_V1_CQE_RECV_OP_SEND_INV
							     : IONIC_V1_CQE_RECV_OP_SEND };
	struct endpoint d;
	struct cursor c;
	struct sgl rsgl;
	uint64_t unused = 0;
	size_t hdr = grh ? GRH_BYTES : 0;
	le64 rid;
	int rc;

	if (!qp || !qp->rq.present)
		return -ENOTCONN;
	/* Without bus mastering no receive can be fetched: as if none were posted (ionic_rdma_bus_master_on). */
	if (!dev->bus_master)
		return -EAGAIN;
	if (qp->rq_claim) {
		qp->rq_claim_waited = true;
		return -EAGAIN; /* a message of the loopback fabric is filling the next receive */
	}
	rc = rq_take(dev, qp, &rid, &rsgl);
	if (rc == -EAGAIN)
		return -EAGAIN;
	ri.imm_rkey = be32_set(inv_rkey);
	ri.ipv4 = grh != NULL;
	if (smac)
		memcpy(ri.smac, smac, 6);
	if (rc || rsgl.total < hdr + len) {
		complete_recv(dev, guest_qpn, qp, rid, &ri, 0, rc ? IONIC_STS_LOCAL_QP_OPER_ERR : IONIC_STS_LOCAL_LEN_ERR);
		qp_error(dev, guest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EMSGSIZE;
	}
	d = (struct endpoint){ .qp = qp, .sgl = &rsgl, .need = IONIC_MRF_LOCAL_WRITE };
	c = (struct cursor){ &rsgl, 0, 0 };
	if ((grh && ep_xfer(dev, &d, &c, &unused, (void *)grh, hdr, RDMA_TO_GUEST)) ||
	    ep_xfer(dev, &d, &c, &unused, (void *)payload, len, RDMA_TO_GUEST)) {
		complete_recv(dev, guest_qpn, qp, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
		qp_error(dev, guest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EFAULT;
	}
	if (inv_rkey && rdma_key_invalidate(dev, qp, inv_rkey, true) != 0)
		LOG_DEBUG("ionic rdma: QP %u: a peer's SEND with invalidate named key %#x, which it cannot invalidate",
			  guest_qpn, inv_rkey);
	complete_recv(dev, guest_qpn, qp, rid, &ri, (uint32_t)(hdr + len), 0);
	return 0;
}

int ionic_rdma_peer_xfer(struct ionic_dev *dev, uint32_t guest_qpn, uint32_t rkey, uint64_t addr, void *buf,
			 size_t len, bool write)
{
	struct rdma_qp *qp = peer_target(dev, guest_qpn);

	if (!qp)
		return -ENOKEY;
	if (!(qp->access & (write ? IONIC_QPF_REMOTE_WRITE : IONIC_QPF_REMOTE_READ)))
		return -EACCES;
	rdma_charge(dev->rdma, len);
	return rdma_mr_xfer(dev, qp, rkey, addr, buf, len, write ? RDMA_TO_GUEST : RDMA_FROM_GUEST,
			    write ? IONIC_MRF_REMOTE_WRITE : IONIC_MRF_REMOTE_READ);
}

int ionic_rdma_key_xfer(struct ionic_dev *dev, uint32_t rkey, uint64_t addr, void *buf, size_t len, bool write)
{
	/* No QP here: the key's own PD applies, and a type 2 window (bound to a QP) serves no one. */
	rdma_charge(dev->rdma, len);
	return rdma_mr_xfer(dev, NULL, rkey, addr, buf, len, write ? RDMA_TO_GUEST : RDMA_FROM_GUEST,
			    write ? IONIC_MRF_REMOTE_WRITE : IONIC_MRF_REMOTE_READ);
}

int ionic_rdma_key_check(struct ionic_dev *dev, uint32_t rkey, uint64_t addr, size_t len, bool write)
{
	const struct rdma_mr *mr;
	uint64_t off;

	if (rkey == 0)
		return -ENOKEY; /* the reserved DMA key names raw guest memory: never a peer's */
	return rdma_mr_resolve(dev, NULL, rkey, addr, len, write ? IONIC_MRF_REMOTE_WRITE : IONIC_MRF_REMOTE_READ,
			       &mr, &off);
}

/* ---- the wire's entry points (ionic_dev.h) ---------------------------------------------------------------- */

void ionic_dev_set_rdma_wire(struct ionic_dev *dev, const struct ionic_rdma_wire_ops *ops)
{
	if (ops)
		dev->rdma->wire = *ops;
	else
		memset(&dev->rdma->wire, 0, sizeof(dev->rdma->wire));
}

int ionic_rdma_wire_local(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id, uint32_t offset, void *buf,
			  uint32_t len, bool to_guest)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct wire_wr *e = qp ? wire_wr_find(qp->wire, wr_id) : NULL;

	if (!e)
		return -ENOTCONN;
	return sgl_copy_at(dev, qp, &e->sgl, offset, buf, len, to_guest ? RDMA_TO_GUEST : RDMA_FROM_GUEST,
			   to_guest ? IONIC_MRF_LOCAL_WRITE : 0);
}

void ionic_rdma_wire_send_done(struct ionic_dev *dev, uint32_t qpn, uint64_t wr_id,
			       enum ionic_rdma_wire_status st, uint64_t orig)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct rdma_wire *wi = qp ? qp->wire : NULL;
	struct wire_wr *e = wi ? wire_wr_find(wi, wr_id) : NULL;
	uint32_t sts;

	if (!e || wr_id != wi->done_seq)
		return; /* not ours, or out of order: the transport completes in order */
	wi->done_seq++;
	if (st == IONIC_WIRE_FLUSH_ERR && qp->state == IONIC_QPS_ERR)
		return; /* the flush completion of qp_error covers it */
	if (st == IONIC_WIRE_OK && (e->op == IONIC_V1_OP_ATOMIC_CS || e->op == IONIC_V1_OP_ATOMIC_FA)) {
		uint64_t le = htole64(orig);

		if (sgl_copy_at(dev, qp, &e->sgl, 0, &le, 8, RDMA_TO_GUEST, IONIC_MRF_LOCAL_WRITE))
			st = IONIC_WIRE_LOC_PROT_ERR;
	}
	sts = wire_sts(st);
	complete_msn(dev, qpn, qp, sts);
	if (sts) {
		qp_error(dev, qpn, qp, IONIC_V1_EQE_QP_ERR); /* frees qp->wire */
		return;
	}
	if (wi->waiting) {
		wi->waiting = false;
		runq_add(dev, qpn); /* the next slice goes on with the send queue */
	}
}

int ionic_rdma_wire_recv_take(struct ionic_dev *dev, uint32_t qpn, uint64_t *handle)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct rdma_wire *wi;
	int rc;

	if (!qp || (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS))
		return -ENOTCONN;
	wi = qp->wire;
	if (wi->recv_held)
		return -EBUSY;
	if (!dev->bus_master)
		return -EAGAIN; /* no receive can be fetched: the sender's RNR retries cover it */
	rc = rq_take(dev, qp, &wi->rid, &wi->rsgl);
	if (rc == -EAGAIN)
		return -EAGAIN;
	if (rc) {
		struct recv_info ri = { .src_qpn = qp->dest_qpn };

		ionic_guest_error(dev, "QP %u receive queue slot unusable", qpn);
		if (rc == -EINVAL)
			complete_recv(dev, qpn, qp, wi->rid, &ri, 0, IONIC_STS_LOCAL_QP_OPER_ERR);
		qp_error(dev, qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EIO;
	}
	wi->recv_held = true;
	*handle = ++wi->recv_seq;
	return 0;
}

int ionic_rdma_wire_recv_write(struct ionic_dev *dev, uint32_t qpn, uint64_t handle, uint32_t offset,
			       const void *data, uint32_t len)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);

	if (!qp || !qp->wire->recv_held || qp->wire->recv_seq != handle)
		return -ENOTCONN;
	return sgl_copy_at(dev, qp, &qp->wire->rsgl, offset, (void *)data, len, RDMA_TO_GUEST,
			   IONIC_MRF_LOCAL_WRITE);
}

void ionic_rdma_wire_recv_done(struct ionic_dev *dev, uint32_t qpn, uint64_t handle,
			       const struct ionic_rdma_wire_recv *rv)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	struct rdma_wire *wi = qp ? qp->wire : NULL;
	struct recv_info ri;

	if (!wi || !wi->recv_held || wi->recv_seq != handle)
		return;
	wi->recv_held = false;
	if (rv->status == IONIC_WIRE_FLUSH_ERR && qp->state == IONIC_QPS_ERR)
		return;
	ri = (struct recv_info){
		.src_qpn = qp->dest_qpn,
		.op = rv->write_imm ? IONIC_V1_CQE_RECV_OP_RDMA_IMM
		      : rv->has_inv ? IONIC_V1_CQE_RECV_OP_SEND_INV
		      : rv->has_imm ? IONIC_V1_CQE_RECV_OP_SEND_IMM : IONIC_V1_CQE_RECV_OP_SEND,
		.imm_rkey = be32_set(rv->has_inv ? rv->inv_rkey : rv->imm),
		.solicited = rv->solicited,
	};
	memcpy(ri.smac, wi->dmac, 6);
	/* An error here comes with the responder's fatal NAK: ionic_rdma_wire_qp_fatal follows. */
	complete_recv(dev, qpn, qp, wi->rid, &ri, rv->byte_len, wire_sts(rv->status));
}

int ionic_rdma_wire_atomic(struct ionic_dev *dev, uint32_t qpn, uint32_t rkey, uint64_t va, bool cmp_swap,
			   uint64_t swap_add, uint64_t compare, uint64_t *orig)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);
	uint64_t old, host_old, nv, le_new;
	int rc;

	if (!qp || (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS))
		return -ENOTCONN;
	if ((va & 7) || !(qp->access & IONIC_QPF_REMOTE_ATOMIC))
		return -EACCES;
	rdma_charge(dev->rdma, 16);
	rc = rdma_mr_xfer(dev, qp, rkey, va, &old, 8, RDMA_FROM_GUEST, IONIC_MRF_REMOTE_ATOMIC);
	if (rc)
		return rc;
	host_old = le64toh(old);
	nv = cmp_swap ? (host_old == compare ? swap_add : host_old) : host_old + swap_add;
	le_new = htole64(nv);
	if (nv != host_old)
		rc = rdma_mr_xfer(dev, qp, rkey, va, &le_new, 8, RDMA_TO_GUEST, IONIC_MRF_REMOTE_ATOMIC);
	if (rc == 0)
		*orig = host_old;
	return rc;
}

int ionic_rdma_wire_invalidate(struct ionic_dev *dev, uint32_t qpn, uint32_t rkey)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);

	return qp ? rdma_key_invalidate(dev, qp, rkey, true) : -EINVAL;
}

void ionic_rdma_wire_qp_fatal(struct ionic_dev *dev, uint32_t qpn, bool access)
{
	struct rdma_qp *qp = wire_qp(dev, qpn);

	if (qp)
		qp_error(dev, qpn, qp, access ? IONIC_V1_EQE_QP_ERR_ACCESS : IONIC_V1_EQE_QP_ERR_REQUEST);
}

int ionic_rdma_wire_ud_recv(struct ionic_dev *dev, const struct ionic_rdma_wire_ud *ud, const uint8_t ip_hdr[20],
			    const uint8_t smac[6], const void *payload, uint32_t len)
{
	struct rdma_qp *qp = ud->dest_qpn > 0 && ud->dest_qpn < IONIC_RDMA_NQP ? &dev->rdma->qp[ud->dest_qpn] : NULL;
	struct recv_info ri = {
		.src_qpn = ud->src_qpn, .op = ud->has_imm ? IONIC_V1_CQE_RECV_OP_SEND_IMM : IONIC_V1_CQE_RECV_OP_SEND,
		.imm_rkey = be32_set(ud->imm), .ipv4 = true, .solicited = ud->solicited, .vlan = ud->vlan, .tci = ud->tci,
	};
	uint8_t grh[GRH_BYTES] = { 0 };
	struct endpoint d;
	struct cursor c;
	struct sgl rsgl;
	uint64_t unused = 0;
	le64 rid;
	int rc;

	if (!qp || !qp->valid || qp->type != IONIC_QPT_UD || !qp->rq.present ||
	    (qp->state != IONIC_QPS_RTR && qp->state != IONIC_QPS_RTS) ||
	    (ud->dest_qpn == 1 ? ud->qkey != ROCE_QKEY_GSI : ud->qkey != qp->qkey))
		return -ENOENT;
	if (!dev->bus_master || qp->rq_claim)
		return -EAGAIN;
	rc = rq_take(dev, qp, &rid, &rsgl);
	if (rc == -EAGAIN)
		return -EAGAIN;
	memcpy(grh + 20, ip_hdr, 20);
	memcpy(ri.smac, smac, 6);
	if (rc || rsgl.total < GRH_BYTES + (uint64_t)len) {
		complete_recv(dev, ud->dest_qpn, qp, rid, &ri, 0, rc ? IONIC_STS_LOCAL_QP_OPER_ERR : IONIC_STS_LOCAL_LEN_ERR);
		qp_error(dev, ud->dest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EMSGSIZE;
	}
	d = (struct endpoint){ .qp = qp, .sgl = &rsgl, .need = IONIC_MRF_LOCAL_WRITE };
	c = (struct cursor){ &rsgl, 0, 0 };
	rdma_charge(dev->rdma, GRH_BYTES + (uint64_t)len);
	if (ep_xfer(dev, &d, &c, &unused, grh, GRH_BYTES, RDMA_TO_GUEST) ||
	    (len && ep_xfer(dev, &d, &c, &unused, (void *)payload, len, RDMA_TO_GUEST))) {
		complete_recv(dev, ud->dest_qpn, qp, rid, &ri, 0, IONIC_STS_LOCAL_PROT_ERR);
		qp_error(dev, ud->dest_qpn, qp, IONIC_V1_EQE_QP_ERR);
		return -EFAULT;
	}
	complete_recv(dev, ud->dest_qpn, qp, rid, &ri, GRH_BYTES + len, 0);
	return 0;
}
